"""``synthformer plot``: figures drawn from result files alone (no model code runs here).

``synthformer plot bench runs.jsonl [more.jsonl ...] --out fig.png`` draws, for every (scope, mode) in
the rows, tokens/s against sequence length (left) and peak memory against length (right), one line per
variant. When a file holds several runs of the same case, the last row wins.

``synthformer plot runs FOLDER [...] --out curves.png`` draws learning curves (training loss and the
validation metric against training tokens) from run folders or a compare folder's variants.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from .errors import InputError


def read_rows(paths: list[str]) -> list[dict]:
    """JSONL rows of ``synthformer bench``; raises InputError naming the file and line of a bad row."""
    rows = []
    for path in paths:
        with open(path) as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(f"{path}:{i}: not JSON ({e.msg}); expected rows written by synthformer bench")
                missing = {"variant", "scope", "mode", "length", "tokens_per_s"} - set(row)
                if missing:
                    raise InputError(f"{path}:{i}: row lacks {sorted(missing)}; expected rows written by synthformer bench")
                rows.append(row)
    if not rows:
        raise InputError(f"no rows in {', '.join(paths)}; run `synthformer bench --out FILE` first")
    return rows


def plot_bench(rows: list[dict], out: str, title: str | None = None) -> None:
    """Speed and memory against length, one row of panels per (scope, mode)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest: dict = {}
    for r in rows:  # last row of a case wins
        latest[(r["scope"], r["mode"], r["variant"], r["length"])] = r
    panels = sorted({(s, m) for s, m, _, _ in latest})
    every = sorted({v for _, _, v, _ in latest}, key=lambda v: (v != "V", v))
    palette = plt.get_cmap("tab10" if len(every) <= 10 else "tab20")
    color = {v: palette(i % palette.N) for i, v in enumerate(every)}  # one colour per variant in every panel
    fig, axes = plt.subplots(len(panels), 2, figsize=(11, 3.4 * len(panels)), squeeze=False)
    for (scope, mode), (ax_s, ax_m) in zip(panels, axes):
        variants = sorted({v for s, m, v, _ in latest if (s, m) == (scope, mode)}, key=lambda v: (v != "V", v))
        for v in variants:
            pts = sorted((length, r) for (s, m, vv, length), r in latest.items() if (s, m, vv) == (scope, mode, v))
            xs = [p[0] for p in pts]
            style = dict(marker="o", color=color[v], lw=2.2 if v == "V" else 1.4, ls="-" if v == "V" or "+" in v or v.isupper()
                         or v in ("Fix", "FR", "FD") else "--")
            ax_s.plot(xs, [p[1]["tokens_per_s"] for p in pts], label=v, **style)
            mem_key = "cache_bytes" if mode == "decode" else "peak_bytes"
            mem = [(x, p[1].get(mem_key)) for x, p in zip(xs, pts) if p[1].get(mem_key)]
            if mem:
                ax_m.plot([m[0] for m in mem], [m[1] / 2**20 for m in mem], label=v, **style)
        sample = next(r for (s, m, _, _), r in latest.items() if (s, m) == (scope, mode))
        where = f"{sample.get('device', '?')}, {sample.get('threads', '?')} thr, {sample.get('dtype', '?')}"
        ax_s.set_title(f"{scope} {mode}: speed ({where})", fontsize=9)
        ax_s.set_ylabel("decoded tokens/s" if mode == "decode" else "tokens/s")
        ax_m.set_title(f"{scope} {mode}: {'cache size' if mode == 'decode' else 'peak memory'}", fontsize=9)
        ax_m.set_ylabel("MiB")
        for ax in (ax_s, ax_m):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("sequence length")
            ax.grid(alpha=0.3, which="both")
        ax_s.legend(fontsize=7, ncol=2)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def find_runs(paths: list[str]) -> tuple[dict[str, Path], str]:
    """Run folders (holding metrics.jsonl) named by the paths, a compare folder standing for its
    variants; returns ({label: folder}, task read from the first run's config.json)."""
    runs: dict[str, Path] = {}
    for p in map(Path, paths):
        found = [p] if (p / "metrics.jsonl").exists() else sorted(q.parent for q in p.glob("*/metrics.jsonl"))
        if not found:
            raise InputError(f"{p}: no metrics.jsonl in it or in its sub-folders; give a run or compare folder "
                             "(the --out of synthformer train / compare)")
        runs.update({q.name: q for q in found})
    config = next(iter(runs.values())) / "config.json"
    task = json.loads(config.read_text()).get("train", {}).get("task", "lm") if config.exists() else "lm"
    return runs, task


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``synthformer plot``; returns an exit code."""
    p = argparse.ArgumentParser(prog="synthformer plot", description="Figures from result files.")
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("bench", help="speed and memory vs length from `synthformer bench` JSONL")
    b.add_argument("files", nargs="+", help="JSONL files written by synthformer bench --out")
    b.add_argument("--out", default="bench.png", help="image to write (PNG, SVG or PDF by extension)")
    b.add_argument("--title", default=None)
    r = sub.add_parser("runs", help="learning curves from run folders or a compare folder")
    r.add_argument("folders", nargs="+", help="run folders (synthformer train --out) or compare folders")
    r.add_argument("--out", default="curves.png", help="image to write (PNG, SVG or PDF by extension)")
    r.add_argument("--title", default="")
    args = p.parse_args(argv)
    try:
        if args.what == "runs":
            from .report import plot_curves
            runs, task = find_runs(args.folders)
            plot_curves(runs, args.out, task=task, title=args.title)
            print(f"wrote {args.out} from {len(runs)} runs")
            return 0
        rows = read_rows(args.files)
        plot_bench(rows, args.out, args.title)
    except (OSError, ValueError) as e:
        print(f"synthformer plot: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} from {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

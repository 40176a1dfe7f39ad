"""``synthformer plot bench``: speed and memory against length from ``synthformer bench`` JSONL rows."""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..utils import jsonl
from .style import check_out, colour_map, integer_ticks, log_ticks, ordered, pyplot, short_tails

REQUIRED = {"variant", "scope", "mode", "length", "tokens_per_s"}


def read_rows(paths: list[str]) -> list[dict]:
    """JSONL rows of ``synthformer bench``, each tagged with ``"_file"`` (its path); raises InputError
    naming the file and line of a bad row."""
    rows = []
    for path in paths:
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"{path}: cannot read ({type(e).__name__}: {e}); give JSONL written by synthformer bench "
                             "--out") from None
        fix = "expected rows written by synthformer bench"
        rows += [{**row, "_file": str(path)} for _, row in jsonl.read_rows(text, path, InputError, fix, tuple(sorted(REQUIRED)))]
    if not rows:
        raise InputError(f"no rows in {', '.join(paths)}; run `synthformer bench --out FILE` first")
    return rows


def label_rows(rows: list[dict]) -> list[dict]:
    """Each row with ``"label"``: its variant, or ``variant (file)`` when two files measured the same
    case of that variant (so neither silently replaces the other). Within one file the last row of a
    case wins (a re-run); files that cover different lengths of a variant join into one line."""
    files_of: dict[str, dict[tuple, set]] = {}
    for r in rows:
        case = (r["scope"], r["mode"], r["length"])
        files_of.setdefault(r["variant"], {}).setdefault(case, set()).add(r["_file"])
    clash = {v for v, cases in files_of.items() if any(len(f) > 1 for f in cases.values())}
    files = list(dict.fromkeys(r["_file"] for r in rows))
    by_file = dict(zip(files, short_tails(files)))  # bench.jsonl in two folders: a/bench.jsonl, b/bench.jsonl
    return [{**r, "label": f"{r['variant']} ({by_file[r['_file']]})" if r["variant"] in clash else r["variant"]}
            for r in rows]


def plot_bench(rows: list[dict], out: str | Path, title: str | None = None) -> Path:
    """Speed and memory against length, one row of panels per (scope, mode); one colour per variant
    (or per variant and file, see `label_rows`) in every panel; saved by extension (PNG, SVG, PDF)."""
    out = check_out(out)
    fig = bench_figure(rows, title)
    fig.savefig(out, dpi=110)
    pyplot().close(fig)
    return out


def bench_figure(rows: list[dict], title: str | None = None):
    """The matplotlib Figure of `plot_bench`."""
    plt = pyplot()
    rows = label_rows([{"_file": "", **r} for r in rows])
    latest: dict = {}
    for r in rows:  # last row of a case wins
        latest[(r["scope"], r["mode"], r["label"], r["length"])] = r
    panels = sorted({(s, m) for s, m, _, _ in latest})
    color = colour_map(r["label"] for r in rows)
    legend_cols = 1 if len(color) <= 24 else 2
    fig, axes = plt.subplots(len(panels), 2, figsize=(11 + 2.2 * legend_cols, 3.6 * len(panels)), squeeze=False,
                             layout="constrained")
    for (scope, mode), (ax_s, ax_m) in zip(panels, axes):
        labels = ordered(lab for s, m, lab, _ in latest if (s, m) == (scope, mode))
        lengths = set()
        for lab in labels:
            pts = sorted((length, r) for (s, m, ll, length), r in latest.items() if (s, m, ll) == (scope, mode, lab))
            xs = [p[0] for p in pts]
            lengths.update(xs)
            variant = pts[0][1]["variant"]
            style = dict(marker="o", color=color[lab], lw=2.2 if variant == "V" else 1.4,
                         ls="--" if variant.islower() else "-")  # baselines (lightconv, ...) dashed
            ax_s.plot(xs, [p[1]["tokens_per_s"] for p in pts], label=lab, **style)
            mem_key = "cache_bytes" if mode == "decode" else "peak_bytes"
            mem = [(x, p[1].get(mem_key)) for x, p in zip(xs, pts) if p[1].get(mem_key)]
            if mem:
                ax_m.plot([m[0] for m in mem], [m[1] / 2**20 for m in mem], label=lab, **style)
        where = "; ".join(dict.fromkeys(f"{r.get('device', '?')}, {r.get('threads', '?')} thr, {r.get('dtype', '?')}"
                                        for (s, m, _, _), r in latest.items() if (s, m) == (scope, mode)))
        ax_s.set_title(f"{scope} {mode}: speed\n{where}", fontsize=9)
        ax_s.set_ylabel("decoded tokens/s" if mode == "decode" else "tokens/s")
        ax_m.set_title(f"{scope} {mode}: {'cache size' if mode == 'decode' else 'peak memory'}", fontsize=9)
        ax_m.set_ylabel("MiB")
        for ax in (ax_s, ax_m):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            integer_ticks(ax.xaxis, lengths)  # the measured lengths, written out (not 2^7)
            log_ticks(ax.yaxis)  # 100k tokens/s, 0.5 MiB: plain numbers, also on short axes
            ax.tick_params(axis="x", labelrotation=45 if len(lengths) > 7 else 0, labelsize=8)
            ax.tick_params(axis="y", which="both", labelsize=7)
            ax.set_xlabel("sequence length")
            ax.grid(alpha=0.3, which="both")
    handles = {}
    for ax in axes.flat:  # one legend for the figure: a label has the same colour in every panel
        for line in ax.get_lines():
            handles.setdefault(line.get_label(), line)
    labels = ordered(handles)
    fig.legend([handles[lab] for lab in labels], labels, loc="outside right upper", fontsize=7, ncol=legend_cols)
    if title:
        fig.suptitle(title)
    return fig

"""`synthformer compare`: the main job. Train the paper's variants with the same data, token budget
and seed, then tabulate them beside the paper's published numbers.

    synthformer compare                                   # tiny LMs on chitchat, ~10 min on 2 CPU cores
    synthformer compare --preset small --steps 5000 --device cuda --out runs/cmp-small
    synthformer compare --variants V,R,D+V --task seq2seq --data bible-en-es

The run folder (`--out`, default runs/compare-<timestamp>) gets one sub-folder per variant (a normal
training run), then ``table.md``, ``curves.png`` and, last, ``results.json`` (rows with the resolved
configs). Running the same command again with the same ``--out`` continues: finished variants are
reused, an interrupted one resumes from its last checkpoint.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from .attention import parse_synthesizers
from .attention.registry import short_spec
from .mixers import MIXERS
from .report import findings, plot_curves, table_markdown
from .reference_results import LABEL

# The paper's Table 2 variants plus its strongest convolutional baseline (Table 4).
DEFAULT_VARIANTS = ("V", "Fix", "R", "FR", "D", "FD", "R+V", "D+V", "dynamicconv")
# Budget of the default run: ~50 s per variant on a 2-core CPU (819k training tokens each).
# One thread: the tiny model gains little from a second one, and two threads slow down several
# times over when anything else shares the cores (measured); pass --threads 2 on an idle machine.
DEFAULTS = {"task": "lm", "data": "chitchat", "preset": "tiny", "steps": 400, "batch_size": 16,
            "vocab_size": 2000, "warmup_steps": 40, "lr": 2e-3, "eval_every": 100, "eval_batches": 20,
            "final_eval_batches": 0, "checkpoint_every": 100, "log_every": 10, "seed": 0, "threads": 1}


def variant_name(spec: str) -> str:
    """Canonical display name: the paper's short spec ("R+V") or a baseline mixer name."""
    if spec.strip().lower() in MIXERS:
        return spec.strip().lower()
    return short_spec(parse_synthesizers(spec))


def compare(variants: list[str], train_overrides: dict, model_overrides: dict, out: Path,
            log=print) -> dict:
    """Train every variant into ``out/<variant>``; write table.md, curves.png, results.json.

    `train_overrides` / `model_overrides` go over `DEFAULTS` and the preset for every variant alike.
    Returns the results dict also written to results.json.
    """
    from .checkpoint import RunError
    from .train import TrainConfig, prepare_data, resolve_seq_len, train

    names = [variant_name(v) for v in variants]  # unknown names fail here, before any work
    if len(set(names)) != len(names):
        raise ValueError(f"variants repeat: {names}")
    base = TrainConfig(**{**DEFAULTS, **train_overrides})
    if (out / "results.json").exists():
        raise RunError(f"{out} already holds a finished comparison (results.json); choose another --out")
    t0 = time.time()
    seq_len = resolve_seq_len(base, model_overrides)
    data = None
    rows = []
    for i, name in enumerate(names, 1):
        run = out / name
        cfg = dataclasses.replace(base, out=str(run))
        if (run / "done.json").exists():
            result = json.loads((run / "done.json").read_text())
            log(f"[{i}/{len(names)}] {name}: finished earlier, reusing {run}")
        else:
            resume = (run / "config.json").exists()
            if data is None:
                data = prepare_data(base, seq_len, log=log)  # one tokenizer and encoding for all
            if resume:
                from .data import load_tokenizer  # the stored run's own tokenizer
                run_data = prepare_data(base, seq_len, load_tokenizer(run), log=log)
            else:
                run_data = data
            result = train(dataclasses.replace(cfg, resume=resume), {**model_overrides, "attention": name},
                           data=run_data, label=f"[{i}/{len(names)}] {name}", log=log)
        rows.append({"variant": name, "params": result["params"], "metrics": _plain(result["valid"]),
                     "tokens_per_s": result["tokens_per_s"], "train_time_s": result["train_time_s"],
                     "tokens": result["tokens"], "run": str(run), "model": result["model"],
                     "train": result["train"]})
        log(f"[{i}/{len(names)}] {name}: {_summary(rows[-1], base.task)}  ({time.time() - t0:.0f}s so far)")

    table = table_markdown(rows, base.task)
    checks = findings(rows, base.task)
    header = (f"# synthformer compare: {base.task} on {base.data}, preset {base.preset}, "
              f"{base.steps} steps x {base.batch_size} sequences, seed {base.seed}\n")
    text = header + "\n" + table + "\n\n## The paper's findings, checked here\n\n" + \
        "\n".join(f"- {c}" for c in checks) + "\n"
    (out / "table.md").write_text(text)
    plot_curves({r["variant"]: r["run"] for r in rows}, out / "curves.png", base.task,
                title=f"{base.task} on {base.data} ({base.preset}, {base.steps} steps)")
    results = {"task": base.task, "data": base.data, "variants": rows, "findings": checks,
               "paper_label": LABEL, "wall_s": time.time() - t0, "command": sys.argv,
               "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    from .checkpoint import atomic_write_json
    atomic_write_json(out / "results.json", results)  # last: marks the comparison complete
    log("\n" + text)
    log(f"wrote {out / 'table.md'}, {out / 'curves.png'}, {out / 'results.json'} ({results['wall_s']:.0f}s)")
    return results


def _plain(metrics: dict | None) -> dict:
    return {k: v for k, v in (metrics or {}).items() if not isinstance(v, (list, dict))}


def _summary(row: dict, task: str) -> str:
    m = row["metrics"]
    shown = ", ".join(f"{k} {m[k]:.3g}" for k in ("ppl", "bleu", "rougeL", "accuracy") if k in m)
    return f"{shown}, {row['params']:,} params, {row['tokens_per_s']:,.0f} tokens/s"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="synthformer compare", description=__doc__.split("\n\n")[0],
        epilog="Any other --key=value is a TrainConfig / ModelConfig option applied to every variant "
               f"(see `synthformer train --help`). Defaults: {DEFAULTS}")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                   help="comma-separated: synthesizer specs (V, Fix, R, FR, D, FD, R+V, D+V, R+D, ...) "
                        "and baselines (dynamicconv, lightconv, linformer)")
    p.add_argument("--task", help=f"lm | seq2seq | classify | mlm (default {DEFAULTS['task']})")
    p.add_argument("--data", help=f"source name or data file (default {DEFAULTS['data']})")
    p.add_argument("--preset", help=f"model size: tiny | small | base (default {DEFAULTS['preset']})")
    p.add_argument("--steps", type=int, help=f"optimizer steps per variant (default {DEFAULTS['steps']})")
    p.add_argument("--device", help="auto | cpu | cuda | cuda:N | mps (default auto)")
    p.add_argument("--seed", type=int, help=f"one seed for every variant (default {DEFAULTS['seed']})")
    p.add_argument("--out", help="run folder (default runs/compare-<timestamp>); rerun with it to continue")
    p.add_argument("--config", help="YAML file of TrainConfig / ModelConfig overrides")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of `synthformer compare` (errors: one line, exit status 2)."""
    from .cli import UsageError, parse_overrides

    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        train_over, model_over = parse_overrides(rest, args.config)
        for key in ("task", "data", "preset", "steps", "device", "seed"):
            if getattr(args, key) is not None:
                train_over[key] = getattr(args, key)
        if "attention" in model_over:
            raise UsageError("set the variants with --variants, not --attention")
        variants = [v.strip() for v in args.variants.split(",") if v.strip()]
        if not variants:
            raise UsageError("--variants is empty")
        out = Path(args.out or Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}")
        compare(variants, train_over, model_over, out)
    except (ValueError, FileNotFoundError) as e:
        print(f"synthformer compare: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

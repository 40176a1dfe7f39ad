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
import tempfile
import time
from pathlib import Path

from .mixers.registry import check_slot, display_name
from .claims import check_kind, select as select_claims, stat
from .errors import SynthformerError
from .report import findings, findings_markdown, table_markdown
from .reference_results import LABEL, TASK_KINDS, task_kind

# The paper's Table 2 variants plus its strongest convolutional baseline (Table 4).
DEFAULT_VARIANTS = ("V", "Fix", "R", "FR", "D", "FD", "R+V", "D+V", "dynamicconv")
# Budget of the default run: ~50 s per variant on a 2-core CPU (819k training tokens each).
# One thread: the tiny model gains little from a second one, and two threads slow down several
# times over when anything else shares the cores (measured); pass --threads 2 on an idle machine.
DEFAULT_SEEDS = 1  # seeds per variant
DEFAULTS = {"task": "lm", "data": "chitchat", "preset": "tiny", "steps": 400, "batch_size": 16,
            "vocab_size": 2000, "warmup_steps": 40, "lr": 2e-3, "eval_every": 100, "eval_batches": 20,
            "final_eval_batches": 0, "checkpoint_every": 100, "log_every": 10, "seed": 0, "threads": 1}


class CompareError(SynthformerError):
    """Bad input to a comparison (seeds, the compare section of a config)."""


# Keys of a config file's `compare:` section (the rest of the file is TrainConfig / ModelConfig).
COMPARE_KEYS = ("variants", "seeds", "task_kind", "claims")


def variant_name(spec: str) -> str:
    """Canonical display name: the paper's short spec ("R+V") or a baseline mixer name."""
    return display_name(spec)


def seed_list(seed: int, seeds: int) -> list[int]:
    """The seeds of a comparison: seed, seed+1, ..., seeds of them."""
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise CompareError(f"--seeds={seeds} must be an integer >= 1 (the number of seeds per variant)")
    return [seed + k for k in range(seeds)]


def run_folder(out: Path, name: str, seed: int, seeds: int) -> Path:
    """out/<variant> with one seed (as before seeds existed); out/<variant>-seed<S> with several."""
    return out / name if seeds == 1 else out / f"{name}-seed{seed}"


def aggregate(name: str, per_seed: list[dict]) -> dict:
    """One result row of a variant from its per-seed rows: the mean of every numeric metric (and
    tokens/s, time) in "metrics"/"tokens_per_s", the sample std beside it (None with one seed),
    and the per-seed rows under "seeds"."""
    keys = [k for k, v in per_seed[0]["metrics"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    mean, std = {}, {}
    for k in keys:
        s = stat([r["metrics"][k] for r in per_seed if isinstance(r["metrics"].get(k), (int, float))])
        mean[k], std[k] = (s.mean, s.std) if s else (None, None)
    tps = stat([r["tokens_per_s"] for r in per_seed])
    first = per_seed[0]
    return {"variant": name, "params": first["params"], "metrics": mean, "metrics_std": std,
            "tokens_per_s": tps.mean, "tokens_per_s_std": tps.std,
            "train_time_s": stat([r["train_time_s"] for r in per_seed]).mean, "tokens": first["tokens"],
            "n_seeds": len(per_seed), "run": first["run"], "runs": [r["run"] for r in per_seed],
            "seeds": [{k: r[k] for k in ("seed", "metrics", "tokens_per_s", "train_time_s", "tokens", "run")}
                      for r in per_seed],
            "model": first["model"], "train": first["train"]}


def compare(variants: list[str], train_overrides: dict, model_overrides: dict, out: Path,
            log=print, seeds: int = 1, kind: str | None = None, claims: list[str] | None = None) -> dict:
    """Train every variant `seeds` times (seeds s, s+1, ...) into ``out``; write table.md, curves.png,
    results.json.

    `train_overrides` / `model_overrides` go over `DEFAULTS` and the preset for every variant alike;
    every run shares one tokenizer and encoding of the data. `kind` is the task kind whose paper
    columns and claims the report shows (default: from the task and data, `task_kind`); `claims`
    narrows the claims checked to these claim or table names. Returns the results dict also written
    to results.json.
    """
    from .checkpoint import RunError
    from .plan import prepare
    from .train import TrainConfig, train

    names = [variant_name(v) for v in variants]  # unknown names fail here, before any work
    if len(set(names)) != len(names):
        raise CompareError(f"variants repeat: {names}; name each variant once")
    base = TrainConfig(**{**DEFAULTS, **train_overrides})
    # every variant must fit its slot (e.g. linformer cannot be a decoder's self-attention): checked up front
    causal = base.task == "lm" or (base.task == "seq2seq" and model_overrides.get("decoder_attention") is None)
    for name in names:
        check_slot(name, causal=causal, field="variants")
    seed_values_ = seed_list(base.seed, seeds)
    kind = check_kind(kind) if kind else task_kind(base.task, base.data)
    chosen = select_claims(claims)  # unknown claim / table names fail before any work too
    if (out / "results.json").exists():
        raise RunError(f"{out} already holds a finished comparison (results.json); choose another --out")
    t0 = time.time()
    data = None
    rows = []
    total = len(names) * seeds
    for i, name in enumerate(names):
        per_seed = []
        for j, seed in enumerate(seed_values_):
            k = i * seeds + j + 1
            tag = f"[{k}/{total}] {name}" + (f" seed {seed}" if seeds > 1 else "")
            run = run_folder(out, name, seed, seeds)
            cfg = dataclasses.replace(base, out=str(run), seed=seed)
            if (run / "done.json").exists():
                result = json.loads((run / "done.json").read_text())
                log(f"{tag}: finished earlier, reusing {run}")
            else:
                resume = (run / "config.json").exists()
                if data is None and not resume:
                    data = prepare(base, model_overrides, log=log)  # one tokenizer and encoding for all
                run_data = None if resume else data  # resuming: train reads the run's own tokenizer and data
                result = train(dataclasses.replace(cfg, resume=resume), {**model_overrides, "attention": name},
                               data=run_data, label=tag, log=log)
            per_seed.append({"seed": seed, "params": result["params"], "metrics": _plain(result["valid"]),
                             "tokens_per_s": result["tokens_per_s"], "train_time_s": result["train_time_s"],
                             "tokens": result["tokens"], "run": str(run), "model": result["model"],
                             "train": result["train"]})
            log(f"{tag}: {_summary(per_seed[-1], base.task)}  ({time.time() - t0:.0f}s so far)")
        rows.append(aggregate(name, per_seed))

    results = {"task": base.task, "kind": kind, "data": base.data, "seeds": seed_values_, "variants": rows,
               "findings": findings(rows, kind, chosen), "paper_label": LABEL, "wall_s": time.time() - t0,
               "command": sys.argv, "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    _write_report(out, base, results, log)
    return results


def _write_report(out: Path, base, results: dict, log) -> None:
    """table.md, curves.png, then results.json last (it marks the comparison complete)."""
    from .checkpoint import atomic_write_json
    from .integrity import atomic_write_text
    from .plots.curves import plot_curves  # matplotlib only when drawing

    kind, seeds, rows = results["kind"], results["seeds"], results["variants"]
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}..{seeds[-1]}"
    header = (f"# synthformer compare: {base.task} on {base.data} (task kind {kind}), preset {base.preset}, "
              f"{base.steps} steps x {base.batch_size} sequences, {seed_text}\n")
    text = (header + "\n" + table_markdown(rows, base.task, kind=kind)
            + f"\n\n## The paper's claims for task kind {kind}, checked here\n\n"
            + findings_markdown(results["findings"]) + "\n")
    atomic_write_text(out / "table.md", text)
    plot_curves({r["variant"]: r["run"] for r in rows}, out / "curves.png", base.task,
                title=f"{base.task} on {base.data} ({base.preset}, {base.steps} steps"
                      + (f", seed {base.seed} of {len(seeds)}" if len(seeds) > 1 else "") + ")")
    atomic_write_json(out / "results.json", results)
    log("\n" + text)
    log(f"wrote {out / 'table.md'}, {out / 'curves.png'}, {out / 'results.json'} ({results['wall_s']:.0f}s)")


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
    p.add_argument("--variants", default=None,
                   help="comma-separated: synthesizer specs (V, Fix, R, FR, D, FD, R+V, D+V, R+D, ...) "
                        "and baselines (dynamicconv, lightconv, linformer)")
    p.add_argument("--task", help=f"lm | seq2seq | classify | mlm (default {DEFAULTS['task']})")
    p.add_argument("--data", help=f"source name or data file (default {DEFAULTS['data']})")
    p.add_argument("--preset", help=f"model size: tiny | small | base (default {DEFAULTS['preset']})")
    p.add_argument("--steps", type=int, help=f"optimizer steps per variant (default {DEFAULTS['steps']})")
    p.add_argument("--device", help="auto | cpu | cuda | cuda:N | mps (default auto)")
    p.add_argument("--seed", type=int, help=f"first seed (default {DEFAULTS['seed']})")
    p.add_argument("--seeds", type=int, help=f"train every variant this many times, seeds s, s+1, ... "
                                             f"(default {DEFAULT_SEEDS}); the table shows mean ± std")
    p.add_argument("--task-kind", dest="task_kind",
                   help=f"which paper benchmark the task stands in for: {' | '.join(TASK_KINDS)} "
                        "(default: from --task and --data)")
    p.add_argument("--claims", help="comma-separated claim or table names to check (default: all of the "
                                    "task kind), e.g. 'Table 2' or t2-lm1b-fix-vs-r")
    p.add_argument("--out", help="run folder (default runs/compare-<timestamp>); rerun with it to continue")
    p.add_argument("--config", help="YAML file of TrainConfig / ModelConfig overrides, plus an optional "
                                    f"`compare:` section ({', '.join(COMPARE_KEYS)})")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of `synthformer compare` (errors: one line, exit status 2)."""
    from .overrides import UsageError, parse_overrides

    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    section, config = {}, None
    try:
        section, config = _compare_section(args.config)
        train_over, model_over = parse_overrides(rest, config)
        for key in ("task", "data", "preset", "steps", "device", "seed"):
            if getattr(args, key) is not None:
                train_over[key] = getattr(args, key)
        if "attention" in model_over:
            raise UsageError("set the variants with --variants, not --attention")
        spec = args.variants if args.variants is not None else section.get("variants", ",".join(DEFAULT_VARIANTS))
        variants = [v.strip() for v in (spec.split(",") if isinstance(spec, str) else spec) if str(v).strip()]
        if not variants:
            raise UsageError("--variants is empty")
        seeds = args.seeds if args.seeds is not None else section.get("seeds", DEFAULT_SEEDS)
        claims = args.claims if args.claims is not None else section.get("claims")
        if isinstance(claims, str):
            claims = [c for c in claims.split(",") if c.strip()]
        out = Path(args.out or Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}")
        compare(variants, train_over, model_over, out, seeds=seeds,
                kind=args.task_kind or section.get("task_kind"), claims=claims)
    except SynthformerError as e:
        print(f"synthformer compare: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        if config and config != args.config and Path(config).parent == Path(tempfile.gettempdir()):
            Path(config).unlink(missing_ok=True)  # our temporary copy without the compare: section
    return 0


def _compare_section(config: str | None) -> tuple[dict, str | None]:
    """Split a config file's `compare:` section off; returns (section, a file with the rest or None).
    The file with the rest is a temporary copy when a section was split off (the caller removes it)."""
    if not config:
        return {}, config
    from .overrides import find_config_file

    try:
        config = str(find_config_file(config))  # a shipped config by name works too
    except SynthformerError:
        return {}, config  # a missing file is reported by parse_overrides
    import yaml

    try:
        data = yaml.safe_load(Path(config).read_text()) or {}
    except yaml.YAMLError:
        return {}, config  # reported by parse_overrides
    if not isinstance(data, dict) or "compare" not in data:
        return {}, config
    section = data.pop("compare") or {}
    if not isinstance(section, dict):
        raise CompareError(f"{config}: `compare:` must be a mapping of {', '.join(COMPARE_KEYS)}")
    unknown = [k for k in section if k not in COMPARE_KEYS]
    if unknown:
        raise CompareError(f"{config}: unknown key(s) {unknown} in `compare:`; valid: {', '.join(COMPARE_KEYS)}")
    rest = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    with rest:
        yaml.safe_dump(data, rest)
    return section, rest.name


if __name__ == "__main__":
    sys.exit(main())

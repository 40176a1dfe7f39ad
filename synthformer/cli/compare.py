"""`synthformer compare`: the main job: train the paper's variants on the same budget and tabulate. This module
is the command's front end (its options, its config section, its one-line errors); the comparison itself is
`synthformer.evidence.compare.compare`."""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from ..errors import SynthformerError
from ..evidence.compare import (DEFAULT_SEEDS, DEFAULT_VARIANTS, DEFAULTS, SMALL_EVAL, SMALL_EVAL_SEEDS,
                                CompareError, compare)
from ..evidence.compare import __doc__ as COMPARE_DOC
from ..evidence.paper.numbers import TASK_KINDS
from ..evidence.tuning import make_tune
from ..training.overrides import UsageError
from ._runs import add_executor_options, add_passthrough_parser, add_trust_option, executor_of, one_line_errors

NAME = "compare"
HELP = "the main job: train the paper's variants on the same budget and tabulate"
PASSTHROUGH = True  # the rest of the command line goes to `main` unparsed
# Keys of a config file's `compare:` section (the rest of the file is TrainConfig / ModelConfig).
COMPARE_KEYS = ("variants", "seeds", "task_kind", "claims", "tune", "gate")


def add_parser(sub):
    return add_passthrough_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    # checked here first, each as one line: argparse's usage errors and empty items of --variants ("V," or "V,,R")
    parsed, _ = one_line_errors(build_parser()).parse_known_args(rest)
    if parsed.variants is not None and any(not v.strip() for v in parsed.variants.split(",")):
        raise UsageError(f"--variants {parsed.variants!r} has an empty item; list the variants separated by single "
                         "commas, e.g. --variants V,R,D+V")
    return int(main(rest) or 0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="synthformer compare", description=COMPARE_DOC.split("\n\n")[0],
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
    p.add_argument("--seeds", type=int, help=f"train every variant this many times, seeds s, s+1, ... (default "
                                             f"{DEFAULT_SEEDS}; {SMALL_EVAL_SEEDS} when the validation split has "
                                             f"under {SMALL_EVAL} items); the table shows means and 95%% intervals")
    p.add_argument("--tune", action="store_true",
                   help="before its runs, give every variant the same learning-rate sweep on the validation split "
                        "(synthformer.evidence.tuning: lr x0.5/1/2/4, table multiplier 1/10, a quarter of the steps each, "
                        "and up to two steps beyond an edge lr that wins); "
                        "the chosen values are used for every seed and reported")
    p.add_argument("--gate", action="store_true",
                   help="train the first variant first and, when it beats the floor on no claim the floor gates, "
                        "stop there: the rest would be 'not learned' at this budget too")
    p.add_argument("--task-kind", dest="task_kind",
                   help=f"which paper benchmark the task stands in for: {' | '.join(TASK_KINDS)} "
                        "(default: from --task and --data)")
    p.add_argument("--claims", help="comma-separated claim or table names to check (default: all of the "
                                    "task kind), e.g. 'Table 2' or t2-lm1b-fix-vs-r")
    p.add_argument("--out", help="run folder (default runs/compare-<timestamp>); rerun with it to continue an "
                                 "unfinished comparison, to print a finished one's table again, or with more "
                                 "--variants / --seeds to train only the new cells and rebuild the table")
    add_executor_options(p)
    add_trust_option(p)
    p.add_argument("--config", help="YAML file of TrainConfig / ModelConfig overrides, plus an optional "
                                    f"`compare:` section ({', '.join(COMPARE_KEYS)}; tune: true or a mapping of "
                                    "synthformer.evidence.tuning.TuneConfig fields)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of `synthformer compare` (errors: one line, exit status 2)."""
    from ..training.overrides import UsageError, apply_overrides, split_cli_overrides
    from ..utils.integrity import trust_unverified

    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        section, items = _read_config(args.config)
        train_over, model_over = apply_overrides(items + split_cli_overrides(rest))
        for key in ("task", "data", "preset", "steps", "device", "seed"):
            if getattr(args, key) is not None:
                train_over[key] = getattr(args, key)
        if "attention" in model_over:
            raise UsageError("set the variants with --variants, not --attention")
        budget_defaults(train_over)
        spec = args.variants if args.variants is not None else section.get("variants", ",".join(DEFAULT_VARIANTS))
        variants = [v.strip() for v in (spec.split(",") if isinstance(spec, str) else spec) if str(v).strip()]
        if not variants:
            raise UsageError("--variants is empty")
        seeds = args.seeds if args.seeds is not None else section.get("seeds")
        claims = args.claims if args.claims is not None else section.get("claims")
        if isinstance(claims, str):
            claims = [c for c in claims.split(",") if c.strip()]
        tune = make_tune(True if args.tune else section.get("tune"))
        out = Path(args.out or Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}")
        gate = variants[0] if args.gate or section.get("gate") else None
        with trust_unverified(args.trust_unverified):  # --trust-unverified: the folder's files unverified
            compare(variants, train_over, model_over, out, seeds=seeds,
                    kind=args.task_kind or section.get("task_kind"), claims=claims, tune=tune, gate=gate,
                    executor=executor_of(args), own_table=True)
    except SynthformerError as e:
        print(f"synthformer compare: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


def budget_defaults(train_over: dict, log=print) -> None:
    """Fill what compare derives from the budget and say how its defaults differ from `synthformer train`'s.

    The warm-up, when not given, is a tenth of the steps, at most DEFAULTS' 40 (40 at the default 400 steps, as
    before; `--steps 20` gets 2 instead of a warm-up longer than the run). Then one line names every default of
    compare that is not `train`'s (lr, vocabulary, ...) and that the command line leaves in force, so runs of the
    two commands are not read as alike (`plot` says so too when their tokenizers differ)."""
    from ..training.config import TrainConfig, budget_warmup

    if "warmup_steps" not in train_over:
        steps = train_over.get("steps", DEFAULTS["steps"])
        if isinstance(steps, int) and steps >= 0:
            train_over["warmup_steps"] = budget_warmup(steps, DEFAULTS["warmup_steps"])
    fields = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    quiet = ("checkpoint_every", "log_every", "threads", "eval_every", "eval_batches")  # no effect on the result
    if train_over.get("tokenizer", "bpe") != "bpe":
        quiet += ("vocab_size",)  # only BPE has a vocabulary size to choose
    differ = [f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in DEFAULTS.items()
              if k not in train_over and k in fields and fields[k] != v and k not in quiet]
    differ = [f"{d} (train: {fields[d.split()[0]]:g})" if isinstance(fields[d.split()[0]], float)
              else f"{d} (train: {fields[d.split()[0]]})" for d in differ]
    if differ:
        log("compare's defaults that differ from `synthformer train`'s (pass any to change it): " + ", ".join(differ)
            + f"; warm-up: a tenth of --steps, at most {DEFAULTS['warmup_steps']} (train: at most "
            f"{fields['warmup_steps']})")


def _read_config(config: str | None) -> tuple[dict, list]:
    """(the `compare:` section, the other (key, value, from_text) items) of a config file, read once."""
    if not config:
        return {}, []
    from ..training.overrides import find_config_file, read_config_file

    items = read_config_file(config)
    section = next((value for key, value, _ in items if key == "compare"), None) or {}
    if not isinstance(section, dict):
        raise CompareError(f"{find_config_file(config)}: `compare:` must be a mapping of {', '.join(COMPARE_KEYS)}")
    unknown = [k for k in section if k not in COMPARE_KEYS]
    if unknown:
        raise CompareError(f"{find_config_file(config)}: unknown key(s) {unknown} in `compare:`; valid: "
                           f"{', '.join(COMPARE_KEYS)}")
    return section, [item for item in items if item[0] != "compare"]

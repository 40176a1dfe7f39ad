"""`synthformer eval`: evaluate a run's model on a split of its data."""
from __future__ import annotations

import json
import sys

from ..training.overrides import UsageError, parse_overrides
from ..tasks.metrics import scalars
from ._runs import add_trust_option

NAME = "eval"
HELP = "evaluate a run's model on its data (valid or test split)"
RUN_FIXED = ("task", "tokenizer", "vocab_size", "preset", "init_from")  # what the run's model was made for


def add_parser(sub):
    p = sub.add_parser(NAME, help=HELP, description=HELP + "; other --key=value options are TrainConfig fields.")
    p.add_argument("--run", required=True, help="run folder (the --out of train)")
    p.add_argument("--split", default="valid", choices=["valid", "test", "train"], help="(default: %(default)s)")
    p.add_argument("--max-batches", type=int, default=0, help="batches to evaluate; 0 = the whole split (default: 0)")
    add_trust_option(p)
    return p


def run(args, rest: list[str]) -> int:
    import torch

    from ..training.evaluation import evaluate
    from ..training.plan import open_trained, run_data

    train_over, model_over = parse_overrides(rest)
    if model_over:
        raise UsageError(f"eval takes train options only, got model options {sorted(model_over)}")
    if args.max_batches < 0:
        raise UsageError(f"--max-batches={args.max_batches} must be >= 0 (0 = the whole split)")
    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    run = open_trained(args.run, device=None, train_overrides=train_over, log=say)
    clash = [k for k in RUN_FIXED if k in train_over and train_over[k] != run.stored["train"].get(k)]
    if clash:  # e.g. --task mlm on an lm run: a metric of another task would be meaningless
        given = ", ".join(f"{k}={run.stored['train'].get(k)}" for k in clash)
        raise UsageError(f"{args.run} was trained with {given}; "
                         f"eval cannot change {', '.join(clash)} (drop the option)")
    if run.train.threads:
        torch.set_num_threads(run.train.threads)
    if (run.train.seq_len or 0) > run.model.config.max_seq_len:
        raise UsageError(f"--seq_len={run.train.seq_len} is longer than the model's max_seq_len="
                         f"{run.model.config.max_seq_len}; give at most that")
    run.data = run_data(run.train, run.model.config, run.tokenizer, log=say)
    if args.split not in run.data.encoded:
        raise UsageError(f"the data has no {args.split!r} split")
    metrics = evaluate(run.data.task, run.model, run.data, run.train, split=args.split, max_batches=args.max_batches)
    print(json.dumps({"run": args.run, "split": args.split, **scalars(metrics)}))
    return 0

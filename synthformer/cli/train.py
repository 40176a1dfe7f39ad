"""`synthformer train`: one model, any task; options are the TrainConfig / ModelConfig fields."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..training.overrides import UsageError, field_help, make_train_config, parse_overrides
from ..training.runs import read_run_config
from ..tasks.metrics import scalars
from ._runs import add_trust_option

NAME = "train"
HELP = "train one model (any task); options are TrainConfig/ModelConfig fields"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=HELP, description=HELP + ", given as --key=value or --key value.",
                       epilog=field_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML file of overrides, read before the command line (configs/*.yaml)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    add_trust_option(p)
    return p


def run(args, rest: list[str]) -> int:
    from ..data.sources import SOURCES
    from ..training.plan import check_model_overrides
    from ..training.config import TrainConfig, budget_warmup
    from ..training.loop import RESULT_FREE, train

    train_over, model_over = parse_overrides(rest, args.config)
    if args.resume:
        if model_over or args.config:
            raise UsageError("--resume continues the stored config; drop the model options and --config")
        out = train_over.pop("out", None)
        if not out:
            raise UsageError("--resume needs --out RUN_FOLDER (the run to continue)")
        if not (Path(out) / "config.json").is_file():
            raise UsageError(f"nothing to resume: {Path(out) / 'config.json'} not found")
        fixed = [k for k in train_over if k not in RESULT_FREE]
        if fixed:
            raise UsageError(f"cannot change {', '.join(fixed)} when resuming; only {', '.join(RESULT_FREE)} may change")
        stored = read_run_config(out)["train"]
        stored["stop_after"] = None  # a stop is for one invocation only
        try:
            cfg = make_train_config({**stored, **train_over, "out": out, "resume": True})
        except UsageError as e:
            raise UsageError(f"{Path(out) / 'config.json'}: {e}; restore it from a backup or start a new run") from None
        result = train(cfg)
    else:
        data = train_over.get("data")
        if data is not None and data not in SOURCES and Path(data).expanduser().exists():
            train_over["data"] = str(Path(data).expanduser().resolve())  # stored so eval works from any folder
        if "warmup_steps" not in train_over:  # from the budget: a tenth of the steps, at most the default
            steps = train_over.get("steps", TrainConfig.steps)
            if isinstance(steps, int) and steps >= 0:
                train_over["warmup_steps"] = budget_warmup(steps, TrainConfig.warmup_steps)
        cfg = make_train_config(train_over)
        check_model_overrides(cfg, model_over)  # a bad model option fails before any data is read
        result = train(cfg, model_over)
    if "stopped_at" not in result and result.get("rank", 0) == 0:  # one summary line, from rank 0
        print(json.dumps({"out": result["out"], "step": result["step"], "valid": scalars(result["valid"]),
                          "tokens_per_s": round(result["tokens_per_s"], 1)}))
    return 0

"""What eval and generate share: reading a run folder, plain metrics, the device."""
from __future__ import annotations

import sys
from pathlib import Path

from ..integrity import TRUST_FLAG
from ..overrides import UsageError
from ..runs import load_run_tokenizer, read_run_config, run_model_folder, verify_run


def add_trust_option(parser) -> None:
    """``--trust-unverified`` (the one definition; `synthformer.cli.run` applies it around the command)."""
    parser.add_argument(TRUST_FLAG, action="store_true",
                        help="use a run or model folder whose manifest.json is missing or empty (saved by an "
                             "older synthformer): loaded without an integrity check, with a warning")


def load_run(run: str):
    """(stored config dict, model folder, tokenizer) of a run folder; the final model, else the latest
    checkpoint (with a note). Missing or damaged files are one-line errors naming the file."""
    folder = Path(run)
    stored = read_run_config(folder)
    tokenizer = load_run_tokenizer(folder)
    verify_run(folder)  # config.json and the tokenizer's files unchanged since training
    model_dir, finished = run_model_folder(folder)
    if not finished:
        print(f"note: {folder} is not finished; using checkpoint {model_dir.name}", file=sys.stderr)
    return stored, model_dir, tokenizer


def plain(metrics: dict | None) -> dict:
    """The scalar metrics (lists and tables left out) for a one-line JSON summary."""
    return {k: v for k, v in (metrics or {}).items() if not isinstance(v, (list, dict))}


def device_of(name: str) -> str:
    """A device name checked as a user option."""
    from ..distributed import resolve_device

    try:
        return str(resolve_device(name))
    except ValueError as e:  # a bad or missing device
        raise UsageError(str(e)) from None

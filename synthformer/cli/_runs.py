"""What eval and generate share: reading a run folder, plain metrics, the device."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..checkpoint import latest_checkpoint
from ..data.tokenizer import FILENAME as TOKENIZER_FILE
from ..overrides import UsageError


def load_run(run: str) -> tuple[dict, Path]:
    """(stored config dict, model folder) of a run folder; the final model, else the latest checkpoint."""
    folder = Path(run)
    if not (folder / "config.json").is_file():
        raise UsageError(f"{folder} is not a run folder (no config.json); give the --out of a train run")
    if not (folder / TOKENIZER_FILE).is_file():
        raise UsageError(f"{folder / TOKENIZER_FILE} not found; the run folder is incomplete")
    try:
        stored = json.loads((folder / "config.json").read_text())
    except json.JSONDecodeError as e:
        raise UsageError(f"{folder / 'config.json'}: not valid JSON ({e.msg} at line {e.lineno})") from None
    model_dir = folder / "model"
    if not (model_dir / "model.safetensors").is_file():
        model_dir = latest_checkpoint(folder)
        if model_dir is None:
            raise UsageError(f"{folder} has no model yet (no model/ and no checkpoint)")
        print(f"note: {folder} is not finished; using checkpoint {model_dir.name}", file=sys.stderr)
    return stored, model_dir


def plain(metrics: dict | None) -> dict:
    """The scalar metrics (lists and tables left out) for a one-line JSON summary."""
    return {k: v for k, v in (metrics or {}).items() if not isinstance(v, (list, dict))}


def device_of(name: str) -> str:
    """A device name checked as a user option."""
    from ..distributed import resolve_device

    try:
        return str(resolve_device(name))
    except ValueError as e:  # resolve_device raises a plain ValueError for a bad or missing device
        raise UsageError(str(e)) from None

"""Checkpoints: ``model.safetensors`` (weights, no pickle) + ``config.json`` (the resolved ModelConfig)."""
from __future__ import annotations

from ..errors import SynthformerError

import json
import os
import shutil
import tempfile
from pathlib import Path

from safetensors import SafetensorError
from safetensors.torch import load_model, save_model

from .config import ModelConfig

WEIGHTS, CONFIG = "model.safetensors", "config.json"
FORMAT_VERSION = 1


class CheckpointError(SynthformerError):
    """A checkpoint folder is missing, incomplete, corrupted or does not match its config."""


def save(model, path) -> Path:
    """Write weights and config to the folder ``path``: all files go to a temporary folder first and
    replace the old ones only once complete, so an interrupted save never leaves a half-written file."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=path))
    try:
        save_model(model, str(tmp / WEIGHTS))
        meta = {"format_version": FORMAT_VERSION, "config": model.config.to_dict()}
        (tmp / CONFIG).write_text(json.dumps(meta, indent=2))
        for name in (WEIGHTS, CONFIG):  # weights first: a config never points at missing weights
            os.replace(tmp / name, path / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def read_config(path) -> ModelConfig:
    """The ModelConfig stored in a checkpoint folder."""
    file = Path(path) / CONFIG
    if not file.is_file():
        raise CheckpointError(f"{file}: not found; a checkpoint folder holds {CONFIG} and {WEIGHTS} "
                              "(written by model.save)")
    try:
        meta = json.loads(file.read_text())
        return ModelConfig.from_dict(meta["config"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{file}: not a valid synthformer config ({e})") from None


def load(path, device: str = "cpu"):
    """Rebuild the model saved in the folder ``path`` from its config and weights alone."""
    from .transformer import build_model

    cfg = read_config(path)
    model = build_model(cfg)
    file = Path(path) / WEIGHTS
    if not file.is_file():
        raise CheckpointError(f"{file}: not found; the checkpoint is incomplete")
    try:
        missing, unexpected = load_model(model, str(file), strict=False, device=device)
    except (SafetensorError, OSError) as e:
        raise CheckpointError(f"{file}: unreadable or truncated weights ({e})") from None
    except RuntimeError as e:  # shape mismatch
        raise CheckpointError(f"{file}: weights do not match {CONFIG} ({str(e).splitlines()[0]} ...)") from None
    if missing or unexpected:
        raise CheckpointError(f"{file}: weights do not match {CONFIG}: missing {sorted(missing)[:5]}, "
                              f"unexpected {sorted(unexpected)[:5]}")
    return model.to(device)

"""The checkpoint folder format: ``model.safetensors`` (weights, no pickle), ``config.json`` (the
resolved ModelConfig) and ``manifest.json`` (SHA-256 of both, written last; see synthformer.utils.integrity).

This module knows files, not model classes: ``SynthformerModel.save`` / ``SynthformerModel.load``
(model/transformer.py) build and fill models through it, so the two modules do not import each other.
A folder without ``manifest.json`` (saved before manifests existed) loads with a warning.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from .._optional import require
from ..utils.integrity import MANIFEST, CheckpointError, fsync_dir, remove_stale_temps, verify_manifest, write_manifest
from .config import ModelConfig

WEIGHTS, CONFIG = "model.safetensors", "config.json"
FORMAT_VERSION = 1

__all__ = ["CONFIG", "CheckpointError", "MANIFEST", "WEIGHTS", "load_weights", "model_folder", "read_config",
           "save", "write_model_files"]


def write_model_files(model, folder: Path) -> None:
    """Weights and config into ``folder`` (an empty folder the caller renames or moves into place)."""
    folder = Path(folder)
    require("safetensors.torch", "saving a checkpoint").save_model(model, str(folder / WEIGHTS))
    meta = {"format_version": FORMAT_VERSION, "config": model.config.to_dict()}
    (folder / CONFIG).write_text(json.dumps(meta, indent=2))


def save(model, path) -> Path:
    """Write weights, config and manifest to the folder ``path``: all files go to a temporary folder
    first (fsynced) and replace the old ones only once complete, manifest last, so an interrupted
    save never leaves a half-written file (a torn overwrite fails the manifest check, loudly)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{path} is a file; give a folder to save the model into")
    path.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".save.tmp-{os.getpid()}-", dir=path))
    try:
        write_model_files(model, tmp)
        write_manifest(tmp)  # fsyncs the files it lists
        for name in (WEIGHTS, CONFIG, MANIFEST):  # weights first: a config never points at missing weights
            os.replace(tmp / name, path / name)
        fsync_dir(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def model_folder(path) -> Path:
    """``path`` itself, or ``path/model`` when ``path`` is a training run folder (the final model)."""
    path = Path(path)
    if (path / WEIGHTS).exists() or not (path / "checkpoints").is_dir() and not (path / "model").is_dir():
        return path
    if (path / "model" / CONFIG).is_file():
        return path / "model"
    raise CheckpointError(f"{path} is a run folder without a final model (unfinished run); load one of its "
                          f"checkpoints, {path / 'checkpoints'}/step-N, or finish the run with --resume")


def read_config(path) -> ModelConfig:
    """The ModelConfig stored in a checkpoint folder (or a run folder's model/)."""
    file = model_folder(path) / CONFIG
    if not file.is_file():
        raise CheckpointError(f"{file}: not found; a checkpoint folder holds {CONFIG} and {WEIGHTS} "
                              "(written by model.save)")
    try:
        meta = json.loads(file.read_text())
        return ModelConfig.from_dict(meta["config"])
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{file}: not a valid synthformer config ({str(e).splitlines()[0]})") from None


def load_weights(model, path, device: str = "cpu") -> None:
    """Fill ``model`` (built from ``read_config(path)``) with the folder's weights, then check the
    manifest (structural errors first: they say more than a checksum)."""
    folder = model_folder(path)
    file = folder / WEIGHTS
    if not file.is_file():
        raise CheckpointError(f"{file}: not found; the checkpoint is incomplete")
    st_torch = require("safetensors.torch", "loading a checkpoint")  # optional: the core is torch alone
    unreadable = require("safetensors", "loading a checkpoint").SafetensorError
    try:
        missing, unexpected = st_torch.load_model(model, str(file), strict=False, device=device)
    except (unreadable, OSError) as e:
        raise CheckpointError(f"{file}: unreadable or truncated weights ({e})") from None
    except RuntimeError as e:  # shape mismatch
        raise CheckpointError(f"{file}: weights do not match {CONFIG} ({str(e).splitlines()[0]} ...)") from None
    if missing or unexpected:
        raise CheckpointError(f"{file}: weights do not match {CONFIG}: missing {sorted(missing)[:5]}, "
                              f"unexpected {sorted(unexpected)[:5]}")
    verify_manifest(folder)

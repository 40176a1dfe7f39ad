"""Run-folder files written atomically: checkpoints (weights + training state) and JSON records.

A checkpoint is written to a temporary folder, renamed into place, and only then named by
``latest.json`` (itself replaced atomically), so a run killed at any moment resumes from the last
complete one. ``state.pt`` holds plain tensors and dicts only and is read with ``weights_only=True``.
"""
from __future__ import annotations

from .errors import SynthformerError

import json
import os
import random
import shutil
from pathlib import Path

import torch


class RunError(SynthformerError):
    """A run cannot start or resume (folder exists, already complete, config mismatch)."""


def atomic_write_text(path: Path, text: str) -> None:
    """Write then rename: readers see the old file or the new one, never half of it."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


CKPT_DIR, LATEST, STATE = "checkpoints", "latest.json", "state.pt"


def rank_state(device: torch.device, batcher, mask_generator: torch.Generator) -> dict:
    """What one rank needs to continue exactly: its RNGs and its data position."""
    return {"torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "python": random.getstate(), "mask_generator": mask_generator.get_state(),
            "data": batcher.state_dict()}


def save_checkpoint(out: Path, step: int, model, optimizer, rank_states: list, counters: dict, keep: int) -> Path:
    """Write checkpoints/step-N atomically (temp folder, rename), then point latest.json at it."""
    folder = out / CKPT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    name = f"step-{step:08d}"
    final = folder / name
    if not final.exists():  # the same step is never written twice (its state would be identical)
        tmp = folder / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        model.save(tmp)
        torch.save({"step": step, "optimizer": optimizer.state_dict(), "ranks": rank_states,
                    "counters": counters}, tmp / STATE)
        os.replace(tmp, final)
    atomic_write_json(folder / LATEST, {"step": step, "path": name})
    for old in sorted(p for p in folder.glob("step-*") if p.is_dir())[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(out: Path) -> Path | None:
    """The folder named by checkpoints/latest.json, or None when the run has no checkpoint yet."""
    pointer = Path(out) / CKPT_DIR / LATEST
    if not pointer.exists():
        return None
    folder = pointer.parent / json.loads(pointer.read_text())["path"]
    if not (folder / STATE).exists():
        raise RunError(f"{pointer} names {folder}, which is incomplete; delete {pointer} to restart the run")
    return folder

"""Training checkpoints: weights + training state, written atomically and verified on resume.

A checkpoint is written to a temporary folder (``.step-N.tmp-PID``: every file fsynced, then
``manifest.json`` with their SHA-256), renamed into place (the parent fsynced), and only then named
by ``latest.json`` (itself replaced atomically), so a run killed at any moment resumes from the last
complete one. ``state.pt`` holds plain tensors and dicts only and is read with ``weights_only=True``
after its checksum is verified.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import torch

from ..errors import SynthformerError
from ..utils.integrity import (CheckpointError, atomic_write_json, fsync_dir, remove_stale_temps,
                               write_manifest)
from .lock import reading, remove_unless_read
from ..model.io import write_model_files


class RunError(SynthformerError):
    """A run cannot start or resume (folder exists, already complete, config mismatch, locked)."""


CKPT_DIR, LATEST, STATE = "checkpoints", "latest.json", "state.pt"


def rank_state(device: torch.device, batcher, mask_generator: torch.Generator, window=(0.0, 0)) -> dict:
    """What one rank needs to continue exactly: its RNGs, its data position and its open logging window
    (sum of the losses since the last train row, their count)."""
    return {"torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "python": random.getstate(), "mask_generator": mask_generator.get_state(),
            "data": batcher.state_dict(), "window": [float(window[0]), int(window[1])]}


def checkpoint_name(step: int) -> str:
    """The folder name of the checkpoint at `step` (under checkpoints/)."""
    return f"step-{step:08d}"


def save_checkpoint(out: Path, step: int, model, optimizer, rank_states: list, counters: dict, keep: int) -> Path:
    """Write checkpoints/step-N atomically (temp folder, manifest, rename), then point latest.json at it."""
    folder = out / CKPT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(folder)
    name = checkpoint_name(step)
    final = folder / name
    if not final.exists():  # the same step is never written twice (its state would be identical)
        tmp = folder / f".{name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        write_model_files(model, tmp)
        torch.save({"step": step, "optimizer": optimizer.state_dict(), "ranks": rank_states,
                    "counters": counters}, tmp / STATE)
        write_manifest(tmp)  # fsyncs every file it lists, then itself
        fsync_dir(tmp)
        os.replace(tmp, final)
        fsync_dir(folder)
    atomic_write_json(folder / LATEST, {"step": step, "path": name})
    for old in rotated(folder, name, keep):
        remove_unless_read(old)  # one being read (load_model, eval) goes at a later rotation
    return final


def rotated(folder: Path, newest: str, keep: int) -> list[Path]:
    """The checkpoint folders to remove once `newest` (just written and named by latest.json) is in place: those
    beyond the `keep` newest on the run's way to it. The newest is never among them, whatever else lies there: a
    higher-numbered one is left from a path the run no longer takes (latest.json deleted to restart, or a killed
    writer) and goes too, as the run writes that step again when it gets there."""
    at = int(_STEP_NAME.fullmatch(newest).group(1))
    steps = {p: int(m.group(1)) for p in folder.glob("step-*")
             if p.is_dir() and p.name != newest and (m := _STEP_NAME.fullmatch(p.name))}
    earlier = sorted((p for p, n in steps.items() if n < at), key=steps.get)
    stale = [p for p, n in steps.items() if n > at]
    return stale + earlier[:max(0, len(earlier) - (keep - 1))]


_STEP_NAME = re.compile(r"step-(\d+)")
ROTATION_RETRIES = 50  # re-reads of latest.json when a concurrent writer moved it on (each a new checkpoint)


def _pointed(pointer: Path) -> str:
    """The checkpoint folder name in latest.json: ``step-N``, checked (one RunError otherwise)."""
    try:
        meta = json.loads(pointer.read_text())
        name = meta["path"]
        m = _STEP_NAME.fullmatch(name)
        assert m and meta.get("step", int(m.group(1))) == int(m.group(1))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AssertionError):
        raise RunError(f"{pointer}: not a valid checkpoint pointer (corrupted); write "
                       '{"path": "step-N"} naming a folder of checkpoints/, or delete it to restart the run') from None
    return name


def latest_checkpoint(out: Path) -> Path | None:
    """The folder named by checkpoints/latest.json, or None when the run has no checkpoint yet. The
    folder must be a real folder inside the run's checkpoints/ (not a link elsewhere). A folder
    removed by a concurrent writer's rotation is followed to the new latest one."""
    pointer = Path(out) / CKPT_DIR / LATEST
    if not pointer.exists():
        return None
    for _ in range(ROTATION_RETRIES):
        name = _pointed(pointer)
        folder = pointer.parent / name
        if folder.is_symlink() or (folder.exists() and folder.resolve().parent != pointer.parent.resolve()):
            raise RunError(f"{pointer} names {folder}, which is a link out of {pointer.parent}; a checkpoint of "
                           "this run must be a folder inside it (delete latest.json to restart the run)")
        if (folder / STATE).is_file():
            return folder
        if _pointed(pointer) == name:  # not rotated meanwhile: the folder itself is incomplete
            raise RunError(f"{pointer} names {folder}, which is incomplete; delete {pointer} to restart the run")
    raise RunError(f"{pointer} changed {ROTATION_RETRIES} times while being read; is another run writing it?")


def read_latest(out: Path, read):
    """(folder, ``read(folder)``) of the latest checkpoint of run ``out``. The folder is held (a shared
    lock) while it is read, so a concurrent writer's rotation leaves it in place however slow the read;
    one rotated away before it was held is followed to the new latest one, so a reader never reports a
    complete checkpoint as missing or incomplete."""
    for _ in range(ROTATION_RETRIES):
        folder = latest_checkpoint(out)
        if folder is None:
            raise RunError(f"{out} has no checkpoint (no {CKPT_DIR}/{LATEST}); train it first")
        try:
            with reading(folder):
                return folder, read(folder)
        except (SynthformerError, OSError):
            if _pointed(folder.parent / LATEST) == folder.name:
                raise  # not a rotation: the checkpoint itself is damaged
    raise RunError(f"{Path(out) / CKPT_DIR / LATEST} changed {ROTATION_RETRIES} times while being read; is "
                   "another run writing it?")


def load_state(ckpt: Path, world_size: int) -> dict:
    """The training state of a checkpoint folder whose manifest was verified (by ``load``)."""
    file = ckpt / STATE
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
        ranks = state["ranks"]
        assert isinstance(ranks, list) and {"step", "optimizer", "counters"} <= set(state)
    except Exception as e:  # torch raises RuntimeError, UnpicklingError, EOFError, ... on a damaged file
        raise CheckpointError(f"{file}: unreadable training state ({type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else 'corrupted'}); resume from an earlier "
                              "checkpoint or restart the run") from None
    if len(ranks) != world_size:
        raise RunError(f"{file} was written by {len(ranks)} process(es); resume it with the same world size "
                       f"(torchrun --nproc_per_node {len(ranks)}), not {world_size}")
    return state


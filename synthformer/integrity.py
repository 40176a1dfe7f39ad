"""Durable writes and integrity manifests for checkpoint folders.

Every checkpoint folder (``model/`` and ``checkpoints/step-N/``) ends with ``manifest.json``, written
last: the SHA-256 and size of every other file in the folder. Loading verifies it, so a flipped bit
in ``model.safetensors`` or ``state.pt`` (whose zip CRC torch never checks) is one error naming the
file instead of a silently wrong model or a resume that dies later with "loss became nan".

Folders saved before manifests existed (no ``manifest.json``) still load, with a warning
(``MissingManifestWarning``); saving again adds one.

Files are written to a temporary name, fsynced, renamed into place, and the folder is fsynced after
the rename, so a power cut leaves the old file or the new one. Temporary names carry the writer's
pid (``.NAME.tmp-PID...``), so leftovers of killed writers can be told from those of live ones.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import warnings
from pathlib import Path

from .errors import SynthformerError

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
_TMP = re.compile(r"^\..*\.tmp-(\d+)(?:-.*)?$")  # .NAME.tmp-PID or .NAME.tmp-PID-RANDOM


class CheckpointError(SynthformerError):
    """A checkpoint folder is missing, incomplete, corrupted or does not match its config."""


class MissingManifestWarning(UserWarning):
    """A checkpoint folder without manifest.json (saved by an older synthformer): not verified."""


# ----------------------------------------------------------------------------- durable writes
def tmp_name(path: Path) -> Path:
    """The temporary sibling of ``path`` this process writes before renaming: ``.NAME.tmp-PID``."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write then rename: readers see the old file or the new one, never half of it."""
    path = Path(path)
    tmp = tmp_name(path)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temps(folder: Path, mine_too: bool = False) -> list[Path]:
    """Delete the temporary files / folders in ``folder`` whose writer is dead (``mine_too``: also
    this process's, when the caller knows none of its writes is in flight). Returns what went."""
    folder = Path(folder)
    gone = []
    if not folder.is_dir():
        return gone
    for p in folder.iterdir():
        m = _TMP.match(p.name)
        if m is None:
            continue
        pid = int(m.group(1))
        if _pid_alive(pid) and not (mine_too and pid == os.getpid()):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        gone.append(p)
    return gone


# ----------------------------------------------------------------------------- manifests
def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_manifest(folder: Path) -> Path:
    """Fsync every file of ``folder``, then write ``manifest.json`` (their SHA-256 and sizes) last."""
    folder = Path(folder)
    files = {}
    for p in sorted(folder.iterdir()):
        if p.name == MANIFEST or not p.is_file() or _TMP.match(p.name):
            continue
        fsync_file(p)
        files[p.name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    atomic_write_json(folder / MANIFEST, {"manifest_version": MANIFEST_VERSION, "algorithm": "sha256",
                                          "files": files})
    return folder / MANIFEST


def verify_manifest(folder: Path) -> bool:
    """Check every file listed in ``folder/manifest.json``; one CheckpointError naming the first file
    that is missing or differs. Returns False (with a warning) for a folder without a manifest."""
    folder = Path(folder)
    file = folder / MANIFEST
    if not file.is_file():
        warnings.warn(f"{folder} has no {MANIFEST} (saved by an older synthformer): loaded without an "
                      "integrity check; save it again to add one", MissingManifestWarning, stacklevel=3)
        return False
    try:
        meta = json.loads(file.read_text())
        files = meta["files"]
        assert meta.get("algorithm", "sha256") == "sha256" and isinstance(files, dict)
        entries = [(name, e["sha256"], int(e["bytes"])) for name, e in files.items()]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError, AssertionError):
        raise CheckpointError(f"{file}: not a valid manifest (corrupted); restore it or save the model again") \
            from None
    for name, digest, size in entries:
        path = folder / name
        if Path(name).name != name:
            raise CheckpointError(f"{file}: lists {name!r}, which is not a file of this folder")
        if not path.is_file():
            raise CheckpointError(f"{path}: missing ({MANIFEST} lists it); the checkpoint is incomplete")
        if path.stat().st_size != size or sha256_file(path) != digest:
            raise CheckpointError(f"{path}: contents differ from {MANIFEST} (SHA-256 mismatch): the file is "
                                  "corrupted or was changed after saving; restore it or use another checkpoint")
    return True

"""Durable writes and integrity manifests for checkpoint folders.

Every checkpoint folder (``model/`` and ``checkpoints/step-N/``) ends with ``manifest.json``, written
last: the SHA-256 and size of every other file in the folder. Loading verifies it, so a flipped bit
in ``model.safetensors`` or ``state.pt`` (whose zip CRC torch never checks) is one error naming the
file instead of a silently wrong model or a resume that dies later with "loss became nan".

A run folder has one too, over its own files (config.json, the tokenizer's files, done.json and
metrics.jsonl once finished; see ``synthformer.training.runs``), and there every file read by name must be
listed (such a file added after training, e.g. a tokenizer side file, is an error too); a model or checkpoint folder is
read by the names its manifest lists. A folder without ``manifest.json`` (saved by an older
synthformer, or the manifest deleted) or with an empty one is an error, unless the caller opted in
with ``trust_unverified()`` (the CLI's ``--trust-unverified``): it then loads with a
``MissingManifestWarning``; saving again adds a manifest.

Files are written to a temporary name, fsynced, renamed into place, and the folder is fsynced after
the rename, so a power cut leaves the old file or the new one. Temporary names carry the writer's
pid (``.NAME.tmp-PID...``), so leftovers of killed writers can be told from those of live ones.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import re
import shutil
import warnings
from pathlib import Path

from ..errors import SynthformerError
from .jsonl import dumps_readable

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
_TMP = re.compile(r"^\..*\.tmp-(\d+)(?:-.*)?$")  # .NAME.tmp-PID or .NAME.tmp-PID-RANDOM


class CheckpointError(SynthformerError):
    """A checkpoint folder is missing, incomplete, corrupted or does not match its config."""


class MissingManifestWarning(UserWarning):
    """A folder without a usable manifest.json, loaded unverified under ``trust_unverified()``."""


_TRUST = contextvars.ContextVar("synthformer_trust_unverified", default=False)
TRUST_FLAG = "--trust-unverified"


@contextlib.contextmanager
def trust_unverified(on: bool = True):
    """``with trust_unverified():`` folders without a (non-empty) manifest load, with a warning, instead
    of raising CheckpointError. Files that a manifest lists are still checked."""
    token = _TRUST.set(bool(on))
    try:
        yield
    finally:
        _TRUST.reset(token)


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
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:  # a full disk, a file-size limit: leave no half-written temporary file behind
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_text(path, dumps_readable(obj) + "\n")


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


def _listed(folder: Path, skip) -> list[Path]:
    """The files a manifest of ``folder`` covers: every plain file but the manifest, temporary and
    hidden files, and the names in ``skip``."""
    return [p for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST and p.name not in skip
            and not p.name.startswith(".")]


def write_manifest(folder: Path, skip: frozenset | set | tuple = (), extra: dict | None = None) -> Path:
    """Fsync every file of ``folder`` (but those named in ``skip``), then write ``manifest.json`` (their
    SHA-256 and sizes) last. ``extra`` {name: path}: also list ``path`` under ``name`` (a file still
    at its temporary name, renamed into place after the manifest)."""
    folder = Path(folder)
    files = {}
    for p in [*_listed(folder, skip), *(extra or {}).values()]:
        fsync_file(p)
        files[p.name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    for name, p in (extra or {}).items():
        files[name] = files.pop(p.name)
    atomic_write_json(folder / MANIFEST, {"manifest_version": MANIFEST_VERSION, "algorithm": "sha256",
                                          "files": dict(sorted(files.items()))})
    return folder / MANIFEST


def _unverified(folder: Path, why: str) -> bool:
    """False with a warning under ``trust_unverified()``; otherwise one CheckpointError."""
    if _TRUST.get():
        warnings.warn(f"{folder}: {why}; loaded without an integrity check ({TRUST_FLAG}); save it again "
                      "to add a manifest", MissingManifestWarning, stacklevel=4)
        return False
    raise CheckpointError(f"{folder}: {why}, so its files cannot be verified (saved by an older synthformer, or "
                          f"the manifest was removed); save it again, or pass {TRUST_FLAG} to use it anyway")


def verify_manifest(folder: Path, skip: frozenset | set | tuple = (), required: frozenset | set | tuple = ()) -> bool:
    """Check ``folder`` against its ``manifest.json``: every listed file present and unchanged, and every
    file of the folder named in ``required`` (a run folder's files that readers look up by name) listed;
    files synthformer never reads (a figure, a note) may be added. Names in ``skip`` are neither checked
    nor required. One CheckpointError naming the first file that
    differs. A missing or empty manifest is an error too, unless under ``trust_unverified()`` (then a
    warning, and False is returned)."""
    folder = Path(folder)
    file = folder / MANIFEST
    if not file.is_file():
        return _unverified(folder, f"no {MANIFEST}")
    try:
        meta = json.loads(file.read_text())
        files = meta["files"]
        assert meta.get("algorithm", "sha256") == "sha256" and isinstance(files, dict)
        entries = [(name, e["sha256"], int(e["bytes"])) for name, e in files.items()]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError, AssertionError):
        raise CheckpointError(f"{file}: not a valid manifest (corrupted); restore it or save the model again") \
            from None
    if not entries:
        return _unverified(folder, f"{MANIFEST} lists no file")
    for name, digest, size in entries:
        path = folder / name
        if Path(name).name != name or name.startswith("."):
            raise CheckpointError(f"{file}: lists {name!r}, which is not a file of this folder")
        if name in skip:
            continue
        if not path.is_file():
            raise CheckpointError(f"{path}: missing ({MANIFEST} lists it); the checkpoint is incomplete")
        if path.stat().st_size != size or sha256_file(path) != digest:
            raise CheckpointError(f"{path}: contents differ from {MANIFEST} (SHA-256 mismatch): the file is "
                                  "corrupted or was changed after saving; restore it or use another checkpoint")
    extra = [p for p in _listed(folder, skip) if p.name in required and p.name not in files]
    if extra:
        raise CheckpointError(f"{extra[0]}: not covered by {file} (added after saving); remove it, or restore "
                              "the folder from a backup")
    return True


# ----------------------------------------------------------------------------- recorded folders
# A grid folder (`synthformer.evidence.grid`), a fine-tuning suite's folder and a reproduction's folder hold the
# files tables and reports are made from (cells, settings, floors, speed, results). Their writer records each
# such file's SHA-256 in the folder's ``digests.json`` (a manifest over paths relative to the folder, updated
# atomically under a lock each time one of them is written), and every reader goes through `read_recorded`:
# a file edited by hand, damaged, copied in from another folder or a folder without ``digests.json`` is one
# `RecordError` naming the file and the fix, unless under ``trust_unverified()`` (``--trust-unverified``),
# where it is used with a warning and its digest recorded (adopted) when the reader may write the folder.
DIGESTS = "digests.json"


class RecordError(SynthformerError):
    """A file of a grid, suite or reproduction folder that its digests.json does not vouch for, or is malformed."""


class UnverifiedFileWarning(UserWarning):
    """A folder file used without a matching digest, under ``trust_unverified()``."""


def _rel(folder: Path, path: Path) -> str:
    return Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(folder))).as_posix()


@contextlib.contextmanager
def _digests_locked(folder: Path):
    try:
        import fcntl
    except ImportError:  # no advisory locks (Windows): updates are not serialised there
        yield
        return
    fd = os.open(folder, os.O_RDONLY)  # the folder itself: no lock file left behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def read_digests(folder: Path) -> dict | None:
    """{relative path: {"sha256", "bytes"}} of ``folder/digests.json``; None when there is none."""
    file = Path(folder) / DIGESTS
    if not file.is_file():
        return None
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
        files = meta["files"]
        if not isinstance(files, dict) or not all(isinstance(e, dict) and isinstance(e.get("sha256"), str)
                                                  and isinstance(e.get("bytes"), int) for e in files.values()):
            raise TypeError
        return files
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
        raise RecordError(f"{file}: not a valid digests file (damaged or edited); restore it, or pass "
                          f"{TRUST_FLAG} to use the folder's files unverified (their digests are then recorded)") \
            from None


def record_files(folder: Path, *paths: Path, drop: tuple = ()) -> None:
    """Record the current SHA-256 of ``paths`` (files inside ``folder``) in ``folder/digests.json``, and forget
    the relative paths in ``drop``; atomically, under a lock (a reader never sees half of it)."""
    with _digests_locked(Path(folder)):
        _record(Path(folder), paths, drop)


def _record(folder: Path, paths, drop=()) -> None:  # under _digests_locked(folder)
    try:
        files = read_digests(folder) or {}
    except RecordError:
        if not _TRUST.get():
            raise
        files = {}
    for p in paths:
        p = Path(p)
        files[_rel(folder, p)] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    for rel in drop:
        files.pop(rel, None)
    atomic_write_json(folder / DIGESTS, {"manifest_version": MANIFEST_VERSION, "algorithm": "sha256",
                                         "files": dict(sorted(files.items()))})


def write_recorded(folder: Path, path: Path, text: str) -> None:
    """Write ``path`` (inside ``folder``) atomically and record its digest, both under the folder's lock (so
    `verify_recorded` beside this writer never sees the new file with the old digest)."""
    with _digests_locked(Path(folder)):
        atomic_write_text(path, text)
        _record(Path(folder), [path])


def verify_recorded(root: Path) -> None:
    """Check every file that a ``digests.json`` in ``root`` or below lists (and that exists: a deleted cell is
    trained again) against its digest, before a command writes anything there: one RecordError naming the
    first file that differs, so damage anywhere stops the command at once rather than after hours of other
    grids' work. Nothing is checked under ``trust_unverified()`` (each file is then checked, with a warning,
    where it is read)."""
    if _TRUST.get() or not Path(root).is_dir():
        return
    for manifest in sorted(Path(root).rglob(DIGESTS)):
        folder = manifest.parent
        with _digests_locked(folder):
            for rel, entry in (read_digests(folder) or {}).items():
                path = folder / rel
                if path.is_file() and (path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]):
                    raise RecordError(f"{_changed(path, folder)}; restore it, or delete it to have it made again, "
                                      f"or pass {TRUST_FLAG} to use it anyway (its digest is then recorded)")


def _changed(path: Path, folder: Path) -> str:
    return f"{path}: contents differ from {folder / DIGESTS} (SHA-256 mismatch): changed after synthformer wrote it"


def write_recorded_json(folder: Path, path: Path, obj, indent: int | None = 2) -> None:
    """`write_recorded` of ``obj`` as JSON: ``indent=None`` on one line (a cell), else `dumps_readable`."""
    write_recorded(folder, path, json.dumps(obj, default=str) if indent is None else dumps_readable(obj, indent) + "\n")


def read_recorded(folder: Path, path: Path, fix: str, adopt: bool = True) -> str:
    """The text of ``path`` (inside ``folder``), verified against ``folder/digests.json``: one RecordError naming
    the file and ``fix`` (what to do, e.g. "delete it to train that run again") when the folder has no digests,
    when the file is not listed (added or copied in) or differs from its digest. Under ``trust_unverified()`` it
    is read with a warning instead, and (``adopt``: the caller may write the folder) its digest recorded."""
    folder, path = Path(folder), Path(path)
    files = read_digests(folder)
    rel = _rel(folder, path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise RecordError(f"{path}: unreadable ({e.strerror or type(e).__name__}); {fix}") from None
    if files is None:
        why = (f"{folder} has no {DIGESTS}, so {path.name} cannot be verified (written by an older synthformer, "
               "or the digests were removed)")
    elif rel not in files:
        why = f"{path}: not covered by {folder / DIGESTS} (added or copied in after the folder was written)"
    elif files[rel]["bytes"] != len(data) or hashlib.sha256(data).hexdigest() != files[rel]["sha256"]:
        why = _changed(path, folder)
    else:
        why = None
    if why is not None:
        if not _TRUST.get():
            raise RecordError(f"{why}; {fix}, or pass {TRUST_FLAG} to use it anyway (its digest is then recorded)")
        warnings.warn(f"{why}; used without an integrity check ({TRUST_FLAG})", UnverifiedFileWarning, stacklevel=2)
        if adopt:
            record_files(folder, path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not UTF-8 text (damaged); {fix}") from None


def read_recorded_json(folder: Path, path: Path, fix: str, kind: type | None = dict, adopt: bool = True):
    """`read_recorded` then JSON: a file that is not JSON (an empty one too) or not of type ``kind`` (a JSON
    object by default) is one RecordError naming it and ``fix``."""
    text = read_recorded(folder, path, fix, adopt)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        what = "empty" if not text.strip() else f"not valid JSON ({e.msg}, line {e.lineno})"
        raise RecordError(f"{path}: {what}; {fix}") from None
    if kind is not None and not isinstance(value, kind):
        raise RecordError(f"{path}: not a JSON {'object' if kind is dict else kind.__name__} "
                          f"(a {type(value).__name__}); {fix}")
    return value

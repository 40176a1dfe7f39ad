"""The run folder: opening it for training (lock, stale temporary files, checks, the first writes),
the metrics log, and reading it back (config.json, tokenizer.json, metrics.jsonl, the model to use).

Every reader turns a damaged or hand-edited file into one ``RunError`` naming the file and the fix,
for train (resume), eval, generate and compare alike.

The run folder carries its own ``manifest.json`` (synthformer.utils.integrity), written once the run's
config.json and tokenizer files exist and again, over every file, when the run finishes: until then
``metrics.jsonl`` (appended every log step) and ``done.json`` are left out; ``train.lock`` never
counts. `verify_run` checks it: a flipped bit in config.json or tokenizer.json, a file read by name
(READ_BY_NAME) added or removed, a missing or empty manifest (unless ``trust_unverified()``) is one error naming the file.
``checkpoints/`` and ``model/`` have their own manifests; ``checkpoints/latest.json`` is checked
against the folder it names (synthformer.training.checkpoint).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

from .checkpoint import CKPT_DIR, LATEST, RunError, checkpoint_name, latest_checkpoint, read_latest
from ..data import load_tokenizer
from ..data.tokenizer import META_FILENAME
from ..errors import SynthformerError
from .distributed import Dist
from ..utils.jsonl import read_rows
from ..utils.integrity import (MANIFEST, atomic_write_json, atomic_write_text, fsync_dir, fsync_file,
                               remove_stale_temps, tmp_name, verify_manifest, write_manifest)
from .lock import LOCK_FILE, RunLock
from .trackers import open_reporters

RUN_CONFIG, TOKENIZER, METRICS, DONE = "config.json", "tokenizer.json", "metrics.jsonl", "done.json"


def read_run_config(out) -> dict:
    """``out/config.json``: ``{"model": {...}, "train": {...}, "world_size": N, ...}``, checked."""
    file = Path(out) / RUN_CONFIG
    if not file.is_file():
        raise RunError(f"{file}: {_not_a_file(file)}; {out} is not a run folder (give the out of a train run)")
    try:
        stored = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{file}: not valid JSON ({e}); restore it from a backup or start a new run") from None
    if not (isinstance(stored, dict) and isinstance(stored.get("model"), dict)
            and isinstance(stored.get("train"), dict) and isinstance(stored.get("world_size", 1), int)):
        raise RunError(f"{file}: not a run config (needs \"model\" and \"train\" objects); restore it or "
                       "start a new run")
    return stored


def _not_a_file(file: Path) -> str:
    """Why `file` (not a regular file) cannot be read: missing, or what it is instead."""
    if not file.exists():
        return "not found (a dangling link)" if file.is_symlink() else "not found"
    kind = "a folder" if file.is_dir() else "a device, pipe or socket"
    link = f" (a link to {os.path.realpath(file)})" if file.is_symlink() else ""
    return f"not a regular file: {kind}{link}"


READ_BY_NAME = frozenset({RUN_CONFIG, TOKENIZER, META_FILENAME, METRICS, DONE})  # must be in the run manifest
UNFINISHED = frozenset({LOCK_FILE, METRICS, DONE})  # not in the manifest while the run is not finished


def verify_run(out) -> bool:
    """Check the run folder's own files against its manifest (see the module doc); one CheckpointError
    naming the first file that differs. False (with a warning) for an unverified folder under
    ``trust_unverified()``."""
    out = Path(out)
    return verify_manifest(out, skip={LOCK_FILE} if (out / DONE).exists() else UNFINISHED, required=READ_BY_NAME)


def write_done(out: Path, result: dict) -> None:
    """done.json, which marks a finished run, and the run manifest over every file: the manifest (listing
    done.json's final bytes) goes first, done.json last, so a kill in between leaves an unfinished run."""
    tmp = tmp_name(out / DONE)
    atomic_write_json(tmp, result)  # a complete file at the temporary name (the rename below is the marker)
    write_manifest(out, skip={LOCK_FILE, DONE}, extra={DONE: tmp})
    os.replace(tmp, out / DONE)
    fsync_dir(out)


def read_done(out) -> dict:
    """The result of a finished run (``out/done.json``), verified against the run manifest."""
    file = Path(out) / DONE
    verify_run(out)
    try:
        result = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{file}: unreadable ({type(e).__name__}); delete {Path(out)} to rerun it") from None
    if not isinstance(result, dict):
        raise RunError(f"{file}: not a run result (a JSON object); delete {Path(out)} to rerun it")
    return result


def load_run_tokenizer(out):
    """The tokenizer a run trained with (``out/tokenizer.json``), or one RunError naming the file."""
    file = Path(out) / TOKENIZER
    if not file.is_file():
        raise RunError(f"{file}: {_not_a_file(file)}; the run folder is incomplete")
    try:
        return load_tokenizer(file)
    except SynthformerError:
        raise
    except Exception as e:  # JSON errors, missing keys, the tokenizers library's own errors
        raise RunError(f"{file}: not a valid tokenizer ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                       "restore it from a backup or start a new run") from None


def read_metrics(out) -> list[dict]:
    """The rows of ``out/metrics.jsonl``; a last line cut short by a kill is dropped with a warning."""
    file = Path(out) / METRICS
    if not file.exists():
        return []
    text = file.read_text(errors="replace")
    lines = text.splitlines()
    if lines and not text.endswith("\n"):  # the row being appended when the run was killed
        warnings.warn(f"{file}: dropping an unfinished last line (the run was interrupted)", stacklevel=2)
        lines = lines[:-1]
    rows = []
    for i, row in read_rows("\n".join(lines), file, RunError, "fix or delete that line", ("step", "split")):
        if not (isinstance(row["step"], int) and isinstance(row["split"], str)):
            raise RunError(f"{file}:{i}: not a metrics row (needs integer \"step\" and string \"split\"); "
                           "fix or delete that line")
        rows.append(row)
    return rows


def trim_metrics(out, step: int) -> None:
    """Keep the rows up to ``step`` (those after the checkpoint resumed from are written again)."""
    file = Path(out) / METRICS
    if file.exists():
        atomic_write_text(file, "".join(json.dumps(r) + "\n" for r in read_metrics(out) if r["step"] <= step))


def holds_final_checkpoint(run, steps: int) -> bool:
    """Whether run `run` finished (done.json) at `steps` and still holds that step's checkpoint: a new run can
    continue it (`train`'s continue_from) without training a step."""
    ckpt = latest_checkpoint(run) if (Path(run) / DONE).exists() else None
    return ckpt is not None and ckpt.name == checkpoint_name(steps)


def copy_metrics(source, out, step: int) -> None:
    """Start ``out/metrics.jsonl`` with the rows of run `source` before ``step`` and its training rows at
    ``step`` (a run continuing `source` from there evaluates that step again, with its own settings)."""
    rows = [r for r in read_metrics(source) if r["step"] < step or (r["step"] == step and r["split"] == "train")]
    atomic_write_text(Path(out) / METRICS, "".join(json.dumps(r) + "\n" for r in rows))


def run_model_folder(out) -> tuple[Path, bool]:
    """(folder of the model to use, finished): the final ``model/``, else the latest checkpoint."""
    out = Path(out)
    model = out / "model"
    if model.is_symlink() or (model.exists() and model.resolve().parent != out.resolve()):
        raise RunError(f"{model}: a link to {model.resolve()}, outside the run; a run's model/ must be its own "
                       "folder (remove the link, or give the other run's folder)")
    if (model / "model.safetensors").is_file():
        return model, True
    ckpt = latest_checkpoint(out)
    if ckpt is None:
        raise RunError(f"{out} has no model yet (no model/ and no checkpoint); train it first")
    return ckpt, False


def load_model(folder, device: str = "cpu"):
    """``synthformer.model.load(folder)``; when ``folder`` is a run's checkpoint that a concurrent
    writer rotated away while it was read, the run's new latest checkpoint instead."""
    from ..model import load

    folder = Path(folder)
    try:
        return load(folder, device)
    except (SynthformerError, OSError):
        run = folder.parent.parent
        if folder.parent.name != CKPT_DIR or getattr(latest_checkpoint(run), "name", folder.name) == folder.name:
            raise  # not a rotation: the folder itself is damaged
    return read_latest(run, lambda f: load(f, device))[1]


# ----------------------------------------------------------------------------- opening for training
def check_out(out, option: str = "--out") -> list[Path]:
    """The folders that writing to ``out`` would create (deepest first), after checking that the nearest
    existing one is a writable folder: one RunError naming the path otherwise."""
    out = Path(out)
    created = [p for p in (out, *out.parents) if not p.exists()]
    where = created[-1].parent if created else out
    if not where.is_dir():
        raise RunError(f"{option} {out}: {where} is a file, not a folder; choose another {option}")
    try:  # what the OS says, for root and read-only mounts too: make (and remove) a folder there
        os.rmdir(tempfile.mkdtemp(prefix=f".probe.tmp-{os.getpid()}-", dir=where))
    except OSError as e:
        raise RunError(f"{option} {out}: cannot write in {where} ({e.strerror or type(e).__name__}); choose a "
                       f"writable {option}") from None
    return created


def make_out_folder(out, option: str = "--out") -> list[Path]:
    """Create the output folder ``out`` (and its parents) after `check_out`; the folders it created."""
    created = check_out(out, option)
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"{option} {out}: cannot write there ({e.strerror or type(e).__name__}); choose a "
                       f"writable {option}") from None
    return created


@contextlib.contextmanager
def open_run(out: Path, d: Dist):
    """Rank 0 holds the run folder's lock for the whole run (one writer per folder) and clears the
    temporary files of killed runs; a start that fails before writing anything removes the folders
    it created, so it leaves nothing behind."""
    if not d.main:
        yield
        return
    created = make_out_folder(out)
    ok = False
    try:
        with RunLock(out):
            for folder in (out, out / CKPT_DIR, out / "model"):
                remove_stale_temps(folder, mine_too=True)  # the lock is ours: no live writer here
            Path(out / (TOKENIZER + ".tmp")).unlink(missing_ok=True)  # Tokenizer.save's temporary name
            yield
            ok = True
    finally:
        if not ok:
            remove_created(created)


def remove_created(created: list[Path]) -> None:
    """Remove the folders an aborted write created (deepest first), stopping at the first that is not empty."""
    for folder in created:
        try:
            folder.rmdir()
        except OSError:
            break


def check_folder(out: Path, cfg, d: Dist, resume_free: tuple[str, ...]) -> dict | None:
    """The stored config when resuming (checked against `cfg`, a TrainConfig, where it may not change:
    every field but `resume_free`; and against the world size); None for a new run."""
    if not cfg.resume:
        if (out / RUN_CONFIG).exists():
            raise RunError(f"{out} already holds a run; pass resume=true (--resume) to continue it, "
                           "or choose another out")
        return None
    if not (out / RUN_CONFIG).exists():
        raise RunError(f"nothing to resume: {out / RUN_CONFIG} not found; start the run without --resume")
    if (out / DONE).exists():
        raise RunError(f"run {out} is already complete (done.json); choose another --out")
    return _stored_alike(out, cfg, d, resume_free, f"cannot resume {out} with a different config")


def check_source(source: Path, cfg, d: Dist, free: tuple[str, ...]) -> dict:
    """The stored config of run `source`, which a new run continues from its latest checkpoint (`train`'s
    `continue_from`): it must hold a checkpoint and have been trained with `cfg` on every field but `free`
    (what a run evaluates, and its cadences), by as many processes."""
    if latest_checkpoint(source) is None:
        raise RunError(f"continue_from={source}: no checkpoint to continue from (give a run folder that has "
                       "checkpoints/)")
    return _stored_alike(source, cfg, d, free, f"cannot continue {source} with a different config")


def _stored_alike(out: Path, cfg, d: Dist, free: tuple[str, ...], refused: str) -> dict:
    """The verified config.json of run `out`, refused (`refused`: the start of the message) unless it holds
    `cfg` on every field but `free` and was trained by `d`'s world size."""
    stored = read_run_config(out)
    verify_run(out)
    fixed = {k: v for k, v in stored["train"].items() if k not in free}
    mine = {k: v for k, v in cfg.to_dict().items() if k not in free}
    changed = {k: (fixed.get(k), v) for k, v in mine.items() if fixed.get(k) != v}
    if changed:
        raise RunError(f"{refused} (stored, given): {changed}; only {', '.join(free)} may change")
    world = stored.get("world_size", 1)
    if world != d.world_size:
        raise RunError(f"{out} was trained by {world} process(es); resume it with the same world size "
                       f"(torchrun --nproc_per_node {world}), not {d.world_size}")
    return stored


def write_start(out: Path, cfg, model_cfg, tokenizer, world_size: int) -> None:
    """The tokenizer, the manifest, then config.json (which marks a run; `cfg` a TrainConfig, `model_cfg` a
    ModelConfig): called only once everything was built, so a start that fails earlier writes nothing. One
    atomic step: config.json is written at a temporary name, listed in the manifest, and renamed into place
    last, so a start killed at any moment leaves no run (the same command starts it again) or a whole one."""
    tokenizer.save(out)
    fsync_file(out / TOKENIZER)
    tmp = tmp_name(out / RUN_CONFIG)
    atomic_write_json(tmp, {
        "model": model_cfg.to_dict(), "train": cfg.to_dict(), "world_size": world_size,
        "torch": torch.__version__, "command": sys.argv, "created": time.strftime("%Y-%m-%d %H:%M:%S")})
    write_manifest(out, skip=UNFINISHED, extra={RUN_CONFIG: tmp})  # config.json and the tokenizer's files
    os.replace(tmp, out / RUN_CONFIG)  # the marker: from here on the folder holds a run
    fsync_dir(out)


STARTED = (RUN_CONFIG, TOKENIZER, META_FILENAME, MANIFEST, METRICS)  # what a new run writes before a checkpoint


def remove_unstarted(out: Path) -> None:
    """Remove what a new run wrote (STARTED, temporary files, an empty checkpoints/) when it failed before its
    first checkpoint: nothing there could be continued, and the same command then starts it afresh."""
    out = Path(out)
    ckpts = out / CKPT_DIR
    if (out / DONE).exists() or (ckpts / LATEST).exists() or any(ckpts.glob("step-*")):
        return  # a checkpoint was written: the run can be resumed
    for folder in (out, ckpts):
        remove_stale_temps(folder, mine_too=True)
    for name in STARTED:
        (out / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        ckpts.rmdir()


class MetricsLogger:
    """metrics.jsonl (+ the trackers of ``report_to``: synthformer.training.trackers) on rank 0; nothing on other ranks."""

    def __init__(self, out: Path, enabled: bool, report_to: str, resume_step: int | None):
        self.file = out / METRICS
        self.enabled, self.reporters = enabled, []
        if not enabled:
            return
        if resume_step is not None:  # drop rows written after the checkpoint
            trim_metrics(out, resume_step)
        stored = read_run_config(out)  # written once at the start: its hash names the run across resumes
        run_id = hashlib.sha256((out / RUN_CONFIG).read_bytes()).hexdigest()[:16]
        self.reporters = open_reporters(report_to, out, {"train": stored["train"], "model": stored["model"]}, run_id)

    def write(self, row: dict) -> None:
        if not self.enabled:
            return
        with open(self.file, "a") as f:
            f.write(json.dumps(row) + "\n")
        for reporter in self.reporters:
            reporter.log(row)

    def close(self) -> None:
        for reporter in self.reporters:
            reporter.close()

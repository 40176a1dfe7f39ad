"""Reading a run folder back: config.json, tokenizer.json, metrics.jsonl and the model to use.

Every reader turns a damaged or hand-edited file into one ``RunError`` naming the file and the fix,
for train (resume), eval, generate and compare alike.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

from .checkpoint import RunError, latest_checkpoint
from .data import load_tokenizer
from .errors import SynthformerError
from .integrity import atomic_write_text

RUN_CONFIG, TOKENIZER, METRICS, DONE = "config.json", "tokenizer.json", "metrics.jsonl", "done.json"


def read_run_config(out) -> dict:
    """``out/config.json``: ``{"model": {...}, "train": {...}, "world_size": N, ...}``, checked."""
    file = Path(out) / RUN_CONFIG
    if not file.is_file():
        raise RunError(f"{file}: not found; {out} is not a run folder (give the out of a train run)")
    try:
        stored = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{file}: not valid JSON ({e}); restore it from a backup or start a new run") from None
    if not (isinstance(stored, dict) and isinstance(stored.get("model"), dict)
            and isinstance(stored.get("train"), dict) and isinstance(stored.get("world_size", 1), int)):
        raise RunError(f"{file}: not a run config (needs \"model\" and \"train\" objects); restore it or "
                       "start a new run")
    return stored


def load_run_tokenizer(out):
    """The tokenizer a run trained with (``out/tokenizer.json``), or one RunError naming the file."""
    file = Path(out) / TOKENIZER
    if not file.is_file():
        raise RunError(f"{file}: not found; the run folder is incomplete")
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
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise RunError(f"{file}: line {i} is not JSON ({e}); fix or delete that line") from None
        if not (isinstance(row, dict) and isinstance(row.get("step"), int) and isinstance(row.get("split"), str)):
            raise RunError(f"{file}: line {i} is not a metrics row (needs integer \"step\" and \"split\"); "
                           "fix or delete that line")
        rows.append(row)
    return rows


def trim_metrics(out, step: int) -> None:
    """Keep the rows up to ``step`` (those after the checkpoint resumed from are written again)."""
    file = Path(out) / METRICS
    if file.exists():
        atomic_write_text(file, "".join(json.dumps(r) + "\n" for r in read_metrics(out) if r["step"] <= step))


def run_model_folder(out) -> tuple[Path, bool]:
    """(folder of the model to use, finished): the final ``model/``, else the latest checkpoint."""
    out = Path(out)
    if (out / "model" / "model.safetensors").is_file():
        return out / "model", True
    ckpt = latest_checkpoint(out)
    if ckpt is None:
        raise RunError(f"{out} has no model yet (no model/ and no checkpoint); train it first")
    return ckpt, False

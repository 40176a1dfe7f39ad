"""Cells: the finished runs of a comparison kept as small JSON files, so that a grid can be finished
over several runs on different machines.

A cell is one run of a `synthformer.evidence.compare` folder (a variant's seed, or a tuning candidate). When it
finishes, ``OUT/cells/<the run's path under OUT>.json`` gets its result (done.json: metrics, configs,
speed) and its curve (the rows of metrics.jsonl), a few KB to a few tens of KB, beside the run folder
itself (weights, checkpoints: hundreds of KB to MB, never committed). A later comparison in the same
folder whose run folder is absent (a fresh clone holding only the committed cells, settings.json and
floor.json) takes the cell instead of training it again, after the same check of its training config
as a finished run folder (`compare.check_cell`). So `synthformer reproduce NAME --out DIR` on a folder
holding some cells trains only the missing ones.

What a cell cannot give is the trained model: steps after a grid that open the weights (the figures'
attention maps) need the run folders on the machine that finishes the grid. So what a report needs is
measured by the runs themselves and kept in their cells where it can be: table3's ROUGE-1/2 of the decoded
test split, table4's masked-token accuracy, the figures' variance of each seed's attention weights (kept
once measured on the weights). The fine-tuning suite (table5) keeps cells of its own runs too,
so only a seed whose fine-tuning has not finished needs its encoder's weights (`synthformer.evidence.suite`).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import SynthformerError
from ..utils.integrity import atomic_write_json

CELLS = "cells"  # OUT/cells/<run path under OUT>.json


class CellError(SynthformerError):
    """A damaged cell file."""


def cell_file(out: Path, run: Path) -> Path:
    """Where the cell of run folder ``run`` (inside comparison folder ``out``) is kept."""
    rel = Path(run).resolve().relative_to(Path(out).resolve())
    return Path(out) / CELLS / f"{rel.as_posix()}.json"


def save_cell(out: Path, run: Path, result: dict, metrics: list[dict] | None = None) -> Path:
    """Keep the finished run ``run``'s result and curve as its cell (atomically; rewritten each time). The
    curve: ``metrics`` when given (a run taken from another folder), else the run folder's, else the one its
    cell already holds (a run taken from its cell keeps its curve)."""
    file = cell_file(out, run)
    if metrics is None:
        metrics = curve(out, run)
    file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(file, {"result": result, "metrics": metrics})
    return file


def load_cell(out: Path, run: Path) -> dict | None:
    """The cell of ``run`` ({"result", "metrics"}), or None when there is none; one CellError when damaged."""
    file = cell_file(out, run)
    if not file.is_file():
        return None
    try:
        cell = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CellError(f"{file}: unreadable ({type(e).__name__}); delete it to train that run again") from None
    if not (isinstance(cell, dict) and isinstance(cell.get("result"), dict) and isinstance(cell.get("metrics"), list)):
        raise CellError(f"{file}: not a cell (a JSON object with result and metrics); delete it to train that run "
                        "again")
    return cell


def curve(out: Path, run: Path) -> list[dict]:
    """The metrics rows of run ``run``: from its folder when present, else from its cell."""
    from ..training.runs import read_metrics

    if (Path(run) / "metrics.jsonl").exists():
        return read_metrics(run)
    cell = load_cell(out, run)
    return cell["metrics"] if cell else []


def cells_wall_s(out: Path) -> float:
    """Seconds the runs kept as cells in ``out`` took (each run's last invocation; damaged cells skipped):
    what a grid finished over several calls cost, where the last call only reused them."""
    total = 0.0
    for file in (Path(out) / CELLS).rglob("*.json"):
        try:
            total += float(json.loads(file.read_text())["result"].get("wall_s_this_invocation") or 0.0)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return total

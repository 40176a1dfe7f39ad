"""Cells: the finished runs of a comparison kept as small JSON files, so that a grid can be finished
over several runs on different machines.

A cell is one run of a `synthformer.evidence.compare` folder (a variant's seed, or a tuning candidate). When it
finishes, ``OUT/cells/<the run's path under OUT>.json`` gets its result (done.json: metrics, configs,
speed) and its curve (the rows of metrics.jsonl), a few KB to a few tens of KB, beside the run folder
itself (weights, checkpoints: hundreds of KB to MB, never committed). A later comparison in the same
folder whose run folder is absent (a fresh clone holding only the committed cells, settings.json and
floor.json) takes the cell instead of training it again, after the same check of its training config
as a finished run folder (`grid.check_cell`). So `synthformer reproduce NAME --out DIR` on a folder
holding some cells trains only the missing ones.

What a cell cannot give is the trained model: steps after a grid that open the weights (the figures'
attention maps) need the run folders on the machine that finishes the grid. So what a report needs is
measured by the runs themselves and kept in their cells where it can be: table3's ROUGE-1/2 of the decoded
test split, table4's masked-token accuracy, the figures' variance of each seed's attention weights (kept
once measured on the weights). The fine-tuning suite (table5) keeps cells of its own runs too,
so only a seed whose fine-tuning has not finished needs its encoder's weights (`synthformer.evidence.suite`).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import SynthformerError
from ..utils.integrity import RecordError, read_recorded_json, write_recorded_json
from ..utils.stats import is_number

CELLS = "cells"  # OUT/cells/<run path under OUT>.json


class CellError(SynthformerError):
    """A damaged cell file."""


# what a cell's result must hold to make a row (`compare._seed_row`, the suite): {key: what it is}
RESULT_KEYS = {"params": "a number", "valid": "an object of metrics", "tokens_per_s": "a number",
               "train_time_s": "a number", "tokens": "a number", "model": "an object", "train": "an object"}


def check_result(result, file: Path, fix: str, error=CellError) -> dict:
    """``result`` (a run's done.json as kept in a cell) with every key of `RESULT_KEYS` of its kind and every
    scalar metric of its evaluations a number (or null); else one ``error`` naming ``file`` and the key."""
    if not isinstance(result, dict):
        raise error(f"{file}: its result is not a JSON object; {fix}")
    for key, what in RESULT_KEYS.items():
        value = result.get(key)
        ok = isinstance(value, dict) if what.startswith("an object") else is_number(value)
        if not ok:
            raise error(f"{file}: result {key} is {'missing' if key not in result else repr(value)[:40]}, not "
                        f"{what}; {fix}")
    for split in ("valid", "test"):
        metrics = result.get(split)
        if metrics is None and split == "test":
            continue
        if not isinstance(metrics, dict):
            raise error(f"{file}: result {split} is not an object of metrics; {fix}")
        for k, v in metrics.items():
            if not isinstance(v, (dict, list)) and v is not None and not is_number(v):
                raise error(f"{file}: result {split} {k} is {v!r:.40}, not a number; {fix}")
    return result


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
    # one line: a cell's per-item records (thousands of numbers) pretty-printed one per line took 5x the bytes
    write_recorded_json(out, file, {"result": result, "metrics": metrics}, indent=None)  # digest: out/digests.json
    return file


def load_cell(out: Path, run: Path, adopt: bool = True) -> dict | None:
    """The cell of ``run`` ({"result", "metrics"}), or None when there is none; verified against ``out``'s
    digests.json (`synthformer.utils.integrity.read_recorded`; ``adopt``: this process may record it there under
    --trust-unverified) and checked to be a cell (`check_result`): one SynthformerError naming it otherwise."""
    file = cell_file(out, run)
    if not file.is_file():
        return None
    fix = "delete it to train that run again"
    cell = read_recorded_json(out, file, fix, adopt=adopt)
    if not (isinstance(cell.get("result"), dict) and isinstance(cell.get("metrics"), list)
            and all(isinstance(m, dict) for m in cell["metrics"])):
        raise CellError(f"{file}: not a cell (a JSON object with result and metrics); {fix}")
    check_result(cell["result"], file, fix)
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
            cell = read_recorded_json(out, file, "", adopt=False)
            total += float(cell["result"].get("wall_s_this_invocation") or 0.0)
        except (RecordError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return total

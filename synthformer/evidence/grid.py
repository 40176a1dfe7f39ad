"""The grid engine: one mechanism that decides, for every cell of an experiment, train or reuse.

A grid is a folder of cells. A cell is one training run (a variant's seed, a sweep candidate, a pretraining
or a fine-tuning stage) described by a `Cell`: its TrainConfig (``cfg.out`` is its run folder), its model
overrides and where its data comes from. `Grid.run_all` returns the results of a list of cells, each the first of:

1. the run folder's ``done.json`` (verified against the run manifest), when the run finished here;
2. its cell (``cells/<run>.json``, `synthformer.evidence.cells`), when the run folder is absent and the
   model's weights are not needed afterwards (`Cell.needs_weights`);
3. the same run in another folder of the same settings (`Cell.theirs`: a reproduction that shares a
   grid's sweep, or table5's pretraining taken from table4's grid), when it finished there;
4. nothing, in an interim report (`Grid.interim`): the cell is None and its variant waits;
5. training, by the grid's executor: a new run, a resumed one (its ``config.json`` is there) or one
   continuing another run.

Every finished run is checked against what the grid asks of it (`check_cell`: the training config but its
cadence, and the model) before it is used, and kept as its cell. `compare`, the fine-tuning suite and every
`reproduce` name run their cells through this engine; how cells are executed is an `Executor`'s job
(`InProcess`, one after another in this process, or `synthformer.evidence.executors`: worker processes, Ray),
so the experiments do not change with the executor. The folder's own settings (``settings.json``) are checked here too (`check_settings`).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

from ..errors import SynthformerError
from ..training.lock import LOCK_FILE
from ..utils.integrity import read_recorded_json, write_recorded
from .cells import cell_file, curve, load_cell, save_cell

SETTINGS = "settings.json"  # what a folder's results were (or are being) computed with
INTERIM = "interim.json"  # an interim report's results (findings of the finished variants), beside interim.md


class GridError(SynthformerError):
    """A grid folder or one of its cells that cannot be used as asked (other settings, another model)."""


@dataclass(frozen=True)
class Cell:
    """One run of a grid: what to train, and what may stand in for training it."""
    cfg: object  # the run's TrainConfig; cfg.out is its run folder
    model: dict  # ModelConfig overrides the run is trained with
    label: str  # how the logs name it, e.g. "[3/9] R+V seed 1"
    data: Callable | None = None  # () -> TaskData, asked for only when a new run starts (None: the run's own)
    needs_weights: bool = False  # the model files are opened afterwards: a kept cell cannot stand in for the run
    theirs: Path | None = None  # the same run in another folder of the same settings (taken when finished there)
    their_grid: Path | None = None  # that folder, whose cells stand in for its absent run folders
    keep_theirs: bool = True  # a run taken from `theirs` is kept as this grid's cell (else its folder is used)
    continue_from: Path | None = None  # a finished run whose training this one repeats: continue it instead
    expect: dict | None = None  # the model a finished run must have been trained with (default: `model`)

    @property
    def run(self) -> Path:
        return Path(self.cfg.out)

    @property
    def expected_model(self) -> dict:
        return self.model if self.expect is None else self.expect


class Executor(Protocol):
    """How a grid's cells are trained (`synthformer.evidence.executors`): `train` calls ``done(k, result, curve)``
    as the k-th cell finishes (the curve None where the run folder is here to read it from), so that the driver
    keeps each cell at once. A cell that fails for a reason of its own is one `GridError` naming it, raised once
    the other cells have finished."""

    def train(self, grid: "Grid", cells: Sequence[Cell], done: Callable[[int, dict, list | None], None]) -> None: ...


class Grid:
    """The cells of one folder `out`. `interim`: train and write nothing (a cell not finished is
    None from `run_all`). `executor`: how `run_all` trains cells (default in this process,
    one after another: `InProcess`)."""

    def __init__(self, out: Path, log=print, interim: bool = False, executor: Executor | None = None):
        self.out, self.log, self.interim = Path(out), log, interim
        self.executor = executor or InProcess()

    def run_all(self, cells: Sequence[Cell]) -> list[tuple[Path, dict] | None]:
        """(run folder, result) of every cell: the finished ones reused, the others trained together by the
        executor (None for each of those in an interim report)."""
        out = [self.lookup(cell) for cell in cells]
        todo = [i for i, found in enumerate(out) if found is None]
        if self.interim or not todo:
            return out

        def done(k: int, result: dict, rows: list | None) -> None:  # kept as soon as it finishes
            i = todo[k]
            save_cell(self.out, cells[i].run, result, rows)
            out[i] = (cells[i].run, result)

        self.executor.train(self, [cells[i] for i in todo], done)
        return out

    def lookup(self, cell: Cell) -> tuple[Path, dict] | None:
        """(run folder, result) of a finished cell, checked against the grid: its done.json, else its cell, else
        the same run finished in another folder; None when it has to be trained."""
        from ..training.runs import read_done

        run = cell.run
        if (run / "done.json").exists():
            result = read_done(run)  # verified against the run manifest; one line when damaged
            check_cell(run, result, cell.cfg, cell.expected_model)
            self.log(f"{cell.label}: finished earlier, reusing {run}")
            if not self.interim:
                save_cell(self.out, run, result)
            return run, result
        if not run.exists() and not cell.needs_weights and (kept := load_cell(self.out, run)) is not None:
            result = kept["result"]
            check_cell(cell_file(self.out, run), result, _as_kept(cell.cfg, result), cell.expected_model)
            self.log(f"{cell.label}: finished earlier, reusing its cell {cell_file(self.out, run)}")
            return run, result
        if cell.theirs is not None and (result := reused(
                cell.theirs, None if cell.needs_weights else cell.their_grid, cell.cfg, cell.expected_model)) is not None:
            self.log(f"{cell.label}: finished in {cell.theirs}, reusing it")
            if not cell.keep_theirs:
                return cell.theirs, result
            if not self.interim:
                save_cell(self.out, run, result, curve(cell.their_grid or cell.theirs.parent, cell.theirs))
            return run, result
        return None

    def train_here(self, cell: Cell) -> dict:
        """Train one cell in this process: a new run, a resumed one (its config.json is there), or one continuing
        the run it repeats."""
        from ..training.loop import train

        resume = (cell.run / "config.json").exists()
        source = None if resume else cell.continue_from  # resuming: the run's own checkpoint, the grid's data
        if source is not None:
            self.log(f"{cell.label}: the same training as the sweep's winner {source}: continuing it (this seed's "
                     "own evaluation only)")
        data = None if cell.data is None else cell.data()  # a resumed run too: the grid's subset, not its seed's
        return train(dataclasses.replace(cell.cfg, resume=resume), cell.model, data=data, label=cell.label,
                     log=self.log, continue_from=source)


class InProcess:
    """The cells one after another in this process (``--jobs 1``, the default executor)."""

    def train(self, grid: Grid, cells: Sequence[Cell], done) -> None:
        for k, cell in enumerate(cells):
            done(k, grid.train_here(cell), None)


def _as_kept(cfg, result: dict):
    """A fine-tuning run may have started from another folder's copy of its encoder (init_from): a kept cell is
    checked with the init_from it ran with; the encoder's pretraining is checked as a cell of its own."""
    if getattr(cfg, "init_from", None):
        return dataclasses.replace(cfg, init_from=(result.get("train") or {}).get("init_from"))
    return cfg


def reused(theirs: Path, cells: Path | None, cfg, model_overrides: dict) -> dict | None:
    """The result of run `theirs`, the counterpart of ``cfg.out`` in another folder of the same settings, when
    it finished there: its done.json, or (given `cells`, that folder) its cell; None when it has not. Checked
    to have been trained with `cfg` and with `model_overrides`' model: one error naming what differs."""
    from ..training.runs import read_done

    if (theirs / "done.json").exists():
        result = read_done(theirs)
    elif cells is not None and (kept := load_cell(cells, theirs, adopt=False)) is not None:
        result = kept["result"]
        cfg = _as_kept(cfg, result)
    else:
        return None
    check_cell(theirs, result, cfg, model_overrides)
    return result


def check_cell(run: Path, result: dict, cfg, model_overrides: dict) -> None:
    """A finished run (its folder ``run``, or its cell file) is reused only when it was trained with the
    config the grid asks of it (its checkpoint cadence aside, `RESULT_FREE`) and its model has every value of
    `model_overrides` (the attention spec among them): one error naming what differs."""
    from ..training.loop import RESULT_FREE

    theirs = {k: v for k, v in (result.get("train") or {}).items() if k not in RESULT_FREE}
    mine = json.loads(json.dumps({k: v for k, v in cfg.to_dict().items() if k not in RESULT_FREE}))
    diff = [f"{k} {theirs.get(k)} (now {mine.get(k)})" for k in sorted(theirs.keys() | mine.keys())
            if theirs.get(k) != mine.get(k)]
    model = result.get("model") or {}
    wanted = json.loads(json.dumps(model_overrides))
    diff += [f"{k} {model.get(k)} (now {v})" for k, v in wanted.items() if model.get(k) != v]
    if diff:
        raise GridError(f"{run} was trained with other settings: {', '.join(diff)}; choose another --out "
                        f"(or delete {run} to train it again)")


# ----------------------------------------------------------------------------- the settings of a folder
def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) and v else {f"{prefix}{k}": v})
    return out


def check_settings(folder: Path, settings: dict, error=GridError, record: bool = True) -> bool:
    """Record the settings `folder`'s results are made with, or check them against those recorded;
    True when the folder holds finished results (results.json) made with these settings.

    Refused (`error`, one line): a folder run with other settings (naming the keys that differ), and
    results or runs without a settings file -- reusing either would report numbers of another
    configuration under this one's name. A setting the stored file lacks counts as None: a config field
    added since, with a None default, still matches folders recorded before it (as `check_cell` does
    for runs). `compare` and `reproduce` share this check. With `record`
    false a new folder's settings are left to `record_settings` (once its inputs proved good)."""
    settings = json.loads(json.dumps(settings))  # as stored: tuples -> lists
    file, done = folder / SETTINGS, folder / "results.json"
    if file.exists():
        stored = read_recorded_json(folder, file, f"restore it, choose another --out or delete {folder} to start "
                                    "over")  # verified against folder/digests.json; a JSON object
        theirs, mine = _flat(stored), _flat(settings)
        diff = ", ".join(f"{k} {theirs.get(k)} (now {mine.get(k)})" for k in sorted(theirs.keys() | mine.keys())
                         if theirs.get(k) != mine.get(k))
        if diff:
            raise error(f"{folder} was run with other settings: {diff}; rerun with those settings or choose another "
                        f"--out (or delete {folder} to start over)")
        return done.exists()
    if done.exists():
        raise error(f"{folder} holds results without the {SETTINGS} they were made with; choose another --out "
                    f"(or delete {folder} to start over)")
    if folder.is_dir() and any(p.name != LOCK_FILE for p in folder.iterdir()):
        raise error(f"{folder} is not empty and holds no {SETTINGS} (runs of unknown settings); choose another --out")
    if record:
        record_settings(folder, settings)
    return False


def record_settings(folder: Path, settings: dict) -> None:
    """Write ``folder/settings.json`` (see `check_settings`)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_recorded(folder, folder / SETTINGS, json.dumps(settings, indent=1))  # its digest: folder/digests.json


def seed_list(seed: int, seeds: int, error=GridError) -> list[int]:
    """The seeds of a grid: seed, seed+1, ..., seeds of them."""
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise error(f"--seeds={seeds} must be an integer >= 1 (the number of seeds per variant)")
    return [seed + k for k in range(seeds)]


def run_folder(out: Path, name: str, seed: int, seeds: int) -> Path:
    """out/<variant> with one seed (as before seeds existed); out/<variant>-seed<S> with several."""
    return out / name if seeds == 1 else out / f"{name}-seed{seed}"

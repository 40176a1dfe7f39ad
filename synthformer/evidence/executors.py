"""Executors: how the grid engine trains the cells it could not reuse (`synthformer.evidence.grid`).

- `InProcess` (``--jobs 1``, the default): one cell after another in this process.
- `LocalJobs` (``--jobs N``): N cells at once, each in a worker process of its own (``spawn``), with the
  threads its TrainConfig asks (``--threads``, 1 in a comparison by default).
- `RayExecutor` (``--executor ray [--address auto|HOST:PORT]``): each cell a Ray task with ``num_cpus`` = its
  threads (and ``num_gpus`` = ``--gpus-per-cell``, a fraction, so that several small cells share a GPU);
  without an address it starts a local Ray instance, with one it joins that cluster. Ray is an optional extra
  (``pip install 'synthformer[ray]'``); nothing else imports it.

Every worker trains its cell with `synthformer.training.loop.train` into the cell's run folder and returns
(result, curve) to the driver, which alone writes the grid folder (the cells, ``cells/<run>.json``); so a
cluster without a shared file system still finishes the grid from the cells. A cell's log goes to
``logs/<run>.log`` in the grid folder (on the worker's disk). A worker killed mid-cell (SIGKILL, a lost
node) is tried again, up to ``retries`` times: a run that started resumes from its last checkpoint. A cell
that fails for a reason of its own (bad settings, out of memory) fails the grid with that cell's one-line
error once the other cells have finished; the finished cells stay, and the same command continues.
"""
from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from .._optional import require
from ..errors import ConfigError, SynthformerError
from .grid import Cell, Grid, GridError, InProcess

EXECUTORS = ("local", "ray")
RETRIES = 2  # a cell whose worker died is tried this many more times
LOGS = "logs"  # OUT/logs/<run path under OUT>.log


@dataclass(frozen=True)
class Job:
    """What a worker needs to train one cell (picklable: the data is encoded once, by the driver)."""
    cfg: object  # TrainConfig; cfg.out is the run folder
    model: dict
    label: str
    data: object  # TaskData, or None: the run's own (a resumed run reads it back)
    continue_from: Path | None
    log_file: Path


def run_job(job: Job) -> tuple[dict, list]:
    """Train one cell in a worker, logging to its file: a run that started (its config.json is there) resumes
    from its last checkpoint, so a retried cell does not start over. Returns (result, curve)."""
    from ..training.loop import train
    from ..training.runs import read_metrics

    resume = (Path(job.cfg.out) / "config.json").exists()
    job.log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(job.log_file, "a", encoding="utf-8") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        def log(msg):
            print(msg, flush=True)
        result = train(dataclasses.replace(job.cfg, resume=resume), job.model, data=None if resume else job.data,
                       label=job.label, log=log, continue_from=None if resume else job.continue_from)
    return result, read_metrics(job.cfg.out)


def _outcome(job: Job) -> tuple[str, object]:
    """("ok", (result, curve)) or ("error", one line naming the cell): what a worker sends back."""
    try:
        return "ok", run_job(job)
    except SynthformerError as e:
        return "error", f"{job.label}: {str(e).splitlines()[0]}"
    except MemoryError:
        return "error", f"{job.label}: out of memory; give the cell fewer threads, a smaller batch or --jobs 1"
    except Exception as e:  # a bug: its traceback goes to the cell's log, the grid fails with one line
        import traceback

        with open(job.log_file, "a", encoding="utf-8") as f:
            traceback.print_exc(file=f)
        return "error", f"{job.label}: {type(e).__name__}: {e} (traceback in {job.log_file})"


def _work(job: Job, conn) -> None:  # a LocalJobs worker process
    conn.send(_outcome(job))
    conn.close()


def jobs_of(grid: Grid, cells) -> list[Job]:
    """The cells as jobs: each new run's data encoded once here (a resumed run reads its own)."""
    out = []
    for cell in cells:
        resume = (cell.run / "config.json").exists()
        rel = cell.run.resolve().relative_to(grid.out.resolve()) if cell.run.resolve().is_relative_to(
            grid.out.resolve()) else Path(cell.run.name)
        out.append(Job(cell.cfg, cell.model, cell.label, None if resume or cell.data is None else cell.data(),
                       None if resume else cell.continue_from, grid.out / LOGS / f"{rel.as_posix()}.log"))
    return out


class Progress:
    """One bar for the cells a grid trains: done / total, running, failed, ETA; each cell's own progress is in
    its log file."""

    def __init__(self, total: int, log):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="grid", unit="cell", file=sys.stderr, dynamic_ncols=True)
        self.log, self.running, self.failed = log, 0, 0

    def update(self, done: int = 0, running: int | None = None, failed: int = 0, line: str | None = None):
        self.running = self.running if running is None else running
        self.failed += failed
        self.bar.set_postfix(running=self.running, failed=self.failed, refresh=False)
        self.bar.update(done)
        if line:
            self.bar.write(line)

    def close(self):
        self.bar.close()


def _raise_failures(errors: dict[int, str]) -> None:
    if errors:
        lines = [errors[i] for i in sorted(errors)]
        more = f" (and {len(lines) - 1} more failed cells: see logs/)" if len(lines) > 1 else ""
        raise GridError(lines[0] + more)


class LocalJobs:
    """`jobs` cells at once, each in a worker process of its own."""

    def __init__(self, jobs: int, retries: int = RETRIES):
        self.jobs, self.retries = jobs, retries

    def train(self, grid: Grid, cells) -> list[tuple[dict, list | None]]:
        jobs = jobs_of(grid, cells)
        ctx = multiprocessing.get_context("spawn")  # no fork of a process that holds torch's threads
        results: list = [None] * len(jobs)
        tries, errors, queue, running = [0] * len(jobs), {}, deque(range(len(jobs))), {}
        bar = Progress(len(jobs), grid.log)
        try:
            while queue or running:
                while queue and len(running) < self.jobs:
                    i = queue.popleft()
                    tries[i] += 1
                    recv, send = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_work, args=(jobs[i], send), daemon=True)
                    proc.start()
                    send.close()
                    running[i] = (proc, recv)
                    bar.update(running=len(running), line=f"{jobs[i].label}: training (log: {jobs[i].log_file})")
                multiprocessing.connection.wait([r for _, r in running.values()], timeout=1.0)
                for i, (proc, recv) in list(running.items()):
                    outcome = self._collect(proc, recv)
                    if outcome is False:
                        continue  # still running
                    del running[i]
                    bar.update(running=len(running))
                    if outcome is None and tries[i] <= self.retries:  # died without a word: killed
                        queue.append(i)
                        bar.update(line=f"{jobs[i].label}: worker died (exit {proc.exitcode}); trying again "
                                        f"({tries[i]}/{self.retries + 1})")
                    elif outcome is None:
                        errors[i] = f"{jobs[i].label}: its worker died {tries[i]} times (exit {proc.exitcode})"
                        bar.update(failed=1, line=errors[i])
                    elif outcome[0] == "ok":
                        results[i] = outcome[1]
                        bar.update(done=1, line=f"{jobs[i].label}: done")
                    else:
                        errors[i] = outcome[1]
                        bar.update(failed=1, line=errors[i])
        finally:
            for proc, _ in running.values():  # the driver interrupted: no orphan keeps training
                proc.kill()
            bar.close()
        _raise_failures(errors)
        return results

    @staticmethod
    def _collect(proc, recv):
        """The worker's outcome; False while it runs; None when it ended without one (killed)."""
        try:
            if recv.poll():
                outcome = recv.recv()
                proc.join()
                return outcome
        except (EOFError, OSError):
            pass
        if proc.is_alive():
            return False
        proc.join()
        return None


def _ray_job(job: Job):  # a Ray task: errors of the cell come back as values, so Ray retries only lost workers
    return _outcome(job)


class RayExecutor:
    """Each cell a Ray task: a local Ray instance (``address`` None) or an existing cluster (``auto``,
    ``HOST:PORT``)."""

    def __init__(self, address: str | None = None, gpus_per_cell: float | None = None, retries: int = RETRIES):
        self.address, self.gpus_per_cell, self.retries = address, gpus_per_cell, retries

    def train(self, grid: Grid, cells) -> list[tuple[dict, list | None]]:
        ray = require("ray", "--executor ray")
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        task = ray.remote(max_retries=self.retries, retry_exceptions=False)(_ray_job)
        jobs = jobs_of(grid, cells)
        refs = {task.options(num_cpus=max(1, job.cfg.threads or 1), num_gpus=self.gpus_per_cell or 0,
                             name=job.label).remote(job): i for i, job in enumerate(jobs)}
        results: list = [None] * len(jobs)
        errors, bar, started = {}, Progress(len(jobs), grid.log), time.time()
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1, timeout=1.0)
                bar.update(running=len(refs) - len(done))
                for ref in done:
                    i = refs.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as e:  # the worker was lost more than `retries` times
                        outcome = ("error", f"{jobs[i].label}: {type(e).__name__} after {self.retries + 1} tries")
                    if outcome[0] == "ok":
                        results[i] = outcome[1]
                        bar.update(done=1, line=f"{jobs[i].label}: done ({time.time() - started:.0f}s)")
                    else:
                        errors[i] = outcome[1]
                        bar.update(failed=1, line=errors[i])
        finally:
            for ref in refs:  # the driver interrupted: cancel what is left
                ray.cancel(ref, force=True)
            bar.close()
        _raise_failures(errors)
        return results


def make_executor(executor: str = "local", jobs: int = 1, address: str | None = None,
                  gpus_per_cell: float | None = None):
    """The executor of ``--executor``, ``--jobs``, ``--address``, ``--gpus-per-cell``, checked (one line each)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ConfigError(f"--jobs {jobs!r}: give the number of cells to train at once (an integer >= 1)")
    if gpus_per_cell is not None and not 0 < gpus_per_cell <= 1:
        raise ConfigError(f"--gpus-per-cell {gpus_per_cell!r}: give a fraction of one GPU in (0, 1]")
    if executor == "ray":
        require("ray", "--executor ray")  # the one-line error naming the extra, before any work
        return RayExecutor(address, gpus_per_cell)
    if address is not None or gpus_per_cell is not None:
        raise ConfigError("--address and --gpus-per-cell are Ray's: add --executor ray")
    return InProcess() if jobs == 1 else LocalJobs(jobs)


__all__ = ["Cell", "InProcess", "LocalJobs", "RayExecutor", "make_executor", "run_job"]

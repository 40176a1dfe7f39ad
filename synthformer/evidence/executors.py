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
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from .._optional import require
from ..errors import ConfigError, SynthformerError
from .grid import Grid, GridError, InProcess

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
        result = train(dataclasses.replace(job.cfg, resume=resume), job.model, data=job.data,
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


def _serve(conn) -> None:  # a LocalJobs worker process: cells until told to stop (torch is imported once)
    _exit_with_parent()
    while (job := conn.recv()) is not None:
        conn.send(_outcome(job))


def _exit_with_parent(period: float = 0.5) -> None:
    """End this worker, mid-cell if need be, once its driver is gone: a driver killed by a signal (SIGTERM,
    SIGKILL) runs no `LocalJobs._stop`, and an orphan would go on training and hold its run's lock against the
    driver's rerun. The run resumes from its last checkpoint; the lock of a dead pid is stale."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(period)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def jobs_of(grid: Grid, cells) -> list[Job]:
    """The cells as jobs, each with the grid's data encoded once here: a resumed run continues on the examples it
    started with (its own seed would draw another subset where --max_examples caps the data)."""
    out = []
    for cell in cells:
        resume = (cell.run / "config.json").exists()
        rel = cell.run.resolve().relative_to(grid.out.resolve()) if cell.run.resolve().is_relative_to(
            grid.out.resolve()) else Path(cell.run.name)
        out.append(Job(cell.cfg, cell.model, cell.label, None if cell.data is None else cell.data(),
                       None if resume else cell.continue_from, grid.out / LOGS / f"{rel.as_posix()}.log"))
    return out


class Progress:
    """One bar for the cells a grid trains: done / total, running, failed, ETA; each cell's own progress is in
    its log file."""

    def __init__(self, total: int, mininterval: float | None = None):
        from tqdm.auto import tqdm

        if mininterval is None:  # a log file: a line a minute, not a second
            mininterval = 0.1 if sys.stderr.isatty() else 60
        # miniters=0: every update past mininterval redraws, so running cells keep the time moving between
        # finished cells (tqdm's dynamic miniters would wait for the next finished cell: half an hour in a log);
        # smoothing=0: the rate is the cells over the whole time (tqdm's smoothed rate sees only the redraw in
        # which a cell finished, so one cell per redraw interval: "60 s/cell" where cells took 25 minutes)
        self.bar = tqdm(total=total, desc="grid", unit="cell", file=sys.stderr, dynamic_ncols=True,
                        mininterval=mininterval, miniters=0, smoothing=0)
        self.running, self.failed = 0, 0

    def update(self, done: int = 0, running: int | None = None, failed: int = 0, line: str | None = None):
        self.running = self.running if running is None else running
        self.failed += failed
        self.bar.set_postfix(running=self.running, failed=self.failed, refresh=False)
        self.bar.update(done)
        if line:
            self.bar.write(line)

    def close(self):
        self.bar.close()


def _settle(outcome: tuple, i: int, label: str, done, errors: dict, bar, after: str = "") -> None:
    """A worker's outcome for cell `i`: its result handed to `done`, or its one-line error kept."""
    if outcome[0] == "ok":
        done(i, *outcome[1])
        bar.update(done=1, line=f"{label}: done{after}")
    else:
        errors[i] = outcome[1]
        bar.update(failed=1, line=errors[i])


def _raise_failures(errors: dict[int, str]) -> None:
    if errors:
        lines = [errors[i] for i in sorted(errors)]
        more = f" (and {len(lines) - 1} more failed cells: see logs/)" if len(lines) > 1 else ""
        raise GridError(lines[0] + more)


class LocalJobs:
    """`jobs` cells at once, in as many long-lived worker processes (each imports torch once, then trains one
    cell after another); a worker that dies is replaced and its cell tried again."""

    def __init__(self, jobs: int, retries: int = RETRIES):
        self.jobs, self.retries = jobs, retries

    def train(self, grid: Grid, cells, done) -> None:
        jobs = jobs_of(grid, cells)
        ctx = multiprocessing.get_context("spawn")  # no fork of a process that holds torch's threads
        tries, errors, queue = [0] * len(jobs), {}, deque(range(len(jobs)))
        workers: list[list] = []  # [process, connection, the job it trains or None]
        bar = Progress(len(jobs))
        try:
            while queue or any(w[2] is not None for w in workers):
                for w in workers:  # give idle workers work, starting workers as needed
                    if w[2] is None and queue:
                        w[2] = self._send(w, queue.popleft(), jobs, tries, bar)
                while queue and len(workers) < min(self.jobs, len(jobs)):
                    workers.append(self._start(ctx))
                    workers[-1][2] = self._send(workers[-1], queue.popleft(), jobs, tries, bar)
                multiprocessing.connection.wait([w[1] for w in workers] + [w[0].sentinel for w in workers], 1.0)
                for w in list(workers):
                    i = w[2]
                    if i is None:
                        continue
                    outcome = self._collect(w)
                    if outcome is False:
                        continue  # still training
                    w[2] = None
                    if outcome is None:  # died without a word (killed): replaced, its cell tried again
                        workers.remove(w)
                        if tries[i] <= self.retries:
                            queue.appendleft(i)
                            bar.update(line=f"{jobs[i].label}: worker died (exit {w[0].exitcode}); trying again "
                                            f"({tries[i]}/{self.retries + 1})")
                        else:
                            errors[i] = f"{jobs[i].label}: its worker died {tries[i]} times (exit {w[0].exitcode})"
                            bar.update(failed=1, line=errors[i])
                    else:
                        _settle(outcome, i, jobs[i].label, done, errors, bar)
                bar.update(running=sum(w[2] is not None for w in workers))
        finally:
            self._stop(workers)
            bar.close()
        _raise_failures(errors)

    @staticmethod
    def _start(ctx) -> list:
        recv, send = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_serve, args=(send,), daemon=True)
        proc.start()
        send.close()
        return [proc, recv, None]

    @staticmethod
    def _send(worker: list, i: int, jobs: list, tries: list, bar) -> int:
        tries[i] += 1
        worker[1].send(jobs[i])
        bar.update(line=f"{jobs[i].label}: training (log: {jobs[i].log_file})")
        return i

    @staticmethod
    def _collect(worker: list):
        """The worker's outcome for its cell; False while it trains; None when it died without one."""
        proc, conn, _ = worker
        try:
            if conn.poll():
                return conn.recv()
        except (EOFError, OSError):
            pass
        return False if proc.is_alive() else None

    @staticmethod
    def _stop(workers: list) -> None:
        for proc, conn, busy in workers:
            if busy is None and proc.is_alive():
                with contextlib.suppress(OSError):
                    conn.send(None)
            else:  # the driver interrupted mid-cell: no orphan keeps training
                proc.kill()
        for proc, _, _ in workers:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


def _ray_job(job: Job):  # a Ray task: errors of the cell come back as values, so Ray retries only lost workers
    return _outcome(job)


class RayExecutor:
    """Each cell a Ray task: a local Ray instance (``address`` None) or an existing cluster (``auto``,
    ``HOST:PORT``)."""

    def __init__(self, address: str | None = None, gpus_per_cell: float | None = None, retries: int = RETRIES):
        self.address, self.gpus_per_cell, self.retries = address, gpus_per_cell, retries

    def train(self, grid: Grid, cells, done) -> None:
        ray = require("ray", "--executor ray")
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        task = ray.remote(max_retries=self.retries, retry_exceptions=False)(_ray_job)
        jobs = jobs_of(grid, cells)
        refs = {task.options(num_cpus=max(1, job.cfg.threads or 1), num_gpus=self.gpus_per_cell or 0,
                             name=job.label).remote(job): i for i, job in enumerate(jobs)}
        errors, bar, started = {}, Progress(len(jobs)), time.time()
        try:
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1, timeout=1.0)
                bar.update(running=len(refs) - len(ready))
                for ref in ready:
                    i = refs.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as e:  # the worker was lost more than `retries` times
                        outcome = ("error", f"{jobs[i].label}: {type(e).__name__} after {self.retries + 1} tries")
                    _settle(outcome, i, jobs[i].label, done, errors, bar, f" ({time.time() - started:.0f}s)")
        finally:
            for ref in refs:  # the driver interrupted: cancel what is left
                ray.cancel(ref, force=True)
            bar.close()
        _raise_failures(errors)


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


__all__ = ["InProcess", "LocalJobs", "RayExecutor", "make_executor", "run_job"]

"""Executors of the grid engine (synthformer.evidence.executors): worker processes (--jobs) and Ray give the
cells the in-process executor gives; a worker killed mid-cell is retried; a driver killed and rerun trains only
the missing cells; bad options are one line. Real processes and a real local Ray instance, no mocks."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import kill_cli_when, run_in_process
from test_compare import dialogue  # noqa: F401 (the tiny data file fixture)

# --max_examples draws a subset of the data with a seed: every cell trains on the grid's subset, a resumed one too
GRID = ["--variants", "V,R", "--seeds", "1", "--seq_len", "24", "--vocab_size", "300", "--batch_size", "4",
        "--eval_every", "2", "--eval_batches", "2", "--threads", "1", "--progress", "false", "--warmup_steps", "1",
        "--max_examples", "200"]
VOLATILE = ("time_s", "_per_s", "eval_s", "wall_s")  # timings: the only fields allowed to differ ...
SETTLED = ("hardware", "resume")  # ... with the machine and whether the run was resumed (not what it computed)


def compare_main(*args):
    from synthformer.cli.compare import main

    return run_in_process(main, *args)


def comparable(value, out: Path):
    """A cell with its timings left out and its folder's path made relative."""
    if isinstance(value, dict):
        return {k: comparable(v, out) for k, v in value.items() if not any(s in k for s in VOLATILE)
                and k not in SETTLED}
    if isinstance(value, list):
        return [comparable(v, out) for v in value]
    if isinstance(value, str) and value.startswith(str(out)):
        return value[len(str(out)):]
    return value


def cells(out: Path) -> dict:
    return {f.relative_to(out / "cells").as_posix(): comparable(json.loads(f.read_text()), out)
            for f in sorted((out / "cells").rglob("*.json"))}


@pytest.fixture(scope="module")
def in_process(dialogue, tmp_path_factory):  # noqa: F811
    """The grid trained by the default executor: the reference every other executor must equal."""
    out = tmp_path_factory.mktemp("grid") / "a"
    code, _, err = compare_main(*GRID, "--steps", "4", "--data", dialogue, "--out", out)
    assert code == 0, err
    return cells(out)


def test_local_jobs_give_the_cells_of_the_in_process_executor(in_process, dialogue, tmp_path):  # noqa: F811
    out = tmp_path / "a"  # the same name: the cells' paths compare as they are
    code, _, err = compare_main(*GRID, "--steps", "4", "--data", dialogue, "--out", out, "--jobs", "2")
    assert code == 0, err
    assert cells(out) == in_process and len(in_process) == 2
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["R.log", "V.log"]  # each cell's own log
    assert "step" in (out / "logs" / "R.log").read_text()


@pytest.mark.slow  # about a minute: a Ray instance starts
def test_ray_gives_the_cells_of_the_in_process_executor(in_process, dialogue, tmp_path):  # noqa: F811
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "a"
        code, _, err = compare_main(*GRID, "--steps", "4", "--data", dialogue, "--out", out, "--executor", "ray")
    finally:
        ray.shutdown()
    assert code == 0, err
    assert cells(out) == in_process


def _workers(pid: int) -> list[int]:
    """The worker processes (multiprocessing spawn children, not its resource tracker) of process `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and "spawn_main" in cmd and "resource_tracker" not in cmd:
            found.append(int(entry.name))
    return found


def _holds(pid: int, file: Path) -> bool:
    """Whether process `pid` has `file` open."""
    try:
        return any(os.readlink(fd) == str(file.resolve()) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


@pytest.mark.slow  # about a minute: two grids of 30 steps, 4 cells each, one with a worker killed
def test_a_worker_killed_mid_cell_is_retried_and_the_grid_equals_an_uninterrupted_run(dialogue, tmp_path):  # noqa: F811
    """SIGKILL of the worker training V's second seed once it has a checkpoint: the cell is tried again (resuming
    from it) and every cell equals the in-process run's. The second seed is not the seed the grid's data subset is
    drawn with (--max_examples), so a resumed run that drew its own would train and score on other examples."""
    args = [*GRID, "--seeds", "2", "--steps", "30", "--checkpoint_every", "5", "--data", str(dialogue)]
    ref = tmp_path / "ref" / "a"
    assert compare_main(*args, "--out", ref)[0] == 0
    out = tmp_path / "a"
    proc = subprocess.Popen([sys.executable, "-m", "synthformer", "compare", *args, "--out", str(out), "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline, killed, run = time.time() + 240, None, out / "V-seed1"
    while killed is None and time.time() < deadline and proc.poll() is None:
        if (run / "checkpoints" / "latest.json").exists() and not (run / "done.json").exists():
            for pid in _workers(proc.pid):
                if _holds(pid, out / "logs" / "V-seed1.log"):  # the worker training it writes its log
                    os.kill(pid, signal.SIGKILL)
                    killed = pid
                    break
        time.sleep(0.05)
    log, _ = proc.communicate(timeout=600)
    assert killed is not None, log
    assert proc.returncode == 0, log
    assert "worker died" in log and "trying again" in log
    assert cells(out) == cells(ref) and len(cells(ref)) == 4


@pytest.mark.slow  # about 20 s: two grids and a killed driver
def test_the_driver_killed_and_rerun_trains_only_the_missing_cells(dialogue, tmp_path):  # noqa: F811
    steps = ["--steps", "20", "--checkpoint_every", "5"]
    ref = tmp_path / "ref" / "a"
    assert compare_main(*GRID, *steps, "--data", dialogue, "--out", ref)[0] == 0
    out = tmp_path / "a"
    kill_cli_when(lambda: (out / "cells" / "V.json").exists(), "compare", *GRID, *steps, "--data", dialogue,
                  "--out", out, timeout=240)
    assert (out / "cells" / "V.json").exists() and not (out / "results.json").exists()
    code, stdout, err = compare_main(*GRID, *steps, "--data", dialogue, "--out", out, "--jobs", "2")
    assert code == 0, err
    said = stdout + err
    assert "V: finished earlier" in said and "R: finished earlier" not in said
    assert cells(out) == cells(ref)


def test_a_killed_drivers_workers_stop_with_it(dialogue, tmp_path):  # noqa: F811
    """SIGTERM to a `--jobs 2` driver while its workers train cells of minutes: they exit within seconds, so no
    orphan goes on training and holding its run's lock against the rerun (which resumes from the checkpoints;
    `test_the_driver_killed_and_rerun_trains_only_the_missing_cells`)."""
    out = tmp_path / "a"
    cmd = [sys.executable, "-m", "synthformer", "compare", *GRID, "--steps", "20000", "--checkpoint_every", "5",
           "--data", str(dialogue), "--out", str(out), "--jobs", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline, workers = time.time() + 240, []
    while time.time() < deadline and proc.poll() is None and not (
            (out / "V" / "checkpoints" / "latest.json").exists() and len(workers := _workers(proc.pid)) == 2):
        time.sleep(0.05)
    assert len(workers) == 2 and proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    gone = time.time() + 5
    while time.time() < gone and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "a worker went on training after its driver was killed"
    assert not (out / "V" / "done.json").exists()


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie waiting to be reaped does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("args, needle", [
    (("--jobs", "0"), "--jobs 0"),
    (("--address", "auto"), "add --executor ray"),
    (("--executor", "ray", "--gpus-per-cell", "2"), "--gpus-per-cell 2.0"),
])
def test_bad_executor_options_are_one_line(args, needle, dialogue, tmp_path):  # noqa: F811
    code, _, err = compare_main(*GRID, "--steps", "2", "--data", dialogue, "--out", tmp_path / "x", *args)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()


def test_without_ray_the_ray_executor_is_one_line_naming_the_extra_and_the_core_never_imports_ray(tmp_path):
    hide = "import sys; sys.modules['ray'] = None; "
    code = hide + ("from synthformer.cli import main; "
                   "sys.exit(main(['compare', '--executor', 'ray', '--out', %r]))" % str(tmp_path / "x"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "pip install 'synthformer[ray]'" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    imports = ("import sys, synthformer, synthformer.cli, synthformer.evidence.compare, synthformer.evidence.executors, "
               "synthformer.reproduce; print('ray' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", imports], capture_output=True, text=True,
                          timeout=120).stdout.strip() == "False"


def test_the_grid_bar_keeps_redrawing_while_cells_run_after_one_has_finished(monkeypatch):
    """The bar's elapsed time moves between finished cells (a log file got nothing for half an hour once the
    first cell had finished: tqdm's dynamic miniters waited for the next one)."""
    import io

    from synthformer.evidence.executors import Progress

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = Progress(3, mininterval=0.05)
    bar.update(done=1, running=2)
    drawn = err.getvalue().count("\r")
    end = time.monotonic() + 0.6
    while time.monotonic() < end:  # the driver's poll: an update with nothing finished, every few ms here
        bar.update(running=2)
        time.sleep(0.01)
    assert err.getvalue().count("\r") - drawn >= 3 and "running=2" in err.getvalue()
    # the rate is cells over the whole time, not one cell per redraw (tqdm's smoothed rate only sees the redraw
    # in which a cell finished: 60 s/cell and an ETA of minutes in table2's log, where cells take ~25 min)
    bar.update(done=1, running=1)
    time.sleep(0.06)
    bar.update(running=1)
    bar.close()
    rates = [float(r) if unit == "cell/s" else 1 / float(r)
             for r, unit in re.findall(r"2/3 \[[^,]*, *([\d.]+)(cell/s|s/cell)", err.getvalue())]
    assert rates and max(rates) < 2 / 0.6 * 1.5, err.getvalue()[-300:]  # 2 cells in >= 0.6 s

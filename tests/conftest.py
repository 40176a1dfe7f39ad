import contextlib
import io
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest
import torch

from synthformer.attention import SYNTHESIZERS

torch.set_num_threads(2)

# Every synthesizer alone plus mixtures; used to parametrize the attention contract tests.
SINGLE = list(SYNTHESIZERS)  # a new registry entry is tested (and needs a literal reference) automatically
MIXTURES = ["R+V", "D+V", "R+D", "FR+V", "FD+V", "Fix+FR", "R+D+V"]
ALL_SPECS = SINGLE + MIXTURES


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _keep_threads():
    n = torch.get_num_threads()  # in-process runs pass --threads 1; give the session its setting back
    yield
    torch.set_num_threads(n)


def run_in_process(entry, *args) -> tuple[int, str, str]:
    """Call a command's ``main(argv)`` in this process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = entry([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def run_cli(*args) -> tuple[int, str, str]:
    """The `synthformer` command in this process: (exit code, stdout, stderr)."""
    from synthformer.cli import main as cli_main

    return run_in_process(cli_main, *args)


def kill_cli_when(ready, *args, timeout: float = 90) -> None:
    """Run the `synthformer` command in a second process (one thread) and SIGKILL it once ``ready()`` holds,
    it exits, or `timeout` seconds pass: a real interruption."""
    proc = subprocess.Popen([sys.executable, "-m", "synthformer.cli", *map(str, args)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.time() + timeout
    while not ready() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def one_line_error(code: int, err: str, *needles: str) -> None:
    """Exit status 2, no traceback, and one line holding every needle."""
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert any(all(n in line for n in needles) for line in lines), err[-2000:]


def ensure_source(name: str) -> None:
    """Fetch registry source `name` when it is not here yet (`synthformer data prepare NAME`: e.g. apt's
    index with English descriptions, which a fresh machine lacks); skip the test when it cannot be had."""
    from synthformer.data.prepare import SourceNotInstalledError
    from synthformer.data.sources import SOURCES, prepare_source

    if not SOURCES[name].installed():
        try:
            prepare_source(name)
        except SourceNotInstalledError as e:
            pytest.skip(f"data source {name} cannot be had here: {str(e).splitlines()[0]}")

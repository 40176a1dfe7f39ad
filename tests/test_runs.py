"""Run folders (issue 8): one writer per folder (a lock, tested with real processes), failed starts
leave nothing behind, damaged run files are one-line errors naming the file."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import one_line_error, run_cli
from synthformer.training.checkpoint import RunError
from synthformer.errors import SynthformerError
from synthformer.utils.integrity import write_manifest
from synthformer.training.lock import LOCK_FILE, RunLock, RunLockedError
from synthformer.training.runs import UNFINISHED
from synthformer.training.loop import TrainConfig, train

SIZES = ["--batch_size", "4", "--seq_len", "16", "--vocab_size", "280", "--eval_every", "0", "--eval_batches", "1",
         "--threads", "1", "--progress", "false", "--warmup_steps", "1", "--max_examples", "120",
         "--embed_dim", "32", "--num_layers", "1", "--ffn_dim", "64", "--max_seq_len", "32"]
API = dict(batch_size=4, seq_len=16, vocab_size=280, eval_every=0, eval_batches=1, threads=1, progress=False,
           warmup_steps=1, max_examples=120, steps=2)
MODEL = dict(embed_dim=32, num_layers=1, ffn_dim=64, max_seq_len=32)


main = run_cli  # the CLI in this process


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> Path:
    words = "the cat sat on a mat and dog ran to house with red blue green big small old new".split()
    file = tmp_path_factory.mktemp("data") / "lm.txt"
    file.write_text("".join(" ".join(words[(i * 7 + j) % len(words)] for j in range(12)) + "\n" for i in range(200)))
    return file


@pytest.fixture(scope="module")
def stopped(text, tmp_path_factory) -> Path:
    """A run stopped after step 2 of 3 (checkpoint at 2), copied by the tests that damage it."""
    out = tmp_path_factory.mktemp("runs") / "stopped"
    code, _, err = main("train", "--data", text, "--out", out, "--steps", "3", "--checkpoint_every", "1",
                        "--stop_after", "2", "--log_every", "1", *SIZES)
    assert code == 0, err[-2000:]
    return out


def copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / run.name))


# ----------------------------------------------------------------------------- one writer
def test_lock_refuses_a_second_holder_and_names_the_first(tmp_path):
    with RunLock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
        with pytest.raises(RunLockedError, match=rf"in use by another run \(pid {os.getpid()}"):
            RunLock(tmp_path).acquire()
    assert not (tmp_path / LOCK_FILE).exists()  # released: the file goes with it
    with RunLock(tmp_path):
        pass


def test_a_second_train_on_the_same_out_is_refused_and_a_killed_runs_lock_is_taken_over(text, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    cmd = [sys.executable, "-m", "synthformer.cli", "train", "--data", str(text), "--out", str(out), *SIZES]
    first = subprocess.Popen(cmd + ["--steps", "100000", "--checkpoint_every", "1"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pointer = out / "checkpoints" / "latest.json"
        deadline = time.time() + 90
        while not pointer.exists() and time.time() < deadline and first.poll() is None:
            time.sleep(0.05)
        assert pointer.exists() and first.poll() is None, "the first run did not start"
        code, _, err = main("train", "--data", text, "--out", out, "--steps", "2", *SIZES)  # this process: the second
        one_line_error(code, err, f"in use by another run (pid {first.pid}", str(out / LOCK_FILE))
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert (out / LOCK_FILE).read_text().strip() == str(first.pid)  # stale: its holder is dead
    step = json.loads((out / "checkpoints" / "latest.json").read_text())["step"]
    code, _, err = main("train", "--resume", "--out", out, "--stop_after", str(step + 1))
    assert code == 0, err[-2000:]
    assert json.loads((out / "checkpoints" / "latest.json").read_text())["step"] == step + 1
    assert not (out / LOCK_FILE).exists()


# ----------------------------------------------------------------------------- failed starts
def test_failed_starts_leave_nothing_and_a_fresh_start_then_works(text, tmp_path):
    out = tmp_path / "runs" / "run"
    failing = [
        ({"batch_size": 4096}, {}),  # too little data for one batch (found while building the batches)
        ({}, {"dropout": 2.0}),
        ({}, {"attention": "FD", "dense_factors": [3, 5]}),
        ({}, {"attention": "FR", "factorized_k": 0}),
        ({"task": "seq2seq", "data": "PAIRS"}, {"cross_attention": "bogus"}),
    ]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{a} b c\tc b {a}\n" for a in "defghijklmnopqrstuvw" * 10))
    for train_over, model_over in failing:
        train_over = {k: str(pairs) if v == "PAIRS" else v for k, v in train_over.items()}
        cfg = TrainConfig(**{**API, "data": str(text), "out": str(out), **train_over})
        with pytest.raises(ValueError):
            train(cfg, {**MODEL, **model_over}, log=lambda m: None)
        assert not (tmp_path / "runs").exists(), (train_over, model_over)  # not even the folders it made
    result = train(TrainConfig(**{**API, "data": str(text), "out": str(out)}), MODEL, log=lambda m: None)
    assert result["step"] == 2 and (out / "done.json").is_file()


def test_a_start_killed_between_its_first_writes_does_not_block_the_next(text, tmp_path, monkeypatch):
    import synthformer.training.runs as runs_module

    out = tmp_path / "run"
    real = runs_module.atomic_write_json

    def killed_at_config(path, obj):
        if Path(path).name in ("config.json", f".config.json.tmp-{os.getpid()}"):  # written at a temporary name
            raise KeyboardInterrupt  # the process dies after the tokenizer, before config.json
        real(path, obj)

    monkeypatch.setattr(runs_module, "atomic_write_json", killed_at_config)
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig(**{**API, "data": str(text), "out": str(out)}), MODEL, log=lambda m: None)
    monkeypatch.undo()
    assert (out / "tokenizer.json").exists() and not (out / "config.json").exists()
    (out / f".config.json.tmp-{os.getpid()}").write_text("{")  # a temp file the kill left
    result = train(TrainConfig(**{**API, "data": str(text), "out": str(out)}), MODEL, log=lambda m: None)
    assert result["step"] == 2
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


# ----------------------------------------------------------------------------- one-line errors
def test_out_naming_a_file_is_refused_in_one_line(text, tmp_path):
    file = tmp_path / "notes.txt"
    file.write_text("mine")
    code, _, err = main("train", "--data", text, "--out", file, "--steps", "1", *SIZES)
    one_line_error(code, err, str(file), "is an existing file")
    assert file.read_text() == "mine"


def _damage(run: Path, name: str) -> None:
    ckpt = run / "checkpoints" / "step-00000002"
    if name == "state.pt":  # unreadable state in an old folder (no manifest to catch it first)
        (ckpt / "manifest.json").unlink()
        (ckpt / "state.pt").write_bytes(b"not a zip")
    elif name == "latest.json":
        (run / "checkpoints" / "latest.json").write_text('{"step": 2, "pa')
    elif name == "tokenizer.json":
        (run / "tokenizer.json").write_text('{"kind": "bpe", "hf": {"model": 7}}')
    elif name == "metrics.jsonl":
        (run / "metrics.jsonl").write_text('{"step": 1, "split": "train"}\n[1, 2]\n')
    elif name == "config.json":
        stored = json.loads((run / "config.json").read_text())
        stored["world_size"] = 2
        (run / "config.json").write_text(json.dumps(stored))


@pytest.mark.parametrize("name,needles", [
    ("state.pt", ["state.pt", "unreadable training state"]),
    ("latest.json", ["latest.json", "not a valid checkpoint pointer"]),
    ("tokenizer.json", ["tokenizer.json", "tokenizer ("]),
    ("metrics.jsonl", ["metrics.jsonl:2: not a JSON object"]),
    ("config.json", ["trained by 2 process(es)", "world size"]),
])
def test_damaged_run_files_are_one_line_errors_on_resume(stopped, tmp_path, name, needles):
    """Past the manifests (rewritten after the damage, as a careless hand edit would not): the readers'
    own checks still give one line."""
    run = copy(stopped, tmp_path)
    _damage(run, name)
    write_manifest(run, skip=UNFINISHED)
    code, _, err = main("train", "--resume", "--out", run, "--trust-unverified")
    one_line_error(code, err, *needles)


@pytest.mark.parametrize("name", ["tokenizer.json", "config.json"])
def test_a_hand_edited_run_file_is_caught_by_the_run_manifest(stopped, tmp_path, name):
    run = copy(stopped, tmp_path)
    _damage(run, name)
    code, _, err = main("train", "--resume", "--out", run, "--trust-unverified")  # trusting does not skip a mismatch
    one_line_error(code, err, str(run / name), "differ from manifest.json")


@pytest.mark.parametrize("content", ["{not json", '{"model": 3}', "[]"])
def test_a_damaged_config_json_is_named(stopped, tmp_path, content):
    run = copy(stopped, tmp_path)
    (run / "config.json").write_text(content)
    with pytest.raises(RunError, match=r"config\.json: not (valid JSON|a run config)"):
        train(TrainConfig(**{**API, "out": str(run), "resume": True}))


def test_a_metrics_row_cut_short_by_a_kill_is_dropped_on_resume(stopped, tmp_path):
    run = copy(stopped, tmp_path)
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "split": "tr')  # the kill came mid-row
    code, _, err = main("train", "--resume", "--out", run)
    assert code == 0, err[-2000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["split"] == "train"] == [1, 2, 3]


# ----------------------------------------------------------------------------- one line per class (issue 21)
@pytest.mark.parametrize("where", ["under-a-file", "unwritable"])
def test_train_and_export_refuse_an_out_they_cannot_write_in_one_line(text, stopped, tmp_path, where):
    (tmp_path / "notes.txt").write_text("mine")
    out = tmp_path / "notes.txt" / "run" if where == "under-a-file" else Path("/proc/synthformer-test/run")
    needle = "is a file, not a folder" if where == "under-a-file" else "writ"
    one_line_error(*main("train", "--data", text, "--out", out, "--steps", "1", *SIZES)[::2], str(out), needle)
    one_line_error(*main("export", "hf", "--run", stopped, "--out", out)[::2], str(out), needle)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def _sizes(**changed) -> list[str]:
    args = list(SIZES)
    for k, v in changed.items():
        args[args.index(f"--{k}") + 1] = str(v)
    return args


@pytest.mark.parametrize("changed,needles", [
    ({"vocab_size": 200}, ["vocab_size=200", ">= 262"]),
    ({"batch_size": 5000}, ["too few for batch_size=5000"]),
    ({"seq_len": 48, "max_seq_len": 64, "max_examples": 8}, ["the valid split cannot be evaluated", "too few"]),  # before training
])
def test_sizes_that_do_not_fit_are_one_line_errors_and_leave_nothing(text, tmp_path, changed, needles):
    out = tmp_path / "run"
    one_line_error(*main("train", "--data", text, "--out", out, "--steps", "1", *_sizes(**changed))[::2], *needles)
    assert not out.exists()


def test_eval_refuses_options_that_contradict_the_run(stopped):
    one_line_error(*main("eval", "--run", stopped, "--task", "mlm")[::2], "trained with task=lm", "cannot change task")
    one_line_error(*main("eval", "--run", stopped, "--seq_len", "64")[::2], "--seq_len=64", "max_seq_len=32")


def test_train_precheck_uses_the_tasks_model_kind(text, tmp_path):
    code, _, err = main("train", "--task", "mlm", "--attention", "linformer", "--data", text, "--out", tmp_path / "m",
                        "--steps", "1", *SIZES)
    assert code == 0, err[-2000:]
    one_line_error(*main("train", "--attention", "linformer", "--data", text, "--out", tmp_path / "l", "--steps", "1",
                         *SIZES)[::2], "linformer")


@pytest.mark.parametrize("content", [b"\xff\xfe{", b'{"step": 2, "path": "step-00000002"'])
def test_a_damaged_latest_json_is_one_line(stopped, tmp_path, content):
    run = copy(stopped, tmp_path)
    (run / "checkpoints" / "latest.json").write_bytes(content)
    for args in (("eval", "--run", run), ("generate", "--run", run, "x"), ("train", "--resume", "--out", run)):
        one_line_error(*main(*args)[::2], "latest.json", "not a valid checkpoint pointer")


def test_a_damaged_done_json_is_one_line(stopped, tmp_path):
    from synthformer.training.runs import read_done

    run = copy(stopped, tmp_path)
    assert main("train", "--resume", "--out", run)[0] == 0
    assert read_done(run)["step"] == 3
    (run / "done.json").write_bytes(b"\xff\xfe")
    with pytest.raises(SynthformerError, match="done.json: contents differ from manifest.json"):
        read_done(run)
    write_manifest(run, skip={LOCK_FILE})
    with pytest.raises(RunError, match=r"done.json: unreadable \(UnicodeDecodeError\)"):
        read_done(run)


def test_a_changed_seed_on_resume_is_one_line(stopped, tmp_path):
    run = copy(stopped, tmp_path)
    one_line_error(*main("train", "--resume", "--out", run, "--seed", "5")[::2], "cannot change seed")
    stored = json.loads((run / "config.json").read_text())  # edited by hand, the manifest rewritten to match
    stored["train"]["seed"] = 5
    (run / "config.json").write_text(json.dumps(stored))
    write_manifest(run, skip=UNFINISHED)
    one_line_error(*main("train", "--resume", "--out", run)[::2], "cannot resume LMBatches")


# ----------------------------------------------------------------------------- memory
MEMORY_CHILD = """
import resource, sys
sys.path.insert(0, sys.argv[1])
from conftest import run_cli
from synthformer.training.memory import _mapped_bytes
from synthformer.model import ModelConfig
from synthformer.model.config import estimate_parameter_bytes
import synthformer.training.loop, synthformer.data  # mapped before the limit is set
params = estimate_parameter_bytes(ModelConfig.preset("tiny", embed_dim=1024, ffn_dim=4096, num_layers=4, num_heads=4,
                                                     vocab_size=280, max_seq_len=32))
limit = _mapped_bytes() + 2 * params  # room for the weights (the parameter check passes), not for training
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
code, out, err = run_cli("train", *sys.argv[2:])
print(code, err.strip().splitlines()[-1] if err.strip() else "")
"""


def test_training_that_cannot_fit_the_process_limit_is_refused_before_anything_is_written(text, tmp_path):
    """A real address-space limit (ulimit -v) with room for the parameters but not for gradients and
    AdamW state: one line naming the limit, and no run folder left."""
    out = tmp_path / "big"
    args = ["--data", text, "--out", out, "--steps", "1", *_sizes(embed_dim=1024, ffn_dim=4096, num_layers=4)]
    proc = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(Path(__file__).parent), *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-2000:]
    assert last.startswith("2 synthformer: error: training this model needs about"), last
    assert "ulimit -v" in last and "x4 with gradients and AdamW state" in last
    assert not out.exists()


# ----------------------------------------------------------------------------- resume mid logging window
def test_train_rows_after_a_resume_mid_window_equal_the_uninterrupted_runs(text, tmp_path):
    args = ["--data", text, "--steps", "6", "--log_every", "4", "--checkpoint_every", "1", *SIZES]
    assert main("train", *args, "--out", tmp_path / "full")[0] == 0
    assert main("train", *args, "--out", tmp_path / "cut", "--stop_after", "3")[0] == 0  # inside the window 1..4
    code, _, err = main("train", "--resume", "--out", tmp_path / "cut")
    assert code == 0, err[-2000:]

    def train_rows(run):
        rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        return [(r["step"], r["loss"]) for r in rows if r["split"] == "train"]

    assert train_rows(tmp_path / "cut") == train_rows(tmp_path / "full") and len(train_rows(tmp_path / "full")) == 2


@pytest.mark.parametrize("args,needle", [(["--temperature", "inf"], "--temperature=inf must be > 0 and finite"),
                                         (["--length-penalty", "nan"], "--length-penalty=nan must be a finite number")])
def test_generate_refuses_non_finite_decoding_options(stopped, args, needle):
    one_line_error(*main("generate", "--run", stopped, "the", *args)[::2], needle)


def test_a_model_folder_linked_to_another_run_is_refused(stopped, tmp_path):
    """RUN/model as a symlink to another run's model: eval, generate and export refuse it (one line)."""
    other = copy(stopped, tmp_path / "other")
    assert main("train", "--resume", "--out", other)[0] == 0  # finished: other/model exists
    run = copy(stopped, tmp_path / "run")
    (run / "model").symlink_to(other / "model", target_is_directory=True)
    for args in (("eval", "--run", run), ("generate", "--run", run, "x")):
        one_line_error(*main(*args)[::2], "model", "outside the run")

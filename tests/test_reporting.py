"""report_to: the training loop's rows (train: loss, lr, tokens/s; valid: the task's metrics) reach
TensorBoard and Weights & Biases (offline), from rank 0 only; a missing tracker package is one line;
the older `tensorboard: true` still loads. Each tracker's files are read back with its own reader."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import one_line_error, run_cli
from synthformer.errors import ConfigError
from synthformer.training.trackers import parse_report_to, scalars
from synthformer.training.config import TrainConfig

WORDS = "the cat sat on a mat and dog ran to house with red blue green big small old new".split()
TINY = ["--task", "lm", "--steps", "4", "--batch_size", "4", "--seq_len", "16", "--vocab_size", "280",
        "--log_every", "1", "--eval_every", "2", "--eval_batches", "1", "--threads", "1", "--progress", "false",
        "--warmup_steps", "1", "--tokenizer", "char"]


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> Path:
    file = tmp_path_factory.mktemp("data") / "lm.txt"
    file.write_text("".join(" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3 + i % 9)) + "\n"
                            for i in range(200)))
    return file


def metric_rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]


def expected(run: Path) -> dict[tuple[str, int], float]:
    """{(tag, step): value} of every number in metrics.jsonl: what each tracker must hold."""
    return {(tag, row["step"]): v for row in metric_rows(run) for tag, v in scalars(row).items()}


def cli(*args, env: dict | None = None, torchrun: bool = False) -> subprocess.CompletedProcess:
    """`synthformer ARGS` in a fresh process (W&B starts its own service: keep it out of the test process)."""
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"] if torchrun else []
    return subprocess.run([sys.executable, *launcher, "-m", "synthformer.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=240, env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})


# ----------------------------------------------------------------------------- the option
def test_report_to_values():
    assert parse_report_to("none") == ()
    assert parse_report_to("wandb") == ("wandb",)
    assert parse_report_to("tensorboard, wandb,tensorboard") == ("tensorboard", "wandb")
    for bad in ("", "mlflow", "none,wandb", "wandb,"):
        with pytest.raises(ValueError, match="report_to"):
            parse_report_to(bad)
    with pytest.raises(ConfigError, match="report_to='mlflow'"):
        TrainConfig(report_to="mlflow")


def test_an_older_config_with_tensorboard_true_still_loads():
    """config.json files written before report_to: `tensorboard: true` means report_to=tensorboard."""
    old = {k: v for k, v in TrainConfig().to_dict().items() if k != "report_to"}
    cfg = TrainConfig(**{**old, "tensorboard": True})
    assert (cfg.report_to, cfg.tensorboard) == ("tensorboard", False)
    assert TrainConfig(**cfg.to_dict()) == cfg  # what a new run stores reads back the same
    assert TrainConfig(**{**old, "tensorboard": False}).report_to == "none"
    assert TrainConfig(tensorboard=True, report_to="wandb").report_to == "tensorboard,wandb"


def test_bad_report_to_on_the_cli_is_one_line(tmp_path, text):
    code, _, err = run_cli("train", "--data", text, "--out", tmp_path / "run", *TINY, "--report_to", "mlflow")
    one_line_error(code, err, "report_to", "mlflow", "tensorboard")
    assert not (tmp_path / "run").exists()


def test_a_missing_tracker_package_is_one_line_naming_the_extra(tmp_path, text, monkeypatch):
    """With wandb not importable, --report_to wandb stops before the run folder is written."""
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` now fails as if not installed
    code, _, err = run_cli("train", "--data", text, "--out", tmp_path / "run", *TINY, "--report_to", "wandb")
    one_line_error(code, err, "report_to=wandb", "pip install 'synthformer[wandb]'")
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------------------- TensorBoard
def tensorboard_scalars(folder: Path) -> dict[tuple[str, int], float]:
    """Every scalar of the event files under ``folder``, read with TensorBoard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0}).Reload()
    return {(tag, e.step): e.value for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag)}


def test_tensorboard_event_files_hold_every_logged_number(tmp_path, text):
    pytest.importorskip("tensorboard", reason="pip install 'synthformer[tensorboard]'")
    run = tmp_path / "run"
    code, _, err = run_cli("train", "--data", text, "--out", run, *TINY, "--report_to", "tensorboard")
    assert code == 0, err[-3000:]
    want = expected(run)
    tags = {tag for tag, _ in want}
    assert {"train/loss", "train/lr", "train/tokens_per_s", "valid/loss", "valid/ppl"} <= tags, tags
    assert {step for tag, step in want if tag == "valid/loss"} == {2, 4}
    got = tensorboard_scalars(run / "tensorboard")
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-6), key  # stored as float32


def test_report_to_none_writes_no_tracker_files(tmp_path, text):
    run = tmp_path / "run"
    code, _, err = run_cli("train", "--data", text, "--out", run, *TINY)
    assert code == 0, err[-3000:]
    assert sorted(p.name for p in run.iterdir() if p.is_dir()) == ["checkpoints", "model"]


# ----------------------------------------------------------------------------- Weights & Biases
def wandb_runs(wandb_dir: Path) -> list[Path]:
    return sorted((wandb_dir / "wandb").glob("offline-run-*"))


def wandb_history(run_dir: Path) -> tuple[dict, dict[tuple[str, int], float]]:
    """(the run's summary, {(tag, step): value} of its history), read from the offline .wandb log with
    wandb's own reader (`wandb leet inspect`)."""
    (log,) = run_dir.glob("run-*.wandb")
    inspect = [sys.executable, "-m", "wandb", "leet", "inspect", "--json"]
    res = subprocess.run([*inspect, str(log)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    history = {}
    for line in res.stdout.splitlines():
        record = json.loads(line)
        if record.get("type") == "history":
            item = record["history"]["item"]
            history.update({(k, item["_step"]): v for k, v in item.items() if not k.startswith("_")})
    res = subprocess.run([*inspect, "--summary", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout), history


@pytest.mark.slow  # three processes that start W&B's service (about 25 s on 2 shared cores)
def test_wandb_offline_run_holds_every_logged_number_and_resume_continues_it(tmp_path, text):
    pytest.importorskip("wandb", reason="pip install 'synthformer[wandb]'")
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_PROJECT": "synth-test"}
    run = tmp_path / "run"
    res = cli("train", "--data", text, "--out", run, *TINY, "--report_to", "wandb", "--stop_after", "2", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    res = cli("train", "--out", run, "--report_to", "wandb", "--resume", "--threads", "1", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    first, second = wandb_runs(tmp_path)  # one offline run per invocation, under WANDB_DIR
    (summary_a, history_a), (summary_b, history_b) = wandb_history(first), wandb_history(second)
    assert summary_a["run_id"] == summary_b["run_id"]  # the resumed invocation continues the same W&B run
    assert summary_b["project"] == "synth-test" and summary_b["name"] == "run" and summary_b["state"] == "finished"
    assert summary_b["config"]["train"]["steps"] == 4 and summary_b["config"]["model"]["kind"] == "lm"
    want, got = expected(run), {**history_a, **history_b}
    assert {step for _, step in history_a} == {1, 2} and {step for _, step in history_b} == {3, 4}
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12), key
    final = [r for r in metric_rows(run) if r["split"] == "valid"][-1]
    assert summary_b["summary"]["valid/loss"] == pytest.approx(final["loss"], rel=1e-12)


@pytest.mark.slow  # torchrun, two ranks (about 20 s)
def test_trackers_log_from_rank_zero_only(tmp_path, text):
    """Two gloo ranks: one TensorBoard event file and one W&B run, holding what rank 0 logged."""
    pytest.importorskip("wandb", reason="pip install 'synthformer[wandb]'")
    pytest.importorskip("tensorboard", reason="pip install 'synthformer[tensorboard]'")
    run = tmp_path / "run"
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "PYTHONWARNINGS": "ignore"}
    res = cli("train", "--data", text, "--out", run, *TINY, "--report_to", "tensorboard,wandb", env=env, torchrun=True)
    assert res.returncode == 0, res.stderr[-3000:]
    assert len(list((run / "tensorboard").iterdir())) == 1
    (wandb_run,) = wandb_runs(tmp_path)
    want = expected(run)
    assert tensorboard_scalars(run / "tensorboard").keys() == want.keys() == wandb_history(wandb_run)[1].keys()

"""The training loop through the real CLI: a smoke run of every task, exact resume after a stop and
after a kill, atomic run folders, the schedule, and a 2-process DDP run matching one process."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from synthformer.data import load_tokenizer
from conftest import kill_cli_when, run_in_process
from synthformer.errors import ConfigError
from synthformer.training.loop import TrainConfig, lr_at, train

WORDS = "the cat sat on a mat and dog ran to house with red blue green big small old new".split()
SMALL = ["--steps", "2", "--batch_size", "4", "--seq_len", "24", "--vocab_size", "300", "--log_every", "1",
         "--eval_every", "1", "--eval_batches", "2", "--decode_examples", "4", "--threads", "1",
         "--progress", "false", "--warmup_steps", "1"]


def make_data(folder: Path) -> dict[str, Path]:
    """Tiny files of every kind a user may bring (lm .txt, seq2seq .tsv, classify .jsonl)."""
    rng = random.Random(0)
    sentence = lambda lo, hi: " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))  # noqa: E731
    lm = folder / "lm.txt"
    lm.write_text("\n".join(sentence(5, 30) for _ in range(300)) + "\n")
    pairs = folder / "pairs.tsv"
    pairs.write_text("".join(f"{s}\t{' '.join(reversed(s.split()))}\n" for s in (sentence(2, 8) for _ in range(200))))
    cls = folder / "cls.jsonl"
    rows = [sentence(2, 12) for _ in range(200)]
    cls.write_text("".join(json.dumps({"text": s, "label": "cat" if "cat" in s else "other"}) + "\n" for s in rows))
    return {"lm": lm, "mlm": lm, "seq2seq": pairs, "classify": cls}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    return make_data(tmp_path_factory.mktemp("data"))


def cli(*args, check: bool = True, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-m", "synthformer.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-3000:]}")
    return proc


def main(*args) -> tuple[int, str, str]:
    """The CLI in this process (same code as the console script, without the interpreter start-up)."""
    from synthformer.cli import main as cli_main

    return run_in_process(cli_main, *args)


def ok(*args) -> str:
    code, out, err = main(*args)
    assert code == 0, err[-3000:]
    return out


def rows(run: Path, split: str | None = None) -> list[dict]:
    out = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
    return [r for r in out if split is None or r["split"] == split]


def weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "model" / "model.safetensors"))


def assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), f"{k} differs"


# ----------------------------------------------------------------------------- every task
EXPECTED = {"lm": ("ppl", "lm"), "mlm": ("ppl", "mlm"), "seq2seq": ("bleu", "seq2seq"),
            "classify": ("accuracy", "classifier")}


# One task in `make test` (seq2seq: both stacks and decoding); the others are slow (7-11 s each on 2 shared cores).
@pytest.mark.parametrize("task,attention", [pytest.param("lm", "R+V", marks=pytest.mark.slow),
                                            pytest.param("mlm", "D", marks=pytest.mark.slow), ("seq2seq", "FR"),
                                            pytest.param("classify", "Fix", marks=pytest.mark.slow)])
def test_smoke_every_task_through_the_cli(task, attention, data, tmp_path):
    run = tmp_path / "run"
    proc = cli("train", "--task", task, "--data", data[task], "--attention", attention, "--out", run, *SMALL)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    metric, kind = EXPECTED[task]
    assert math.isfinite(summary["valid"][metric])
    stored = json.loads((run / "config.json").read_text())
    assert stored["model"]["kind"] == kind and stored["model"]["attention"] == attention
    assert stored["train"]["task"] == task and stored["train"]["steps"] == 2
    assert stored["model"]["vocab_size"] == load_tokenizer(run).vocab_size
    done = json.loads((run / "done.json").read_text())
    assert done["step"] == 2 and done["valid"][metric] == summary["valid"][metric]
    assert done["hardware"].startswith("cpu (") and done["hardware"].endswith(", 1 thread")  # where tokens/s was measured
    train_rows, valid_rows = rows(run, "train"), rows(run, "valid")
    assert [r["step"] for r in train_rows] == [1, 2] and [r["step"] for r in valid_rows] == [1, 2]
    assert all(math.isfinite(r["loss"]) and r["tokens_per_s"] > 0 for r in train_rows)
    assert [r["tokens"] for r in valid_rows] == [r["tokens"] for r in train_rows]  # training tokens so far
    if task == "seq2seq":
        assert {"bleu", "chrf", "rougeL"} <= set(valid_rows[-1])
    assert (run / "model" / "model.safetensors").is_file()
    assert json.loads((run / "checkpoints" / "latest.json").read_text())["step"] == 2
    # the run's model is usable by eval (and generate where the kind has it)
    ev = json.loads(ok("eval", "--run", run, "--split", "test", "--threads", "1").strip().splitlines()[-1])
    assert ev["split"] == "test" and math.isfinite(ev["loss"])
    if task in ("lm", "seq2seq", "classify"):
        out = ok("generate", "--run", run, "the cat", "--max-new-tokens", "5")
        assert out.startswith("the cat") if task == "lm" else out.endswith("\n")
        if task == "classify":
            assert json.loads(out)["label"] in ("cat", "other")


@pytest.mark.parametrize("attention", ["R", "FR", "FD", "R+V"])
def test_in_run_validation_equals_a_fresh_eval_of_the_saved_model(attention, data, tmp_path):
    """The number logged at the last step is the one `synthformer eval` gives the saved model (a stale
    softmax table reused across evaluations once hid R's progress after the first one)."""
    run = tmp_path / "run"
    ok("train", "--task", "lm", "--data", data["lm"], "--attention", attention, "--out", run, *SMALL[:-2],
       "--steps", "4", "--lr", "0.05", "--warmup_steps", "0", "--max_seq_len", "24")
    logged = rows(run, "valid")
    assert [r["step"] for r in logged] == [1, 2, 3, 4] and logged[0]["ppl"] != logged[-1]["ppl"]  # the last on the whole split
    ev = json.loads(ok("eval", "--run", run, "--threads", "1").strip().splitlines()[-1])
    assert ev["ppl"] == pytest.approx(logged[-1]["ppl"], rel=1e-5)


# ----------------------------------------------------------------------------- resume
RESUME = ["--steps", "8", "--batch_size", "4", "--seq_len", "24", "--vocab_size", "300", "--log_every", "1",
          "--eval_every", "3", "--eval_batches", "2", "--checkpoint_every", "2", "--threads", "1",
          "--progress", "false", "--warmup_steps", "2", "--dropout", "0.1"]


@pytest.mark.parametrize("task", ["lm", "mlm"])
def test_resume_after_stop_gives_the_same_weights(task, data, tmp_path):
    full, parted = tmp_path / "full", tmp_path / "parted"
    ok("train", "--task", task, "--data", data[task], "--out", full, *RESUME)
    ok("train", "--task", task, "--data", data[task], "--out", parted, "--stop_after", "5", *RESUME)
    assert not (parted / "done.json").exists() and not (parted / "model").exists()
    assert json.loads((parted / "checkpoints" / "latest.json").read_text())["step"] == 5
    ok("train", "--resume", "--out", parted)
    assert_same_weights(full, parted)
    strip = lambda rs: [{k: v for k, v in r.items() if "time" not in k and "per_s" not in k and k != "eval_s"}  # noqa: E731
                        for r in rs]
    assert strip(rows(full)) == strip(rows(parted))  # same losses at every step, no duplicated rows


@pytest.mark.slow  # 13 s: two 60-step runs, one killed
def test_resume_after_kill_gives_the_same_weights(data, tmp_path):
    """A real interruption: SIGKILL once a checkpoint exists, then --resume."""
    args = ["--data", data["lm"], "--steps", "60", "--batch_size", "4", "--seq_len", "24", "--vocab_size", "300",
            "--checkpoint_every", "5", "--eval_every", "0", "--eval_batches", "2", "--threads", "1",
            "--progress", "false", "--warmup_steps", "5"]
    full, killed = tmp_path / "full", tmp_path / "killed"
    ok("train", "--out", full, *args)
    pointer = killed / "checkpoints" / "latest.json"
    kill_cli_when(pointer.exists, "train", "--out", killed, *args)
    assert pointer.exists(), "the run never wrote a checkpoint"
    if (killed / "done.json").exists():
        pytest.skip("the run finished before it could be killed (machine too fast for this budget)")
    step = json.loads(pointer.read_text())["step"]
    assert 5 <= step < 60
    # eval of an unfinished run uses its last checkpoint and says so
    code, _, err = main("eval", "--run", killed, "--max-batches", "1", "--threads", "1")
    assert code == 0 and "not finished" in err
    ok("train", "--resume", "--out", killed)
    assert_same_weights(full, killed)


def test_a_run_continued_from_another_trains_on_exactly_and_evaluates_with_its_own_settings(data, tmp_path):
    """continue_from: a seq2seq run (dropout on) stopped at step 4, never evaluated, continued into a new folder
    that evaluates every 2 steps, decodes and scores the test split, ends with the weights, rows and metrics of
    a run trained straight with those settings (so evaluating on the way changes nothing in training), less
    the evaluation the source never made (step 2); what the run trains may not differ."""
    from synthformer.training.checkpoint import RunError

    common = dict(task="seq2seq", data=str(data["seq2seq"]), steps=8, batch_size=4, seq_len=24, vocab_size=300,
                  log_every=1, eval_batches=2, checkpoint_every=3, threads=1, progress=False, warmup_steps=2)
    model, quiet = {"attention": "FR", "dropout": 0.1}, (lambda m: None)
    source, continued, straight = tmp_path / "source", tmp_path / "continued", tmp_path / "straight"
    train(TrainConfig(**common, out=str(source), stop_after=4, eval_every=0, decode_examples=0), model, log=quiet)
    evaluated = dict(eval_every=2, decode_examples=4, eval_test=True)
    result = train(TrainConfig(**common, **evaluated, out=str(continued)), model, log=quiet, continue_from=source)
    expected = train(TrainConfig(**common, **evaluated, out=str(straight)), model, log=quiet)
    assert result["continued_from"] == str(source) and "continued_from" not in expected
    assert_same_weights(straight, continued)
    strip = lambda rs: [{k: v for k, v in r.items() if "time" not in k and "per_s" not in k and k != "eval_s"}  # noqa: E731
                        for r in rs]
    assert strip(rows(continued)) == [r for r in strip(rows(straight)) if (r["split"], r["step"]) != ("valid", 2)]
    assert result["valid"] == expected["valid"] and result["test"] == expected["test"]
    assert result["valid"]["decoded"] == 4 and json.loads((continued / "checkpoints" / "latest.json").read_text())["step"] == 8
    assert not (source / "done.json").exists()  # the source is only read
    refused = [({**common, "lr": 0.01}, model, "cannot continue .*source with a different config .*'lr'"),
               (common, {"attention": "R", "dropout": 0.1}, "trained another model \\(attention 'FR', asked 'R'\\)"),
               ({**common, "resume": True}, model, "starts a new run; resume=true continues")]
    for k, (cfg, overrides, message) in enumerate(refused):
        with pytest.raises(RunError, match=message):
            train(TrainConfig(**cfg, out=str(tmp_path / f"no{k}")), overrides, log=quiet, continue_from=source)
        assert not (tmp_path / f"no{k}" / "config.json").exists()
    with pytest.raises(RunError, match="no checkpoint to continue from"):
        train(TrainConfig(**common, out=str(tmp_path / "none")), model, log=quiet, continue_from=tmp_path / "absent")


def test_resume_refuses_a_changed_config_and_a_finished_run(data, tmp_path):
    run = tmp_path / "run"
    ok("train", "--data", data["lm"], "--out", run, "--stop_after", "1", *SMALL)
    code, _, err = main("train", "--resume", "--out", run, "--lr", "0.5")
    assert code == 2 and "cannot change lr" in err and len(err.strip().splitlines()) == 1
    original = (run / "config.json").read_text()
    stored = json.loads(original)
    (run / "config.json").write_text(json.dumps({**stored, "model": {**stored["model"], "num_heads": 0}}))
    code, _, err = main("train", "--resume", "--out", run)  # an edited config: refused against the manifest
    assert code == 2 and "config.json" in err and len(err.strip().splitlines()) == 1, err
    (run / "config.json").write_text(original)
    ok("train", "--resume", "--out", run, "--eval_every", "2", "--checkpoint_every", "3")  # cadences may change
    assert json.loads((run / "done.json").read_text())["train"]["eval_every"] == 2
    code, _, err = main("train", "--resume", "--out", run)
    assert code == 2 and "already complete" in err
    code, _, err = main("train", "--data", data["lm"], "--out", run, *SMALL)
    assert code == 2 and "already holds a run" in err


def test_checkpoint_state_loads_with_weights_only(data, tmp_path):
    run = tmp_path / "run"
    ok("train", "--data", data["lm"], "--out", run, "--keep_checkpoints", "1", "--checkpoint_every", "1", *SMALL)
    folders = sorted((run / "checkpoints").glob("step-*"))
    assert [f.name for f in folders] == ["step-00000002"]  # older ones pruned
    state = torch.load(folders[0] / "state.pt", weights_only=True)
    assert state["step"] == 2 and len(state["ranks"]) == 1 and "data" in state["ranks"][0]
    assert not list((run / "checkpoints").glob(".*tmp*"))  # no temporary leftovers


# ----------------------------------------------------------------------------- schedule
def slow_lr(step, lr, warmup, total, floor_ratio, kind):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    floor = lr * floor_ratio
    if kind == "constant":
        return lr
    if kind == "linear":
        return lr - (lr - floor) * p
    return floor + (lr - floor) * (1 + math.cos(math.pi * p)) / 2


@pytest.mark.parametrize("schedule", ["cosine", "linear", "constant"])
def test_lr_schedule_matches_the_formula(schedule):
    cfg = TrainConfig(lr=1e-3, warmup_steps=10, steps=100, schedule=schedule, min_lr_ratio=0.1)
    for step in range(0, 101):
        assert lr_at(step, cfg) == pytest.approx(slow_lr(step, 1e-3, 10, 100, 0.1, schedule), rel=1e-12)
    assert lr_at(9, cfg) == pytest.approx(1e-3)
    if schedule != "constant":
        assert lr_at(100, cfg) == pytest.approx(1e-4)


# ----------------------------------------------------------------------------- TrainConfig
@pytest.mark.parametrize("field,value", [
    ("threads", 0), ("threads", -3), ("lr", math.inf), ("lr", math.nan), ("lr", 0.0), ("lr", -1e-3),
    ("min_lr_ratio", -1.0), ("min_lr_ratio", 1.5), ("mask_prob", 0.0), ("mask_prob", 1.5), ("beta2", 1.0),
    ("weight_decay", math.nan), ("grad_clip", math.inf), ("seed", -1), ("device", "gpu"), ("tokenizer", "words"),
    ("preset", "huge"), ("steps", 0), ("num_beams", 0), ("stop_after", 0), ("max_examples", 0), ("data", ""),
])
def test_train_config_refuses_bad_values_naming_the_field(field, value):
    with pytest.raises(ConfigError, match=rf"^{field}=.* must be"):
        TrainConfig(**{field: value})


def test_train_config_checks_the_type_of_every_field():
    for f in dataclasses.fields(TrainConfig):
        with pytest.raises(ConfigError, match=rf"^{f.name}="):
            TrainConfig(**{f.name: object()})
    assert TrainConfig(lr=1, threads=None, device="cuda:1").lr == 1  # ints pass as floats; devices not opened


@pytest.mark.parametrize("option", [["--threads", "-3"], ["--lr", "inf"], ["--min_lr_ratio", "-1"]])
def test_bad_train_options_are_one_line_errors(option, tmp_path):
    code, _, err = main("train", "--out", tmp_path / "run", *option)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and option[0][2:] in lines[0], err[-2000:]
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------------------- DDP
@pytest.mark.slow  # 20 s: torchrun, two ranks
def test_two_process_ddp_matches_one_process(data, tmp_path):
    """torchrun with 2 gloo ranks x 4 sequences sees the same global batches as 1 process x 8:
    the loss curves agree to float tolerance (dropout off)."""
    args = ["--data", data["lm"], "--steps", "6", "--seq_len", "24", "--vocab_size", "300", "--log_every", "1",
            "--eval_every", "0", "--eval_batches", "2", "--threads", "1", "--progress", "false",
            "--warmup_steps", "2", "--dropout", "0", "--checkpoint_every", "3"]
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    ok("train", "--out", single, "--batch_size", "8", *args)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           "-m", "synthformer.cli", "train", "--out", str(ddp), "--batch_size", "4", *map(str, args)],
                          capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    a, b = rows(single, "train"), rows(ddp, "train")
    assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(1, 7))
    for ra, rb in zip(a, b):
        assert rb["loss"] == pytest.approx(ra["loss"], rel=1e-4, abs=1e-4)
        assert rb["tokens"] == ra["tokens"]
    assert json.loads((ddp / "config.json").read_text())["world_size"] == 2
    state = torch.load(ddp / "checkpoints" / "step-00000006" / "state.pt", weights_only=True)
    assert len(state["ranks"]) == 2  # every rank's RNG and data position are kept
    assert not torch.equal(state["ranks"][0]["torch"], state["ranks"][1]["torch"])
    wa, wb = weights(single), weights(ddp)
    for k in wa:
        torch.testing.assert_close(wb[k], wa[k], rtol=1e-3, atol=1e-4)
    assert len(summaries) == 1, summaries  # only rank 0 prints the final result


@pytest.mark.parametrize("attention", ["R", "FR", "R+V", "V"])
def test_bf16_training_runs_and_keeps_fp32_master_weights(attention, data, tmp_path):
    """`--precision bf16` trains every kind of path on CPU (autocast forward, fp32 weights and optimizer)."""
    run = tmp_path / "run"
    summary = json.loads(ok("train", "--task", "lm", "--data", data["lm"], "--attention", attention, "--out", run,
                            "--precision", "bf16", "--steps", "3", "--batch_size", "4", "--seq_len", "24",
                            "--vocab_size", "300", "--threads", "1", "--progress", "false", "--eval_batches", "2",
                            "--warmup_steps", "1").strip().splitlines()[-1])
    assert math.isfinite(summary["valid"]["ppl"])
    assert all(math.isfinite(r["loss"]) for r in rows(run, "train"))
    assert all(w.dtype == torch.float32 for w in weights(run).values())
    state = torch.load(run / "checkpoints" / "step-00000003" / "state.pt", weights_only=True)
    moments = [s["exp_avg"] for s in state["optimizer"]["state"].values()]
    assert moments and all(m.dtype == torch.float32 for m in moments)


def test_data_options_reach_the_source_and_unknown_ones_are_one_line_errors(tmp_path):
    """--data_options passes the source's own options (here chitchat's context_turns) and is stored."""
    run = tmp_path / "run"
    ok("train", "--task", "seq2seq", "--data", "chitchat", "--data_options", "{context_turns: 3}", "--out", run,
       "--max_examples", "300", *SMALL)
    stored = json.loads((run / "config.json").read_text())["train"]
    assert stored["data_options"] == {"context_turns": 3}
    code, _, err = main("train", "--task", "seq2seq", "--data", "chitchat", "--data_options", "bogus: 1",
                        "--out", tmp_path / "bad", *SMALL)
    assert code == 2 and "bogus" in err and "chitchat" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "bad").exists()  # the source itself refused it, before any file was written


def test_one_model_config_per_train_call_and_a_resume_builds_no_second_model(data, tmp_path, monkeypatch):
    """A train call resolves its ModelConfig once (new run and resume alike), and resuming fills the
    one model it builds from the checkpoint instead of loading another."""
    from synthformer.model import ModelConfig
    from synthformer.model import transformer

    built, models, post_init = [], [], ModelConfig.__post_init__
    monkeypatch.setattr(ModelConfig, "__post_init__", lambda self: (built.append(1), post_init(self))[1])
    init = transformer.SynthformerModel.__init__
    monkeypatch.setattr(transformer.SynthformerModel, "__init__",
                        lambda self, *a, **k: (models.append(1), init(self, *a, **k))[1])
    run = tmp_path / "run"
    cfg = TrainConfig(task="lm", data=str(data["lm"]), out=str(run), steps=3, stop_after=2, batch_size=4, seq_len=24,
                      vocab_size=300, eval_every=0, eval_batches=1, threads=1, progress=False, warmup_steps=1)
    train(cfg, {"attention": "R+V", "num_layers": 1}, log=lambda m: None)
    assert len(built) == 1 and len(models) == 1
    built.clear(), models.clear()
    train(TrainConfig(**{**cfg.to_dict(), "stop_after": None, "resume": True}), log=lambda m: None)
    assert len(built) == 1 and len(models) == 1


def test_the_sequence_length_rule_is_one_function(tmp_path):
    """plan.seq_len: seq_len, else the model's max_seq_len (override, else preset), never longer."""
    from synthformer.training.plan import model_field, seq_len

    tiny = TrainConfig(preset="tiny")
    assert model_field(tiny, {}, "max_seq_len") == 128 and model_field(tiny, {"max_seq_len": 32}, "max_seq_len") == 32
    assert model_field(TrainConfig(preset="small"), {}, "max_seq_len") == 256 and model_field(tiny, {}, "pooling") == "mean"
    assert seq_len(tiny, 128) == 128 and seq_len(TrainConfig(seq_len=64), 128) == 64
    with pytest.raises(ConfigError, match="seq_len=256 is longer than the model's max_seq_len=128; lower seq_len"):
        seq_len(TrainConfig(seq_len=256), 128)
    code, _, err = main("train", "--seq_len", "200", "--max_seq_len", "100", "--out", tmp_path / "x", "--steps", "1")
    assert code == 2 and "seq_len=200 is longer than the model's max_seq_len=100" in err and not (tmp_path / "x").exists()


def test_encoder_only_mixers_pass_the_early_model_check_of_an_encoder_task(data, tmp_path):
    """The CLI checks model options before reading data for the task's own model kind: linformer fills
    a classifier's encoder (the old check built an lm and refused it as a decoder) but no lm decoder."""
    ok("train", "--task", "classify", "--data", data["classify"], "--attention", "linformer", "--out",
       tmp_path / "cls", *SMALL)
    assert json.loads((tmp_path / "cls" / "config.json").read_text())["model"]["attention"] == "linformer"
    code, _, err = main("train", "--task", "lm", "--data", data["lm"], "--attention", "linformer", "--out",
                        tmp_path / "lm", *SMALL)
    assert code == 2 and "cannot be used in a decoder" in err and not (tmp_path / "lm").exists()


def test_eval_test_decodes_the_whole_test_split_unless_told_otherwise(data, tmp_path):
    """Issue 18: BLEU on the whole test split, not a sample; validation keeps its small sample."""
    for extra, expect in (((), None), (("--test_decode_examples", "3"), 3)):
        run = tmp_path / f"run{len(extra)}"
        code, _, err = main("train", "--task", "seq2seq", "--data", data["seq2seq"], "--out", run, *SMALL,
                            "--decode_examples", "2", "--eval_test", "true", *extra)
        assert code == 0, err
        done = json.loads((run / "done.json").read_text())
        assert done["valid"]["decoded"] == 2
        assert done["test"]["decoded"] == (expect or done["test"]["decoded_of"]) and done["test"]["decoded_of"] > 3


def test_stop_after_at_the_resumed_step_trains_nothing(data, tmp_path):
    """Issue 50: `--stop_after 40` after a resume at 40 stopped at 41."""
    run = tmp_path / "run"
    cfg = TrainConfig(task="lm", data=str(data["lm"]), out=str(run), steps=5, stop_after=2, batch_size=4, seq_len=24,
                      vocab_size=300, eval_every=0, eval_batches=1, threads=1, progress=False, warmup_steps=1)
    assert train(cfg, {"num_layers": 1}, log=lambda m: None)["stopped_at"] == 2
    again = train(TrainConfig(**{**cfg.to_dict(), "stop_after": 2, "resume": True}), log=lambda m: None)
    assert again["stopped_at"] == 2
    assert json.loads((run / "checkpoints" / "latest.json").read_text())["step"] == 2
    later = train(TrainConfig(**{**cfg.to_dict(), "stop_after": 3, "resume": True}), log=lambda m: None)
    assert later["stopped_at"] == 3


def test_warmup_follows_the_budget_when_not_given():
    """Issue 50: warmup_steps=100 whatever --steps is (with --steps 20 the lr peaked at a fifth of lr)."""
    from synthformer.cli.compare import budget_defaults
    from synthformer.training.config import budget_warmup, lr_at

    assert budget_warmup(20, 100) == 2 and budget_warmup(1000, 100) == 100 and budget_warmup(5000, 100) == 100
    assert budget_warmup(400, 40) == 40 and budget_warmup(3, 40) == 1  # compare's default budget: unchanged
    cfg = TrainConfig(steps=20, warmup_steps=budget_warmup(20, 100), lr=1e-3)
    assert max(lr_at(s, cfg) for s in range(20)) == pytest.approx(1e-3)  # the lr reaches its peak
    over = {"steps": 20}
    budget_defaults(over, log=lambda m: None)
    assert over["warmup_steps"] == 2
    over = {"steps": 20, "warmup_steps": 7}
    budget_defaults(over, log=lambda m: None)
    assert over["warmup_steps"] == 7  # given: kept
    notes = []
    budget_defaults({}, log=notes.append)
    assert "lr 0.002 (train: 0.001)" in notes[0] and "vocab_size 2000 (train: 4000)" in notes[0]
    notes.clear()
    budget_defaults({"lr": 1e-3, "vocab_size": 4000, "steps": 1000, "warmup_steps": 100}, log=notes.append)
    assert not notes or "lr " not in notes[0]
    notes.clear()
    budget_defaults({"tokenizer": "char"}, log=notes.append)
    assert "vocab_size" not in notes[0]  # a character vocabulary has no size to choose

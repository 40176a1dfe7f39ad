"""Hardening, round three (issue 49, items 2-7): what a black-box attacker found. Every bad input is one
line (a SynthformerError, exit status 2), leaves nothing partial behind, and a limit that cannot be met is
refused before any work starts."""
from __future__ import annotations

import errno
import json
import os
import random
import shutil
from pathlib import Path

import pytest
import torch

from conftest import one_line_error, run_cli
from synthformer import SyntheticAttention
from synthformer.training.checkpoint import latest_checkpoint, save_checkpoint
from synthformer.errors import ConfigError, InputError
from synthformer.model import ModelConfig, build_model

WORDS = "the cat sat on a mat and dog ran to house with red blue green big small old new".split()
TINY = ["--steps", "2", "--batch_size", "4", "--seq_len", "16", "--vocab_size", "300", "--log_every", "1",
        "--eval_every", "0", "--eval_batches", "1", "--final_eval_batches", "1", "--threads", "1",
        "--progress", "false", "--warmup_steps", "1", "--embed_dim", "16", "--num_heads", "2", "--num_layers", "1",
        "--ffn_dim", "32", "--max_seq_len", "16"]


def write_text(folder: Path) -> Path:
    rng = random.Random(0)
    file = folder / "lm.txt"
    file.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 20))) for _ in range(120)) + "\n")
    return file


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A finished tiny run, trained from inside its folder's parent with a relative --data path."""
    home = tmp_path_factory.mktemp("home")
    write_text(home)
    cwd = os.getcwd()
    os.chdir(home)
    try:
        code, _, err = run_cli("train", "--data", "lm.txt", "--out", "run", *TINY)
    finally:
        os.chdir(cwd)
    assert code == 0, err[-2000:]
    return home / "run"


def copy_run(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest)
    return dest


# ----------------------------------------------------------------------------- item 2
@pytest.mark.parametrize("dtype", [torch.long, torch.int32, torch.uint8])
@pytest.mark.parametrize("variant", ["V", "R", "D+V"])
def test_integer_attn_mask_is_refused_as_multihead_attention_refuses_it(variant, dtype):
    """A 0/1 integer mask was added as a bias: the masked keys kept most of the weight. MultiheadAttention
    refuses such a mask; so does every variant, in one line naming the dtype and the fix."""
    x = torch.randn(2, 5, 8)
    mask = torch.zeros(5, 5, dtype=dtype)
    mask[:, 3:] = 1
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    with pytest.raises(AssertionError, match="bool and floating"):
        mha(x, x, x, attn_mask=mask)
    attn = SyntheticAttention(8, 2, 8, variant)
    with pytest.raises(InputError, match="attn_mask must be bool") as e:
        attn(x, attn_mask=mask, need_weights=True)
    assert str(dtype) in str(e.value) and ".bool()" in str(e.value) and "\n" not in str(e.value)
    # the fix it names masks those keys, as MultiheadAttention's bool mask does
    _, w = attn(x, attn_mask=mask.bool(), need_weights=True)
    assert w[..., 3:].abs().max() == 0


# ----------------------------------------------------------------------------- item 3
class Killed(BaseException):
    """A SIGKILL at one point of the start: nothing after it runs, no cleanup of train's (not an Exception)."""


@pytest.mark.parametrize("at", ["tokenizer.json", "manifest.json", "config.json"])
def test_a_start_killed_at_any_write_is_continued_by_the_same_command(tmp_path, monkeypatch, at):
    """A start killed between config.json and manifest.json left a folder that neither the same command nor
    --resume would take; now config.json is the last name to appear, so the same command starts it again."""
    data = write_text(tmp_path)
    run = tmp_path / "run"
    replace = os.replace

    def dies_at(src, dst, *a, **k):
        if Path(dst).name == at and Path(dst).parent == run:
            raise Killed(at)
        return replace(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", dies_at)
    with pytest.raises(Killed):
        run_cli("train", "--data", data, "--out", run, *TINY)
    monkeypatch.setattr(os, "replace", replace)
    assert not (run / "config.json").exists() or (run / "manifest.json").exists()
    code, _, err = run_cli("train", "--data", data, "--out", run, *TINY)
    assert code == 0, err[-2000:]
    assert (run / "done.json").is_file()


# ----------------------------------------------------------------------------- item 4
def _checkpoint(out: Path, step: int) -> None:
    folder = out / "checkpoints" / f"step-{step:08d}"
    folder.mkdir(parents=True)
    (folder / "state.pt").write_bytes(b"stale")


@pytest.mark.parametrize("pointer", [None, 2])
def test_rotation_never_deletes_the_newest_checkpoint(tmp_path, pointer):
    """latest.json deleted (as an error message advises) or a killed writer's higher-numbered checkpoint: the
    stale step-5 was kept and each new checkpoint deleted, so the run could make no progress."""
    _checkpoint(tmp_path, 5)
    if pointer is not None:
        _checkpoint(tmp_path, pointer)
        (tmp_path / "checkpoints" / "latest.json").write_text(json.dumps({"step": pointer, "path": f"step-{pointer:08d}"}))
    model = build_model(ModelConfig.preset("tiny", kind="lm", vocab_size=30, embed_dim=8, num_heads=2, num_layers=1,
                                           ffn_dim=8, max_seq_len=8))
    opt = torch.optim.AdamW(model.parameters())
    saved = save_checkpoint(tmp_path, 4, model, opt, [{}], {}, keep=1)
    assert (saved / "state.pt").is_file()
    assert latest_checkpoint(tmp_path) == saved
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("step-*")) == [saved.name]


# ----------------------------------------------------------------------------- item 5
def test_failures_are_one_line_and_leave_nothing(tmp_path, monkeypatch, trained):
    data = write_text(tmp_path)
    # a full disk while the run starts: no traceback, no .tokenizer.json.tmp-PID, no run folder
    fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    one_line_error(*run_cli("train", "--data", data, "--out", tmp_path / "full", *TINY)[::2], "No space left")
    monkeypatch.setattr(os, "fsync", fsync)
    assert not (tmp_path / "full").exists()
    # a run that diverges (lr 1e9 reached through the schedule) before its first checkpoint: one line, nothing left
    monkeypatch.setattr("synthformer.training.loop.lr_at", lambda step, cfg: 1e9)
    one_line_error(*run_cli("train", "--data", data, "--out", tmp_path / "nan", *TINY)[::2], "loss became")
    monkeypatch.undo()
    assert not (tmp_path / "nan").exists()
    # a config file that is not UTF-8
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"steps: \xff\xfe\n")
    one_line_error(*run_cli("train", "--config", bad)[::2], "not UTF-8")
    # generate: a prompt that is not UTF-8, a seed torch cannot take, a beam wider than the vocabulary
    one_line_error(*run_cli("generate", "--run", trained, "a\udcffb")[::2], "not valid UTF-8")
    one_line_error(*run_cli("generate", "--run", trained, "--seed", 2**64 + 1, "hi")[::2], "--seed")
    one_line_error(*run_cli("generate", "--run", trained, "--strategy", "beam", "--num-beams", 10**8, "hi")[::2],
                   "num_beams=100000000", "vocabulary")
    # refused before any work: a vocabulary the tokenizer cannot build
    one_line_error(*run_cli("train", "--data", data, "--out", tmp_path / "v", "--vocab_size=1000000000")[::2],
                   "vocab_size")
    assert not (tmp_path / "v").exists()
    # a run whose config.json holds an unknown train key and a consistent manifest: eval and generate name it
    run = copy_run(trained, tmp_path / "edited")
    stored = json.loads((run / "config.json").read_text())
    stored["train"]["bogus"] = 1
    (run / "config.json").write_text(json.dumps(stored))
    from synthformer.utils.integrity import write_manifest
    from synthformer.training.runs import UNFINISHED

    write_manifest(run, skip={"train.lock"} if (run / "done.json").exists() else UNFINISHED)
    for command in (["eval", "--run", run], ["generate", "--run", run, "hi"]):
        one_line_error(*run_cli(*command)[::2], "config.json", "bogus")
    # bench: a length of 0 and one no machine holds
    one_line_error(*run_cli("bench", "--scope", "layer", "--lengths", "0")[::2], "--lengths 0")
    one_line_error(*run_cli("bench", "--scope", "layer", "--lengths", "100000000")[::2], "--lengths 100000000")


@pytest.mark.slow
def test_a_file_size_limit_is_one_line_and_leaves_nothing(tmp_path):
    """A real `ulimit -f` in a second process: the checkpoint's weights hit it (safetensors' own error)."""
    import resource
    import subprocess
    import sys

    data, out = write_text(tmp_path), tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "synthformer.cli", "train", "--data", str(data), "--out", str(out),
                           *TINY], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"},
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384)))
    one_line_error(proc.returncode, proc.stderr, "File too large")
    assert not out.exists()


@pytest.mark.parametrize("variant", ["V", "R", "Fix", "FR", "FD", "R+V"])
def test_the_layer_names_bad_masks_and_inputs_in_one_line(variant):
    x = torch.randn(2, 5, 8)
    attn = SyntheticAttention(8, 2, 8, variant)
    bad = {"attn_mask": [torch.zeros(5, 5, dtype=torch.complex64), torch.zeros(3, 2, 5, 5), torch.zeros(2, 3, 5, 5),
                         torch.zeros(1, 3, 5, 5, dtype=torch.bool), torch.zeros(5, 5, device="meta")],
           "key_padding_mask": [torch.zeros(2, 5, dtype=torch.bool, device="meta")]}
    for name, masks in bad.items():
        for mask in masks:
            with pytest.raises(InputError):
                attn(x, **{name: mask})
    for wrong in (x.long(), x.double()):
        with pytest.raises(InputError):
            attn(wrong)
    # the meta device: shapes without data (the equations' path), for every variant
    meta = SyntheticAttention(8, 2, 8, variant).to("meta")
    out, w = meta(torch.randn(2, 5, 8, device="meta"), need_weights=False)
    assert out.shape == (2, 5, 8) and out.device.type == "meta"


def test_generate_refuses_a_nan_temperature():
    model = build_model(ModelConfig.preset("tiny", kind="lm", vocab_size=30, embed_dim=8, num_heads=2, num_layers=1,
                                           ffn_dim=8, max_seq_len=8))
    for bad in (float("nan"), float("inf"), 0.0):
        with pytest.raises(InputError, match="temperature"):
            model.generate(torch.tensor([[1, 2]]), strategy="sample", temperature=bad)


# ----------------------------------------------------------------------------- item 6
def test_nonsense_is_refused_before_any_work(tmp_path):
    data = write_text(tmp_path)
    out = tmp_path / "run"
    for args, needle in [(["--steps=10000000000000000000000"], "steps="),
                         (["--max_seq_len=10000000", "--attention", "V"], "GiB")]:
        one_line_error(*run_cli("train", "--data", data, "--out", out, *args)[::2], needle)
        assert not out.exists()
    for variants in ("V,", "V,,R"):
        one_line_error(*run_cli("compare", "--variants", variants, "--steps", 1, "--out", out)[::2], "empty item")
        assert not out.exists()
    one_line_error(*run_cli("data", "show", data, "-n", -1)[::2], "-n -1")
    for option, value in (("--tokens", 0), ("--warmup", -1), ("--threads", 0)):
        one_line_error(*run_cli("bench", "--scope", "layer", "--lengths", 8, option, value)[::2], option)
    with pytest.raises(ConfigError, match="num_heads=True"):
        SyntheticAttention(8, True, 8, "V")
    with pytest.raises(ConfigError, match="max_seq_len=8.5"):
        SyntheticAttention(8, 2, 8.5, "V")


# ----------------------------------------------------------------------------- item 7
def test_smaller_ones(tmp_path, trained):
    # --data is stored resolved: the run evaluates from any folder
    assert json.loads((trained / "config.json").read_text())["train"]["data"] == str((trained.parent / "lm.txt").resolve())
    code, _, err = run_cli("eval", "--run", trained, "--max-batches", "1")
    assert code == 0, err[-2000:]
    # reproduce with a device that is not one leaves nothing
    out = tmp_path / "repro"
    one_line_error(*run_cli("reproduce", "table2", "--device", "tpu", "--out", out)[::2], "tpu")
    assert not out.exists()
    # a finished run whose model/ was deleted: what is missing, not "not finished"
    run = copy_run(trained, tmp_path / "no-model")
    shutil.rmtree(run / "model")
    code, _, err = run_cli("eval", "--run", run, "--max-batches", "1")
    assert code == 0 and "not finished" not in err and "missing" in err, err[-2000:]
    # a tokenizer.json that is a link to a device
    run = copy_run(trained, tmp_path / "dev")
    (run / "tokenizer.json").unlink()
    (run / "tokenizer.json").symlink_to("/dev/zero")
    one_line_error(*run_cli("eval", "--run", run)[::2], "not a regular file")
    # a tuple in Python's syntax is taken; another spelling is told the syntax
    code, _, err = run_cli("train", "--data", write_text(tmp_path), "--out", tmp_path / "fd", "--dense_factors=(3,5)",
                           "--attention", "FD", "--max_seq_len", "16", "--steps", "1", "--threads", "1")
    one_line_error(code, err, "multiply to 15")  # parsed: the pair itself is then checked
    one_line_error(*run_cli("train", "--dense_factors=3x5")[::2], "written 4,8 or [4, 8]")
    # argparse's usage errors: one line, exit 2
    for argv in (["eval"], ["nosuch"], ["compare", "--steps", "x"], ["reproduce", "table2", "--bogus"]):
        code, _, err = run_cli(*argv)
        one_line_error(code, err, "--help")
        assert len(err.strip().splitlines()) == 1, err

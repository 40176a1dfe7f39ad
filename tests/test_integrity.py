"""Checkpoint integrity (issue 8): manifests with the SHA-256 of every file, verified on load, resume,
eval and generate; durable writes (fsync before rename); stale temporary files of killed writers;
``load`` of a run folder and in eval mode."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

from conftest import one_line_error, run_cli
from synthformer.utils.integrity import MissingManifestWarning, trust_unverified
from synthformer.model import CheckpointError, ModelConfig, build_model, load

TINY = ["--steps", "3", "--batch_size", "4", "--seq_len", "16", "--vocab_size", "280", "--eval_every", "0",
        "--eval_batches", "1", "--checkpoint_every", "1", "--keep_checkpoints", "2", "--threads", "1",
        "--progress", "false", "--warmup_steps", "1", "--max_examples", "120", "--embed_dim", "32",
        "--num_layers", "1", "--ffn_dim", "64", "--max_seq_len", "32", "--decode_examples", "0"]


main = run_cli  # the CLI in this process


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """One finished run and one stopped after step 2 (both tiny), copied by each test that damages them."""
    base = tmp_path_factory.mktemp("runs")
    text = base / "lm.txt"
    words = "the cat sat on a mat and dog ran to house with red blue green big small old new".split()
    text.write_text("".join(" ".join(words[(i * 7 + j) % len(words)] for j in range(12)) + "\n" for i in range(200)))
    done, stopped = base / "done", base / "stopped"
    for out, extra in ((done, []), (stopped, ["--stop_after", "2"])):
        code, _, err = main("train", "--data", text, "--out", out, *TINY, *extra)
        assert code == 0, err[-2000:]
    return {"done": done, "stopped": stopped}


def copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / run.name))


def flip_safetensors_data(file: Path) -> None:
    """Flip one bit in the middle of the tensor data (past the JSON header)."""
    raw = bytearray(file.read_bytes())
    start = 8 + int.from_bytes(raw[:8], "little")
    raw[start + (len(raw) - start) // 2] ^= 0x10
    file.write_bytes(bytes(raw))


def flip_state_tensor_data(file: Path) -> None:
    """Flip one bit inside the largest tensor storage of state.pt (zip CRCs are never checked by torch)."""
    with zipfile.ZipFile(file) as z:
        info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    raw = bytearray(file.read_bytes())
    name_len = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little")
    extra_len = int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    raw[start + info.file_size // 2] ^= 0x10
    file.write_bytes(bytes(raw))


# ----------------------------------------------------------------------------- manifests
def test_every_checkpoint_folder_has_a_manifest_of_every_file(runs):
    for folder, names in ((runs["done"] / "model", {"config.json", "model.safetensors"}),
                          (runs["done"] / "checkpoints" / "step-00000003", {"config.json", "model.safetensors",
                                                                           "state.pt"})):
        manifest = json.loads((folder / "manifest.json").read_text())
        assert set(manifest["files"]) == names
        import hashlib
        for name, entry in manifest["files"].items():
            assert entry["sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()


def test_a_bit_flip_in_the_weights_is_caught_by_load_eval_and_generate(runs, tmp_path):
    run = copy(runs["done"], tmp_path)
    flip_safetensors_data(run / "model" / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: contents differ from manifest\.json"):
        load(run / "model")
    code, _, err = main("eval", "--run", run, "--threads", "1", "--max-batches", "1")
    one_line_error(code, err, "model.safetensors", "SHA-256")
    code, _, err = main("generate", "--run", run, "the cat", "--max-new-tokens", "2")
    one_line_error(code, err, "model.safetensors", "SHA-256")


def test_a_bit_flip_in_state_pt_refuses_resume_in_one_line(runs, tmp_path):
    run = copy(runs["stopped"], tmp_path)
    state = run / "checkpoints" / "step-00000002" / "state.pt"
    flip_state_tensor_data(state)
    torch.load(state, weights_only=True)  # torch itself does not notice: the manifest must
    code, _, err = main("train", "--resume", "--out", run)
    one_line_error(code, err, "state.pt", "SHA-256")
    assert not (run / "done.json").exists()


def test_a_missing_or_changed_file_is_named(runs, tmp_path):
    run = copy(runs["stopped"], tmp_path)
    ckpt = run / "checkpoints" / "step-00000002"
    (ckpt / "state.pt").unlink()
    with pytest.raises(CheckpointError, match=r"state\.pt: missing \(manifest\.json lists it\)"):
        load(ckpt)
    (ckpt / "manifest.json").write_text("{broken")
    with pytest.raises(CheckpointError, match=r"manifest\.json: not a valid manifest"):
        load(ckpt)


@pytest.mark.parametrize("manifest", [None, '{"manifest_version": 1, "algorithm": "sha256", "files": {}}'])
def test_a_folder_without_a_usable_manifest_is_refused_unless_trusted(tmp_path, manifest):
    cfg = ModelConfig.preset("tiny", embed_dim=32, num_layers=1, ffn_dim=64, vocab_size=50, max_seq_len=16)
    model = build_model(cfg)
    model.save(tmp_path / "old")
    if manifest is None:
        (tmp_path / "old" / "manifest.json").unlink()  # as saved before manifests existed
    else:
        (tmp_path / "old" / "manifest.json").write_text(manifest)
    with pytest.raises(CheckpointError, match="cannot be verified.*--trust-unverified"):
        load(tmp_path / "old")
    with trust_unverified(), pytest.warns(MissingManifestWarning, match="without an integrity check"):
        again = load(tmp_path / "old")
    assert again.config == cfg


# ----------------------------------------------------------------------------- the run folder's own files
def test_the_run_manifest_covers_every_file_of_the_run_folder(runs):
    for run, unlisted in ((runs["done"], set()), (runs["stopped"], {"metrics.jsonl"})):
        files = {p.name for p in run.iterdir() if p.is_file()} - {"manifest.json"}
        listed = set(json.loads((run / "manifest.json").read_text())["files"])
        assert {"config.json", "tokenizer.json"} <= listed and listed == files - unlisted
    assert {"done.json", "metrics.jsonl"} <= set(json.loads((runs["done"] / "manifest.json").read_text())["files"])


def _edit_run_file(run: Path, name: str) -> None:
    if name == "config.json":  # one digit of the learning rate
        text = (run / name).read_text()
        (run / name).write_text(text.replace('"lr": 0.001', '"lr": 0.002', 1))
        assert (run / name).read_text() != text
    elif name == "tokenizer.json":  # one vocabulary id
        text = (run / name).read_text()
        (run / name).write_text(re.sub(r'(":\s?)270,', r'\g<1>269,', text, count=1))
        assert (run / name).read_text() != text
    else:
        (run / name).write_text((run / name).read_text().replace('"step": 3', '"step": 4', 1))


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "done.json", "metrics.jsonl"])
def test_an_edited_run_file_is_refused_by_eval_and_generate(runs, tmp_path, name):
    run = copy(runs["done"], tmp_path)
    _edit_run_file(run, name)
    one_line_error(*main("eval", "--run", run, "--threads", "1", "--max-batches", "1")[::2],
                   str(run / name), "differ from manifest.json")
    one_line_error(*main("generate", "--run", run, "the cat", "--max-new-tokens", "2")[::2],
                   str(run / name), "differ from manifest.json")


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json"])
def test_an_edited_run_file_is_refused_on_resume(runs, tmp_path, name):
    run = copy(runs["stopped"], tmp_path)
    _edit_run_file(run, name)
    one_line_error(*main("train", "--resume", "--out", run)[::2], str(run / name), "differ from manifest.json")
    assert not (run / "done.json").exists()


@pytest.mark.parametrize("damage", ["delete", "empty", "added"])
def test_a_run_without_a_usable_manifest_needs_trust_unverified(runs, tmp_path, damage):
    run = copy(runs["done"], tmp_path)
    if damage == "delete":
        (run / "manifest.json").unlink()
    elif damage == "empty":
        (run / "manifest.json").write_text('{"files": {}}')
    else:
        (run / "attention.png").write_bytes(b"figure")  # a file synthformer never reads: allowed
        manifest = json.loads((run / "manifest.json").read_text())
        del manifest["files"]["tokenizer_meta.json"]  # a file read by name, unlisted: refused
        (run / "manifest.json").write_text(json.dumps(manifest))
    args = ("eval", "--run", run, "--threads", "1", "--max-batches", "1")
    if damage == "added":
        one_line_error(*main(*args)[::2], "tokenizer_meta.json", "not covered by")
        return
    one_line_error(*main(*args)[::2], str(run), "cannot be verified", "--trust-unverified")
    code, out, err = main(*args, "--trust-unverified")
    assert code == 0 and json.loads(out)["split"] == "valid", err[-2000:]
    run = copy(runs["stopped"], tmp_path / "s")
    (run / "checkpoints" / "step-00000002" / "manifest.json").unlink()
    one_line_error(*main("train", "--resume", "--out", run)[::2], "step-00000002", "--trust-unverified")
    code, _, err = main("train", "--resume", "--out", run, "--trust-unverified")
    assert code == 0, err[-2000:]


def test_latest_json_pointing_out_of_the_run_is_refused(runs, tmp_path):
    run, other = copy(runs["stopped"], tmp_path), copy(runs["done"], tmp_path / "o")
    ckpts = run / "checkpoints"
    (ckpts / "step-00000009").symlink_to(other / "checkpoints" / "step-00000003")
    (ckpts / "latest.json").write_text('{"step": 9, "path": "step-00000009"}')
    for args in (("eval", "--run", run, "--max-batches", "1"), ("train", "--resume", "--out", run)):
        one_line_error(*main(*args)[::2], "latest.json", "link out of")
    for pointer in ('{"path": "../../done/checkpoints/step-00000003"}', '{"path": ".."}',
                    '{"step": 1, "path": "step-00000002"}'):
        (ckpts / "latest.json").write_text(pointer)
        one_line_error(*main("eval", "--run", run, "--max-batches", "1")[::2], "not a valid checkpoint pointer")


# ----------------------------------------------------------------------------- load()
def test_load_returns_eval_mode_and_follows_a_run_folder_to_its_model(runs, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a verified folder loads without a warning
        model = load(runs["done"])
    assert not model.training and not any(m.training for m in model.modules())
    torch.testing.assert_close(model.state_dict(), load(runs["done"] / "model").state_dict(), rtol=0, atol=0)
    with pytest.raises(CheckpointError, match=r"is a run folder without a final model.*checkpoints"):
        load(runs["stopped"])


# ----------------------------------------------------------------------------- durable writes
def test_checkpoint_files_are_fsynced_before_the_rename(runs, tmp_path, monkeypatch):
    import synthformer.utils.integrity as integrity
    from synthformer.training.checkpoint import save_checkpoint

    synced = []
    real = os.fsync
    monkeypatch.setattr(integrity.os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                           real(fd))[1])
    model = load(runs["done"])
    opt = torch.optim.AdamW(model.parameters())
    out = tmp_path / "run"
    save_checkpoint(out, 7, model, opt, [{}], {"tokens": 0}, keep=1)
    tmp = [Path(p) for p in synced if ".step-00000007.tmp-" in p]
    assert {p.name for p in tmp} >= {"model.safetensors", "config.json", "state.pt"}  # files, before the rename
    assert any(p.name.startswith(".manifest.json.tmp-") for p in tmp)
    assert str(out / "checkpoints") in synced  # the folder, after the rename
    assert (out / "checkpoints" / "step-00000007" / "manifest.json").is_file()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporary_files_are_removed_at_the_next_save_but_not_a_live_writers(runs, tmp_path):
    from synthformer.training.checkpoint import save_checkpoint

    out = tmp_path / "run"
    folder = out / "checkpoints"
    folder.mkdir(parents=True)
    dead, live = _dead_pid(), os.getppid()
    (folder / f".step-00000003.tmp-{dead}").mkdir()
    (folder / f".latest.json.tmp-{dead}").write_text("{")
    (folder / f".step-00000004.tmp-{live}").mkdir()
    model = load(runs["done"])
    save_checkpoint(out, 5, model, torch.optim.AdamW(model.parameters()), [{}], {"tokens": 0}, keep=1)
    assert sorted(p.name for p in folder.iterdir()) == [f".step-00000004.tmp-{live}", "latest.json", "step-00000005"]
    (out / "model").mkdir()
    (out / "model" / f".save.tmp-{dead}-abc").mkdir()
    model.save(out / "model")
    assert sorted(p.name for p in (out / "model").iterdir()) == ["config.json", "manifest.json", "model.safetensors"]


# ----------------------------------------------------------------------------- a concurrent writer
WRITER = """
import sys, time, torch
from pathlib import Path
from synthformer.training.checkpoint import save_checkpoint
from synthformer.model import ModelConfig, build_model
out = Path(sys.argv[1])
torch.manual_seed(0)
model = build_model(ModelConfig.preset("tiny", embed_dim=32, num_layers=1, ffn_dim=64, vocab_size=50, max_seq_len=16))
opt = torch.optim.AdamW(model.parameters())
step, end = 0, time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:  # a new checkpoint every step, the previous one removed (keep=1)
    step += 1
    save_checkpoint(out, step, model, opt, [{}], {"tokens": step}, keep=1)
    print(step, flush=True)
"""


@pytest.mark.slow  # 19 s: a writer process rotating checkpoints
def test_loads_while_another_process_rotates_checkpoints_every_step(tmp_path):
    """A reader (as eval and generate read: the latest checkpoint, then its files) never fails while a
    second process writes a checkpoint and deletes the previous one as fast as it can."""
    from synthformer.training.runs import load_model, run_model_folder

    out = tmp_path / "run"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out), "4"], stdout=subprocess.PIPE, text=True)
    try:
        while not (out / "checkpoints" / "latest.json").exists():
            assert writer.poll() is None, "the writer died"
        loads, seen = 0, set()
        while writer.poll() is None:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                folder, finished = run_model_folder(out)
                model = load_model(folder)
            assert not finished and model.config.vocab_size == 50
            loads += 1
            seen.add(folder.name)
    finally:
        writer.kill()
    steps = writer.stdout.read().split()
    assert writer.wait() in (0, -9) and len(steps) > 20 and loads > 20 and len(seen) > 5, (len(steps), loads, len(seen))


def test_a_reader_slower_than_every_rotation_is_not_starved(tmp_path):
    """A read that lasts several of the writer's steps (a busy machine, a big model) still completes: the
    folder it holds survives the rotations that happen meanwhile, and goes at a later one."""
    import time

    from synthformer.training.checkpoint import _pointed, read_latest

    out = tmp_path / "run"
    pointer = out / "checkpoints" / "latest.json"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out), "6"], stdout=subprocess.PIPE, text=True)

    def slow_load(folder):  # waits until the writer has moved on twice, then reads the held folder
        first = int(_pointed(pointer)[5:])
        deadline = time.monotonic() + 5
        while int(_pointed(pointer)[5:]) < first + 2:
            assert writer.poll() is None and time.monotonic() < deadline, "the writer stopped"
        return load(folder)

    try:
        while not pointer.exists():
            assert writer.poll() is None, "the writer died"
        held = []
        for _ in range(3):
            folder, model = read_latest(out, slow_load)
            assert model.config.vocab_size == 50
            held.append(folder)
        moved_on = int(_pointed(pointer)[5:])
    finally:
        writer.kill()
        writer.wait()
    assert all(int(f.name[5:]) + 2 <= moved_on for f in held), (held, moved_on)
    assert not held[0].exists() and not held[1].exists()  # released, they went at the rotations after


def test_recorded_json_keeps_number_lists_on_one_line_and_loads_back_equal(tmp_path):
    from synthformer.utils.integrity import read_recorded, write_recorded_json
    obj = {"variants": [{"variant": "V", "seeds": [{"seed": 1, "items": {"n": 3, "loss_sum": [1.5, 2.25, float("inf")],
                                                                       "text": {"bleu": [[2, 1], [0, 0]]}}}]}],
           "empty": {}, "none": [], 7: None, "path": Path("/x"), "tuple": (1, "a")}
    write_recorded_json(tmp_path, tmp_path / "results.json", obj)
    text = read_recorded(tmp_path, tmp_path / "results.json", "fix")
    assert json.loads(text) == json.loads(json.dumps(obj, default=str))
    lines = text.splitlines()
    assert '"loss_sum": [1.5, 2.25, Infinity],' in {line.strip() for line in lines}  # a list of numbers: one line
    assert '"bleu": [[2, 1], [0, 0]]' in {line.strip() for line in lines}
    assert '"variant": "V",' in {line.strip() for line in lines}  # objects: one key per line
    assert text.endswith("}\n") and len(lines) == 24

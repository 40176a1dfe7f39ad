"""`synthformer export hf` against damaged and hostile run folders (issue 21, item 5): the run is opened as
eval opens it (manifest, latest.json inside the run), --out may not mix files into a run, a failed export
leaves no folder (or the earlier export unchanged), and tokenizer errors are one line.

Every case starts from a copy of one real run trained through the CLI (two steps, tiny model).
"""
from __future__ import annotations

import errno
import hashlib
import json
import random
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from conftest import one_line_error, run_cli  # noqa: E402

WORDS = "the cat sat on a mat and dog ran".split()


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A finished two-step LM run (char tokenizer) trained by `synthformer train`."""
    root = tmp_path_factory.mktemp("export_run")
    rng = random.Random(0)
    (root / "lm.txt").write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(60)))
    code, _, err = run_cli("train", "--task", "lm", "--data", root / "lm.txt", "--tokenizer", "char", "--steps", 2,
                           "--batch_size", 2, "--seq_len", 16, "--embed_dim", 16, "--num_heads", 2, "--num_layers", 1,
                           "--ffn_dim", 32, "--max_seq_len", 16, "--eval_every", 0, "--log_every", 1,
                           "--warmup_steps", 1, "--threads", 1, "--progress", "false", "--out", root / "run")
    assert code == 0, err
    return root / "run"


@pytest.fixture
def run(trained, tmp_path) -> Path:
    """A private copy of the trained run (each test may damage it)."""
    shutil.copytree(trained, tmp_path / "run", symlinks=True)
    return tmp_path / "run"


def export(run, out, *extra):
    return run_cli("export", "hf", "--run", run, "--out", out, *extra)


def snapshot(folder: Path) -> dict:
    """Every path under ``folder`` with the SHA-256 of its bytes (None for folders)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}


def test_a_run_exports_and_an_unfinished_run_exports_its_own_checkpoint(run, tmp_path):
    assert export(run, tmp_path / "hf")[0] == 0
    shutil.rmtree(run / "model")  # as if killed before the end: the latest checkpoint is used
    code, _, err = export(run, tmp_path / "hf_ckpt")
    assert code == 0, err
    assert json.loads((tmp_path / "hf_ckpt" / "config.json").read_text())["model_type"] == "synthformer"


def point_elsewhere(run: Path, tmp_path: Path, how: str) -> None:
    """checkpoints/latest.json of ``run`` names another run's checkpoint (or is damaged)."""
    other = tmp_path / "other"
    shutil.copytree(run, other)
    shutil.rmtree(run / "model")  # unfinished: export must use latest.json
    ckpt = next((other / "checkpoints").glob("step-*"))
    pointer = run / "checkpoints" / "latest.json"
    if how == "relative path":
        pointer.write_text(json.dumps({"step": 2, "path": f"../../other/checkpoints/{ckpt.name}"}))
    elif how == "absolute path":
        pointer.write_text(json.dumps({"step": 2, "path": str(ckpt)}))
    elif how == "link":
        (run / "checkpoints" / "step-00000009").symlink_to(ckpt, target_is_directory=True)
        pointer.write_text(json.dumps({"step": 9, "path": "step-00000009"}))
    else:  # not UTF-8
        pointer.write_bytes(b"\xff\xfe{")


@pytest.mark.parametrize("how", ["relative path", "absolute path", "link", "damaged"])
def test_latest_json_naming_another_runs_checkpoint_is_one_line(run, tmp_path, how):
    point_elsewhere(run, tmp_path, how)
    code, _, err = export(run, tmp_path / "hf")
    one_line_error(code, err, "latest.json")
    assert not (tmp_path / "hf").exists()


def test_a_changed_run_file_is_refused_unless_trusted_without_a_manifest(run, tmp_path):
    config = run / "config.json"
    stored = json.loads(config.read_text())
    stored["train"]["lr"] *= 2  # another run's settings
    config.write_text(json.dumps(stored))
    code, _, err = export(run, tmp_path / "hf")
    one_line_error(code, err, "config.json", "manifest.json")
    (run / "manifest.json").unlink()
    code, _, err = export(run, tmp_path / "hf")
    one_line_error(code, err, "manifest.json", "--trust-unverified")
    assert not (tmp_path / "hf").exists()
    code, _, err = export(run, tmp_path / "hf", "--trust-unverified")
    assert code == 0, err


@pytest.mark.parametrize("where", ["checkpoints", "model/hf", "new", ".", ".."])
def test_out_inside_or_holding_the_run_is_refused(run, where):
    out = run / where
    before = snapshot(run.parent)
    code, _, err = export(run, out)
    one_line_error(code, err, str(out))
    assert snapshot(run.parent) == before  # nothing written, nothing mixed into the run


def test_out_inside_another_run_is_refused(run, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(run, other)
    code, _, err = export(run, other / "checkpoints" / "hf")
    one_line_error(code, err, "manifest.json", str(other))
    assert not (other / "checkpoints" / "hf").exists()


def break_tokenizer(run: Path, meta) -> None:
    """Replace the run's tokenizer_meta.json (its manifest removed: exported with --trust-unverified)."""
    (run / "manifest.json").unlink(missing_ok=True)
    (run / "tokenizer_meta.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))


def test_a_failed_export_leaves_no_folder_and_keeps_an_earlier_export(run, tmp_path):
    out = tmp_path / "parent" / "hf"
    meta = json.loads((run / "tokenizer_meta.json").read_text())
    break_tokenizer(run, dict(meta, chars="abc"))  # fails after the model would have been written
    code, _, err = export(run, out, "--trust-unverified")
    one_line_error(code, err, "tokenizer_meta.json")
    assert not (tmp_path / "parent").exists()  # not even the parent it would have created

    (run / "tokenizer_meta.json").write_text(json.dumps(meta))
    assert export(run, out, "--trust-unverified")[0] == 0
    earlier = snapshot(out)
    break_tokenizer(run, dict(meta, chars="abc"))
    code, _, err = export(run, out, "--trust-unverified")
    one_line_error(code, err, "tokenizer_meta.json")
    assert snapshot(out) == earlier
    assert [p.name for p in out.parent.iterdir()] == ["hf"]  # no temporary folder left


def test_a_write_that_fails_midway_leaves_the_earlier_export(run, tmp_path, monkeypatch):
    """Fault injection (a full disk cannot be made on demand): the weights' write fails after some bytes."""
    import synthformer.hf as H

    out = tmp_path / "hf"
    assert export(run, out)[0] == 0
    earlier = snapshot(out)

    def full_disk(self, folder, **kw):
        (Path(folder) / "model.safetensors").write_bytes(b"\0" * 100)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(H.SynthformerPreTrainedModel, "save_pretrained", full_disk)
    code, _, err = export(run, out)
    one_line_error(code, err, str(out), "No space left on device")
    assert snapshot(out) == earlier
    assert [p.name for p in tmp_path.iterdir() if p.name != "run"] == ["hf"]  # no temporary folder left
    code, _, err = export(run, tmp_path / "new")
    one_line_error(code, err, "No space left on device")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("meta", [{"kind": ["char"]}, "[" * 100_000 + "]" * 100_000],
                         ids=["unhashable kind", "deeply nested"])
def test_tokenizer_errors_are_one_line(run, tmp_path, meta):
    break_tokenizer(run, meta)
    code, _, err = export(run, tmp_path / "hf", "--trust-unverified")
    one_line_error(code, err, "tokenizer")
    assert not (tmp_path / "hf").exists()

"""Issue 50, "The first hour of a new user": the papercuts a newcomer met, one test each (the table, warm-up,
tokenizer cache, curves, stop_after and data show tests sit beside their features: test_compare, test_train,
test_data, test_plots)."""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
WORDS = "hello how are you doing today fine thanks what about the weather is nice here".split()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny finished LM run (2 steps) with max_seq_len 16."""
    rng = random.Random(0)
    folder = tmp_path_factory.mktemp("first-hour")
    data = folder / "d.txt"
    data.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(300)) + "\n")
    code, _, err = run_cli("train", "--data", data, "--out", folder / "run", "--steps", "2", "--vocab_size", "300",
                           "--seq_len", "16", "--max_seq_len", "16", "--batch_size", "4", "--progress", "false")
    assert code == 0, err
    return folder / "run"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_quick_start_names_the_extra_that_model_save_needs():
    block = next(b for b in _python_blocks(README) if "model.save(" in b)
    assert "[train]" in block.split("model.save(")[1].splitlines()[0]  # said on the line that needs it


def test_readme_quick_starts_import_synthformer_before_torch():
    """On the core install (no numpy) `import torch` first prints "Failed to initialize NumPy"; synthformer
    silences it when imported first."""
    for block in _python_blocks(README)[:2]:
        lines = [line for line in block.splitlines() if line.startswith(("import ", "from "))]
        first_torch = next(i for i, line in enumerate(lines) if line.startswith("import torch"))
        assert any("synthformer" in line for line in lines[:first_torch]), block[:200]


def test_importing_synthformer_first_keeps_torch_quiet_without_numpy(tmp_path):
    code = ("import importlib.abc, sys\n"
            "class Block(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'numpy':\n"
            "            raise ModuleNotFoundError('blocked', name=name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import synthformer, torch\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0 and "Failed to initialize NumPy" not in res.stderr, res.stderr


def _help(capsys, *args) -> str:
    from synthformer.cli import main as cli_main

    with pytest.raises(SystemExit) as stop:
        cli_main([*args, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_tokenizer_help_lists_every_tokenizer(capsys):
    from synthformer.data.tokenizer import TOKENIZERS

    text = _help(capsys, "train").split("--tokenizer=")[1].split("\n  --")[0]
    assert all(name in text for name in TOKENIZERS), text


def test_truncation_notes_are_log_lines_not_raw_warnings(tmp_path):
    from synthformer.training.config import TrainConfig
    from synthformer.training.task_data import prepare_data

    data = tmp_path / "labels.tsv"
    rng = random.Random(1)
    data.write_text("".join(f"{i % 2}\t{' '.join(rng.choice(WORDS) for _ in range(30))}\n" for i in range(200)))
    lines = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a raw warning would fail here
        prepare_data(TrainConfig(task="classify", data=str(data), vocab_size=300), 8, log=lines.append)
    notes = [line for line in lines if line.startswith("note: ")]
    assert notes and "truncated" in notes[0] and "longer than max_len" in notes[0]


def test_generate_says_when_it_stops_at_max_seq_len(run):
    code, out, err = run_cli("generate", "--run", run, "hello how", "--max-new-tokens", "40")
    assert code == 0, err
    assert "stopped at the model's max_seq_len=16" in err and "--max-new-tokens=40" in err
    code, _, err = run_cli("generate", "--run", run, "hello", "--max-new-tokens", "2")
    assert code == 0 and "max_seq_len" not in err


def test_hf_export_has_a_model_card_and_generates_without_warnings(run, tmp_path):
    pytest.importorskip("transformers")
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    out = tmp_path / "hf"
    code, _, err = run_cli("export", "hf", "--run", run, "--out", out)
    assert code == 0, err
    assert "max_length" not in json.loads((out / "generation_config.json").read_text())
    card = (out / "README.md").read_text()
    for part in ("| attention | `vanilla` |", "| data |", "2 of 2 steps x 4 sequences", "| validation | loss ",
                 "license: mit", "AutoModelForCausalLM.from_pretrained(\"PATH\", trust_remote_code=True)"):
        assert part in card, part
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True)
    hf_logging.set_verbosity_warning()
    seen = []
    handler = type("H", (__import__("logging").Handler,), {"emit": lambda self, r: seen.append(r.getMessage())})()
    hf_logging.get_logger("transformers").addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ids = torch.tensor([[2, 7, 8, 9]])
            assert model.generate(ids, max_new_tokens=3).shape == (1, 7)
            assert model.generate(ids).shape[1] == 16  # no budget asked: up to max_seq_len, as before
    finally:
        hf_logging.get_logger("transformers").removeHandler(handler)
    said = seen + [str(w.message) for w in caught]
    assert not [m for m in said if "max_length" in m or "past_key_values" in m], said


def test_export_onnx_is_a_command(run, tmp_path, capsys):
    out = _help(capsys, "export", "onnx")
    assert "--run" in out and "onnxscript" in out
    code, _, err = run_cli("export", "onnx", "--run", tmp_path / "nothing", "--out", tmp_path / "m.onnx")
    assert code == 2 and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_export_onnx_runs_in_onnxruntime(run, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    import numpy as np
    import torch

    from synthformer.training.plan import open_trained

    code, out, err = run_cli("export", "onnx", "--run", run, "--out", tmp_path / "lm.onnx")
    assert code == 0, err
    session = ort.InferenceSession(str(tmp_path / "lm.onnx"), providers=["CPUExecutionProvider"])
    model = open_trained(run).model
    for batch, length in ((1, 3), (3, 16)):
        x = torch.randint(6, model.config.vocab_size, (batch, length))
        (logits,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        with torch.no_grad():
            np.testing.assert_allclose(logits, model(x).numpy(), rtol=1e-4, atol=1e-4)


def test_no_floor_banner_of_compare_points_to_what_an_installed_package_has():
    from synthformer.evidence.tables import INSTALLED_SIZING, SIZING, floor_line

    rows = [{"variant": "V", "metrics": {"ppl": 90.0}}, {"variant": "floor", "floor": True, "metrics": {"ppl": 80.0}}]
    line = floor_line(rows, "lm", sizing=INSTALLED_SIZING)
    assert "synthformer reproduce --list" in line and "reproductions/" not in line
    assert SIZING in floor_line(rows, "lm")  # reproduce's reports keep theirs


def test_make_installs_torch_from_the_cpu_wheel_index():
    """`make test` installed torch==2.13.0 without PyTorch's CPU index: on plain PyPI, the multi-GB CUDA build."""
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^TORCH_INDEX \?= https://download\.pytorch\.org/whl/cpu$", makefile, flags=re.M)
    rule = makefile.split("$(STAMP):")[1].split("\n\n")[0]
    torch_line = next(line for line in rule.splitlines() if "$(TORCH_INDEX)" in line)
    # an extra index for torch alone (the configured index and local wheels still count: offline it works),
    # before the requirements, whose torch pin it then satisfies
    assert "--extra-index-url $(TORCH_INDEX)" in torch_line and "grep '^torch==' requirements.txt" in torch_line
    assert rule.index("$(TORCH_INDEX)") < rule.index("-r requirements.txt")

"""docs/export.md runs as written: its `synthformer train` line (with a tiny budget added) makes the run,
its `synthformer export hf` line exports it, and each Python block runs in a fresh process in that folder."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "export.md"
TEXT = DOC.read_text()
HEADS = re.findall(r"^## ([^\n]+)", TEXT, flags=re.M)


def blocks_of(section: str | None, lang: str) -> list[str]:
    """The `lang` blocks under the heading `section` (None: before the first heading)."""
    current, found = None, []
    for m in re.finditer(r"^## (?P<head>[^\n]+)|^```(?P<lang>\w+)\n(?P<code>.*?)^```", TEXT, flags=re.S | re.M):
        if m["head"]:
            current = m["head"].strip()
        elif m["lang"] == lang and current == section:
            found.append(m["code"])
    return found


def commands(code: str, name: str) -> list[list[str]]:
    """The `synthformer NAME ...` lines of a bash block, comments dropped, as argv lists."""
    return [shlex.split(line, comments=True) for line in code.splitlines() if line.startswith(f"synthformer {name}")]


# Each section's extra packages (import name, what to install) and whether its block is slow (> ~20 s).
NEEDS = {"ONNX": (("onnx", "onnxscript", "onnxruntime"), "pip install onnx onnxscript onnxruntime"),
         "torch.export": ((), ""),
         "Hugging Face": (("transformers",), "pip install 'synthformer[hf]'")}
SLOW = {"ONNX", "Hugging Face"}  # measured 13 s (dynamo ONNX exporter) and 20 s (export + remote code) on 2 shared cores
TINY = ["--steps", "2", "--batch_size", "4", "--seq_len", "24", "--tokenizer", "char", "--eval_batches", "1",
        "--threads", "1", "--progress", "false", "--warmup_steps", "1", "--num_layers", "1", "--max_seq_len", "32"]


def synthformer(argv: list[str], cwd: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    res = subprocess.run([sys.executable, "-m", "synthformer.cli", *argv[1:]], cwd=cwd, capture_output=True,
                         text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder holding the doc's `runs/lm`: its train line, on a small text file, with a tiny budget."""
    folder = tmp_path_factory.mktemp("docs-export")
    words = "how are you doing today the weather is fine and the cat sat on a mat".split()
    (folder / "lm.txt").write_text("".join(" ".join(words[(i * 5 + j) % len(words)] for j in range(4 + i % 11)) + "\n"
                                           for i in range(200)))
    (train,) = [argv for code in blocks_of(None, "bash") for argv in commands(code, "train")]
    synthformer([*train, "--data", "lm.txt", *TINY], folder)  # a later flag wins over the doc's
    return folder


def test_doc_has_each_route_and_the_readme_links_it():
    assert HEADS == list(NEEDS)
    for head in NEEDS:
        assert len(blocks_of(head, "python")) == 1, head
    assert "docs/export.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("head", [pytest.param(h, marks=[pytest.mark.slow] if h in SLOW else []) for h in NEEDS])
def test_doc_example_runs(head, workdir):
    modules, install = NEEDS[head]
    for module in modules:
        pytest.importorskip(module, reason=f"the {head} example needs {module}: {install}")
    for argv in [argv for code in blocks_of(head, "bash") for argv in commands(code, "export")]:
        synthformer(argv, workdir)
    (code,) = blocks_of(head, "python")
    res = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"})
    assert res.returncode == 0, f"docs/export.md, {head} example:\n{res.stderr[-3000:]}"

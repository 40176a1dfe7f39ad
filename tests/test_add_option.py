"""docs/ARCHITECTURE.md "a synthesizer option": an option is declared once, in SynthesizerOptions
(attention/synthesizers/base.py), and reaches ModelConfig, the command line (`synthformer train --help`, typed
overrides), stored configs and every layer from there.

Fields are collected when ModelConfig is defined, so no option can be added at run time from outside;
the worked example is an edit of attention/synthesizers/base.py alone. The second test makes exactly the page's edit
in a copy of the package and follows the option through a fresh interpreter."""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from synthformer.attention import SyntheticAttention
from synthformer.attention.synthesizers.base import SynthesizerOptions
from synthformer.model import ModelConfig, build_model
from synthformer.model.config import NOT_IN_CONFIG
from synthformer.training.overrides import field_comments, field_help, parse_overrides

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
OPTIONS = [f for f in dataclasses.fields(SynthesizerOptions) if f.name not in NOT_IN_CONFIG]
# A valid value other than the default for the options there are now (a new option is checked at its default).
SAMPLES = {"factorized_k": 4, "dense_factors": (4, 4), "random_init_scale": 0.5, "random_init": "glorot3d"}


def attention_layers(model) -> list[SyntheticAttention]:
    return [m for m in model.modules() if isinstance(m, SyntheticAttention)]


def test_every_synthesizer_option_is_a_model_field_a_cli_option_and_reaches_every_layer():
    fields = {f.name: f for f in dataclasses.fields(ModelConfig)}
    comments, help_text = field_comments(SynthesizerOptions), field_help()
    for option in OPTIONS:
        mine = fields[option.name]  # a ModelConfig field of the same type and default, declared there
        assert (mine.type, mine.default) == (option.type, option.default)
        assert mine.metadata["declared_in"] is SynthesizerOptions
        assert comments[option.name] and f"--{option.name}=" in help_text
        assert f"\n      {comments[option.name]}" in help_text  # the help is the declaration's comment
    values = {o.name: SAMPLES.get(o.name, o.default) for o in OPTIONS}
    _, model_over = parse_overrides([f"--{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in values.items()])
    assert model_over == values  # typed from text, in the model section
    cfg = ModelConfig.preset("tiny", kind="lm", vocab_size=50, num_layers=1, max_seq_len=16,
                             attention="FR+FD+D+R+V", **model_over)
    assert {k: getattr(cfg.synthesizer_options, k) for k in values} == values
    layers = attention_layers(build_model(cfg))
    assert layers and all(member.options is cfg.synthesizer_options for layer in layers for member in layer.members)
    stored = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))  # config.json and back
    assert stored.synthesizer_options == cfg.synthesizer_options


def worked_edit() -> tuple[str, str]:
    """(the field line, the OPTION_RULES line) of the page's worked "add an option"."""
    section = DOC.read_text().split("### A synthesizer option")[1].split("\n### ")[0]
    field_line, rule_line = (block.strip("\n") for block in re.findall(r"```python\n(.*?)```", section, re.S))
    return field_line, rule_line


def apply_edit(base: Path, field_line: str, rule_line: str) -> None:
    """Add the field last in SynthesizerOptions and the rule first in OPTION_RULES of `base` (a copy of
    attention/synthesizers/base.py), as the page says."""
    lines = base.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SynthesizerOptions")
    last_field = max(n.end_lineno for n in cls.body if isinstance(n, ast.AnnAssign))
    rules = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "OPTION_RULES")
    lines.insert(rules.lineno, rule_line)  # below `OPTION_RULES = {` (the class is above it)
    lines.insert(last_field, field_line)
    base.write_text("\n".join(lines) + "\n")


FOLLOW = r"""
import contextlib, io, json
from synthformer.attention import SyntheticAttention
from synthformer.cli import main
from synthformer.errors import ConfigError
from synthformer.model import ModelConfig, build_model
from synthformer.training.overrides import parse_overrides

out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["train", "--help"])
    except SystemExit:
        pass
_, model_over = parse_overrides(["--toy_scale", "2.5"])
cfg = ModelConfig.preset("tiny", kind="lm", vocab_size=50, num_layers=1, attention="R+V", **model_over)
layers = [m for m in build_model(cfg).modules() if isinstance(m, SyntheticAttention)]
stored = cfg.to_dict()
older = {k: v for k, v in stored.items() if k != "toy_scale"}  # a config.json from before the option
try:
    ModelConfig.preset("tiny", toy_scale=-1.0)
    refused = ""
except ConfigError as e:
    refused = str(e)
with contextlib.redirect_stderr(io.StringIO()) as err:
    rc = main(["train", "--toy_scale=-1", "--steps=1"])
print(json.dumps({
    "help": out.getvalue(), "override": model_over,
    "in_layers": [m.options.toy_scale for layer in layers for m in layer.members],
    "round_trip": ModelConfig.from_dict(json.loads(json.dumps(stored))).toy_scale,
    "older": ModelConfig.from_dict(older).toy_scale, "refused": refused, "cli": [rc, err.getvalue()],
}))
"""


def test_adding_an_option_is_one_edit_of_attention_base(tmp_path):
    """The page's edit, made in a copy of the package, and nothing else: the option is a typed override,
    in `train --help` with its comment, in ModelConfig, in every layer's options, in stored configs (an
    older config.json gets the default), and its range rule refuses a bad value on the command line."""
    field_line, rule_line = worked_edit()
    name = field_line.split(":")[0].strip()
    assert name == "toy_scale" and rule_line.strip().startswith(f'"{name}"')
    copy = tmp_path / "synthformer"
    shutil.copytree(ROOT / "synthformer", copy, ignore=shutil.ignore_patterns("__pycache__"))
    apply_edit(copy / "attention" / "synthesizers" / "base.py", field_line, rule_line)
    done = subprocess.run([sys.executable, "-c", FOLLOW], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(tmp_path), "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.splitlines()[-1])
    comment = field_line.split("#", 1)[1].strip()
    assert f"--toy_scale=float  (default 1.0)\n      {comment}\n" in got["help"]
    assert got["override"] == {"toy_scale": 2.5}
    assert got["in_layers"] == [2.5, 2.5]  # R and V of the one layer
    assert got["round_trip"] == 2.5 and got["older"] == 1.0
    assert got["refused"] == "toy_scale=-1.0 must be > 0"
    assert got["cli"][0] == 2 and got["cli"][1].strip() == "synthformer: error: toy_scale=-1.0 must be > 0"


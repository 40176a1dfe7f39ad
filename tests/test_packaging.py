"""Packaging: the core install is torch alone; the extras pin what requirements.txt pins; the
shipped configs are found by name; the built wheel holds configs/ and py.typed."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import synthformer
from synthformer.training.overrides import CONFIGS, UsageError, find_config_file, parse_overrides, shipped_configs

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Every package the core must not need (import names). numpy too: torch runs without it.
NON_CORE = ("numpy", "tokenizers", "safetensors", "yaml", "tqdm", "sacrebleu", "rouge_score", "matplotlib",
            "pysword", "chitchat_dataset", "transformers", "nltk", "pandas", "PIL", "hypothesis", "onnx")

# A subprocess prelude: any import of a non-core package fails as if it were not installed.
BLOCKER = textwrap.dedent(f"""
    import importlib.abc, sys, warnings
    BLOCKED = {NON_CORE!r}
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: not core)", name=name)
    sys.meta_path.insert(0, Block())
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch's own, without numpy
""")

CORE_USE = textwrap.dedent("""
    import sys, tempfile
    import torch
    import synthformer
    from synthformer import SyntheticAttention, ModelConfig, build_model
    from synthformer.model import build_model as build_model2, ModelConfig as ModelConfig2

    attn = SyntheticAttention(embed_dim=32, num_heads=2, max_seq_len=16, synthesizers="R+V", causal=True)
    out, _ = attn(torch.randn(2, 16, 32))
    assert out.shape == (2, 16, 32)
    for kind, extra in (("lm", {}), ("classifier", {"num_classes": 3}), ("seq2seq", {}), ("mlm", {})):
        model = build_model(ModelConfig.preset("tiny", kind=kind, vocab_size=50, attention="D", **extra)).eval()
        tokens = torch.randint(5, 50, (2, 12))
        out = model(tokens, tokens) if kind == "seq2seq" else model(tokens)
        assert torch.isfinite(out).all(), kind
    lm = build_model(ModelConfig.preset("tiny", kind="lm", vocab_size=50, attention="R+V")).eval()
    assert lm.generate(tokens[:, :4], max_new_tokens=3).shape[1] >= 4
    try:  # checkpoints need safetensors, an extra: a clear message, not a failure at import
        lm.save(tempfile.mkdtemp())
    except ImportError as e:
        assert "safetensors" in str(e) and "synthformer[train]" in str(e), e
    else:
        raise AssertionError("save worked without safetensors?")
    leaked = sorted({m.split(".")[0] for m in sys.modules} & set(BLOCKED))
    assert not leaked, leaked
    print("CORE-OK", synthformer.__version__)
""")


def run_python(code: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_core_needs_torch_alone(tmp_path):
    """`import synthformer`, the layer and every model kind work with every non-core package missing."""
    res = run_python(BLOCKER + CORE_USE, cwd=ROOT)
    assert res.returncode == 0 and "CORE-OK" in res.stdout, res.stderr[-3000:]


def test_cli_help_and_version_need_torch_alone():
    code = BLOCKER + textwrap.dedent("""
        import runpy, sys
        for argv in (["--version"], ["--help"], ["train", "--help"]):
            sys.argv = ["synthformer", *argv]
            try:
                runpy.run_module("synthformer", run_name="__main__", alter_sys=True)
            except SystemExit as e:
                assert e.code in (0, None), (argv, e.code)
    """)
    res = run_python(code, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"synthformer {synthformer.__version__}" in res.stdout


# ----------------------------------------------------------------------------- one source of pins
def _pins(lines) -> dict[str, str]:
    """{normalised name: version} of the `name==version` requirements in ``lines``."""
    pins = {}
    for line in lines:
        line = line.split("#")[0].split(";")[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*==\s*([^\s,]+)", line)
        if m:
            pins[re.sub(r"[-_.]+", "-", m[1]).lower()] = m[2]
        else:
            assert not line or line.startswith("synthformer["), f"not an exact pin: {line!r}"
    return pins


def test_extras_pin_what_requirements_pin():
    """requirements.txt (what `make test` installs) and pyproject's core + extras name the same
    versions: neither can drift from the other."""
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    declared = _pins(project["dependencies"])
    for name, deps in extras.items():
        for pkg, version in _pins(deps).items():
            assert declared.setdefault(pkg, version) == version, f"{pkg} pinned twice, differently"
    assert declared == req


def test_core_is_torch_and_all_holds_every_extra():
    project = PYPROJECT["project"]
    assert [re.split(r"[=<>~!]", d)[0] for d in project["dependencies"]] == ["torch"]
    extras = project["optional-dependencies"]
    assert {"train", "plots", "hf", "all", "test"} <= set(extras)
    assert extras["all"] == ["synthformer[train,plots,hf]"]


def test_one_version_source():
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "synthformer.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", synthformer.__version__)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{synthformer.__version__}]" in changelog, "CHANGELOG.md has no entry for the version"


def test_make_test_installs_every_extra():
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements.txt" in makefile and ".[all,test]" in makefile


# ----------------------------------------------------------------------------- configs by name
def test_configs_ship_with_the_package():
    assert CONFIGS == Path(synthformer.__file__).resolve().parent / "configs"
    names = shipped_configs()
    assert "lm-chitchat-small" in names and len(names) >= 5
    assert (ROOT / "configs" / "lm-chitchat-small.yaml").is_file()  # the checkout's configs/ still works


@pytest.mark.parametrize("spelling", ["lm-chitchat-small", "lm-chitchat-small.yaml", "configs/lm-chitchat-small.yaml"])
def test_config_found_by_name_from_any_folder(spelling, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_config_file(spelling) == CONFIGS / "lm-chitchat-small.yaml"
    train, model = parse_overrides(["--steps=3"], spelling)
    assert train["steps"] == 3 and train["batch_size"] == 32  # the file was read; the command line wins


def test_local_file_wins_and_other_paths_are_not_redirected(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lm-chitchat-small.yaml").write_text("steps: 7\n")
    assert parse_overrides([], "lm-chitchat-small.yaml")[0] == {"steps": 7}
    with pytest.raises(UsageError, match=r"config file not found: elsewhere/mlm-chitchat.yaml; shipped configs"):
        find_config_file("elsewhere/mlm-chitchat.yaml")
    with pytest.raises(UsageError, match="lm-chitchat-small"):  # the error lists the shipped names
        find_config_file("no-such-config")


# ----------------------------------------------------------------------------- the built wheel
def build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the sources (pyproject, README, LICENSE, synthformer/), built without deps."""
    pytest.importorskip("setuptools", reason="the build backend (venvs of Python >= 3.12 come without it)")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "synthformer", src / "synthformer", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    res = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
                          str(src)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("synthformer-*.whl")
    return wheel


@pytest.mark.slow
def test_wheel_installs_with_configs_and_runs_on_torch_alone(tmp_path):
    """Build the wheel from a copy of the sources, install it without dependencies into a folder,
    and use it from outside the checkout with every non-core package blocked."""
    wheel = build_wheel(tmp_path)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    assert wheel.name.startswith(f"synthformer-{synthformer.__version__}-")
    files = zipfile.ZipFile(wheel).namelist()
    assert "synthformer/py.typed" in files
    assert {f"synthformer/configs/{n}.yaml" for n in shipped_configs()} <= set(files)
    assert "synthformer/bench/targets.yaml" in files
    assert not [f for f in files if f.startswith(("tests/", "configs/", "benchmarks/"))]
    metadata = zipfile.ZipFile(wheel).read(f"synthformer-{synthformer.__version__}.dist-info/METADATA").decode()
    assert "Requires-Dist: torch==2.13.0\n" in metadata
    assert all("extra ==" in line for line in metadata.splitlines()
               if line.startswith("Requires-Dist:") and "torch==" not in line)

    site = tmp_path / "site"
    res = subprocess.run([*pip, "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {"PYTHONPATH": str(site), "PYTHONNOUSERSITE": "1"}
    code = BLOCKER + "sys.path = [p for p in sys.path if p not in ('', %r)]\n" % str(ROOT) + CORE_USE + textwrap.dedent("""
        assert synthformer.__file__.startswith(%r), synthformer.__file__
        from synthformer.training.overrides import find_config_file
        print("CONFIG", find_config_file("configs/lm-chitchat-small.yaml"))
    """ % str(site))
    res = run_python(code, cwd=outside, env=env)
    assert res.returncode == 0 and "CORE-OK" in res.stdout, res.stderr[-3000:]
    assert f"CONFIG {site}/synthformer/configs/lm-chitchat-small.yaml" in res.stdout


# ----------------------------------------------------------------------------- a core-only install's CLI
def run_cli(argv: list[str], cwd: Path, blocked: tuple[str, ...] = NON_CORE) -> subprocess.CompletedProcess:
    """``synthformer ARGV`` in a fresh process where every package of ``blocked`` is missing."""
    code = BLOCKER.replace(repr(NON_CORE), repr(blocked)) + textwrap.dedent(f"""
        from synthformer.cli import main
        raise SystemExit(main({argv!r}))
    """)
    return run_python(code, cwd=cwd)


@pytest.mark.parametrize("argv,extra", [  # train in `make test`; the others are slow (5 s each: a fresh process)
    (["train", "--task", "lm", "--data", "x.txt", "--steps", "1", "--out", "run"], "train"),
    pytest.param(["export", "hf", "--run", "run", "--out", "hf"], "hf", marks=pytest.mark.slow),
    pytest.param(["plot", "bench", "rows.jsonl", "--out", "fig.png"], "plots", marks=pytest.mark.slow),
])
def test_core_only_cli_names_the_extra_to_install(argv, extra, tmp_path):
    """Each command that needs an extra ends in one line naming it (exit 2), never a traceback."""
    (tmp_path / "x.txt").write_text("a b c\n" * 50)
    shutil.copy(ROOT / "benchmarks" / "results" / "cpu-1thread-layer.jsonl", tmp_path / "rows.jsonl")
    res = run_cli(argv, tmp_path)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert lines[0].startswith("synthformer") and "error:" in lines[0], lines
    assert f"pip install 'synthformer[{extra}]'" in lines[0], lines


@pytest.mark.slow  # 25 s: a fresh process per sub-command
def test_core_only_help_of_every_command_works(tmp_path):
    """`--help` of every sub-command needs torch alone (the parsers import no extra)."""
    from synthformer.cli import COMMANDS

    for name in COMMANDS:
        res = run_cli([name, "--help"], tmp_path)
        assert res.returncode == 0 and "usage" in res.stdout.lower(), (name, res.stderr[-2000:])


def test_a_missing_tokenizers_package_is_not_called_a_damaged_file(tmp_path):
    """A run's valid BPE tokenizer read without `tokenizers` installed: the error names the package."""
    from synthformer.data.tokenizer import build_tokenizer
    from synthformer.training.runs import load_run_tokenizer

    build_tokenizer("bpe", ["the cat sat on the mat"] * 20, vocab_size=270).save(tmp_path)
    assert load_run_tokenizer(tmp_path).encode("the cat")  # readable with the package
    code = BLOCKER.replace(repr(NON_CORE), repr(("tokenizers",))) + textwrap.dedent(f"""
        from synthformer.training.runs import load_run_tokenizer
        try:
            load_run_tokenizer({str(tmp_path)!r})
        except ImportError as e:
            print("ERR", e)
    """)
    res = run_python(code, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "ERR" in res.stdout and "'tokenizers' package" in res.stdout and "synthformer[train]" in res.stdout
    assert "backup" not in res.stdout and "not a valid" not in res.stdout


# ----------------------------------------------------------------------------- shipped data, output folders
def test_bench_targets_ship_with_the_package():
    from synthformer.bench.report import DEFAULT_TARGETS

    assert DEFAULT_TARGETS == Path(synthformer.__file__).resolve().parent / "bench" / "targets.yaml"
    assert DEFAULT_TARGETS.is_file() and "bench/targets.yaml" in str(PYPROJECT["tool"]["setuptools"]["package-data"])
    assert (ROOT / "benchmarks" / "targets.yaml").resolve() == DEFAULT_TARGETS  # the checkout's path still works


@pytest.mark.slow  # 16 s: matplotlib in a fresh process
def test_plot_out_creates_missing_folders(tmp_path):
    pytest.importorskip("matplotlib")
    rows = ROOT / "benchmarks" / "results" / "cpu-1thread-layer.jsonl"
    out = tmp_path / "plots" / "deeper" / "bench.png"
    res = run_python(f"from synthformer.cli import main; raise SystemExit(main(['plot', 'bench', {str(rows)!r}, "
                     f"'--out', {str(out)!r}]))", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "afile").write_text("")
    res = run_python(f"from synthformer.cli import main; raise SystemExit(main(['plot', 'bench', {str(rows)!r}, "
                     f"'--out', {str(tmp_path / 'afile' / 'x.png')!r}]))", cwd=tmp_path)
    assert res.returncode == 2 and "is a file, not a folder" in res.stderr, res.stderr[-2000:]


# ----------------------------------------------------------------------------- a real core-only venv
# `slow` tests run in `make test-all` only (`make test` deselects them), and this one builds a venv and
# installs torch into it (about 2 minutes on 2 shared cores): even there it runs only with SYNTHFORMER_SLOW=1.
SLOW_OPT_IN = pytest.mark.skipif(os.environ.get("SYNTHFORMER_SLOW") != "1",
                                 reason="builds a venv with torch (~2 min): set SYNTHFORMER_SLOW=1 to run it")


def cli_paths(parser=None, prefix=()) -> list[tuple[str, ...]]:
    """Every command and sub-command of the `synthformer` parser: [("train",), ("data", "list"), ...]."""
    import argparse

    from synthformer.cli import build_parser

    parser = parser or build_parser()
    paths = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths += [(*prefix, name), *cli_paths(sub, (*prefix, name))]
    return paths


def works_or_names_the_extra(res: subprocess.CompletedProcess, argv: list[str], must_fail: bool = False) -> None:
    """Exit 0 (unless ``must_fail``), or exit 2 with one line naming the extra to install; never a
    traceback, never a missing package called a damaged file."""
    if res.returncode == 0 and not must_fail:
        return
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, (argv, res.stderr[-2000:])
    assert re.search(r"pip install 'synthformer\[(train|plots|hf|tensorboard|wandb)\]'", lines[0]), (argv, lines)
    assert not re.search(r"backup|corrupt|damaged|not a valid", lines[0]), (argv, lines)


@pytest.mark.slow
@SLOW_OPT_IN
def test_every_cli_command_in_a_core_only_venv(tmp_path):
    """`python -m venv`, torch (the core's one dependency, from the configured index), the wheel with
    --no-deps: every command's --help, and train / eval / generate / export hf / plot on real inputs,
    either work or end in one line naming the extra (issue 19, item 4)."""
    from conftest import run_cli as run_here

    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "--no-input", "install", "-q"]
    for args in (PYPROJECT["project"]["dependencies"], ["--no-deps", str(wheel)]):
        res = subprocess.run([*pip, *args], capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run([str(venv / "bin" / "python"), "-c", "import yaml"], capture_output=True, text=True)
    assert res.returncode != 0, "the venv is not core-only"

    # a finished run (made here, with every extra) and the inputs a user would pass
    (tmp_path / "x.txt").write_text("the cat sat on a mat and the dog ran home\n" * 60)
    shutil.copy(ROOT / "benchmarks" / "results" / "cpu-1thread-layer.jsonl", tmp_path / "rows.jsonl")
    code, _, err = run_here("train", "--task", "lm", "--data", tmp_path / "x.txt", "--vocab_size", "280",
                            "--steps", "1", "--batch_size", "2", "--seq_len", "16", "--num_layers", "1",
                            "--eval_batches", "1", "--threads", "1", "--progress", "false", "--out", tmp_path / "run")
    assert code == 0, err[-2000:]

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS="1", PYTHONNOUSERSITE="1")
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def synthformer(*argv) -> subprocess.CompletedProcess:
        return subprocess.run([str(venv / "bin" / "synthformer"), *map(str, argv)], cwd=outside, env=env,
                              capture_output=True, text=True, timeout=300)

    for path in [(), *cli_paths()]:
        argv = [*path, "--help"]
        works_or_names_the_extra(synthformer(*argv), argv)
    run = tmp_path / "run"
    for argv in (["train", "--task", "lm", "--data", tmp_path / "x.txt", "--steps", "1", "--out", tmp_path / "r2"],
                 ["eval", "--run", run], ["generate", "--run", run, "the cat"],
                 ["export", "hf", "--run", run, "--out", tmp_path / "hf"],
                 ["plot", "bench", tmp_path / "rows.jsonl", "--out", tmp_path / "fig.png"]):
        works_or_names_the_extra(synthformer(*argv), argv, must_fail=True)
    assert not (tmp_path / "r2").exists() and not (tmp_path / "hf").exists()

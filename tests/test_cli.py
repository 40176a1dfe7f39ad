"""The `synthformer` command line: typed overrides, config files, one-line errors, delegation."""
from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from synthformer.cli import COMMANDS, main
from synthformer.training.overrides import UsageError, coerce, field_comments, parse_overrides

REPO = Path(__file__).resolve().parents[1]


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse's own usage errors
            code = e.code
    return code, out.getvalue(), err.getvalue()


def one_line_error(code, err, *needles):
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err  # one line, no traceback
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


# ----------------------------------------------------------------------------- typed values
@pytest.mark.parametrize("text,tp,expected", [
    ("12", int, 12), ("1_000", int, 1000), ("1e-3", float, 1e-3), ("3", float, 3.0),
    ("true", bool, True), ("no", bool, False), ("none", int | None, None), ("7", int | None, 7),
    ("R+V", str | list, "R+V"), ("[R, V]", str | list, ["R", "V"]), ("8,16", tuple[int, int] | None, (8, 16)),
])
def test_command_line_values_are_parsed_to_the_field_type(text, tp, expected):
    assert coerce("key", text, tp, from_text=True) == expected


@pytest.mark.parametrize("text,tp", [("abc", int), ("1.5", int), ("maybe", bool), ("x", float),
                                     ("1,2,3", tuple[int, int] | None)])
def test_command_line_values_of_the_wrong_type_are_refused(text, tp):
    with pytest.raises(UsageError, match="key expects"):
        coerce("key", text, tp, from_text=True)


@pytest.mark.parametrize("value,tp", [("12", int), (True, int), (1.5, int), ("yes please", bool), ([1], str)])
def test_config_file_values_are_checked_not_guessed(value, tp):
    if isinstance(value, str) and tp is int:  # YAML strings are parsed like command-line text
        assert coerce("k", value, tp, from_text=True) == 12
        return
    with pytest.raises(UsageError):
        coerce("k", value, tp, from_text=isinstance(value, str))


def test_overrides_route_to_train_and_model_configs(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("steps: 7\nlr: 1e-3\nmodel:\n  attention: [R, V]\n  num_layers: 2\ntrain:\n  seed: 3\n")
    train, model = parse_overrides(["--batch_size", "4", "--model.dropout=0.2", "--steps=9", "--resume"], str(cfg))
    assert train == {"steps": 9, "lr": 1e-3, "seed": 3, "batch_size": 4, "resume": True}  # command line wins
    assert model == {"attention": ["R", "V"], "num_layers": 2, "dropout": 0.2}


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_config_files_hold_valid_overrides(path):
    from synthformer.training.overrides import make_train_config
    from synthformer.training.plan import check_model_overrides

    train, model = parse_overrides([], str(path))
    assert train or model, f"{path} is empty"
    cfg = make_train_config(train)
    check_model_overrides(cfg, model)


# ----------------------------------------------------------------------------- one-line errors
@pytest.mark.parametrize("args,needles", [
    (["train", "--stesp=3"], ["unknown option", "steps"]),
    (["train", "--atention", "R"], ["unknown option", "attention"]),
    (["train", "--steps=abc"], ["steps expects int", "'abc'"]),
    (["train", "--dropout", "high"], ["dropout expects float"]),
    (["train", "--task", "poetry"], ["task='poetry'", "lm"]),
    (["train", "--attention", "Q+V"], ["unknown synthesizer 'Q'", "R+V"]),
    (["train", "--kind", "lm"], ["set by the task"]),
    (["train", "--data", "/nonexistent/file.txt", "--threads", "1"], ["data file not found", "/nonexistent/file.txt"]),
    (["train", "--data", "no-such-source", "--threads", "1"], ["unknown data source", "chitchat"]),
    (["train", "--config", "/nonexistent.yaml"], ["config file not found"]),
    (["train", "--resume"], ["--resume needs --out"]),
    (["train", "stray"], ["unexpected argument 'stray'"]),
    (["eval", "--run", "/nonexistent-run"], ["not a run folder"]),
    (["compare", "--variants", "V,Zzz", "--steps", "1"], ["unknown synthesizer 'Zzz'"]),
    (["compare", "--attention", "R"], ["--variants"]),
])
def test_bad_input_gives_one_line_errors(args, needles):
    code, _, err = run(*args)
    one_line_error(code, err, *needles)


def test_empty_data_file_and_bad_yaml(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    code, _, err = run("train", "--data", empty, "--out", tmp_path / "run", "--threads", "1")
    one_line_error(code, err, "empty")
    assert not (tmp_path / "run").exists()  # no run folder for a run that never started
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: [1, 2\n")
    one_line_error(*run("train", "--config", bad)[::2], "not valid YAML")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("stpes: 3\n")
    one_line_error(*run("train", "--config", unknown)[::2], "unknown option 'stpes'", "steps")


def test_console_script_errors_without_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "synthformer.cli", "train", "--lr=fast"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "synthformer: error: lr expects float, got 'fast'"


# ----------------------------------------------------------------------------- delegation
def test_data_list_is_delegated():
    code, out, _ = run("data", "list")
    assert code == 0 and "chitchat" in out and "bible-en-es" in out


@pytest.mark.parametrize("argv,needle", [(["bench", "--lengths", "8,x", "--scope", "layer"], "invalid literal"),
                                         (["bench", "--preset", "huge"], "--preset 'huge'"),
                                         (["plot", "runs", "/nonexistent-folder"], "nonexistent-folder"),
                                         (["data", "show", "no-such-source"], "unknown data source")])
def test_parsed_subcommands_share_the_one_error_policy(argv, needle):
    """bench, plot and data are parsed in cli/ and fail like every command: one line, exit 2."""
    code, _, err = run(*argv)
    assert code == 2 and err.startswith("synthformer: error: ") and needle in err, err
    assert len(err.strip().splitlines()) == 1


def test_help_lists_every_option():
    code, out, _ = run("train", "--help")
    assert code == 0
    for name in ("--steps=", "--checkpoint_every=", "--attention=", "--max_seq_len="):
        assert name in out


@pytest.mark.parametrize("command,usage", [("plot", "synthformer plot"), ("bench", "synthformer bench"),
                                           ("compare", "synthformer compare"), ("export", "synthformer export")])
def test_subcommands_reach_their_modules(command, usage):
    code, out, _ = run(command, "--help")
    assert code == 0 and usage in out


# ----------------------------------------------------------------------------- the package and its handler
def test_python_dash_m_and_version():
    import synthformer

    proc = subprocess.run([sys.executable, "-m", "synthformer", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == f"synthformer {synthformer.__version__}"
    code, out, _ = run("--help")
    assert code == 0 and all(name in out for name in COMMANDS)


def test_every_subcommand_is_a_module_with_parser_and_runner():
    assert list(COMMANDS) == ["train", "eval", "generate", "compare", "data", "bench", "plot", "export", "reproduce"]
    for name, module in COMMANDS.items():
        assert module.NAME == name and callable(module.add_parser) and callable(module.run)


def test_override_engine_does_not_import_the_cli():
    code = "import sys, synthformer.training.overrides; assert not any(m.startswith('synthformer.cli') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("error", [ValueError("a bug"), FileNotFoundError("a bug"), RuntimeError("a bug")])
def test_internal_errors_keep_their_traceback(monkeypatch, error):
    def broken(args, rest):
        raise error

    monkeypatch.setattr(COMMANDS["eval"], "run", broken)
    with pytest.raises(type(error), match="a bug"):
        main(["eval", "--run", "x"])


def test_debug_shows_the_traceback_of_user_errors(monkeypatch):
    monkeypatch.setenv("SYNTHFORMER_DEBUG", "1")
    with pytest.raises(UsageError, match="unknown option"):
        main(["train", "--stesp=3"])


@pytest.mark.parametrize("args,needle", [
    (["--top-p", "0"], "--top-p=0.0 must be in (0, 1]"), (["--temperature", "0"], "--temperature=0.0 must be > 0"),
    (["--num-beams", "0"], "--num-beams=0 must be >= 1"), (["--max-new-tokens", "-1"], "--max-new-tokens=-1"),
])
def test_generate_refuses_bad_decoding_options_in_one_line(args, needle):
    one_line_error(*run("generate", "--run", "/nonexistent-run", *args)[::2], needle)


def test_run_folder_without_tokenizer_is_one_line(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    one_line_error(*run("eval", "--run", tmp_path)[::2], "config.json: not a run config")
    (tmp_path / "config.json").write_text('{"model": {}, "train": {}}')
    one_line_error(*run("eval", "--run", tmp_path)[::2], "tokenizer.json: not found")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "config.json").write_text("{not json")
    one_line_error(*run("eval", "--run", tmp_path)[::2], "config.json: not valid JSON")


def test_train_help_explains_every_option_from_the_config_comments():
    from synthformer.model import ModelConfig
    from synthformer.training.loop import TrainConfig

    code, out, _ = run("train", "--help")
    assert code == 0
    assert "--steps=int  (default 1000)\n      optimizer steps of the whole run" in out
    assert "--embed_dim=int  (default 256; preset tiny 64, small 256, base 512)\n      model width d" in out
    assert "baselines: lightconv, dynamicconv, linformer" in out and "lm | classify | seq2seq | mlm" in out
    for cls in (TrainConfig, ModelConfig):  # every field has a comment to show
        comments = field_comments(cls)
        assert all(comments.get(f) for f in cls.__dataclass_fields__), cls

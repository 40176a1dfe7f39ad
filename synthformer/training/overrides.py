"""Typed overrides of TrainConfig and ModelConfig: ``--key=value`` tokens and YAML config files.

    train, model = parse_overrides(["--steps=10", "--attention", "R+V"], config="configs/lm-tiny.yaml")
    # train == {"steps": 10, ...}; model == {"attention": "R+V", ...}: each value of its field's type

Keys are the fields of ``TrainConfig`` (synthformer.training.config) and ``ModelConfig`` (synthformer.model);
``train.key`` / ``model.key`` spell out which. A config file holds overrides only (flat keys, or
``train:`` and ``model:`` sections) and is read first; the command line wins. Values from the command
line are parsed to the field's type; values from YAML are checked, not guessed (YAML strings are parsed
like command-line text, because YAML reads ``1e-3`` as a string). An unknown key is refused with the
closest known ones. Every error is a :class:`UsageError`, one line.
"""
from __future__ import annotations

import dataclasses
import difflib
import io
import inspect
import tokenize
import typing
from pathlib import Path

from .._optional import require
from ..errors import SynthformerError
from ..model import PRESETS, ModelConfig
from .config import TrainConfig
from ..utils.typed import Mismatch, convert, describe, field_types, type_name, union_members

# ModelConfig fields the task and the tokenizer decide; set them through task= / vocab_size=.
DATA_FIXED = ("kind", "vocab_size", "pad_id", "bos_id", "eos_id", "num_classes", "extra")


class UsageError(SynthformerError):
    """Bad command-line or config-file input: printed as one line, exit status 2."""


TRAIN_FIELDS = dict(field_types(TrainConfig))
MODEL_FIELDS = {k: v for k, v in field_types(ModelConfig).items() if k not in DATA_FIXED}


# ----------------------------------------------------------------------------- one value
def coerce(key: str, value, tp, from_text: bool):
    """`value` as type `tp`: parsed when it came from the command line (`from_text`), else checked
    (the configs' own type checker: synthformer.utils.typed)."""
    try:
        return convert(value, tp, from_text)
    except Mismatch:
        if any(typing.get_origin(o) in (tuple, list, dict) or o in (tuple, list, dict) for o in union_members(tp)):
            raise UsageError(f"{key} expects {describe(tp)}, written {_syntax(tp)}; got {value!r}") from None
        options = " or ".join(type_name(o) for o in union_members(tp))
        raise UsageError(f"{key} expects {options}, got {value!r}") from None


def _syntax(tp) -> str:
    """How a list, tuple or mapping value is written on the command line, e.g. ``--dense_factors=4,8``."""
    for o in union_members(tp):
        origin, args = typing.get_origin(o), typing.get_args(o)
        if origin is tuple and args and args[-1] is not Ellipsis:
            example = ",".join(str(4 * 2**i) for i in range(len(args)))
            return f"{example} or [{example.replace(',', ', ')}]" + (" or none" if type(None) in union_members(tp) else "")
        if origin is dict or o is dict:
            return "{key: value, ...}"
    return "a,b,c or [a, b, c]"


# ----------------------------------------------------------------------------- keys and sources
def resolve_key(raw: str) -> tuple[str, str]:
    """'steps' -> ('train', 'steps'); 'model.attention' -> ('model', 'attention'); unknown: did you mean."""
    key = raw.strip().lstrip("-").replace("-", "_")
    section, _, name = key.rpartition(".")
    if section in ("train", "model"):
        if name in (TRAIN_FIELDS if section == "train" else MODEL_FIELDS):
            return section, name
    elif not section:
        if name in TRAIN_FIELDS:
            return "train", name
        if name in MODEL_FIELDS:
            return "model", name
    if name in DATA_FIXED:
        raise UsageError(f"model field {name!r} is set by the task and the data (use task=, vocab_size=, data=)")
    close = difflib.get_close_matches(name, list(TRAIN_FIELDS) + list(MODEL_FIELDS), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `synthformer train --help`"
    raise UsageError(f"unknown option {raw!r}{hint}")


def apply_overrides(items: list[tuple[str, object, bool]]) -> tuple[dict, dict]:
    """(key, value, from_text) triples -> (train overrides, model overrides), typed."""
    train, model = {}, {}
    for raw, value, from_text in items:
        section, name = resolve_key(raw)
        tp = (TRAIN_FIELDS if section == "train" else MODEL_FIELDS)[name]
        (train if section == "train" else model)[name] = coerce(name, value, tp, from_text)
    return train, model


def split_cli_overrides(tokens: list[str]) -> list[tuple[str, object, bool]]:
    """['--steps=10', '--attention', 'R+V', '--resume'] -> [(key, text, True), ...]."""
    out, i = [], 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("--") or tok == "--":
            raise UsageError(f"unexpected argument {tok!r}; options look like --key=value")
        if "=" in tok:
            key, value = tok[2:].split("=", 1)
            i += 1
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            key, value = tok[2:], tokens[i + 1]
            i += 2
        else:
            key, value = tok[2:], "true"  # a bare flag such as --resume
            i += 1
        out.append((key, value, True))
    return out


CONFIGS = Path(__file__).resolve().parents[1] / "configs"  # the config files shipped: synthformer/configs


def shipped_configs() -> list[str]:
    """Names of the config files shipped with the package (``--config NAME`` finds them anywhere)."""
    return sorted(f.stem for f in CONFIGS.glob("*.yaml"))


def find_config_file(path: str) -> Path:
    """``path`` itself when it is a file; otherwise a shipped config by name, so ``NAME``,
    ``NAME.yaml`` and ``configs/NAME.yaml`` (the README's spelling) work from any folder and from
    an installed package. Other paths are never redirected: a typo there stays an error."""
    file = Path(path)
    if file.is_file():
        return file
    if len(file.parts) == 1 or (len(file.parts) == 2 and file.parts[0] == "configs"):
        name = file.name if file.suffix in (".yaml", ".yml") else f"{file.name}.yaml"
        if (CONFIGS / name).is_file():
            return CONFIGS / name
    raise UsageError(f"config file not found: {file}; shipped configs (by name): {', '.join(shipped_configs())}")


def read_config_file(path: str) -> list[tuple[str, object, bool]]:
    """A YAML file of overrides (a path, or a shipped config by name: see find_config_file):
    flat keys, or `train:` / `model:` sections."""
    file = find_config_file(path)
    yaml = require("yaml", "reading a config file")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as e:
        raise UsageError(f"{file}: not UTF-8 text (byte {e.start}); save the config file as UTF-8") from None
    except OSError as e:
        raise UsageError(f"{file}: cannot be read ({e.strerror or type(e).__name__}); give a readable YAML file") from None
    except yaml.YAMLError as e:
        raise UsageError(f"{file}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{file}: expected a mapping of option: value, got {type(data).__name__}")
    items = []
    for key, value in data.items():
        if key in ("train", "model") and isinstance(value, dict):
            items += [(f"{key}.{k}", v, isinstance(v, str)) for k, v in value.items()]
        else:  # YAML reads 1e-3 as a string: strings are parsed like command-line text
            items.append((str(key), value, isinstance(value, str)))
    return items


def parse_overrides(tokens: list[str], config: str | None = None) -> tuple[dict, dict]:
    """Config file first, then the command line; returns typed (train, model) override dicts."""
    items = (read_config_file(config) if config else []) + split_cli_overrides(tokens)
    return apply_overrides(items)


# ----------------------------------------------------------------------------- configs
def make_train_config(overrides: dict) -> TrainConfig:
    """TrainConfig from typed overrides; its own checks' errors as one-line user errors."""
    try:
        return TrainConfig.from_dict(overrides)
    except SynthformerError:
        raise
    except ValueError as e:  # TrainConfig checks that still raise a plain ValueError
        raise UsageError(str(e)) from None



# ----------------------------------------------------------------------------- help
def field_comments(cls) -> dict[str, str]:
    """The ``# comment`` after each field of a dataclass in its source: {field: comment}; a field taken
    over from another dataclass (``metadata["declared_in"]``) has the comment of its declaration there."""
    names = {f.name for f in dataclasses.fields(cls)}
    declared = {f.name: f.metadata["declared_in"] for f in dataclasses.fields(cls) if "declared_in" in f.metadata}
    comments = {name: field_comments(owner).get(name, "") for name, owner in declared.items()}
    return {**_own_comments(cls, names - set(declared)), **comments}


def _own_comments(cls, names: set[str]) -> dict[str, str]:
    comments: dict[str, str] = {}
    line_field: dict[int, str] = {}
    tokens = list(tokenize.generate_tokens(io.StringIO(inspect.getsource(cls)).readline))
    for prev, tok, nxt in zip(tokens, tokens[1:], tokens[2:]):
        # a field line: INDENT/NEWLINE, then NAME, then ':' (class-body annotation)
        if tok.type == tokenize.NAME and tok.string in names and nxt.string == ":" and \
                prev.type in (tokenize.INDENT, tokenize.NEWLINE, tokenize.NL, tokenize.DEDENT):
            line_field.setdefault(tok.start[0], tok.string)
        elif tok.type == tokenize.COMMENT and tok.start[0] in line_field:
            comments.setdefault(line_field[tok.start[0]], tok.string.lstrip("#").strip())
    return comments


def _allowed(cls, name: str) -> str:
    """Valid values not spelled out in a field's comment (token mixers)."""
    if cls is ModelConfig and name in ("attention", "decoder_attention", "cross_attention"):
        from ..attention import SHORT_NAMES
        from ..mixers import BASELINES

        shorts = ", ".join(s.upper() if len(s) < 3 else s.capitalize() for s in SHORT_NAMES)
        baselines = "" if name == "cross_attention" else f"; baselines: {', '.join(BASELINES)}"
        return f" [synthesizers {shorts}, mixed with '+'{baselines}]"
    return ""


def _model_default(name: str, default) -> str:
    by_preset = [f"{p} {PRESETS[p][name]}" for p in PRESETS if name in PRESETS[p]]
    return f"default {default!r}; preset {', '.join(by_preset)}" if by_preset else f"default {default!r}"


def _option_lines(cls, fields: dict, default_text) -> list[str]:
    comments = field_comments(cls)
    lines = []
    for f in dataclasses.fields(cls):
        if f.name not in fields:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        lines.append(f"  --{f.name}={type_name(fields[f.name])}  ({default_text(f.name, default)})")
        lines.append(f"      {comments.get(f.name, '')}{_allowed(cls, f.name)}")
    return lines


def field_help() -> str:
    """Every train option with its type, default, meaning and allowed values (from the config comments)."""
    lines = ["train options (TrainConfig):"]
    lines += _option_lines(TrainConfig, TRAIN_FIELDS, lambda name, d: f"default {d!r}")
    lines.append("model options (ModelConfig, over the preset):")
    lines += _option_lines(ModelConfig, MODEL_FIELDS, _model_default)
    return "\n".join(lines)

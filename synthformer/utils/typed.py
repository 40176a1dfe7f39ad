"""The one type checker of the typed configs (TrainConfig, ModelConfig, SynthesizerOptions) and of
command-line / YAML values.

    value = convert(12, int | None, from_text=False)           # checked: 12
    value = convert("1e-3", float, from_text=True)             # parsed: 0.001
    check_fields(cfg, RULES)   # every field against its annotation, then its range rule; ConfigError

A field's annotation says its type (bool, int, float (finite), str, list, tuple[...], dict, unions with
None); ``RULES`` maps a field to ``(predicate, "what it must be")`` for what the type alone does not say.
Every error names the field and the value: ``lr=0.0 must be a finite number > 0``.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing

from ..errors import ConfigError

TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class Mismatch(Exception):
    """`value` is not of the type asked for (callers turn it into their own one-line error)."""


def type_name(tp) -> str:
    """``int | None`` -> "int | None"; ``float`` -> "float"."""
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def union_members(tp) -> tuple:
    """(int, NoneType) for ``int | None``; (tp,) for a type that is not a union."""
    return typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)


def convert(value, tp, from_text: bool):
    """`value` as type `tp`: parsed when it is command-line text (`from_text`), else checked.
    Raises :class:`Mismatch`. Ints pass as floats; bools are never ints; floats must be finite."""
    options = union_members(tp)
    if len(options) > 1:
        if type(None) in options and (value is None or (from_text and str(value).lower() in ("none", "null"))):
            return None
        for option in (o for o in options if o is not type(None)):
            try:
                return convert(value, option, from_text)
            except Mismatch:
                continue
        raise Mismatch
    origin = typing.get_origin(tp)
    if tp is bool:
        if isinstance(value, bool):
            return value
        if from_text and str(value).lower() in TRUE + FALSE:
            return str(value).lower() in TRUE
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if from_text:
            try:
                return int(str(value).replace("_", ""))
            except ValueError:
                pass
    elif tp is float:
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None and from_text:
            try:
                number = float(value)
            except ValueError:
                pass
        if number is not None and math.isfinite(number):
            return float(number)
    elif tp is str:
        if isinstance(value, str) and not (from_text and value.startswith("[")):
            return value
    elif tp is list or origin is list or origin is tuple:
        return _sequence(value, tp, from_text)
    elif tp is dict or origin is dict:
        if from_text and isinstance(value, str):  # "{max_words: 300}" or "max_words: 300"
            value = _yaml(value if value.strip().startswith("{") else f"{{{value}}}")
        if isinstance(value, dict):
            return value
    else:
        raise TypeError(f"no conversion to {type_name(tp)}")  # a field type this module does not know: a bug
    raise Mismatch


def _yaml(text: str):
    from .._optional import require

    yaml = require("yaml", "reading a list or mapping option")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _sequence(value, tp, from_text: bool):
    """A list, or a fixed-length tuple whose items are converted one by one; "8,16" and "[8, 16]" are text forms."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if from_text and isinstance(value, str):
        text = value.strip()
        if text.startswith("(") and text.endswith(")"):  # Python's tuple syntax, (3,5)
            text = text[1:-1]
        value = _yaml(text if text.startswith("[") else f"[{text}]")
    if not isinstance(value, (list, tuple)):
        raise Mismatch
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(args) != len(value):
            raise Mismatch
        return tuple(convert(v, a, False) for v, a in zip(value, args))
    return list(value)


def describe(tp) -> str:
    """What a value of `tp` must be, in words: "an integer", "a finite number or None", ..."""
    words = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string",
             dict: "a mapping", list: "a list"}
    parts = []
    for o in union_members(tp):
        if o is type(None):
            continue
        origin, args = typing.get_origin(o), typing.get_args(o)
        if origin is tuple and args and args[-1] is not Ellipsis:
            parts.append(f"a {'pair' if len(args) == 2 else f'{len(args)}-tuple'} "
                         f"({', '.join(type_name(a) for a in args)})")
        else:
            parts.append(words.get(origin or o, type_name(o)))
    return " or ".join(parts) + (" or None" if type(None) in union_members(tp) else "")


@functools.lru_cache(maxsize=None)
def field_types(cls) -> dict[str, object]:
    """{field name: resolved annotation} of a dataclass."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def check_fields(cfg, rules: dict[str, tuple] | None = None) -> None:
    """Check (and normalise: ints to floats, lists to tuples) every field of the dataclass `cfg` against
    its annotation, then against its rule in `rules` (None passes where the type allows it).
    Raises ConfigError ``name=value must be ...`` for the first field that fails."""
    for name, tp in field_types(type(cfg)).items():
        value = getattr(cfg, name)
        try:
            checked = convert(value, tp, from_text=False)
        except Mismatch:
            raise ConfigError(f"{name}={value!r} must be {describe(tp)}") from None
        if checked is not value:
            object.__setattr__(cfg, name, checked)  # frozen dataclasses too
    for name, (ok, rule) in (rules or {}).items():
        value = getattr(cfg, name)
        if value is not None and not ok(value):
            raise ConfigError(f"{name}={value!r} must be {rule}")

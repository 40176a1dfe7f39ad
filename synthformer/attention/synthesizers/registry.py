"""Registry of synthesizing functions and parsing of attention specs such as ``"R+V"``.

Adding a variant: write one file with a :class:`~synthformer.attention.synthesizers.base.Synthesizer` subclass (its
``position_tables`` name the tables the optimizer groups apart) and add one line to ``SYNTHESIZERS``;
a short name in ``SHORT_NAMES`` is optional (without one the full name is shown).
"""
from __future__ import annotations

from ...errors import ConfigError
from .base import Synthesizer
from .dense import Dense
from .factorized_dense import FactorizedDense
from .factorized_random import FactorizedRandom
from .fixed_random import FixedRandom
from .random import Random
from .vanilla import Vanilla

SYNTHESIZERS: dict[str, type[Synthesizer]] = {
    "vanilla": Vanilla,
    "dense": Dense,
    "random": Random,
    "fixed_random": FixedRandom,
    "factorized_random": FactorizedRandom,
    "factorized_dense": FactorizedDense,
}

# The paper's short names (Table 2 and following), matched case-insensitively.
SHORT_NAMES: dict[str, str] = {
    "v": "vanilla",
    "d": "dense",
    "r": "random",
    "fix": "fixed_random",
    "fr": "factorized_random",
    "fd": "factorized_dense",
}


def canonical_name(name: str) -> str:
    """Full registry name of one synthesizer given its full or short name (any case)."""
    key = name.strip().lower().replace("-", "_")
    key = SHORT_NAMES.get(key, key)
    if key not in SYNTHESIZERS:
        valid = ", ".join(f"{full} ({short.upper() if len(short) < 3 else short.capitalize()})"
                          for short, full in SHORT_NAMES.items())
        raise ConfigError(f"unknown synthesizer {name!r}; valid: {valid}; mix them with '+', e.g. 'R+V'")
    return key


def parse_synthesizers(spec: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``"R+V"`` or ``["random", "vanilla"]`` -> ``("random", "vanilla")`` (order kept, no repeats)."""
    parts = spec.split("+") if isinstance(spec, str) else list(spec)
    names = tuple(canonical_name(p) for p in parts)
    if not names:
        raise ConfigError("empty attention spec; give at least one synthesizer, e.g. 'R' or 'R+V'")
    if len(set(names)) != len(names):
        raise ConfigError(f"attention spec {spec!r} names a synthesizer twice")
    return names


def short_spec(names: tuple[str, ...]) -> str:
    """``("random", "vanilla")`` -> ``"R+V"`` (the paper's notation; a name without a short name as it is)."""
    inverse = {full: short for short, full in SHORT_NAMES.items()}
    return "+".join(n if n not in inverse else inverse[n].upper() if len(inverse[n]) < 3 else inverse[n].capitalize()
                    for n in names)

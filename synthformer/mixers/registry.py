"""The one registry of token mixers: synthesizer specs and baselines, for every slot of a model.

A token-mixer spec is either a synthesizer mixture (``"R+V"``, ``"dense"``, ``["random", "vanilla"]``,
resolved by :mod:`synthformer.attention`) or a baseline name (``"lightconv"``, ``"dynamicconv"``,
``"linformer"``, the rows of ``BASELINES``). Everything the rest of the package asks about a spec is
answered here, from data, never by matching error text:

    resolve_mixer("r+v")            -> MixerSpec(kind="synthesizer", name="random+vanilla", display="R+V", ...)
    display_name("DynamicConv")     -> "dynamicconv"
    check_slot("linformer", causal=True, cross=False)   # raises SlotError: it cannot decode
    build_token_mixer("R+V", embed_dim=64, num_heads=2, max_seq_len=128, causal=True, factorized_k=8)
    mixer_state_numel("R", embed_dim=64, num_heads=2, max_seq_len=128)  # parameters + buffers, nothing allocated
    has_position_tables("R+V")      -> True (trainable tables: what table_lr_mult acts on); "V", "Fix" -> False

Slots: a self-attention slot of an encoder (``causal=False``), of a decoder (``causal=True``), and the
cross-attention of a seq2seq decoder (``cross=True``, which attends to the encoder's output).

Adding a baseline: write its module in this package and add one ``Baseline`` row to ``BASELINES``.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch
from torch import nn

from ..attention import SYNTHESIZERS, SyntheticAttention, parse_synthesizers, short_spec
from ..errors import ConfigError
from .dynamicconv import DynamicConv
from .lightconv import LightConv
from .linformer import Linformer


class MixerError(ConfigError):
    """A token-mixer spec is invalid (base of the two below)."""


class UnknownMixerError(MixerError):
    """The spec names neither a synthesizer mixture nor a baseline."""


class SlotError(MixerError):
    """A valid mixer that cannot go in the slot asked for (e.g. linformer in a causal decoder)."""


@dataclass(frozen=True)
class Baseline:
    """One baseline row: its class and the slots it may fill."""

    cls: type[nn.Module]
    causal: bool  # may fill a causal (decoder) self-attention slot
    why_not_causal: str = ""  # the reason shown when it may not


# Baselines never fill the cross-attention slot: they mix a sequence with itself, so none attends to an encoder.
BASELINES: dict[str, Baseline] = {
    "lightconv": Baseline(LightConv, causal=True),
    "dynamicconv": Baseline(DynamicConv, causal=True),
    "linformer": Baseline(Linformer, causal=False,
                          why_not_causal="its length projection mixes future positions, so it cannot decode"),
}

# Options of SyntheticAttention a model config passes on (the rest of its signature is fixed by the slot).
SYNTHESIZER_OPTIONS = ("factorized_k", "dense_factors", "random_init_scale", "random_init")


@dataclass(frozen=True)
class MixerSpec:
    """A resolved token-mixer spec."""

    kind: str  # "synthesizer" | "baseline"
    name: str  # canonical: "random+vanilla" (members joined by '+') or the baseline's registry name
    display: str  # the paper's notation: "R+V", "D", ... or the baseline name, e.g. "dynamicconv"
    members: tuple[str, ...]  # synthesizer registry names of the mixture; () for a baseline
    causal: bool  # may fill a causal (decoder) self-attention slot
    cross: bool  # may fill a cross-attention slot

    @property
    def is_baseline(self) -> bool:
        return self.kind == "baseline"


def _baseline_key(spec) -> str | None:
    if isinstance(spec, str) and spec.strip().lower() in BASELINES:
        return spec.strip().lower()
    return None


def resolve_mixer(spec: str | list[str] | tuple[str, ...], field: str = "attention") -> MixerSpec:
    """What ``spec`` names; raises UnknownMixerError (naming ``field``) when it names nothing."""
    key = _baseline_key(spec)
    if key is not None:
        row = BASELINES[key]
        return MixerSpec("baseline", key, key, (), causal=row.causal, cross=False)
    parts = spec.split("+") if isinstance(spec, str) else list(spec) if isinstance(spec, (list, tuple)) else None
    if parts is None or not all(isinstance(p, str) for p in parts):
        raise UnknownMixerError(f"{field}={spec!r} is not a token-mixer spec; give a synthesizer spec such as "
                                f"'R+V' or a baseline: {', '.join(BASELINES)}")
    mixed = [p.strip().lower() for p in parts if p.strip().lower() in BASELINES]
    if mixed and len(parts) > 1:
        raise UnknownMixerError(f"{field}={spec!r}: the baseline {mixed[0]!r} cannot be mixed with other mixers; "
                                f"use it alone ({field}={mixed[0]!r}) or mix synthesizers only, e.g. 'R+V'")
    try:
        members = parse_synthesizers(spec)
    except ValueError as e:  # the attention registry's own message names the valid synthesizers
        raise UnknownMixerError(f"{field}={spec!r}: {e}; or a baseline: {', '.join(BASELINES)}") from None
    return MixerSpec("synthesizer", "+".join(members), short_spec(members), members, causal=True, cross=True)


def display_name(spec: str | list[str] | tuple[str, ...]) -> str:
    """``"r+v"`` -> ``"R+V"``; ``"DynamicConv"`` -> ``"dynamicconv"`` (names of runs, rows and plots)."""
    return resolve_mixer(spec).display


def is_baseline(spec) -> bool:
    """True for a baseline name (any case), False for anything else (valid or not)."""
    return _baseline_key(spec) is not None


def has_position_tables(spec: str | list[str] | tuple[str, ...] | MixerSpec) -> bool:
    """Whether the mixer of ``spec`` has trainable position tables: the optimizer's ``tables`` group, what
    ``table_lr_mult`` acts on (synthformer/training/optim.py). Read off the classes, nothing built: a
    synthesizer member's ``position_tables`` when it is ``trainable`` (Fixed Random's table is a buffer). A
    baseline has none: that group holds synthesizers' tables only (tables a baseline declared would join the
    ``positions`` group, beside the position embedding, which is not a table either)."""
    m = spec if isinstance(spec, MixerSpec) else resolve_mixer(spec)
    return any(SYNTHESIZERS[name].position_tables and SYNTHESIZERS[name].trainable for name in m.members)


def check_slot(spec: str | list[str] | tuple[str, ...], *, causal: bool, cross: bool = False,
               field: str = "attention") -> MixerSpec:
    """Resolve ``spec`` and refuse it (SlotError naming ``field``) where it cannot go."""
    m = resolve_mixer(spec, field)
    if cross and not m.cross:
        raise SlotError(f"{field}={spec!r}: baselines cannot attend to an encoder; use a synthesizer spec "
                        "such as 'vanilla'")
    if causal and not m.causal:
        reason = BASELINES[m.name].why_not_causal if m.is_baseline else "it cannot decode"
        raise SlotError(f"{field}={spec!r}: {m.name} cannot be used in a decoder ({reason}); use it in encoders only")
    return m


def baseline_options(name: str) -> tuple[str, ...]:
    """Names of the extra keyword options a baseline accepts (beyond causal and dropout)."""
    params = inspect.signature(BASELINES[name.lower()].cls.__init__).parameters
    return tuple(p for p, v in params.items() if v.kind is v.KEYWORD_ONLY and p not in ("causal", "dropout"))


def build_token_mixer(spec: str | list[str] | tuple[str, ...] | MixerSpec, *, embed_dim: int, num_heads: int,
                      max_seq_len: int, causal: bool = False, cross: bool = False, dropout: float = 0.0,
                      field: str = "attention", synthesizer_options=None, **options) -> nn.Module:
    """The module for ``spec`` in a slot; ``options`` may hold every model-level mixer option
    (factorized_k, dense_factors, random_init_scale, random_init, kernel_size, linformer_k): each mixer takes its own.
    ``synthesizer_options`` (a SynthesizerOptions, as a ModelConfig holds it) goes to a synthesizer as it is."""
    m = spec if isinstance(spec, MixerSpec) else check_slot(spec, causal=causal, cross=cross, field=field)
    if (cross and not m.cross) or (causal and not m.causal):
        check_slot(m.name, causal=causal, cross=cross, field=field)  # a resolved spec in a slot it cannot fill
    if m.is_baseline:
        mine = {k: v for k, v in options.items() if k in baseline_options(m.name)}
        return BASELINES[m.name].cls(embed_dim, num_heads, max_seq_len, causal=causal, dropout=dropout, **mine)
    mine = {k: v for k, v in options.items() if k in SYNTHESIZER_OPTIONS} if synthesizer_options is None else {}
    # a cross-attention layer is never causal: it sees the whole encoder output
    return SyntheticAttention(embed_dim, num_heads, max_seq_len, m.members, causal=causal and not cross,
                              dropout=dropout, options=synthesizer_options, **mine)


def mixer_state_numel(spec, *, embed_dim: int, num_heads: int, max_seq_len: int, causal: bool = False,
                      cross: bool = False, **options) -> int:
    """Elements in the parameters and buffers of one mixer, counted on the meta device (nothing allocated)."""
    with torch.device("meta"):
        module = build_token_mixer(spec, embed_dim=embed_dim, num_heads=num_heads, max_seq_len=max_seq_len,
                                   causal=causal, cross=cross, **options)
    return sum(t.numel() for t in module.parameters()) + sum(t.numel() for t in module.buffers())

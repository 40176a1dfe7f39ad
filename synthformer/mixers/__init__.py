"""Baseline token mixers for the attention slot: LightConv, DynamicConv (Wu et al. 2019), Linformer
(Wang et al. 2020).

Every mixer has the interface of :class:`synthformer.SyntheticAttention`::

    mixer = build_mixer("dynamicconv", embed_dim=256, num_heads=4, max_seq_len=512, causal=True, kernel_size=7)
    out, weights = mixer(x, key_padding_mask=None, need_weights=False)   # x, out: (B, L, d)
    cache = mixer.init_cache(batch_size)                                 # causal convolutions only
    y_t, _ = mixer(x[:, t:t + 1], cache=cache)                           # one step; the cache advances itself
"""
from __future__ import annotations

import inspect

from torch import nn

from ._common import BAND_MAX_LEN, ConvCache
from .dynamicconv import DynamicConv
from .lightconv import LightConv
from .linformer import Linformer

MIXERS: dict[str, type[nn.Module]] = {"lightconv": LightConv, "dynamicconv": DynamicConv, "linformer": Linformer}


def mixer_options(name: str) -> tuple[str, ...]:
    """Names of the extra keyword options a mixer accepts (beyond causal and dropout)."""
    params = inspect.signature(MIXERS[name.lower()].__init__).parameters
    return tuple(p for p, v in params.items() if v.kind is v.KEYWORD_ONLY and p not in ("causal", "dropout"))


def build_mixer(name: str, embed_dim: int, num_heads: int, max_seq_len: int, *, causal: bool = False,
                dropout: float = 0.0, **options) -> nn.Module:
    """Build the mixer registered as ``name`` (case-insensitive); ``options`` are its extra keywords,
    e.g. ``kernel_size`` (convolutions) or ``linformer_k`` (Linformer)."""
    key = name.lower() if isinstance(name, str) else name
    if key not in MIXERS:
        raise ValueError(f"unknown mixer {name!r}; valid names: {', '.join(MIXERS)}")
    unknown = sorted(set(options) - set(mixer_options(key)))
    if unknown:
        raise ValueError(f"{key} does not take option(s) {unknown}; valid options: {', '.join(mixer_options(key))}")
    return MIXERS[key](embed_dim, num_heads, max_seq_len, causal=causal, dropout=dropout, **options)


__all__ = ["MIXERS", "build_mixer", "mixer_options", "LightConv", "DynamicConv", "Linformer", "ConvCache", "BAND_MAX_LEN"]

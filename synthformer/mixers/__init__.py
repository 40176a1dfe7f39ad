"""Baseline token mixers for the attention slot: LightConv, DynamicConv (Wu et al. 2019), Linformer
(Wang et al. 2020).

Every mixer has the interface of :class:`synthformer.SyntheticAttention`::

    mixer = build_mixer("dynamicconv", embed_dim=256, num_heads=4, max_seq_len=512, causal=True, kernel_size=7)
    out, weights = mixer(x, key_padding_mask=None, need_weights=False)   # x, out: (B, L, d)
    cache = mixer.init_cache(batch_size)                                 # causal convolutions only
    y_t, _ = mixer(x[:, t:t + 1], cache=cache)                           # one step; the cache advances itself
"""
from __future__ import annotations

from torch import nn

from ._common import BAND_MAX_LEN, ConvCache
from .dynamicconv import DynamicConv
from .lightconv import LightConv
from .linformer import Linformer
from .registry import (BASELINES, MixerError, MixerSpec, SlotError, UnknownMixerError, baseline_options,
                       build_token_mixer, check_slot, display_name, has_position_tables, is_baseline,
                       mixer_state_numel, resolve_mixer)

# Baseline name -> class, derived from the registry's BASELINES rows (kept for existing callers).
MIXERS: dict[str, type[nn.Module]] = {name: row.cls for name, row in BASELINES.items()}
mixer_options = baseline_options  # the extra keyword options a baseline accepts (beyond causal and dropout)


def build_mixer(name: str, embed_dim: int, num_heads: int, max_seq_len: int, *, causal: bool = False,
                dropout: float = 0.0, **options) -> nn.Module:
    """Build the mixer registered as ``name`` (case-insensitive); ``options`` are its extra keywords,
    e.g. ``kernel_size`` (convolutions) or ``linformer_k`` (Linformer)."""
    key = name.lower() if isinstance(name, str) else name
    if key not in MIXERS:
        raise UnknownMixerError(f"unknown mixer {name!r}; valid names: {', '.join(MIXERS)}")
    unknown = sorted(set(options) - set(mixer_options(key)))
    if unknown:
        raise MixerError(f"{key} does not take option(s) {unknown}; valid options: {', '.join(mixer_options(key))}")
    return MIXERS[key](embed_dim, num_heads, max_seq_len, causal=causal, dropout=dropout, **options)


__all__ = ["BASELINES", "MIXERS", "MixerError", "MixerSpec", "SlotError", "UnknownMixerError", "build_mixer",
           "build_token_mixer", "check_slot", "display_name", "has_position_tables", "is_baseline", "mixer_options", "mixer_state_numel",
           "resolve_mixer", "LightConv", "DynamicConv", "Linformer", "ConvCache", "BAND_MAX_LEN"]

"""Synthetic attention: the synthesizing functions of the Synthesizer paper and the shared layer.

Dimension legend used in shape comments throughout the package:
    B   batch size
    L   sequence length; Lq queries, Lk keys (Lq, Lk <= N)
    N   max_seq_len, the longest sequence the synthesizers' parameters cover
    d   embed_dim, model width
    H   num_heads; d_h = d / H, the width of one head
    E   width of per-head dot-product features (d_h for V and D, k for FR)
    M   number of synthesizers in a mixture
    k   rank of Factorized Random; a, b the factors of Factorized Dense (a * b = N)
"""
from .synthesizers.base import DotLogits, FullLogits, Synthesizer, SynthesizerOptions
from .layer import AttentionCache, SyntheticAttention
from .synthesizers.registry import SHORT_NAMES, SYNTHESIZERS, canonical_name, parse_synthesizers, short_spec

__all__ = ["AttentionCache", "DotLogits", "FullLogits", "SHORT_NAMES", "SYNTHESIZERS", "Synthesizer",
           "SynthesizerOptions", "SyntheticAttention", "canonical_name", "parse_synthesizers", "short_spec"]

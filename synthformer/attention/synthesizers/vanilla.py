"""Vanilla (V): scaled dot-product logits ``(X Wq_h)(X Wk_h)^T / sqrt(d_h)``."""
from __future__ import annotations

import math

from torch import Tensor, nn

from .base import DotLogits, Synthesizer


class Vanilla(Synthesizer):
    uses_keys = True

    def __init__(self, embed_dim, num_heads, max_seq_len, options):
        super().__init__(embed_dim, num_heads, max_seq_len, options)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=options.bias)  # Wq: d x d
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=options.bias)  # Wk: d x d

    def key_features(self, x_k: Tensor) -> Tensor:
        return self.split_heads(self.k_proj(x_k))  # (B, H, Lk, d_h)

    def logits(self, x_q, keys, offset, k_len):
        q = self.split_heads(self.q_proj(x_q)) / math.sqrt(self.head_dim)  # (B, H, Lq, d_h)
        return DotLogits(q, keys)

"""Dense (D): each token predicts its own row of logits, ``F2_h(relu(F1_h(X_i)))`` cut to Lk.

F1 maps d -> d_h per head (one d x d matrix for all heads), F2_h maps d_h -> N. No biases, as in the
official code. The logits are a dot product of the token features ``relu(F1_h x_i)`` with learned
per-position keys (the rows of F2_h), which is how the layer runs them through fused kernels.
"""
from __future__ import annotations

import torch
from torch import nn

from .base import DotLogits, Synthesizer, positions, xavier_uniform_


class Dense(Synthesizer):
    position_tables = ("f2",)
    def __init__(self, embed_dim, num_heads, max_seq_len, options):
        super().__init__(embed_dim, num_heads, max_seq_len, options)
        self.f1 = nn.Linear(embed_dim, embed_dim, bias=False)  # d -> H * d_h
        # F2_h stored transposed, one row per key position: (H, N, d_h)
        self.f2 = nn.Parameter(torch.empty(num_heads, max_seq_len, self.head_dim))
        xavier_uniform_(self.f2, self.head_dim, max_seq_len, 1.0)

    def logits(self, x_q, keys, offset, k_len):
        q = torch.relu(self.split_heads(self.f1(x_q)))  # (B, H, Lq, d_h)
        k = positions(self.f2, 1, 0, k_len).unsqueeze(0)  # (1, H, Lk, d_h)
        return DotLogits(q, k)

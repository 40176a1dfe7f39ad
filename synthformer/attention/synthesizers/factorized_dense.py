"""Factorized Dense (FD): ``C_i[j] = A_i[j // b] * B_i[j % b]`` with a*b = N, cut to Lk.

``A_i = FA_h(relu(F1_h x_i))`` in R^a and ``B_i = FB_h(relu(F1_h x_i))`` in R^b. One factor is
repeat-interleaved and the other tiled, so the N logits of a row are the N distinct products
A[p] * B[q] (a popular port tiles both factors, which repeats a row every lcm(a, b) positions).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ...errors import ConfigError
from .base import FullLogits, Synthesizer, positions, xavier_uniform_


def default_factors(n: int) -> tuple[int, int]:
    """The factor pair a * b = n with a <= b closest to sqrt(n)."""
    a = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return a, n // a


class FactorizedDense(Synthesizer):
    position_tables = ("fa", "fb")
    def __init__(self, embed_dim, num_heads, max_seq_len, options):
        super().__init__(embed_dim, num_heads, max_seq_len, options)
        a, b = options.dense_factors or default_factors(max_seq_len)
        if a * b != max_seq_len or a < 1 or b < 1:
            raise ConfigError(f"dense_factors=({a}, {b}) must multiply to max_seq_len={max_seq_len} "
                             f"(a * b = {a * b}); e.g. use {default_factors(max_seq_len)}")
        self.a, self.b = a, b
        self.f1 = nn.Linear(embed_dim, embed_dim, bias=False)  # d -> H * d_h
        self.fa = nn.Parameter(xavier_uniform_(torch.empty(num_heads, self.head_dim, a), self.head_dim, a, 1.0))
        self.fb = nn.Parameter(xavier_uniform_(torch.empty(num_heads, self.head_dim, b), self.head_dim, b, 1.0))

    def logits(self, x_q, keys, offset, k_len):
        h = torch.relu(self.split_heads(self.f1(x_q)))  # (B, H, Lq, d_h)
        fa = torch.einsum("zhle,hea->zhla", h, self.fa)  # (B, H, Lq, a)
        fb = torch.einsum("zhle,hef->zhlf", h, self.fb)  # (B, H, Lq, b)
        c = (fa.unsqueeze(-1) * fb.unsqueeze(-2)).flatten(-2)  # (B, H, Lq, a*b): index j = p*b + q
        return FullLogits(positions(c, 3, 0, k_len))  # (B, H, Lq, Lk)

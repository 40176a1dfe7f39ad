"""Factorized Random (FR): ``R1_h[:Lq] @ R2_h[:Lk]^T`` with R1_h, R2_h of N x k.

Every query row differs (R1 has one row per position); the official Mesh TensorFlow code broadcast
a single row to all queries, which this avoids.
"""
from __future__ import annotations

from torch import nn

from ...errors import ConfigError
from .base import DotLogits, Synthesizer, positions, random_table


class FactorizedRandom(Synthesizer):
    input_dependent = False
    position_tables = ("r1", "r2")

    def __init__(self, embed_dim, num_heads, max_seq_len, options):
        super().__init__(embed_dim, num_heads, max_seq_len, options)
        k = options.factorized_k
        if not 1 <= k <= max_seq_len:
            raise ConfigError(f"factorized_k={k} must be between 1 and max_seq_len={max_seq_len}")
        self.r1 = nn.Parameter(random_table(num_heads, max_seq_len, k, options))  # (H, N, k)
        self.r2 = nn.Parameter(random_table(num_heads, max_seq_len, k, options))  # (H, N, k)

    def logits(self, x_q, keys, offset, k_len):
        lq = x_q.shape[1]
        return DotLogits(positions(self.r1, 1, offset, lq).unsqueeze(0), positions(self.r2, 1, 0, k_len).unsqueeze(0))

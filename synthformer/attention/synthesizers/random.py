"""Random (R): one learned N x N logit matrix per head, shared by every input; ``R_h[:Lq, :Lk]``."""
from __future__ import annotations

import torch
from torch import nn

from .base import FullLogits, Synthesizer, positions, random_table


class Random(Synthesizer):
    input_dependent = False
    position_tables = ("r",)

    def __init__(self, embed_dim, num_heads, max_seq_len, options):
        super().__init__(embed_dim, num_heads, max_seq_len, options)
        r = random_table(num_heads, max_seq_len, max_seq_len, options)  # (H, N, N)
        if self.trainable:
            self.r = nn.Parameter(r)
        else:  # a buffer: never trained, but saved with the model
            self.register_buffer("r", r)

    def logits(self, x_q, keys, offset, k_len):
        lq = x_q.shape[1]
        if torch.compiler.is_exporting():  # a dynamic length: no branch on L == N (see positions)
            return FullLogits(positions(positions(self.r, 1, offset, lq), 2, 0, k_len).unsqueeze(0))
        if offset == 0 and lq == k_len == self.max_seq_len:  # whole matrix: no slice, whose backward copies N^2
            return FullLogits(self.r.unsqueeze(0))  # (1, H, N, N)
        return FullLogits(self.r[:, offset:offset + lq, :k_len].unsqueeze(0))  # (1, H, Lq, Lk)

"""LightConv: lightweight convolution (Wu et al. 2019, "Pay Less Attention with Lightweight and
Dynamic Convolutions"), in the token-mixing slot.

One learned kernel of width K per head, softmax-normalised over the width and shared by the head's
d/H channels and by every position; the same for the whole batch. Layer equations in ``_conv``.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from ._conv import ConvMixer


class LightConv(ConvMixer):
    """Lightweight convolution mixer: one kernel per head, the same at every position (arguments: ConvMixer;
    ``band_max_len`` defaults to ``BAND_MAX_LEN["lightconv"]``: 128)."""

    name = "lightconv"

    def init_kernel(self) -> None:
        self.weight = nn.Parameter(torch.empty(self.num_heads, self.kernel_size))  # (H, K) kernel logits
        nn.init.xavier_uniform_(self.weight)

    def kernel_logits(self, h: Tensor) -> Tensor:
        return self.weight.view(1, 1, self.num_heads, self.kernel_size)  # (1, 1, H, K)

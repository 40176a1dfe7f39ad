"""DynamicConv: dynamic convolution (Wu et al. 2019, "Pay Less Attention with Lightweight and Dynamic
Convolutions"), in the token-mixing slot.

As LightConv, but the kernel at each time step is predicted from the current conv input alone:
``w_t = softmax_K(W_w h_t + b_w)`` with W_w: d -> H*K. The paper's DynConv baseline. Layer
equations in ``_conv``.
"""
from __future__ import annotations

from torch import Tensor, nn

from ._conv import ConvMixer


class DynamicConv(ConvMixer):
    """Dynamic convolution mixer: num_heads kernels predicted at each position (arguments: ConvMixer;
    ``band_max_len`` defaults to ``BAND_MAX_LEN["dynamicconv"]``: 64)."""

    name = "dynamicconv"

    def init_kernel(self) -> None:
        self.weight_proj = nn.Linear(self.embed_dim, self.num_heads * self.kernel_size)  # h_t -> H*K kernel logits
        nn.init.xavier_uniform_(self.weight_proj.weight)
        nn.init.zeros_(self.weight_proj.bias)

    def kernel_logits(self, h: Tensor) -> Tensor:
        b, length, _ = h.shape
        return self.weight_proj(h).view(b, length, self.num_heads, self.kernel_size)  # (B, L, H, K)

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
    """Dynamic convolution mixer.

    Args:
        embed_dim, num_heads, max_seq_len: as every mixer (num_heads kernels per position, each
            shared by d/H channels).
        causal: kernel covers positions t-K+1 .. t (decoders); otherwise centred on t.
        dropout: DropConnect on the normalised kernel weights (the paper's weight dropout).
        kernel_size: K, default 7 (fairseq's IWSLT/WMT setups use 3, 7, 15 or 31 per layer).
        impl: "auto" (band matrix for L <= band_max_len, unfold above), "band" or "unfold"; all exact.
        band_max_len: length threshold of "auto" (default ``BAND_MAX_LEN[name]``: 64).

    ``forward(..., need_weights=True)`` returns the convolution as a banded (B, H, L, L) matrix.
    """

    name = "dynamicconv"

    def __init__(self, embed_dim: int, num_heads: int, max_seq_len: int, *, causal: bool = False,
                 dropout: float = 0.0, kernel_size: int = 7, impl: str = "auto", band_max_len: int | None = None):
        super().__init__(embed_dim, num_heads, max_seq_len, causal=causal, dropout=dropout,
                         kernel_size=kernel_size, impl=impl, band_max_len=band_max_len)
        self.weight_proj = nn.Linear(embed_dim, num_heads * kernel_size)  # h_t -> H*K kernel logits
        nn.init.xavier_uniform_(self.weight_proj.weight)
        nn.init.zeros_(self.weight_proj.bias)

    def kernel_logits(self, h: Tensor) -> Tensor:
        b, length, _ = h.shape
        return self.weight_proj(h).view(b, length, self.num_heads, self.kernel_size)  # (B, L, H, K)

"""The layer shared by LightConv and DynamicConv (Wu et al. 2019, fairseq's LightConv/DynamicConv layers).

    h   = GLU(x W_in + b_in)                  # (B, L, d): input projection d -> 2d, then GLU
    h   = 0 at padded positions                # padding contributes nothing
    w   = dropout(softmax_K(kernel logits))    # (Bw, Lw, H, K); DropConnect on the normalised weights
    c_t = sum_k w[t, head(ch), k] * h[t + k - pad_l, ch]   # each head's kernel shared by its d/H channels
    out = c W_out + b_out

Subclasses supply the kernel logits (:meth:`kernel_logits`). See ``_common`` for the band/unfold paths.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._common import BAND_MAX_LEN, IMPLS, ConvCache, band_matrix, check_input, check_sizes, conv_band, conv_unfold
from ..errors import InputError


class ConvMixer(nn.Module):
    """Base class of the convolution mixers; see the module docstring for the equations.

    Args:
        embed_dim, num_heads, max_seq_len: as every mixer (num_heads kernels, each shared by d/H channels).
        causal: kernel covers positions t-K+1 .. t (decoders); otherwise centred on t.
        dropout: DropConnect on the normalised kernel weights (the paper's weight dropout).
        kernel_size: K, default 7 (fairseq's IWSLT/WMT setups use 3, 7, 15 or 31 per layer).
        impl: "auto" (band matrix for L <= band_max_len, unfold above), "band" or "unfold"; all exact.
        band_max_len: length threshold of "auto" (default ``BAND_MAX_LEN[name]``).

    ``forward(..., need_weights=True)`` returns the convolution as a banded (B, H, L, L) matrix. A subclass
    makes its kernel's parameters in :meth:`init_kernel` and computes the kernel in :meth:`kernel_logits`.
    """

    name = "conv"

    def __init__(self, embed_dim: int, num_heads: int, max_seq_len: int, *, causal: bool = False,
                 dropout: float = 0.0, kernel_size: int = 7, impl: str = "auto", band_max_len: int | None = None):
        super().__init__()
        check_sizes(self.name, embed_dim, num_heads, max_seq_len, dropout)
        if not isinstance(kernel_size, int) or kernel_size <= 0:
            raise InputError(f"{self.name}: kernel_size must be a positive int, got {kernel_size!r}")
        if impl not in IMPLS:
            raise InputError(f"{self.name}: impl={impl!r} is not one of {IMPLS}")
        self.embed_dim, self.num_heads, self.max_seq_len = embed_dim, num_heads, max_seq_len
        self.head_dim = embed_dim // num_heads
        self.causal, self.dropout, self.kernel_size = causal, dropout, kernel_size
        self.impl = impl  # "auto" | "band" | "unfold"; may be changed after construction
        # "auto" uses the band path for L <= band_max_len; None = the measured default BAND_MAX_LEN[name]
        self.band_max_len = BAND_MAX_LEN[self.name] if band_max_len is None else band_max_len
        # Taps before the current position: t-K+1 .. t when causal, centred otherwise.
        self.pad_l = kernel_size - 1 if causal else kernel_size // 2
        self.in_proj = nn.Linear(embed_dim, 2 * embed_dim)  # d -> 2d, halved again by the GLU
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        nn.init.xavier_uniform_(self.in_proj.weight)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.in_proj.bias)
        nn.init.zeros_(self.out_proj.bias)
        self.init_kernel()

    def init_kernel(self) -> None:
        """Make and initialise the kernel's parameters (the last step of ``__init__``)."""
        raise NotImplementedError

    def kernel_logits(self, h: Tensor) -> Tensor:
        """Kernel logits (Bw, Lw, H, K) for conv inputs ``h`` (B, L, d)."""
        raise NotImplementedError

    def kernel(self, h: Tensor) -> Tensor:
        """Normalised kernel weights with weight dropout applied, (Bw, Lw, H, K)."""
        w = torch.softmax(self.kernel_logits(h), dim=-1)
        return F.dropout(w, self.dropout, self.training)

    def init_cache(self, batch_size: int) -> ConvCache:
        """Empty decoding cache for ``batch_size`` sequences (causal mixers only)."""
        if not self.causal:
            raise InputError(f"{self.name}: init_cache needs a causal mixer (build it with causal=True); "
                             f"a centred kernel reads future tokens and cannot decode incrementally")
        p = self.in_proj.weight
        return ConvCache(torch.zeros(batch_size, self.kernel_size - 1, self.embed_dim, device=p.device, dtype=p.dtype))

    def use_band(self, length: int) -> bool:
        return self.impl == "band" or (self.impl == "auto" and length <= self.band_max_len)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, need_weights: bool = False,
                cache: ConvCache | None = None, attn_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Mix tokens of ``x`` (B, L, d). Returns (out (B, L, d), weights or None).

        ``key_padding_mask``: bool (B, L), True = padding. ``need_weights``: return the effective
        convolution as a banded (B, H, L, L) weight matrix (zero on padded key columns).
        With ``cache`` (causal only), ``x`` holds the new tokens (B, Ls, d), the mask covers all
        positions so far (B, cache.pos + Ls), weights are (B, H, Ls, cache.pos + Ls).
        """
        past = 0 if cache is None else cache.pos
        check_input(self.name, x, self.embed_dim, self.max_seq_len, key_padding_mask, attn_mask, past)
        if cache is not None:
            return self._step(x, key_padding_mask, need_weights, cache)
        b, length, _ = x.shape
        h = F.glu(self.in_proj(x), dim=-1)  # (B, L, d)
        if key_padding_mask is not None:
            h = h.masked_fill(key_padding_mask.unsqueeze(-1), 0.0)
        w = self.kernel(h)  # (Bw, Lw, H, K)
        weights = None
        if need_weights or self.use_band(length):
            out, band = conv_band(h, w, self.pad_l, self.num_heads)  # (B, L, d), (Bw, H, L, L)
            if need_weights:
                weights = band.expand(b, -1, -1, -1)  # (B, H, L, L)
                if key_padding_mask is not None:
                    weights = weights.masked_fill(key_padding_mask[:, None, None, :], 0.0)
        else:
            h_pad = F.pad(h, (0, 0, self.pad_l, self.kernel_size - 1 - self.pad_l))  # (B, L+K-1, d)
            out = conv_unfold(h_pad, w, self.num_heads)  # (B, L, d)
        return self.out_proj(out), weights

    def _step(self, x: Tensor, key_padding_mask: Tensor | None, need_weights: bool,
              cache: ConvCache) -> tuple[Tensor, Tensor | None]:
        """Incremental decoding: the new tokens see the cached K-1 inputs and each other, causally."""
        if not self.causal:
            raise InputError(f"{self.name}: a cache needs a causal mixer (build it with causal=True)")
        b, steps, _ = x.shape
        if cache.batch_size != b:
            raise InputError(f"{self.name}: cache holds batch size {cache.batch_size}, x has batch size {b}")
        h = F.glu(self.in_proj(x), dim=-1)  # (B, Ls, d)
        if key_padding_mask is not None:
            h = h.masked_fill(key_padding_mask[:, -steps:].unsqueeze(-1), 0.0)
        w = self.kernel(h)  # (Bw, Lw, H, K)
        h_ext = torch.cat([cache.buffer, h], dim=1)  # (B, K-1+Ls, d): exactly the causal padding
        out = conv_unfold(h_ext, w, self.num_heads)  # (B, Ls, d)
        weights = None
        if need_weights:
            weights = self._step_weights(w, b, steps, cache.pos, key_padding_mask)
        k1 = self.kernel_size - 1
        cache.buffer = h_ext[:, h_ext.size(1) - k1:]  # (B, K-1, d)
        cache.pos += steps
        return self.out_proj(out), weights

    def _step_weights(self, w: Tensor, b: int, steps: int, pos: int, key_padding_mask: Tensor | None) -> Tensor:
        """Banded weights of one decoding step over all positions so far, (B, H, Ls, pos + Ls)."""
        band = band_matrix(w, steps).expand(b, -1, -1, -1)  # (B, H, Ls, Ls+K-1); column c = position pos-K+1+c
        start = pos - (self.kernel_size - 1)
        weights = band.new_zeros(b, self.num_heads, steps, pos + steps)
        if start >= 0:
            weights[..., start:] = band
        else:
            weights[...] = band[..., -start:]
        if key_padding_mask is not None:
            weights = weights.masked_fill(key_padding_mask[:, None, None, :], 0.0)
        return weights

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, max_seq_len={self.max_seq_len}, "
                f"kernel_size={self.kernel_size}, causal={self.causal}, dropout={self.dropout}, impl={self.impl!r}")

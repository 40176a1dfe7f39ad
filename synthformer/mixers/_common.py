"""Shared pieces of the baseline token mixers: input checks, the decoding cache, and the two exact
implementations of a softmax-normalised, head-shared convolution over time.

Dimension legend: B batch, L sequence length (Ls: new tokens of one decoding step), d embed_dim,
H heads, d_h = d / H channels per head, K kernel width, N max_seq_len.

A convolution kernel ``w`` is given as (Bw, Lw, H, K) with Bw in {1, B} and Lw in {1, L}:
LightConv has one kernel per head (1, 1, H, K); DynamicConv one per position (B, L, H, K).
Tap ``k`` of the kernel at output position ``t`` reads input position ``t + k - pad_l``, where
``pad_l = K - 1`` for causal mixers (taps t-K+1 .. t) and ``K // 2`` otherwise (centred; for even K
the extra tap is on the left).

Two exact ways to apply it, chosen by length (see ``BAND_MAX_LEN``):

* band: scatter the kernel into a banded (Bw, H, L, L) matrix and do one batched matmul. For
  LightConv the matrix is shared by the whole batch, so the batch is folded into the GEMM columns.
* unfold: the K taps of ``x.unfold(1, K, 1)`` (shifted slices of the padded input), contracted with
  ``w`` tap by tap, with a hand-written backward. O(L K d), no L^2 term. Its backward is not itself
  differentiable (no double backward; use impl="band" if you need that).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable
from ..errors import InputError

# "auto" uses the band path up to these lengths, unfold above (per mixer, as ``band_max_len``).
# Measured on a 2-core CPU (fp32, d=256, H=4, K=7, B*L=8192, forward+backward of the convolution,
# one thread): the band matmul costs O(L^2 d) against O(L K d) for unfold, but is one GEMM; LightConv's
# band (one matrix for the whole batch) wins up to L=128 (36 vs 41 ms; 65 vs 54 ms at 256),
# DynamicConv's per-sequence band up to L=64 (41 vs 54 ms; 59 vs 49 ms at 128).
BAND_MAX_LEN = {"lightconv": 128, "dynamicconv": 64}

IMPLS = ("auto", "band", "unfold")


@dataclass
class ConvCache:
    """Incremental-decoding state of a causal convolution mixer (advances itself on every call)."""

    buffer: Tensor  # (B, K-1, d) the last K-1 convolution inputs; zeros before the sequence start
    pos: int = 0  # number of tokens consumed so far

    @property
    def batch_size(self) -> int:
        return self.buffer.size(0)

    def reorder(self, batch_index: Tensor) -> None:
        """Keep/reorder batch rows in place (beam search): ``buffer = buffer[batch_index]``."""
        self.buffer = self.buffer.index_select(0, batch_index)


def check_sizes(name: str, embed_dim: int, num_heads: int, max_seq_len: int, dropout: float) -> None:
    """Fail fast on bad constructor arguments shared by every mixer."""
    if not isinstance(embed_dim, int) or embed_dim <= 0:
        raise InputError(f"{name}: embed_dim must be a positive int, got {embed_dim!r}")
    if not isinstance(num_heads, int) or num_heads <= 0 or embed_dim % num_heads:
        raise InputError(f"{name}: num_heads={num_heads!r} must be a positive divisor of embed_dim={embed_dim}")
    if not isinstance(max_seq_len, int) or max_seq_len <= 0:
        raise InputError(f"{name}: max_seq_len must be a positive int, got {max_seq_len!r}")
    if not 0.0 <= dropout < 1.0:
        raise InputError(f"{name}: dropout must be in [0, 1), got {dropout!r}")


def check_input(name: str, x: Tensor, embed_dim: int, max_seq_len: int, key_padding_mask: Tensor | None,
                attn_mask: Tensor | None, past: int = 0) -> None:
    """Validate ``x`` (B, L, d) and the mask; ``past`` = tokens already in the cache."""
    if not isinstance(x, Tensor) or x.dim() != 3:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise InputError(f"{name}: x must be (batch, length, embed_dim), got shape {shape}")
    b, length, d = x.shape
    if d != embed_dim:
        raise InputError(f"{name}: x has embed_dim {d}, the mixer was built for embed_dim={embed_dim}")
    if past + length > max_seq_len:
        raise InputError(f"{name}: sequence length {past + length} exceeds max_seq_len={max_seq_len}; "
                         f"build the mixer with a larger max_seq_len or shorten the input")
    if attn_mask is not None:
        raise InputError(f"{name} takes no attn_mask (got shape {tuple(attn_mask.shape)}); causality is set by "
                         f"causal=True at construction, padding by key_padding_mask")
    if key_padding_mask is not None:
        if not isinstance(key_padding_mask, Tensor) or key_padding_mask.dtype != torch.bool:
            dtype = key_padding_mask.dtype if isinstance(key_padding_mask, Tensor) else type(key_padding_mask).__name__
            raise InputError(f"{name}: key_padding_mask must be a bool tensor (True = padding), got {dtype}")
        if tuple(key_padding_mask.shape) != (b, past + length):
            raise InputError(f"{name}: key_padding_mask must have shape (batch, length so far) = "
                             f"{(b, past + length)}, got {tuple(key_padding_mask.shape)}")


def band_matrix(w: Tensor, length: int) -> Tensor:
    """Scatter kernels into banded rows: (Bw, Lw, H, K) -> (Bw, H, L, L + K - 1).

    Row ``t`` holds ``w[.., t, :, k]`` in column ``t + k``; column ``c`` multiplies input position
    ``c - pad_l`` of the zero-padded sequence (narrow columns ``pad_l .. pad_l + L`` to drop padding).
    """
    bw, _, h, k = w.shape
    w = w.permute(0, 2, 1, 3).expand(bw, h, length, k)  # (Bw, H, L, K)
    # Skew trick: pad each row to K + L, then re-read the flat buffer with rows of K + L - 1, which
    # shifts row t right by t. Views only, besides the one padded copy.
    w = F.pad(w, (0, length)).reshape(bw, h, length * (k + length))  # (Bw, H, L*(K+L))
    return w[..., : length * (k + length - 1)].view(bw, h, length, k + length - 1)  # (Bw, H, L, L+K-1)


def conv_band(x: Tensor, w: Tensor, pad_l: int, num_heads: int) -> tuple[Tensor, Tensor]:
    """Band-matrix convolution. x (B, L, d), w (Bw, Lw, H, K) -> out (B, L, d), band (Bw, H, L, L)."""
    b, length, d = x.shape
    band = band_matrix(w, length)[..., pad_l: pad_l + length]  # (Bw, H, L, L)
    if w.size(0) == 1:
        # One matrix per head for the whole batch: fold the batch into the GEMM's columns.
        xh = x.view(b, length, num_heads, -1).permute(2, 1, 0, 3).reshape(num_heads, length, -1)  # (H, L, B*d_h)
        out = torch.matmul(band[0], xh)  # (H, L, B*d_h)
        out = out.view(num_heads, length, b, -1).permute(2, 1, 0, 3).reshape(b, length, d)  # (B, L, d)
    else:
        xh = x.view(b, length, num_heads, -1).transpose(1, 2)  # (B, H, L, d_h)
        out = torch.matmul(band, xh).transpose(1, 2).reshape(b, length, d)  # (B, L, d)
    return out, band


class _TapConv(torch.autograd.Function):
    """out[:, t] = sum_j x[:, t + j] * w[.., t, :, j], with a hand-written backward.

    Autograd through K slices would allocate and add K zero-filled input-sized gradients; this
    backward accumulates into one buffer in place (about 2x faster forward+backward on CPU).
    """

    @staticmethod
    def forward(ctx, xh: Tensor, w: Tensor) -> Tensor:  # xh (B, L+K-1, H, d_h), w (Bw, Lw, H, K)
        k = w.size(-1)
        length = xh.size(1) - k + 1
        we = w.unsqueeze(-1)  # (Bw, Lw, H, K, 1): one weight per head, broadcast over its d_h channels
        out = xh[:, :length] * we[..., 0, :]  # (B, L, H, d_h)
        for j in range(1, k):
            out.addcmul_(xh[:, j: j + length], we[..., j, :])
        ctx.save_for_backward(xh, w)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:  # grad (B, L, H, d_h)
        xh, w = ctx.saved_tensors
        k = w.size(-1)
        length = xh.size(1) - k + 1
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            we = w.unsqueeze(-1)  # (Bw, Lw, H, K, 1)
            grad_x = torch.zeros_like(xh)  # (B, L+K-1, H, d_h)
            for j in range(k):
                grad_x[:, j: j + length].addcmul_(grad, we[..., j, :])
        if ctx.needs_input_grad[1]:
            taps = []
            for j in range(k):
                g = (xh[:, j: j + length] * grad).sum(-1)  # (B, L, H)
                g = g.sum(0, keepdim=True) if w.size(0) == 1 else g  # shared over the batch
                taps.append(g.sum(1, keepdim=True) if w.size(1) == 1 else g)  # shared over positions
            grad_w = torch.stack(taps, dim=-1)  # (Bw, Lw, H, K)
        return grad_x, grad_w


def conv_unfold(x_padded: Tensor, w: Tensor, num_heads: int) -> Tensor:
    """Unfold convolution over an already padded input: x_padded (B, L + K - 1, d), w (Bw, Lw, H, K) -> (B, L, d).

    Tap ``j`` of ``x.unfold(1, K, 1)`` is the slice ``x_padded[:, j : j + L]``; the contraction with
    ``w`` runs tap by tap over these slices (K fused multiply-adds on (B, L, d) views, see
    :class:`_TapConv`). An einsum over the unfolded view copies it K times over and measured several
    times slower forward+backward on CPU.
    """
    b, padded_len, d = x_padded.shape
    length = padded_len - w.size(-1) + 1
    xh = x_padded.reshape(b, padded_len, num_heads, d // num_heads)  # (B, L+K-1, H, d_h)
    return _TapConv.apply(xh, w).reshape(b, length, d)  # (B, L, d)

"""Linformer (Wang et al. 2020, "Linformer: Self-Attention with Linear Complexity"), in the token-mixing slot.

Multi-head attention whose keys and values are first projected along the length axis to k rows:

    Q = X Wq,  K = X Wk,  V = X Wv                    # (B, L, d)
    K, V = 0 at padded positions                       # padding contributes nothing
    K' = E[:, :L] K,  V' = F[:, :L] V                  # (B, k, d); E, F: (k, N), cut to the input length
    out = softmax(Q_h K'_h^T / sqrt(d_h)) V'_h  per head, heads merged, then X Wo

E and F are shared by the heads of a layer (the paper's headwise sharing); ``share_kv=True`` also
ties E = F. Encoder only: the length projection mixes future positions into every key, so it can
neither be causal nor decode incrementally.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention.synthesizers.base import positions
from ..errors import InputError
from ._common import check_input, check_sizes


class Linformer(nn.Module):
    """Linformer self-attention.

    Args:
        embed_dim, num_heads, max_seq_len: as every mixer; E, F have max_seq_len columns.
        causal: must be False (raises ValueError otherwise).
        dropout: dropout on the attention weights.
        linformer_k: projected length k (default 32).
        share_kv: tie the key and value projections E = F (default False).
        bias: biases on the Q/K/V/output projections (default True).

    ``forward(..., need_weights=True)`` returns the weights over the k projected keys, (B, H, L, k).
    """

    name = "linformer"

    def __init__(self, embed_dim: int, num_heads: int, max_seq_len: int, *, causal: bool = False,
                 dropout: float = 0.0, linformer_k: int = 32, share_kv: bool = False, bias: bool = True):
        super().__init__()
        check_sizes(self.name, embed_dim, num_heads, max_seq_len, dropout)
        if causal:
            raise InputError("linformer cannot be causal (its length projection mixes future positions); "
                             "use it in encoders only")
        if not isinstance(linformer_k, int) or linformer_k <= 0:
            raise InputError(f"linformer: linformer_k must be a positive int, got {linformer_k!r}")
        self.embed_dim, self.num_heads, self.max_seq_len = embed_dim, num_heads, max_seq_len
        self.head_dim = embed_dim // num_heads
        self.causal, self.dropout, self.k, self.share_kv = False, dropout, linformer_k, share_kv
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        # Length projections (k, N), Xavier-uniform with gain 1/sqrt(2) as fairseq's Linformer example.
        self.E = nn.Parameter(torch.empty(linformer_k, max_seq_len))  # keys: (k, N)
        self.F = None if share_kv else nn.Parameter(torch.empty(linformer_k, max_seq_len))  # values: (k, N)
        for p in (self.E, self.F):
            if p is not None:
                nn.init.xavier_uniform_(p, gain=1 / math.sqrt(2))

    def init_cache(self, batch_size: int):
        raise InputError("linformer cannot decode incrementally (its length projection mixes future positions); "
                         "use it in encoders only")

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, need_weights: bool = False,
                cache=None, attn_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Attend over k length-projected keys. x (B, L, d) -> (out (B, L, d), weights (B, H, L, k) or None)."""
        if cache is not None:
            self.init_cache(0)  # raises
        check_input(self.name, x, self.embed_dim, self.max_seq_len, key_padding_mask, attn_mask)
        b, length, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, L, d) each
        if key_padding_mask is not None:
            pad = key_padding_mask.unsqueeze(-1)  # (B, L, 1)
            k, v = k.masked_fill(pad, 0.0), v.masked_fill(pad, 0.0)
        e = positions(self.E, 1, 0, length)  # (k, L); a cut torch.export keeps dynamic
        f = e if self.F is None else positions(self.F, 1, 0, length)  # (k, L)
        k = torch.matmul(e, k)  # (B, k, d)
        v = torch.matmul(f, v)  # (B, k, d)
        q = q.view(b, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, d_h)
        k = k.view(b, self.k, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, k, d_h)
        v = v.view(b, self.k, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, k, d_h)
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)  # (B, H, L, k)
            weights = F.dropout(weights, p, self.training)
            out = weights @ v  # (B, H, L, d_h)
        else:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)  # (B, H, L, d_h)
        out = out.transpose(1, 2).reshape(b, length, self.embed_dim)  # (B, L, d)
        return self.out_proj(out), weights

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, max_seq_len={self.max_seq_len}, "
                f"linformer_k={self.k}, share_kv={self.share_kv}, dropout={self.dropout}")

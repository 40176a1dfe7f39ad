"""SyntheticAttention: the Synthetic Attention layer of the Synthesizer paper (Section 3).

Per layer: logits ``S = sum_m alpha_m S_m(X)`` from one or more synthesizing functions (alpha a
learnable softmax per head, uniform at start; a single member has no alpha), then the shared tail
``Y = softmax(S + masks) G(X)`` with ``G(X) = X Wv`` per head, dropout on the weights, heads merged,
output projection.

Two ways to compute the tail, equal to float tolerance (tests/test_attention.py, test_fastpaths.py):
* the reference path materialises S and the weights: always used when ``need_weights=True``;
* fast paths (``fast=True``, the default), picked in ``_fast``:
  - no member depends on the input (R, Fix, FR, Fix+FR): one softmax shared by the whole batch, the
    batch folded into the value width (one GEMM per head) via :func:`blocked_attention`; long FR goes
    through the fused kernel instead (O(L) memory); in no-grad eval softmax(R) is cached until the
    weights change; with key padding a masked-normaliser trick keeps the sharing;
  - dot-product members only (V, D, FR, D+V, FR+V) or any mixture without gradients (inference):
    PyTorch's fused ``scaled_dot_product_attention`` (flash on CPU) with the members' features
    concatenated and widths zero-padded to match, other members as a constant float mask;
  - a learned full bias next to a dot product (R+V, R+D, FD+V in training): :func:`blocked_attention`,
    which gives the bias its gradient without (B, H, Lq, Lk) tensors (the fused CPU kernel cannot);
  - attention dropout in training: the shared softmax or PyTorch's SDPA with the bias as mask (one
    dropout mask per head for the whole batch in the shared case); CUDA: SDPA takes a learned mask.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import DotLogits, FullLogits, SynthesizerOptions
from . import blocked as blocked_mod
from .blocked import blocked_attention
from .registry import SYNTHESIZERS, parse_synthesizers, short_spec



def _exporting() -> bool:
    return (torch.jit.is_tracing() or torch.jit.is_scripting() or torch.onnx.is_in_onnx_export()
            or torch.compiler.is_exporting() or torch.compiler.is_compiling())


@dataclass
class AttentionCache:
    """State for incremental decoding; the layer advances it in place.

    Self-attention keeps values (and dot-product keys only when V is a member) in buffers of
    ``max_seq_len`` positions; cross-attention keeps the projected memory, computed once.
    """

    values: Tensor  # (B, H, N, d_h) for self-attention; (B, H, Lm, d_h) for cross-attention once filled
    keys: dict[int, Tensor] = field(default_factory=dict)  # member index -> (B, H, N or Lm, E)
    pos: int = 0  # number of query positions processed so far
    static_len: int | None = None  # cross-attention: memory length once projected

    def reorder(self, index: Tensor) -> None:
        """Select batch rows (beam search): ``index`` (B',) of row numbers."""
        self.values = self.values.index_select(0, index)
        self.keys = {m: k.index_select(0, index) for m, k in self.keys.items()}

    def nbytes(self) -> int:
        return self.values.nbytes + sum(k.nbytes for k in self.keys.values())


class SyntheticAttention(nn.Module):
    """Drop-in Synthetic Attention, batch-first, masks as in ``torch.nn.MultiheadAttention``.

    Args:
        embed_dim: model width d.
        num_heads: H; must divide ``embed_dim``.
        max_seq_len: N, the longest sequence (R, D, FR, FD hold parameters sized by N).
        synthesizers: one name or a mixture, e.g. ``"random"``, ``"R+V"``, ``["dense", "vanilla"]``;
            full names or the paper's short names, case-insensitive.
        causal: mask future positions (decoders); required for incremental decoding.
        dropout: dropout on the attention weights.
        bias: biases on the Q, K, V and output projections.
        factorized_k: k of Factorized Random (paper: 8; 32 for encoding tasks).
        dense_factors: (a, b) of Factorized Dense, a * b = max_seq_len; None picks the pair nearest sqrt(N).
        random_init_scale: multiplier of the Xavier-uniform bound of R / R1 / R2 (1.0 as the official
            code; Fixed Random depends on it: too small and its weights are nearly uniform).
        fast: use the fast paths when weights are not requested.

    Forward: ``out, weights = attn(x, memory=None, key_padding_mask=None, attn_mask=None,
    need_weights=False, cache=None)`` with x (B, Lq, d); memory (B, Lk, d) makes it cross-attention;
    key_padding_mask bool (B, Lk), True = padding; attn_mask (Lq, Lk) or (B or 1, H or 1, Lq, Lk),
    bool (True = masked) or float (added). Returns out (B, Lq, d) and weights (B, H, Lq, Lk) or None.
    With a cache, x holds only the new tokens and key_padding_mask covers all keys so far.
    """

    def __init__(self, embed_dim: int, num_heads: int, max_seq_len: int,
                 synthesizers: str | list[str] | tuple[str, ...] = "vanilla", causal: bool = False,
                 dropout: float = 0.0, bias: bool = True, factorized_k: int = 8,
                 dense_factors: tuple[int, int] | None = None, random_init_scale: float = 1.0,
                 fast: bool = True):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or max_seq_len <= 0:
            raise ValueError(f"embed_dim={embed_dim}, num_heads={num_heads}, max_seq_len={max_seq_len} "
                             "must all be positive")
        if embed_dim % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide embed_dim={embed_dim}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout={dropout} must be in [0, 1)")
        self.embed_dim, self.num_heads, self.max_seq_len = embed_dim, num_heads, max_seq_len
        self.head_dim = embed_dim // num_heads
        self.causal, self.dropout, self.fast = causal, dropout, fast
        self.names = parse_synthesizers(synthesizers)
        options = SynthesizerOptions(factorized_k, tuple(dense_factors) if dense_factors else None,
                                     random_init_scale, bias)
        self.members = nn.ModuleList(SYNTHESIZERS[n](embed_dim, num_heads, max_seq_len, options) for n in self.names)
        # mixture weights alpha = softmax(theta) per head, started uniform
        self.mix_logits = nn.Parameter(torch.zeros(num_heads, len(self.names))) if len(self.names) > 1 else None
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # G(X) = X Wv
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.input_dependent = any(m.input_dependent for m in self.members)
        self._eval_cache: tuple | None = None  # (key, softmax weights) of the shared path in no-grad eval

    @property
    def spec(self) -> str:
        """The mixture in the paper's notation, e.g. ``"R+V"``."""
        return short_spec(self.names)

    def extra_repr(self) -> str:
        return (f"{self.spec}, embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"max_seq_len={self.max_seq_len}, causal={self.causal}, dropout={self.dropout}")

    def mixture_weights(self) -> Tensor:
        """alpha of shape (H, M): softmax over the members, per head."""
        if self.mix_logits is None:
            return torch.ones(self.num_heads, 1, device=self.v_proj.weight.device)
        return torch.softmax(self.mix_logits, dim=-1)

    def init_cache(self, batch_size: int, cross: bool = False) -> AttentionCache:
        """An empty cache for incremental decoding (``cross=True`` for cross-attention)."""
        if not self.causal and not cross:
            raise ValueError("incremental decoding needs causal=True self-attention (or cross=True)")
        w = self.v_proj.weight
        if cross:
            return AttentionCache(values=w.new_zeros(0))
        shape = (batch_size, self.num_heads, self.max_seq_len, self.head_dim)
        keys = {i: w.new_zeros(shape) for i, m in enumerate(self.members) if m.uses_keys}
        return AttentionCache(values=w.new_zeros(shape), keys=keys)

    # ------------------------------------------------------------------ checks
    def _check(self, x: Tensor, memory: Tensor | None, key_padding_mask: Tensor | None, offset: int) -> int:
        if x.dim() != 3 or x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape (batch, length, embed_dim={self.embed_dim}), got {tuple(x.shape)}")
        if memory is not None and (memory.dim() != 3 or memory.shape[-1] != self.embed_dim
                                   or memory.shape[0] != x.shape[0]):
            raise ValueError(f"memory must have shape (batch={x.shape[0]}, length, embed_dim={self.embed_dim}), "
                             f"got {tuple(memory.shape)}")
        lq = x.shape[1]
        if offset + lq > self.max_seq_len:
            raise ValueError(f"query length {offset + lq} exceeds max_seq_len={self.max_seq_len}")
        if memory is not None:
            lk = memory.shape[1]
        else:
            lk = offset + lq
        if lk > self.max_seq_len:
            raise ValueError(f"key length {lk} exceeds max_seq_len={self.max_seq_len}")
        if key_padding_mask is not None:
            if key_padding_mask.dtype != torch.bool:
                raise ValueError(f"key_padding_mask must be a bool tensor (True = padding), got {key_padding_mask.dtype}")
            if tuple(key_padding_mask.shape) != (x.shape[0], lk):
                raise ValueError(f"key_padding_mask must have shape (batch, key length) = {(x.shape[0], lk)}, "
                                 f"got {tuple(key_padding_mask.shape)}")
        return lk

    # ------------------------------------------------------------------ forward
    def forward(self, x: Tensor, memory: Tensor | None = None, key_padding_mask: Tensor | None = None,
                attn_mask: Tensor | None = None, need_weights: bool = False,
                cache: AttentionCache | None = None) -> tuple[Tensor, Tensor | None]:
        offset = cache.pos if cache is not None else 0
        if cache is not None and memory is None and not self.causal:
            raise ValueError("a cache needs causal=True self-attention (or memory for cross-attention)")
        lk = self._check(x, memory, key_padding_mask, offset)
        b, lq, _ = x.shape
        if b == 0 or lq == 0 or lk == 0:  # empty batch or sequence: empty output, as nn.MultiheadAttention
            return self._empty(x, lk, need_weights)
        v, keys = self._values_and_keys(x, memory, cache, offset)  # v: (B, H, Lk, d_h)

        alpha = self.mixture_weights()  # (H, M)
        terms = []
        for i, m in enumerate(self.members):
            t = m.logits(x, keys.get(i), offset, lk)
            terms.append(t if self.mix_logits is None else t.scaled(alpha[:, i]))

        static, bias = self._masks(lq, lk, offset, memory is None, attn_mask, x)
        allowed = static
        if key_padding_mask is not None:
            kp = ~key_padding_mask[:, None, None, :]  # (B, 1, 1, Lk)
            allowed = kp if allowed is None else allowed & kp
        if need_weights or not self.fast or _exporting():
            out, weights = self._reference(terms, v, allowed, bias)
        else:
            weights = None
            out = self._fast(terms, v, static, bias, allowed, key_padding_mask, attn_mask,
                             (offset, lq, lk, attn_mask is None), memory is None)
        out = out.transpose(1, 2).reshape(b, lq, self.embed_dim)  # (B, Lq, d)
        if weights is not None:
            weights = weights.expand(b, -1, -1, -1)  # (B, H, Lq, Lk)
        return self.out_proj(out), weights

    def _empty(self, x: Tensor, lk: int, need_weights: bool) -> tuple[Tensor, Tensor | None]:
        """Output for B = 0, Lq = 0 or Lk = 0: queries with no key output zeros before the projection."""
        b, lq, d = x.shape
        out = self.out_proj(x.new_zeros(b, lq, d))  # (B, Lq, d), still connected to the parameters
        return out, (x.new_zeros(b, self.num_heads, lq, lk) if need_weights else None)

    def _values_and_keys(self, x, memory, cache, offset):
        """Project values and per-key features, reading and writing the cache."""
        src = x if memory is None else memory
        if cache is not None and memory is not None and cache.static_len is not None:
            cache.pos += x.shape[1]
            return cache.values, cache.keys  # cross-attention memory, projected on the first step
        v = self.members[0].split_heads(self.v_proj(src))  # (B, H, L, d_h)
        keys = {i: m.key_features(src) for i, m in enumerate(self.members) if m.uses_keys}
        if cache is None:
            return v, keys
        if memory is not None:
            cache.values, cache.keys, cache.static_len = v, keys, src.shape[1]
            cache.pos += x.shape[1]
            return v, keys
        end = offset + x.shape[1]
        if cache.values.shape[0] != x.shape[0]:
            raise ValueError(f"cache was made for batch {cache.values.shape[0]}, got batch {x.shape[0]}")
        cache.values[:, :, offset:end] = v
        for i, k in keys.items():
            cache.keys[i][:, :, offset:end] = k
        cache.pos = end
        return cache.values[:, :, :end], {i: k[:, :, :end] for i, k in cache.keys.items()}

    def _masks(self, lq, lk, offset, is_self, attn_mask, x):
        """Causal and user masks as ``allowed`` (bool, True = attend) and a float ``bias`` to add."""
        allowed = None
        if self.causal and is_self:
            allowed = torch.ones(lq, lk, dtype=torch.bool, device=x.device).tril(diagonal=offset)  # (Lq, Lk)
        bias = None
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 4) or tuple(attn_mask.shape[-2:]) != (lq, lk):
                raise ValueError(f"attn_mask must have shape (Lq, Lk) = {(lq, lk)} or (B, H, Lq, Lk), "
                                 f"got {tuple(attn_mask.shape)}")
            if attn_mask.dtype == torch.bool:
                allowed = ~attn_mask if allowed is None else allowed & ~attn_mask
            else:
                bias = attn_mask.to(x.dtype)
        return allowed, bias

    def _reference(self, terms, v, allowed, bias):
        """Materialise logits and weights: the paper's equations, literally."""
        s = sum(t.materialize() for t in terms)  # (B or 1, H, Lq, Lk)
        if bias is not None:
            s = s + bias
        if allowed is not None:
            s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
        w = torch.softmax(s, dim=-1)
        if allowed is not None:
            w = w.masked_fill(~allowed, 0.0)  # a query with no visible key outputs zeros
        w = F.dropout(w, self.dropout, self.training)
        return w @ v, w  # (B, H, Lq, d_h)

    def _fast(self, terms, v, static, bias, allowed, key_padding_mask, attn_mask, shape_key, is_self):
        """Pick the fastest exact path (see the module docstring); returns (B, H, Lq, d_h)."""
        offset, lq, lk, _ = shape_key
        # the combined mask is exactly the causal triangle (no user bool mask): the kernel may mask itself
        plain_causal = (self.causal and is_self and offset == 0 and lq == lk
                        and (attn_mask is None or attn_mask.dtype != torch.bool))
        batch_free = all(m is None or m.dim() == 2 or m.shape[0] == 1 for m in (static, bias))
        shared = not self.input_dependent and batch_free
        if self.training and self.dropout > 0:  # dropout needs the weights: shared softmax or SDPA
            out = self._shared(terms, v, static, bias, key_padding_mask, shape_key) if shared else None
            return out if out is not None else self._fused(terms, v, allowed, bias, key_padding_mask,
                                                            plain_causal)
        causal_shift = offset if self.causal and is_self else None
        if shared:
            if key_padding_mask is not None or not (self.training or torch.is_grad_enabled()):
                out = self._shared(terms, v, static, bias, key_padding_mask, shape_key)  # cached in eval
                if out is not None:
                    return out
            else:  # one softmax for the whole batch, folded into the value width: (1, H, Lk, B * d_h)
                b, h, _, dh = v.shape
                vf = v.permute(1, 2, 0, 3).reshape(1, h, lk, b * dh)
                if (all(isinstance(t, DotLogits) for t in terms) and bias is None
                        and h * lq * lk > blocked_mod.BLOCK_ELEMENTS):  # long: more than one block
                    out = self._fused(terms, vf, static, None, None, plain_causal)  # FR via flash
                else:
                    out = self._blocked(terms, vf, static, bias, causal_shift)  # (1, H, Lq, B * d_h)
                if attn_mask is not None and static is not None:  # queries with no visible key output zeros
                    out = out.masked_fill(~static.reshape(-1, *static.shape[-2:]).any(-1, keepdim=True), 0.0)
                return out.view(h, lq, b, dh).permute(2, 0, 1, 3)  # (B, H, Lq, d_h)
        dots = [t for t in terms if isinstance(t, DotLogits)]
        learned_bias = any(t.s.requires_grad or (t.scale is not None and t.scale.requires_grad)
                           for t in terms if isinstance(t, FullLogits)) or (bias is not None and bias.requires_grad)
        if dots and not learned_bias:
            # V, D, FR and their mixtures, and any mixture without gradients: the fused kernel (flash on
            # CPU and GPU) with widths padded to match; a constant bias rides along as the float mask
            return self._fused(terms, v, allowed, bias, key_padding_mask, plain_causal)
        if dots and v.is_cuda:  # CUDA's memory-efficient SDPA kernel differentiates an additive mask itself
            return self._fused(terms, v, allowed, bias, key_padding_mask, plain_causal)
        out = self._blocked(terms, v, allowed, bias, causal_shift)  # e.g. R+V: a learned bias needs dS
        if allowed is not None and (key_padding_mask is not None or attn_mask is not None):
            out = out.masked_fill(~allowed.any(dim=-1, keepdim=True), 0.0)  # queries with no visible key
        return out

    def _blocked(self, terms, v, allowed, bias, causal_shift):
        """Learned biases through :func:`blocked_attention` (no (B, H, Lq, Lk) tensors)."""
        dots = [t for t in terms if isinstance(t, DotLogits)]
        fulls = [t for t in terms if isinstance(t, FullLogits)]
        q = k = None
        if len(dots) == 1:
            q, k = dots[0].q, dots[0].k
        elif dots:
            bq = max(t.q.shape[0] for t in dots)
            q = torch.cat([t.q.expand(bq, -1, -1, -1) for t in dots], dim=-1)  # (B or 1, H, Lq, E_total)
            bk = max(t.k.shape[0] for t in dots)
            k = torch.cat([t.k.expand(bk, -1, -1, -1) for t in dots], dim=-1)  # (B or 1, H, Lk, E_total)
        add = scale = None
        if len(fulls) == 1 and bias is None:  # e.g. alpha_R * R: scaled block by block, never in full
            add, scale = fulls[0].s, fulls[0].scale
        elif fulls:
            add = sum(t.materialize() for t in fulls)
        if bias is not None:
            bias4 = bias if bias.dim() == 4 else bias[None, None]
            add = bias4 if add is None else add + bias4
        if add is not None and add.dim() == 3:
            add = add[None]
        blocked = None
        if allowed is not None:
            blocked = ~(allowed if allowed.dim() == 4 else allowed[None, None])  # (B or 1, H or 1, Lq, Lk)
        return blocked_attention(q, k, v, add, blocked, causal_shift, bias_scale=scale)

    def _fused(self, terms, v, allowed, bias, key_padding_mask, plain_causal):
        """Dot-product members concatenated into one fused kernel call; the rest become an additive bias."""
        b = v.shape[0]
        dots = [t for t in terms if isinstance(t, DotLogits)]
        fulls = [t.materialize() for t in terms if isinstance(t, FullLogits)]
        if not dots:
            return self._reference(terms, v, allowed, bias)[0]
        q = torch.cat([t.q.expand(b, -1, -1, -1) for t in dots], dim=-1)  # (B, H, Lq, E_total)
        k = torch.cat([t.k.expand(b, -1, -1, -1) for t in dots], dim=-1)  # (B, H, Lk, E_total)
        add = sum(fulls) if fulls else None
        if bias is not None:
            add = bias if add is None else add + bias
        mask, is_causal = add, False
        if allowed is not None:
            if add is None and allowed.dim() == 2 and plain_causal:
                is_causal = True  # plain causal: let the kernel skip masked blocks
            else:  # finite fill, so rows with no visible key stay NaN-free (zeroed below)
                base = add if add is not None else q.new_zeros(())
                mask = base.masked_fill(~allowed, torch.finfo(q.dtype).min)
        p = self.dropout if self.training else 0.0
        e, dv = q.shape[-1], v.shape[-1]
        if e < dv:  # zero features leave q k^T unchanged; fused kernels want one width for q, k and v
            q, k = F.pad(q, (0, dv - e)), F.pad(k, (0, dv - e))
        elif e > dv:  # zero value columns, cut off below
            v = F.pad(v, (0, e - dv))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=is_causal, scale=1.0)
        out = out[..., :dv]
        if allowed is not None and not is_causal:
            dead = ~allowed.any(dim=-1, keepdim=True)  # (B, 1, Lq, 1): queries with no visible key
            out = out.masked_fill(dead, 0.0)
        return out  # (B, H, Lq, d_h)

    def _shared(self, terms, v, static, bias, key_padding_mask, shape_key):
        """Batch-independent logits: one softmax per head, the batch folded into one GEMM per head.

        Returns None when a row has (almost) no visible key, leaving it to the exact path.
        """
        b, h, lk, dh = v.shape
        w = self._shared_weights(terms, static, bias, shape_key)  # (H, Lq, Lk)
        w = F.dropout(w, self.dropout, self.training)
        vf = v.permute(1, 2, 0, 3)  # (H, Lk, B, d_h)
        if key_padding_mask is None:
            return (w @ vf.reshape(h, lk, b * dh)).view(h, -1, b, dh).permute(2, 0, 1, 3)  # (B, H, Lq, d_h)
        # softmax over the real keys = (w @ (m * v)) / (w @ m), m = 1 for real keys, 0 for padding
        m = (~key_padding_mask).to(v.dtype).t()[None, :, :, None].expand(h, -1, -1, 1)  # (H, Lk, B, 1)
        y = (w @ torch.cat([vf * m, m], dim=-1).reshape(h, lk, -1)).view(h, -1, b, dh + 1)  # (H, Lq, B, d_h+1)
        den = y[..., -1:]
        if bool((den < 1e-6).any()):
            return None
        return (y[..., :-1] / den).permute(2, 0, 1, 3)  # (B, H, Lq, d_h)

    def _shared_weights(self, terms, static, bias, shape_key):
        """softmax of the shared logits (H, Lq, Lk); kept between calls in no-grad eval."""
        reuse = not self.training and not torch.is_grad_enabled() and shape_key[3] and not _exporting()
        if reuse:
            device = self.v_proj.weight.device.type
            autocast = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else None
            key = shape_key + (static is None, autocast) + tuple(
                (t.data_ptr(), t._version) for t in (*self.parameters(), *self.buffers()))
            if self._eval_cache is not None and self._eval_cache[0] == key:
                return self._eval_cache[1]
        s = sum(t.materialize() for t in terms)[0]  # (H, Lq, Lk)
        if bias is not None:
            s = s + bias.reshape(-1, *s.shape[-2:])
        if static is not None:
            keep = static.reshape(-1, *s.shape[-2:])  # (H or 1, Lq, Lk)
            s = s.masked_fill(~keep, torch.finfo(s.dtype).min)
        w = torch.softmax(s, dim=-1)
        if static is not None:
            w = w.masked_fill(~keep, 0.0)
        if reuse:
            self._eval_cache = (key, w)
        return w

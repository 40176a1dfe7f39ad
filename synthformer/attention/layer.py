"""SyntheticAttention: the Synthetic Attention layer of the Synthesizer paper (Section 3).

Per layer: logits ``S = sum_m alpha_m S_m(X)`` from one or more synthesizing functions (alpha a
learnable softmax per head, uniform at start; a single member has no alpha), then the shared tail
``Y = softmax(S + masks) G(X)`` with ``G(X) = X Wv`` per head, dropout on the weights, heads merged,
output projection.

How the tail is computed is chosen per call, visibly (synthformer/attention/kernels/paths.py):
:meth:`SyntheticAttention.forward` computes values, the members' logits (:class:`DotLogits` or
:class:`FullLogits`) and the masks, describes the call as a :class:`~synthformer.attention.kernels.paths.Route`
(member forms, training, grad, dropout, masks and their batch-dependence, device, lengths, exporting), asks
the pure function :func:`~synthformer.attention.kernels.paths.choose_path` for a path, and runs
``PATHS[path](PathInputs(...))``. The paths: ``literal`` (the equations, S and the weights materialised:
``need_weights=True``, ``fast=False``, tracing/export/compile), ``shared_softmax`` / ``shared_fused`` /
``shared_blocked`` (logits that do not depend on X, one softmax for the whole batch), ``fused`` (PyTorch's
``scaled_dot_product_attention`` over the members' dot-product features) and ``blocked`` (learned full logits
through :func:`~synthformer.attention.kernels.blocked.blocked_attention`) and ``flex`` (learned full logits beside a
dot product in training on CUDA: FlexAttention with a ``score_mod``). All equal the literal path to float
tolerance (tests/test_fastpaths.py, test_fuzz.py); tests/test_routes.py names the path of every variant and
mixture in every mode. B = 0, Lq = 0 or Lk = 0 returns empty (or zero) outputs before any path.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from ..errors import ConfigError, InputError
from .kernels import paths
from .synthesizers.base import DotLogits, FullLogits, SynthesizerOptions
from .kernels.paths import Path, PathInputs, Route
from .synthesizers.registry import SYNTHESIZERS, parse_synthesizers, short_spec


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


def _compute_dtype(v: Tensor) -> str:
    """The dtype attention computes in: autocast's where it is on for v's device, else v's."""
    dev = v.device.type
    try:
        on = torch.is_autocast_enabled(dev)
    except RuntimeError:  # a device autocast does not know (meta): no autocast there
        on = False
    dtype = torch.get_autocast_dtype(dev) if on else v.dtype
    return str(dtype).removeprefix("torch.")


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
        random_init_scale: multiplier of the init bound of R / R1 / R2 (Fixed Random depends on it: too
            small and its weights are nearly uniform).
        random_init: ``"xavier"`` (default): per-head Xavier-uniform, bound ``sqrt(6 / (2N))`` for R;
            ``"glorot3d"``: the official Mesh TensorFlow draw, Glorot over the 3-D variable [N, H, N],
            bound ``sqrt(6 / (N (H + N)))`` (about ``sqrt(2 / (H + N))`` times smaller); see
            :func:`~synthformer.attention.synthesizers.base.init_bound`.
        fast: use the fast paths when weights are not requested.
        options: a ready :class:`~synthformer.attention.synthesizers.base.SynthesizerOptions` (what a model config holds);
            given, it replaces ``bias``, ``factorized_k``, ``dense_factors``, ``random_init_scale``, ``random_init``.

    Forward: ``out, weights = attn(x, memory=None, value=None, key_padding_mask=None, need_weights=False,
    attn_mask=None, average_attn_weights=False, is_causal=False, *, cache=None)`` with x (B, Lq, d);
    memory (B, Lk, d) makes it cross-attention; key_padding_mask (B, Lk), bool (True = padding) or float
    (added to the logits, ``-inf`` = padding); attn_mask (Lq, Lk), (B * H, Lq, Lk) or (B or 1, H or 1, Lq, Lk),
    bool (True = masked) or float (added); is_causal: hide later keys in this call (self-attention).
    Returns out (B, Lq, d) and, with need_weights, the weights (B, H, Lq, Lk), or (B, Lq, Lk) averaged over
    the heads with ``average_attn_weights=True``; else None. With a cache, x holds only the new tokens and
    key_padding_mask covers all keys so far.

    The positional order is ``nn.MultiheadAttention``'s (batch_first=True): ``attn(x, x, x)`` is
    self-attention (the key *is* the query), ``attn(x, memory, memory)`` cross-attention. Values are
    always projected from the keys, so a value other than the key tensor is refused. Two defaults differ
    from MultiheadAttention and are kept for existing callers: ``need_weights=False`` (the fast paths) and
    ``average_attn_weights=False`` (per-head weights); pass both to get MultiheadAttention's output.
    """

    def __init__(self, embed_dim: int, num_heads: int, max_seq_len: int,
                 synthesizers: str | list[str] | tuple[str, ...] = "vanilla", causal: bool = False,
                 dropout: float = 0.0, bias: bool = True, factorized_k: int = 8,
                 dense_factors: tuple[int, int] | None = None, random_init_scale: float = 1.0,
                 fast: bool = True, random_init: str = "xavier", options: SynthesizerOptions | None = None):
        super().__init__()
        for name, value in (("embed_dim", embed_dim), ("num_heads", num_heads), ("max_seq_len", max_seq_len)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):  # True is not 1 head, 8.5 no length
                raise ConfigError(f"{name}={value!r} must be a positive integer")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real):
            raise ConfigError(f"dropout={dropout!r} must be a number in [0, 1)")
        embed_dim, num_heads, max_seq_len = int(embed_dim), int(num_heads), int(max_seq_len)
        if embed_dim <= 0 or num_heads <= 0 or max_seq_len <= 0:
            raise ConfigError(f"embed_dim={embed_dim}, num_heads={num_heads}, max_seq_len={max_seq_len} "
                             "must all be positive")
        if embed_dim % num_heads:
            raise ConfigError(f"num_heads={num_heads} must divide embed_dim={embed_dim}")
        if not 0.0 <= dropout < 1.0:
            raise ConfigError(f"dropout={dropout} must be in [0, 1)")
        self.embed_dim, self.num_heads, self.max_seq_len = embed_dim, num_heads, max_seq_len
        self.head_dim = embed_dim // num_heads
        self.causal, self.dropout, self.fast = causal, dropout, fast
        self.names = parse_synthesizers(synthesizers)
        if options is None:  # checked once, by SynthesizerOptions itself
            options = SynthesizerOptions(factorized_k, tuple(dense_factors) if dense_factors else None,
                                         random_init_scale, bias, random_init=random_init)
        self.members = nn.ModuleList(SYNTHESIZERS[n](embed_dim, num_heads, max_seq_len, options) for n in self.names)
        # mixture weights alpha = softmax(theta) per head, started uniform
        self.mix_logits = nn.Parameter(torch.zeros(num_heads, len(self.names))) if len(self.names) > 1 else None
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # G(X) = X Wv
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.input_dependent = any(m.input_dependent for m in self.members)
        self._softmax_cache = paths.SoftmaxCache()  # the shared softmax of the last no-grad eval call

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
            raise InputError("incremental decoding needs causal=True self-attention (or cross=True)")
        w = self.v_proj.weight
        if cross:
            return AttentionCache(values=w.new_zeros(0))
        shape = (batch_size, self.num_heads, self.max_seq_len, self.head_dim)
        keys = {i: w.new_zeros(shape) for i, m in enumerate(self.members) if m.uses_keys}
        return AttentionCache(values=w.new_zeros(shape), keys=keys)

    # ------------------------------------------------------------------ checks
    def _memory(self, x: Tensor, key: Tensor | None, value: Tensor | None, is_causal: bool) -> Tensor | None:
        """The memory of a call given as nn.MultiheadAttention's (query, key, value); None for self-attention."""
        if value is not None and value is not key:
            raise InputError("value must be the key tensor itself (SyntheticAttention projects the values from "
                             "the keys): call attn(x, x, x) or attn(x) for self-attention, attn(x, memory, memory) "
                             "or attn(x, memory) for cross-attention")
        if key is None or key is x:
            return None
        if self.causal or is_causal:
            raise InputError("causal attention is self-attention: pass the query itself as key, attn(x, x, x) or "
                             "attn(x); for cross-attention use a layer built with causal=False and is_causal=False")
        return key

    def _check(self, x: Tensor, memory: Tensor | None, key_padding_mask: Tensor | None, offset: int,
               attn_mask: Tensor | None = None) -> int:
        if x.dim() != 3 or x.shape[-1] != self.embed_dim:
            raise InputError(f"x must have shape (batch, length, embed_dim={self.embed_dim}), got {tuple(x.shape)}")
        if memory is not None and (memory.dim() != 3 or memory.shape[-1] != self.embed_dim
                                   or memory.shape[0] != x.shape[0]):
            raise InputError(f"memory must have shape (batch={x.shape[0]}, length, embed_dim={self.embed_dim}), "
                             f"got {tuple(memory.shape)}")
        lq = x.shape[1]
        if offset + lq > self.max_seq_len:
            raise InputError(f"query length {offset + lq} exceeds max_seq_len={self.max_seq_len}")
        if memory is not None:
            lk = memory.shape[1]
        else:
            lk = offset + lq
        if lk > self.max_seq_len:
            raise InputError(f"key length {lk} exceeds max_seq_len={self.max_seq_len}")
        weight = self.v_proj.weight
        if not x.is_floating_point():
            raise InputError(f"x must be a floating-point tensor (embeddings), got {x.dtype}")
        for name, t in (("x", x), ("memory", memory)):
            if t is not None and t.device != weight.device:
                raise InputError(f"{name} is on {t.device}, the layer's parameters on {weight.device}; move one "
                                 f"of them (attn.to({str(t.device)!r}) or {name}.to({str(weight.device)!r}))")
        if x.dtype != weight.dtype and not _autocast_on(x.device.type):
            raise InputError(f"x is {x.dtype}, the layer's parameters {weight.dtype}; cast one of them "
                             f"(x.to({weight.dtype}) or attn.to({x.dtype})), or run under torch.autocast")
        for name, t in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
            if t is not None and t.device != x.device:
                raise InputError(f"{name} is on {t.device}, x on {x.device}; put them on one device")
        if attn_mask is not None and attn_mask.dtype != torch.bool and not attn_mask.is_floating_point():
            # as nn.MultiheadAttention: an integer 0/1 mask added as a bias would leave masked keys most of the weight
            raise InputError(f"attn_mask must be bool (True = masked) or float (added to the logits), got "
                             f"{attn_mask.dtype}; use attn_mask.bool() for a 0/1 mask, or a float mask with -inf")
        if key_padding_mask is not None:
            if key_padding_mask.dtype != torch.bool and not key_padding_mask.is_floating_point():
                raise InputError(f"key_padding_mask must be bool (True = padding) or float (added to the logits, "
                                 f"-inf = padding), got {key_padding_mask.dtype}")
            if tuple(key_padding_mask.shape) != (x.shape[0], lk):
                raise InputError(f"key_padding_mask must have shape (batch, key length) = {(x.shape[0], lk)}, "
                                 f"got {tuple(key_padding_mask.shape)}")
        return lk

    # ------------------------------------------------------------------ forward
    def forward(self, x: Tensor, memory: Tensor | None = None, value: Tensor | None = None,
                key_padding_mask: Tensor | None = None, need_weights: bool = False, attn_mask: Tensor | None = None,
                average_attn_weights: bool = False, is_causal: bool = False, *,
                cache: AttentionCache | None = None) -> tuple[Tensor, Tensor | None]:
        memory = self._memory(x, memory, value, is_causal)
        causal = self.causal or is_causal
        offset = cache.pos if cache is not None else 0
        if cache is not None and memory is None and not self.causal:
            raise InputError("a cache needs causal=True self-attention (or memory for cross-attention)")
        lk = self._check(x, memory, key_padding_mask, offset, attn_mask)
        b, lq, _ = x.shape
        if b == 0 or lq == 0 or lk == 0:  # empty batch or sequence: empty output, as nn.MultiheadAttention
            out, weights = self._empty(x, lk, need_weights)
            return out, weights if weights is None or not average_attn_weights else weights.mean(1)
        pad_bias = None
        if key_padding_mask is not None and key_padding_mask.dtype != torch.bool:  # float, added: -inf is padding
            pad_bias = key_padding_mask.masked_fill(torch.isneginf(key_padding_mask), 0.0)  # (B, Lk)
            key_padding_mask = torch.isneginf(key_padding_mask)
        v, keys = self._values_and_keys(x, memory, cache, offset)  # v: (B, H, Lk, d_h)

        alpha = self.mixture_weights()  # (H, M)
        terms = []
        for i, m in enumerate(self.members):
            t = m.logits(x, keys.get(i), offset, lk)
            terms.append(t if self.mix_logits is None else t.scaled(alpha[:, i]))

        static, bias = self._masks(lq, lk, offset, causal and memory is None, attn_mask, pad_bias, x)
        allowed = static
        if key_padding_mask is not None:
            kp = ~key_padding_mask[:, None, None, :]  # (B, 1, 1, Lk)
            allowed = kp if allowed is None else allowed & kp
        literal = need_weights or not self.fast or x.device.type == "meta"  # meta: shapes only, the equations
        route = self._route(terms, v, lq, key_padding_mask, attn_mask, static, bias, literal)
        path = paths.choose_path(route)
        causal_self = causal and memory is None
        inputs = PathInputs(
            terms=terms, v=v, static=static, allowed=allowed, bias=bias, key_padding_mask=key_padding_mask,
            user_mask=attn_mask is not None, causal_shift=offset if causal_self else None,
            plain_causal=(causal_self and offset == 0 and lq == lk
                          and (attn_mask is None or attn_mask.dtype != torch.bool)),
            dropout=self.dropout if self.training else 0.0, fallback=paths.fallback_path(route))
        if path is Path.SHARED_SOFTMAX and not (self.training or route.grad) and attn_mask is None:
            inputs.cache, inputs.cache_key = self._softmax_cache, self._cache_key(offset, lq, lk, static)
        out, weights = paths.PATHS[path](inputs)  # (B, H, Lq, d_h)
        out = out.transpose(1, 2).reshape(b, lq, self.embed_dim)  # (B, Lq, d)
        if not need_weights:
            weights = None  # the literal path computes them in any case
        elif weights is not None:
            weights = weights.expand(b, -1, -1, -1)  # (B, H, Lq, Lk)
            weights = weights.mean(1) if average_attn_weights else weights  # (B, Lq, Lk) as nn.MultiheadAttention
        return self.out_proj(out), weights

    def _empty(self, x: Tensor, lk: int, need_weights: bool) -> tuple[Tensor, Tensor | None]:
        """Output for B = 0, Lq = 0 or Lk = 0: queries with no key output zeros before the projection."""
        b, lq, d = x.shape
        out = self.out_proj(x.new_zeros(b, lq, d))  # (B, Lq, d), still connected to the parameters
        return out, (x.new_zeros(b, self.num_heads, lq, lk) if need_weights else None)

    def _route(self, terms, v, lq, key_padding_mask, attn_mask, static, bias, literal) -> Route:
        """The facts :func:`~synthformer.attention.kernels.paths.choose_path` decides on."""
        fulls = [t for t in terms if isinstance(t, FullLogits)]
        grad = torch.is_grad_enabled()  # (a slice of R taken under no_grad still says requires_grad)
        exporting = paths.is_exporting()
        return Route(
            forms=tuple("dot" if isinstance(t, DotLogits) else "full" for t in terms),
            input_dependent=self.input_dependent,
            full_needs_grad=grad and (any(t.s.requires_grad or (t.scale is not None and t.scale.requires_grad)
                                          for t in fulls) or (bias is not None and bias.requires_grad)),
            training=self.training, grad=grad, dropout=self.dropout,
            key_padding=key_padding_mask is not None,
            attn_mask="float" if bias is not None else None if attn_mask is None else "bool",
            masks_batch_free=all(m is None or m.dim() == 2 or m.shape[0] == 1 for m in (static, bias)),
            device=v.device.type, logits_per_example=self.num_heads * lq * v.shape[2],
            exporting=exporting, literal=literal, batch=v.shape[0], dtype=_compute_dtype(v),
            device_memory=0 if exporting else paths.device_memory(v.device),
            wide_features=sum(t.q.shape[-1] for t in terms if isinstance(t, DotLogits)) > v.shape[-1])

    def _cache_key(self, offset, lq, lk, static) -> tuple:
        """(facts, sources) of the shared softmax: what shapes it, and every tensor its logits come from."""
        device = self.v_proj.weight.device.type
        autocast = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else None
        facts = (offset, lq, lk, static is None, autocast)
        return facts, (*self.members.parameters(), *self.members.buffers(),
                       *(() if self.mix_logits is None else (self.mix_logits,)))

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
            raise InputError(f"cache was made for batch {cache.values.shape[0]}, got batch {x.shape[0]}")
        cache.values[:, :, offset:end] = v
        for i, k in keys.items():
            cache.keys[i][:, :, offset:end] = k
        cache.pos = end
        return cache.values[:, :, :end], {i: k[:, :, :end] for i, k in cache.keys.items()}

    def _masks(self, lq, lk, offset, causal_self, attn_mask, pad_bias, x):
        """Causal and user masks as ``allowed`` (bool, True = attend) and a float ``bias`` to add (the float
        attn_mask plus a float key padding mask's finite part ``pad_bias`` (B, Lk))."""
        allowed = None
        if causal_self:
            allowed = torch.ones(lq, lk, dtype=torch.bool, device=x.device).tril(diagonal=offset)  # (Lq, Lk)
        bias = None
        if attn_mask is not None:
            b, h = x.shape[0], self.num_heads
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) == (b * h, lq, lk):  # nn.MultiheadAttention's 3-D
                attn_mask = attn_mask.view(b, h, lq, lk)
            if (attn_mask.dim() not in (2, 4) or tuple(attn_mask.shape[-2:]) != (lq, lk)
                    or (attn_mask.dim() == 4 and (attn_mask.shape[0] not in (1, b) or attn_mask.shape[1] not in (1, h)))):
                raise InputError(f"attn_mask must have shape (Lq, Lk) = {(lq, lk)}, (B * H, Lq, Lk) = {(b * h, lq, lk)} "
                                 f"or (B or 1, H or 1, Lq, Lk) = ({b} or 1, {h} or 1, {lq}, {lk}), got "
                                 f"{tuple(attn_mask.shape)}")
            if attn_mask.dtype == torch.bool:
                allowed = ~attn_mask if allowed is None else allowed & ~attn_mask
            else:
                bias = attn_mask.to(x.dtype)
        if pad_bias is not None:
            pb = pad_bias.to(x.dtype)[:, None, None, :].expand(-1, 1, lq, -1)  # (B, 1, Lq, Lk)
            bias = pb if bias is None else bias + pb
        return allowed, bias


def _autocast_on(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` (False for a device autocast does not know, e.g. meta)."""
    try:
        return torch.is_autocast_enabled(device_type)
    except RuntimeError:
        return False

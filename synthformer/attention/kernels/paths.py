"""Attention paths: the ways to compute ``softmax(S + masks) V``, and the one pure function that picks one.

As torchtune chooses between SDPA and flex attention and Hugging Face looks attention functions up in a
registry, the layer describes a call as a :class:`Route` (plain facts, no tensors), :func:`choose_path`
names the :class:`Path`, and :data:`PATHS` maps every name to one function of one signature:
``fn(PathInputs) -> (out (B, H, Lq, d_h), weights (B or 1, H, Lq, Lk) or None)``. All paths equal the
literal one to float tolerance (tests/test_fastpaths.py, test_fuzz.py); tests/test_routes.py asserts the
path of every registry variant and mixture in every mode.

=================  ===========================================================================================
path               when (first match in :func:`choose_path`) and how
=================  ===========================================================================================
``literal``        ``need_weights=True``, ``fast=False``, or tracing/exporting/compiling: the paper's equations,
                   S and the weights materialised (exports correctly; a compiler may fuse it); also learned
                   full logits (FD, and R, FD beside a dot product) in training on CUDA while the batch's
                   logits fit the device's memory (:func:`cuda_literal_elements`): faster there than
                   FlexAttention and the blocked kernels
``shared_softmax`` batch-independent logits (R, Fix, FR, Fix+FR) and batch-free masks, with dropout in
                   training, key padding, no-grad eval, or on CUDA (where the blocked kernels' loops over
                   heads and row blocks are launch-bound): one softmax (H, Lq, Lk) for the whole batch, the
                   batch folded into one GEMM per head, padding by a masked normaliser; cached between
                   no-grad eval calls until the weights change
``shared_fused``   the same logits in training, all members dot products (FR) and long (more logits per example
                   than one block; on CUDA more than ``CUDA_SHARED_FUSED_ELEMENTS``): batch folded into the
                   values of one flash kernel call, O(L) memory
``shared_blocked`` the same logits otherwise in training: batch folded, :func:`blocked_attention`
``flex``           learned full logits beside a dot product (R+V, R+D, FD+V) in training on CUDA, many logits:
                   FlexAttention, the full logits added by a ``score_mod`` that captures them (its backward
                   gives their gradient, no (B, H, Lq, Lk) tensors); ``fused`` where FlexAttention is missing
``fused``          a dot-product member and no learned full logits (V, D, D+V, FR+V; any mixture without
                   gradients; dropout in training): ``scaled_dot_product_attention`` on the members'
                   concatenated features, widths zero-padded, full members as a float mask
``mixture``        on CPU in fp32, no float or bool ``attn_mask`` (causal and key padding only), where the compiled
                   kernel of :mod:`synthformer.attention.kernels.mixture` is built: learned full logits beside a dot product
                   (R+V, Fix+V, R+D, FD+V, R+D+V) with gradients, or dot features wider than the values (D+V,
                   FR+V) in training: flash-style forward and backward in C++, the table's gradient summed over the
                   batch block by block, v never padded to the features' width (measurements at MIXTURE_DTYPES)
``blocked``        learned full logits otherwise in training (FD off CUDA or past the literal limit; R+V with a
                   user mask, or without the compiled kernel): :func:`blocked_attention`, the bias gradient
                   without (B, H, Lq, Lk) tensors
=================  ===========================================================================================

Below the paths, two more choices are named the same way: :func:`choose_shared_product` (how
``shared_softmax`` multiplies its softmax into the batch: :class:`SharedProduct`, from :data:`SHARED_PRODUCTS`)
and :func:`~synthformer.attention.kernels.blocked.choose_kernel` (which kernel ``blocked`` and ``shared_blocked`` run:
:class:`~synthformer.attention.kernels.blocked.Kernel`, from ``blocked.KERNELS``); tests/test_routes.py asserts both.

Attention dropout in training takes ``shared_softmax`` (one dropout mask per head for the whole batch),
else ``fused`` with a dot product, else ``literal`` (FD alone). Queries with no visible key output zeros.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from . import blocked as blocked_mod
from . import mixture as mixture_mod
from ..synthesizers.base import DotLogits, FullLogits
from .blocked import blocked_attention


class Path(str, Enum):
    LITERAL = "literal"
    SHARED_SOFTMAX = "shared_softmax"
    SHARED_FUSED = "shared_fused"
    SHARED_BLOCKED = "shared_blocked"
    FUSED = "fused"
    BLOCKED = "blocked"
    FLEX = "flex"
    MIXTURE = "mixture"


@dataclass(frozen=True)
class Route:
    """Everything the choice of path depends on."""

    forms: tuple[str, ...]  # per member: "dot" (q k^T: V, D, FR) or "full" (R, Fix, FD)
    input_dependent: bool  # some member's logits depend on X (V, D, FD); else one softmax serves the batch
    full_needs_grad: bool  # a full member (or the float attn_mask) needs a gradient: R, FD, a mixture weight
    training: bool
    grad: bool  # torch.is_grad_enabled()
    dropout: float  # the layer's attention dropout probability
    key_padding: bool
    attn_mask: str | None  # None, "bool" or "float"
    masks_batch_free: bool  # causal and user masks are (Lq, Lk) or have batch dimension 1
    device: str  # "cpu", "cuda", ...
    logits_per_example: int  # H * Lq * Lk
    exporting: bool  # tracing, exporting or compiling (see is_exporting)
    literal: bool  # need_weights=True or fast=False
    batch: int = 1  # B (the literal path's logits on CUDA grow with it)
    dtype: str = "float32"  # the dtype attention computes in: the values' dtype, or autocast's
    wide_features: bool = False  # the dot members' features together are wider than the values (D+V, FR+V)
    device_memory: int = 0  # total bytes of the CUDA device (0 elsewhere or unknown): the literal path's limit


def is_exporting() -> bool:
    """True under ``torch.jit`` tracing/scripting, ONNX export, ``torch.export`` or ``torch.compile``."""
    return (torch.jit.is_tracing() or torch.jit.is_scripting() or torch.onnx.is_in_onnx_export()
            or torch.compiler.is_exporting() or torch.compiler.is_compiling())


def choose_path(r: Route) -> Path:
    """The path a call takes (the table in the module docstring). Pure: reads only ``r`` and the module's limits."""
    if r.literal or r.exporting:
        return Path.LITERAL
    dots = "dot" in r.forms
    shared = not r.input_dependent and r.masks_batch_free
    if r.training and r.dropout > 0:  # dropout needs the weights
        return Path.SHARED_SOFTMAX if shared else Path.FUSED if dots else Path.LITERAL
    if shared:
        if r.key_padding or not (r.training or r.grad):
            return Path.SHARED_SOFTMAX
        all_dots = all(f == "dot" for f in r.forms) and r.attn_mask != "float"
        if r.device == "cuda":  # the blocked kernels' loops are launch-bound there
            long = r.logits_per_example > CUDA_SHARED_FUSED_ELEMENTS
            return Path.SHARED_FUSED if all_dots and long else Path.SHARED_SOFTMAX
        if all_dots and r.logits_per_example > blocked_mod.BLOCK_ELEMENTS:
            return Path.SHARED_FUSED
        return Path.SHARED_BLOCKED
    if r.full_needs_grad and r.device == "cuda":
        if r.batch * r.logits_per_example <= cuda_literal_elements(r.device_memory):
            return Path.LITERAL
        if dots:
            return Path.FLEX if flex_available() else Path.FUSED
    if (dots and (r.full_needs_grad or (r.wide_features and r.training and r.grad)) and r.device == "cpu"
            and r.attn_mask is None and r.dtype in MIXTURE_DTYPES and mixture_mod.available()):
        return Path.MIXTURE
    if dots and not r.full_needs_grad:
        return Path.FUSED
    return Path.BLOCKED


CUDA_LITERAL_ELEMENTS = 1 << 26  # learned full logits in training on CUDA: the literal path up to this many logits
# in the batch (or more where the device has the memory: cuda_literal_elements), FlexAttention (beside a dot
# product) or the blocked kernels (FD) above. Speed, H200, one layer d=256, H=4, 8192 tokens, train step
# (benchmarks/gpu_routes.py --mixtures, session 12): literal / flex time 0.56-0.78x at L=256, 0.22-0.43x at 1024
# (2^25 logits), 0.14-0.37x at 4096 (2^27) for R+V, R+D, FD+V, R+D+V (flex's backward accumulates the captured
# bias's gradient over the batch). Memory: the literal path keeps 4.5 (R+V) to 5.8 (FD+V) (B, H, Lq, Lk) fp32
# tensors' worth for the backward (counted by saved-tensor hooks), about 1.1-1.5 GiB a layer at this limit; flex
# keeps O(B L) and the (H, Lq, Lk) bias gradient, so above it memory decides. Session 34, same shapes: at L=4096,
# B=2 (2^27 logits) literal 6.5 / 9.4 ms (R+V, not causal / causal), 10.8 / 13.5 (FD+V), 7.0 / 9.7 (FD alone)
# against flex's 30.6 / 31.4 and 33.9 / 35.5 and blocked's 16.9 / 111.6 (V 5.0 / 3.9); FD literal / blocked time
# 0.77x / 0.24x at L=256 (not causal / causal), 0.80x / 0.14x at 1024 (benchmarks/results/routes-h200-s34.md).
CUDA_LITERAL_BYTES_PER_LOGIT = 24  # what the literal path keeps for the backward: up to 5.8 fp32 (B, H, Lq, Lk) tensors
CUDA_LITERAL_MEMORY_SHARE = 24  # one layer's literal path may keep 1/24 of the device's memory (H200: 2^27.9 logits)
CUDA_SHARED_FUSED_ELEMENTS = 1 << 25  # logits shared by the batch, all dot products (FR), in training on CUDA: one
# shared softmax up to this many logits per example, shared_fused above, where the shared softmax's (H, L, L)
# copies (~4 of them, 2 GiB a layer at H=4, L=4096 in fp32) outweigh its speed. H200, d=256, H=4, 8192 tokens,
# train step (session 34): FR at L=4096 shared_softmax 3.6 / 4.9 ms (not causal / causal), shared_fused 4.9 /
# 3.6 (V 4.7 / 4.0); its peak memory was 2.03x one (B, H, L, L) fp32 tensor at B=2 (target <= 0.5x)


def cuda_literal_elements(device_memory: int) -> int:
    """The most logits in a batch for which learned full logits train through the literal path on CUDA: what one
    layer's saved tensors (``CUDA_LITERAL_BYTES_PER_LOGIT`` a logit) fit in ``1/CUDA_LITERAL_MEMORY_SHARE`` of
    the device's ``device_memory`` bytes, and never fewer than ``CUDA_LITERAL_ELEMENTS`` (0: unknown memory)."""
    return max(CUDA_LITERAL_ELEMENTS, device_memory // (CUDA_LITERAL_BYTES_PER_LOGIT * CUDA_LITERAL_MEMORY_SHARE))


@functools.lru_cache(maxsize=None)
def _cuda_total_memory(index: int) -> int:
    return torch.cuda.get_device_properties(index).total_memory


def device_memory(device: torch.device) -> int:
    """Total bytes of a CUDA device (cached per device); 0 elsewhere."""
    if device.type != "cuda":
        return 0
    return _cuda_total_memory(torch.cuda.current_device() if device.index is None else device.index)


MIXTURE_DTYPES = ("float32", "bfloat16")  # the compiled mixture kernel computes in fp32 (bf16 autocast casts up: R+V
# layer train step vs V under bf16 autocast, 1 thread, AMX Xeon: blocked in bf16 0.81x / 0.28x at L=256 / 1024, the
# kernel in fp32 0.78x / 0.58x); a float64 call keeps its precision on the blocked path. Layer train step speed vs
# V, fp32, 1 thread, d=256, H=4, 4096 tokens, L = 256 / 1024 / 4096 (Intel Xeon, shared; benchmarks/mixtures.py,
# RESULTS.md issue 51, six runs): R+V blocked 0.41/0.49/0.30x -> mixture 0.82-0.96/0.66-0.87/0.56-0.69x; D+V fused
# (v padded to 128) 0.56/0.56/0.57x (A/B) -> mixture 0.64-0.72/0.57-0.67/0.64-0.73x (its FLOP bound 0.73/0.68/0.65x);
# FR+V fused 0.85/0.91/0.90x (A/B) -> mixture 0.89-0.96/0.80-0.97/0.87-0.96x


def flex_available() -> bool:
    """PyTorch ships FlexAttention (torch >= 2.5)."""
    try:
        import torch.nn.attention.flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def fallback_path(r: Route) -> Path:
    """Exact path for ``shared_softmax`` with key padding when a row's visible weight underflows: the path
    the call would take if its logits were not shared by the batch."""
    return choose_path(replace(r, input_dependent=True))


class SoftmaxCache:
    """The shared softmax of the last no-grad eval call, reused only while its key holds: the call's shape
    facts (offset, lengths, mask, autocast) and the values of every tensor the logits come from (the
    members' tables and the mixture weights), compared value for value with private copies. Keyed on
    content, not on parameter versions: fused and foreach optimizers, ``p.data`` edits and
    ``load_state_dict`` change weights without a version a key could see."""

    def __init__(self):
        self.facts: tuple | None = None
        self.sources: tuple[Tensor, ...] = ()  # private copies
        self.weights: Tensor | None = None

    def get(self, facts: tuple, sources: tuple[Tensor, ...]) -> Tensor | None:
        if self.facts != facts or len(self.sources) != len(sources) or not all(
                c.shape == t.shape and c.dtype == t.dtype and c.device == t.device and torch.equal(c, t)
                for c, t in zip(self.sources, sources)):
            return None
        return self.weights

    def put(self, facts: tuple, sources: tuple[Tensor, ...], weights: Tensor) -> None:
        self.facts, self.sources, self.weights = facts, tuple(t.detach().clone() for t in sources), weights


@dataclass
class PathInputs:
    """The one argument of every path function."""

    terms: list[DotLogits | FullLogits]  # members' logits, mixture weights applied
    v: Tensor  # (B, H, Lk, d_h)
    static: Tensor | None  # causal and user bool masks, True = attend: (Lq, Lk) or (B or 1, H or 1, Lq, Lk)
    allowed: Tensor | None  # static and key padding combined, same convention
    bias: Tensor | None  # user float mask, added: (Lq, Lk) or (B or 1, H or 1, Lq, Lk)
    key_padding_mask: Tensor | None  # (B, Lk), True = padding
    user_mask: bool  # an attn_mask was given
    causal_shift: int | None  # causal self-attention: key j visible from query i iff j <= i + shift
    plain_causal: bool  # static is exactly the causal triangle, Lq == Lk, no offset: the kernel may mask itself
    dropout: float  # dropout probability on the weights (0.0 outside training)
    fallback: Path  # see fallback_path
    cache: SoftmaxCache | None = None  # shared_softmax: reuse while cache_key holds
    cache_key: tuple = ()  # (facts, sources) of SoftmaxCache.get


PathResult = tuple[Tensor, Tensor | None]
FEW_QUERIES = 16  # shared_softmax with at most this many query rows (decoding) multiplies per example: folding
# the batch into one GEMM would copy every cached value each step for a matrix-vector product


def literal(a: PathInputs) -> PathResult:
    """Materialise logits and weights: the paper's equations, literally."""
    s = sum(t.materialize() for t in a.terms)  # (B or 1, H, Lq, Lk)
    if a.bias is not None:
        s = s + a.bias
    if a.allowed is not None:
        s = s.masked_fill(~a.allowed, torch.finfo(s.dtype).min)
    w = torch.softmax(s, dim=-1)
    if a.allowed is not None:
        w = w.masked_fill(~a.allowed, 0.0)  # a query with no visible key outputs zeros
    w = F.dropout(w, a.dropout, a.dropout > 0)
    return w @ a.v, w  # (B, H, Lq, d_h)


class SharedProduct(str, Enum):
    """How ``shared_softmax`` multiplies its one (H, Lq, Lk) softmax into the batch's values."""

    PER_EXAMPLE = "per_example"  # no key padding, at most FEW_QUERIES query rows (decoding): w @ v per example
    FOLDED = "folded"  # no key padding: the batch folded into the columns of one GEMM per head
    NORMALISED = "normalised"  # key padding: w @ [m v | m], divided by the masked normaliser per example;
    # when a row's visible keys hold (almost) no weight, the call goes on as the route's fallback path instead


def choose_shared_product(q_rows: int, key_padding: bool) -> SharedProduct:
    """The product ``shared_softmax`` runs (pure)."""
    if key_padding:
        return SharedProduct.NORMALISED
    return SharedProduct.PER_EXAMPLE if q_rows <= FEW_QUERIES else SharedProduct.FOLDED


def shared_softmax(a: PathInputs) -> PathResult:
    """One softmax per head for the whole batch, multiplied in as :func:`choose_shared_product` names."""
    w = _shared_weights(a)  # (H, Lq, Lk)
    wd = F.dropout(w, a.dropout, True) if a.dropout > 0 else w
    return SHARED_PRODUCTS[choose_shared_product(w.shape[1], a.key_padding_mask is not None)](a, w, wd)


def _per_example(a: PathInputs, w: Tensor, wd: Tensor) -> PathResult:
    """Decoding: no copy of the cached values for what is a matrix-vector product per example."""
    return wd.unsqueeze(0) @ a.v, None  # (B, H, Lq, d_h)


def _folded(a: PathInputs, w: Tensor, wd: Tensor) -> PathResult:
    b, h, lk, dh = a.v.shape
    vf = a.v.permute(1, 2, 0, 3).reshape(h, lk, b * dh)  # (H, Lk, B * d_h)
    return (wd @ vf).view(h, -1, b, dh).permute(2, 0, 1, 3), None  # (B, H, Lq, d_h)


def _normalised(a: PathInputs, w: Tensor, wd: Tensor) -> PathResult:
    """Softmax over the real keys = (w @ (m * v)) / (w @ m), m = 1 for real keys, 0 for padding."""
    b, h, lk, dh = a.v.shape
    vf = a.v.permute(1, 2, 0, 3)  # (H, Lk, B, d_h)
    m = (~a.key_padding_mask).to(a.v.dtype).t()[None, :, :, None].expand(h, -1, -1, 1)  # (H, Lk, B, 1)
    if a.dropout > 0:  # dropout after normalising, as the literal path: the normaliser from undropped weights
        num = (wd @ (vf * m).reshape(h, lk, -1)).view(h, -1, b, dh)  # (H, Lq, B, d_h)
        den = (w @ m.reshape(h, lk, b)).unsqueeze(-1)  # (H, Lq, B, 1)
    else:
        y = (w @ torch.cat([vf * m, m], dim=-1).reshape(h, lk, -1)).view(h, -1, b, dh + 1)  # (H, Lq, B, d_h+1)
        num, den = y[..., :-1], y[..., -1:]
    if bool((den < 1e-6).any()):  # a row's visible keys hold (almost) no weight: exact per-example path
        return PATHS[a.fallback](a)
    return (num / den).permute(2, 0, 1, 3), None  # (B, H, Lq, d_h)


SHARED_PRODUCTS: dict[SharedProduct, Callable[[PathInputs, Tensor, Tensor], PathResult]] = {
    SharedProduct.PER_EXAMPLE: _per_example,
    SharedProduct.FOLDED: _folded,
    SharedProduct.NORMALISED: _normalised,
}


def shared_blocked(a: PathInputs) -> PathResult:
    """One softmax for the whole batch, folded into the value width, through :func:`blocked_attention`."""
    vf = _fold(a.v)  # (1, H, Lk, B * d_h)
    out = _blocked(a.terms, vf, a.static, a.bias, a.causal_shift)  # (1, H, Lq, B * d_h)
    return _unfold(_zero_dead_static(a, out), a.v), None


def shared_fused(a: PathInputs) -> PathResult:
    """Dot-product logits shared by the batch (FR), batch folded into the values of one flash kernel call."""
    vf = _fold(a.v)  # (1, H, Lk, B * d_h)
    out = _fused(a.terms, vf, a.static, None, a.plain_causal, 0.0)  # (1, H, Lq, B * d_h)
    return _unfold(_zero_dead_static(a, out), a.v), None


def fused(a: PathInputs) -> PathResult:
    """The members' dot-product features through ``scaled_dot_product_attention``, full members as its mask."""
    return _fused(a.terms, a.v, a.allowed, a.bias, a.plain_causal, a.dropout), None


def mixture(a: PathInputs) -> PathResult:
    """Dot members concatenated, a learned full member as the bias, through the compiled kernel of
    :mod:`~synthformer.attention.kernels.mixture` (causal and key padding masks applied inside; no user mask here)."""
    dots = [t for t in a.terms if isinstance(t, DotLogits)]
    qscale = None
    if len(dots) == 1:  # one dot member (R+V, FD+V): its mixture weight applied by the kernel, q never scaled in full
        q, k, qscale = dots[0].q, dots[0].k, dots[0].scale
        _, _, add, scale = _operands([t for t in a.terms if isinstance(t, FullLogits)], None)
    else:
        q, k, add, scale = _operands(a.terms, None)
    out = mixture_mod.mixture_attention(q, k, a.v, add, scale, a.key_padding_mask, a.causal_shift, qscale)
    return out, None  # (B, H, Lq, d_h); queries with no visible key output zeros


def blocked(a: PathInputs) -> PathResult:
    """Learned full logits through :func:`blocked_attention` (no (B, H, Lq, Lk) tensors)."""
    plain = a.plain_causal and a.allowed is not None and a.allowed.dim() == 2  # no padding or user mask
    out = _blocked(a.terms, a.v, a.allowed, a.bias, a.causal_shift, plain)
    if a.allowed is not None and (a.key_padding_mask is not None or a.user_mask):
        out = out.masked_fill(~a.allowed.any(dim=-1, keepdim=True), 0.0)  # queries with no visible key
    return out, None


def flex(a: PathInputs) -> PathResult:
    """FlexAttention over the members' dot-product features, full members (and the float mask) added by a
    ``score_mod`` that captures them, masks by ``-inf`` there: its backward differentiates the captured
    logits (R's gradient summed over the batch) block by block. CUDA runs it compiled; elsewhere PyTorch
    runs it eagerly (forward only on CPU: the numerics tests)."""
    b, dv = a.v.shape[0], a.v.shape[-1]
    dots = [t for t in a.terms if isinstance(t, DotLogits)]
    q = torch.cat([t.features().expand(b, -1, -1, -1) for t in dots], dim=-1)  # (B, H, Lq, E_total)
    k = torch.cat([t.k.expand(b, -1, -1, -1) for t in dots], dim=-1)  # (B, H, Lk, E_total)
    fulls = [t.materialize() for t in a.terms if isinstance(t, FullLogits)]
    add = sum(fulls) if fulls else None
    if a.bias is not None:
        add = a.bias if add is None else add + a.bias
    add = None if add is None else add if add.dim() == 4 else add[None, None]  # (B or 1, H or 1, Lq, Lk)
    keep = None if a.allowed is None else a.allowed if a.allowed.dim() == 4 else a.allowed[None, None]
    v, e = a.v, q.shape[-1]
    width = max(16, 1 << (max(e, dv) - 1).bit_length())  # one power-of-two width >= 16 for q, k and v
    q, k, v = F.pad(q, (0, width - e)), F.pad(k, (0, width - e)), F.pad(v, (0, width - dv))
    out = _flex_fn(q.device)(q, k, v, score_mod=_score_mod(add, keep), scale=1.0)[..., :dv]
    if a.allowed is not None:
        out = out.masked_fill(~a.allowed.any(dim=-1, keepdim=True), 0.0)  # queries with no visible key
    return out, None  # (B, H, Lq, d_h)


def _score_mod(add: Tensor | None, keep: Tensor | None):
    """score + add[b, h, i, j], -inf where keep is False; size-1 dimensions broadcast."""
    def index(t, *ix):
        return t[tuple(x if n > 1 else 0 for x, n in zip(ix, t.shape))]

    def score_mod(score, b, h, i, j):
        if add is not None:
            score = score + index(add, b, h, i, j).to(score.dtype)
        if keep is not None:
            score = torch.where(index(keep, b, h, i, j), score, -float("inf"))
        return score
    return score_mod


_FLEX_COMPILED = {}


def _flex_fn(device: torch.device):
    """``flex_attention``, compiled once per device type on CUDA (its fast kernel), eager elsewhere."""
    from torch.nn.attention.flex_attention import flex_attention
    if device.type != "cuda":
        return flex_attention
    if "cuda" not in _FLEX_COMPILED:
        # dynamic=False compiles once per shape, dtype and mask form: a bench or a model with several lengths
        # passes dynamo's default of 8, past which it would silently run the unfused eager kernel
        config = torch._dynamo.config
        name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
        setattr(config, name, max(getattr(config, name), 64))
        _FLEX_COMPILED["cuda"] = torch.compile(flex_attention, dynamic=False)
    return _FLEX_COMPILED["cuda"]


PATHS: dict[Path, Callable[[PathInputs], PathResult]] = {
    Path.LITERAL: literal,
    Path.SHARED_SOFTMAX: shared_softmax,
    Path.SHARED_FUSED: shared_fused,
    Path.SHARED_BLOCKED: shared_blocked,
    Path.FUSED: fused,
    Path.BLOCKED: blocked,
    Path.FLEX: flex,
    Path.MIXTURE: mixture,
}


# ---------------------------------------------------------------------------------------------- helpers
def _fold(v: Tensor) -> Tensor:
    """(B, H, Lk, d_h) -> (1, H, Lk, B * d_h): the batch as value columns of one shared softmax."""
    b, h, lk, dh = v.shape
    return v.permute(1, 2, 0, 3).reshape(1, h, lk, b * dh)


def _unfold(out: Tensor, v: Tensor) -> Tensor:
    """(1, H, Lq, B * d_h) -> (B, H, Lq, d_h)."""
    b, h, _, dh = v.shape
    return out.view(h, -1, b, dh).permute(2, 0, 1, 3)


def _zero_dead_static(a: PathInputs, out: Tensor) -> Tensor:
    if a.user_mask and a.static is not None:  # queries with no visible key output zeros
        return out.masked_fill(~a.static.reshape(-1, *a.static.shape[-2:]).any(-1, keepdim=True), 0.0)
    return out


def _shared_weights(a: PathInputs) -> Tensor:
    """softmax of the batch-shared logits, (H, Lq, Lk); reused from ``a.cache`` while its key holds."""
    if a.cache is not None and (w := a.cache.get(*a.cache_key)) is not None:
        return w
    s = sum(t.materialize() for t in a.terms)[0]  # (H, Lq, Lk)
    if a.bias is not None:
        s = s + a.bias.reshape(-1, *s.shape[-2:])
    if a.static is not None:
        keep = a.static.reshape(-1, *s.shape[-2:])  # (H or 1, Lq, Lk)
        s = s.masked_fill(~keep, torch.finfo(s.dtype).min)
    w = torch.softmax(s, dim=-1)
    if a.static is not None:
        w = w.masked_fill(~keep, 0.0)
    if a.cache is not None:
        a.cache.put(*a.cache_key, w)
    return w


def _blocked(terms, v, allowed, bias, causal_shift, plain_causal=False) -> Tensor:
    """Dot-product members concatenated, full members summed (or one kept scaled), into :func:`blocked_attention`."""
    q, k, add, scale = _operands(terms, bias)
    masked = None
    if allowed is not None:
        masked = ~(allowed if allowed.dim() == 4 else allowed[None, None])  # (B or 1, H or 1, Lq, Lk)
    return blocked_attention(q, k, v, add, masked, causal_shift, bias_scale=scale, plain_causal=plain_causal)


def _operands(terms, bias):
    """(q, k, add, scale): dot members' features concatenated (None without any), full members and the float
    mask ``bias`` summed into ``add`` (B or 1, H, Lq, Lk), or one full member kept apart from its per-head
    ``scale`` (H,) so kernels scale it block by block."""
    dots = [t for t in terms if isinstance(t, DotLogits)]
    fulls = [t for t in terms if isinstance(t, FullLogits)]
    q = k = None
    if len(dots) == 1:
        q, k = dots[0].features(), dots[0].k
    elif dots:
        bq = max(t.q.shape[0] for t in dots)
        q = torch.cat([t.features().expand(bq, -1, -1, -1) for t in dots], dim=-1)  # (B or 1, H, Lq, E_total)
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
    return q, k, add, scale


def _fused(terms, v, allowed, bias, plain_causal, dropout) -> Tensor:
    """One ``scaled_dot_product_attention`` call: dot members concatenated, full members and ``bias`` as mask."""
    b = v.shape[0]
    dots = [t for t in terms if isinstance(t, DotLogits)]
    fulls = [t.materialize() for t in terms if isinstance(t, FullLogits)]
    q = torch.cat([t.features().expand(b, -1, -1, -1) for t in dots], dim=-1)  # (B, H, Lq, E_total)
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
    e, dv = q.shape[-1], v.shape[-1]
    if e < dv:  # zero features leave q k^T unchanged; fused kernels want one width for q, k and v
        q, k = F.pad(q, (0, dv - e)), F.pad(k, (0, dv - e))
    elif e > dv:  # zero value columns, cut off below
        v = F.pad(v, (0, e - dv))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=is_causal, scale=1.0)
    out = out[..., :dv]
    if allowed is not None and not is_causal:
        out = out.masked_fill(~allowed.any(dim=-1, keepdim=True), 0.0)  # queries with no visible key
    return out  # (B, H, Lq, d_h)

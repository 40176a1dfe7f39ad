"""Blocked attention with learned logits: ``softmax(q k^T + bias, masked) v`` without (B, H, Lq, Lk) tensors.

PyTorch's fused ``scaled_dot_product_attention`` covers plain dot products, but on CPU it falls back to
its slow "math" path (which materialises every logit) as soon as the additive mask needs a gradient
(Random in a mixture), or the query/key width differs from the value width (a concatenated mixture such
as D+V, or Factorized Random with the batch folded into the values). This function fills that gap: it
walks over blocks of (batch, query rows), keeps only one block of logits alive, recomputes them in the
backward pass (as flash attention does) and reduces the gradient of a batch-shared bias (R) over the
batch block by block. Memory grows with L (plus the bias gradient itself), not with B * L^2.

Which kernel runs is named (:class:`Kernel`) by the pure :func:`choose_kernel` and run from :data:`KERNELS`
(tests/test_routes.py asserts it for every variant and mode):

=================  =========================================================================================
kernel             when (first match) and how
=================  =========================================================================================
``shared``         the logits are a bias alone, shared by the batch (R, Fix, with the batch folded into v):
                   :class:`_SharedBiasAttention`, one (head, row-block) at a time, the weights kept for backward
``fused_forward``  q, k and v of one width (R+V, R+D): the forward by PyTorch's fused kernel (on CPU the flash
                   kernel with its log-sum-exp, :func:`~synthformer.attention.kernels.aten.attention_with_lse`), the
                   backward block by block
``loop_forward``   otherwise (FD, R+D+V, a mask per example with R): forward and backward block by block
=================  =========================================================================================

Shapes (legend in ``__init__``): q (Bq, H, Lq, E) or None; k (Bk, H, Lk, E) or None; v (B, H, Lk, dv);
bias (Bb, H, Lq, Lk) or None; blocked (Bm, Hm, Lq, Lk) bool (True = masked) or None, where each
leading dimension is either B or 1 (shared by the batch). A row with no visible key attends uniformly;
callers zero such rows (the layer does).
"""
from __future__ import annotations

from enum import Enum
from typing import Callable

import torch
from torch import Tensor

from .aten import attention_with_lse, cpu_flash_available, softmax_into

BLOCK_ELEMENTS = 1 << 22  # logits per block: 16 MiB in fp32; few enough blocks that per-op overhead stays small, small enough to reuse heap pages
CAUSAL_SPLIT = 8  # causal blocks are this much smaller: thinner row blocks skip more of the masked keys (R+V
# causal layer train time / V at L=1024, 1 thread: 1.97x with BLOCK_ELEMENTS, 1.07x with 1/8 of it)


def _rows(t: Tensor | None, bsl: slice, rsl: slice, kend: int) -> Tensor | None:
    """Block of a (B or 1, ., Lq, Lk) tensor: batch rows ``bsl`` (if not shared), query rows ``rsl``, keys ``:kend``."""
    if t is None:
        return None
    every = slice(None)  # size-1 dimensions broadcast (e.g. a key-padding mask (B, 1, 1, Lk))
    keys = slice(None, kend) if t.shape[3] > 1 else every
    return t[bsl if t.shape[0] > 1 else every, :, rsl if t.shape[2] > 1 else every, keys]


def _logits(q, k, bias, blocked, bsl, rsl, kend, scale=None):
    """Logits of one block: (b, H, r, kend), the bias times ``scale`` (H,) if given, masked with the dtype's
    minimum (finite: no NaN rows)."""
    s = None
    if q is not None:
        qb = q[bsl if q.shape[0] > 1 else slice(None), :, rsl]  # (b or 1, H, r, E)
        kb = k[bsl if k.shape[0] > 1 else slice(None), :, :kend]  # (b or 1, H, kend, E)
        s = qb @ kb.transpose(-2, -1)
    bb = _rows(bias, bsl, rsl, kend)
    if bb is not None and scale is not None:
        bb = bb * scale.view(1, -1, 1, 1)  # one block, not the whole (H, Lq, Lk) scaled
    if bb is not None:
        # softmax and masked_fill below are out of place: the bias block itself may be the logits
        s = bb if s is None else s.add_(bb) if s.shape == torch.broadcast_shapes(s.shape, bb.shape) else s + bb
    mb = _rows(blocked, bsl, rsl, kend)
    if mb is not None:
        s = s.masked_fill(mb, torch.finfo(s.dtype).min)
    return s


def _blocks(b: int, h: int, lq: int, lk: int, causal_shift: int | None):
    """Yield (batch slice, row slice, key end) covering the (B, Lq) grid in cache-sized blocks."""
    per_row = h * lk
    elements = BLOCK_ELEMENTS if causal_shift is None else BLOCK_ELEMENTS // CAUSAL_SPLIT
    rows = max(1, min(lq, elements // max(per_row, 1)))
    batch = max(1, min(b, elements // max(per_row * lq, 1))) if rows == lq else 1
    for b0 in range(0, b, batch):
        for r0 in range(0, lq, rows):
            r1 = min(lq, r0 + rows)
            # causal: keys after the block's last query are all masked, skip them
            kend = lk if causal_shift is None else max(1, min(lk, r1 + causal_shift))
            yield slice(b0, min(b, b0 + batch)), slice(r0, r1), kend


class _BlockedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, scale, blocked, causal_shift, plain_causal, fused):
        sb = bias if scale is None else bias * scale.view(1, -1, 1, 1)  # scaled once, not once per block
        lse = None
        if fused:
            out, lse = _fused_forward(q, k, v, sb, blocked, plain_causal)  # flash kernel, the bias as its mask
        else:
            out = _blocked_forward(q, k, v, sb, blocked, causal_shift)
        # with the log-sum-exp the backward rebuilds P = exp(s - lse) from the scaled bias: keep both
        ctx.save_for_backward(q, k, v, bias, scale, blocked, out, lse, sb if lse is not None else None)
        ctx.causal_shift = causal_shift
        return out

    @staticmethod
    def backward(ctx, dout):
        with torch.autocast(dout.device.type, enabled=False):  # a backward called under autocast (CUDA's casts
            return _blocked_backward(ctx, dout)  # softmax to fp32): the forward's one dtype, as the forward ran


def _fused_forward(q, k, v, sb, blocked, plain_causal) -> tuple[Tensor, Tensor | None]:
    """The forward pass by PyTorch's fused kernel (about 2x the blocked loop on CPU, measured): no gradient
    is asked of it here, so it takes the float mask. Masked logits get the dtype's (finite) minimum, as in
    the loop, so a row with no visible key attends uniformly instead of NaN. Returns (out, lse): on CPU in
    fp32/fp64 the flash kernel's log-sum-exp per row (B, H, Lq), which spares the backward its softmax;
    with ``plain_causal`` that kernel masks the causal triangle itself and skips the blocks above it."""
    b = v.shape[0]
    q, k = q.expand(b, -1, -1, -1), k.expand(b, -1, -1, -1)
    if plain_causal and cpu_flash_available(q):
        return attention_with_lse(q, k, v, sb, is_causal=True)
    mask = sb
    if blocked is not None:
        mask = (sb if sb is not None else q.new_zeros(())).masked_fill(blocked, torch.finfo(q.dtype).min)
    return attention_with_lse(q, k, v, mask)


def _blocked_forward(q, k, v, sb, blocked, causal_shift) -> Tensor:
    b, h, lk, _ = v.shape
    lq = (q if q is not None else sb).shape[2]
    out = v.new_empty(b, h, lq, v.shape[-1])  # (B, H, Lq, dv)
    for bsl, rsl, kend in _blocks(b, h, lq, lk, causal_shift):
        p = torch.softmax(_logits(q, k, sb, blocked, bsl, rsl, kend), dim=-1)  # (b, H, r, kend)
        out[bsl, :, rsl] = p @ v[bsl, :, :kend]
    return out


def _blocked_backward(ctx, dout):
    q, k, v, bias, scale, blocked, out, lse, sb = ctx.saved_tensors
    b, h, lk, _ = v.shape
    lq = out.shape[2]
    need_q, need_k, need_v, need_bias, need_scale = ctx.needs_input_grad[:5]
    dq = torch.zeros_like(q) if need_q else None
    dk = torch.zeros_like(k) if need_k else None
    dv = None
    blocks = list(_blocks(b, h, lq, lk, ctx.causal_shift))
    whole = all(bsl == slice(0, b) for bsl, _, _ in blocks)  # each block holds the whole batch
    single = whole and len(blocks) == 1 and blocks[0][2] == lk
    dsum = None  # dS summed over a shared batch; written once per block when blocks hold the whole batch
    if need_bias or need_scale:
        once = whole and ctx.causal_shift is None
        dsum = torch.empty_like(bias) if once else torch.zeros_like(bias)
    dout = dout.contiguous()
    delta = (dout * out).sum(-1, keepdim=True)  # (B, H, Lq, 1): rowsum(dP * P) = rowsum(dO * O)
    aug = _augmented(q, k, v, dout, delta, lse)
    if need_v:
        dv = v.new_empty(v.shape) if single else torch.zeros_like(v)
    for bsl, rsl, kend in blocks:
        do = dout[bsl, :, rsl]  # (b, H, r, dv)
        p, ds = _block_weights(q, k, v, bias, scale, sb, blocked, do, delta, aug, bsl, rsl, kend)
        if need_v:
            if single:
                torch.matmul(p.transpose(-2, -1), do, out=dv)
            else:
                dv[bsl, :, :kend] += p.transpose(-2, -1) @ do
        ds.mul_(p)  # dS: (b, H, r, kend); zero where masked
        if need_q:
            g = ds @ k[bsl if k.shape[0] > 1 else slice(None), :, :kend]  # (b, H, r, E)
            if q.shape[0] > 1:
                dq[bsl, :, rsl] = g
            else:
                dq[:, :, rsl] += g.sum(0, keepdim=True)
        if need_k:
            g = ds.transpose(-2, -1) @ q[bsl if q.shape[0] > 1 else slice(None), :, rsl]  # (b, H, kend, E)
            if k.shape[0] > 1:
                dk[bsl, :, :kend] += g
            else:
                dk[:, :, :kend] += g.sum(0, keepdim=True)
        if dsum is not None:
            if bias.shape[0] > 1:
                dsum[bsl, :, rsl, :kend] = ds
            elif once:
                dsum[:, :, rsl, :kend] = ds if ds.shape[0] == 1 else ds.sum(0, keepdim=True)
            else:
                dsum[:, :, rsl, :kend] += ds.sum(0, keepdim=True)
    dscale = None
    if need_scale:  # (H,): one dot per head, no (H, Lq, Lk) product
        bx = bias.expand_as(dsum)
        dscale = torch.stack([torch.vdot(dsum[:, hh].reshape(-1), bx[:, hh].reshape(-1)) for hh in range(h)])
    dbias = None
    if need_bias:
        dbias = dsum if scale is None else dsum.mul_(scale.view(1, -1, 1, 1))
    return dq, dk, dv, dbias, dscale, None, None, None, None


def _block_weights(q, k, v, bias, scale, sb, blocked, do, delta, aug, bsl, rsl, kend):
    """(P, dP - delta) of one block, each (b, H, r, kend); their product dS is zero where masked."""
    mb = _rows(blocked, bsl, rsl, kend)
    if aug is None:
        p = torch.softmax(_logits(q, k, bias, blocked, bsl, rsl, kend, scale), dim=-1)
        dp = (do @ v[bsl, :, :kend].transpose(-2, -1)).sub_(delta[bsl, :, rsl])
        # masked logits were overwritten: no gradient flows to them (P stays: a row with no visible key is uniform)
        return p, dp if mb is None else dp.masked_fill_(mb, 0.0)
    qa, ka, doa, va = aug  # one GEMM each for q k^T - lse and dP - delta, no softmax: see _augmented
    p = qa[bsl, :, rsl] @ ka[bsl if ka.shape[0] > 1 else slice(None), :, :kend].transpose(-2, -1)
    bb = _rows(sb, bsl, rsl, kend)
    if bb is not None:
        p.add_(bb)
    if mb is not None:
        p.masked_fill_(mb, -torch.inf)
    return p.exp_(), doa[bsl, :, rsl] @ va[bsl, :, :kend].transpose(-2, -1)


def _augmented(q, k, v, dout, delta, lse):
    """With the forward's log-sum-exp, (q | -lse), (k | 1), (dO | -delta), (v | 1): then one GEMM of a block
    gives q k^T - lse (so P = exp(that + bias)) and another dP - delta, which spares the softmax's
    reductions and two elementwise passes over every block. None without lse, or when a row sees no key
    (its lse is the mask's minimum and exp would not give the uniform row the forward used)."""
    if lse is None or bool((lse < torch.finfo(lse.dtype).min / 2).any()):
        return None
    b = v.shape[0]
    lse = lse.unsqueeze(-1).to(q.dtype)  # (B, H, Lq, 1)
    return (torch.cat([q.expand(b, -1, -1, -1), -lse], -1), torch.cat([k, k.new_ones(k.shape[:-1] + (1,))], -1),
            torch.cat([dout, -delta], -1), torch.cat([v, v.new_ones(v.shape[:-1] + (1,))], -1))


CAUSAL_SHARED_ROWS = 128  # causal R / Fix: at most this many query rows per block (or L / 16); A/B, 1 thread, attention
# fwd+bwd vs V's causal flash kernel, the causal softmax over the visible keys only: L=256 2.63x -> 3.35x,
# L=1024 1.90x -> 2.92x, L=4096 1.12x -> 1.22x
SHARED_BLOCK_ELEMENTS = 1 << 20  # logits per (head, rows) block of the shared kernel: 4 MiB fp32 (measured best of 2^18..2^22)


class _SharedBiasAttention(torch.autograd.Function):
    """``softmax(bias * scale, masked) @ v`` for logits shared by the batch (R, Fix with the batch folded
    into v's columns): one (head, row-block) at a time, each block contiguous in memory.

    The forward keeps the weights P (H, Lq, Lk): the backward does not recompute the softmax, and turns P
    into dS = P * (dP - delta) in place, block by block, which is the bias gradient itself. So the only
    (H, Lq, Lk) tensors are the bias and P-then-its-gradient; every other temporary is one block.
    """

    @staticmethod
    def forward(ctx, bias, scale, v, blocked, causal_shift):
        _, h, lq, lk = bias.shape
        n = v.shape[-1]
        out = v.new_empty(1, h, lq, n)
        p = _shared_weights(bias, scale, blocked, causal_shift, v, out)  # (1, H, Lq, Lk)
        ctx.save_for_backward(bias, scale, v, blocked, out)
        ctx.p = p  # not saved_tensors: backward overwrites it with dS (a second backward recomputes it)
        ctx.causal_shift = causal_shift
        return out

    @staticmethod
    def backward(ctx, dout):
        with torch.autocast(dout.device.type, enabled=False):  # as _BlockedAttention.backward
            return _SharedBiasAttention._backward(ctx, dout)

    @staticmethod
    def _backward(ctx, dout):
        bias, scale, v, blocked, out = ctx.saved_tensors
        p, ctx.p = ctx.p, None
        if p is None:  # backward again (retain_graph): the first one consumed the weights
            p = _shared_weights(bias, scale, blocked, ctx.causal_shift)
        need_bias, need_scale, need_v = ctx.needs_input_grad[:3]
        _, h, lq, lk = bias.shape
        dout = dout.contiguous()
        dv = torch.zeros_like(v) if need_v else None
        want_ds = need_bias or need_scale
        delta = (dout * out).sum(-1, keepdim=True) if want_ds else None  # (1, H, Lq, 1)
        dscale = torch.zeros_like(scale) if need_scale else None
        tmp = None
        for hh, rsl, kend in _shared_blocks(h, lq, lk, ctx.causal_shift):
            pb = p[0, hh, rsl]  # (r, Lk)
            do = dout[0, hh, rsl]  # (r, n)
            if need_v:
                dv[0, hh, :kend].addmm_(pb[:, :kend].t(), do)
            if not want_ds:
                continue
            r = pb.shape[0]
            if tmp is None or tmp.numel() < r * kend:
                tmp = pb.new_empty(pb.shape[0] * lk)
            dp = torch.mm(do, v[0, hh, :kend].t(), out=tmp[:r * kend].view(r, kend))  # dP block (r, kend)
            pb[:, :kend].mul_(dp.sub_(delta[0, hh, rsl]))  # P -> dS, in place
            if kend < lk:
                pb[:, kend:].zero_()
            if blocked is not None:  # masked logits were overwritten: no gradient (rows with no visible key)
                pb.masked_fill_(blocked[0, hh if blocked.shape[1] > 1 else 0, rsl], 0.0)
            if need_scale:
                dscale[hh] += torch.vdot(pb.reshape(-1), bias[0, hh, rsl].reshape(-1))
            if need_bias and scale is not None:
                pb.mul_(scale[hh])
        return (p if need_bias else None), dscale, dv, None, None


def _shared_weights(bias, scale, blocked, causal_shift, v=None, out=None) -> Tensor:
    """P = softmax(bias * scale, masked), (1, H, Lq, Lk), block by block; with ``v``, also ``out = P @ v``."""
    _, h, lq, lk = bias.shape
    p = bias.new_empty(1, h, lq, lk)
    for hh, rsl, kend in _shared_blocks(h, lq, lk, causal_shift):
        # keys from kend on are masked for every row of the block (causal): softmax over :kend only
        s = bias[0, hh, rsl, :kend]  # (r, kend)
        if scale is not None:
            s = s * scale[hh]
        if blocked is not None:
            s = s.masked_fill(blocked[0, hh if blocked.shape[1] > 1 else 0, rsl, :kend], torch.finfo(s.dtype).min)
        pb = p[0, hh, rsl]  # (r, Lk), contiguous
        if kend < lk:
            pb[:, kend:].zero_()
        softmax_into(s, pb[:, :kend])
        if v is not None:
            torch.mm(pb[:, :kend], v[0, hh, :kend], out=out[0, hh, rsl])
    return p


def _shared_blocks(h: int, lq: int, lk: int, causal_shift: int | None):
    """Yield (head, row slice, key end) over (H, Lq) in blocks of about SHARED_BLOCK_ELEMENTS logits."""
    rows = max(1, min(lq, SHARED_BLOCK_ELEMENTS // max(lk, 1)))
    if causal_shift is not None:  # thin row blocks skip more masked keys (best measured: 128 rows, 256 at 4096)
        rows = min(rows, max(CAUSAL_SHARED_ROWS, lq // 16))
    for hh in range(h):
        for r0 in range(0, lq, rows):
            r1 = min(lq, r0 + rows)
            kend = lk if causal_shift is None else max(1, min(lk, r1 + causal_shift))
            yield hh, slice(r0, r1), kend


class Kernel(str, Enum):
    SHARED = "shared"
    FUSED_FORWARD = "fused_forward"
    LOOP_FORWARD = "loop_forward"


def choose_kernel(q: Tensor | None, k: Tensor | None, v: Tensor, bias: Tensor | None,
                  blocked: Tensor | None) -> Kernel:
    """The kernel :func:`blocked_attention` runs (the table in the module docstring). Pure: reads shapes only."""
    if (q is None and v.shape[0] == 1 and bias is not None and bias.shape[0] == 1
            and bias.shape[1] == v.shape[1] and (blocked is None or blocked.shape[0] == 1)):
        return Kernel.SHARED
    if q is not None and q.shape[-1] == k.shape[-1] == v.shape[-1]:
        return Kernel.FUSED_FORWARD
    return Kernel.LOOP_FORWARD


def _shared(q, k, v, bias, scale, blocked, causal_shift, plain_causal):
    return _SharedBiasAttention.apply(bias.contiguous(), scale, v.contiguous(), blocked, causal_shift)


def _fused_forward_blocks(q, k, v, bias, scale, blocked, causal_shift, plain_causal):
    return _BlockedAttention.apply(q, k, v, bias, scale, blocked, causal_shift, plain_causal, True)


def _loop_forward_blocks(q, k, v, bias, scale, blocked, causal_shift, plain_causal):
    return _BlockedAttention.apply(q, k, v, bias, scale, blocked, causal_shift, plain_causal, False)


KERNELS: dict[Kernel, Callable[..., Tensor]] = {
    Kernel.SHARED: _shared,
    Kernel.FUSED_FORWARD: _fused_forward_blocks,
    Kernel.LOOP_FORWARD: _loop_forward_blocks,
}


def blocked_attention(q: Tensor | None, k: Tensor | None, v: Tensor, bias: Tensor | None = None,
                      blocked: Tensor | None = None, causal_shift: int | None = None,
                      bias_scale: Tensor | None = None, plain_causal: bool = False) -> Tensor:
    """``softmax(q k^T + bias * bias_scale, masked) @ v`` in blocks, exact gradients for q, k, v, bias, scale.

    ``bias_scale`` (H,) multiplies the bias per head (a mixture weight), applied block by block.
    ``causal_shift``: when the mask is causal with key j visible from query i iff j <= i + shift, pass the
    shift so that fully masked key blocks are skipped (the mask must still be given in ``blocked``).
    ``plain_causal``: ``blocked`` is exactly the causal triangle (j <= i, Lq == Lk), so fused kernels may
    mask by themselves. Returns (B, H, Lq, dv).
    """
    if q is None and bias is None:
        raise ValueError("blocked_attention needs dot-product features (q, k) or a bias, got neither")
    if blocked is not None and blocked.dim() != 4:
        raise ValueError(f"blocked mask must be 4-d (B or 1, H or 1, Lq, Lk), got shape {tuple(blocked.shape)}")
    device = v.device.type
    if torch.is_autocast_enabled(device):
        # autocast does not reach inside an autograd Function's backward: run it in one dtype, the autocast
        # one (as autocast runs fused SDPA); the casts outside give fp32 parameters their gradients in fp32
        dtype = torch.get_autocast_dtype(device)
        q, k, v, bias, bias_scale = (t if t is None else t.to(dtype) for t in (q, k, v, bias, bias_scale))
        with torch.autocast(device, enabled=False):
            return _apply(q, k, v, bias, bias_scale, blocked, causal_shift, plain_causal)
    return _apply(q, k, v, bias, bias_scale, blocked, causal_shift, plain_causal)


def _apply(q, k, v, bias, bias_scale, blocked, causal_shift, plain_causal):
    kernel = KERNELS[choose_kernel(q, k, v, bias, blocked)]
    return kernel(q, k, v, bias, bias_scale, blocked, causal_shift, plain_causal)

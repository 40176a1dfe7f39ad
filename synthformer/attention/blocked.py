"""Blocked attention with learned logits: ``softmax(q k^T + bias, masked) v`` without (B, H, Lq, Lk) tensors.

PyTorch's fused ``scaled_dot_product_attention`` covers plain dot products, but on CPU it falls back to
its slow "math" path (which materialises every logit) as soon as the additive mask needs a gradient
(Random in a mixture), or the query/key width differs from the value width (a concatenated mixture such
as D+V, or Factorized Random with the batch folded into the values). This function fills that gap: it
walks over blocks of (batch, query rows), keeps only one block of logits alive, recomputes them in the
backward pass (as flash attention does) and reduces the gradient of a batch-shared bias (R) over the
batch block by block. Memory grows with L (plus the bias gradient itself), not with B * L^2.

Shapes (legend in ``__init__``): q (Bq, H, Lq, E) or None; k (Bk, H, Lk, E) or None; v (B, H, Lk, dv);
bias (Bb, H, Lq, Lk) or None; blocked (Bm, Hm, Lq, Lk) bool (True = masked) or None, where each
leading dimension is either B or 1 (shared by the batch). A row with no visible key attends uniformly;
callers zero such rows (the layer does).
"""
from __future__ import annotations

import torch
from torch import Tensor

BLOCK_ELEMENTS = 1 << 22  # logits per block: 16 MiB in fp32; few enough blocks that per-op overhead stays small, small enough to reuse heap pages


def _rows(t: Tensor | None, bsl: slice, rsl: slice, kend: int) -> Tensor | None:
    """Block of a (B or 1, ., Lq, Lk) tensor: batch rows ``bsl`` (if not shared), query rows ``rsl``, keys ``:kend``."""
    if t is None:
        return None
    every = slice(None)  # size-1 dimensions broadcast (e.g. a key-padding mask (B, 1, 1, Lk))
    keys = slice(None, kend) if t.shape[3] > 1 else every
    return t[bsl if t.shape[0] > 1 else every, :, rsl if t.shape[2] > 1 else every, keys]


def _logits(q, k, bias, blocked, bsl, rsl, kend):
    """Logits of one block: (b, H, r, kend), masked with the dtype's minimum (finite: no NaN rows)."""
    s = None
    if q is not None:
        qb = q[bsl if q.shape[0] > 1 else slice(None), :, rsl]  # (b or 1, H, r, E)
        kb = k[bsl if k.shape[0] > 1 else slice(None), :, :kend]  # (b or 1, H, kend, E)
        s = qb @ kb.transpose(-2, -1)
    bb = _rows(bias, bsl, rsl, kend)
    if bb is not None:
        s = bb.clone() if s is None else s.add_(bb) if s.shape == torch.broadcast_shapes(s.shape, bb.shape) else s + bb
    mb = _rows(blocked, bsl, rsl, kend)
    if mb is not None:
        s = s.masked_fill(mb, torch.finfo(s.dtype).min)
    return s


def _blocks(b: int, h: int, lq: int, lk: int, causal_shift: int | None):
    """Yield (batch slice, row slice, key end) covering the (B, Lq) grid in cache-sized blocks."""
    per_row = h * lk
    rows = max(1, min(lq, BLOCK_ELEMENTS // max(per_row, 1)))
    batch = max(1, min(b, BLOCK_ELEMENTS // max(per_row * lq, 1))) if rows == lq else 1
    for b0 in range(0, b, batch):
        for r0 in range(0, lq, rows):
            r1 = min(lq, r0 + rows)
            # causal: keys after the block's last query are all masked, skip them
            kend = lk if causal_shift is None else max(1, min(lk, r1 + causal_shift))
            yield slice(b0, min(b, b0 + batch)), slice(r0, r1), kend


class _BlockedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, scale, blocked, causal_shift):
        b, h, lk, _ = v.shape
        lq = (q if q is not None else bias).shape[2]
        out = v.new_empty(b, h, lq, v.shape[-1])  # (B, H, Lq, dv)
        sb = bias if scale is None else bias * scale.view(1, -1, 1, 1)  # scaled once, not once per batch block
        for bsl, rsl, kend in _blocks(b, h, lq, lk, causal_shift):
            p = torch.softmax(_logits(q, k, sb, blocked, bsl, rsl, kend), dim=-1)  # (b, H, r, kend)
            out[bsl, :, rsl] = p @ v[bsl, :, :kend]
        ctx.save_for_backward(q, k, v, bias, scale, blocked, out)
        ctx.causal_shift = causal_shift
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, bias, scale, blocked, out = ctx.saved_tensors
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
        sb = bias if scale is None else bias * scale.view(1, -1, 1, 1)
        dout = dout.contiguous()
        delta = (dout * out).sum(-1, keepdim=True)  # (B, H, Lq, 1): rowsum(dP * P) = rowsum(dO * O)
        if need_v:
            dv = v.new_empty(v.shape) if single else torch.zeros_like(v)
        for bsl, rsl, kend in blocks:
            p = torch.softmax(_logits(q, k, sb, blocked, bsl, rsl, kend), dim=-1)  # (b, H, r, kend)
            do = dout[bsl, :, rsl]  # (b, H, r, dv)
            if need_v:
                if single:
                    torch.matmul(p.transpose(-2, -1), do, out=dv)
                else:
                    dv[bsl, :, :kend] += p.transpose(-2, -1) @ do
            ds = (do @ v[bsl, :, :kend].transpose(-2, -1)).sub_(delta[bsl, :, rsl]).mul_(p)  # dS: (b, H, r, kend)
            mb = _rows(blocked, bsl, rsl, kend)
            if mb is not None:
                ds.masked_fill_(mb, 0.0)  # masked logits were overwritten: no gradient flows to them
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
        dscale = (dsum * bias).sum((0, 2, 3)) if need_scale else None  # (H,)
        dbias = None
        if need_bias:
            dbias = dsum if scale is None else dsum.mul_(scale.view(1, -1, 1, 1))
        return dq, dk, dv, dbias, dscale, None, None


def blocked_attention(q: Tensor | None, k: Tensor | None, v: Tensor, bias: Tensor | None = None,
                      blocked: Tensor | None = None, causal_shift: int | None = None,
                      bias_scale: Tensor | None = None) -> Tensor:
    """``softmax(q k^T + bias * bias_scale, masked) @ v`` in blocks, exact gradients for q, k, v, bias, scale.

    ``bias_scale`` (H,) multiplies the bias per head (a mixture weight), applied block by block.
    ``causal_shift``: when the mask is causal with key j visible from query i iff j <= i + shift, pass the
    shift so that fully masked key blocks are skipped (the mask must still be given in ``blocked``).
    Returns (B, H, Lq, dv).
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
            return _BlockedAttention.apply(q, k, v, bias, bias_scale, blocked, causal_shift)
    return _BlockedAttention.apply(q, k, v, bias, bias_scale, blocked, causal_shift)

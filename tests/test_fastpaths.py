"""Fast paths == reference path, outputs and gradients, for every variant and mixture they serve.

Covers what tests/test_attention.py does not force: the blocked kernel with many blocks, the batch-folded
shared path without padding, eval mode, float and bool attention masks, rows with no visible key.
"""
import pytest
import torch

import synthformer.attention.kernels.blocked as blocked_mod
from conftest import ALL_SPECS
from synthformer import SyntheticAttention
from synthformer.attention.kernels.blocked import blocked_attention

D, H, N = 16, 2, 12


def make(spec, causal):
    layer = SyntheticAttention(D, H, N, spec, causal=causal, dense_factors=(3, 4))
    if layer.mix_logits is not None:
        torch.nn.init.normal_(layer.mix_logits)
    return layer


def run(layer, x, fast, **kw):
    layer.fast = fast
    layer.zero_grad(set_to_none=True)
    x.grad = None
    out, _ = layer(x, **kw)
    if torch.is_grad_enabled() and out.requires_grad:
        (out * torch.linspace(-1, 1, D)).sum().backward()
        return [out.detach(), x.grad.clone()] + [
            p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in layer.parameters()]
    return [out]


@pytest.fixture(params=[1 << 22, 7, 27], ids=["one-block", "many-blocks", "row-blocks"])
def block_elements(request, monkeypatch):
    """7: blocks of one row; 27: blocks of three rows (at 9 keys), whose causal key range is a strided block."""
    monkeypatch.setattr(blocked_mod, "BLOCK_ELEMENTS", request.param)
    if request.param < 1 << 22:  # the shared kernel too
        monkeypatch.setattr(blocked_mod, "SHARED_BLOCK_ELEMENTS", request.param)
        monkeypatch.setattr(blocked_mod, "CAUSAL_SHARED_ROWS", 1 if request.param == 7 else 3)
    return request.param


def check_train(spec, causal, padding):
    torch.manual_seed(3)
    layer = make(spec, causal)
    x = torch.randn(3, 10, D, requires_grad=True)
    kw = {}
    if padding:
        kpm = torch.zeros(3, 10, dtype=torch.bool)
        kpm[1, 6:] = True
        kpm[2, 9:] = True
        kw["key_padding_mask"] = kpm
    want = run(layer, x, fast=False, **kw)
    got = run(layer, x, fast=True, **kw)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("causal,padding", [(False, False), (True, False), (True, True), (False, True)])
def test_fast_equals_reference_train(spec, causal, padding):
    check_train(spec, causal, padding)


@pytest.mark.parametrize("spec", ["R", "FR", "FD", "R+V", "D+V", "Fix+FR", "R+D+V"])
@pytest.mark.parametrize("causal,padding", [(False, False), (True, True)])
def test_fast_equals_reference_train_many_blocks(spec, causal, padding, monkeypatch):
    monkeypatch.setattr(blocked_mod, "BLOCK_ELEMENTS", 7)  # one query row of one batch element per block
    check_train(spec, causal, padding)


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("causal", [False, True])
def test_fast_equals_reference_eval(spec, causal):
    layer = make(spec, causal).eval()
    x = torch.randn(2, N, D)
    kpm = torch.zeros(2, N, dtype=torch.bool)
    kpm[0, 8:] = True
    for kw in ({}, {"key_padding_mask": kpm}):
        with torch.no_grad():
            want = run(layer, x, fast=False, **kw)[0]
            for _ in range(2):  # a second call gives the same answer
                got = run(layer, x, fast=True, **kw)[0]
                torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", ["R", "FR", "R+V", "D+V", "Fix+FR", "FD+V", "V"])
@pytest.mark.parametrize("kind", ["bool", "float", "dead-row"])
def test_fast_equals_reference_with_attn_mask(spec, kind):
    torch.manual_seed(4)
    layer = make(spec, causal=False)
    x = torch.randn(2, 8, D, requires_grad=True)
    if kind == "float":
        mask = torch.randn(8, 8)
    else:
        mask = torch.rand(8, 8) < 0.3
        mask[:, 0] = False
        if kind == "dead-row":
            mask[3] = True  # query 3 sees nothing: output zeros, as the reference
    want = run(layer, x, fast=False, attn_mask=mask)
    got = run(layer, x, fast=True, attn_mask=mask)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)


def literal(q, k, v, bias, blocked, scale):
    s = torch.zeros(v.shape[0], v.shape[1], (q if q is not None else bias).shape[2], v.shape[2])
    if q is not None:
        s = s + q @ k.transpose(-2, -1)
    if bias is not None:
        s = s + (bias if scale is None else bias * scale.view(1, -1, 1, 1))
    if blocked is not None:
        s = s.masked_fill(blocked, torch.finfo(s.dtype).min)
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize("q_batch,k_batch,bias_batch", [(3, 3, 1), (1, 1, 1), (3, 1, None), (None, None, 3), (3, 3, 3)])
@pytest.mark.parametrize("with_scale", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dv", [3, 4])  # 4 = e: PyTorch's fused forward and the backward from its log-sum-exp
def test_blocked_attention_gradients(q_batch, k_batch, bias_batch, with_scale, causal, dv, block_elements,
                                     monkeypatch):
    torch.manual_seed(5)
    used_lse = []
    augmented = blocked_mod._augmented
    monkeypatch.setattr(blocked_mod, "_augmented", lambda *a: used_lse.append(augmented(*a) is not None) or augmented(*a))
    b, h, lq, lk, e = 3, 2, 5, 7, 4

    def leaf(*shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    q = leaf(q_batch, h, lq, e) if q_batch else None
    k = leaf(k_batch, h, lk, e) if k_batch else None
    v = leaf(b, h, lk, dv)
    bias = leaf(bias_batch, h, lq, lk) if bias_batch else None
    scale = leaf(h) if with_scale and bias is not None else None
    shift = lk - lq
    blocked = torch.ones(lq, lk, dtype=torch.bool).tril(shift).logical_not()[None, None] if causal else None
    inputs = [t for t in (q, k, v, bias, scale) if t is not None]
    got = blocked_attention(q, k, v, bias, blocked, shift if causal else None, bias_scale=scale)
    want = literal(q, k, v, bias, blocked, scale)
    torch.testing.assert_close(got, want)
    w = torch.randn_like(want)
    g_got = torch.autograd.grad((got * w).sum(), inputs)
    g_want = torch.autograd.grad((want * w).sum(), inputs)
    for a, c in zip(g_got, g_want):
        torch.testing.assert_close(a, c)
    assert used_lse == [q_batch is not None and dv == e]  # the backward rebuilt P from the log-sum-exp


def test_blocked_attention_rejects_no_logits():
    with pytest.raises(ValueError, match="neither"):
        blocked_attention(None, None, torch.randn(1, 1, 2, 2))


def user_mask(kind, b, lq, lk):
    """A user ``attn_mask`` of the given kind; key 0 stays visible so no query row is dead."""
    g = torch.Generator().manual_seed(6)
    if kind.startswith("bool"):
        shape = {"bool-2d": (lq, lk), "bool-4d": (b, H, lq, lk), "bool-4d-shared": (1, H, lq, lk)}[kind]
        m = torch.rand(*shape, generator=g) < 0.4
        m[..., 0] = False
        return m
    shape = {"float-2d": (lq, lk), "float-4d": (b, 1, lq, lk)}[kind]
    return torch.randn(*shape, generator=g)


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("kind", ["bool-2d", "bool-4d", "bool-4d-shared", "float-2d", "float-4d"])
def test_causal_with_user_mask_fast_equals_reference(spec, kind, monkeypatch):
    """Issue 8.1: causal self-attention must honour a user mask on every fast path (was dropped for V, D, D+V, FR+V)."""
    torch.manual_seed(7)
    layer = make(spec, causal=True)
    x = torch.randn(3, 9, D, requires_grad=True)
    mask = user_mask(kind, 3, 9, 9)
    kpm = torch.zeros(3, 9, dtype=torch.bool)
    kpm[1, 6:] = True
    for blocks in (1 << 22, 7):  # 7: long-sequence routes (FR through the fused kernel, many blocks)
        monkeypatch.setattr(blocked_mod, "BLOCK_ELEMENTS", blocks)
        for kw in ({"attn_mask": mask}, {"attn_mask": mask, "key_padding_mask": kpm}):
            layer.train()
            want = run(layer, x, fast=False, **kw)
            got = run(layer, x, fast=True, **kw)
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)
            layer.eval()
            with torch.no_grad():
                torch.testing.assert_close(run(layer, x, fast=True, **kw)[0], want[0], atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_blocked_attention_plain_causal_lets_the_kernel_mask(dtype, block_elements):
    """``plain_causal`` (the mask is exactly the causal triangle) gives the literal values and gradients."""
    torch.manual_seed(6)
    b, h, n, e = 2, 3, 9, 4
    q, k, v = (torch.randn(b, h, n, e, dtype=dtype, requires_grad=True) for _ in range(3))
    bias = torch.randn(1, h, n, n, dtype=dtype, requires_grad=True)
    scale = torch.rand(h, dtype=dtype, requires_grad=True)
    blocked = torch.ones(n, n, dtype=torch.bool).triu(1)[None, None]
    got = blocked_attention(q, k, v, bias, blocked, 0, bias_scale=scale, plain_causal=True)
    want = literal(q, k, v, bias, blocked, scale)
    w = torch.randn_like(want)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else {}
    torch.testing.assert_close(got, want, **tol)
    for a, c in zip(torch.autograd.grad((got * w).sum(), (q, k, v, bias, scale)),
                    torch.autograd.grad((want * w).sum(), (q, k, v, bias, scale))):
        torch.testing.assert_close(a, c, **tol)


@pytest.mark.parametrize("shift", [None, 0, 2])  # not causal; causal square; causal with 2 cached keys
@pytest.mark.parametrize("with_scale", [False, True])
def test_shared_kernel_matches_the_literal_equations(shift, with_scale, block_elements):
    """Logits shared by the batch (R, Fix with the batch folded into v): the causal softmax runs over the
    visible keys of each row block only; values and gradients equal the literal softmax(R) @ v."""
    torch.manual_seed(7)
    h, lq, dv = 2, 9, 5
    lk = lq + (shift or 0)
    v = torch.randn(1, h, lk, dv, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(1, h, lq, lk, dtype=torch.float64, requires_grad=True)
    scale = torch.rand(h, dtype=torch.float64, requires_grad=True) if with_scale else None
    blocked = None if shift is None else torch.ones(lq, lk, dtype=torch.bool).tril(shift).logical_not()[None, None]
    inputs = [t for t in (v, bias, scale) if t is not None]
    got = blocked_attention(None, None, v, bias, blocked, shift, bias_scale=scale)
    want = literal(None, None, v, bias, blocked, scale)
    torch.testing.assert_close(got, want)
    w = torch.randn_like(want)
    for a, c in zip(torch.autograd.grad((got * w).sum(), inputs), torch.autograd.grad((want * w).sum(), inputs)):
        torch.testing.assert_close(a, c)


@pytest.mark.parametrize("spec", ["FD", "R"])  # _BlockedAttention, _SharedBiasAttention
def test_blocked_backward_runs_outside_autocast(spec, monkeypatch):
    """A backward called inside an autocast region (the bench's step) runs our kernels' backward without
    autocast: CUDA's autocast casts their softmax to fp32 against bf16 blocks (it crashed on an H200)."""
    seen = []
    for name in ("_blocked_backward", "_shared_blocks"):  # called by each backward
        real = getattr(blocked_mod, name)

        def spy(*a, real=real, **kw):
            seen.append(torch.is_autocast_enabled("cpu"))
            return real(*a, **kw)
        monkeypatch.setattr(blocked_mod, name, spy)
    layer = SyntheticAttention(D, H, N, spec).train()
    x = torch.randn(2, N, D, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = layer(x)
        seen.clear()  # the forward's calls
        out.float().sum().backward()
    assert seen and not any(seen)
    assert torch.isfinite(x.grad).all()

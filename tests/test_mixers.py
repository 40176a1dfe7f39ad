"""Contract and reference tests of the baseline token mixers (synthformer.mixers)."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from synthformer.mixers import MIXERS, ConvCache, DynamicConv, LightConv, Linformer, build_mixer

D, H, N = 16, 4, 40  # embed_dim, num_heads, max_seq_len of the test mixers
CONVS = ["lightconv", "dynamicconv"]
ATOL = 1e-5


def make(name, causal=False, **options):
    torch.manual_seed(0)
    return build_mixer(name, D, H, N, causal=causal, **options).eval()


def rand(b=2, length=11, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, length, D, generator=g)


def right_padding(lengths, length):
    return torch.arange(length)[None, :] >= torch.tensor(lengths)[:, None]  # (B, L) True = padding


# ---------------------------------------------------------------- slow literal references

def conv_reference(m, x, key_padding_mask=None):
    """Per-position loop over output positions and taps, written from the equations."""
    b, length, d = x.shape
    hd = d // m.num_heads
    h = F.glu(x @ m.in_proj.weight.T + m.in_proj.bias, dim=-1)
    if key_padding_mask is not None:
        h = h * (~key_padding_mask).unsqueeze(-1)
    K = m.kernel_size
    pad_l = K - 1 if m.causal else K // 2
    head_of_channel = torch.arange(d) // hd
    out = torch.zeros(b, length, d)
    for t in range(length):
        if isinstance(m, LightConv):
            w = torch.softmax(m.weight, dim=-1).expand(b, -1, -1)  # (B, H, K)
        else:
            w = torch.softmax((h[:, t] @ m.weight_proj.weight.T + m.weight_proj.bias).view(b, m.num_heads, K), -1)
        for k in range(K):
            s = t + k - pad_l
            if 0 <= s < length:
                out[:, t, :] += w[:, head_of_channel, k] * h[:, s, :]  # channel c uses head c // d_h
    return out @ m.out_proj.weight.T + m.out_proj.bias


def linformer_reference(m, x, key_padding_mask=None):
    b, length, d = x.shape
    hd = d // m.num_heads
    q = x @ m.q_proj.weight.T + m.q_proj.bias
    k = x @ m.k_proj.weight.T + m.k_proj.bias
    v = x @ m.v_proj.weight.T + m.v_proj.bias
    if key_padding_mask is not None:
        keep = (~key_padding_mask).unsqueeze(-1).float()
        k, v = k * keep, v * keep
    E = m.E[:, :length]
    Fm = E if m.F is None else m.F[:, :length]
    out = torch.zeros(b, length, d)
    for bi in range(b):
        kp = sum(E[:, i:i + 1] * k[bi, i] for i in range(length))  # (k, d)
        vp = sum(Fm[:, i:i + 1] * v[bi, i] for i in range(length))
        for hh in range(m.num_heads):
            sl = slice(hh * hd, (hh + 1) * hd)
            for t in range(length):
                a = torch.softmax(kp[:, sl] @ q[bi, t, sl] / math.sqrt(hd), dim=0)  # (k,)
                out[bi, t, sl] = a @ vp[:, sl]
    return out @ m.out_proj.weight.T + m.out_proj.bias


def reference(m, x, key_padding_mask=None):
    return linformer_reference(m, x, key_padding_mask) if isinstance(m, Linformer) else conv_reference(m, x, key_padding_mask)


# ---------------------------------------------------------------- registry and construction

def test_registry_and_build():
    assert MIXERS == {"lightconv": LightConv, "dynamicconv": DynamicConv, "linformer": Linformer}
    assert isinstance(build_mixer("DynamicConv", D, H, N), DynamicConv)
    with pytest.raises(ValueError, match="lightconv, dynamicconv, linformer"):
        build_mixer("conv", D, H, N)
    with pytest.raises(ValueError, match="linformer_k"):
        build_mixer("lightconv", D, H, N, linformer_k=8)


@pytest.mark.parametrize("name", list(MIXERS))
def test_bad_constructor_args(name):
    with pytest.raises(ValueError, match="num_heads"):
        build_mixer(name, 15, 4, N)
    with pytest.raises(ValueError, match="dropout"):
        build_mixer(name, D, H, N, dropout=1.5)


@pytest.mark.parametrize("name", CONVS)
def test_bad_kernel_size(name):
    with pytest.raises(ValueError, match="kernel_size"):
        build_mixer(name, D, H, N, kernel_size=0)


def test_linformer_refuses_causal():
    with pytest.raises(ValueError, match="linformer cannot be causal"):
        build_mixer("linformer", D, H, N, causal=True)
    with pytest.raises(ValueError, match="encoders only"):
        make("linformer").init_cache(2)


@pytest.mark.parametrize("name", CONVS)
def test_non_causal_conv_refuses_cache(name):
    with pytest.raises(ValueError, match="causal=True"):
        make(name).init_cache(2)


# ---------------------------------------------------------------- shapes and references

@pytest.mark.parametrize("name", list(MIXERS))
@pytest.mark.parametrize("length", [1, 7, N])
def test_output_shapes(name, length):
    m = make(name)
    out, w = m(rand(3, length))
    assert out.shape == (3, length, D) and w is None
    _, w = m(rand(3, length), need_weights=True)
    assert w.shape == ((3, H, length, m.k) if name == "linformer" else (3, H, length, length))


CASES = [(name, causal, impl, k) for name in CONVS for causal in (False, True) for impl in ("band", "unfold")
         for k in (1, 4, 7)] + [("linformer", False, None, None)]


@pytest.mark.parametrize("name,causal,impl,kernel_size", CASES)
@pytest.mark.parametrize("padded", [False, True])
def test_matches_literal_reference(name, causal, impl, kernel_size, padded):
    opts = {} if name == "linformer" else {"impl": impl, "kernel_size": kernel_size}
    m = make(name, causal=causal, **opts)
    x = rand(3, 9)
    mask = right_padding([9, 5, 2], 9) if padded else None
    expected = reference(m, x, mask)
    out, _ = m(x, key_padding_mask=mask)
    keep = ~mask if padded else torch.ones(3, 9, dtype=torch.bool)
    torch.testing.assert_close(out[keep], expected[keep], atol=ATOL, rtol=1e-4)
    out_w, _ = m(x, key_padding_mask=mask, need_weights=True)  # weights path agrees too
    torch.testing.assert_close(out_w[keep], expected[keep], atol=ATOL, rtol=1e-4)


def test_linformer_shared_kv_matches_reference():
    m = make("linformer", share_kv=True, linformer_k=5)
    assert m.F is None
    x = rand(2, 8)
    torch.testing.assert_close(m(x)[0], linformer_reference(m, x), atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("name", CONVS)
@pytest.mark.parametrize("causal", [False, True])
def test_band_weights_reproduce_output(name, causal):
    """The returned (B, H, L, L) weights are the convolution: weights @ conv input = conv output."""
    m = make(name, causal=causal, kernel_size=5)
    x, mask = rand(2, 10), right_padding([10, 6], 10)
    out, w = m(x, key_padding_mask=mask, need_weights=True)
    h = F.glu(m.in_proj(x), dim=-1).masked_fill(mask.unsqueeze(-1), 0)
    hh = h.view(2, 10, H, D // H).transpose(1, 2)  # (B, H, L, d_h)
    conv = (w @ hh).transpose(1, 2).reshape(2, 10, D)
    torch.testing.assert_close(m.out_proj(conv), out, atol=ATOL, rtol=1e-4)
    assert (w[1, :, :, 6:] == 0).all()  # padded key columns are zero
    rows = w[0].sum(-1)  # rows of an unpadded sequence away from the edges sum to 1
    torch.testing.assert_close(rows[:, 4:6], torch.ones(H, 2))
    if causal:
        assert (w.triu(1) == 0).all()


@pytest.mark.parametrize("name", CONVS)
def test_auto_threshold_picks_band_and_unfold(name):
    m = make(name, band_max_len=8, kernel_size=3)
    assert m.use_band(8) and not m.use_band(9)
    x = rand(2, 12)
    m.impl = "band"
    band = m(x)[0]
    m.impl = "auto"
    torch.testing.assert_close(m(x)[0], band, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("name", CONVS)
def test_weight_dropout_same_in_both_paths(name):
    """Weight dropout acts on the normalised (.., K) kernel, so both paths draw the same mask."""
    m = make(name, dropout=0.5).train()
    x = rand(2, 10)
    outs = []
    for impl in ("band", "unfold"):
        m.impl = impl
        torch.manual_seed(3)
        outs.append(m(x)[0])
    torch.testing.assert_close(outs[0], outs[1], atol=ATOL, rtol=1e-4)
    torch.manual_seed(4)
    assert not torch.allclose(m(x)[0], outs[1])  # dropout is active in training
    m.eval()
    torch.testing.assert_close(m(x)[0], m(x)[0])


# ---------------------------------------------------------------- causality, padding, decoding

@pytest.mark.parametrize("name", CONVS)
@pytest.mark.parametrize("impl", ["band", "unfold"])
def test_no_causal_leak(name, impl):
    m = make(name, causal=True, impl=impl)
    x = rand(2, 12)
    y = x.clone()
    y[:, 7:] = torch.randn(2, 5, D)
    a, b = m(x)[0], m(y)[0]
    torch.testing.assert_close(a[:, :7], b[:, :7])
    assert not torch.allclose(a[:, 7:], b[:, 7:])


@pytest.mark.parametrize("name,causal", [(n, c) for n in CONVS for c in (False, True)] + [("linformer", False)])
@pytest.mark.parametrize("impl", ["band", "unfold"])
def test_padding_invariance(name, causal, impl):
    opts = {} if name == "linformer" else {"impl": impl}
    m = make(name, causal=causal, **opts)
    x = rand(2, 12)
    mask = right_padding([12, 6], 12)
    mask[0, :2] = True  # left padding too
    y = x.masked_fill(mask.unsqueeze(-1), 0) + 100.0 * mask.unsqueeze(-1) * torch.randn(2, 12, D)
    a, b = m(x, key_padding_mask=mask)[0], m(y, key_padding_mask=mask)[0]
    torch.testing.assert_close(a[~mask], b[~mask], atol=1e-4, rtol=1e-4)
    c = m(y)[0]  # without the mask the garbage does leak (the test can fail)
    assert not torch.allclose(a[~mask], c[~mask], atol=1e-3)


@pytest.mark.parametrize("name", CONVS)
@pytest.mark.parametrize("chunks", [[1] * 10, [4, 1, 3, 2]])
def test_incremental_equals_full(name, chunks):
    m = make(name, causal=True, kernel_size=4)
    x, mask = rand(2, 10), right_padding([10, 7], 10)
    full, full_w = m(x, key_padding_mask=mask, need_weights=True)
    cache = m.init_cache(2)
    assert isinstance(cache, ConvCache) and cache.pos == 0
    outs, pos = [], 0
    for n in chunks:
        y, w = m(x[:, pos:pos + n], key_padding_mask=mask[:, :pos + n], cache=cache, need_weights=True)
        torch.testing.assert_close(w, full_w[:, :, pos:pos + n, :pos + n], atol=ATOL, rtol=1e-4)
        outs.append(y)
        pos += n
        assert cache.pos == pos
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=ATOL, rtol=1e-4)


def test_cache_reorder_and_batch_check():
    m = make("dynamicconv", causal=True)
    x = rand(3, 5)
    cache = m.init_cache(3)
    m(x[:, :4], cache=cache)
    cache.reorder(torch.tensor([2, 0]))
    y, _ = m(x[[2, 0], 4:5], cache=cache)
    torch.testing.assert_close(y, m(x[[2, 0]])[0][:, 4:5], atol=ATOL, rtol=1e-4)
    with pytest.raises(ValueError, match="batch size"):
        m(x[:, 4:5], cache=cache)


# ---------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("name", list(MIXERS))
def test_bad_inputs_raise(name):
    m = make(name)
    with pytest.raises(ValueError, match=rf"{N + 1}.*max_seq_len={N}"):
        m(rand(1, N + 1))
    with pytest.raises(ValueError, match="batch, length, embed_dim"):
        m(torch.randn(5, D))
    with pytest.raises(ValueError, match="embed_dim"):
        m(torch.randn(2, 5, D + 1))
    with pytest.raises(ValueError, match="bool"):
        m(rand(2, 5), key_padding_mask=torch.zeros(2, 5))
    with pytest.raises(ValueError, match="shape"):
        m(rand(2, 5), key_padding_mask=torch.zeros(2, 6, dtype=torch.bool))
    with pytest.raises(ValueError, match="attn_mask"):
        m(rand(2, 5), attn_mask=torch.zeros(5, 5))


@pytest.mark.parametrize("name", CONVS)
def test_decoding_past_max_seq_len_raises(name):
    m = build_mixer(name, D, H, 4, causal=True)
    cache = m.init_cache(1)
    m(torch.randn(1, 4, D), cache=cache)
    with pytest.raises(ValueError, match="5 exceeds max_seq_len=4"):
        m(torch.randn(1, 1, D), cache=cache)


# ---------------------------------------------------------------- gradients

@pytest.mark.parametrize("name,causal,impl", [(n, c, i) for n in CONVS for c in (False, True) for i in ("band", "unfold")]
                         + [("linformer", False, None)])
def test_gradients_reach_every_parameter(name, causal, impl):
    opts = {} if name == "linformer" else {"impl": impl}
    m = make(name, causal=causal, dropout=0.1, **opts).train()
    x = rand(2, 9).requires_grad_()
    out, _ = m(x, key_padding_mask=right_padding([9, 4], 9))
    out.square().sum().backward()
    for pname, p in m.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, pname
    assert x.grad.abs().sum() > 0


@pytest.mark.parametrize("name", CONVS)
@pytest.mark.parametrize("causal", [False, True])
def test_band_and_unfold_gradients_agree(name, causal):
    """The unfold path has a hand-written backward; the band path is plain autograd."""
    grads = []
    for impl in ("band", "unfold"):
        m = make(name, causal=causal, impl=impl, kernel_size=4)
        x = rand(2, 9).requires_grad_()
        out, _ = m(x, key_padding_mask=right_padding([9, 5], 9))
        (out * torch.linspace(-1, 1, D)).sum().backward()
        grads.append([x.grad] + [p.grad for p in m.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("per_position", [False, True])
def test_tap_conv_gradcheck(per_position):
    from synthformer.mixers._common import conv_unfold
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 6 + 2, 4, generator=g, dtype=torch.float64, requires_grad=True)  # (B, L+K-1, d)
    w = torch.randn(2 if per_position else 1, 6 if per_position else 1, 2, 3, generator=g, dtype=torch.float64,
                    requires_grad=True)  # (Bw, Lw, H, K)
    assert torch.autograd.gradcheck(lambda a, b: conv_unfold(a, b, 2), (x, w))


def test_default_thresholds():
    assert make("lightconv").band_max_len == 128 and make("dynamicconv").band_max_len == 64

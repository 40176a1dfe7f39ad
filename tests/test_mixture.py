"""The ``mixture`` path (issue 51): every "+V" mixture through the compiled flash-style kernel equals the paper's
equations (tests/reference.py), values and gradients of the input, q, k, v projections, the tables and the mixture
weights; causal and not, with key padding (a fully padded example too), fp32 and bf16 autocast. Plus the kernel
alone against a float64 formula: a shared or per-example bias, B = 1, features wider than the values."""
import pytest
import torch

import reference
from synthformer import SyntheticAttention
from synthformer.attention.kernels import mixture, paths
from synthformer.attention.kernels.paths import Path

pytestmark = pytest.mark.skipif(not mixture.available(), reason="the mixture kernel could not be built here")

PLUS_V = ["R+V", "FR+V", "Fix+V", "D+V", "R+D+V", "FD+V"]
D, H, N, B, L = 16, 2, 12, 3, 9


@pytest.fixture
def taken(monkeypatch):
    seen = []
    for name, fn in list(paths.PATHS.items()):
        monkeypatch.setitem(paths.PATHS, name, lambda a, fn=fn, name=name: seen.append(name) or fn(a))
    return seen


def layer_and_input(spec, causal, seed=0):
    torch.manual_seed(seed)
    layer = SyntheticAttention(D, H, N, spec, causal=causal, dense_factors=(3, 4), factorized_k=3).train()
    torch.nn.init.normal_(layer.mix_logits)  # not uniform: each weight's gradient differs
    return layer, torch.randn(B, L, D, requires_grad=True)  # L < N: the tables are cut


def padding(kind):
    if kind == "none":
        return None
    kpm = torch.zeros(B, L, dtype=torch.bool)
    kpm[1, 5:] = True
    if kind == "one-empty":
        kpm[2] = True  # an example with no visible key: its outputs are the output projection's bias
    return kpm


def grads(layer, x, out, w):
    params = [x] + list(layer.parameters())
    got = torch.autograd.grad((out.float() * w).sum(), params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, got)]


@pytest.mark.parametrize("spec", PLUS_V)
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("pad", ["none", "some", "one-empty"])
def test_mixture_path_equals_the_equations(spec, causal, pad, taken):
    layer, x = layer_and_input(spec, causal)
    kpm = padding(pad)
    out, _ = layer(x, key_padding_mask=kpm)
    assert taken == [Path.MIXTURE]
    want, _ = reference.attention(layer, x, key_padding_mask=kpm)
    w = torch.randn_like(want)
    torch.testing.assert_close(out, want, atol=2e-5, rtol=1e-4)
    names = ["x"] + [n for n, _ in layer.named_parameters()]
    for name, a, b in zip(names, grads(layer, x, out, w), grads(layer, x, want, w)):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("spec", PLUS_V)
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_mixture_path_under_bf16_autocast_is_close_to_fp32_equations(spec, causal, taken):
    """bf16 autocast (the bench's and train --precision bf16's): the kernel computes in fp32 on bf16-rounded
    q, k, v; output and every gradient within bf16 tolerance of the fp32 equations, parameter gradients fp32."""
    layer, x = layer_and_input(spec, causal, seed=1)
    kpm = padding("some")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = layer(x, key_padding_mask=kpm)
    assert taken == [Path.MIXTURE] and out.dtype == torch.bfloat16
    want, _ = reference.attention(layer, x, key_padding_mask=kpm)
    w = torch.randn_like(want)
    got_g = grads(layer, x, out, w)
    assert all(g.dtype == torch.float32 for g in got_g)
    assert rel_err(out, want) < 0.05
    names = ["x"] + [n for n, _ in layer.named_parameters()]
    for name, a, b in zip(names, got_g, grads(layer, x, want, w)):  # tests/test_bf16.py's tolerance
        assert rel_err(a, b, floor=0.1) < 0.1, name


def rel_err(a, b, floor=1e-6):
    """Relative error in norm; ``floor`` keeps gradients that vanish in theory (a key bias) from dividing by ~0."""
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(floor)).item()


def formula(q, k, v, bias, scale, pad, shift):
    """softmax(q k^T + bias * scale, masked) v in float64; rows with no visible key give zeros."""
    s = q @ k.transpose(-2, -1)
    if bias is not None:
        s = s + bias * (1.0 if scale is None else scale.view(1, -1, 1, 1))
    keep = torch.ones(s.shape, dtype=torch.bool)
    if pad is not None:
        keep = keep & ~pad[:, None, None, :]
    if shift is not None:
        keep = keep & torch.ones(s.shape[-2:], dtype=torch.bool).tril(shift)
    w = torch.softmax(s.masked_fill(~keep, float("-inf")), -1).nan_to_num(0.0)
    return w @ v


@pytest.mark.parametrize("b,bias_batch,e,dv,lq,lk,shift,pad,scale,bias_grad", [
    (3, 1, 16, 16, 37, 37, None, False, True, True),  # R+V: a table shared by the batch, its weight
    (1, 1, 16, 16, 300, 300, None, False, True, True),  # B = 1, several blocks each way
    (2, 1, 24, 16, 290, 290, 0, True, True, True),  # D+V-like features, causal, padding, blocks
    (2, 2, 16, 8, 40, 40, None, True, True, True),  # FD+V: a bias per example
    (2, 1, 16, 16, 20, 20, 0, False, True, False),  # Fix+V: the table is a buffer, only its weight learns
    (2, None, 24, 16, 50, 50, 0, True, False, False),  # D+V: no bias at all
    (2, 1, 8, 8, 5, 140, 135, False, False, True),  # decoding-like: 5 queries at offset 135
])
def test_kernel_equals_the_formula(b, bias_batch, e, dv, lq, lk, shift, pad, scale, bias_grad):
    g = torch.Generator().manual_seed(0)
    h = 3
    q = torch.randn(b, h, lq, e, generator=g, dtype=torch.float64)
    k = torch.randn(b, h, lk, e, generator=g, dtype=torch.float64)
    v = torch.randn(b, h, lk, dv, generator=g, dtype=torch.float64)
    bias = None if bias_batch is None else torch.randn(bias_batch, h, lq, lk, generator=g, dtype=torch.float64)
    sc = torch.rand(h, generator=g, dtype=torch.float64) + 0.5 if scale else None
    kpm = None
    if pad:
        kpm = torch.zeros(b, lk, dtype=torch.bool)
        kpm[0, lk // 2:] = True
        kpm[-1] = True  # no visible key at all: zeros, no gradient
    leaves = [t for t in (q, k, v, bias, sc) if t is not None]
    wanted = [q, k, v] + ([bias] if bias is not None and bias_grad else []) + ([sc] if sc is not None else [])
    for t in wanted:
        t.requires_grad_()
    want = formula(q, k, v, bias, sc, kpm, shift)
    dout = torch.randn(want.shape, generator=g, dtype=torch.float64)
    want_g = torch.autograd.grad(want, wanted, dout)
    f32 = {id(t): t.detach().float().requires_grad_(t.requires_grad) for t in leaves}
    got = mixture.mixture_attention(*(None if t is None else f32[id(t)] for t in (q, k, v, bias, sc)),
                                    key_padding_mask=kpm, causal_shift=shift)
    got_g = torch.autograd.grad(got, [f32[id(t)] for t in wanted], dout.float())
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-4)
    for a, c in zip(got_g, want_g):
        torch.testing.assert_close(a.double(), c, atol=2e-5, rtol=1e-4)


def test_kernel_takes_gradients_of_any_layout():
    """The upstream gradient may be an expanded view (out.sum(), a sum over rows): read or copied, never misread."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 7, 8, generator=g, requires_grad=True) for _ in range(3))
    bias = torch.randn(1, 2, 7, 7, generator=g, requires_grad=True)
    for reduce in (lambda o: o.sum(), lambda o: o.sum(dim=2).square().sum()):
        got = torch.autograd.grad(reduce(mixture.mixture_attention(q, k, v, bias)), (q, k, v, bias))
        want = torch.autograd.grad(reduce(formula(q, k, v, bias, None, None, None)), (q, k, v, bias))
        for a, c in zip(got, want):
            torch.testing.assert_close(a, c, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("shift", [None, 0])
def test_kernel_applies_the_dot_products_weight_itself(shift):
    """q_scale (the mixture weight of V in R+V): logits q_scale_h q k^T + scale_h bias, its gradient exact too."""
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 3, 140, 8, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    bias = torch.randn(1, 3, 140, 140, generator=g, dtype=torch.float64, requires_grad=True)
    sc, qs = (torch.rand(3, generator=g, dtype=torch.float64).add(0.2).requires_grad_() for _ in range(2))
    kpm = torch.zeros(2, 140, dtype=torch.bool)
    kpm[1, 100:] = True
    leaves = (q, k, v, bias, sc, qs)
    want = formula(q * qs.view(1, -1, 1, 1), k, v, bias, sc, kpm, shift)
    dout = torch.randn(want.shape, generator=g, dtype=torch.float64)
    want_g = torch.autograd.grad(want, leaves, dout)
    f32 = [t.detach().float().requires_grad_() for t in leaves]
    got = mixture.mixture_attention(*f32[:5], key_padding_mask=kpm, causal_shift=shift, q_scale=f32[5])
    got_g = torch.autograd.grad(got, f32, dout.float())
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-4)
    for a, c in zip(got_g, want_g):
        torch.testing.assert_close(a.double(), c, atol=3e-5, rtol=1e-4)


def test_a_build_stopped_midway_does_not_stop_the_next_process(tmp_path):
    """torch waits forever on the ``lock`` file a killed build leaves; the next process removes it and loads."""
    import fcntl
    import subprocess
    import sys

    build_dir = mixture._build_dir()
    with open(build_dir / "synthformer.flock", "a") as held:  # as a builder holds it, so no live build is touched
        fcntl.flock(held, fcntl.LOCK_EX)
        (build_dir / "lock").touch()  # what a build killed midway leaves
    check = "from synthformer.attention.kernels import mixture; print(mixture.available())"
    done = subprocess.run([sys.executable, "-W", "always", "-c", check], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert "stopped midway" in done.stderr
    assert not (build_dir / "lock").exists()

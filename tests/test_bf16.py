"""bf16 autocast on CPU (the CPU's fast path, DESIGN.md section 6): every variant and mixture runs forward and
backward under ``torch.autocast("cpu", dtype=torch.bfloat16)``, close to fp32, with fp32 parameter gradients."""
import pytest
import torch

import synthformer.attention.kernels.blocked as blocked_mod
from conftest import ALL_SPECS
from synthformer import SyntheticAttention

D, H, N = 16, 2, 12


def rel_err(a, b, floor=1e-6):
    """Relative error in norm; ``floor`` keeps gradients that vanish in theory (a key bias) from dividing by ~0."""
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(floor)).item()


def step(layer, x, autocast, **kw):
    layer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out, w = layer(x, **kw)
    (out.float() * torch.linspace(-1, 1, D)).sum().backward()
    return out, {n: p.grad for n, p in layer.named_parameters()}


@pytest.mark.parametrize("spec", ALL_SPECS)
@pytest.mark.parametrize("mode", ["causal+padding", "bidirectional", "weights", "many-blocks"])
def test_bf16_autocast_forward_backward(spec, mode, monkeypatch):
    torch.manual_seed(2)
    if mode == "many-blocks":
        monkeypatch.setattr(blocked_mod, "BLOCK_ELEMENTS", 60)  # blocks of 3 query rows of one batch element
    layer = SyntheticAttention(D, H, N, spec, causal=mode != "bidirectional", dense_factors=(3, 4))
    if layer.mix_logits is not None:
        torch.nn.init.normal_(layer.mix_logits)
    x = torch.randn(3, 10, D)
    kw = {"need_weights": mode == "weights"}
    if mode == "causal+padding":
        kw["key_padding_mask"] = torch.zeros(3, 10, dtype=torch.bool)
        kw["key_padding_mask"][1, 7:] = True
    want, want_g = step(layer, x, False, **kw)
    got, got_g = step(layer, x, True, **kw)
    assert got.dtype == torch.bfloat16
    assert rel_err(got, want) < 0.05
    for name, g in got_g.items():
        if want_g[name] is None:
            assert g is None, name
            continue
        assert g.dtype == torch.float32, name
        assert rel_err(g, want_g[name], floor=0.1) < 0.1, name


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_bf16_autocast_eval_and_dropout(spec):
    torch.manual_seed(2)
    layer = SyntheticAttention(D, H, N, spec, causal=True, dropout=0.2, dense_factors=(3, 4))
    x = torch.randn(2, N, D)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = layer(x)  # training with attention dropout
        out.float().sum().backward()
        layer.eval()
        with torch.no_grad():
            got = [layer(x)[0] for _ in range(2)]  # the second call may reuse the cached shared softmax
    with torch.no_grad():
        want = layer(x)[0]
    assert all(torch.isfinite(g).all() for g in got) and torch.isfinite(out).all()
    for g in got:
        assert rel_err(g, want) < 0.05

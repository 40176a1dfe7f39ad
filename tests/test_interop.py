"""SyntheticAttention where other tools expect a PyTorch attention layer: ``torch.export`` with a dynamic
sequence length up to max_seq_len (every variant, and a model), and the call shape of ``nn.MultiheadAttention``.
"""
import warnings

import pytest
import torch
from torch.export import Dim

from conftest import SINGLE
from synthformer import SyntheticAttention
from synthformer.errors import InputError
from synthformer.mixers import build_mixer
from synthformer.model import ModelConfig, build_model

D, H, N = 8, 2, 8


class FirstOutput(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, key_padding_mask):
        return self.layer(x, key_padding_mask=key_padding_mask)[0]


def padded(length, seed=0):
    g = torch.Generator().manual_seed(seed)
    kpm = torch.zeros(2, length, dtype=torch.bool)
    kpm[1, length // 2 + 1:] = True
    return torch.randn(2, length, D, generator=g), kpm


@pytest.mark.parametrize("spec", SINGLE + ["R+V"])
def test_torch_export_with_a_dynamic_length_up_to_max_seq_len(spec):
    """Dim("L", max=N): no guard pins L to one side of N (R's whole-table branch did: 'L != N'), and the program
    equals the layer at every length, N included."""
    causal = spec in ("random", "dense", "factorized_dense")  # both kinds of layer across the registry
    module = FirstOutput(SyntheticAttention(D, H, N, spec, causal=causal, dense_factors=(2, 4), factorized_k=3))
    module.eval()
    length = Dim("L", max=N)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(module, padded(5), dynamic_shapes={"x": {1: length},
                                                                          "key_padding_mask": {1: length}})
        for n in (2, 3, N):
            x, kpm = padded(n, seed=n)
            torch.testing.assert_close(program.module()(x, kpm), module(x, kpm), atol=1e-5, rtol=1e-4)


def test_torch_export_of_a_model_with_a_dynamic_length():
    torch.manual_seed(0)
    model = build_model(ModelConfig.preset("tiny", kind="lm", attention="R", vocab_size=50, num_layers=1,
                                           max_seq_len=16)).eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model, (torch.randint(0, 50, (2, 5)),),
                                      dynamic_shapes=({1: Dim("L", max=16)},))
        for n in (2, 16):
            ids = torch.randint(0, 50, (2, n))
            torch.testing.assert_close(program.module()(ids), model(ids))


# ------------------------------------------------------------------ the call shape of nn.MultiheadAttention
def mha_script(attn, x, key_padding_mask, attn_mask, average, is_causal):
    """What a user of nn.MultiheadAttention writes: query, key, value, then MHA's positional order."""
    return attn(x, x, x, key_padding_mask, True, attn_mask, average, is_causal)


def vanilla_like(mha: torch.nn.MultiheadAttention, causal=False) -> SyntheticAttention:
    """Synthetic attention V holding the weights of `mha` (V is scaled dot-product attention)."""
    layer = SyntheticAttention(D, H, N, "V", causal=causal)
    wq, wk, wv = mha.in_proj_weight.chunk(3)
    bq, bk, bv = mha.in_proj_bias.chunk(3)
    with torch.no_grad():
        for lin, w, b in ((layer.members[0].q_proj, wq, bq), (layer.members[0].k_proj, wk, bk),
                          (layer.v_proj, wv, bv), (layer.out_proj, mha.out_proj.weight, mha.out_proj.bias)):
            lin.weight.copy_(w)
            lin.bias.copy_(b)
    return layer


def float_padding(length):
    kpm = torch.zeros(2, length)
    kpm[0, -2:] = -torch.inf  # padding
    kpm[1, 1] = -0.7  # a finite penalty, added to the logits
    return kpm


CAUSAL_MASK = torch.ones(6, 6, dtype=torch.bool).triu(1)  # True = hidden, as MHA wants with is_causal=True


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("case", ["bool-padding", "float-padding+float-mask", "is_causal", "3d-mask"])
def test_the_same_script_runs_on_multihead_attention_and_gives_its_results(case, average):
    """attn(x, x, x, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal): the script
    written for nn.MultiheadAttention (batch_first) gives the same outputs and weights with V holding its weights."""
    torch.manual_seed(1)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    ours = vanilla_like(mha).eval()
    x = torch.randn(2, 6, D)
    kpm, mask, causal = None, None, False
    if case == "bool-padding":
        kpm = torch.zeros(2, 6, dtype=torch.bool)
        kpm[1, 4:] = True
    elif case == "float-padding+float-mask":
        kpm, mask = float_padding(6), torch.randn(6, 6)
    elif case == "is_causal":
        mask, causal = CAUSAL_MASK, True
    else:
        mask = torch.randn(2 * H, 6, 6)
    want_out, want_w = mha_script(mha, x, kpm, mask, average, causal)
    got_out, got_w = mha_script(ours, x, kpm, mask, average, causal)
    torch.testing.assert_close(got_out, want_out, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(got_w, want_w, atol=1e-5, rtol=1e-4)
    assert got_w.shape == ((2, 6, 6) if average else (2, H, 6, 6))


@pytest.mark.parametrize("spec", SINGLE + ["R+V"])
@pytest.mark.parametrize("causal", [False, True])
def test_query_as_key_and_value_is_self_attention(spec, causal):
    layer = SyntheticAttention(D, H, N, spec, causal=causal, dense_factors=(2, 4), factorized_k=3)
    x = torch.randn(2, 6, D)
    torch.testing.assert_close(layer(x, x, x)[0], layer(x)[0])
    torch.testing.assert_close(layer(x, x)[0], layer(x)[0])


@pytest.mark.parametrize("spec", SINGLE + ["R+V"])
def test_is_causal_masks_like_a_causal_layer(spec):
    layer = SyntheticAttention(D, H, N, spec, dense_factors=(2, 4), factorized_k=3)
    causal = SyntheticAttention(D, H, N, spec, causal=True, dense_factors=(2, 4), factorized_k=3)
    causal.load_state_dict(layer.state_dict())
    x = torch.randn(2, 6, D)
    for fast in (True, False):
        layer.fast = causal.fast = fast
        torch.testing.assert_close(layer(x, is_causal=True)[0], causal(x)[0])
        torch.testing.assert_close(layer(x, x, x, is_causal=True, attn_mask=CAUSAL_MASK)[0], causal(x)[0])


@pytest.mark.parametrize("spec", SINGLE + ["R+V"])
@pytest.mark.parametrize("batch", [1, 2])
def test_a_float_key_padding_mask_is_added_and_minus_inf_is_padding(spec, batch):
    """Every path (fast or literal, shared softmax at batch 1) gives the literal equations with the float mask
    added; -inf entries weigh exactly zero, as a bool mask's padding."""
    layer = SyntheticAttention(D, H, N, spec, dense_factors=(2, 4), factorized_k=3).eval()
    x, kpm = torch.randn(batch, 6, D), float_padding(6)[:batch]
    layer.fast = False
    want, w = layer(x, key_padding_mask=kpm, need_weights=True)
    assert (w[0, :, :, -2:] == 0).all()
    layer.fast = True
    for grad in (False, True):
        with torch.set_grad_enabled(grad):
            torch.testing.assert_close(layer(x, key_padding_mask=kpm)[0], want, atol=1e-5, rtol=1e-4)
    only_padding = torch.where(torch.isneginf(kpm), kpm, torch.zeros_like(kpm))  # 0 / -inf: as a bool mask
    torch.testing.assert_close(layer(x, key_padding_mask=only_padding)[0],
                               layer(x, key_padding_mask=only_padding == -torch.inf)[0])


def test_mha_calls_that_cannot_mean_anything_here_say_what_to_pass():
    layer = SyntheticAttention(D, H, N, "R")
    x, mem = torch.randn(2, 6, D), torch.randn(2, 5, D)
    with pytest.raises(InputError, match=r"^value must be the key tensor itself .* attn\(x, x, x\)"):
        layer(x, x, torch.randn(2, 6, D))
    with pytest.raises(InputError, match=r"^value must be the key tensor itself .* attn\(x, memory, memory\)"):
        layer(x, mem, mem.clone())
    assert layer(x, mem, mem)[0].shape == (2, 6, D)  # cross-attention
    with pytest.raises(InputError, match=r"^causal attention is self-attention: pass the query itself as key"):
        layer(x, mem, mem, is_causal=True)
    with pytest.raises(InputError, match=r"^causal attention is self-attention"):
        copy = x.clone()  # equal values, but not the query: a causal layer cannot tell it is meant as self
        SyntheticAttention(D, H, N, "R", causal=True)(x, copy, copy)
    with pytest.raises(InputError, match=r"attn_mask must have shape \(Lq, Lk\) = \(6, 6\), \(B \* H, Lq, Lk\)"):
        layer(x, attn_mask=torch.zeros(3, 6, 6, dtype=torch.bool))


@pytest.mark.slow  # about 15 s: the dynamo ONNX exporter
def test_onnx_export_with_a_dynamic_length_runs_in_onnxruntime(tmp_path):
    """README's ONNX line: a causal R+V layer exported once serves every length up to max_seq_len."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    torch.manual_seed(0)
    module = FirstOutput(SyntheticAttention(D, H, N, "R+V", causal=True)).eval()
    length = Dim("L", max=N)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, padded(5), dynamo=True, verbose=False,
                                    dynamic_shapes={"x": {1: length}, "key_padding_mask": {1: length}})
    program.save(str(tmp_path / "layer.onnx"))
    session = ort.InferenceSession(str(tmp_path / "layer.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for n in (3, N):
        x, kpm = padded(n, seed=n)
        got = session.run(None, dict(zip(names, (x.numpy(), kpm.numpy()))))[0]
        with torch.no_grad():
            torch.testing.assert_close(torch.as_tensor(got), module(x, kpm), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name,options", [("lightconv", {"kernel_size": 3}), ("dynamicconv", {"kernel_size": 3}),
                                          ("linformer", {"linformer_k": 4})])
def test_torch_export_of_the_baselines_with_a_dynamic_length(name, options):
    """The baselines in the same slot export the same way (Linformer's E[:, :L] guarded 'L != N' before)."""
    module = FirstOutput(build_mixer(name, D, H, N, **options)).eval()
    length = Dim("L", max=N)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(module, padded(5), dynamic_shapes={"x": {1: length},
                                                                          "key_padding_mask": {1: length}})
        for n in (2, N):
            x, kpm = padded(n, seed=n)
            torch.testing.assert_close(program.module()(x, kpm), module(x, kpm), atol=1e-5, rtol=1e-4)

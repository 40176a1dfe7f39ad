"""Export of every variant and mixture (issue 8.3): ``torch.export`` under no_grad, and ONNX through both
exporters (TorchScript-based ``dynamo=False`` and ``dynamo=True``) run by onnxruntime, equal PyTorch.

One small module holds a layer of every spec (causal and bidirectional in turn), so each exporter runs once. The
model is called before export, so a warm eval-time softmax cache (which must not be baked in) exists.
"""
import io
import warnings

import pytest
import torch

from conftest import ALL_SPECS
from synthformer import SyntheticAttention

D, H, N = 8, 2, 8


class EverySpec(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.keys = [(spec, i % 2 == 1) for i, spec in enumerate(ALL_SPECS)]
        self.layers = torch.nn.ModuleList(
            SyntheticAttention(D, H, N, spec, causal=causal, dense_factors=(2, 4), factorized_k=3)
            for spec, causal in self.keys)
        for layer in self.layers:
            if layer.mix_logits is not None:
                torch.nn.init.normal_(layer.mix_logits)

    def forward(self, x, key_padding_mask):
        return tuple(layer(x, key_padding_mask=key_padding_mask)[0] for layer in self.layers)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = EverySpec().eval()
    with torch.no_grad():
        m(*inputs(0))  # warm the eval cache of the shared softmax
    return m


def inputs(seed):
    g = torch.Generator().manual_seed(seed)
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[1, 4:] = True
    return torch.randn(2, 6, D, generator=g), kpm


def check(model, got):
    x, kpm = inputs(1)
    with torch.no_grad():
        want = model(x, kpm)
    for key, a, b in zip(model.keys, got(x, kpm), want):
        torch.testing.assert_close(torch.as_tensor(a), b, atol=1e-5, rtol=1e-4, msg=lambda m: f"{key}: {m}")


def test_torch_export_under_no_grad(model):
    with torch.no_grad():
        program = torch.export.export(model, inputs(0))
        check(model, program.module())


def onnx_runner(data):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return lambda x, kpm: session.run(None, dict(zip(names, (x.numpy(), kpm.numpy()))))


def test_onnx_torchscript_exporter(model):
    pytest.importorskip("onnx")
    f = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated
        torch.onnx.export(model, inputs(0), f, dynamo=False, input_names=["x", "key_padding_mask"])
    check(model, onnx_runner(f.getvalue()))


@pytest.mark.slow  # 10 s: the dynamo exporter (the TorchScript one stays in make test)
def test_onnx_dynamo_exporter(model, tmp_path):
    pytest.importorskip("onnxscript")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, inputs(0), dynamo=True, verbose=False, optimize=False)
    program.save(str(tmp_path / "m.onnx"))
    check(model, onnx_runner((tmp_path / "m.onnx").read_bytes()))

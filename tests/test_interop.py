"""SyntheticAttention where other tools expect a PyTorch attention layer: ``torch.export`` with a dynamic
sequence length up to max_seq_len (every variant, and a model), and the call shape of ``nn.MultiheadAttention``.
"""
import warnings

import pytest
import torch
from torch.export import Dim

from conftest import SINGLE
from synthformer import SyntheticAttention
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

"""random_init of R / Fix / FR tables: per-head Xavier (default) or the official 3-D Glorot fans."""
import math

import pytest
import torch

from synthformer import SyntheticAttention
from synthformer.attention.synthesizers.base import init_bound
from synthformer.errors import ConfigError
from synthformer.model import ModelConfig, build_model


def _tables(attn):
    m = attn.members[0]
    return [m.r] if hasattr(m, "r") else [m.r1, m.r2]


@pytest.mark.parametrize("spec", ["R", "Fix", "FR"])
@pytest.mark.parametrize("kind", ["xavier", "glorot3d"])
def test_bound(spec, kind):
    n, h, k, scale = 64, 4, 8, 0.5
    torch.manual_seed(0)
    attn = SyntheticAttention(32, h, n, spec, factorized_k=k, random_init=kind, random_init_scale=scale)
    cols = n if spec != "FR" else k
    if kind == "xavier":
        bound = scale * math.sqrt(6 / (n + cols))
    else:  # Glorot over [rows, heads, cols]: fan_in = rows * heads, fan_out = rows * cols
        bound = scale * math.sqrt(6 / (n * h + n * cols))
    assert init_bound(kind, n, cols, h, scale) == pytest.approx(bound)
    for t in _tables(attn):
        assert t.abs().max() <= bound
        assert t.abs().max() > 0.95 * bound  # uniform over the whole range
        assert t.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.1)


def test_glorot3d_is_about_sqrt_2_over_h_plus_n_of_xavier():
    n, h = 256, 4
    ratio = init_bound("glorot3d", n, n, h) / init_bound("xavier", n, n, h)
    assert ratio == pytest.approx(math.sqrt(2 / (h + n)))


def test_default_and_errors():
    assert SyntheticAttention(16, 2, 8, "R").members[0].options.random_init == "xavier"
    with pytest.raises(ConfigError, match="random_init"):
        SyntheticAttention(16, 2, 8, "R", random_init="normal")
    with pytest.raises(ConfigError, match="random_init"):
        ModelConfig(kind="lm", attention="R", random_init="normal")


def test_model_config_passes_it_through():
    torch.manual_seed(0)
    cfg = ModelConfig(kind="lm", vocab_size=50, embed_dim=32, num_heads=4, num_layers=1, ffn_dim=32,
                      max_seq_len=64, attention="R", random_init="glorot3d")
    r = next(p for n_, p in build_model(cfg).named_parameters() if n_.endswith(".r"))
    assert r.abs().max() <= init_bound("glorot3d", 64, 64, 4)
    assert ModelConfig.from_dict(cfg.to_dict()).random_init == "glorot3d"

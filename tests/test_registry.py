"""The token-mixer registry: one answer for what a spec is, how it is shown, where it may go, how it is built."""
import pytest
import torch

from conftest import ALL_SPECS
from synthformer.attention import SYNTHESIZERS, SyntheticAttention
from synthformer.errors import ConfigError
from synthformer.mixers import (BASELINES, MIXERS, MixerError, SlotError, UnknownMixerError, build_token_mixer,
                                check_slot, display_name, is_baseline, mixer_state_numel, resolve_mixer)


@pytest.mark.parametrize("spec,kind,name,display", [
    ("R+V", "synthesizer", "random+vanilla", "R+V"), ("r+v", "synthesizer", "random+vanilla", "R+V"),
    ("fixed_random", "synthesizer", "fixed_random", "Fix"), (["dense", "vanilla"], "synthesizer", "dense+vanilla", "D+V"),
    ("DynamicConv", "baseline", "dynamicconv", "dynamicconv"), (" linformer ", "baseline", "linformer", "linformer"),
])
def test_resolve_names_kind_and_paper_notation(spec, kind, name, display):
    m = resolve_mixer(spec)
    assert (m.kind, m.name, m.display) == (kind, name, display)
    assert display_name(spec) == display
    assert is_baseline(spec) == (kind == "baseline")


def test_every_registry_entry_resolves():
    assert set(MIXERS) == set(BASELINES)
    for name in list(SYNTHESIZERS) + list(BASELINES):
        assert resolve_mixer(name).name == name


# (spec, may fill a causal decoder slot, may fill a cross-attention slot)
SLOTS = [(s, True, True) for s in ALL_SPECS] + [("lightconv", True, False), ("dynamicconv", True, False),
                                                ("linformer", False, False)]


@pytest.mark.parametrize("spec,causal_ok,cross_ok", SLOTS)
def test_slot_validity_and_build(spec, causal_ok, cross_ok):
    check_slot(spec, causal=False)  # every mixer fits an encoder
    kw = dict(embed_dim=16, num_heads=2, max_seq_len=16, factorized_k=4, kernel_size=3, linformer_k=4)
    for causal, cross, ok in ((True, False, causal_ok), (False, True, cross_ok)):
        if ok:
            module = build_token_mixer(spec, causal=causal, cross=cross, **kw)
            x = torch.randn(2, 5, 16)
            out, _ = module(x, memory=x) if cross else module(x)
            assert out.shape == x.shape
            numel = sum(p.numel() for p in module.parameters()) + sum(b.numel() for b in module.buffers())
            assert mixer_state_numel(spec, causal=causal, cross=cross, **kw) == numel
        else:
            with pytest.raises(SlotError):
                check_slot(spec, causal=causal, cross=cross)
            with pytest.raises(SlotError):
                build_token_mixer(spec, causal=causal, cross=cross, **kw)


def test_synthesizers_are_built_as_synthetic_attention_with_their_options():
    m = build_token_mixer("FR+V", embed_dim=16, num_heads=2, max_seq_len=16, causal=True, factorized_k=4,
                          kernel_size=3, linformer_k=4, dropout=0.1)
    assert isinstance(m, SyntheticAttention) and m.spec == "FR+V" and m.causal and m.dropout == 0.1
    assert m.members[0].r1.shape[-1] == 4  # factorized_k reached Factorized Random
    cross = build_token_mixer("R", embed_dim=16, num_heads=2, max_seq_len=16, causal=True, cross=True)
    assert not cross.causal  # cross-attention sees the whole encoder output


@pytest.mark.parametrize("spec,error,match", [
    ("conv", UnknownMixerError, "attention='conv': unknown synthesizer 'conv'.*baseline: lightconv, dynamicconv"),
    ("R+linformer", UnknownMixerError, "cannot be mixed"),
    (None, UnknownMixerError, "not a token-mixer spec"),
    ("R+R", UnknownMixerError, "names a synthesizer twice"),
])
def test_errors_are_typed(spec, error, match):
    with pytest.raises(error, match=match):
        resolve_mixer(spec)
    assert issubclass(error, MixerError) and issubclass(MixerError, ConfigError)


def test_slot_error_names_the_field():
    with pytest.raises(SlotError, match="^decoder_attention='linformer': linformer cannot be used in a decoder"):
        check_slot("linformer", causal=True, field="decoder_attention")
    with pytest.raises(SlotError, match="^cross_attention='lightconv': baselines cannot attend to an encoder"):
        check_slot("lightconv", causal=False, cross=True, field="cross_attention")

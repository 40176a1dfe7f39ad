"""ModelConfig validates every field itself: one-line ConfigError naming the field, the value and the fix."""
import json

import pytest

from conftest import run_in_process
from synthformer import ModelConfig, build_model
from synthformer.cli import main
from synthformer.errors import ConfigError
from synthformer.model.config import check_memory, estimate_parameter_bytes, physical_memory_bytes, slots


def tiny(**kw):
    return ModelConfig.preset("tiny", **kw)


@pytest.mark.parametrize("bad,match", [
    (dict(num_heads=0), "num_heads=0 must be a positive integer"),
    (dict(embed_dim=-4), "embed_dim=-4 must be a positive integer"),
    (dict(num_layers=0), "num_layers=0"),
    (dict(ffn_dim=0), "ffn_dim=0"),
    (dict(vocab_size=0), "vocab_size=0"),
    (dict(num_classes=0), "num_classes=0"),
    (dict(num_decoder_layers=0), "num_decoder_layers=0"),
    (dict(kernel_size=0), "kernel_size=0"),
    (dict(linformer_k=-1), "linformer_k=-1"),
    (dict(factorized_k=0), "factorized_k=0"),
    (dict(num_heads=2.0), "num_heads=2.0 must be an integer"),
    (dict(num_heads=True), "num_heads=True must be an integer"),
    (dict(num_heads=3), "num_heads=3 must divide embed_dim=64"),
    (dict(pad_id=-1), r"pad_id=-1 must be a token id in \[0, vocab_size"),
    (dict(eos_id=5000), "eos_id=5000"),
    (dict(dropout=1.0), r"dropout=1.0 must be in \[0, 1\)"),
    (dict(dropout=-0.1), "dropout=-0.1"),
    (dict(attention_dropout=2), "attention_dropout=2"),
    (dict(dropout=float("nan")), "dropout=nan must be a finite number"),
    (dict(random_init_scale=float("inf")), "random_init_scale=inf must be a finite number"),
    (dict(random_init_scale=0.0), "random_init_scale=0.0 must be > 0"),
    (dict(pooling="max"), "pooling='max'"),
    (dict(kind="gan"), "kind='gan'"),
    (dict(tie_embeddings="yes"), "tie_embeddings='yes'"),
    (dict(attention="FR", max_seq_len=4), "factorized_k=8 must be between 1 and max_seq_len=4"),
    (dict(dense_factors=(3, 5)), r"dense_factors=\(3, 5\) multiply to 15, not max_seq_len=128; e.g. use \(8, 16\)"),
    (dict(dense_factors=(0, 128)), "dense_factors=.* must be a pair of positive integers"),
    (dict(dense_factors=(2, 4, 16)), "must be a pair"),
    (dict(attention="Q+V"), "attention='Q\\+V': unknown synthesizer 'Q'.*baseline: lightconv"),
    (dict(attention=["R", "Zz"]), r"attention\[1\]='Zz': unknown synthesizer"),
    (dict(attention=["R"]), "1 entries for 2 layers"),
    (dict(attention="R+lightconv"), "cannot be mixed"),
    (dict(attention=7), "attention=7 must be a string or a list"),
    (dict(kind="lm", attention="linformer"), "attention='linformer': linformer cannot be used in a decoder"),
    (dict(kind="seq2seq", decoder_attention="linformer"), "decoder_attention='linformer': linformer cannot"),
    (dict(kind="seq2seq", attention="linformer"), "decoder_attention=None, so attention='linformer'"),
    (dict(kind="seq2seq", cross_attention="dynamicconv"), "cross_attention='dynamicconv': baselines cannot attend"),
    (dict(kind="seq2seq", cross_attention="Nope"), "cross_attention='Nope': unknown synthesizer"),
    (dict(decoder_attention="Nope"), "decoder_attention='Nope'"),  # unused by an lm, still a typo
])
def test_every_bad_field_is_a_one_line_config_error(bad, match):
    with pytest.raises(ConfigError, match=match) as info:
        tiny(**bad)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("good", [
    dict(kind="classifier", attention="linformer"), dict(kind="seq2seq", attention="linformer", decoder_attention="R"),
    dict(kind="lm", attention="dynamicconv"), dict(kind="seq2seq", cross_attention="FR+V"),
    dict(max_seq_len=4, attention="V"),  # factorized_k only matters where FR is used
    dict(dense_factors=(4, 32), attention="FD"), dict(attention=["R", "lightconv"]), dict(num_decoder_layers=None),
])
def test_valid_configs_still_pass(good):
    tiny(**good)


def test_unknown_preset_and_field_are_config_errors():
    with pytest.raises(ConfigError, match="unknown preset 'huge'"):
        ModelConfig.preset("huge")
    with pytest.raises(ConfigError, match="did you mean 'attention'"):
        ModelConfig.from_dict({"attenton": "R"})


@pytest.mark.parametrize("kind", ["lm", "classifier", "mlm", "seq2seq"])
@pytest.mark.parametrize("attention", ["V", "R", "Fix", "FR+V", "FD", "dynamicconv", "linformer"])
def test_memory_estimate_equals_the_built_model(kind, attention):
    extra = dict(decoder_attention="R") if kind == "seq2seq" else {}
    if attention == "linformer" and kind == "lm":
        return
    cfg = ModelConfig.preset("tiny", kind=kind, attention=attention, cross_attention="D+V", max_seq_len=32,
                             tie_embeddings=kind != "mlm", **extra)
    model = build_model(cfg)
    numel = sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())
    assert estimate_parameter_bytes(cfg) == 4 * numel


def test_a_model_larger_than_memory_is_refused_before_allocation():
    assert physical_memory_bytes() < 2**40  # the test machine has less than 1 TiB
    huge = tiny(max_seq_len=100_000_000, embed_dim=4096)  # a config alone is fine (a stored one loads anywhere)
    with pytest.raises(ConfigError, match=r"too large for this machine: its parameters alone need about [\d,.]+ GiB "
                                          r"\(estimated from .*max_seq_len=100000000"):
        check_memory(huge)  # the position table alone: 1.6 TB
    with pytest.raises(ConfigError, match="too large"):  # R's N x N table per head: 4 * 2 * 1e12 bytes
        check_memory(tiny(max_seq_len=1_000_000, attention="R"))
    check_memory(tiny())


def test_a_stored_config_too_large_for_this_machine_still_loads(tmp_path):
    """Reading a config (eval, generate, plots of a run trained on a bigger machine) never checks memory."""
    from synthformer.model.io import read_config

    folder = tmp_path / "model"
    folder.mkdir()
    big = tiny(max_seq_len=100_000_000, embed_dim=4096).to_dict()
    (folder / "config.json").write_text(json.dumps({"format_version": 1, "config": big}))
    assert read_config(folder).max_seq_len == 100_000_000


def test_slots_name_each_mixing_position():
    cfg = tiny(kind="seq2seq", attention=["R", "V"], decoder_attention="D", cross_attention="R+V")
    assert slots(cfg) == [("attention[0]", "R", False, False), ("attention[1]", "V", False, False),
                          ("decoder_attention", "D", True, False), ("decoder_attention", "D", True, False),
                          ("cross_attention", "R+V", False, True), ("cross_attention", "R+V", False, True)]


@pytest.mark.parametrize("option", [["--num_heads", "0"], ["--embed_dim", "-4"], ["--max_seq_len", "100000000", "--embed_dim", "4096"],
                                    ["--dropout", "2"], ["--attention", "linformer"],
                                    ["--dense_factors", "3,5"], ["--factorized_k", "999", "--attention", "FR"]])
def test_cli_refuses_bad_model_options_in_one_line_without_a_run_folder(tmp_path, option):
    out = tmp_path / "run"
    code, _, err = run_in_process(main, "train", "--out", out, "--threads", "1", "--steps", "1", *option)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("synthformer: error: ") and option[0].lstrip("-") in lines[0] or "too large" in lines[0]
    assert not out.exists()


def test_a_synthesizer_option_is_declared_once_and_reaches_config_help_and_layer():
    """SynthesizerOptions declares the options; ModelConfig, the CLI (keys and help) and every synthetic
    attention layer take them from there, the layers as the one object the config built."""
    import dataclasses

    from synthformer.attention import SyntheticAttention, SynthesizerOptions
    from synthformer.training.overrides import MODEL_FIELDS, field_comments, field_help

    declared = [f for f in dataclasses.fields(SynthesizerOptions) if f.name != "bias"]
    model_fields = {f.name: f for f in dataclasses.fields(ModelConfig)}
    help_text, comments = field_help(), field_comments(SynthesizerOptions)
    for f in declared:
        assert model_fields[f.name].default == f.default and f.name in MODEL_FIELDS
        assert f"--{f.name}=" in help_text and comments[f.name] and comments[f.name] in help_text
    cfg = tiny(kind="seq2seq", attention=["R", "FD"], decoder_attention="FR+V", factorized_k=4,
               random_init="glorot3d", dense_factors=[8, 16])
    assert cfg.synthesizer_options == SynthesizerOptions(4, (8, 16), 1.0, True, "glorot3d")
    layers = [m for m in build_model(cfg).modules() if isinstance(m, SyntheticAttention)]
    assert len(layers) == 6 and all(s.options is cfg.synthesizer_options for m in layers for s in m.members)
    with pytest.raises(ConfigError, match="random_init='normal' must be one of xavier, glorot3d"):
        SynthesizerOptions(random_init="normal")  # the one check, the layer's and the config's alike

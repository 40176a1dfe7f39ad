"""Models of every kind with every synthesizer and baseline: forward/backward, causality, generation, checkpoints."""
import json

import pytest
import torch

from conftest import SINGLE
from synthformer import ModelConfig, build_model, count_parameters, load
from synthformer.model import CheckpointError

BASELINES = ["lightconv", "dynamicconv", "linformer"]
MIXERS = SINGLE + ["R+V", "D+V"] + BASELINES
DECODABLE = [m for m in MIXERS if m != "linformer"]
V = 50


def tiny(kind, attention, **kw):
    return ModelConfig.preset("tiny", kind=kind, vocab_size=V, attention=attention, max_seq_len=16,
                              embed_dim=32, ffn_dim=64, dropout=0.0, **kw)


def ids(b, length, seed=0):
    return torch.randint(3, V, (b, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("attention", MIXERS)
@pytest.mark.parametrize("kind", ["lm", "classifier", "seq2seq", "mlm"])
def test_forward_backward_every_kind_and_mixer(kind, attention):
    if attention == "linformer" and kind in ("lm", "seq2seq"):
        with pytest.raises(ValueError, match="linformer cannot be used in a decoder"):
            build_model(tiny(kind, attention))
        return
    model = build_model(tiny(kind, attention, num_classes=3))
    x = ids(2, 12)
    mask = torch.zeros(2, 12, dtype=torch.bool)
    mask[1, 9:] = True
    if kind == "seq2seq":
        out = model(x, x[:, :7], src_padding_mask=mask)
        assert out.shape == (2, 7, V)
    else:
        out = model(x, key_padding_mask=mask)
        assert out.shape == ((2, 3) if kind == "classifier" else (2, 12, V))
    out.float().pow(2).mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
    assert torch.isfinite(out).all()


# 150 training steps each (2-4 s on 2 shared cores): V, R, Fix (the one that cannot learn) and a baseline in
# `make test`, the others slow.
LEARNS_FAST = ("vanilla", "random", "fixed_random", "lightconv")


@pytest.mark.parametrize("attention", [m if m in LEARNS_FAST else pytest.param(m, marks=pytest.mark.slow)
                                       for m in MIXERS])
def test_an_encoder_learns_where_to_look(attention):
    """Target at i = the token at i-1 on random tokens: only the token mixer can move it there, and only by
    position (a check that the attention MLMs' slow start on real text, reproductions/NOTES.md, is not an
    encoder that ignores positions). Every trainable mixer learns it in 150 steps; Fixed Random, whose
    table never trains, cannot (ln 47 = 3.85 nats at chance)."""
    model = build_model(tiny("mlm", attention))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(150):
        x = ids(16, 16, seed=step)  # (B, L)
        loss = torch.nn.functional.cross_entropy(model(x)[:, 1:].reshape(-1, V), x[:, :-1].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() > 2.5 if attention == "fixed_random" else loss.item() < 0.3, loss.item()


@pytest.mark.parametrize("attention", DECODABLE)
def test_lm_and_seq2seq_decoder_have_no_causal_leak(attention):
    lm = build_model(tiny("lm", attention)).eval()
    a, b = ids(2, 12), ids(2, 12)
    b[:, :6] = a[:, :6]
    torch.testing.assert_close(lm(a)[:, :6], lm(b)[:, :6])
    s2s = build_model(tiny("seq2seq", attention)).eval()
    src = ids(2, 10, seed=3)
    torch.testing.assert_close(s2s(src, a)[:, :6], s2s(src, b)[:, :6])


@pytest.mark.parametrize("attention", DECODABLE)
@pytest.mark.parametrize("strategy", ["greedy", "beam", "sample"])
def test_cached_generation_equals_uncached(attention, strategy):
    lm = build_model(tiny("lm", attention))
    prompt = ids(2, 4)
    kw = dict(max_new_tokens=8, strategy=strategy, num_beams=3, top_k=10, top_p=0.9)
    outs = [lm.generate(prompt, use_cache=c, generator=torch.Generator().manual_seed(7), **kw) if strategy == "sample"
            else lm.generate(prompt, use_cache=c, **kw) for c in (True, False)]
    assert torch.equal(outs[0], outs[1])
    assert outs[0].shape[1] <= 12 and torch.equal(outs[0][:, :4], prompt)
    s2s = build_model(tiny("seq2seq", attention))
    src = ids(3, 9)
    mask = torch.zeros(3, 9, dtype=torch.bool)
    mask[0, 6:] = True
    kw.pop("generator", None)
    outs = [s2s.generate(src, mask, use_cache=c, generator=torch.Generator().manual_seed(7), **kw) if strategy == "sample"
            else s2s.generate(src, mask, use_cache=c, **kw) for c in (True, False)]
    assert torch.equal(outs[0], outs[1])


def test_generation_stops_at_eos_and_pads_after():
    lm = build_model(tiny("lm", "R"))
    eos, pad = lm.config.eos_id, lm.config.pad_id

    def favour_eos(module, inputs, out):
        out = out.clone()
        out[..., eos] += 1e4
        return out

    handle = lm.head.register_forward_hook(favour_eos)
    out = lm.generate(ids(2, 3), max_new_tokens=10)
    assert out[:, 3:].tolist() == [[eos], [eos]]  # stopped right after EOS
    handle.remove()
    # rows finishing at different steps: padding after each row's EOS
    from synthformer.model.generate import Stepper, decode
    script = torch.tensor([[5, eos, 7, 7], [5, 6, 7, eos]])

    def step(tokens, n_new):
        logits = torch.zeros(2, V)
        logits[torch.arange(2), script[:, tokens.shape[1] - 1]] = 1.0
        return logits

    out = decode(Stepper(step, lambda i: None), torch.ones(2, 1, dtype=torch.long), 10, eos, pad)
    assert out.tolist() == [[1, 5, eos, pad, pad], [1, 5, 6, 7, eos]]


def test_beam_search_finds_the_best_sequence_on_a_known_distribution():
    # a decoder whose next-token distribution is fixed lets us check beam search exhaustively
    from synthformer.model.generate import Stepper, decode
    table = torch.log_softmax(torch.randn(6, 6, generator=torch.Generator().manual_seed(1)), -1)  # prev -> next

    def step(tokens, n_new):
        return table[tokens[:, -1]]

    start = torch.tensor([[3]])
    best = decode(Stepper(step, lambda i: None), start, 3, eos_id=99, pad_id=0, strategy="beam",
                  num_beams=36, length_penalty=0.0)
    exhaustive = max(((a, b, c) for a in range(6) for b in range(6) for c in range(6)),
                     key=lambda s: table[3, s[0]] + table[s[0], s[1]] + table[s[1], s[2]])
    assert best[0, 1:].tolist() == list(exhaustive)


@pytest.mark.parametrize("prompt,kw,match", [
    (torch.ones(1, 17, dtype=torch.long), {}, "max_seq_len=16, got \\(1, 17\\)"),
    (torch.ones(1, 0, dtype=torch.long), {}, "1 <= length"),
    (torch.ones(4, dtype=torch.long), {}, "shape \\(batch, length\\)"),
    (torch.ones(1, 3, dtype=torch.long), dict(strategy="beam", num_beams=0), "num_beams >= 1"),
    (torch.ones(1, 3, dtype=torch.long), dict(strategy="sample", top_p=0.0), "0 < top_p <= 1"),
    (torch.ones(1, 3, dtype=torch.long), dict(strategy="nucleus"), "strategy='nucleus'"),
])
def test_bad_generation_arguments(prompt, kw, match):
    with pytest.raises(ValueError, match=match):
        build_model(tiny("lm", "R")).generate(prompt, max_new_tokens=4, **kw)


def test_vanilla_agrees_with_torch_multihead_attention():
    from synthformer import SyntheticAttention
    d, h = 32, 4
    ours = SyntheticAttention(d, h, 20, "vanilla", causal=True)
    ref = torch.nn.MultiheadAttention(d, h, batch_first=True)
    with torch.no_grad():
        syn = ours.members[0]
        ref.in_proj_weight.copy_(torch.cat([syn.q_proj.weight, syn.k_proj.weight, ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([syn.q_proj.bias, syn.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    x = torch.randn(3, 15, d)
    kpm = torch.zeros(3, 15, dtype=torch.bool)
    kpm[2, 11:] = True
    causal = torch.ones(15, 15, dtype=torch.bool).triu(1)
    want, want_w = ref(x, x, x, key_padding_mask=kpm, attn_mask=causal, average_attn_weights=False)
    got, got_w = ours(x, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(got_w, want_w, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(ours(x, key_padding_mask=kpm)[0], want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kind,attention", [("lm", "R+V"), ("seq2seq", "D"), ("classifier", "Fix"),
                                            ("mlm", "FD"), ("lm", "dynamicconv")])
def test_save_load_round_trip(tmp_path, kind, attention):
    model = build_model(tiny(kind, attention)).eval()
    model.save(tmp_path / "ckpt")
    again = load(tmp_path / "ckpt").eval()
    assert again.config == model.config
    x = ids(2, 8)
    args = (x, x[:, :5]) if kind == "seq2seq" else (x,)
    torch.testing.assert_close(again(*args), model(*args), rtol=0, atol=0)
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["config.json", "manifest.json", "model.safetensors"]


def test_bad_checkpoints_are_rejected_clearly(tmp_path):
    model = build_model(tiny("lm", "R"))
    ck = tmp_path / "ck"
    model.save(ck)
    with pytest.raises(CheckpointError, match="config.json: not found"):
        load(tmp_path / "nowhere")
    weights = (ck / "model.safetensors").read_bytes()
    (ck / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    with pytest.raises(CheckpointError, match="model.safetensors: unreadable or truncated"):
        load(ck)
    (ck / "model.safetensors").write_bytes(weights)
    meta = json.loads((ck / "config.json").read_text())
    meta["config"]["embed_dim"] = 64
    (ck / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="do not match config.json"):
        load(ck)
    meta["config"]["embed_dim"] = 32
    meta["config"]["attention"] = "D"
    (ck / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="do not match config.json"):
        load(ck)
    (ck / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not a valid synthformer config"):
        load(ck)
    (ck / "model.safetensors").unlink()
    model.save(ck)  # a fresh save repairs the folder
    assert load(ck).config == model.config


def hand_count(cfg, extra_per_layer):
    """Parameters of the base LM computed by hand: embeddings, blocks, final norm (head tied)."""
    d, f, n, v = cfg.embed_dim, cfg.ffn_dim, cfg.max_seq_len, cfg.vocab_size
    block = 2 * 2 * d + (d * f + f + f * d + d) + 2 * (d * d + d) + extra_per_layer
    return v * d + n * d + cfg.num_layers * block + 2 * d


@pytest.mark.slow  # 7 s: builds the base preset
def test_base_preset_parameter_counts_follow_table1():
    d, n, h = 512, 512, 8
    counts = {}
    for spec, extra in [("V", 2 * d * d + 2 * d), ("R", h * n * n), ("D", d * d + d * n),
                        ("Fix", 0), ("FR", 2 * h * n * 8), ("R+V", h * n * n + 2 * d * d + 2 * d + 2 * h)]:
        cfg = ModelConfig.preset("base", kind="lm", vocab_size=32000, attention=spec)
        counts[spec] = count_parameters(build_model(cfg))
        assert counts[spec] == hand_count(cfg, extra), spec
    assert counts["Fix"] < counts["FR"] < counts["D"] < counts["V"] < counts["R"] < counts["R+V"]


def test_per_layer_and_decoder_specs():
    cfg = ModelConfig.preset("tiny", kind="seq2seq", vocab_size=V, attention=["R", "V"],
                             decoder_attention="D", cross_attention="R+V")
    model = build_model(cfg)
    assert [blk.mixer.spec for blk in model.encoder.layers] == ["R", "V"]
    assert [blk.mixer.spec for blk in model.decoder.layers] == ["D", "D"]
    assert all(blk.cross.spec == "R+V" for blk in model.decoder.layers)
    assert build_model(tiny("seq2seq", "R")).decoder.layers[0].cross.spec == "V"  # vanilla cross by default


@pytest.mark.parametrize("bad,match", [
    (dict(attenton="R"), "unknown ModelConfig field 'attenton'; did you mean 'attention'"),
    (dict(kind="gan"), "kind='gan'"),
    (dict(num_heads=3), "num_heads=3 must divide"),
    (dict(attention=["R"]), "1 entries for 2 layers"),
])
def test_bad_configs(bad, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig.preset("tiny", **bad)


def test_unknown_mixer_lists_synthesizers_and_baselines():
    with pytest.raises(ValueError, match="unknown synthesizer 'conv'.*baseline: lightconv, dynamicconv, linformer"):
        build_model(tiny("lm", "conv"))


def test_too_long_input_names_both_numbers():
    with pytest.raises(ValueError, match="sequence length 17 exceeds max_seq_len=16"):
        build_model(tiny("lm", "R"))(ids(1, 17))

"""synthformer.hf: Hugging Face config / model classes / cache adapter / tokenizer / export.

Every check compares real outputs of the Hugging Face classes (loaded back through the Auto classes
from a saved folder) with synthformer's own modules: logits, greedy and beam ids, tokenizer ids.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import subprocess
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")

import synthformer.hf as H  # noqa: E402  (registers the Auto classes)
from synthformer.data.tokenizer import build_tokenizer, load_tokenizer  # noqa: E402
from synthformer.model import ModelConfig, build_model, load  # noqa: E402
from transformers import (AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM,  # noqa: E402
                          AutoModelForSequenceClassification, AutoTokenizer)

transformers.utils.logging.disable_progress_bar()
transformers.utils.logging.set_verbosity_error()

AUTO = {"lm": AutoModelForCausalLM, "classifier": AutoModelForSequenceClassification, "mlm": AutoModelForMaskedLM,
        "seq2seq": AutoModelForSeq2SeqLM}
SHAPE = dict(embed_dim=32, num_heads=2, num_layers=2, ffn_dim=64, max_seq_len=32, vocab_size=40, dropout=0.0)
ATOL = 1e-5
NO_TOKEN = SHAPE["vocab_size"]  # an id outside the vocabulary: decoding never meets it


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: one thread is faster than two on shared cores (conftest restores the setting)."""
    torch.set_num_threads(1)


def tiny(kind: str, attention, **over):
    return build_model(ModelConfig(kind=kind, attention=attention, **(SHAPE | over))).eval()


def roundtrip(model, tmp_path):
    """to_hf, save_pretrained, load back through the Auto class of the model's kind."""
    hf = H.to_hf(model)
    hf.save_pretrained(tmp_path / "hf")
    loaded = AUTO[model.config.kind].from_pretrained(tmp_path / "hf")
    assert type(loaded) is H.HF_CLASSES[model.config.kind]
    return loaded.eval()


def padded_batch(b=3, length=12, vocab=40):
    ids = torch.randint(5, vocab, (b, length))
    lengths = torch.tensor([length, length - 4, length - 7])[:b]
    mask = (torch.arange(length)[None] < lengths[:, None]).long()  # HF: 1 = token
    return ids.masked_fill(mask == 0, 0), mask


def gen_eos(model, prompt, **kw):
    """An EOS id that synthformer's greedy decoding reaches mid-way: in row 0 only where possible
    (exercises the stop and the padding of finished rows), else in row 0."""
    out = model.generate(prompt, max_new_tokens=10, **kw)
    new = out[:, prompt.shape[1]:] if model.config.kind == "lm" else out
    row0 = new[0, 2:].tolist()
    others = set(new[1:].flatten().tolist())
    return next((t for t in row0 if t not in others), row0[0])


# ----------------------------------------------------------------------------- config and registration
def test_config_holds_every_model_config_field_and_round_trips():
    model_fields = {f.name for f in dataclasses.fields(ModelConfig)}
    hf_fields = {f.name for f in dataclasses.fields(H.SynthformerConfig)}
    assert model_fields <= hf_fields, f"missing in SynthformerConfig: {sorted(model_fields - hf_fields)}"
    cfg = ModelConfig(kind="seq2seq", attention=["R", "FD"], num_layers=2, decoder_attention="R+V", num_decoder_layers=3,
                      dense_factors=(8, 32), max_seq_len=256, pad_id=0, bos_id=1, eos_id=2, extra={"tokenizer": "bpe"})
    hc = H.SynthformerConfig.from_model_config(cfg)
    assert hc.model_type == "synthformer" and hc.is_encoder_decoder
    assert (hc.hidden_size, hc.num_attention_heads, hc.max_position_embeddings) == (256, 4, 256)
    assert (hc.pad_token_id, hc.bos_token_id, hc.eos_token_id, hc.decoder_start_token_id) == (0, 1, 2, 1)
    assert hc.to_model_config() == cfg
    again = H.SynthformerConfig.from_dict(hc.to_dict())
    assert again.to_model_config() == cfg
    with pytest.raises(ValueError, match="num_heads=3 must divide embed_dim=32"):
        H.SynthformerConfig(embed_dim=32, num_heads=3)


@pytest.mark.parametrize("kind", list(AUTO))
def test_auto_classes_resolve_the_synthformer_type(kind):
    cfg = AutoConfig.for_model("synthformer", kind=kind, **SHAPE)
    assert type(cfg) is H.SynthformerConfig
    model = AUTO[kind].from_config(cfg)
    assert type(model) is H.HF_CLASSES[kind] and model.model.config.kind == kind


def test_wrong_class_for_the_kind_is_refused():
    with pytest.raises(ValueError, match="kind='classifier'.*SynthformerForSequenceClassification"):
        H.SynthformerForCausalLM(H.SynthformerConfig(kind="classifier", **SHAPE))


# ----------------------------------------------------------------------------- causal LM
LM_VARIANTS = ["V", "R", "D", "FR", "FD", "R+V", "Fix", "dynamicconv", "lightconv"]


@pytest.mark.parametrize("attention", LM_VARIANTS)
def test_lm_logits_and_cached_generation_equal_synthformer(attention, tmp_path):
    model = tiny("lm", attention)
    hf = roundtrip(model, tmp_path)
    assert hf.model.head.weight is hf.model.embed.tok.weight  # tied again after loading
    ids, mask = padded_batch()
    with torch.no_grad():
        torch.testing.assert_close(hf(ids).logits, model(ids), atol=ATOL, rtol=0)
        torch.testing.assert_close(hf(ids, attention_mask=mask).logits, model(ids, mask == 0), atol=ATOL, rtol=0)
    prompt = ids[:, :4]
    eos = gen_eos(model, prompt)
    model.config.eos_id = eos
    hf.generation_config.eos_token_id = eos
    want = model.generate(prompt, max_new_tokens=10)
    got = hf.generate(prompt, max_new_tokens=10, do_sample=False, use_cache=True)
    assert eos in want[0, 4:].tolist()  # decoding stopped at EOS (and padded rows that finished first)
    assert torch.equal(got, want)
    # beam search, every hypothesis running to the budget (an EOS id no token has: the two beam searches
    # treat hypotheses that end early differently, see synthformer/hf/modeling.py)
    model.config.eos_id = hf.generation_config.eos_token_id = NO_TOKEN
    want = model.generate(prompt, max_new_tokens=8, strategy="beam", num_beams=3)
    got = hf.generate(prompt, max_new_tokens=8, num_beams=3, do_sample=False, use_cache=True)
    assert torch.equal(got, want)


def test_generate_uses_the_synthformer_cache_and_stepping_equals_full_forward(tmp_path):
    model = tiny("lm", "R+V")
    hf = roundtrip(model, tmp_path)
    prompt = torch.randint(5, 40, (2, 5))
    out = hf.generate(prompt, max_new_tokens=6, do_sample=False, return_dict_in_generate=True)
    cache = out.past_key_values
    assert isinstance(cache, H.SynthformerCache) and cache.get_seq_length() == out.sequences.shape[1] - 1
    assert cache.layers[0].state["self"].keys  # R+V caches the V keys beside the values
    # manual stepping through the cache equals the full causal forward
    seq = out.sequences
    with torch.no_grad():
        full = hf(seq).logits
        step_cache, steps = None, []
        r = hf(seq[:, :3], use_cache=True)
        step_cache, steps = r.past_key_values, [r.logits]
        for t in range(3, seq.shape[1]):
            r = hf(seq[:, t:t + 1], past_key_values=step_cache)
            steps.append(r.logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=ATOL, rtol=0)


def test_lm_loss_is_shifted_cross_entropy_and_trains():
    hf = H.to_hf(tiny("lm", "R+V")).train()
    ids = torch.randint(5, 40, (2, 10))
    out = hf(ids, labels=ids)
    ref = torch.nn.functional.cross_entropy(out.logits[:, :-1].reshape(-1, 40), ids[:, 1:].reshape(-1))
    torch.testing.assert_close(out.loss, ref)
    out.loss.backward()
    assert hf.model.embed.tok.weight.grad is not None and hf.model.decoder.layers[0].mixer.mix_logits.grad is not None


def test_to_hf_and_from_hf_round_trip_weights_and_mode():
    model = tiny("lm", "FD").train()
    hf = H.to_hf(model)
    assert hf.training
    hf.model.embed.pos.weight.data.add_(1.0)  # a copy: the original is untouched
    back = H.from_hf(hf)
    assert back.training and type(back) is type(model)
    assert torch.equal(back.embed.pos.weight, hf.model.embed.pos.weight)
    assert not torch.equal(back.embed.pos.weight, model.embed.pos.weight)
    with pytest.raises(TypeError, match="synthformer.hf model"):
        H.from_hf(torch.nn.Linear(2, 2))


# ----------------------------------------------------------------------------- encoder kinds
@pytest.mark.parametrize("attention,pooling", [("V", "mean"), ("R", "mean"), ("D", "cls"), ("FR", "mean"),
                                               ("FD", "mean"), ("R+V", "mean"), ("Fix", "mean"),
                                               ("linformer", "mean"), ("dynamicconv", "mean")])
def test_classifier_logits_equal(attention, pooling, tmp_path):
    model = tiny("classifier", attention, num_classes=3, pooling=pooling)
    hf = roundtrip(model, tmp_path)
    assert hf.config.num_labels == 3
    ids, mask = padded_batch()
    with torch.no_grad():
        torch.testing.assert_close(hf(ids, attention_mask=mask).logits, model(ids, mask == 0), atol=ATOL, rtol=0)
        torch.testing.assert_close(hf(ids).logits, model(ids), atol=ATOL, rtol=0)
    labels = torch.tensor([0, 2, 1])
    ref = torch.nn.functional.cross_entropy(model(ids, mask == 0), labels)
    torch.testing.assert_close(hf(ids, attention_mask=mask, labels=labels).loss, ref, atol=ATOL, rtol=0)


@pytest.mark.parametrize("attention", ["V", "R+V", "FD", "Fix"])
def test_masked_lm_logits_equal(attention, tmp_path):
    model = tiny("mlm", attention)
    hf = roundtrip(model, tmp_path)
    ids, mask = padded_batch()
    with torch.no_grad():
        torch.testing.assert_close(hf(ids, attention_mask=mask).logits, model(ids, mask == 0), atol=ATOL, rtol=0)


# ----------------------------------------------------------------------------- seq2seq
@pytest.mark.parametrize("attention", ["V", "R", "R+V", "FD", "dynamicconv"])
def test_seq2seq_logits_and_cached_generation_equal(attention, tmp_path):
    model = tiny("seq2seq", attention)
    hf = roundtrip(model, tmp_path)
    src, src_mask = padded_batch()
    tgt = torch.randint(5, 40, (3, 7))
    tgt[:, 0] = model.config.bos_id
    with torch.no_grad():
        want = model(src, tgt, src_mask == 0)
        torch.testing.assert_close(hf(input_ids=src, attention_mask=src_mask, decoder_input_ids=tgt).logits,
                                   want, atol=ATOL, rtol=0)
    eos = gen_eos(model, src, src_padding_mask=src_mask == 0)
    model.config.eos_id = hf.generation_config.eos_token_id = eos
    want = model.generate(src, src_mask == 0, max_new_tokens=10)
    got = hf.generate(src, attention_mask=src_mask, max_new_tokens=10, do_sample=False)
    assert got[:, 0].eq(model.config.bos_id).all() and torch.equal(got[:, 1:], want)
    model.config.eos_id = hf.generation_config.eos_token_id = NO_TOKEN
    want = model.generate(src, src_mask == 0, max_new_tokens=8, strategy="beam", num_beams=3)
    got = hf.generate(src, attention_mask=src_mask, max_new_tokens=8, num_beams=3, do_sample=False)
    assert torch.equal(got[:, 1:], want)


# ----------------------------------------------------------------------------- tokenizer and export
TEXTS = ["the cat sat on the mat <pad>", "der Hund läuft schnell 日本", "a dog ran to the old house"] * 30


@pytest.mark.parametrize("kind", ["bpe", "char", "byte", "word"])
def test_tokenizer_loads_with_auto_tokenizer_and_matches(kind, tmp_path):
    texts = [t.replace("<pad>", "") for t in TEXTS] if kind == "word" else TEXTS  # a word "<pad>": see below
    tok = build_tokenizer(kind, texts, vocab_size=300)
    H.to_hf_tokenizer(tok, 64).save_pretrained(tmp_path)
    auto = AutoTokenizer.from_pretrained(tmp_path)
    assert (auto.pad_token_id, auto.bos_token_id, auto.eos_token_id, auto.unk_token_id, auto.mask_token_id) == \
        (0, 1, 2, 3, 4)
    assert auto.model_max_length == 64 and len(auto) == tok.vocab_size
    for text in ["the cat <pad> sat<eos>", "läuft 日本 and ~{Zq", "", "  the   dog\tran \n"]:
        if kind == "word":  # a whole word "<pad>" is the special there (documented in synthformer.hf.tokenization)
            text = text.replace("<pad>", "")
        ids = tok.encode(text)
        assert auto(text)["input_ids"] == ids, (kind, text)
        assert auto.decode(ids + [2, 0], skip_special_tokens=True) == tok.decode(ids)


def test_word_tokenizer_with_a_special_as_a_word_warns():
    tok = build_tokenizer("word", ["a <pad> b"])
    with pytest.warns(UserWarning, match="ordinary words"):
        H.to_hf_tokenizer(tok)


def make_run(kind: str, attention, folder, tokenizer="char"):
    """A run folder as training writes it: config.json, the tokenizer, manifest.json and RUN/model."""
    from synthformer.training.runs import write_start
    from synthformer.training.loop import TrainConfig

    tok = build_tokenizer(tokenizer, TEXTS, vocab_size=300)
    model = tiny(kind, attention, vocab_size=tok.vocab_size)
    folder.mkdir(parents=True)
    write_start(folder, TrainConfig(), model.config, tok, world_size=1)
    model.save(folder / "model")
    return model, tok


@pytest.mark.parametrize("kind,attention", [("classifier", "R"), ("mlm", "FR"), ("seq2seq", "R+V")])
def test_export_every_kind_loads_with_its_auto_class(kind, attention, tmp_path):
    model, tok = make_run(kind, attention, tmp_path / "run")
    out = H.export_hf(tmp_path / "run", tmp_path / "out")
    assert json.loads((out / "config.json").read_text())["model_type"] == "synthformer"
    hf = AUTO[kind].from_pretrained(out).eval()
    auto_tok = AutoTokenizer.from_pretrained(out)
    batch = auto_tok(["the cat sat", "a dog ran to the house"], padding=True, return_tensors="pt")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert ids[0].tolist()[:len(tok.encode("the cat sat"))] == tok.encode("the cat sat")
    with torch.no_grad():
        if kind == "seq2seq":
            tgt = torch.ones(2, 1, dtype=torch.long)
            got = hf(input_ids=ids, attention_mask=mask, decoder_input_ids=tgt).logits
            want = model(ids, tgt, mask == 0)
        else:
            got, want = hf(**batch).logits, model(ids, mask == 0)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)


WORDS = "the cat sat on a mat and dog ran to house with red blue green big small old new".split()


@pytest.fixture(scope="module")
def trained_lm_run(tmp_path_factory):
    """A real two-step LM run through synthformer's training loop (BPE tokenizer, R+V)."""
    from synthformer.training.loop import TrainConfig, train

    root = tmp_path_factory.mktemp("hf_run")
    rng = random.Random(0)
    data = root / "lm.txt"
    data.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) for _ in range(200)))
    cfg = TrainConfig(task="lm", data=str(data), steps=2, batch_size=4, seq_len=24, vocab_size=300, log_every=1,
                      eval_every=0, eval_batches=1, final_eval_batches=1, warmup_steps=1, threads=1,
                      progress=False, out=str(root / "run"))
    train(cfg, {"attention": "R+V", "dropout": 0.0, "max_seq_len": 32}, log=lambda *a, **k: None)
    return root / "run"


def test_export_trained_run_equal_logits_and_cached_greedy(trained_lm_run, tmp_path):
    out = H.export_hf(trained_lm_run, tmp_path / "out")
    model = load(trained_lm_run / "model").eval()
    hf = AutoModelForCausalLM.from_pretrained(out).eval()
    tok = AutoTokenizer.from_pretrained(out)
    run_tok = load_tokenizer(trained_lm_run)
    text = "the cat sat on a mat and"
    ids = tok(text, return_tensors="pt")["input_ids"]
    assert ids[0].tolist() == [run_tok.eos_id] + run_tok.encode(text)  # as synthformer generate's prompt
    with torch.no_grad():
        torch.testing.assert_close(hf(ids).logits, model(ids), atol=ATOL, rtol=0)
    want = model.generate(ids, max_new_tokens=8)
    got = hf.generate(ids, max_new_tokens=8, do_sample=False)
    assert torch.equal(got, want)
    assert tok.decode(got[0], skip_special_tokens=True) == run_tok.decode(want[0].tolist())


def test_export_from_a_checkpoint_folder_and_the_cli_pair(trained_lm_run, tmp_path):
    ckpt = sorted((trained_lm_run / "checkpoints").glob("step-*"))[-1]
    out = H.export_hf(ckpt, tmp_path / "from_ckpt")  # tokenizer found two levels up
    assert (out / "tokenizer.json").is_file()
    parser = argparse.ArgumentParser()
    H.add_parser(parser.add_subparsers(dest="format"))
    args = parser.parse_args(["hf", "--run", str(trained_lm_run), "--out", str(tmp_path / "cli")])
    assert args.func(args) == 0
    a = AutoModelForCausalLM.from_pretrained(out).eval()
    b = AutoModelForCausalLM.from_pretrained(tmp_path / "cli").eval()
    ids = torch.randint(5, 300, (1, 6))
    with torch.no_grad():
        torch.testing.assert_close(a(ids).logits, b(ids).logits, atol=ATOL, rtol=0)  # final == last checkpoint


def test_export_refusals(tmp_path):
    with pytest.raises(H.ExportError, match="no model to export"):
        H.export_hf(tmp_path, tmp_path / "out")
    make_run("lm", "R", tmp_path / "run")
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(H.ExportError, match="not a synthformer export"):
        H.export_hf(tmp_path / "run", other)


def test_without_transformers_the_package_imports_and_fails_on_use():
    code = ("import sys; sys.modules['transformers'] = None\n"
            "import argparse, synthformer.hf as H\n"
            "H.add_parser(argparse.ArgumentParser().add_subparsers())\n"
            "try:\n    H.to_hf\nexcept ImportError as e:\n    print('ImportError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ImportError: synthformer.hf needs" in out.stdout and "pip install" in out.stdout


# ----------------------------------------------------------------------------- padding, outputs, training hooks
def left_padded(ids: torch.Tensor, lengths: list[int]):
    """Each row's last `lengths[b]` tokens, padded on the left with <pad> (HF mask 0)."""
    padded, mask = torch.zeros_like(ids), torch.zeros_like(ids)
    for b, n in enumerate(lengths):
        padded[b, ids.shape[1] - n:], mask[b, ids.shape[1] - n:] = ids[b, :n], 1
    return padded, mask


@pytest.mark.parametrize("kind,attention", [("lm", "V"), ("lm", "R"), ("lm", "D+V"), ("lm", "dynamicconv"),
                                            ("classifier", "R"), ("mlm", "FD")])
def test_left_padded_rows_equal_the_rows_alone(kind, attention):
    over = {"num_classes": 3, "pooling": "cls"} if kind == "classifier" else {}
    hf = H.to_hf(tiny(kind, attention, **over))
    ids = torch.randint(5, 40, (3, 10))
    lengths = [10, 6, 3]
    padded, mask = left_padded(ids, lengths)
    with torch.no_grad():
        got = hf(padded, attention_mask=mask).logits
        for b, n in enumerate(lengths):
            alone = hf(ids[b:b + 1, :n]).logits[0]  # (classes) or (n, vocab)
            have = got[b] if kind == "classifier" else got[b, 10 - n:]
            torch.testing.assert_close(have, alone, atol=ATOL, rtol=0)


def test_left_padded_batch_generates_each_prompt_as_alone():
    model = tiny("lm", "R+V")
    hf = H.to_hf(model)
    ids = torch.randint(5, 40, (2, 6))
    padded, mask = left_padded(ids, [6, 3])
    got = hf.generate(padded, attention_mask=mask, max_new_tokens=5, do_sample=False)
    for b, n in enumerate([6, 3]):
        want = model.generate(ids[b:b + 1, :n], max_new_tokens=5)[0, n:]
        assert got[b, 6:].tolist() == want.tolist()


def test_hidden_states_and_attentions_are_real_tensors():
    model = tiny("lm", "R+V")
    hf = H.to_hf(model)
    ids = torch.randint(5, 40, (2, 9))
    with torch.no_grad():
        out = hf(ids, output_hidden_states=True, output_attentions=True)
        assert len(out.hidden_states) == SHAPE["num_layers"] + 1 and len(out.attentions) == SHAPE["num_layers"]
        torch.testing.assert_close(out.hidden_states[0], model.embed(ids))
        torch.testing.assert_close(model.head(out.hidden_states[-1]), out.logits)
        _, want = model.decoder.layers[0].mixer(model.decoder.layers[0].norm1(model.embed(ids)), need_weights=True)
        torch.testing.assert_close(out.attentions[0], want)  # (B, H, L, L), causal rows summing to 1
        assert out.attentions[1].shape == (2, SHAPE["num_heads"], 9, 9)
        torch.testing.assert_close(out.attentions[1].sum(-1), torch.ones(2, SHAPE["num_heads"], 9))
        assert hf(ids).hidden_states is None
        base = transformers.AutoModel.from_config(hf.config)  # registered by `import synthformer.hf`
        assert type(base) is H.SynthformerBaseModel
        base.model.load_state_dict(model.state_dict())
        torch.testing.assert_close(base(ids).last_hidden_state, out.hidden_states[-1])


def test_gradient_checkpointing_gives_the_same_gradients():
    torch.manual_seed(0)
    ref = H.to_hf(tiny("lm", "R+V", dropout=0.1)).train()
    ids = torch.randint(5, 40, (2, 12))
    grads = []
    for checkpointing in (False, True):
        hf = H.to_hf(ref.model).train()
        if checkpointing:
            hf.gradient_checkpointing_enable()
        calls = []
        hf.model.decoder.layers[0].register_forward_pre_hook(lambda *a: calls.append(1))
        torch.manual_seed(1)
        hf(ids, labels=ids).loss.backward()
        assert len(calls) == (2 if checkpointing else 1)  # checkpointed: run again in the backward pass
        grads.append({n: p.grad.clone() for n, p in hf.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], msg=name)


def test_generation_past_max_seq_len_is_one_clear_error():
    hf = H.to_hf(tiny("lm", "R"))
    prompt = torch.randint(5, 40, (1, 10))
    with pytest.raises(ValueError, match=r"max_new_tokens=40 with 10 prompt token\(s\) needs 50 positions, past "
                                         r"max_seq_len=32; ask for at most 22 new tokens"):
        hf.generate(prompt, max_new_tokens=40)
    assert hf.generate(prompt, do_sample=False).shape[1] <= SHAPE["max_seq_len"]  # the default budget fits


def test_trainer_runs_a_few_steps(tmp_path):
    pytest.importorskip("accelerate")
    hf = H.to_hf(tiny("classifier", "R+V", num_classes=2)).train()
    before = hf.model.head.weight.detach().clone()
    rows = [{"input_ids": torch.randint(5, 40, (8,)).tolist(), "labels": i % 2} for i in range(16)]
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=4,
                                          report_to=[], use_cpu=True, save_strategy="no", logging_steps=1,
                                          learning_rate=1e-2)
    result = transformers.Trainer(model=hf, args=args, train_dataset=rows).train()
    assert result.global_step == 3 and torch.isfinite(torch.tensor(result.training_loss))
    assert not torch.equal(hf.model.head.weight, before)


# ----------------------------------------------------------------------------- a run's tokenizer files
@pytest.mark.parametrize("kind", ["bpe", "char", "byte", "word"])
def test_run_tokenizer_json_is_the_standard_file(kind, tmp_path):
    from tokenizers import Tokenizer as HFTokenizer

    texts = [t.replace("<pad>", "") for t in TEXTS]
    tok = build_tokenizer(kind, texts, vocab_size=300)
    tok.save(tmp_path)
    std = HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))
    meta = json.loads((tmp_path / "tokenizer_meta.json").read_text())
    assert meta["kind"] == kind and "hf" not in meta
    back = load_tokenizer(tmp_path)
    for text in ["the cat sat", "läuft 日本 and", "a dog ran to the old house"]:
        assert std.encode(text).ids == tok.encode(text) == back.encode(text)


def test_old_wrapper_tokenizer_files_still_load(tmp_path):
    """Runs written before tokenizer_meta.json hold one wrapper file {"kind", "specials", ...}."""
    tok = build_tokenizer("bpe", TEXTS, vocab_size=300)
    old = {"kind": "bpe", "specials": list(tok.specials), "hf": json.loads(tok.hf.to_str())}
    (tmp_path / "tokenizer.json").write_text(json.dumps(old))
    assert load_tokenizer(tmp_path).encode("the cat sat") == tok.encode("the cat sat")
    (tmp_path / "tokenizer.json").write_text(json.dumps({"kind": "char", "specials": tok.specials[:5],
                                                         "chars": ["a", "b"]}))
    legacy = load_tokenizer(tmp_path / "tokenizer.json")
    assert legacy.sep_id is None and legacy.encode("ab") == [5, 6]
    tok.save(tmp_path)
    (tmp_path / "tokenizer_meta.json").unlink()
    with pytest.raises(ValueError, match="no tokenizer_meta.json beside it"):
        load_tokenizer(tmp_path)


# ----------------------------------------------------------------------------- exports in a process without synthformer
# Runs python with every `synthformer` import failing (as if not installed) and the worktree off sys.path.
HIDE_SYNTHFORMER = """
import importlib.abc, json, sys
sys.path = [p for p in sys.path if p not in ('', {root!r})]
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'synthformer':
            raise ModuleNotFoundError(f'No module named {{name!r}} (hidden)', name=name)
sys.meta_path.insert(0, Hide())
import torch, transformers
transformers.utils.logging.set_verbosity_error()
from transformers import AutoModel, AutoTokenizer, pipeline
"""
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def without_synthformer(code: str, cwd) -> dict:
    """Run ``code`` (after `HIDE_SYNTHFORMER`) in a fresh process; it prints one JSON line, returned."""
    script = HIDE_SYNTHFORMER.format(root=str(ROOT)) + code + \
        "\nassert not [m for m in sys.modules if m.split('.')[0] == 'synthformer']\n"
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300,
                         env={**env, "OMP_NUM_THREADS": "1", "HF_MODULES_CACHE": str(cwd / "hf_modules")})
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


CLASSES = {"people": ["the old man sat", "a girl ran home", "my aunt and uncle"],
           "animals": ["the cat sat on the mat", "a dog ran to the house", "big red fox"],
           "places": ["the small house", "a green field and a river", "old town with a blue gate"]}
PROBES = ["the cat ran home", "a blue river", "my old uncle sat", "zq"]


@pytest.fixture(scope="module")
def cli_classifier_run(tmp_path_factory):
    """A cls-pooled classifier trained for a few steps through the real `synthformer train` command."""
    from synthformer.cli import main

    root = tmp_path_factory.mktemp("cls_run")
    rows = [f"{label}\t{text}" for _ in range(8) for label, texts in CLASSES.items() for text in texts]
    (root / "data.tsv").write_text("label\ttext\n" + "\n".join(rows) + "\n")
    code = main(["train", "--task", "classify", "--data", str(root / "data.tsv"), "--tokenizer", "char",
                 "--pooling", "cls", "--attention", "R+V", "--steps", "3", "--batch_size", "8", "--embed_dim", "32",
                 "--num_heads", "2", "--num_layers", "2", "--ffn_dim", "64", "--max_seq_len", "32",
                 "--eval_every", "0", "--log_every", "1", "--warmup_steps", "1", "--threads", "1", "--progress",
                 "false", "--out", str(root / "run")])
    assert code == 0
    return root / "run"


@pytest.mark.slow  # 13 s: remote code in a fresh process (the LM / seq2seq / MLM one stays in make test)
def test_cli_classifier_export_predicts_as_synthformer_in_a_fresh_process(cli_classifier_run, tmp_path, capsys):
    """Pipeline labels (by name) and logits in a process that cannot import synthformer equal
    `synthformer generate` and synthformer's own model on the same texts."""
    from synthformer.cli import main
    from synthformer.tasks import classifier_input

    out = H.export_hf(cli_classifier_run, tmp_path / "export")
    config = json.loads((out / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSequenceClassification"] == \
        "modeling_synthformer.SynthformerForSequenceClassification"
    assert sorted(config["id2label"].values()) == sorted(CLASSES)
    got = without_synthformer(f"""
from transformers import AutoModelForSequenceClassification
model = AutoModelForSequenceClassification.from_pretrained({str(out)!r}, trust_remote_code=True).eval()
tok = AutoTokenizer.from_pretrained({str(out)!r}, trust_remote_code=True)
texts = {PROBES!r}
pipe = pipeline("text-classification", model=model, tokenizer=tok)
batch = tok(texts, padding=True, return_tensors="pt")
with torch.no_grad():
    logits = model(**batch).logits.tolist()
base = AutoModel.from_pretrained({str(out)!r}, trust_remote_code=True).eval()
print(json.dumps({{"labels": [r["label"] for r in pipe(texts)], "scores": [r["score"] for r in pipe(texts)],
                  "logits": logits, "ids": tok(texts)["input_ids"], "pair": tok("the cat", "a dog")["input_ids"],
                  "base": type(base).__name__, "hidden": list(base(**batch).last_hidden_state.shape)}}))
""", tmp_path)
    model = load(cli_classifier_run / "model").eval()
    tok = load_tokenizer(cli_classifier_run)
    assert got["pair"] == classifier_input(("the cat", "a dog"), tok, 32, "cls")  # [<bos>] a <sep> b
    assert got["base"] == "SynthformerBaseModel" and got["hidden"][0] == len(PROBES)
    for i, text in enumerate(PROBES):
        ids = classifier_input(text, tok, 32, "cls")
        assert got["ids"][i] == ids and ids[0] == tok.bos_id  # the CLS slot training had
        with torch.no_grad():
            want = model(torch.tensor([ids]))[0]
        torch.testing.assert_close(torch.tensor(got["logits"][i]), want, atol=1e-5, rtol=0)
        capsys.readouterr()
        assert main(["generate", "--run", str(cli_classifier_run), text]) == 0
        said = json.loads(capsys.readouterr().out)
        assert got["labels"][i] == said["label"] and abs(got["scores"][i] - said["probability"]) < 1e-4


def test_remote_code_flattens_a_submodule_imported_from_its_package():
    from synthformer.hf.remote import rewrite

    text, deps = rewrite("synthformer.attention.layer", "from .kernels import paths\nfrom .kernels.paths import Path\n")
    assert text == ("from . import synthformer_attention_kernels_paths as paths\n"
                    "from .synthformer_attention_kernels_paths import Path\n")
    assert deps == {"synthformer.attention.kernels.paths"}


def test_lm_seq2seq_and_mlm_exports_load_and_run_without_synthformer(trained_lm_run, tmp_path):
    from transformers.dynamic_module_utils import get_relative_import_files

    out = H.export_hf(trained_lm_run, tmp_path / "lm")
    copied = {__import__("pathlib").Path(f).name for f in get_relative_import_files(out / "modeling_synthformer.py")}
    assert copied == {p.name for p in out.glob("synthformer_*.py")}  # transformers copies every vendored module
    model, _ = make_run("seq2seq", "R+V", tmp_path / "s2s_run")
    s2s = H.export_hf(tmp_path / "s2s_run", tmp_path / "s2s")
    mlm, mlm_tok = make_run("mlm", "FD", tmp_path / "mlm_run")
    mlm_out = H.export_hf(tmp_path / "mlm_run", tmp_path / "mlm")
    got = without_synthformer(f"""
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM
mlm = AutoModelForMaskedLM.from_pretrained({str(mlm_out)!r}, trust_remote_code=True).eval()
with torch.no_grad():
    mlm_logits = mlm(torch.tensor([[7, 8, 4, 9, 10]])).logits.tolist()
lm = AutoModelForCausalLM.from_pretrained({str(out)!r}, trust_remote_code=True).eval()
tok = AutoTokenizer.from_pretrained({str(out)!r}, trust_remote_code=True)
ids = tok(["the cat sat on a mat and", "a dog"], padding=True, return_tensors="pt")
gen = lm.generate(**ids, max_new_tokens=6, do_sample=False).tolist()
s2s = AutoModelForSeq2SeqLM.from_pretrained({str(s2s)!r}, trust_remote_code=True).eval()
s2s_tok = AutoTokenizer.from_pretrained({str(s2s)!r}, trust_remote_code=True)
src = s2s_tok(["the cat sat"], return_tensors="pt")
print(json.dumps({{"lm": gen, "mask": ids["attention_mask"].tolist(), "s2s": s2s.generate(**src, max_new_tokens=5,
                  do_sample=False).tolist(), "src": src["input_ids"].tolist(), "mlm": mlm_logits}}))
""", tmp_path)
    with torch.no_grad():
        torch.testing.assert_close(torch.tensor(got["mlm"]), mlm(torch.tensor([[7, 8, 4, 9, 10]])), atol=ATOL, rtol=0)
    lm = load(trained_lm_run / "model").eval()
    run_tok = load_tokenizer(trained_lm_run)
    for row, mask, text in zip(got["lm"], got["mask"], ["the cat sat on a mat and", "a dog"]):
        prompt = [run_tok.eos_id] + run_tok.encode(text)  # as `synthformer generate` starts a prompt
        assert row[len(mask) - sum(mask):len(mask)] == prompt  # left-padded
        want = lm.generate(torch.tensor([prompt]), max_new_tokens=6)[0, len(prompt):].tolist()
        assert row[len(mask):len(mask) + len(want)] == want
    src = got["src"][0]
    assert src[-1] == 2  # the source ends with <eos>, as the seq2seq task encodes it
    want = model.generate(torch.tensor([src]), max_new_tokens=5)[0].tolist()
    assert got["s2s"][0][1:1 + len(want)] == want


@pytest.mark.parametrize("kind", list(AUTO))
def test_auto_model_loads_every_kind_as_its_hidden_states(kind, tmp_path):
    model = tiny(kind, "R+V", **({"num_classes": 3} if kind == "classifier" else {}))
    H.to_hf(model).save_pretrained(tmp_path)
    base = transformers.AutoModel.from_pretrained(tmp_path).eval()
    assert type(base) is H.SynthformerBaseModel
    assert (base.model.head.weight is base.model.embed.tok.weight) == (kind != "classifier")  # tied, not missing
    ids = torch.randint(5, 40, (2, 7))
    with torch.no_grad():
        if kind == "seq2seq":
            h = base(input_ids=ids, decoder_input_ids=ids[:, :3]).last_hidden_state
            want = model(ids, ids[:, :3])
        else:
            h = base(ids).last_hidden_state  # (B, L, d)
            want = model(ids)
        got = model.head(model.pool(h)) if kind == "classifier" else model.head(h)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)

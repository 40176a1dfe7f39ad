"""Tasks: one shared evaluation loop, per-task hooks, bootstrap SEs against literal resampling, what seq2seq
decodes (a seeded sample, source-bound lengths); MLM's model_fields is pure; CLS pooling reads a CLS token."""
import dataclasses
import json
import math
import statistics
from types import SimpleNamespace

import numpy as np
import pytest
import sacrebleu
import torch
import torch.nn.functional as F
from rouge_score import rouge_scorer

from synthformer import ModelConfig, build_model
from synthformer.data import ByteTokenizer
from synthformer.errors import ConfigError
from synthformer.training.evaluation import decode_sample, evaluate
from synthformer.training.task_data import TaskData
from synthformer.tasks import TASKS, ClassifyTask, LMTask, MLMTask, Seq2SeqTask, Task, build_task, text_metrics
from synthformer.tasks.classify import classifier_input
from synthformer.tasks.seq2seq import cut_at_eos, decode_limit
from synthformer.training.loop import TrainConfig

TOK = ByteTokenizer()
L = 12


def _model(kind, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", kind=kind, vocab_size=TOK.vocab_size, max_seq_len=16, embed_dim=16,
                             num_heads=2, ffn_dim=32, dropout=0.0, **kw)
    return build_model(cfg).eval()


def _tokens(b, n, seed):
    return torch.randint(5, TOK.vocab_size, (b, n), generator=torch.Generator().manual_seed(seed))


def _lm_batches(n=3):
    return [{"tokens": _tokens(2, L + 1, i)} for i in range(n)]


def _cls_batches(n=3):
    return [{"tokens": _tokens(4, L, i), "padding_mask": torch.zeros(4, L, dtype=torch.bool),
             "labels": torch.tensor([0, 1, 2, 1])} for i in range(n)]


def _s2s_batches(n=2):
    out = []
    for i in range(n):
        tgt = torch.cat([torch.full((2, 1), TOK.bos_id), _tokens(2, 6, 10 + i), torch.full((2, 1), TOK.eos_id)], 1)
        out.append({"src": _tokens(2, 8, i), "src_padding_mask": torch.zeros(2, 8, dtype=torch.bool),
                    "tgt": tgt, "tgt_padding_mask": torch.zeros_like(tgt, dtype=torch.bool)})
    return out


# ----------------------------------------------------------------------------- the one evaluation loop
def test_no_task_writes_its_own_evaluation_loop():
    for name, cls in TASKS.items():
        assert "evaluate" not in vars(cls), f"{name} overrides Task.evaluate; give it eval_batch/eval_metrics hooks"


@pytest.mark.parametrize("task,kind,batches,keys", [
    (LMTask(), "lm", _lm_batches, {"loss", "ppl", "eval_tokens", "loss_se", "ppl_se"}),
    (MLMTask(), "mlm", _lm_batches, {"loss", "ppl", "masked_tokens", "masked_accuracy", "loss_se", "ppl_se"}),
    (ClassifyTask(), "classifier", _cls_batches, {"loss", "accuracy", "chance_accuracy", "examples", "loss_se",
                                                  "accuracy_se"}),
    (Seq2SeqTask(), "seq2seq", _s2s_batches, {"loss", "ppl", "eval_tokens", "loss_se", "ppl_se"}),
])
def test_evaluate_stops_at_max_batches_and_is_repeatable(task, kind, batches, keys):
    model = _model(kind, **({"num_classes": 3} if kind == "classifier" else {}))
    seen = []

    def counted():
        for b in batches():
            seen.append(b)
            yield b

    out = task.evaluate(model, counted(), TOK, max_batches=1, decode_examples=0)
    assert set(out) == keys | {"items"} and len(seen) == 1  # "items": the per-item record (paired gaps)
    assert out["items"]["n"] == len(out["items"]["count"]) == len(out["items"]["loss_sum"])
    full = task.evaluate(model, batches(), TOK, decode_examples=0)
    assert full == task.evaluate(model, batches(), TOK, decode_examples=0)  # fixed masking generator
    with pytest.raises(ValueError, match="saw no batches"):
        task.evaluate(model, iter([]), TOK)


def test_lm_evaluate_is_the_mean_loss_per_token():
    model, batches = _model("lm"), _lm_batches()
    out = LMTask().evaluate(model, batches, TOK)
    with torch.no_grad():
        losses = [F.cross_entropy(model(b["tokens"][:, :-1]).flatten(0, 1), b["tokens"][:, 1:].flatten(),
                                  reduction="sum") for b in batches]
    assert out["eval_tokens"] == 3 * 2 * L
    assert out["loss"] == pytest.approx(sum(x.item() for x in losses) / out["eval_tokens"], rel=1e-5)


def test_classify_evaluate_counts_correct_labels():
    model, batches = _model("classifier", num_classes=3), _cls_batches()
    out = ClassifyTask().evaluate(model, batches, TOK)
    with torch.no_grad():
        correct = sum(int((model(b["tokens"]).argmax(-1) == b["labels"]).sum()) for b in batches)
    assert out["examples"] == 12 and out["accuracy"] == pytest.approx(100.0 * correct / 12)
    assert out["chance_accuracy"] == pytest.approx(100.0 * 6 / 12)  # label 1 is half of [0, 1, 2, 1]


def test_mlm_evaluate_scores_the_masked_tokens_predicted_exactly_under_the_fixed_masks():
    model, batches, task = _model("mlm"), _lm_batches(), MLMTask()
    out = task.evaluate(model, batches, TOK)
    g, correct, total = torch.Generator().manual_seed(1234), 0, 0  # the evaluation's fixed masking generator
    with torch.no_grad():
        for b in batches:
            inputs, targets = task.mask(b["tokens"][:, :-1], model.config.vocab_size, g)
            chosen = targets != -100
            correct += int((model(inputs).argmax(-1)[chosen] == targets[chosen]).sum())
            total += int(chosen.sum())
    assert out["masked_tokens"] == total > 0 and out["masked_accuracy"] == pytest.approx(100.0 * correct / total)


def test_seq2seq_evaluate_decodes_the_decode_batches_only():
    model = _model("seq2seq")
    none = Seq2SeqTask().evaluate(model, _s2s_batches(), TOK)
    some = Seq2SeqTask().evaluate(model, _s2s_batches(), TOK, decode_batches=_s2s_batches(1), decode_of=9,
                                  max_new_tokens=4)
    assert "bleu" not in none and some["decoded"] == 2 and some["decoded_of"] == 9 and len(some["examples"]) == 2
    assert some["loss"] == pytest.approx(none["loss"])
    assert {"bleu_se", "chrf_se", "rougeL_se"} <= set(some)


# ----------------------------------------------------------------------------- MLM: model_fields is pure
def test_mlm_model_fields_does_not_mutate_the_task():
    task = MLMTask()
    before = dict(vars(task))
    splits = SimpleNamespace(train=[], valid=[], test=[], meta={})
    fields = task.model_fields(TOK, splits)
    assert fields["vocab_size"] == TOK.vocab_size and vars(task) == before
    other = SimpleNamespace(vocab_size=50, pad_id=0, bos_id=1, eos_id=2, mask_id=7, specials=["x"] * 8)
    with pytest.raises(ConfigError, match="mask_id=7"):
        task.model_fields(other, splits)
    assert vars(task) == before


# ----------------------------------------------------------------------------- CLS pooling reads a CLS token
@pytest.mark.filterwarnings("ignore:.*truncated")
def test_cls_pooling_encodes_a_leading_cls_token():
    examples = [("hello world", 1), ("x" * 40, 0)]
    cls = build_task("classify", pooling="cls").encode(examples, TOK, seq_len=L)
    mean = build_task("classify").encode(examples, TOK, seq_len=L)
    assert all(ids[0] == TOK.bos_id and len(ids) <= L for ids, _ in cls)
    assert cls[0][0] == [TOK.bos_id] + mean[0][0]  # the text itself is unchanged
    assert mean[0][0][0] != TOK.bos_id


def test_cls_pooling_batches_hold_the_cls_token_at_the_pooled_position():
    task = ClassifyTask(pooling="cls")
    encoded = task.encode([("ab", 0), ("hello there", 1), ("z", 1), ("abc def", 0)], TOK, seq_len=L)
    batches = list(task.batches(encoded, TOK, L, batch_size=2, shuffle=False))
    assert batches and all((b["tokens"][:, 0] == TOK.bos_id).all() for b in batches)  # Classifier pools h[:, 0]
    assert all((~b["padding_mask"][:, 0]).all() for b in batches)


def test_pooling_mismatch_between_task_and_model_is_refused():
    batch = _cls_batches(1)[0]
    with pytest.raises(ConfigError, match="pooling='cls'"):
        ClassifyTask().loss(_model("classifier", pooling="cls", num_classes=3), batch)
    with pytest.raises(ConfigError, match="pooling"):
        build_task("classify", pooling="max")
    loss, n = ClassifyTask(pooling="cls").loss(_model("classifier", pooling="cls", num_classes=3), batch)
    assert n == 4 and torch.isfinite(loss)


def test_classifier_input_matches_the_task_encoding():
    [(ids, _)] = ClassifyTask(pooling="cls").encode([("hello", 0)], TOK, seq_len=L)
    assert classifier_input("hello", TOK, L, "cls") == ids
    assert classifier_input("hello", TOK, L, "mean") == ids[1:]
    assert classifier_input("", TOK, L, "mean") == [TOK.unk_id]


def test_task_base_hooks_are_the_contract():
    assert {"eval_batch", "eval_metrics", "evaluate"} <= set(vars(Task))


# ----------------------------------------------------------------------------- sentence pairs
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_classify_encodes_sentence_pairs_cls_a_sep_b(pooling):
    task = ClassifyTask(pooling=pooling)
    [(ids, label)] = task.encode([(("ab", "cde"), 1)], TOK, seq_len=L)
    lead = [TOK.bos_id] if pooling == "cls" else []
    assert ids == lead + TOK.encode("ab") + [TOK.sep_id] + TOK.encode("cde") and label == 1
    assert TOK.sep_id == 5 and ids.count(TOK.sep_id) == 1
    assert classifier_input(("ab", "cde"), TOK, L, pooling) == ids  # generate reads pairs as training did


@pytest.mark.filterwarnings("ignore:.*truncated")
def test_sentence_pairs_cut_the_longer_side_first():
    task = ClassifyTask(pooling="cls")  # room for the sentences: L - 2 = 10 tokens
    [(ids, _)] = task.encode([(("a" * 3, "b" * 30), 0)], TOK, seq_len=L)
    assert len(ids) == L and ids[:5] == [TOK.bos_id] + TOK.encode("aaa") + [TOK.sep_id]  # the short side whole
    [(ids, _)] = task.encode([(("a" * 30, "b" * 30), 0)], TOK, seq_len=L)
    assert ids == [TOK.bos_id] + TOK.encode("a" * 5) + [TOK.sep_id] + TOK.encode("b" * 5)  # both halved
    with pytest.raises(ValueError, match="1 of 1 sentence pairs longer than max_len=12"):
        task.encode([(("a" * 30, "b"), 0)], TOK, seq_len=L, strict=True)


# ----------------------------------------------------------------------------- standard errors
def _literal_bootstrap_se(statistic, n, n_boot=200, seed=0):
    """The SD of statistic(item indices) over the index draws bootstrap_se makes, one replicate at a time."""
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, size=n)
        reps.append(statistic([int(i) for i in idx]))
    return statistics.stdev(reps)


def test_lm_ses_resample_sequences():
    model, batches = _model("lm"), _lm_batches(4)
    out = LMTask().evaluate(model, batches, TOK)
    sums, counts = [], []
    with torch.no_grad():
        for b in batches:
            for row in b["tokens"]:  # one sequence at a time
                sums.append(F.cross_entropy(model(row[None, :-1])[0], row[1:], reduction="sum").item())
                counts.append(L)
    assert out["loss"] == pytest.approx(sum(sums) / sum(counts), rel=1e-5)
    loss = lambda idx: sum(sums[i] for i in idx) / sum(counts[i] for i in idx)  # noqa: E731
    assert out["loss_se"] == pytest.approx(_literal_bootstrap_se(loss, len(sums)), rel=1e-4)
    assert out["ppl_se"] == pytest.approx(_literal_bootstrap_se(lambda idx: math.exp(loss(idx)), len(sums)), rel=1e-4)
    assert out["ppl_se"] > 0 and all(type(out[k]) is float for k in ("loss_se", "ppl_se"))
    json.dumps(out)  # JSON-plain


def test_classify_accuracy_se_resamples_examples():
    model, batches = _model("classifier", num_classes=3), _cls_batches(5)
    out = ClassifyTask().evaluate(model, batches, TOK)
    with torch.no_grad():
        right = [int(r) for b in batches for r in (model(b["tokens"]).argmax(-1) == b["labels"])]
    acc = lambda idx: 100.0 * sum(right[i] for i in idx) / len(idx)  # noqa: E731
    assert out["accuracy_se"] == pytest.approx(_literal_bootstrap_se(acc, len(right)), rel=1e-9)
    assert type(out["accuracy_se"]) is float


def test_text_metrics_ses_match_rescoring_the_strings():
    hyps = ["the cats sat on a mat", "a dog barks", "hello there", "we walked home", "it rains", "good night all"]
    refs = ["the cat sat on the mat", "the dog barked", "hello", "they walk home now", "it is raining", "night"]
    out = text_metrics(hyps, refs, n_boot=40)
    assert out["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert out["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for key in ("rouge1", "rouge2", "rougeL"):
        assert out[key] == pytest.approx(100 * statistics.mean(scorer.score(r, h)[key].fmeasure
                                                               for h, r in zip(hyps, refs)))
    assert out["rouge2"] < out["rouge1"] and out["rouge2_se"] > 0
    pick = lambda idx: ([hyps[i] for i in idx], [[refs[i] for i in idx]])  # noqa: E731
    assert out["bleu_se"] == pytest.approx(
        _literal_bootstrap_se(lambda idx: sacrebleu.corpus_bleu(*pick(idx)).score, len(hyps), n_boot=40), rel=1e-9)
    assert out["chrf_se"] == pytest.approx(
        _literal_bootstrap_se(lambda idx: sacrebleu.corpus_chrf(*pick(idx)).score, len(hyps), n_boot=40), rel=1e-9)


def test_rouge_is_stemmed():
    assert text_metrics(["cats running"], ["cat runs"], n_boot=0)["rougeL"] == pytest.approx(100.0)


# ----------------------------------------------------------------------------- what seq2seq decodes
def test_decode_sample_is_seeded_and_ignores_batching():
    assert decode_sample(10, 0) == [] and decode_sample(10, 10) == list(range(10)) == decode_sample(10, 99)
    sample = decode_sample(1000, 50)
    assert sample == decode_sample(1000, 50) and sample == sorted(set(sample)) and len(sample) == 50
    assert sample != list(range(50)) and sample != decode_sample(1000, 50, seed=1)


def test_decode_length_comes_from_the_source_not_the_reference():
    torch.manual_seed(0)
    model = build_model(ModelConfig.preset("tiny", kind="seq2seq", vocab_size=TOK.vocab_size, max_seq_len=64,
                                           embed_dim=16, num_heads=2, ffn_dim=32, dropout=0.0)).eval()
    batch = _s2s_batches(1)[0]
    batch["src_padding_mask"][1, 3:] = True  # row 1: a 3-token source
    long_ref = dict(batch, tgt=torch.cat([batch["tgt"]] * 3, 1),
                    tgt_padding_mask=torch.cat([batch["tgt_padding_mask"]] * 3, 1))
    hyps, _ = Seq2SeqTask().decode_batch(model, batch, TOK)
    assert hyps == Seq2SeqTask().decode_batch(model, long_ref, TOK)[0]  # the reference's length plays no part
    assert decode_limit(8, 64) == 22 and decode_limit(3, 64) == 15 and decode_limit(100, 64) == 63
    ids = model.generate(batch["src"], src_padding_mask=batch["src_padding_mask"], max_new_tokens=22)
    assert hyps == [TOK.decode(cut_at_eos(row.tolist()[:n], TOK.eos_id)) for row, n in zip(ids, (22, 15))]


@pytest.mark.filterwarnings("ignore:.*truncated")
def test_evaluation_decodes_a_seeded_sample_of_the_whole_split():
    pairs = [(f"source {i} " + "x" * (i % 7), f"ref {i}") for i in range(16)]
    task = Seq2SeqTask()
    encoded = {"valid": task.encode(pairs, TOK, 16)}
    data = TaskData(task, TOK, SimpleNamespace(meta={}), encoded, 16)
    cfg = TrainConfig(task="seq2seq", batch_size=4, eval_batches=1, decode_examples=5)
    seen = []
    real = task.decode_batch

    def spy(model, batch, tokenizer, **kw):
        hyps, refs = real(model, batch, tokenizer, **kw)
        seen.extend(refs)
        return hyps, refs

    task.decode_batch = spy
    out = evaluate(task, _model("seq2seq"), data, cfg)
    assert out["decoded"] == 5 and out["decoded_of"] == 16  # not limited by eval_batches=1
    assert sorted(seen) == sorted(TOK.decode(encoded["valid"][i][1][1:-1]) for i in decode_sample(16, 5))
    whole = evaluate(task, _model("seq2seq"), data, dataclasses.replace(cfg, decode_examples=1000))
    assert whole["decoded"] == whole["decoded_of"] == 16

"""Floors: each counting baseline against a slow literal reference, the tokens the model's loss counts,
and floor_row on a real corpus (chitchat) and on every task."""
import math
from collections import Counter, defaultdict
from types import SimpleNamespace

import numpy as np
import pytest
import sacrebleu
import torch
from rouge_score import rouge_scorer

from synthformer.data import ByteTokenizer, LMBatches
from synthformer.evidence.floors import (TARGET_FLOOR, floor_row, kn_bigram_logprobs, kn_bigram_pair_logprobs, lm_floor,
                                lm_pairs, majority_accuracy, mlm_floor, seq2seq_target_floor, unigram_logprobs)
from synthformer.training.task_data import TaskData
from synthformer.tasks import build_task, text_metrics

TOK = ByteTokenizer()


def literal_kn(train, pairs, V, d=0.75, train_pairs=None):
    """Interpolated Kneser-Ney bigram, one probability at a time with dicts (the textbook formula), fitted
    on the adjacent pairs of the stream `train` (or on the list `train_pairs`)."""
    bigrams = Counter(train_pairs if train_pairs is not None else zip(train[:-1], train[1:]))
    c_v, after, before = Counter(), defaultdict(set), defaultdict(set)
    for (v, w), c in bigrams.items():
        c_v[v] += c
        after[v].add(w)
        before[w].add(v)
    types = len(bigrams)
    seen_words = sum(1 for w in range(V) if before[w])

    def p_cont(w):
        return max(len(before[w]) - d, 0) / types + d * seen_words / types / V

    out = []
    for v, w in pairs:
        if c_v[v] == 0:
            out.append(math.log(p_cont(w)))
        else:
            out.append(math.log(max(bigrams[(v, w)] - d, 0) / c_v[v] + d * len(after[v]) / c_v[v] * p_cont(w)))
    return out


def test_kn_bigram_matches_the_literal_formula_and_sums_to_one():
    rng = np.random.default_rng(0)
    V = 12
    train = list(rng.integers(0, 9, size=300))  # ids 9..11 never seen; some contexts never seen
    pairs = [(int(v), int(w)) for v, w in rng.integers(0, V, size=(200, 2))]
    ours = kn_bigram_logprobs(np.array(train), [v for v, _ in pairs], [w for _, w in pairs], V)
    assert ours == pytest.approx(literal_kn(train, pairs, V), rel=1e-12)
    for v in range(V):  # a distribution over the whole vocabulary for every context
        total = np.exp(kn_bigram_logprobs(np.array(train), [v] * V, list(range(V)), V)).sum()
        assert total == pytest.approx(1.0, rel=1e-12)


def test_unigram_is_add_one():
    train, V = [1, 1, 2, 5], 6
    assert np.exp(unigram_logprobs(train, [1, 2, 0], V)) == pytest.approx([3 / 10, 2 / 10, 1 / 10])


def test_lm_pairs_are_the_tokens_the_lm_evaluation_predicts():
    ids = torch.arange(100) % 37
    for seq_len in (7, 10, 33):
        batches = LMBatches(ids, seq_len, batch_size=3, shuffle=False, drop_last=False)  # as evaluation builds it
        tokens = torch.cat([b["tokens"] for b in batches])  # (blocks, L+1)
        contexts, targets = lm_pairs(ids, seq_len)
        assert targets.tolist() == tokens[:, 1:].flatten().tolist()
        assert contexts.tolist() == tokens[:, :-1].flatten().tolist()


def test_lm_and_mlm_floors_on_literal_counts():
    train, valid, V = [5, 6, 2, 5, 7, 2, 6, 6, 2], [5, 6, 2, 9, 6, 2], 10
    out = lm_floor(torch.tensor(train), torch.tensor(valid), 2, V)
    pairs = [(5, 6), (6, 2), (2, 9), (9, 6)]  # (6 - 1) // 2 = 2 blocks of 2 predictions
    assert out["eval_tokens"] == 4
    assert out["ppl"] == pytest.approx(math.exp(-sum(literal_kn(train, pairs, V)) / 4))
    uni = Counter(train)
    assert out["unigram_ppl"] == pytest.approx(math.exp(-sum(math.log((uni[w] + 1) / (9 + V)) for _, w in pairs) / 4))
    # MLM: ordinary ids >= 6 only (here 6, 7, 9), add-one over the 4 ordinary ids 6..9, on valid[:4]
    mlm = mlm_floor(train, valid, 2, V, num_specials=6)
    ordinary = Counter(t for t in train if t >= 6)  # 6: 3, 7: 1 (4 tokens)
    targets = [t for t in valid[:4] if t >= 6]  # [6, 9]
    assert mlm["masked_tokens"] == 2
    assert mlm["loss"] == pytest.approx(-sum(math.log((ordinary[t] + 1) / (4 + 4)) for t in targets) / 2)


def test_majority_class():
    assert majority_accuracy([0, 1, 1, 2, 1], [1, 0, 1, 1]) == pytest.approx(75.0)
    assert majority_accuracy([3, 2, 3, 2], [2, 2, 3]) == pytest.approx(200 / 3)  # tie: the smallest label


# ----------------------------------------------------------------------------- floor_row
def _data(task_name, train, valid, seq_len=8, source="user"):
    task = build_task(task_name)
    splits = SimpleNamespace(train=train, valid=valid, test=[], meta={"source": source})
    encoded = {"train": task.encode(train, TOK, seq_len), "valid": task.encode(valid, TOK, seq_len)}
    return TaskData(task, TOK, splits, encoded, seq_len)


def test_floor_row_of_every_task():
    lm = floor_row("lm", _data("lm", ["abcab", "bca"], ["abcabc"], seq_len=3))
    assert lm["variant"] == "floor" and lm["floor"] and lm["name"] == "KN bigram" and lm["split"] == "valid"
    assert lm["metrics"]["ppl"] < lm["metrics"]["unigram_ppl"]
    mlm = floor_row("mlm", _data("mlm", ["abcab", "bca"], ["abcabc"], seq_len=3))
    assert mlm["name"] == "unigram" and mlm["metrics"]["loss"] > 0
    cls = floor_row("classify", _data("classify", [("a", 1), ("b", 1), ("c", 0)], [("d", 1), ("e", 0)]))
    assert cls["metrics"]["accuracy"] == pytest.approx(50.0)
    pairs = [("one two three four five", "one two"), ("six seven eight", "six seven eight nine")]
    valid = [("a b c d e f", "a b c"), ("x y", "z")]
    summ = floor_row("seq2seq", _data("seq2seq", pairs, valid, seq_len=32), kind="seq2seq-summarization")
    assert summ["names"]["rougeL"] == "lead-3"  # mean train reference length: (2 + 4) / 2 words
    text = {k: v for k, v in text_metrics(["a b c", "x y"], ["a b c", "z"]).items() if not k.endswith("_se")}
    assert {k: summ["metrics"][k] for k in text} == pytest.approx(text)
    mt = floor_row("seq2seq", _data("seq2seq", pairs, valid, seq_len=32))  # plain seq2seq data: copy
    assert mt["names"]["bleu"] == "copy source" and mt["metrics"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(["a b c d e f", "x y"], [["a b c", "z"]]).score)
    dialogue = floor_row("seq2seq", _data("seq2seq", pairs + [("q", "one two")], valid, seq_len=32, source="chitchat"))
    assert dialogue["name"].startswith("most frequent response / copy source (text)")
    for row in (summ, mt, dialogue):  # every seq2seq row also holds the target-side bigram, named as such
        assert row["names"]["ppl"] == TARGET_FLOOR and TARGET_FLOOR in row["name"] and row["metrics"]["ppl"] > 1
    # dialogue: each metric the better of the most frequent response ("one two") and copying the context
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    frequent = 50.0 * sum(scorer.score(r, "one two")["rougeL"].fmeasure for r in ("a b c", "z"))
    copy = 50.0 * sum(scorer.score(r, h)["rougeL"].fmeasure for h, r in (("a b c d e f", "a b c"), ("x y", "z")))
    assert copy > frequent and dialogue["metrics"]["rougeL"] == pytest.approx(copy)
    assert dialogue["names"]["rougeL"] == "copy source"
    bleu = [sacrebleu.corpus_bleu(h, [["a b c", "z"]]).score for h in (["a b c d e f", "x y"], ["one two"] * 2)]
    assert dialogue["metrics"]["bleu"] == pytest.approx(max(bleu))
    assert floor_row("lm", _data("lm", ["ab"], ["ab"]), split="test") is None  # no such split


def test_floor_row_on_a_real_corpus_matches_the_literal_bigram():
    from synthformer.data import DataError, load_source

    try:
        splits = load_source("chitchat", "lm", max_examples=300)
    except DataError as e:  # the PyPI package chitchat-dataset is a test dependency; say so if absent
        pytest.skip(f"chitchat not available: {e}")
    data = _data("lm", splits.train, splits.valid, seq_len=64, source="chitchat")
    row = floor_row("lm", data)
    contexts, targets = lm_pairs(data.encoded["valid"], 64)
    literal = literal_kn(data.encoded["train"].tolist(), list(zip(contexts.tolist(), targets.tolist())), TOK.vocab_size)
    assert row["metrics"]["ppl"] == pytest.approx(math.exp(-sum(literal) / len(literal)), rel=1e-9)
    assert row["metrics"]["ppl"] < row["metrics"]["unigram_ppl"]  # counting pairs beats counting tokens


# ----------------------------------------------------------------------------- seq2seq target side
S2S_TRAIN = [("a", "ab"), ("b", "bab"), ("c", "abba")]
S2S_VALID = [("d", "ba"), ("e", "abc")]


def test_seq2seq_target_floor_matches_the_literal_bigram_of_each_target():
    data = _data("seq2seq", S2S_TRAIN, S2S_VALID, seq_len=8)
    bos, eos = TOK.bos_id, TOK.eos_id

    def pairs(items):  # (context, next token) inside each <bos> ids <eos>: <eos> predicted, <bos> not
        out = []
        for _, tgt in items:
            seq = [bos] + list(tgt.encode()) + [eos]
            out += list(zip(seq[:-1], seq[1:]))
        return out

    want = pairs(S2S_VALID)
    assert len(want) == 3 + 4  # "ba" + <eos>, "abc" + <eos>
    literal = literal_kn(None, want, TOK.vocab_size, train_pairs=pairs(S2S_TRAIN))
    out = seq2seq_target_floor(data.encoded["train"], data.encoded["valid"], TOK.vocab_size)
    assert out["eval_tokens"] == len(want)
    assert out["ppl"] == pytest.approx(math.exp(-sum(literal) / len(literal)), rel=1e-12)
    assert out["loss"] == pytest.approx(-sum(literal) / len(literal), rel=1e-12)
    row = floor_row("seq2seq", data, kind="seq2seq-mt")
    assert row["metrics"]["ppl"] == out["ppl"] and row["names"]["ppl"] == TARGET_FLOOR
    # fitted per target: a bigram across two targets (<eos> then the next <bos>) is no training pair
    stream = [t for _, tgt in data.encoded["train"] for t in tgt]
    joined = literal_kn(stream, want, TOK.vocab_size)
    assert out["ppl"] != pytest.approx(math.exp(-sum(joined) / len(joined)), rel=1e-6)


class _BigramDecoder(torch.nn.Module):
    """A 'seq2seq model' whose next-token logits are a fixed table's row of the previous target token."""

    def __init__(self, table, pad_id):
        super().__init__()
        self.table = torch.nn.Parameter(torch.as_tensor(table, dtype=torch.float32), requires_grad=False)  # (V, V)
        self.config = SimpleNamespace(pad_id=pad_id)

    def forward(self, src, tgt_in, src_padding_mask=None, tgt_padding_mask=None):
        return self.table[tgt_in]  # (B, Lt, V)


def test_seq2seq_target_floor_counts_the_tokens_the_teacher_forced_loss_counts():
    """The floor's bigram, run as a model through the seq2seq task's own evaluation (padded, bucketed
    batches), gives the floor's perplexity: the same targets, <eos> in, <bos> and padding out."""
    train = [("x", "abcab"), ("y", "bca"), ("z", "cabbage")] * 3
    valid = [("p", "cab"), ("q", "abacab"), ("r", "bb"), ("s", "a cab")]
    data = _data("seq2seq", train, valid, seq_len=8)
    V = TOK.vocab_size
    floor = seq2seq_target_floor(data.encoded["train"], data.encoded["valid"], V)
    train_v = [t for _, tgt in data.encoded["train"] for t in tgt[:-1]]  # (context, next) in each target
    train_w = [t for _, tgt in data.encoded["train"] for t in tgt[1:]]
    table = np.stack([kn_bigram_pair_logprobs(train_v, train_w, [v] * V, np.arange(V), V) for v in range(V)])
    model = _BigramDecoder(table, TOK.pad_id)
    batches = data.task.batches(data.encoded["valid"], TOK, 8, batch_size=3, shuffle=False)
    metrics = data.task.evaluate(model, batches, TOK)
    assert metrics["eval_tokens"] == floor["eval_tokens"]
    assert metrics["ppl"] == pytest.approx(floor["ppl"], rel=1e-5)  # float32 logits

"""Floors: what counting, without learning, scores on the same data and tokens as the models.

A comparison of attention variants says something only when the models beat these (DESIGN.md
section 7). Each floor is a small pure function; `floor_row` picks the one of a task kind and
returns the row that compare / reproduce put beside the variants:

| kind | floor | metrics |
|---|---|---|
| lm | interpolated Kneser-Ney bigram (d = 0.75), and an add-one unigram | ppl, loss, unigram_ppl |
| mlm | add-one unigram of the train tokens that can be masked | loss (nats), ppl |
| classify (all kinds) | the better of the train and the evaluated split's majority class | accuracy (0-100) |
| seq2seq-summarization | lead-k: the first k source words (k: mean train reference words) | rougeL, bleu, chrf |
| seq2seq-mt, plain seq2seq | copy the source | bleu, chrf, rougeL |
| seq2seq-dialogue | per metric the better of the most frequent train response and copying the context | bleu, rougeL, chrf |
| every seq2seq kind, beside its text floor | KN bigram of the target sides (the decoder's tokens) | ppl, loss |

A seq2seq floor row holds both floors; its "names" says which floor each metric comes from
(``{"bleu": "copy source", ..., "ppl": "target-side KN bigram"}``). The target-side bigram is what
the teacher-forced perplexity (on the split the rows report) must beat (`seq2seq_target_floor`): the MT claims judge
that perplexity as a labelled proxy when BLEU is not learned (`synthformer.evidence.judge`).

Counts come from the train split's token ids (the models' tokens); scores from the evaluated
split. LM and MLM score every block of the split (the model's evaluation may stop at
``eval_batches``); the text floors score every example of the split with the task's own
`text_metrics` (the models decode a seeded sample of it).
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

KN_DISCOUNT = 0.75  # absolute discount of the Kneser-Ney bigram (Chen & Goodman 1998's usual D)


# ----------------------------------------------------------------------------- LM / MLM
def lm_pairs(ids, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(contexts, targets) the LM loss counts on a split's token stream `ids` (N,): the eval batcher
    cuts blocks of seq_len + 1 tokens starting every seq_len tokens and predicts tokens[1:] of each
    from the token before, so the targets are ids[1 : B * seq_len + 1] with B = (N - 1) // seq_len
    blocks, every next token (<eos> included) counted once."""
    ids = np.asarray(ids, dtype=np.int64)
    end = (len(ids) - 1) // seq_len * seq_len
    return ids[:end], ids[1:end + 1]


def unigram_logprobs(train, targets, vocab_size: int) -> np.ndarray:
    """log P(target) under the add-one (Laplace) unigram of `train`: (c(w) + 1) / (N + V)."""
    counts = np.bincount(np.asarray(train, dtype=np.int64), minlength=vocab_size)
    return np.log((counts[np.asarray(targets, dtype=np.int64)] + 1.0) / (counts.sum() + vocab_size))


def kn_bigram_logprobs(train, contexts, targets, vocab_size: int, d: float = KN_DISCOUNT) -> np.ndarray:
    """log P(w | v) of each (context v, target w) under the interpolated Kneser-Ney bigram of the
    token stream `train`: `kn_bigram_pair_logprobs` fitted on its adjacent pairs."""
    train = np.asarray(train, dtype=np.int64)
    return kn_bigram_pair_logprobs(train[:-1], train[1:], contexts, targets, vocab_size, d)


def kn_bigram_pair_logprobs(train_contexts, train_targets, contexts, targets, vocab_size: int,
                            d: float = KN_DISCOUNT) -> np.ndarray:
    """log P(w | v) of each (context v, target w) under the interpolated Kneser-Ney bigram fitted on
    the bigrams (train_contexts[i], train_targets[i]) (Chen & Goodman 1998, eq. 21 with one discount d):

        P(w | v) = max(c(v w) - d, 0) / c(v) + d * N1+(v .) / c(v) * P_cont(w)      (c(v) > 0)
        P(w | v) = P_cont(w)                                                      (v never a context)
        P_cont(w) = max(N1+(. w) - d, 0) / N1+(. .) + d * |{w: N1+(. w) > 0}| / N1+(. .) / V

    c(v w) counts the training bigrams, c(v) = sum_w c(v w), N1+(v .) the distinct words after v,
    N1+(. w) the distinct words before w (the continuation count), N1+(. .) the distinct bigrams.
    The continuation unigram is itself discounted and interpolated with the uniform 1 / V over the
    vocabulary, so a word never seen in train keeps a probability; every P(. | v) sums to 1.
    """
    V = int(vocab_size)
    train_v = np.asarray(train_contexts, dtype=np.int64)
    train_w = np.asarray(train_targets, dtype=np.int64)
    keys, pair_counts = np.unique(train_v * V + train_w, return_counts=True)  # distinct bigrams, sorted
    left, right = keys // V, keys % V
    follow = np.bincount(left, minlength=V)  # N1+(v .)
    context = np.bincount(left, weights=pair_counts, minlength=V)  # c(v)
    precede = np.bincount(right, minlength=V).astype(np.float64)  # N1+(. w)
    types = len(keys)  # N1+(. .)
    p_cont = (np.maximum(precede - d, 0.0) + d * np.count_nonzero(precede) / V) / types  # (V,)

    v, w = np.asarray(contexts, dtype=np.int64), np.asarray(targets, dtype=np.int64)
    query = v * V + w
    pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    c_vw = np.where(keys[pos] == query, pair_counts[pos], 0).astype(np.float64)
    c_v = context[v]
    seen = c_v > 0
    safe = np.where(seen, c_v, 1.0)
    p = np.where(seen, (np.maximum(c_vw - d, 0.0) + d * follow[v] * p_cont[w]) / safe, p_cont[w])
    return np.log(p)


def lm_floor(train_ids, eval_ids, seq_len: int, vocab_size: int) -> dict:
    """{"ppl", "loss", "unigram_ppl", "eval_tokens"}: the KN bigram's perplexity (and mean loss in
    nats) and the add-one unigram's, on the tokens the LM loss counts (`lm_pairs`)."""
    contexts, targets = lm_pairs(eval_ids, seq_len)
    kn = -float(kn_bigram_logprobs(np.asarray(train_ids), contexts, targets, vocab_size).mean())
    uni = -float(unigram_logprobs(train_ids, targets, vocab_size).mean())
    return {"ppl": math.exp(kn), "loss": kn, "unigram_ppl": math.exp(uni), "eval_tokens": len(targets)}


def mlm_floor(train_ids, eval_ids, seq_len: int, vocab_size: int, num_specials: int) -> dict:
    """{"loss", "ppl", "masked_tokens"}: mean cross-entropy (nats) of the add-one unigram of the
    train split's ordinary tokens (ids >= num_specials, the only ones MLM masks) over the V -
    num_specials ordinary ids, on every maskable token of the eval blocks (the MLM reads
    ids[:B * seq_len]). Masking picks positions independently of the token, so this is the expected
    unigram loss on the masked targets, without the sampling noise of one masking."""
    train = np.asarray(train_ids, dtype=np.int64)
    ids = np.asarray(eval_ids, dtype=np.int64)
    block = ids[:(len(ids) - 1) // seq_len * seq_len]
    targets = block[block >= num_specials] - num_specials
    loss = -float(unigram_logprobs(train[train >= num_specials] - num_specials, targets,
                                   vocab_size - num_specials).mean())
    return {"loss": loss, "ppl": math.exp(loss), "masked_tokens": len(targets)}


def seq2seq_target_pairs(items) -> tuple[np.ndarray, np.ndarray]:
    """(contexts, targets) the seq2seq loss counts on encoded items ``(src, tgt)``, tgt = <bos> ids
    <eos>: the decoder reads tgt[:-1] and predicts tgt[1:] (`tasks.seq2seq.Seq2SeqTask.predictions`),
    so every target token and the final <eos> are predicted, <bos> never is, and each target's first
    context is <bos>. Padding exists only in batches, where the loss ignores it: none is counted here."""
    tgts = [np.asarray(tgt, dtype=np.int64) for _, tgt in items]
    if not tgts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate([t[:-1] for t in tgts]), np.concatenate([t[1:] for t in tgts])


def seq2seq_target_floor(train_items, eval_items, vocab_size: int) -> dict:
    """{"ppl", "loss", "eval_tokens"}: the perplexity (and mean loss in nats) of the interpolated
    Kneser-Ney bigram of the train split's target sides (fitted on their `seq2seq_target_pairs`, so
    no bigram spans two targets) on the tokens the teacher-forced seq2seq loss counts on the evaluated
    split: the model's validation "ppl" is comparable with it, the source aside (a decoder that ignores
    its source can reach it)."""
    contexts, targets = seq2seq_target_pairs(eval_items)
    train_contexts, train_targets = seq2seq_target_pairs(train_items)
    kn = -float(kn_bigram_pair_logprobs(train_contexts, train_targets, contexts, targets, vocab_size).mean())
    return {"ppl": math.exp(kn), "loss": kn, "eval_tokens": len(targets)}


# ----------------------------------------------------------------------------- classification
def majority_accuracy(train_labels, eval_labels) -> float:
    """The majority-class floor (0-100) on `eval_labels`: the better of always answering the train split's most
    frequent label (ties: the smallest label) and the evaluated split's own most frequent label. A model that
    learned only the label prior can reach either, so a variant must beat both (binary sentiment, our test
    split: the train majority scores 47.35, the test majority 52.65)."""
    counts = Counter(int(y) for y in train_labels)
    top = max(counts.values())
    majority = min(y for y, c in counts.items() if c == top)
    train_majority = sum(int(y) == majority for y in eval_labels)
    test_majority = max(Counter(int(y) for y in eval_labels).values())
    return 100.0 * max(train_majority, test_majority) / len(eval_labels)


# ----------------------------------------------------------------------------- text generation
def lead(sources: list[str], k: int) -> list[str]:
    """The first `k` whitespace-separated words of each source."""
    return [" ".join(s.split()[:k]) for s in sources]


def mean_words(texts: list[str]) -> int:
    """The mean length in words of `texts`, rounded (at least 1)."""
    return max(1, round(sum(len(t.split()) for t in texts) / max(1, len(texts))))


def most_frequent(texts: list[str]) -> str:
    """The most frequent text (ties: the first seen)."""
    return Counter(texts).most_common(1)[0][0]


def seq2seq_texts(items, tokenizer) -> tuple[list[str], list[str]]:
    """(sources, references) as text, the way the seq2seq evaluation decodes them from the encoded
    items (cut to seq_len, ids after <bos> up to <eos>)."""
    from ..tasks.seq2seq import cut_at_eos

    eos = tokenizer.eos_id
    sources = [tokenizer.decode(cut_at_eos(list(src), eos)) for src, _ in items]
    refs = [tokenizer.decode(cut_at_eos(list(tgt)[1:], eos)) for _, tgt in items]
    return sources, refs


TARGET_FLOOR = "target-side KN bigram"  # the seq2seq floor of the validation perplexity (`seq2seq_target_floor`)
TEXT_FLOORS = {  # seq2seq kind -> the floors that `text_floor` scores (each metric's is the best of them)
    "seq2seq-summarization": ("lead-k",),
    "seq2seq-mt": ("copy source",),
    "seq2seq": ("copy source",),
    # copying the context is the harder dialogue floor on ROUGE-L and BLEU (chitchat, test: ROUGE-L 9.9 and
    # BLEU 0.7, against the most frequent response's 2.3 and 0.0), the most frequent response on none measured
    "seq2seq-dialogue": ("most frequent response", "copy source"),
}


def text_floor(kind: str, train_items, eval_items, tokenizer) -> tuple[str, dict, dict]:
    """(name, metrics, {metric: the floor it comes from}) of the text floors of a seq2seq `kind` (`TEXT_FLOORS`)
    on the encoded items: each metric the best of them (every text metric is higher-is-better)."""
    from ..tasks.seq2seq import text_metrics

    sources, refs = seq2seq_texts(eval_items, tokenizer)
    _, train_refs = seq2seq_texts(train_items, tokenizer)
    metrics, names, used = {}, {}, []
    for name in TEXT_FLOORS[kind]:
        if name == "lead-k":
            k = mean_words(train_refs)
            hyps, name = lead(sources, k), f"lead-{k}"
        elif name == "copy source":
            hyps = sources
        else:
            hyps = [most_frequent(train_refs)] * len(sources)
        used.append(name)
        for key, value in text_metrics(hyps, refs, n_boot=0).items():
            if key not in metrics or (key != "decoded" and value > metrics[key]):
                metrics[key], names[key] = value, name
    return " / ".join(used), metrics, names


# ----------------------------------------------------------------------------- the row
def floor_row(task_name: str, data, split: str = "valid", kind: str | None = None) -> dict | None:
    """The floor row of a task's data (`synthformer.training.task_data.TaskData`) on `split`:
    ``{"variant": "floor", "floor": True, "name": ..., "split": ..., "metrics": {...}}``, or None
    where no floor applies (a split that is absent, or a kind without one).

    `kind` is a task kind of `synthformer.evidence.paper.numbers` (it picks the seq2seq text floor: lead-k
    for summarization, the better of the most frequent response and copying the context for dialogue,
    copy-source for MT and any other seq2seq
    data; every seq2seq row also holds the target-side bigram's "ppl" and "loss", and "names" maps
    each metric to the floor it comes from); None derives it from the task and the data's registry source name
    (`reference_results.task_kind(task_name, data.splits.meta["source"])`).
    """
    from .paper.numbers import task_kind

    if split not in data.encoded or "train" not in data.encoded:
        return None
    if kind is None:
        kind = task_kind(task_name, str(data.splits.meta.get("source", "")))
    train, evaluated, vocab = data.encoded["train"], data.encoded[split], data.tokenizer.vocab_size
    if task_name == "lm":
        name, metrics = "KN bigram", lm_floor(train, evaluated, data.seq_len, vocab)
    elif task_name == "mlm":
        name = "unigram"
        metrics = mlm_floor(train, evaluated, data.seq_len, vocab, data.task.num_specials)
    elif task_name == "classify":
        name = "majority class"
        metrics = {"accuracy": majority_accuracy([y for _, y in train], [y for _, y in evaluated]),
                   "examples": len(evaluated)}
    elif task_name == "seq2seq" and kind in TEXT_FLOORS:
        text_name, metrics, names = text_floor(kind, train, evaluated, data.tokenizer)
        metrics.update(seq2seq_target_floor(train, evaluated, vocab))
        names.update({k: TARGET_FLOOR for k in ("ppl", "loss")})
        return {"variant": "floor", "floor": True, "name": f"{text_name} (text); {TARGET_FLOOR} (ppl)",
                "names": names, "split": split, "metrics": metrics}
    else:
        return None
    return {"variant": "floor", "floor": True, "name": name, "split": split, "metrics": metrics}

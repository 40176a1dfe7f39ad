"""Sequence classification with an encoder: cross-entropy over labels; metric accuracy.

Inputs are single texts or **sentence pairs**: an example whose ``x`` is a tuple ``(a, b)`` is
encoded ``[CLS] a <sep> b`` (the CLS slot only with pooling "cls"; the longer sentence is cut first
to fit seq_len). A source that joins its pairs into one string names the joiner in
``meta["pair_separator"]`` (bible-paraphrase: " ||| "); `pair_splits` turns those back into tuples
before encoding (`synthformer.training.task_data.prepare_data` does it for every classify run). There are no
segment (token type) embeddings: the <sep> token and the positions tell the sides apart.
"""
from __future__ import annotations

import dataclasses
import hashlib


from ..data import DataError, SequenceBatches, encode_labelled
from ..errors import ConfigError
from ..utils.stats import bootstrap_se
from .base import IGNORE, Task, add_losses, loss_items, loss_ses

POOLINGS = ("mean", "cls")  # ModelConfig.pooling values


class ClassifyTask(Task):
    """Encoder + pooled classification head; labels from ``meta["labels"]``.

    ``pooling`` must be the model's ``ModelConfig.pooling``: with ``"cls"`` the head reads the first
    position, so every example is encoded with a leading <bos> that serves as the CLS token (BERT's
    [CLS]); with ``"mean"`` examples are encoded as they are. The loss refuses a model whose pooling
    differs from the task's, so a CLS head can never silently pool the first word.
    """

    name = "classify"
    model_kind = "classifier"
    data_task = "classify"
    main_metric = "accuracy"
    higher_is_better = True

    def __init__(self, pooling: str = "mean"):
        if pooling not in POOLINGS:
            raise ConfigError(f"classify: pooling={pooling!r} must be one of {', '.join(POOLINGS)}")
        self.pooling = pooling

    def model_fields(self, tokenizer, splits):
        labels = splits.meta.get("labels")
        if labels is None:  # e.g. a source that does not name its classes
            labels = sorted({y for s in (splits.train, splits.valid, splits.test) for _, y in s})
        return {**super().model_fields(tokenizer, splits), "num_classes": max(2, len(labels))}

    def encode(self, examples, tokenizer, seq_len, strict=False):
        # the CLS token counts towards seq_len: texts keep seq_len - 1 tokens under "cls" pooling
        return encode_labelled(examples, tokenizer, max_len=seq_len, strict=strict, add_bos=self.pooling == "cls")

    def batches(self, encoded, tokenizer, seq_len, batch_size, *, max_tokens=None, shuffle=True,
                seed=0, rank=0, world_size=1):
        return SequenceBatches(encoded, tokenizer.pad_id, batch_size=batch_size, max_tokens=max_tokens,
                               bucket=True, shuffle=shuffle, seed=seed, rank=rank, world_size=world_size)

    def logits(self, model, batch):
        """(B, C) class logits; refuses a model that pools differently from how the task encoded."""
        pooling = getattr(model, "module", model).config.pooling
        if pooling != self.pooling:
            raise ConfigError(f"the classifier has pooling={pooling!r} but the classify task encoded its examples "
                              f"for pooling={self.pooling!r}; build the task with pooling={pooling!r} "
                              f"(build_task('classify', pooling={pooling!r}))")
        return model(batch["tokens"], key_padding_mask=batch["padding_mask"])  # (B, C)

    def predictions(self, model, batch, generator=None):
        return self.logits(model, batch), batch["labels"], IGNORE  # (B, C), (B,): no label is ignored

    def num_tokens(self, batch):
        return int((~batch["padding_mask"]).sum())

    def eval_batch(self, model, batch, tokenizer, totals, generator, **options):
        import numpy as np  # train extra: imported when used, so the core install runs on torch alone
        logits, labels, ignore = self.predictions(model, batch)  # (B, C), (B,)
        add_losses(totals, logits, labels, ignore)
        right = (logits.argmax(-1) == labels).cpu().numpy()  # (B,)
        totals["correct"] = totals.get("correct", 0) + int(right.sum())
        totals.setdefault("item_correct", []).append(right.astype(np.float64))
        counts = totals.setdefault("label_counts", {})
        for label in labels.tolist():
            counts[label] = counts.get(label, 0) + 1
            totals.setdefault("item_labels", []).append(int(label))

    def eval_metrics(self, totals, **options):
        import numpy as np  # train extra: imported when used, so the core install runs on torch alone
        count = totals["count"]
        majority = max(totals.get("label_counts", {0: 0}).values())
        right = np.concatenate(totals["item_correct"])  # (N,) 1.0 where the argmax is the label
        return {"loss": totals["loss_sum"] / count, "accuracy": 100.0 * totals["correct"] / count,
                "chance_accuracy": 100.0 * majority / count,  # always answering the most frequent label
                "examples": count, "loss_se": loss_ses(totals)["loss_se"],
                "accuracy_se": bootstrap_se(100.0 * right, np.mean),
                # per item: "1" where the argmax is the label; "key" fingerprints the labels (the same items)
                "items": {**loss_items(totals), "correct": "".join("1" if r else "0" for r in right),
                          "key": hashlib.sha256(",".join(map(str, totals.get("item_labels", []))).encode()
                                                ).hexdigest()[:16]}}


def pair_splits(splits):
    """`splits` (DataSplits) with every ``x`` split into a sentence pair ``(a, b)`` when the source
    names a joiner in ``meta["pair_separator"]``; unchanged otherwise. An input holding the joiner
    other than exactly once is refused (DataError naming the split and example)."""
    sep = splits.meta.get("pair_separator")
    if not sep:
        return splits
    parts = {}
    for name in ("train", "valid", "test"):
        examples = getattr(splits, name)
        pairs = []
        for i, (x, y) in enumerate(examples):
            if isinstance(x, tuple):  # already a pair
                pairs.append((x, y))
                continue
            halves = x.split(sep) if isinstance(x, str) else []
            if len(halves) != 2:
                raise DataError(f"{splits.meta.get('source', 'data')}: {name} example {i} should be a sentence pair "
                                f"joined by {sep!r} (meta pair_separator) but is {str(x)[:80]!r}")
            pairs.append((tuple(halves), y))
        parts[name] = pairs
    return dataclasses.replace(splits, **parts)


def classifier_input(text, tokenizer, max_len: int, pooling: str) -> list[int]:
    """Token ids a classifier with `pooling` reads for one text or sentence pair ``(a, b)``, as the
    classify task encodes them (for ``synthformer generate`` on a classify run)."""
    if isinstance(text, tuple):
        return encode_labelled([(text, 0)], tokenizer, max_len=max_len, add_bos=pooling == "cls")[0][0]
    ids = tokenizer.encode(text) or [tokenizer.unk_id]
    ids = ([tokenizer.bos_id] + ids) if pooling == "cls" else ids
    return ids[:max_len]

"""Sequence classification with an encoder: cross-entropy over labels; metric accuracy."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..data import SequenceBatches, encode_labelled
from .base import Task, device_of, to_device


class ClassifyTask(Task):
    """Encoder + pooled classification head (ModelConfig.pooling); labels from ``meta["labels"]``."""

    name = "classify"
    model_kind = "classifier"
    data_task = "classify"
    main_metric = "accuracy"
    higher_is_better = True

    def model_fields(self, tokenizer, splits):
        labels = splits.meta.get("labels")
        if labels is None:  # e.g. a source that does not name its classes
            labels = sorted({y for s in (splits.train, splits.valid, splits.test) for _, y in s})
        return {**super().model_fields(tokenizer, splits), "num_classes": max(2, len(labels))}

    def encode(self, examples, tokenizer, seq_len, strict=False):
        return encode_labelled(examples, tokenizer, max_len=seq_len, strict=strict)

    def batches(self, encoded, tokenizer, seq_len, batch_size, *, max_tokens=None, shuffle=True,
                seed=0, rank=0, world_size=1):
        return SequenceBatches(encoded, tokenizer.pad_id, batch_size=batch_size, max_tokens=max_tokens,
                               bucket=True, shuffle=shuffle, seed=seed, rank=rank, world_size=world_size)

    def loss(self, model, batch, generator=None):
        logits = model(batch["tokens"], key_padding_mask=batch["padding_mask"])  # (B, C)
        return F.cross_entropy(logits.float(), batch["labels"]), int(batch["labels"].numel())

    def num_tokens(self, batch):
        return int((~batch["padding_mask"]).sum())

    @torch.no_grad()
    def evaluate(self, model, batches, tokenizer, *, max_batches=0, **options):
        total, correct, count = 0.0, 0, 0
        for i, batch in enumerate(batches):
            if max_batches and i >= max_batches:
                break
            batch = to_device(batch, device_of(model))
            logits = model(batch["tokens"], key_padding_mask=batch["padding_mask"])  # (B, C)
            labels = batch["labels"]
            total += F.cross_entropy(logits.float(), labels, reduction="sum").item()
            correct += int((logits.argmax(-1) == labels).sum())
            count += labels.numel()
        if count == 0:
            raise ValueError("evaluation saw no batches; the validation split is empty")
        return {"loss": total / count, "accuracy": 100.0 * correct / count, "examples": count}

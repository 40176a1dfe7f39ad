"""The interface every task implements: data -> batches, loss of a batch, evaluation metrics.

A task holds no loop code (that lives in `synthformer.train`): it says which model kind it trains,
how to turn `DataSplits` into encoded examples and resumable batchers, the loss of one batch, and
the metrics of a validation pass. The validation pass itself is `Task.evaluate`, the same loop for
every task; a task changes what it adds up per batch (`eval_batch`) and the metrics it reports
(`eval_metrics`).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterable

import torch
from torch import Tensor
from ..errors import InputError

Batch = dict  # name -> tensor, as yielded by the batchers of `synthformer.data.batching`


class Task:
    """Base class; subclasses set the class attributes and implement the methods."""

    name = ""  # registry name
    model_kind = ""  # ModelConfig.kind this task trains
    data_task = ""  # the task asked of `synthformer.data.load_source`
    main_metric = "loss"  # the metric a comparison table reports
    higher_is_better = False  # direction of `main_metric`

    def model_fields(self, tokenizer, splits) -> dict:
        """ModelConfig fields fixed by the data: vocabulary size, special ids (+ num_classes)."""
        return {"vocab_size": tokenizer.vocab_size, "pad_id": tokenizer.pad_id,
                "bos_id": tokenizer.bos_id, "eos_id": tokenizer.eos_id}

    def encode(self, examples: list, tokenizer, seq_len: int, strict: bool = False) -> Any:
        """Token ids of one split's raw examples, cut to `seq_len` (or refused when `strict`)."""
        raise NotImplementedError

    def batches(self, encoded, tokenizer, seq_len: int, batch_size: int, *, max_tokens: int | None = None,
                shuffle: bool = True, seed: int = 0, rank: int = 0, world_size: int = 1):
        """A resumable batcher (state_dict / load_state_dict) over encoded examples."""
        raise NotImplementedError

    def loss(self, model, batch: Batch, generator: torch.Generator | None = None) -> tuple[Tensor, int]:
        """(mean loss of the batch, number of predictions it averages over)."""
        raise NotImplementedError

    def num_tokens(self, batch: Batch) -> int:
        """Real (non-padding) input tokens in a batch, for tokens/s."""
        raise NotImplementedError

    @torch.no_grad()
    def evaluate(self, model, batches: Iterable[Batch], tokenizer, *, max_batches: int = 0,
                 **options) -> dict:
        """Metrics over (at most `max_batches` of) `batches`: the one evaluation loop of every task.

        Each batch goes to `eval_batch`, which adds to a running total; `eval_metrics` turns the
        totals into metrics. `options` (e.g. seq2seq's ``decode``) reach both hooks."""
        totals = {"loss_sum": 0.0, "count": 0}  # the hooks may add their own keys
        generator = torch.Generator().manual_seed(1234)  # fixed: evaluations are comparable
        device = device_of(model)
        for batch in itertools.islice(batches, max_batches or None):  # no batch read beyond max_batches
            self.eval_batch(model, to_device(batch, device), tokenizer, totals, generator, **options)
        if totals["count"] == 0:
            raise InputError("evaluation saw no batches; the validation split is empty or too small")
        return self.eval_metrics(totals, **options)

    def eval_batch(self, model, batch: Batch, tokenizer, totals: dict, generator: torch.Generator,
                   **options) -> None:
        """Add one batch to `totals`; default: the loss summed over its predictions, and their count."""
        loss, n = self.loss(model, batch, generator)
        totals["loss_sum"] += loss.item() * n
        totals["count"] += n

    def eval_metrics(self, totals: dict, **options) -> dict:
        """Metrics of an evaluation from its totals; default: mean loss per prediction and the count."""
        return {"loss": totals["loss_sum"] / totals["count"], "count": totals["count"]}


def to_device(batch: Batch, device) -> Batch:
    return {k: v.to(device, non_blocking=True) if isinstance(v, Tensor) else v for k, v in batch.items()}


def device_of(model) -> torch.device:
    return next(model.parameters()).device


def perplexity(loss: float) -> float:
    """exp(loss), capped so a diverged run prints a number rather than overflowing."""
    return math.exp(min(loss, 50.0))

"""The interface every task implements: data -> batches, loss of a batch, evaluation metrics.

A task holds no loop code (that lives in `synthformer.training.loop`): it says which model kind it trains,
how to turn `DataSplits` into encoded examples and resumable batchers, the loss of one batch, and
the metrics of a validation pass. The validation pass itself is `Task.evaluate`, the same loop for
every task; a task changes what it adds up per batch (`eval_batch`) and the metrics it reports
(`eval_metrics`), and may decode after the pass (`eval_decode`).

Every evaluation also keeps per-item statistics (one row per sequence or example: its loss sum and
prediction count, its correctness, its sentence statistics) so that each headline metric comes with
"<metric>_se", its bootstrap standard error over the evaluated items (`synthformer.utils.stats`).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterable

import torch
import torch.nn.functional as F
from torch import Tensor

from ..errors import InputError
from ..utils.stats import N_BOOT, bootstrap_ses

Batch = dict  # name -> tensor, as yielded by the batchers of `synthformer.data.batching`
IGNORE = -100  # cross-entropy target of positions (or items) not predicted


class Task:
    """Base class; subclasses set the class attributes and implement the methods."""

    name = ""  # registry name
    model_kind = ""  # ModelConfig.kind this task trains
    data_task = ""  # the task asked of `synthformer.data.load_source`
    main_metric = "loss"  # the metric a comparison table reports
    higher_is_better = False  # direction of `main_metric`
    decodes = False  # True: the evaluation also decodes a sample of the split (`eval_decode`)

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

    def predictions(self, model, batch: Batch, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, int]:
        """(logits (B, ..., V), targets (B, ...), ignored target id): what the loss compares."""
        raise NotImplementedError

    def loss(self, model, batch: Batch, generator: torch.Generator | None = None) -> tuple[Tensor, int]:
        """(mean loss of the batch, number of predictions it averages over)."""
        logits, targets, ignore = self.predictions(model, batch, generator)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=ignore)
        return loss, int((targets != ignore).sum())

    def num_tokens(self, batch: Batch) -> int:
        """Real (non-padding) input tokens in a batch, for tokens/s."""
        raise NotImplementedError

    @torch.no_grad()
    def evaluate(self, model, batches: Iterable[Batch], tokenizer, *, max_batches: int = 0,
                 **options) -> dict:
        """Metrics over (at most `max_batches` of) `batches`: the one evaluation loop of every task.

        Each batch goes to `eval_batch`, which adds to a running total; then `eval_decode` may decode
        (seq2seq: the batches of option ``decode_batches``); `eval_metrics` turns the totals into
        metrics. `options` (e.g. seq2seq's ``decode``) reach every hook."""
        totals = {"loss_sum": 0.0, "count": 0}  # the hooks may add their own keys
        generator = torch.Generator().manual_seed(1234)  # fixed: evaluations are comparable
        device = device_of(model)
        for batch in itertools.islice(batches, max_batches or None):  # no batch read beyond max_batches
            self.eval_batch(model, to_device(batch, device), tokenizer, totals, generator, **options)
        if totals["count"] == 0:
            raise InputError("evaluation saw no batches; the validation split is empty or too small")
        self.eval_decode(model, tokenizer, totals, **options)
        return self.eval_metrics(totals, **options)

    def eval_batch(self, model, batch: Batch, tokenizer, totals: dict, generator: torch.Generator,
                   **options) -> None:
        """Add one batch to `totals`; default: the loss summed over its predictions, and their count
        (per item too, for the standard errors)."""
        add_losses(totals, *self.predictions(model, batch, generator))

    def eval_decode(self, model, tokenizer, totals: dict, **options) -> None:
        """After the loss pass: decode what `options` ask for into `totals`; default: nothing."""

    def eval_metrics(self, totals: dict, **options) -> dict:
        """Metrics of an evaluation from its totals; default: mean loss per prediction (with its SE)
        and the count."""
        return {"loss": totals["loss_sum"] / totals["count"], "count": totals["count"],
                "loss_se": loss_ses(totals)["loss_se"], "items": loss_items(totals)}


def add_losses(totals: dict, logits: Tensor, targets: Tensor, ignore: int) -> None:
    """Add the cross-entropy of `logits` (B, ..., V) against `targets` (B, ...) to `totals`: the sum
    ("loss_sum") and count of the predictions not `ignore`d, and one (loss sum, count) row per item
    ("item_losses", a list of (B, 2) arrays)."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    per = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=ignore,
                          reduction="none").view(targets.shape[0], -1)  # (B, predictions per item), 0 where ignored
    sums = per.double().sum(1).cpu().numpy()  # (B,)
    counts = (targets != ignore).view(targets.shape[0], -1).sum(1).cpu().numpy()  # (B,)
    totals["loss_sum"] += float(sums.sum())
    totals["count"] += int(counts.sum())
    totals.setdefault("item_losses", []).append(np.stack([sums, counts.astype(np.float64)], axis=1))


def loss_ses(totals: dict, n_boot: int = N_BOOT) -> dict:
    """{"loss_se", "ppl_se"}: bootstrap SEs over the evaluated items (sequences, examples) of the mean
    loss per prediction and of its perplexity, from the rows `add_losses` kept."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    items = np.concatenate(totals["item_losses"])  # (N, 2): loss sum, predictions

    def loss(s):
        return s[:, 0].sum() / max(s[:, 1].sum(), 1.0)

    ses = bootstrap_ses(items, {"loss": loss, "ppl": lambda s: perplexity(loss(s))}, n_boot=n_boot)
    return {"loss_se": ses["loss"], "ppl_se": ses["ppl"]}


def loss_items(totals: dict) -> dict:
    """The per-item record an evaluation keeps in its metrics ("items"), so that two variants scored on the same
    items can be compared item by item (`synthformer.evidence.paired`): {"n": items, "loss_sum": [each item's
    summed loss, 4 decimals], "count": [its predictions]}; the counts double as the items' fingerprint."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    items = np.concatenate(totals["item_losses"])  # (N, 2)
    return {"n": len(items), "loss_sum": [round(float(x), 4) for x in items[:, 0]],
            "count": [int(c) for c in items[:, 1]]}


def to_device(batch: Batch, device) -> Batch:
    return {k: v.to(device, non_blocking=True) if isinstance(v, Tensor) else v for k, v in batch.items()}


def device_of(model) -> torch.device:
    return next(model.parameters()).device


def perplexity(loss: float) -> float:
    """exp(loss), capped so a diverged run prints a number rather than overflowing."""
    return math.exp(min(loss, 50.0))

"""Causal language modelling: predict every next token; metric perplexity (SEs over the evaluated blocks)."""
from __future__ import annotations

from ..data import LMBatches, encode_lm
from .base import Task, loss_items, loss_ses, perplexity


class LMTask(Task):
    """Decoder LM on concatenated documents (each ends with <eos>), cut into blocks of seq_len + 1."""

    name = "lm"
    model_kind = "lm"
    data_task = "lm"
    main_metric = "ppl"
    higher_is_better = False

    def encode(self, examples, tokenizer, seq_len, strict=False):
        # documents longer than a block are fine for LM: blocks cross document boundaries
        return encode_lm(examples, tokenizer)  # (N,)

    def batches(self, encoded, tokenizer, seq_len, batch_size, *, max_tokens=None, shuffle=True,
                seed=0, rank=0, world_size=1):
        return LMBatches(encoded, seq_len, batch_size, shuffle=shuffle, seed=seed, rank=rank,
                         world_size=world_size, drop_last=shuffle)

    def predictions(self, model, batch, generator=None):
        tokens = batch["tokens"]  # (B, L+1)
        inputs, targets = tokens[:, :-1], tokens[:, 1:]  # (B, L) each
        return model(inputs), targets, model_pad_id(model)  # logits (B, L, V)

    def num_tokens(self, batch):
        return batch["tokens"].shape[0] * (batch["tokens"].shape[1] - 1)

    def eval_metrics(self, totals, **options):
        loss = totals["loss_sum"] / totals["count"]
        return {"loss": loss, "ppl": perplexity(loss), "eval_tokens": totals["count"], **loss_ses(totals),
                "items": loss_items(totals)}


def model_pad_id(model) -> int:
    """The pad id of a (possibly DDP-wrapped) model."""
    return getattr(model, "module", model).config.pad_id

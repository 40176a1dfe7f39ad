"""Masked language modelling (BERT-style) on blocks of text: predict the selected tokens.

Of the non-padding, non-special tokens, `mask_prob` (15%) are selected; of those 80% become
<mask>, 10% a random ordinary token, 10% stay as they are (Devlin et al. 2019). The loss is the
cross-entropy on the selected positions only. Masking draws from the generator the training loop
passes (saved in checkpoints, so resume is exact); evaluation uses a fixed one.
"""
from __future__ import annotations

import torch

from ..data.tokenizer import MASK, SPECIALS
from ..errors import ConfigError
from .base import IGNORE, add_losses, loss_items, loss_ses, perplexity  # IGNORE: the target of positions not selected
from .lm import LMTask



class MLMTask(LMTask):
    """Encoder with an MLM head on the LM task's blocks (the last token of each is dropped in `mask`);
    metrics: perplexity on the masked tokens, and the % of them predicted exactly (masked_accuracy)."""

    name = "mlm"
    model_kind = "mlm"

    def __init__(self, mask_prob: float = 0.15, num_specials: int = len(SPECIALS), mask_id: int = MASK):
        if not 0.0 < mask_prob < 1.0:
            raise ConfigError(f"mask_prob must be in (0, 1), got {mask_prob}")
        self.mask_prob, self.num_specials, self.mask_id = mask_prob, num_specials, mask_id

    def model_fields(self, tokenizer, splits):
        """As every task's; reads the task and the tokenizer only, and refuses a tokenizer whose
        special tokens differ from the ones this task masks with (every synthformer tokenizer agrees)."""
        theirs = (len(tokenizer.specials), tokenizer.mask_id)
        if theirs != (self.num_specials, self.mask_id):
            raise ConfigError(f"mlm: the tokenizer has {theirs[0]} special tokens and <mask> id {theirs[1]}, "
                              f"the task masks with num_specials={self.num_specials}, mask_id={self.mask_id}; "
                              f"build the task with num_specials={theirs[0]}, mask_id={theirs[1]}")
        return super().model_fields(tokenizer, splits)

    def mask(self, tokens: torch.Tensor, vocab_size: int, generator: torch.Generator | None):
        """(inputs, targets), both (B, L): targets hold IGNORE where nothing is predicted."""
        g_device = generator.device if generator is not None else torch.device("cpu")
        cpu = tokens.to(g_device)
        ordinary = cpu >= self.num_specials  # (B, L) never mask <pad>/<eos>/...
        u = torch.rand(cpu.shape, generator=generator, device=g_device)  # (B, L)
        selected = (u < self.mask_prob) & ordinary
        if not selected.any():  # a batch must predict something: take the first ordinary token
            flat = ordinary.flatten().nonzero()
            if len(flat):
                selected.view(-1)[flat[0]] = True
        action = torch.rand(cpu.shape, generator=generator, device=g_device)  # 80/10/10 split
        randoms = torch.randint(self.num_specials, max(vocab_size, self.num_specials + 1), cpu.shape,
                                generator=generator, device=g_device)
        inputs = torch.where(selected & (action < 0.8), torch.full_like(cpu, self.mask_id), cpu)
        inputs = torch.where(selected & (action >= 0.8) & (action < 0.9), randoms, inputs)
        targets = torch.where(selected, cpu, torch.full_like(cpu, IGNORE))
        return inputs.to(tokens.device), targets.to(tokens.device)

    def predictions(self, model, batch, generator=None):
        config = getattr(model, "module", model).config
        inputs, targets = self.mask(batch["tokens"][:, :-1], config.vocab_size, generator)  # (B, L)
        return model(inputs), targets, IGNORE  # logits (B, L, V)

    def eval_batch(self, model, batch, tokenizer, totals, generator, **options):
        """The loss on the masked tokens, and how many of them the model predicts exactly."""
        logits, targets, ignore = self.predictions(model, batch, generator)  # (B, L, V), (B, L)
        add_losses(totals, logits, targets, ignore)
        chosen = targets != ignore
        totals["correct"] = totals.get("correct", 0) + int((logits.argmax(-1)[chosen] == targets[chosen]).sum())

    def eval_metrics(self, totals, **options):
        loss = totals["loss_sum"] / totals["count"]
        return {"loss": loss, "ppl": perplexity(loss), "masked_tokens": totals["count"],
                "masked_accuracy": 100.0 * totals.get("correct", 0) / totals["count"], **loss_ses(totals),
                "items": loss_items(totals)}

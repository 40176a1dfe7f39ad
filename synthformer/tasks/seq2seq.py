"""Sequence-to-sequence (translation, dialogue turns): teacher-forced cross-entropy for training;
evaluation decodes (greedy or beam) and scores BLEU and chrF (sacrebleu) and ROUGE-L (rouge-score)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..data import SequenceBatches, encode_pairs
from .base import Task, device_of, perplexity, to_device
from .lm import model_pad_id


class Seq2SeqTask(Task):
    """Encoder-decoder; targets are <bos> ids <eos>: the decoder reads tgt[:-1] and predicts tgt[1:]."""

    name = "seq2seq"
    model_kind = "seq2seq"
    data_task = "seq2seq"
    main_metric = "bleu"
    higher_is_better = True

    def encode(self, examples, tokenizer, seq_len, strict=False):
        # +1: the decoder reads seq_len tokens of <bos> + ids and predicts seq_len tokens of ids + <eos>
        return encode_pairs(examples, tokenizer, max_len=seq_len, max_tgt_len=seq_len + 1, strict=strict)

    def batches(self, encoded, tokenizer, seq_len, batch_size, *, max_tokens=None, shuffle=True,
                seed=0, rank=0, world_size=1):
        return SequenceBatches(encoded, tokenizer.pad_id, batch_size=batch_size, max_tokens=max_tokens,
                               bucket=True, shuffle=shuffle, seed=seed, rank=rank, world_size=world_size)

    def loss(self, model, batch, generator=None):
        tgt, tgt_mask = batch["tgt"], batch["tgt_padding_mask"]  # (B, Lt+1)
        logits = model(batch["src"], tgt[:, :-1], src_padding_mask=batch["src_padding_mask"],
                       tgt_padding_mask=tgt_mask[:, :-1])  # (B, Lt, V)
        targets = tgt[:, 1:]  # (B, Lt)
        pad = model_pad_id(model)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1),
                               ignore_index=pad)
        return loss, int((targets != pad).sum())

    def num_tokens(self, batch):
        return int((~batch["src_padding_mask"]).sum() + (~batch["tgt_padding_mask"]).sum())

    @torch.no_grad()
    def evaluate(self, model, batches, tokenizer, *, max_batches=0, decode_examples: int = 100,
                 decode: str = "greedy", num_beams: int = 4, max_new_tokens: int | None = None, **options):
        """Teacher-forced loss/perplexity over the batches, then BLEU / chrF / ROUGE-L of the first
        `decode_examples` decoded examples (0: skip decoding)."""
        total, count, hyps, refs = 0.0, 0, [], []
        for i, batch in enumerate(batches):
            if max_batches and i >= max_batches:
                break
            batch = to_device(batch, device_of(model))
            loss, n = self.loss(model, batch)
            total, count = total + loss.item() * n, count + n
            if len(hyps) < decode_examples:
                h, r = self.decode_batch(model, batch, tokenizer, decode=decode, num_beams=num_beams,
                                         max_new_tokens=max_new_tokens)
                hyps, refs = hyps + h, refs + r
        if count == 0:
            raise ValueError("evaluation saw no batches; the validation split is empty")
        out = {"loss": total / count, "ppl": perplexity(total / count), "eval_tokens": count}
        if hyps:
            out.update(text_metrics(hyps[:decode_examples], refs[:decode_examples]))
            out["examples"] = [{"hyp": h, "ref": r} for h, r in zip(hyps[:3], refs[:3])]
        return out

    def decode_batch(self, model, batch, tokenizer, *, decode="greedy", num_beams=4, max_new_tokens=None):
        """(hypotheses, references) as text for one batch."""
        model = getattr(model, "module", model)
        limit = model.config.max_seq_len
        max_new = min(max_new_tokens or batch["tgt"].shape[1] + 8, limit)
        options = {"strategy": decode}
        if decode == "beam":
            options["num_beams"] = num_beams
        ids = model.generate(batch["src"], src_padding_mask=batch["src_padding_mask"],
                             max_new_tokens=max_new, **options)  # (B, L) after <bos>
        hyps = [tokenizer.decode(cut_at_eos(row.tolist(), tokenizer.eos_id)) for row in ids]
        refs = [tokenizer.decode(cut_at_eos(row.tolist()[1:], tokenizer.eos_id)) for row in batch["tgt"]]
        return hyps, refs


def cut_at_eos(ids: list[int], eos_id: int) -> list[int]:
    return ids[:ids.index(eos_id)] if eos_id in ids else ids


def text_metrics(hyps: list[str], refs: list[str]) -> dict:
    """Corpus BLEU and chrF (sacrebleu) and mean ROUGE-L F1 (rouge-score), all in 0..100."""
    import sacrebleu
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    rouge = sum(scorer.score(r, h)["rougeL"].fmeasure for h, r in zip(hyps, refs)) / max(1, len(hyps))
    return {"bleu": sacrebleu.corpus_bleu(hyps, [refs]).score,
            "chrf": sacrebleu.corpus_chrf(hyps, [refs]).score,
            "rougeL": 100.0 * rouge, "decoded": len(hyps)}

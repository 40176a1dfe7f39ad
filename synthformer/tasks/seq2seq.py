"""Sequence-to-sequence (translation, dialogue turns): teacher-forced cross-entropy for training;
evaluation decodes (greedy or beam) and scores BLEU and chrF (sacrebleu) and ROUGE-L (rouge-score)."""
from __future__ import annotations

import numpy as np
import torch.nn.functional as F

from ..data import SequenceBatches, encode_pairs
from ..stats import N_BOOT, bootstrap_ses
from .base import Task, perplexity
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

    def eval_batch(self, model, batch, tokenizer, totals, generator, *, decode_examples=100, decode="greedy",
                   num_beams=4, max_new_tokens=None, **options):
        """Teacher-forced loss of the batch; also decodes it (greedy or beam) while fewer than
        `decode_examples` examples are decoded (0: never), for BLEU / chrF / ROUGE-L."""
        super().eval_batch(model, batch, tokenizer, totals, generator)
        hyps, refs = totals.setdefault("hyps", []), totals.setdefault("refs", [])
        if len(hyps) < decode_examples:
            h, r = self.decode_batch(model, batch, tokenizer, decode=decode, num_beams=num_beams,
                                     max_new_tokens=max_new_tokens)
            hyps.extend(h)
            refs.extend(r)

    def eval_metrics(self, totals, *, decode_examples=100, **options):
        loss, count = totals["loss_sum"] / totals["count"], totals["count"]
        out = {"loss": loss, "ppl": perplexity(loss), "eval_tokens": count}
        hyps, refs = totals.get("hyps", [])[:decode_examples], totals.get("refs", [])[:decode_examples]
        if hyps:
            out.update(text_metrics(hyps, refs))
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


def text_item_stats(hyps: list[str], refs: list[str]) -> np.ndarray:
    """(N, 29) per-sentence sufficient statistics: sacrebleu's BLEU counts (hyp/ref length, 4 matched
    and 4 total n-gram counts), its chrF counts (6 character orders x hyp/ref/match) and the ROUGE-L
    F1 (rouge-score, Porter stemmer, the same setting on every split). Corpus BLEU and chrF are
    functions of the column sums (sacrebleu scores a corpus from summed sentence statistics), the
    ROUGE-L of their mean: `text_scores` turns a sum back into scores, so a bootstrap over sentences
    resamples rows instead of rescoring strings."""
    import sacrebleu
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    bleu = sacrebleu.BLEU()._extract_corpus_statistics(hyps, [refs])  # N x 10
    chrf = sacrebleu.CHRF()._extract_corpus_statistics(hyps, [refs])  # N x 18
    rouge = [[scorer.score(r, h)["rougeL"].fmeasure] for h, r in zip(hyps, refs)]
    return np.concatenate([np.asarray(bleu, dtype=np.float64).reshape(len(hyps), _BLEU_COLS),
                           np.asarray(chrf, dtype=np.float64).reshape(len(hyps), _CHRF_COLS),
                           np.asarray(rouge, dtype=np.float64).reshape(len(hyps), 1)], axis=1)  # (N, 29)


_BLEU_COLS, _CHRF_COLS = 10, 18  # sacrebleu's defaults: 4-gram BLEU; chrF with 6 character orders, no words


def text_scores(stats: np.ndarray) -> dict:
    """{"bleu", "chrf", "rougeL"} (0..100) of the sentences whose `text_item_stats` rows are `stats` (N, 29)."""
    import sacrebleu

    total = stats.sum(axis=0)  # (29,)
    return {"bleu": float(sacrebleu.BLEU()._compute_score_from_stats(total[:_BLEU_COLS]).score),
            "chrf": float(sacrebleu.CHRF()._compute_score_from_stats(total[_BLEU_COLS:-1]).score),
            "rougeL": 100.0 * float(total[-1]) / max(1, len(stats))}


def text_metrics(hyps: list[str], refs: list[str], n_boot: int = N_BOOT) -> dict:
    """Corpus BLEU and chrF (sacrebleu, default settings) and mean ROUGE-L F1 (rouge-score with the
    Porter stemmer), all in 0..100, each with its bootstrap standard error over sentences
    ("bleu_se", ...; `n_boot` resamples, 0: none), and "decoded" (how many sentence pairs)."""
    stats = text_item_stats(hyps, refs)  # (N, 29)
    out = text_scores(stats)
    if n_boot and len(hyps):
        ses = bootstrap_ses(stats, {k: (lambda s, k=k: text_scores(s)[k]) for k in out}, n_boot=n_boot)
        out.update({f"{k}_se": v for k, v in ses.items()})
    return {**out, "decoded": len(hyps)}

"""Sequence-to-sequence (translation, dialogue turns, summaries): teacher-forced cross-entropy for
training; evaluation also decodes (greedy or beam) the batches it is given and scores BLEU and chrF
(sacrebleu) and ROUGE-1/2/L (rouge-score, stemmed), each with a bootstrap SE over the decoded sentences.
A hypothesis may be as long as its source allows (`decode_limit`), never as its reference."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..data import SequenceBatches, encode_pairs
from ..utils.stats import N_BOOT, bootstrap_ses
from .base import Task, device_of, loss_items, loss_ses, perplexity, to_device
from .lm import model_pad_id

if TYPE_CHECKING:
    import numpy as np


class Seq2SeqTask(Task):
    """Encoder-decoder; targets are <bos> ids <eos>: the decoder reads tgt[:-1] and predicts tgt[1:]."""

    name = "seq2seq"
    model_kind = "seq2seq"
    data_task = "seq2seq"
    main_metric = "bleu"
    higher_is_better = True
    decodes = True

    def encode(self, examples, tokenizer, seq_len, strict=False):
        # +1: the decoder reads seq_len tokens of <bos> + ids and predicts seq_len tokens of ids + <eos>
        return encode_pairs(examples, tokenizer, max_len=seq_len, max_tgt_len=seq_len + 1, strict=strict)

    def batches(self, encoded, tokenizer, seq_len, batch_size, *, max_tokens=None, shuffle=True,
                seed=0, rank=0, world_size=1):
        return SequenceBatches(encoded, tokenizer.pad_id, batch_size=batch_size, max_tokens=max_tokens,
                               bucket=True, shuffle=shuffle, seed=seed, rank=rank, world_size=world_size)

    def predictions(self, model, batch, generator=None):
        tgt, tgt_mask = batch["tgt"], batch["tgt_padding_mask"]  # (B, Lt+1)
        logits = model(batch["src"], tgt[:, :-1], src_padding_mask=batch["src_padding_mask"],
                       tgt_padding_mask=tgt_mask[:, :-1])  # (B, Lt, V)
        return logits, tgt[:, 1:], model_pad_id(model)  # targets (B, Lt)

    def num_tokens(self, batch):
        return int((~batch["src_padding_mask"]).sum() + (~batch["tgt_padding_mask"]).sum())

    def eval_decode(self, model, tokenizer, totals, *, decode_batches=None, decode="greedy", num_beams=4,
                    max_new_tokens=None, **options):
        """Decode every batch of `decode_batches` (greedy or beam), for BLEU / chrF / ROUGE-L; none
        given: no decoding. `synthformer.training.evaluation` passes the batches of a seeded sample of the
        split (`synthformer.training.evaluation.decode_sample`), independent of how the loss pass batches it."""
        hyps, refs = totals.setdefault("hyps", []), totals.setdefault("refs", [])
        device = device_of(model)
        for batch in decode_batches or ():
            h, r = self.decode_batch(model, to_device(batch, device), tokenizer, decode=decode,
                                     num_beams=num_beams, max_new_tokens=max_new_tokens)
            hyps.extend(h)
            refs.extend(r)

    def eval_metrics(self, totals, *, decode_of=None, **options):
        loss, count = totals["loss_sum"] / totals["count"], totals["count"]
        out = {"loss": loss, "ppl": perplexity(loss), "eval_tokens": count, **loss_ses(totals),
               "items": loss_items(totals)}
        hyps, refs = totals.get("hyps", []), totals.get("refs", [])
        if hyps:
            out.update(text_metrics(hyps, refs, keep_items=True))
            out["items"]["text"] = out.pop("text_items")
            out["decoded_of"] = len(hyps) if decode_of is None else int(decode_of)  # == decoded: the whole split
            out["examples"] = [{"hyp": h, "ref": r} for h, r in zip(hyps[:3], refs[:3])]
        return out

    def decode_batch(self, model, batch, tokenizer, *, decode="greedy", num_beams=4, max_new_tokens=None):
        """(hypotheses, references) as text for one batch. Each hypothesis is at most
        `max_new_tokens`, else `decode_limit` of its own source length, tokens long (never read
        from the reference), and ends before the first <eos>."""
        model = getattr(model, "module", model)
        src_len = (~batch["src_padding_mask"]).sum(1).tolist()  # (B,) real source tokens
        limits = [max_new_tokens or decode_limit(n, model.config.max_seq_len) for n in src_len]
        options = {"strategy": decode}
        if decode == "beam":
            options["num_beams"] = num_beams
        ids = model.generate(batch["src"], src_padding_mask=batch["src_padding_mask"],
                             max_new_tokens=max(limits), **options)  # (B, L) after <bos>
        hyps = [tokenizer.decode(cut_at_eos(row.tolist()[:limit], tokenizer.eos_id)) for row, limit in zip(ids, limits)]
        refs = [tokenizer.decode(cut_at_eos(row.tolist()[1:], tokenizer.eos_id)) for row in batch["tgt"]]
        return hyps, refs


DECODE_LENGTH = (1.5, 10)  # (a, b): a hypothesis gets at most a * source tokens + b tokens (fairseq's max_len_a/b)


def decode_limit(src_len: int, max_seq_len: int) -> int:
    """Most tokens decoded for a source of `src_len` tokens: ceil(a * src_len + b) (`DECODE_LENGTH`),
    at most max_seq_len - 1 (the decoder's positions after <bos>)."""
    a, b = DECODE_LENGTH
    return max(1, min(math.ceil(a * src_len + b), max_seq_len - 1))


def cut_at_eos(ids: list[int], eos_id: int) -> list[int]:
    return ids[:ids.index(eos_id)] if eos_id in ids else ids


def text_item_stats(hyps: list[str], refs: list[str]) -> np.ndarray:
    """(N, 31) per-sentence sufficient statistics: sacrebleu's BLEU counts (hyp/ref length, 4 matched
    and 4 total n-gram counts), its chrF counts (6 character orders x hyp/ref/match) and the ROUGE-1,
    ROUGE-2 and ROUGE-L F1 (rouge-score, Porter stemmer, the same setting on every split). Corpus BLEU and
    chrF are functions of the column sums (sacrebleu scores a corpus from summed sentence statistics), the
    ROUGE scores of their means: `text_scores` turns a sum back into scores, so a bootstrap over sentences
    resamples rows instead of rescoring strings."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    import sacrebleu
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(list(ROUGE), use_stemmer=True)
    bleu = sacrebleu.BLEU()._extract_corpus_statistics(hyps, [refs])  # N x 10
    chrf = sacrebleu.CHRF()._extract_corpus_statistics(hyps, [refs])  # N x 18
    rouge = [[s[k].fmeasure for k in ROUGE] for s in (scorer.score(r, h) for h, r in zip(hyps, refs))]
    return np.concatenate([np.asarray(bleu, dtype=np.float64).reshape(len(hyps), _BLEU_COLS),
                           np.asarray(chrf, dtype=np.float64).reshape(len(hyps), _CHRF_COLS),
                           np.asarray(rouge, dtype=np.float64).reshape(len(hyps), len(ROUGE))], axis=1)  # (N, 31)


_BLEU_COLS, _CHRF_COLS = 10, 18  # sacrebleu's defaults: 4-gram BLEU; chrF with 6 character orders, no words
ROUGE = ("rouge1", "rouge2", "rougeL")  # rouge-score's names, the last columns of `text_item_stats`


def text_scores(stats: np.ndarray) -> dict:
    """{"bleu", "chrf", "rouge1", "rouge2", "rougeL"} (0..100) of the sentences whose `text_item_stats` rows are
    `stats` (N, 31)."""
    import sacrebleu

    total = stats.sum(axis=0)  # (31,)
    chrf_end = _BLEU_COLS + _CHRF_COLS
    return {"bleu": float(sacrebleu.BLEU()._compute_score_from_stats(total[:_BLEU_COLS]).score),
            "chrf": float(sacrebleu.CHRF()._compute_score_from_stats(total[_BLEU_COLS:chrf_end]).score),
            **{k: 100.0 * float(v) / max(1, len(stats)) for k, v in zip(ROUGE, total[chrf_end:])}}


def text_metrics(hyps: list[str], refs: list[str], n_boot: int = N_BOOT, keep_items: bool = False) -> dict:
    """Corpus BLEU and chrF (sacrebleu, default settings) and mean ROUGE-1, ROUGE-2 and ROUGE-L F1 (rouge-score
    with the Porter stemmer), all in 0..100, each with its bootstrap standard error over sentences
    ("bleu_se", ...; `n_boot` resamples, 0: none), and "decoded" (how many sentence pairs). `keep_items`: also
    "text_items", each sentence's BLEU statistics (10 counts) and ROUGE-L F1 (4 decimals), {"bleu": [[...]],
    "rougeL": [...]}, for paired comparisons (`synthformer.evidence.paired`)."""
    stats = text_item_stats(hyps, refs)  # (N, 31)
    out = text_scores(stats)
    kept = {"text_items": {"bleu": [[int(round(x)) for x in row[:_BLEU_COLS]] for row in stats],
                           "rougeL": [round(float(x), 4) for x in stats[:, -1]]}} if keep_items else {}
    if n_boot and len(hyps):
        ses = bootstrap_ses(stats, {k: (lambda s, k=k: text_scores(s)[k]) for k in out}, n_boot=n_boot)
        out.update({f"{k}_se": v for k, v in ses.items()})
    return {**out, "decoded": len(hyps), **kept}

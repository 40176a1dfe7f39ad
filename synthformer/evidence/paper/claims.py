"""The paper's claims as data: each relation its tables (or text, or figures) show between variants.

A claim is one relation the paper shows between variants on one benchmark, e.g. "Fixed Random is
clearly the worst on LM1B (Table 2)". It names the task kinds it applies to (`numbers.task_kind`), the
metric of ours that measures it and its direction, the paper's numbers as printed (none for a figure),
and a relation with a threshold ``t``: ``worse`` (the subject worse than every other by more than
``t``), ``better`` (better than every other by more than ``t``; 0 = simply better) or ``within`` (close
to every other, a two-sided band). `synthformer.evidence.judge` holds the rule that checks each claim
on a comparison's result rows (the relative gap, its 95% interval, the floors).

`CLAIMS` lists them table by table, `BY_NAME` and `TABLES` index them, `select` picks them by claim or
table name, `check_kind` checks a task kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...errors import SynthformerError
from .numbers import (LRA, LRA_AVG, LRA_MEMORY_GB, LRA_STEPS_PER_S, TABLE2, TABLE3, TABLE4, TABLE4_STEPS_PER_S, TABLE7,
                      TABLE7_IMDB, TABLE7_STEPS_PER_S, TASK_KINDS, glue_summary)

RELATIONS = ("worse", "within", "better")
# MT BLEU claims (`_mt`): every variant compared must also reach this greedy test BLEU to be judged on BLEU
# (issue 18's bar), however far above the copy floor; below it the claim falls back on its ppl proxy. Measured
# (session 21, table2's MT grid): R at 1.9 BLEU lowers its test loss by 0.17 nats/token when it reads its
# own source rather than another item's, R+V at 7.4 by 1.22: under the bar the decoder is mostly an LM.
MT_BLEU_LEARNED = 5.0
ANY_KIND = "*"  # a claim about speed holds for every task kind
# A claim's proxy metric (`Claim.proxy`) -> how its findings name it; (metric -> its name in a status)
PROXY_LABELS = {"ppl": "teacher-forced ppl"}


class ClaimError(SynthformerError):
    """An unknown claim or table name, or a bad claim record."""


@dataclass(frozen=True)
class Claim:
    """One finding of the paper, checked on our numbers by `synthformer.evidence.judge`."""

    name: str  # identifier used in configs, e.g. "t2-lm1b-fix-worst"
    table: str  # the paper's table: "Table 2", "Table 4", "LRA", "Figures 2-7", ...
    kinds: tuple[str, ...]  # task kinds it applies to (numbers.TASK_KINDS), or ("*",)
    benchmark: str  # the paper's data set / column, e.g. "LM1B PPL"
    metric: str  # our result key: ppl | loss | bleu | rougeL | accuracy | acc_<task> | tokens_per_s | ...
    lower_is_better: bool  # direction of the metric (for weight_var: higher variance counts as "better")
    subject: str  # the variant the claim is about
    others: tuple[str, ...]  # the variants it is compared with
    relation: str  # worse | within (a two-sided band) | better
    threshold: float  # relative to the other variant's value (0.05 = 5%)
    paper: dict = field(default_factory=dict)  # {variant: the paper's number}; {} for a figure (no numbers)
    text: str = ""  # the claim in words, quoting the paper's numbers only
    learned_on: str = ""  # the metric the floor gates on when not `metric` (e.g. "ppl" for weight_var)
    derived: str = ""  # how `paper` was computed from the table's cells when it is not printed there
    proxy: str = ""  # a metric (`PROXY_LABELS`) judged instead, labelled, when `metric` is not learned (MT: "ppl")
    learned_min: float = 0.0  # higher-is-better gate: with a floor row, every variant must also reach this (MT BLEU 5)
    lean: str = ""  # a band the paper gives a side ("close to V, slightly worse"): "worse" | "better"; "" = either

    @property
    def gates(self) -> tuple[str, ...]:
        """The metrics the floor gates this claim on: `learned_on` (several joined by ",") or its metric."""
        return tuple(m.strip() for m in (self.learned_on or self.metric).split(",") if m.strip())

    def __post_init__(self):
        if self.relation not in RELATIONS:
            raise ClaimError(f"claim {self.name}: relation={self.relation!r} is not one of {', '.join(RELATIONS)}")
        bad = [k for k in self.kinds if k != ANY_KIND and k not in TASK_KINDS]
        if bad:
            raise ClaimError(f"claim {self.name}: unknown task kinds {bad}; valid: {', '.join(TASK_KINDS)}")
        missing = [v for v in (self.subject, *self.others) if v not in self.paper]
        if self.paper and missing:
            raise ClaimError(f"claim {self.name}: no paper number for {missing}")
        if self.threshold < 0 or (self.relation == "within" and self.threshold <= 0):
            raise ClaimError(f"claim {self.name}: threshold={self.threshold} must be >= 0 (> 0 for a band)")
        if self.lean and (self.relation != "within" or self.lean not in ("worse", "better")):
            raise ClaimError(f"claim {self.name}: lean={self.lean!r} needs relation 'within' and 'worse' or 'better'")
        if self.proxy and self.proxy not in PROXY_LABELS:
            raise ClaimError(f"claim {self.name}: proxy={self.proxy!r} is not one of {', '.join(PROXY_LABELS)}")

    def applies_to(self, kind: str) -> bool:
        return ANY_KIND in self.kinds or kind in self.kinds


def _pick(table: dict, names, key=None) -> dict:
    return {n: (table[n] if key is None else table[n][key]) for n in names}


T2 = ("V", "Fix", "R", "FR", "D", "FD", "R+D", "D+V", "R+V")
T3 = ("V", "R", "D", "D+V", "R+V")


def _glue(names, key: str = "accuracy") -> dict:
    """{variant: the paper's Table 5/6 number} in the fine-tuning suite's terms (numbers.glue_summary)."""
    return {n: glue_summary(n)[key] for n in names}


def _but(names, subject):
    return tuple(v for v in names if v != subject)


def _t2(name, bench, kinds, metric, lower, subject, others, relation, t, key, text):
    return Claim(name, "Table 2", kinds, bench, metric, lower, subject, others, relation, t,
                 _pick(TABLE2, (subject, *others), key), text)


def _lm(name, subject, others, relation, t, text):
    return _t2(name, "LM1B PPL", ("lm",), "ppl", True, subject, others, relation, t, "lm1b_ppl", text)


def _mt(name, subject, others, relation, t, text, key="ende_bleu"):
    bench = "EnDe BLEU" if key == "ende_bleu" else "EnFr BLEU"
    return replace(_t2(name, bench, ("seq2seq-mt",), "bleu", False, subject, others, relation, t, key, text),
                   proxy="ppl", learned_min=MT_BLEU_LEARNED)


def _t3(name, kind, bench, metric, key, subject, others, relation, t, text):
    # While ROUGE-L / BLEU-4 is not learned (the lead or copy floor), judged on the teacher-forced ppl against the
    # target-side bigram, as MT is (issue 48): the paper printed no perplexity, so the status says it is a proxy.
    return Claim(name, "Table 3", (kind,), bench, metric, False, subject, others, relation, t,
                 _pick(TABLE3, (subject, *others), key), text, proxy="ppl")


def _t4(name, subject, others, relation, t, text, speed=False):
    if speed:
        return Claim(name, "Table 4", (ANY_KIND,), "steps/s", "tokens_per_s", False, subject, others, relation, t,
                     _pick(TABLE4_STEPS_PER_S, (subject, *others)), text)
    return Claim(name, "Table 4", ("mlm",), "C4 MLM log-PPL", "loss", True, subject, others, relation, t,
                 _pick(TABLE4, (subject, *others)), text)


PAIR_RATIO = "100 x the mean of Table 5's pair-task cells (MRPC, STS-B, QQP, MNLI, QNLI, RTE) / SST-2"


def _t56(name, table, bench, metric, key, subject, others, relation, t, text):
    ratio = key == "pair_vs_single"  # a ratio of two floors is no floor: gate on each of its two parts instead
    return Claim(name, table, ("finetune",), bench, metric, False, subject, others, relation, t,
                 _glue((subject, *others), key), text, derived=PAIR_RATIO if ratio else "",
                 learned_on="pair,single" if ratio else "")


def _lra(name, kinds, bench, metric, lower, subject, others, relation, t, paper, text):
    return Claim(name, "LRA", kinds, bench, metric, lower, subject, others, relation, t, paper, text)


def _t7_speed(name, kind, subject, relation, t, text):
    bench = "AG News" if kind == "classify-topic" else "IMDB"
    return Claim(name, "Table 7", (kind,), f"steps/s (ours: the {bench} stand-in's tokens/s)", "tokens_per_s", False,
                 subject, ("V",), relation, t, _pick(TABLE7_STEPS_PER_S, (subject, "V")), text)


GLUE, SGLUE = "GLUE avg.", "SuperGLUE avg. (ours: the sentence-pair tasks' mean)"
WEIGHTS = "Figures 2-3 weight histograms (ours: variance of the trained attention weights)"

# The claims, table by table. Thresholds: an ordering ("better", "below") is 0; a gap the paper quantifies
# in words is that gap rounded down to what its own numbers meet ("by 3.5%" -> 3%, "+60% faster" -> 50%);
# "clearly worst" 5% (paper: 19% on LM1B, 12% on EnDe); "very substantially" 10%, twice "clearly" (paper: R+V
# 21% above dynamic convolution on GLUE, 25% on SuperGLUE). Bands ("close", "competitive", "level") are
# two-sided: LM1B 10% for R, D, R+V (paper gaps 4.8-7.0%), 15% for FR, FD (7.8-11.0%); BLEU 5% (paper
# within 1.4%); GLUE / SST-2 3% (paper within 2.5%); LRA 5% (paper within 4.0%); a "match" 2%; steps/s
# ("relatively an equal model speed", Table 7's FR and V) 10%, 15% for D+V (paper gaps 0.9% FR, 2.8% R+V,
# 14.4% D+V). A band the paper gives a side in words ("slightly worse", "slightly below") has `lean`: the gap
# must not lie wholly on the other side.
CLAIMS: tuple[Claim, ...] = (
    # --- Table 2, LM1B perplexity (decoder LM)
    _lm("t2-lm1b-fix-worst", "Fix", _but(T2, "Fix"), "worse", 0.05,
        "Fixed Random is clearly the worst (50.52; next FR 42.40)"),
    _lm("t2-lm1b-fix-vs-r", "Fix", ("R",), "worse", 0.05, "training R matters: Fix 50.52 vs R 40.60"),
    _lm("t2-lm1b-r-close-v", "R", ("V",), "within", 0.10, "R within 1-2 PPL points of V (40.60 vs 38.21)"),
    _lm("t2-lm1b-d-close-v", "D", ("V",), "within", 0.10, "D close to V (40.88 vs 38.21)"),
    replace(_lm("t2-lm1b-fr-close-v", "FR", ("V",), "within", 0.15, "FR close to V, slightly worse (42.40 vs 38.21)"),
            lean="worse"),
    replace(_lm("t2-lm1b-fd-close-v", "FD", ("V",), "within", 0.15, "FD close to V, slightly worse (41.20 vs 38.21)"),
            lean="worse"),
    _lm("t2-lm1b-dv-best", "D+V", _but(T2, "D+V"), "better", 0.0, "D+V is the best model (37.27; V 38.21)"),
    _lm("t2-lm1b-rv-close-v", "R+V", ("V",), "within", 0.10, "R+V close to V (40.05 vs 38.21)"),
    _lm("t2-lm1b-rv-not-above-v", "R+V", ("V",), "worse", 0.0,
        "R+V does not beat V on LM1B (40.05 vs 38.21): of the mixtures only D+V does"),
    _lm("t2-lm1b-rd-worst-mixture", "R+D", ("D+V", "R+V"), "worse", 0.0,
        "R+D is the worst mixture (42.35 vs D+V 37.27, R+V 40.05)"),
    # --- Table 2, WMT'14 En-De / En-Fr BLEU (encoder-decoder translation; one MT task stands in for both)
    _mt("t2-ende-fix-worst", "Fix", _but(T2, "Fix"), "worse", 0.05,
        "Fixed Random is clearly the worst, yet ~24 BLEU (23.89; next R 27.27)"),
    _mt("t2-ende-r-close-v", "R", ("V",), "within", 0.05, "R competitive with V (27.27 vs 27.67)"),
    _mt("t2-ende-d-close-v", "D", ("V",), "within", 0.05, "D competitive with V (27.43 vs 27.67)"),
    _mt("t2-ende-fr-close-v", "FR", ("V",), "within", 0.05, "FR competitive with V (27.30 vs 27.67)"),
    _mt("t2-ende-fd-close-v", "FD", ("V",), "within", 0.05, "FD competitive with V (27.32 vs 27.67)"),
    _mt("t2-ende-rd-close-v", "R+D", ("V",), "within", 0.05,
        "R+D performs comparably to V on EnDe (27.68 vs 27.67)"),
    _mt("t2-ende-rv-above-v", "R+V", ("V",), "better", 0.0,
        "R+V above V (28.47 vs 27.67; +0.8 BLEU over R+D 27.68)"),
    replace(_mt("t2-ende-dv-close-v", "D+V", ("V",), "within", 0.05,
                "D+V level with V, slightly below (27.57 vs 27.67)"), lean="worse"),
    _mt("t2-enfr-rv-best", "R+V", _but(T2, "R+V"), "better", 0.0,
        "R+V the best model on EnFr (41.85; V and FD 41.57)", key="enfr_bleu"),
    # --- Table 3, CNN/DailyMail summarization ROUGE-L
    _t3("t3-sum-r-below-v", "seq2seq-summarization", "CNN/DM RL", "rougeL", "sum_rl", "R", ("V",), "worse", 0.0,
        "R does not reach V (33.10 vs 35.77)"),
    _t3("t3-sum-d-below-v", "seq2seq-summarization", "CNN/DM RL", "rougeL", "sum_rl", "D", ("V",), "worse", 0.05,
        "D ~2 ROUGE-L below V (33.70 vs 35.77)"),
    _t3("t3-sum-dv-above-v", "seq2seq-summarization", "CNN/DM RL", "rougeL", "sum_rl", "D+V", ("V",), "better",
        0.0, "D+V above V (36.02 vs 35.77)"),
    _t3("t3-sum-rv-above-v", "seq2seq-summarization", "CNN/DM RL", "rougeL", "sum_rl", "R+V", ("V",), "better",
        0.0, "R+V above V (35.95 vs 35.77)"),
    # --- Table 3, PersonaChat dialogue (BLEU-4, ROUGE-L)
    _t3("t3-dialogue-r-above-v-rl", "seq2seq-dialogue", "dialogue RL", "rougeL", "dialogue_rl", "R", ("V",),
        "better", 0.05, "R above V on ROUGE-L by ~1-3 points (15.00 vs 13.38)"),
    _t3("t3-dialogue-d-above-v-rl", "seq2seq-dialogue", "dialogue RL", "rougeL", "dialogue_rl", "D", ("V",),
        "better", 0.05, "D above V on ROUGE-L by ~1-3 points (15.22 vs 13.38)"),
    _t3("t3-dialogue-d-best-b4", "seq2seq-dialogue", "dialogue B4", "bleu", "dialogue_b4", "D", _but(T3, "D"),
        "better", 0.0, "D the best on BLEU-4 (4.02; D+V 3.57, V 3.20, R+V 2.28, R 2.25)"),
    _t3("t3-dialogue-rv-below-v-b4", "seq2seq-dialogue", "dialogue B4", "bleu", "dialogue_b4", "R+V", ("V",),
        "worse", 0.0, "adding V does not help dialogue: R+V below V on BLEU-4 (2.28 vs 3.20)"),
    _t3("t3-dialogue-dv-below-d-rl", "seq2seq-dialogue", "dialogue RL", "rougeL", "dialogue_rl", "D+V", ("D",),
        "worse", 0.0, "adding V hurts dialogue: D+V below D on ROUGE-L (14.22 vs 15.22)"),
    # --- Table 4, C4 masked LM log perplexity (our "loss" of the mlm task, nats per masked token)
    _t4("t4-c4-v-above-r-d", "V", ("R", "D"), "better", 0.0, "V beats pure R and D (1.865 vs 1.972, 1.965)"),
    _t4("t4-c4-rv-below-v", "R+V", ("V",), "better", 0.0, "R+V beats V (1.849 vs 1.865)"),
    _t4("t4-c4-dv-below-v", "D+V", ("V",), "better", 0.0, "D+V beats V (1.832 vs 1.865)"),
    _t4("t4-c4-r-vs-dynamicconv", "R", ("dynamicconv",), "better", 0.03,
        "R beats dynamic convolution by a relative 3.5% (1.972 vs 2.040)"),
    _t4("t4-c4-d-vs-dynamicconv", "D", ("dynamicconv",), "better", 0.0,
        "D beats dynamic convolution (1.965 vs 2.040)"),
    _t4("t4-c4-r-matches-lightconv", "R", ("lightconv",), "within", 0.02,
        "R matches lightweight convolution (1.972 vs 1.972)"),
    # --- Table 4, speed (steps/s on TPU; ours: training tokens/s): a property of the model, any task
    _t4("t4-speed-r-vs-v", "R", ("V",), "better", 0.0, "R faster than V (4.26 vs 3.90 steps/s)", speed=True),
    _t4("t4-speed-r-vs-dynamicconv", "R", ("dynamicconv",), "better", 0.50,
        "R +60% faster than dynamic convolution (4.26 vs 2.65 steps/s)", speed=True),
    _t4("t4-speed-r-vs-lightconv", "R", ("lightconv",), "better", 0.05,
        "R +5% faster than lightweight convolution (4.26 vs 4.05 steps/s)", speed=True),
    _t4("t4-speed-rv-close-v", "R+V", ("V",), "within", 0.10,
        "R+V at relatively an equal speed to V (3.79 vs 3.90 steps/s)", speed=True),
    _t4("t4-speed-dv-close-v", "D+V", ("V",), "within", 0.15,
        "D+V at relatively an equal speed to V (3.34 vs 3.90 steps/s)", speed=True),
    # --- Tables 5-6, pretrain then fine-tune (kind "finetune", synthformer.training.init_from): our "accuracy" is the
    # suite's mean dev accuracy (GLUE), acc_sentiment its SST-2-like task, pair its sentence-pair mean
    # (SuperGLUE: every task multi-segment), pair_vs_single = 100 x pair / single (paper: GLUE pair-task
    # mean / SST-2, computed from Table 5's cells). T5 Base+ is V with ~10M more parameters.
    _t56("t5-glue-rv-above-v", "Table 5", GLUE, "accuracy", "accuracy", "R+V", ("V",), "better", 0.005,
         "R+V above T5 on GLUE by +0.6 points (84.1 vs 83.5)"),
    _t56("t5-glue-rv-above-base-plus", "Table 5", GLUE, "accuracy", "accuracy", "R+V", ("T5 Base+",), "better",
         0.0, "R+V above the parameter-matched T5 Base+ on GLUE (84.1 vs 82.8; D+V's 82.6 is not)"),
    replace(_t56("t5-glue-dv-close-v", "Table 5", GLUE, "accuracy", "accuracy", "D+V", ("V",), "within", 0.03,
                 "D+V level with T5 on GLUE, slightly below (82.6 vs 83.5)"), lean="worse"),
    _t56("t5-glue-r-below-v", "Table 5", GLUE, "accuracy", "accuracy", "R", ("V",), "worse", 0.05,
         "pure R well below T5 on GLUE (75.1 vs 83.5)"),
    _t56("t5-glue-d-below-v", "Table 5", GLUE, "accuracy", "accuracy", "D", ("V",), "worse", 0.05,
         "pure D well below T5 on GLUE (72.0 vs 83.5)"),
    _t56("t5-glue-r-above-dynamicconv", "Table 5", GLUE, "accuracy", "accuracy", "R", ("dynamicconv",), "better",
         0.05, "R 4 to 5 points above dynamic convolution on GLUE (75.1 vs 69.4)"),
    _t56("t5-glue-rv-above-dynamicconv", "Table 5", GLUE, "accuracy", "accuracy", "R+V", ("dynamicconv",), "better",
         0.10, "R+V very substantially above dynamic convolution on GLUE (84.1 vs 69.4)"),
    _t56("t5-single-r-close-v", "Table 5", "SST-2 acc. (ours: the sentiment task)", "acc_sentiment", "single",
         "R", ("V",), "within", 0.03, "R competitive on the single-sentence SST-2 (91.2 vs T5 92.2)"),
    _t56("t5-single-d-close-v", "Table 5", "SST-2 acc. (ours: the sentiment task)", "acc_sentiment", "single",
         "D", ("V",), "within", 0.03, "D competitive on the single-sentence SST-2 (89.9 vs T5 92.2)"),
    _t56("t5-pairs-r-weak", "Table 5", "GLUE pairs / SST-2", "pair_vs_single", "pair_vs_single", "R", ("V",),
         "worse", 0.03, "pure R weak on sentence pairs, fine on SST-2: GLUE 75.1 vs 83.5, SST-2 91.2 vs 92.2"),
    _t56("t5-pairs-d-weak", "Table 5", "GLUE pairs / SST-2", "pair_vs_single", "pair_vs_single", "D", ("V",),
         "worse", 0.03, "pure D weak on sentence pairs, fine on SST-2: GLUE 72.0 vs 83.5, SST-2 89.9 vs 92.2"),
    _t56("t6-superglue-rv-above-v", "Table 6", SGLUE, "pair", "superglue", "R+V", ("V",), "better", 0.0,
         "R+V above T5 on SuperGLUE by +1.9 points (72.2 vs 70.3)"),
    _t56("t6-superglue-rv-above-base-plus", "Table 6", SGLUE, "pair", "superglue", "R+V", ("T5 Base+",), "better",
         0.0, "R+V above the parameter-matched T5 Base+ on SuperGLUE (72.2 vs 70.7; D+V's 69.7 is not)"),
    _t56("t6-superglue-r-above-dynamicconv", "Table 6", SGLUE, "pair", "superglue", "R", ("dynamicconv",), "better",
         0.05, "R 4 to 5 points above dynamic convolution on SuperGLUE (61.1 vs 57.8)"),
    _t56("t6-superglue-rv-above-dynamicconv", "Table 6", SGLUE, "pair", "superglue", "R+V", ("dynamicconv",),
         "better", 0.10, "R+V very substantially above dynamic convolution on SuperGLUE (72.2 vs 57.8)"),
    # --- Table 7, encoding-only classification (k = 32 for the factorized models)
    Claim("t7-agnews-fr-vs-linformer", "Table 7", ("classify-topic",), "AG News acc.", "accuracy", False, "FR",
          ("linformer",), "within", 0.02, _pick(TABLE7, ("FR", "linformer")),
          "FR competitive with Linformer (86.53 vs 86.50)"),
    Claim("t7-agnews-v-above-fr", "Table 7", ("classify-topic",), "AG News acc.", "accuracy", False, "V", ("FR",),
          "better", 0.0, _pick(TABLE7, ("V", "FR")), "V beats FR on AG News (88.83 vs 86.53)"),
    Claim("t7-agnews-frv-best", "Table 7", ("classify-topic",), "AG News acc.", "accuracy", False, "FR+V",
          ("V", "linformer", "FR"), "better", 0.0, _pick(TABLE7, ("FR+V", "V", "linformer", "FR")),
          "FR+V beats V and Linformer (89.13 vs 88.83, 86.50)"),
    Claim("t7-imdb-fr-above-v", "Table 7", ("classify-sentiment",), "IMDB acc.", "accuracy", False, "FR",
          ("V", "linformer"), "better", 0.0, _pick(TABLE7_IMDB, ("FR", "V", "linformer")),
          "FR beats V and Linformer on IMDB (83.39 vs 81.34, 82.86)"),
    Claim("t7-imdb-frv-best", "Table 7", ("classify-sentiment",), "IMDB acc.", "accuracy", False, "FR+V",
          ("V", "linformer", "FR"), "better", 0.0, _pick(TABLE7_IMDB, ("FR+V", "V", "linformer", "FR")),
          "FR+V the best on IMDB (84.61)"),
    # --- Table 7, speed: one steps/s column (TPU) for both tasks; ours: training tokens/s, judged on each task's
    # run apart (a claim per task kind, as a report keys its findings by claim)
    _t7_speed("t7-agnews-speed-frv-below-v", "classify-topic", "FR+V", "worse", 0.0,
              "FR+V slower than V on AG News (0.80 vs 1.09 steps/s)"),
    _t7_speed("t7-agnews-speed-fr-close-v", "classify-topic", "FR", "within", 0.10,
              "FR about as fast as V on AG News (1.10 vs 1.09 steps/s)"),
    _t7_speed("t7-imdb-speed-frv-below-v", "classify-sentiment", "FR+V", "worse", 0.0,
              "FR+V slower than V on IMDB (0.80 vs 1.09 steps/s)"),
    _t7_speed("t7-imdb-speed-fr-close-v", "classify-sentiment", "FR", "within", 0.10,
              "FR about as fast as V on IMDB (1.10 vs 1.09 steps/s)"),
    # --- Long Range Arena (its "Synthesizer" runs R+V); numbers from LRA's paper, not the Synthesizer paper
    _lra("lra-listops-rv-close-v", ("lra-listops",), "LRA ListOps acc.", "accuracy", False, "R+V", ("V",),
         "within", 0.05, {k: LRA[k]["listops"] for k in ("R+V", "V")},
         "Synthesizer level with the Transformer on ListOps (36.99 vs 36.37)"),
    _lra("lra-text-rv-close-v", ("lra-text",), "LRA Text acc.", "accuracy", False, "R+V", ("V",), "within", 0.05,
         {k: LRA[k]["text"] for k in ("R+V", "V")},
         "Synthesizer close to the Transformer on byte-level Text (61.68 vs 64.27)"),
    _lra("lra-image-rv-close-v", ("lra-image",), "LRA Image acc.", "accuracy", False, "R+V", ("V",), "within", 0.05,
         {k: LRA[k]["image"] for k in ("R+V", "V")},
         "Synthesizer close to the Transformer on Image (41.61 vs 42.44)"),
    _lra("lra-avg-rv-below-v", ("lra",), "LRA avg. acc. (ours: over the tasks run)", "accuracy", False, "R+V",
         ("V",), "worse", 0.0, _pick(LRA_AVG, ("R+V", "V")),
         "Synthesizer's LRA average below the Transformer's (52.88 vs 54.39)"),
    _lra("lra-avg-rv-above-linformer", ("lra",), "LRA avg. acc. (ours: over the tasks run)", "accuracy", False,
         "R+V", ("linformer",), "better", 0.0, _pick(LRA_AVG, ("R+V", "linformer")),
         "Synthesizer's LRA average above Linformer's (52.88 vs 51.36)"),
    # at 1K: LRA's efficiency table times byte-level text (numbers.LRA_STEPS_PER_S), so our Text grid (1,023 bytes)
    _lra("lra-speed-rv-vs-v", ("lra-text",), "LRA steps/s at 1K", "tokens_per_s", False, "R+V", ("V",), "better", 0.0,
         {k: LRA_STEPS_PER_S[k][0] for k in ("R+V", "V")},
         "Synthesizer faster than the Transformer at 1K (steps/s 8.7 vs 8.1)"),
    _lra("lra-speed-linformer-fastest", ("lra-text",), "LRA steps/s at 1K", "tokens_per_s", False, "linformer",
         ("V", "R+V"), "better", 0.0, {k: LRA_STEPS_PER_S[k][0] for k in ("linformer", "V", "R+V")},
         "Linformer the fastest at 1K (steps/s 9.3 vs 8.1, 8.7)"),
    _lra("lra-memory-rv-below-v", ("lra-text",), "LRA peak memory (GB) at 1K", "peak_bytes", True, "R+V", ("V",),
         "better", 0.0, {k: LRA_MEMORY_GB[k][0] for k in ("R+V", "V")},
         "Synthesizer uses less memory than the Transformer at 1K (peak GB 0.65 vs 0.85)"),
    # at 4K: judged on one token-mixing layer at that length (kind lra-4k: reproduce/lra.py `long_rows`)
    _lra("lra-speed-rv-vs-v-4k", ("lra-4k",), "LRA steps/s at 4K", "tokens_per_s", False, "R+V", ("V",), "better",
         0.0, {k: LRA_STEPS_PER_S[k][2] for k in ("R+V", "V")},
         "Synthesizer faster than the Transformer at 4K (steps/s 1.9 vs 1.4)"),
    _lra("lra-speed-linformer-fastest-4k", ("lra-4k",), "LRA steps/s at 4K", "tokens_per_s", False, "linformer",
         ("V", "R+V"), "better", 0.0, {k: LRA_STEPS_PER_S[k][2] for k in ("linformer", "V", "R+V")},
         "Linformer the fastest at 4K (steps/s 7.7 vs 1.4, 1.9)"),
    _lra("lra-memory-rv-below-v-4k", ("lra-4k",), "LRA peak memory (GB) at 4K", "peak_bytes", True, "R+V", ("V",),
         "better", 0.0, {k: LRA_MEMORY_GB[k][1] for k in ("R+V", "V")},
         "Synthesizer uses less memory than the Transformer at 4K (peak GB 6.99 vs 9.48)"),
    # --- Section 5, Figures 2-3: trained Synthesizer weights spread more than vanilla's (no numbers)
    Claim("fig2-3-r-var-above-v", "Figures 2-7", ("lm",), WEIGHTS, "weight_var", False, "R", ("V",), "better", 0.0,
          {}, "trained R weights have a higher variance than V's, whose weights gravitate near 0 (Section 5, "
              "Figures 2-3)", learned_on="ppl"),
    Claim("fig2-3-d-var-above-v", "Figures 2-7", ("lm",), WEIGHTS, "weight_var", False, "D", ("V",), "better", 0.0,
          {}, "trained D weights have a higher variance than V's (Section 5, Figures 2-3)", learned_on="ppl"),
)
BY_NAME = {c.name: c for c in CLAIMS}
TABLES = tuple(dict.fromkeys(c.table for c in CLAIMS))


def _table_key(name: str) -> str:
    return name.strip().lower().replace(" ", "")


def select(names: list[str] | None) -> tuple[Claim, ...]:
    """Claims named by claim names or table names ("Table 2", "table2", "LRA"); None or [] = all.

    Raises ClaimError (one line, listing the valid names) for an unknown name."""
    if not names:
        return CLAIMS
    tables = {_table_key(t): t for t in TABLES}
    chosen: dict[str, Claim] = {}
    for raw in names:
        name = raw.strip()
        if name in BY_NAME:
            chosen[name] = BY_NAME[name]
        elif _table_key(name) in tables:
            chosen.update({c.name: c for c in CLAIMS if c.table == tables[_table_key(name)]})
        else:
            raise ClaimError(f"unknown claim or table {name!r}; valid tables: {', '.join(TABLES)}; "
                             f"valid claims: {', '.join(BY_NAME)}")
    return tuple(chosen.values())


def check_kind(kind: str) -> str:
    if kind not in TASK_KINDS:
        raise ClaimError(f"unknown task kind {kind!r}; valid: {', '.join(TASK_KINDS)}")
    return kind

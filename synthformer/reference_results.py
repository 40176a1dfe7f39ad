"""Published numbers to set our results beside (copied as data; the shared notes are not shipped).

Source: Tay, Bahri, Metzler, Juan, Zhao, Zheng, "Synthesizer: Rethinking Self-Attention for
Transformer Models", ICML 2021 (arXiv 2005.00743): Table 2 (WMT'14 En-De BLEU, LM1B perplexity),
Table 3 (CNN/DailyMail ROUGE-L, PersonaChat dialogue), Table 4 (C4 masked LM log perplexity, speed),
Table 5 (SST-2) and Table 7 (AG News, IMDB accuracy); and the Long Range Arena table. All were measured at full scale on TPUs: compare orderings and relative
gaps with ours, never absolute values.

Keys are our variant names: the paper's short synthesizer specs ("V", "R", "D+V", ...) and the
baseline mixer names ("dynamicconv", "lightconv", "linformer").
"""
from __future__ import annotations

LABEL = "paper (full scale, TPU)"
CITATION = "Tay et al., Synthesizer: Rethinking Self-Attention for Transformer Models, ICML 2021"

# Table 2: parameters of the LM models and LM1B perplexity; WMT'14 En-De / En-Fr BLEU (NMT models).
TABLE2 = {
    "V": {"params_lm": "70M", "lm1b_ppl": 38.21, "params_nmt": "67M", "ende_bleu": 27.67, "enfr_bleu": 41.57},
    "Fix": {"params_lm": "53M", "lm1b_ppl": 50.52, "params_nmt": "61M", "ende_bleu": 23.89, "enfr_bleu": 38.31},
    "R": {"params_lm": "58M", "lm1b_ppl": 40.60, "params_nmt": "67M", "ende_bleu": 27.27, "enfr_bleu": 41.12},
    "FR": {"params_lm": "53M", "lm1b_ppl": 42.40, "params_nmt": "61M", "ende_bleu": 27.30, "enfr_bleu": 41.12},
    "D": {"params_lm": "53M", "lm1b_ppl": 40.88, "params_nmt": "62M", "ende_bleu": 27.43, "enfr_bleu": 41.39},
    "FD": {"params_lm": "53M", "lm1b_ppl": 41.20, "params_nmt": "61M", "ende_bleu": 27.32, "enfr_bleu": 41.57},
    "R+D": {"params_lm": "58M", "lm1b_ppl": 42.35, "params_nmt": "67M", "ende_bleu": 27.68, "enfr_bleu": 41.21},
    "D+V": {"params_lm": "70M", "lm1b_ppl": 37.27, "params_nmt": "74M", "ende_bleu": 27.57, "enfr_bleu": 41.38},
    "R+V": {"params_lm": "70M", "lm1b_ppl": 40.05, "params_nmt": "73M", "ende_bleu": 28.47, "enfr_bleu": 41.85},
}

# Table 3: PersonaChat dialogue generation (BLEU-4, ROUGE-L) and CNN/DailyMail summarization ROUGE-L.
TABLE3 = {
    "V": {"dialogue_b4": 3.20, "dialogue_rl": 13.38, "sum_rl": 35.77},
    "R": {"dialogue_b4": 2.25, "dialogue_rl": 15.00, "sum_rl": 33.10},
    "D": {"dialogue_b4": 4.02, "dialogue_rl": 15.22, "sum_rl": 33.70},
    "D+V": {"dialogue_b4": 3.57, "dialogue_rl": 14.22, "sum_rl": 36.02},
    "R+V": {"dialogue_b4": 2.28, "dialogue_rl": 14.79, "sum_rl": 35.95},
}

# Table 4: C4 masked language modelling, validation log perplexity; training steps/s on 2x2 TPU v3.
TABLE4 = {"V": 1.865, "dynamicconv": 2.040, "lightconv": 1.972, "D": 1.965, "R": 1.972,
          "R+V": 1.849, "D+V": 1.832}
TABLE4_STEPS_PER_S = {"V": 3.90, "dynamicconv": 2.65, "lightconv": 4.05, "D": 3.61, "R": 4.26,
                      "R+V": 3.79, "D+V": 3.34}

# Table 5: SST-2 accuracy alone (a single-sentence task: no cross-sentence attention needed).
TABLE5_SST2 = {"V": 92.2, "R": 91.2, "D": 89.9}

# Table 7: AG News and IMDB accuracy (encoding-only classification; k = 32 for the factorized models).
TABLE7 = {"V": 88.83, "linformer": 86.50, "FR": 86.53, "FR+V": 89.13}
TABLE7_IMDB = {"V": 81.34, "linformer": 82.86, "FR": 83.39, "FR+V": 84.61}

# Long Range Arena (Tay et al. 2020, arXiv 2011.04006), accuracy %. Its "Synthesizer" is listed
# under R+V: the released LRA configs run Random + dot product for every task.
LRA_LABEL = "Long Range Arena (Tay et al. 2020)"
LRA = {"V": {"listops": 36.37, "text": 64.27, "retrieval": 57.46, "image": 42.44, "pathfinder": 71.40},
       "linformer": {"listops": 35.70, "text": 53.94, "retrieval": 52.27, "image": 38.56, "pathfinder": 76.34},
       "R+V": {"listops": 36.99, "text": 61.68, "retrieval": 54.67, "image": 41.61, "pathfinder": 69.45}}

# Our task kinds: the task plus, where the data says it, which of the paper's benchmarks it stands in
# for. A comparison shows the paper's columns of its own kind only and checks only its kind's claims.
TASK_KINDS = ("lm", "mlm", "seq2seq", "seq2seq-mt", "seq2seq-dialogue", "seq2seq-summarization",
              "classify", "classify-topic", "classify-sentiment", "lra-listops", "lra-image")
# (task, registry data source) -> kind; any other data keeps the bare task name (no paper benchmark).
DATA_KINDS = {("seq2seq", "bible-en-es"): "seq2seq-mt", ("seq2seq", "chitchat"): "seq2seq-dialogue",
              ("classify", "fortunes"): "classify-topic", ("classify", "sentiment"): "classify-sentiment",
              ("classify", "listops"): "lra-listops", ("classify", "fashion-mnist"): "lra-image"}


def task_kind(task: str, data: str) -> str:
    """The task kind of a run: e.g. ("seq2seq", "bible-en-es") -> "seq2seq-mt"; ("lm", anything) -> "lm"."""
    return DATA_KINDS.get((task, data), task)


def _t2(key):
    return lambda v: TABLE2.get(v, {}).get(key)


def _t3(key):
    return lambda v: TABLE3.get(v, {}).get(key)


def _lra(key):
    return lambda v: LRA.get(v, {}).get(key)


# Per task kind: the published columns shown beside it, as (column title, lookup(variant) -> value).
COLUMNS = {
    "lm": [("params LM", _t2("params_lm")), ("LM1B PPL", _t2("lm1b_ppl"))],
    "seq2seq-mt": [("params NMT", _t2("params_nmt")), ("EnDe BLEU", _t2("ende_bleu")),
                   ("EnFr BLEU", _t2("enfr_bleu"))],
    "seq2seq-dialogue": [("dialogue B4", _t3("dialogue_b4")), ("dialogue RL", _t3("dialogue_rl"))],
    "seq2seq-summarization": [("CNN/DM RL", _t3("sum_rl"))],
    "mlm": [("C4 MLM log-PPL", TABLE4.get)],
    "classify-topic": [("AG News acc.", TABLE7.get)],
    "classify-sentiment": [("IMDB acc.", TABLE7_IMDB.get), ("SST-2 acc.", TABLE5_SST2.get)],
    "lra-listops": [("LRA ListOps acc.", _lra("listops"))],
    "lra-image": [("LRA Image acc.", _lra("image"))],
}


def paper_columns(kind: str, variant: str) -> dict:
    """{column title: published value or None} for one of our variants on one task kind (see
    `task_kind`; a bare task name such as "lm" or "mlm" is its own kind)."""
    return {title: get(variant) for title, get in COLUMNS.get(kind, [])}

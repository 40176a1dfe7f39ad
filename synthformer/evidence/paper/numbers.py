"""Published numbers to set our results beside (copied as data; the shared notes are not shipped).

Source: Tay, Bahri, Metzler, Juan, Zhao, Zheng, "Synthesizer: Rethinking Self-Attention for
Transformer Models", ICML 2021 (arXiv 2005.00743): Table 2 (WMT'14 En-De BLEU, LM1B perplexity),
Table 3 (CNN/DailyMail ROUGE-L, PersonaChat dialogue BLEU-4, ROUGE-L, Meteor, CIDEr), Table 4 (C4
masked LM log perplexity, speed),
Tables 5-6 (GLUE / SuperGLUE after pretraining; SST-2) and Table 7 (AG News, IMDB accuracy, steps/s);
and the Long Range Arena tables (accuracy; steps/s and peak memory). All were measured at full scale on
TPUs: compare orderings and relative gaps with ours, never absolute values.

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
    "V": {"dialogue_b4": 3.20, "dialogue_rl": 13.38, "dialogue_meteor": 5.89, "dialogue_cider": 18.94, "sum_rl": 35.77},
    "R": {"dialogue_b4": 2.25, "dialogue_rl": 15.00, "dialogue_meteor": 6.42, "dialogue_cider": 19.57, "sum_rl": 33.10},
    "D": {"dialogue_b4": 4.02, "dialogue_rl": 15.22, "dialogue_meteor": 6.61, "dialogue_cider": 20.54, "sum_rl": 33.70},
    "D+V": {"dialogue_b4": 3.57, "dialogue_rl": 14.22, "dialogue_meteor": 6.32, "dialogue_cider": 18.87,
            "sum_rl": 36.02},
    "R+V": {"dialogue_b4": 2.28, "dialogue_rl": 14.79, "dialogue_meteor": 6.39, "dialogue_cider": 19.09,
            "sum_rl": 35.95},
}

# Table 4: C4 masked language modelling, validation log perplexity; training steps/s on 2x2 TPU v3.
TABLE4 = {"V": 1.865, "dynamicconv": 2.040, "lightconv": 1.972, "D": 1.965, "R": 1.972,
          "R+V": 1.849, "D+V": 1.832}
TABLE4_STEPS_PER_S = {"V": 3.90, "dynamicconv": 2.65, "lightconv": 4.05, "D": 3.61, "R": 4.26,
                      "R+V": 3.79, "D+V": 3.34}
TABLE4_PARAMS = {"V": "223M", "dynamicconv": "257M", "lightconv": "224M", "D": "224M", "R": "254M",
                 "R+V": "292M", "D+V": "243M"}

# Table 5: SST-2 accuracy alone (a single-sentence task: no cross-sentence attention needed).
TABLE5_SST2 = {"V": 92.2, "R": 91.2, "D": 89.9}

# Tables 5 and 6: GLUE / SuperGLUE dev scores after C4 pretraining (T5 small, en-mix, the two co-trained).
# A cell with two numbers (F1/accuracy, Pearson/Spearman, matched/mismatched) is kept as the pair.
# "T5 Base+" is T5 with about as many parameters as the +V mixtures (not a variant of ours).
TABLE5 = {
    "V": {"glue": 83.5, "cola": 53.1, "sst2": 92.2, "mrpc": (92.0, 88.7), "stsb": (89.1, 88.9), "qqp": (88.2, 91.2),
          "mnli": (84.7, 85.0), "qnli": 91.7, "rte": 76.9},
    "T5 Base+": {"glue": 82.8, "cola": 54.3, "sst2": 92.9, "mrpc": (88.0, 83.8), "stsb": (85.2, 85.4),
                 "qqp": (88.3, 91.2), "mnli": (84.2, 84.3), "qnli": 91.4, "rte": 79.1},
    "dynamicconv": {"glue": 69.4, "cola": 33.9, "sst2": 90.6, "mrpc": (82.6, 72.5), "stsb": (60.7, 63.1),
                    "qqp": (84.2, 88.2), "mnli": (73.8, 75.1), "qnli": 84.4, "rte": 58.1},
    "R": {"glue": 75.1, "cola": 41.2, "sst2": 91.2, "mrpc": (85.9, 79.4), "stsb": (74.0, 74.3), "qqp": (85.5, 89.0),
          "mnli": (77.6, 78.1), "qnli": 87.6, "rte": 59.2},
    "D": {"glue": 72.0, "cola": 18.9, "sst2": 89.9, "mrpc": (86.4, 79.4), "stsb": (75.3, 75.5), "qqp": (85.2, 88.3),
          "mnli": (77.4, 78.1), "qnli": 86.9, "rte": 57.4},
    "D+V": {"glue": 82.6, "cola": 48.6, "sst2": 92.4, "mrpc": (91.2, 87.7), "stsb": (88.9, 89.0), "qqp": (88.6, 91.5),
            "mnli": (84.3, 84.8), "qnli": 91.7, "rte": 75.1},
    "R+V": {"glue": 84.1, "cola": 53.3, "sst2": 92.2, "mrpc": (91.2, 87.7), "stsb": (89.3, 88.9), "qqp": (88.6, 91.4),
            "mnli": (85.0, 84.6), "qnli": 92.3, "rte": 81.2},
}
TABLE6_SUPERGLUE = {"V": 70.3, "T5 Base+": 70.7, "dynamicconv": 57.8, "R": 61.1, "D": 58.5, "D+V": 69.7, "R+V": 72.2}
GLUE_PAIR_TASKS = ("mrpc", "stsb", "qqp", "mnli", "qnli", "rte")  # sentence pairs: self-attention is also cross-sentence
GLUE_SINGLE_TASKS = ("sst2",)  # the single-sentence task the paper points to (CoLA, also single, measures grammar)


def _cell(value) -> float:
    return sum(value) / len(value) if isinstance(value, tuple) else value


def glue_summary(variant: str) -> dict | None:
    """The paper's Table 5/6 numbers of `variant` as our fine-tuning suite's metrics: "accuracy" is the
    GLUE score, "superglue" the SuperGLUE score, "single" SST-2, "pair" the mean of the pair tasks
    (two-number cells averaged), "pair_vs_single" = 100 x pair / single. None for a variant not in them."""
    row = TABLE5.get(variant)
    if row is None:
        return None
    pair = sum(_cell(row[t]) for t in GLUE_PAIR_TASKS) / len(GLUE_PAIR_TASKS)
    single = sum(_cell(row[t]) for t in GLUE_SINGLE_TASKS) / len(GLUE_SINGLE_TASKS)
    return {"accuracy": row["glue"], "superglue": TABLE6_SUPERGLUE[variant], "single": single, "pair": round(pair, 2),
            "pair_vs_single": round(100 * pair / single, 2)}


# Table 7: AG News and IMDB accuracy (encoding-only classification; k = 32 for the factorized models).
TABLE7 = {"V": 88.83, "linformer": 86.50, "FR": 86.53, "FR+V": 89.13}
TABLE7_IMDB = {"V": 81.34, "linformer": 82.86, "FR": 83.39, "FR+V": 84.61}
TABLE7_STEPS_PER_S = {"V": 1.09, "linformer": 1.09, "FR": 1.10, "FR+V": 0.80}

# Long Range Arena (Tay et al. 2020, arXiv 2011.04006), accuracy %. Its "Synthesizer" is listed
# under R+V: the released LRA configs run Random + dot product for every task.
LRA_LABEL = "Long Range Arena (Tay et al. 2020)"
LRA = {"V": {"listops": 36.37, "text": 64.27, "retrieval": 57.46, "image": 42.44, "pathfinder": 71.40},
       "linformer": {"listops": 35.70, "text": 53.94, "retrieval": 52.27, "image": 38.56, "pathfinder": 76.34},
       "R+V": {"listops": 36.99, "text": 61.68, "retrieval": 54.67, "image": 41.61, "pathfinder": 69.45}}
LRA_AVG = {"V": 54.39, "linformer": 51.36, "R+V": 52.88}  # the five tasks' mean (Path-X excluded)
# LRA's efficiency table (byte-level text, batch 32, TPU v3): training steps/s at 1K / 2K / 4K tokens and
# peak memory (GB) at 1K / 4K tokens.
LRA_LENGTHS = (1024, 2048, 4096)
LRA_STEPS_PER_S = {"V": (8.1, 4.9, 1.4), "R+V": (8.7, 5.7, 1.9), "linformer": (9.3, 9.1, 7.7)}
LRA_MEMORY_GB = {"V": (0.85, 9.48), "R+V": (0.65, 6.99), "linformer": (0.37, 0.99)}  # at 1K, 4K

# Our task kinds: the task plus, where the data says it, which of the paper's benchmarks it stands in
# for. A comparison shows the paper's columns of its own kind only and checks only its kind's claims.
TASK_KINDS = ("lm", "mlm", "seq2seq", "seq2seq-mt", "seq2seq-dialogue", "seq2seq-summarization",
              "classify", "classify-topic", "classify-sentiment", "lra-listops", "lra-text", "lra-image",
              "lra", "lra-4k", "finetune")
# lra-text: LRA's byte-level text task; lra: the LRA summary rows (each variant's mean accuracy over the
# LRA tasks run, "accuracy"); lra-4k: one token-mixing layer timed at LRA's longest length (speed, memory); finetune: pretrain an MLM encoder, fine-tune on a GLUE-like suite (Tables 5-6)
# (task, registry data source) -> kind; any other data keeps the bare task name (no paper benchmark).
DATA_KINDS = {("seq2seq", "bible-en-es"): "seq2seq-mt", ("seq2seq", "chitchat"): "seq2seq-dialogue",
              ("classify", "fortunes"): "classify-topic", ("classify", "sentiment"): "classify-sentiment",
              ("classify", "listops"): "lra-listops", ("classify", "listops-lra"): "lra-listops",
              ("classify", "fashion-mnist"): "lra-image", ("seq2seq", "manpages-summ"): "seq2seq-summarization",
              ("seq2seq", "debian-descriptions"): "seq2seq-summarization"}


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
    "lra-text": [("LRA Text acc.", _lra("text"))],
    "lra-image": [("LRA Image acc.", _lra("image"))],
    "lra": [("LRA avg. acc.", LRA_AVG.get)],
    "finetune": [("GLUE", lambda v: (glue_summary(v) or {}).get("accuracy")),
                 ("SuperGLUE", lambda v: (glue_summary(v) or {}).get("superglue")),
                 ("SST-2", lambda v: (glue_summary(v) or {}).get("single")),
                 ("GLUE pair mean", lambda v: (glue_summary(v) or {}).get("pair"))],
}


def paper_columns(kind: str, variant: str) -> dict:
    """{column title: published value or None} for one of our variants on one task kind (see
    `task_kind`; a bare task name such as "lm" or "mlm" is its own kind)."""
    return {title: get(variant) for title, get in COLUMNS.get(kind, [])}

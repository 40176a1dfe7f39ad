"""Published numbers to set our results beside (copied as data; the shared notes are not shipped).

Source: Tay, Bahri, Metzler, Juan, Zhao, Zheng, "Synthesizer: Rethinking Self-Attention for
Transformer Models", ICML 2021 (arXiv 2005.00743): Table 2 (WMT'14 En-De BLEU, LM1B perplexity),
Table 3 (CNN/DailyMail ROUGE-L, PersonaChat dialogue), Table 4 (C4 masked LM log perplexity) and
Table 7 (AG News accuracy). All were measured at full scale on TPUs: compare orderings and relative
gaps with ours, never absolute values.

Keys are our variant names: the paper's short synthesizer specs ("V", "R", "D+V", ...) and the
baseline mixer names ("dynamicconv", "lightconv", "linformer").
"""
from __future__ import annotations

LABEL = "paper (full scale, TPU)"
CITATION = "Tay et al., Synthesizer: Rethinking Self-Attention for Transformer Models, ICML 2021"

# Table 2: parameters of the LM models and LM1B perplexity; WMT'14 En-De BLEU (NMT models).
TABLE2 = {
    "V": {"params_lm": "70M", "lm1b_ppl": 38.21, "params_nmt": "67M", "ende_bleu": 27.67},
    "Fix": {"params_lm": "53M", "lm1b_ppl": 50.52, "params_nmt": "61M", "ende_bleu": 23.89},
    "R": {"params_lm": "58M", "lm1b_ppl": 40.60, "params_nmt": "67M", "ende_bleu": 27.27},
    "FR": {"params_lm": "53M", "lm1b_ppl": 42.40, "params_nmt": "61M", "ende_bleu": 27.30},
    "D": {"params_lm": "53M", "lm1b_ppl": 40.88, "params_nmt": "62M", "ende_bleu": 27.43},
    "FD": {"params_lm": "53M", "lm1b_ppl": 41.20, "params_nmt": "61M", "ende_bleu": 27.32},
    "R+D": {"params_lm": "58M", "lm1b_ppl": 42.35, "params_nmt": "67M", "ende_bleu": 27.68},
    "D+V": {"params_lm": "70M", "lm1b_ppl": 37.27, "params_nmt": "74M", "ende_bleu": 27.57},
    "R+V": {"params_lm": "70M", "lm1b_ppl": 40.05, "params_nmt": "73M", "ende_bleu": 28.47},
}

# Table 3: PersonaChat dialogue generation (BLEU-4, ROUGE-L) and CNN/DailyMail summarization ROUGE-L.
TABLE3 = {
    "V": {"dialogue_b4": 3.20, "dialogue_rl": 13.38, "sum_rl": 35.77},
    "R": {"dialogue_b4": 2.25, "dialogue_rl": 15.00, "sum_rl": 33.10},
    "D": {"dialogue_b4": 4.02, "dialogue_rl": 15.22, "sum_rl": 33.70},
    "D+V": {"dialogue_b4": 3.57, "dialogue_rl": 14.22, "sum_rl": 36.02},
    "R+V": {"dialogue_b4": 2.28, "dialogue_rl": 14.79, "sum_rl": 35.95},
}

# Table 4: C4 masked language modelling, validation log perplexity.
TABLE4 = {"V": 1.865, "dynamicconv": 2.040, "lightconv": 1.972, "D": 1.965, "R": 1.972,
          "R+V": 1.849, "D+V": 1.832}

# Table 7: AG News accuracy (encoding-only classification; k = 32 for the factorized models).
TABLE7 = {"V": 88.83, "linformer": 86.50, "FR": 86.53, "FR+V": 89.13}

# Per task of ours: the published columns shown beside it, as (column title, lookup(variant) -> value).
COLUMNS = {
    "lm": [("params LM", lambda v: TABLE2.get(v, {}).get("params_lm")),
           ("LM1B PPL", lambda v: TABLE2.get(v, {}).get("lm1b_ppl")),
           ("dialogue B4", lambda v: TABLE3.get(v, {}).get("dialogue_b4")),
           ("dialogue RL", lambda v: TABLE3.get(v, {}).get("dialogue_rl"))],
    "seq2seq": [("params NMT", lambda v: TABLE2.get(v, {}).get("params_nmt")),
                ("EnDe BLEU", lambda v: TABLE2.get(v, {}).get("ende_bleu")),
                ("dialogue B4", lambda v: TABLE3.get(v, {}).get("dialogue_b4")),
                ("dialogue RL", lambda v: TABLE3.get(v, {}).get("dialogue_rl"))],
    "mlm": [("C4 MLM log-PPL", lambda v: TABLE4.get(v))],
    "classify": [("AG News acc.", lambda v: TABLE7.get(v))],
}


def paper_columns(task: str, variant: str) -> dict:
    """{column title: published value or None} for one of our variants on one of our tasks."""
    return {title: get(variant) for title, get in COLUMNS.get(task, [])}

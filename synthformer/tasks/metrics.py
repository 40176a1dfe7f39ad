"""Every metric a result row carries, with its direction declared once: the one place that says whether
lower is better, and which metrics each task reports (its first is the task's main metric)."""
from __future__ import annotations

# Per task: (column title, result key, format) of its metrics; the first is the task's main metric.
METRIC_COLUMNS = {
    "lm": [("valid PPL", "ppl", "{:.2f}")],
    "mlm": [("valid PPL", "ppl", "{:.2f}"), ("log PPL", "loss", "{:.3f}")],
    "seq2seq": [("BLEU", "bleu", "{:.2f}"), ("ROUGE-L", "rougeL", "{:.2f}"), ("valid PPL", "ppl", "{:.2f}")],
    "classify": [("accuracy %", "accuracy", "{:.2f}")],
}
# Metrics where a smaller value is the better one; every other metric (accuracy, BLEU, ROUGE, tokens/s) is
# higher-is-better. peak_bytes is a measurement beside the metrics (memory claims), lower is better too.
LOWER_IS_BETTER = frozenset({"ppl", "loss", "peak_bytes"})
METRIC_TITLES = {"bleu": "BLEU", "rougeL": "ROUGE-L", "ppl": "PPL"}  # short names in findings
# The range each metric can take (None: unbounded on that side): reports clip intervals to it, so an accuracy
# interval never reads above 100. Metrics on a 0-100 scale (POINT_METRICS) change in points, the others relatively.
METRIC_RANGE = {"accuracy": (0.0, 100.0), "bleu": (0.0, 100.0), "rougeL": (0.0, 100.0), "chrf": (0.0, 100.0),
                "ppl": (1.0, None), "loss": (0.0, None), "tokens_per_s": (0.0, None)}
POINT_METRICS = frozenset({"accuracy", "bleu", "rougeL", "chrf"})
# Metrics that are a share of evaluation items (a Wilson interval over the items applies).
PROPORTION_METRICS = frozenset({"accuracy"})


def clip_to_range(metric: str, lo: float, hi: float) -> tuple[float, float]:
    """(lo, hi) cut to the values `metric` can take (`METRIC_RANGE`)."""
    low, high = METRIC_RANGE.get(metric, (None, None))
    if low is not None:
        lo, hi = max(lo, low), max(hi, low)
    if high is not None:
        lo, hi = min(lo, high), min(hi, high)
    return lo, hi


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of `metric` is better."""
    return metric in LOWER_IS_BETTER


def main_metric(task: str) -> str | None:
    """The key of the task's main metric (the first of its columns), None for an unknown task."""
    return METRIC_COLUMNS[task][0][1] if task in METRIC_COLUMNS else None


def scalars(metrics: dict | None) -> dict:
    """The scalar metrics of an evaluation (lists and tables, such as decoded examples, left out)."""
    return {k: v for k, v in (metrics or {}).items() if not isinstance(v, (list, dict))}

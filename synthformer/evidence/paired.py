"""Paired item errors: the evaluation-item part of a gap's interval when every compared run kept its items.

Variants (and seeds) of a comparison are scored on the same evaluation items, so an item that is hard for one
is usually hard for the other, and that shared difficulty cancels in their gap. Combining each run's own item
standard error as if the runs had been scored on different items ignores it (issue 48: 2.71 points unpaired
against 1.56 paired on a 528-item V vs FR sentiment pair). Each run's evaluation keeps a per-item record
(``"items"`` beside its metrics, `synthformer.tasks.base.loss_items`, the classify task's per-item correctness,
seq2seq's per-sentence BLEU statistics and ROUGE-L), and `gap_item_se` resamples item indices jointly across
every compared variant and seed (`synthformer.utils.stats.paired_bootstrap_se`). A fine-tuning suite's seed row
keeps each task's record (`suite_items`), and its means over tasks resample every task's items on their own
(`synthformer.utils.stats.stratified_bootstrap_se`): the tasks are separate evaluation sets.

`run_items` reads one run's record of a metric as an array, `value` recomputes the metric from rows of it,
`gap_item_se` gives the paired standard error of a gap -- or None where a run has no record (older cells),
so that the judge keeps the unpaired item error there.
"""
from __future__ import annotations

import itertools
import math
import statistics
from typing import Callable

from ..utils.stats import N_BOOT, stratified_bootstrap_se

# metric -> the part of a run's "items" record it is computed from
SOURCES = {"accuracy": "correct", "loss": "loss", "ppl": "loss", "bleu": "bleu", "rougeL": "rougeL"}


def run_items(run: dict, metric: str):
    """(fingerprint, (N, k) array) of `metric`'s per-item record in one (per-seed) row, or None when the row
    has none for it. The fingerprint (the labels' hash, or the per-item prediction counts) says whether two
    runs were scored on the same items in the same order."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    items, source = run.get("items"), SOURCES.get(metric)
    if not isinstance(items, dict) or source is None:
        return None
    count = tuple(items.get("count") or ())
    if source == "correct" and isinstance(items.get("correct"), str):
        arr = np.frombuffer(items["correct"].encode(), dtype=np.uint8).astype(np.float64)[:, None] - ord("0")
        return (items.get("key"), count), arr
    if source == "loss" and items.get("loss_sum") and len(items["loss_sum"]) == len(count):
        return ("loss", count), np.column_stack([np.asarray(items["loss_sum"], float), np.asarray(count, float)])
    text = items.get("text") or {}
    if source in text and text[source]:
        arr = np.asarray(text[source], dtype=np.float64)
        return ("text", len(arr), count), arr.reshape(len(arr), -1)
    return None


def value(metric: str, rows) -> float:
    """`metric` of the items whose records are `rows` (an array from `run_items`), as the task computes it."""
    if metric == "accuracy":
        return 100.0 * float(rows[:, 0].mean())
    if metric in ("loss", "ppl"):
        loss = float(rows[:, 0].sum()) / max(float(rows[:, 1].sum()), 1.0)
        return math.exp(min(loss, 50.0)) if metric == "ppl" else loss
    if metric == "rougeL":
        return 100.0 * float(rows[:, 0].mean())
    import sacrebleu  # bleu: corpus BLEU of the summed sentence statistics, as text_scores
    return float(sacrebleu.BLEU()._compute_score_from_stats(rows.sum(axis=0).tolist()).score)


def suite_items(records: dict[str, dict], groups: dict[str, list[str]]) -> dict | None:
    """The per-item record of a fine-tuning suite's seed row: each task's classification record (``records``,
    {task: its evaluation's "items"}, kept to what accuracy needs) and the tasks each mean is over (``groups``,
    e.g. {"accuracy": every task, "single": [...], "pair": [...]}); None unless every task kept one."""
    if not records or not all(isinstance(r, dict) and isinstance(r.get("correct"), str) for r in records.values()):
        return None
    return {"tasks": {t: {k: r[k] for k in ("n", "key", "correct") if k in r} for t, r in records.items()},
            "groups": {k: list(v) for k, v in groups.items() if v}}


def _suite_strata(items: dict, metric: str):
    """`_strata` of a suite's seed row: the accuracy records of the tasks `metric` is over -- acc_<task> one,
    a mean ("accuracy", "single", "pair") its group, pair_vs_single (100 x pair / single) both groups."""
    groups = items.get("groups") or {}
    parts = ([[metric[4:]]] if metric.startswith("acc_") else [groups.get("pair"), groups.get("single")]
             if metric == "pair_vs_single" else [groups.get(metric)])
    if not all(parts):
        return None
    tasks = [t for part in parts for t in part]
    found = [run_items({"items": items["tasks"].get(t)}, "accuracy") for t in tasks]
    if any(f is None for f in found):
        return None
    sizes = [len(part) for part in parts]

    def statistic(strata: list) -> float:
        means = [statistics.fmean(value("accuracy", s) for s in strata[i - n:i])
                 for i, n in zip(itertools.accumulate(sizes), sizes)]
        if len(means) == 1:
            return means[0]
        return 100.0 * means[0] / means[1] if means[1] else math.nan  # a resample with no single item right

    return tuple(zip(tasks, (f[0] for f in found))), [f[1] for f in found], statistic


def _strata(run: dict, metric: str) -> tuple[tuple, list, Callable] | None:
    """(fingerprint, per-stratum arrays, statistic of those arrays) of `metric` in one row: a task's row is one
    stratum (`run_items`), a suite's seed row one per task it averages (`_suite_strata`); None without a record."""
    items = run.get("items")
    if isinstance(items, dict) and isinstance(items.get("tasks"), dict):
        return _suite_strata(items, metric)
    found = run_items(run, metric)
    return None if found is None else (found[0], [found[1]], lambda strata: value(metric, strata[0]))


def gap_item_se(metric: str, lower_is_better: bool, a_runs: list[dict], b_runs: list[dict],
                paired_seeds: bool, n_boot: int = N_BOOT) -> tuple[float, int] | None:
    """(standard error, items) of the relative gap of A against B over their evaluation items, every run's
    items resampled with the same indices (`stratified_bootstrap_se`: a suite's tasks each on their own); the
    gap is the mean of the per-seed gaps when `paired_seeds` (the runs of A and B in the same order, one per
    shared seed), else the gap of the means. None when a run has no record of the metric or the runs were not
    scored on the same items, or where a resample leaves the metric undefined (a ratio over 0)."""
    found = [_strata(r, metric) for r in (*a_runs, *b_runs)]
    if not a_runs or not b_runs or any(f is None for f in found) or len({f[0] for f in found}) != 1:
        return None
    runs = [strata for _, strata, _ in found]
    if len({tuple(len(a) for a in strata) for strata in runs}) != 1:
        return None
    sign, n_a, statistic = (1.0 if lower_is_better else -1.0), len(a_runs), found[0][2]

    def rel(a, b):
        return sign * (a - b) / (abs(b) or 1.0)

    def gap(sample):
        a = [statistic(s) for s in sample[:n_a]]
        b = [statistic(s) for s in sample[n_a:]]
        if paired_seeds:
            return statistics.fmean(rel(x, y) for x, y in zip(a, b))
        return rel(statistics.fmean(a), statistics.fmean(b))

    se = stratified_bootstrap_se(runs, gap, n_boot=n_boot)
    return (se, sum(len(a) for a in runs[0])) if math.isfinite(se) else None

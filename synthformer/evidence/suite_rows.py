"""The fine-tuning suite's tasks and what its runs become: the task table (`SUITE`), a seed's metrics from its
per-task accuracies (`summarize`, means over `task_groups`), a variant's row over its seeds (`variant_row`), the
majority-class floor row (`floor_row`), the Tables 5-6 claims (`suite_findings`) and report.md
(`report_markdown`). `synthformer.evidence.suite` trains the runs these are computed from.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .judge import finding_line, judge_rows
from .paper.claims import select as select_claims
from .paper.numbers import CITATION, LABEL, TABLE5, TABLE6_SUPERGLUE, glue_summary
from .rows import intervals, shape_text, with_floor
from .tables import _fmt_stat, markdown_table, table_markdown, tuning_markdown
from ..utils.stats import mean_se_independent, mean_std

KIND = "finetune"  # the task kind of the report (reference_results.TASK_KINDS)


@dataclass(frozen=True)
class SuiteTask:
    """One task of the fine-tuning suite."""

    data: str  # registry source (classify)
    pair: bool  # sentence pairs (True) or single sentences
    stands_for: str  # the GLUE task it plays


SUITE: dict[str, SuiteTask] = {
    "sentiment": SuiteTask("sentiment", False, "SST-2: movie-review sentence sentiment (vaderSentiment ratings)"),
    "topic": SuiteTask("fortunes", False, "topic classification of Debian fortunes (single sentence; AG News-like)"),
    "paraphrase": SuiteTask("bible-paraphrase", True, "MRPC/QQP: KJV vs WEB, the same verse or a nearby other verse"),
}


BASE_PLUS = "T5 Base+"  # V with a wider FFN: the parameter count of the largest +V mixture (matched_ffn)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def task_groups(tasks: list[str]) -> dict[str, list[str]]:
    """The tasks each suite mean is over: "accuracy" all, "single" the single-sentence ones, "pair" the pairs."""
    return {"accuracy": list(tasks), "single": [t for t in tasks if not SUITE[t].pair],
            "pair": [t for t in tasks if SUITE[t].pair]}


def summarize(accuracies: dict[str, float], tasks: list[str], ses: dict[str, float | None] | None = None) -> dict:
    """The suite metrics of one fine-tuned variant from its per-task accuracies: acc_<task>, the
    mean ("accuracy"), the single-sentence and pair means, and pair_vs_single = 100 x pair / single.
    With `ses` (each task's bootstrap SE over its dev examples) every metric gets its "<metric>_se":
    the tasks' dev sets are independent, so a mean's SE is sqrt(sum se^2) / n, and the ratio's is
    the delta method's ratio x sqrt((se_pair / pair)^2 + (se_single / single)^2)."""
    metrics = {f"acc_{t}": accuracies[t] for t in tasks}
    groups = task_groups(tasks)
    for key, members in groups.items():
        if members:
            metrics[key] = _mean([accuracies[t] for t in members])
    single, pair = metrics.get("single"), metrics.get("pair")
    if single and pair is not None:
        metrics["pair_vs_single"] = 100.0 * pair / single
    if ses is not None:
        for t in tasks:
            if ses.get(t) is not None:
                metrics[f"acc_{t}_se"] = ses[t]
        for key, members in groups.items():
            se = mean_se_independent([ses.get(t) for t in members]) if members else None
            if se is not None:
                metrics[f"{key}_se"] = se
        if "pair_vs_single" in metrics and metrics.get("pair_se") is not None and metrics.get("single_se") is not None:
            rel = math.hypot(metrics["pair_se"] / pair if pair else 0.0, metrics["single_se"] / single)
            metrics["pair_vs_single_se"] = metrics["pair_vs_single"] * rel
    return metrics


def suite_findings(results: dict) -> list[dict]:
    """The Tables 5-6 claims judged on a suite's results (its rows and floor)."""
    return judge_rows(with_floor(results), KIND, select_claims(["Table 5", "Table 6"]))


def floor_row(floors: dict, tasks: list[str], seeds: list[int], split: str = "valid") -> dict | None:
    """The suite's floor row: each task's majority-class accuracy on `split` (`floors.floor_row`) averaged over
    the seeds (a seed samples its own examples), summarized like a variant (`summarize`) but without
    pair_vs_single. None when a task lacks one."""
    accs = {}
    for t in tasks:
        values = [floors[f"{t}/{s}"]["accuracy"] for s in seeds if f"{t}/{s}" in floors]
        if len(values) != len(seeds):
            return None
        accs[t] = _mean(values)
    metrics = summarize(accs, tasks)
    metrics.pop("pair_vs_single", None)
    return {"variant": "floor", "floor": True, "name": "majority class", "split": split, "metrics": metrics}


def variant_row(name: str, per_seed: list[dict]) -> dict:
    """A variant's result row: per-seed rows under "seeds", the mean (and sample std) of each metric,
    and the 95% interval of each (`compare.intervals`)."""
    mean, std = mean_std(per_seed, [k for k in per_seed[0]["metrics"] if not k.endswith("_se")])
    pre_loss = _mean([r["pretrain"]["loss"] for r in per_seed])
    return {"variant": name, "metrics": mean, "metrics_std": std, "interval": intervals(per_seed),
            "n_seeds": len(per_seed), "pretrain_loss": pre_loss, "params": per_seed[0]["pretrain"]["params"],
            "tokens_per_s": _mean([r["pretrain"]["tokens_per_s"] for r in per_seed]), "seeds": per_seed}


def _fmt(value, spec: str = "{:.1f}") -> str:
    return "-" if value is None else spec.format(value)


def report_markdown(results: dict) -> str:
    """report.md: the suite table (mean with 95% intervals, the floor row, the paper's GLUE / SuperGLUE),
    per-task scores, the tuning, deltas vs V, claims."""
    rows, tasks = results["variants"], list(results["tasks"])
    pre = results["settings"]["pretrain"]
    fine = results["settings"]["finetune"]
    blocks = f" of {pre['seq_len']} tokens" if pre.get("seq_len") else ""
    scored = ("test accuracy, %" if results["settings"].get("split") == "test"
              else "dev (validation) accuracy, %")
    lines = [f"# Pretrain, then fine-tune (paper Tables 5-6): task kind {KIND}", "",
             f"MLM pretraining on `{pre['data']}` ({pre['steps']} steps x {pre['batch_size']} blocks{blocks}), "
             f"then {fine['steps']} fine-tuning steps per task (at most {fine['max_examples'] or 'all'} training "
             f"examples), {shape_text(rows[0]['model']) if rows and rows[0].get('model') else 'preset ' + pre['preset']}"
             f", seeds {results['seeds']}. Scores: {scored}.",
             "", "Tasks: " + "; ".join(f"**{t}** ({'pair' if results['tasks'][t]['pair'] else 'single'}: "
                                       f"{results['tasks'][t]['stands_for']})" for t in tasks), "",
             table_markdown(with_floor(results), "classify", kind=KIND), ""]
    all_rows = with_floor(results)
    head = ["variant", *tasks, "single", "pair", "pair/single", "MLM loss"]
    table = []
    for r in all_rows:
        cells = [_fmt_stat(r, k, "{:.1f}") for k in (*(f"acc_{t}" for t in tasks), "single", "pair")]
        cells += ["—" if r.get("floor") else _fmt_stat(r, "pair_vs_single", "{:.1f}"),
                  _fmt(r.get("pretrain_loss"), "{:.3f}")]
        table.append([f"floor: {r['name']}" if r.get("floor") else r["variant"], *cells])
    lines += ["Per task (mean [95% interval]):", "", markdown_table(head, table)]
    base_plus = results.get("base_plus")
    lines += ["", f"Paper columns: {LABEL}, {CITATION}; GLUE / SuperGLUE dev averages of T5 (small, en-mix; "
              f"'V' = T5 Base; T5 Base+, with the +V mixtures' parameter count: {TABLE5['T5 Base+']['glue']} / "
              f"{TABLE6_SUPERGLUE['T5 Base+']}), SST-2, and the "
              "mean of the GLUE sentence-pair tasks (MRPC, STS-B, QQP, MNLI, QNLI, RTE; two-number cells averaged).",
              ""]
    if base_plus:
        lines += [f"{BASE_PLUS} here: V with ffn_dim {base_plus['ffn_dim']} (V: {base_plus['base_ffn_dim']}), "
                  f"{base_plus['params']:,} parameters vs {base_plus['matched']}'s {base_plus['matched_params']:,} "
                  f"({100 * base_plus['rel_diff']:+.2f}%; the largest +V mixture run).", ""]
    tuning = tuning_markdown(rows, results.get("tuning"), results.get("seeds"))
    if tuning:
        lines += ["Pretraining learning rate per variant (fine-tuning: lr "
                  f"{fine['lr']:g} for every variant). " + tuning, ""]
    lines += _deltas(rows)
    found = results["findings"]
    lines += ["", "## The paper's Table 5-6 claims, checked here", ""]
    lines += [f"- {finding_line(f)}" for f in found] or ["- no claim could be checked (V and the variant it is "
                                                        "compared with must both be run)"]
    return "\n".join(lines) + "\n"


def _deltas(rows: list[dict]) -> list[str]:
    """Each variant minus V: our suite mean and pair/single ratio, the paper's GLUE and SuperGLUE."""
    by = {r["variant"]: r for r in rows}
    if "V" not in by:
        return ["(no V row: the deltas vs V are not shown)"]
    v = by["V"]["metrics"]
    pv = glue_summary("V")
    lines = ["## Deltas vs V (points)", "", "| variant | ours: mean | ours: pair/single | paper: GLUE | paper: SuperGLUE |",
             "|---|---|---|---|---|"]
    for name, r in by.items():
        if name == "V":
            continue
        m, p = r["metrics"], glue_summary(name)
        d = lambda a, b: None if a is None or b is None else a - b  # noqa: E731
        lines.append(f"| {name} | {_fmt(d(m.get('accuracy'), v.get('accuracy')), '{:+.2f}')} | "
                     f"{_fmt(d(m.get('pair_vs_single'), v.get('pair_vs_single')), '{:+.1f}')} | "
                     f"{_fmt(d(p and p['accuracy'], pv['accuracy']), '{:+.1f}')} | "
                     f"{_fmt(d(p and p['superglue'], pv['superglue']), '{:+.1f}')} |")
    return lines

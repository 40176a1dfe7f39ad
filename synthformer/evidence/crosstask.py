"""The paper's one claim across tasks (Section 5, its overall findings): "Amongst the other tasks, machine
translation is the least affected by the removal of the vanilla dot product."

`judge` compares variants within one task kind; this claim compares tasks, so it is judged here, on the
published reports of several names, and shown by the index (`synthformer.reproduce.index`). It is not in
`claims.CLAIMS`, which the per-kind code judges.

**The removal gap of a task** (`task_gap`): the relative shortfall of the best synthesizer *without* a dot-product
component (`removes_dot_product`: a variant whose spec has no V -- Fix, R, FR, D, FD, R+D; never a baseline such
as dynamicconv, nor a floor row) against V, on the metric of that task's own claims (`Task.claim`), by the judge's
rule for one pair (`judge.judge_learned`): its floor gate (every seed of both variants beats the task's floor),
its gap and 95% interval (seeds paired, a paired bootstrap over items where the cells kept them). "Best" is the
best mean on that metric, picked on the same data the gap is measured on (so a task with many no-V variants gets
a gap biased towards small). A task whose claims have a proxy (MT BLEU, summarization ROUGE-L: the teacher-forced
ppl) is judged on the proxy while its own metric is not learned, the best picked again on the proxy, as the
task's claims are. A task whose V or best no-V variant does not clear the floor is left out, and named.

**The decision** (`decide`): for every other task k left in, ``d_k = gap_k - gap_MT`` with the half-width
``sqrt(h_k^2 + h_MT^2)`` (different data: independent). Reproduced when every d_k's 95% interval lies above 0;
not reproduced when any lies wholly below 0; inconclusive otherwise, or when MT or every other task is left out.

The paper's numbers (`paper_gap`) are derived from `numbers.py`'s tables by the same pick and gap (`DERIVED`).
Dialogue is outside the claim by its own sentence (there the dot product hurts), and so is Table 7 (`EXCLUDED`).

`judge_reports` judges the claim on the published results.json of each name; `markdown` writes its table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..mixers import MixerError, resolve_mixer
from ..tasks.metrics import METRIC_TITLES
from .gaps import Gap, pair_gap
from .judge import floor_holds, is_floor, judge_learned, proxy_claim, row_stat
from .paper.claims import BY_NAME, PROXY_LABELS, Claim
from .paper.numbers import TABLE2, TABLE3, TABLE4, TABLE5, TABLE7_IMDB, glue_summary

CLAIM_ID = "s5-mt-least-affected"
TABLE = "Section 5"
DOT_PRODUCT = "vanilla"  # the synthesizer registry's name of V, the dot product
MT = "mt"


def removes_dot_product(variant: str) -> bool:
    """Whether `variant` is a synthesizer with no dot-product member (Fix, R, FR, D, FD, R+D, ...); False for V
    and its mixtures, a baseline (dynamicconv, lightconv, linformer) and a name that is no spec ("T5 Base+")."""
    try:
        m = resolve_mixer(variant)
    except MixerError:
        return False
    return not m.is_baseline and DOT_PRODUCT not in m.members


@dataclass(frozen=True)
class Task:
    """One benchmark of the claim: where its rows are, the claim it is judged like, the paper's column."""

    key: str  # "mt", "lm", ...
    title: str  # the task and the paper's column, e.g. "MT (EnDe BLEU)"
    bench: str  # the paper's benchmark as the claim's text quotes it, e.g. "EnDe"
    name: str  # the reproduction name whose results.json holds it ("table2")
    section: str  # its section key there ("mt")
    claim: str  # the claim whose metric, floor gate and proxy it is judged by (`claims.BY_NAME`)
    paper: dict  # the paper's column: {variant: number}
    beside: tuple[str, dict] | None = None  # another column of the paper shown beside it (EnFr beside EnDe)

    @property
    def lower_is_better(self) -> bool:
        return BY_NAME[self.claim].lower_is_better


def _column(table: dict, key: str) -> dict:
    return {v: row[key] for v, row in table.items()}


TASKS: tuple[Task, ...] = (
    Task(MT, "MT (EnDe BLEU)", "EnDe", "table2", "mt", "t2-ende-rd-close-v", _column(TABLE2, "ende_bleu"),
         beside=("EnFr", _column(TABLE2, "enfr_bleu"))),
    Task("lm", "LM (LM1B PPL)", "LM1B", "table2", "lm", "t2-lm1b-r-close-v", _column(TABLE2, "lm1b_ppl")),
    Task("summarization", "summarization (CNN/DM RL)", "CNN/DM", "table3", "summarization", "t3-sum-d-below-v",
         _column(TABLE3, "sum_rl")),
    Task("mlm", "masked LM (C4 log-PPL)", "C4", "table4", "mlm", "t4-c4-v-above-r-d", dict(TABLE4)),
    Task("glue", "GLUE (avg.)", "GLUE", "table5", "finetune", "t5-glue-r-below-v",
         {v: glue_summary(v)["accuracy"] for v in TABLE5}),
)
DERIVED = ("per benchmark, the best variant without a dot product (no V in its spec; baselines left out) in the "
           "paper's column (Table 2 EnDe and EnFr BLEU, LM1B PPL; Table 3 CNN/DM ROUGE-L; Table 4 C4 log-PPL; "
           "Table 5 GLUE), and its relative shortfall against V by the judge's gap (positive: worse than V)")


@dataclass(frozen=True)
class PaperGap:
    """The paper's removal gap on one column: the best no-V variant, its number, V's, the relative gap."""

    best: str
    value: float
    v: float
    gap: float


def paper_gap(column: dict, lower_is_better: bool) -> PaperGap:
    """The paper's removal gap of one column ({variant: number}), derived as `DERIVED` says."""
    found = {v: x for v, x in column.items() if removes_dot_product(v)}
    best = (min if lower_is_better else max)(found, key=found.get)
    gap = pair_gap(lower_is_better, [(None, found[best], None)], [(None, column["V"], None)]).gap
    return PaperGap(best, found[best], column["V"], gap or 0.0)  # a tie is +0.00%, not -0.00%


def _num(x: float) -> str:
    return f"{x:g}"


def _paper_text(task: Task) -> str:
    p = paper_gap(task.paper, task.lower_is_better)
    text = f"{p.best} {_num(p.value)} vs {_num(p.v)} ({p.gap:+.2%})"
    if task.beside:
        q = paper_gap(task.beside[1], task.lower_is_better)
        text += f"; {task.beside[0]} {q.best} {_num(q.value)} vs {_num(q.v)} ({q.gap:+.2%})"
    return text


_IMDB = paper_gap(TABLE7_IMDB, False)
EXCLUDED = ("dialogue is outside the claim by the paper's own sentence (there the dot product degrades performance); "
            f"so is Table 7, whose IMDB has {_IMDB.best} ({_num(_IMDB.value)}) above V ({_num(_IMDB.v)}), so the "
            "sentence cannot cover it")
TEXT = ("machine translation is the least affected by the removal of the dot product: the best synthesizer without "
        "V against V, " + ", ".join(f"{t.bench} {_paper_text(t)}" for t in TASKS))
RULE = ("per task, the best variant without V (best mean on the task's claim metric, picked on the same data) against "
        "V: the judge's relative shortfall and 95% interval, gated by the task's floor (MT and summarization on the "
        "teacher-forced ppl while BLEU / ROUGE-L is not learned; a task not learned is left out); d = each other "
        "task's gap minus MT's, half-width sqrt(h^2 + h_MT^2): reproduced when every d's interval lies above 0, not "
        "reproduced when any lies wholly below 0, inconclusive otherwise")


@dataclass(frozen=True)
class TaskGap:
    """Our removal gap of one task, or why it is left out (`gap` None, `note` says why)."""

    task: Task
    best: str | None  # the best no-V variant on `metric`
    metric: str  # the metric judged: the claim's, or its proxy
    gap: Gap | None
    note: str = ""
    proxy: bool = False  # judged on the claim's proxy (its own metric not learned)

    @property
    def learned(self) -> bool:
        return self.gap is not None


def _best(claim: Claim, rows: list[dict]) -> str | None:
    """The variant of `rows` with the best mean of the claim's metric (None when none has it)."""
    means = {r["variant"]: s.mean for r in rows if (s := row_stat(r, claim.metric)) is not None}
    if not means:
        return None
    return (min if claim.lower_is_better else max)(means, key=means.get)


def task_gap(task: Task, rows: list[dict] | None) -> TaskGap:
    """The removal gap of `task` on its result rows (variants and floor rows; None: not run), by the judge's rule
    for the pair (best no-V variant, V): its own metric, else its proxy where a floor row gates it."""
    claim = BY_NAME[task.claim]
    variants = {r["variant"]: r for r in rows or [] if not is_floor(r)}
    candidates = [variants[v] for v in variants if removes_dot_product(v)]
    if "V" not in variants or not candidates:
        why = "not run" if not variants else "V not run" if "V" not in variants else "no variant without V run"
        return TaskGap(task, None, claim.metric, None, why)
    probes = [claim] + ([proxy_claim(claim)] if claim.proxy and floor_holds(rows, claim.proxy) else [])
    notes = []
    for probe in probes:
        best = _best(probe, candidates)
        found = None if best is None else judge_learned(
            replace(probe, subject=best, others=("V",), paper={}, relation="within", threshold=1.0, lean=""), rows)
        if found is None:
            notes.append(f"{probe.metric} missing")
            continue
        finding, learned = found
        if learned:
            p = finding["pairs"][0]
            proxy = probe is not claim
            note = (f"{METRIC_TITLES.get(claim.metric, claim.metric)} not learned ({notes[0]}); judged on the "
                    f"{PROXY_LABELS[claim.proxy]}" if proxy else "")
            return TaskGap(task, best, probe.metric, Gap(p["gap"], *p["interval"], p["method"]), note, proxy)
        notes.append(f"{best} vs V on {probe.metric}: {finding['note']}")
    return TaskGap(task, None, claim.metric, None, "; ".join(notes))


def decide(gaps: list[TaskGap]) -> tuple[str, list[dict]]:
    """(status, one {"task", "d", "interval"} per other task left in) under the module's rule."""
    mt = next((g for g in gaps if g.task.key == MT), None)
    if mt is None or not mt.learned:
        return "inconclusive", []
    diffs = []
    for g in gaps:
        if g.task.key != MT and g.learned:
            d, half = g.gap.gap - mt.gap.gap, math.hypot(g.gap.half, mt.gap.half)
            diffs.append({"task": g.task.key, "d": round(d, 4), "interval": [round(d - half, 4), round(d + half, 4)]})
    if not diffs:
        return "inconclusive", []
    if any(x["interval"][1] < 0 for x in diffs):
        return "not reproduced", diffs
    return ("reproduced" if all(x["interval"][0] > 0 for x in diffs) else "inconclusive"), diffs


def section_rows(report: dict | None, key: str) -> list[dict] | None:
    """The rows (variants, then the floor row) of section `key` of a name's results.json; None when absent."""
    section = next((s for s in (report or {}).get("sections") or [] if s.get("key") == key), None)
    if section is None:
        return None
    return list(section.get("rows") or []) + ([section["floor"]] if section.get("floor") else [])


def judge_reports(reports: dict) -> dict:
    """The claim's finding on {name: that name's published results.json}: status, each task's gap, the d's."""
    gaps = [task_gap(t, section_rows(reports.get(t.name), t.section)) for t in TASKS]
    status, diffs = decide(gaps)
    left = [f"{g.task.key} ({g.note})" for g in gaps if not g.learned]
    mt_left = not next(g for g in gaps if g.task.key == MT).learned
    note = "; ".join(filter(None, [
        ("MT left out, so nothing to compare with" if mt_left else "every other task left out" if not diffs else ""),
        "left out (not run, or not learned: below the floor): " + "; ".join(left) if left else "",
        "; ".join(f"{x['task']}'s removal gap below MT's by {-x['d']:.1%}" for x in diffs if x["interval"][1] < 0),
        "the best variant without V is picked on the same data its gap is measured on", EXCLUDED]))
    tasks = [{"task": g.task.key, "title": g.task.title, "name": g.task.name, "best": g.best, "metric": g.metric,
              "proxy": g.proxy, "note": g.note, "paper": _paper_text(g.task),
              **({"gap": round(g.gap.gap, 4), "interval": [g.gap.lo, g.gap.hi], "method": g.gap.method}
                 if g.learned else {})} for g in gaps]
    return {"claim": CLAIM_ID, "table": TABLE, "text": TEXT, "status": status, "rule": RULE, "derived": DERIVED,
            "tasks": tasks, "differences": diffs, "note": note,
            "names": sorted({t.name for t in TASKS if t.name in reports})}


def _interval(gap: float, lo: float, hi: float) -> str:
    return f"{gap:+.1%} [{lo:+.1%}, {hi:+.1%}]"


def detail(finding: dict) -> str:
    """The index's detail cell: each d with its interval and the tasks left out (`markdown` has the rest)."""
    ds = ", ".join(f"{x['task']} {_interval(x['d'], *x['interval'])}" for x in finding["differences"])
    left = "; ".join(f"{t['task']} ({t['note']})" for t in finding["tasks"] if "gap" not in t)
    return (f"d = each task's removal gap minus MT's: {ds or 'none'}" + (f"; left out: {left}" if left else "")
            + ". Gaps, rule and note: the table below.")


def markdown(finding: dict) -> str:
    """The claim's table: per task, the best no-V variant, our gap and its interval, d, and the paper's gap."""
    from .tables import markdown_table

    diffs = {x["task"]: x for x in finding["differences"]}
    rows = []
    for t in finding["tasks"]:
        metric = t["metric"] + (" (proxy)" if t["proxy"] else "")
        ours = _interval(t["gap"], *t["interval"]) + f" ({metric})" if "gap" in t else f"left out: {t['note']}"
        d = _interval(diffs[t["task"]]["d"], *diffs[t["task"]]["interval"]) if t["task"] in diffs else "—"
        rows.append([t["title"], t["best"] or "—", ours, d, t["paper"]])
    return (f"`{finding['claim']}` ({finding['status']}): the removal gap per task, the best variant without V against "
            "V (positive: worse than V), and d, its difference from MT's (95% intervals).\n\n"
            + markdown_table(["task", "best without V (ours)", "our gap [95% interval]", "d = gap - MT's",
                              "paper: best without V vs V (gap)"], rows)
            + f"\n\nRule: {finding['rule']}. Paper's numbers: {finding['derived']}. Note: {finding['note']}.")

"""What every `synthformer reproduce NAME` shares: budgets, the spec of a name, variant grids run
through `synthformer.evidence.compare`, the run folder's manifest, and report.md / results.json.

A name (one module of this package) declares a `Spec` (what it reproduces, data, variants, time per
budget, why it differs from the paper) and a ``run(ctx)`` that returns `Section`s; `reproduce()` in
the package's ``__init__`` checks the sources, opens the run folder and writes the report.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..evidence.judge import UNDECIDABLE, finding_line, judge_rows, status_rank
from ..evidence.paper.claims import CLAIMS
from ..evidence.compare import DEFAULT_SEEDS, SMALL_EVAL, SMALL_EVAL_SEEDS
from ..evidence.rows import gate_line, with_floor
from ..errors import SynthformerError
from ..utils.integrity import atomic_write_text
from ..evidence.speed import speed_note
from ..evidence.tables import cell_text, table_markdown, tuning_markdown
from ..evidence.tuning import TuneConfig

BUDGETS = ("smoke", "cpu", "gpu")
SMOKE_NOTE = ("**Smoke budget: a check that the pipeline runs end to end (two training steps). The models are "
              "untrained, so the numbers and claim statuses below mean nothing; use --budget cpu or gpu.**")
NOT_CHECKED = "not checked"
NOT_RUN = "not run yet"


class ReproduceError(SynthformerError):
    """Bad input to `synthformer reproduce` (name, budget, seeds, run folder, missing source)."""


# Train options of every grid per budget (the modules add steps, lengths and their own choices).
# smoke: a pipeline check of a few seconds per variant (the tests run it); cpu: tiny models that fit
# ~45 minutes per name on 2 cores; gpu: small models for one GPU (not run in CI). cpu and gpu report and
# judge the test split (eval_test): the learning-rate sweep chooses on validation.
BUDGET_TRAIN = {
    "smoke": dict(preset="tiny", steps=2, batch_size=4, max_examples=40, seq_len=32, vocab_size=300,
                  warmup_steps=1, eval_every=0, eval_batches=1, final_eval_batches=1, decode_examples=4,
                  checkpoint_every=0, log_every=1, progress=False, threads=1),
    "cpu": dict(preset="tiny", batch_size=16, vocab_size=2000, lr=2e-3, warmup_steps=40, eval_every=100,
                eval_batches=20, final_eval_batches=0, eval_test=True, decode_examples=200, checkpoint_every=100,
                log_every=10, progress=False, threads=1),
    "gpu": dict(preset="small", batch_size=64, vocab_size=8000, lr=1e-3, warmup_steps=400, eval_every=500,
                eval_batches=50, final_eval_batches=0, eval_test=True, decode_examples=500, checkpoint_every=1000,
                log_every=50, precision="bf16", device="cuda"),
}
BUDGET_MODEL = {"smoke": dict(max_seq_len=32), "cpu": {}, "gpu": {}}
# The learning-rate sweep every variant gets (synthformer.evidence.tuning) per budget: the default protocol at the
# real budgets; none at smoke (the pipeline check; tests/test_tuning.py runs a tiny sweep instead).
BUDGET_TUNE = {"smoke": None, "cpu": TuneConfig(), "gpu": TuneConfig()}
AUTO_SEEDS = (f"auto ({DEFAULT_SEEDS}; {SMALL_EVAL_SEEDS} when a validation split has under {SMALL_EVAL} items)")


def budget_train(budget: str, **over) -> dict:
    return {**BUDGET_TRAIN[budget], **over}


def budget_model(budget: str, **over) -> dict:
    return {**BUDGET_MODEL[budget], **over}


def per_budget(budget: str, smoke, cpu, gpu):
    """The value of the current budget (steps, lengths, ...)."""
    return {"smoke": smoke, "cpu": cpu, "gpu": gpu}[budget]


@dataclass(frozen=True)
class Spec:
    """What one name reproduces, shown by `synthformer reproduce --list` and at the top of its report."""

    name: str  # registry name, e.g. "table2"
    reproduces: str  # the paper's table / figure and what it measures
    data: str  # the data used, in words
    variants: str  # the variants, in words
    minutes: dict  # budget -> estimated wall time in words, e.g. {"smoke": "< 1 min", ...}
    seeds: dict  # budget -> default seeds per variant (None: compare's default, see AUTO_SEEDS)
    sources: tuple  # registry sources it needs (checked before any training)
    tables: tuple  # claim tables (synthformer.evidence.paper.claims) whose claims the report lists
    differences: str  # how this setting differs from the paper's, and so what can be compared
    extra_claims: tuple = ()  # (id, table, text) of claims checked here that synthformer.evidence.paper.claims lacks


@dataclass(frozen=True)
class Grid:
    """One variants x seeds comparison (a `compare` call) of a name."""

    key: str  # sub-folder of the run folder, e.g. "mt"
    title: str  # section title
    task: str  # lm | seq2seq | classify | mlm
    data: str  # source name or a data folder
    variants: tuple  # variant specs
    train: dict  # TrainConfig overrides
    model: dict = field(default_factory=dict)  # ModelConfig overrides
    kind: str | None = None  # task kind for paper columns / claims (default from task and data)
    note: str = ""  # one paragraph under the title: what stands in for the paper's benchmark
    tune_fraction: float | None = None  # steps of a sweep candidate as a fraction of the run's; None: the budget's
    gate: str | None = None  # the first variant: when it does not clear the floor the rest are not trained (compare)


@dataclass
class Section:
    """One part of a report: Markdown body plus the findings (judge.judge dicts) it checked."""

    title: str
    body: str
    findings: list = field(default_factory=list)  # structured findings from synthformer.evidence.judge
    extra: list = field(default_factory=list)  # module-judged claims: {claim, table, text, status, detail}
    kinds: tuple = ()  # task kinds of its grids (which claims apply)
    variants: tuple = ()  # variants it ran
    data: dict = field(default_factory=dict)  # what goes into results.json for this section


@dataclass
class Context:
    """A reproduction in progress: the options and the run folder."""

    name: str
    budget: str
    seeds: int | None  # None: compare's default (AUTO_SEEDS)
    out: Path
    device: str | None = None
    threads: int | None = None
    log: object = print
    tune: TuneConfig | None = None  # the sweep every variant gets (None: none)
    only: tuple | None = None  # train only these variants' cells, write no results (a grid split over machines)
    interim: bool = False  # train nothing: each started grid writes interim.md from its finished variants
    reuse: Path | None = None  # the reproduction whose finished runs stand in for this one's (module REUSES)
    executor: object = None  # how the grids train their cells (synthformer.evidence.executors); None: in this process

    @property
    def seeds_text(self) -> str:
        return AUTO_SEEDS if self.seeds is None else str(self.seeds)

    def train_overrides(self, grid: Grid) -> dict:
        over = dict(grid.train)
        if self.device:
            over["device"] = self.device
        if self.threads:
            over["threads"] = self.threads
        return over

    def run_grid(self, grid: Grid) -> dict | None:
        """Run (or reuse, or continue) one comparison in out/<key>; returns its results dict (None with
        `only`: the cells of those variants trained). The folder records its settings
        (`compare.check_settings`): one run with other settings is refused."""
        from ..evidence.compare import compare
        from ..evidence.rows import variant_name

        only = None
        if self.only is not None:
            only = [v for v in map(variant_name, grid.variants) if v in self.only]
            if not only:
                return None
        return compare(list(grid.variants), self.train_overrides(grid), dict(grid.model), self.out / grid.key,
                       log=self.log, seeds=self.seeds, kind=grid.kind, tune=self.tune_for(grid), reuse=True, only=only,
                       interim=self.interim, runs_from=None if self.reuse is None else self.reuse / grid.key,
                       gate=grid.gate, executor=self.executor)

    def tune_for(self, grid: Grid) -> TuneConfig | None:
        """The sweep of one grid: the budget's, with the grid's own candidate length where it sets one."""
        if self.tune is None or grid.tune_fraction is None:
            return self.tune
        return dataclasses.replace(self.tune, fraction=grid.tune_fraction)


def reuse(folder: Path, settings: dict, label: str, log=print) -> dict | None:
    """The results.json of ``folder`` when it finished with these settings; None when it is to be run or
    continued (the settings are then recorded). A folder run with other settings (e.g. a budget's steps
    changed since) is an error: reusing it would report numbers of another configuration."""
    from ..evidence.grid import check_settings
    from ..utils.integrity import read_recorded_json

    if not check_settings(folder, settings, ReproduceError):
        return None
    log(f"{label}: finished earlier, reusing {folder / 'results.json'}")
    return read_recorded_json(folder, folder / "results.json", f"delete {folder / 'results.json'} to report it "
                              "again")  # verified against folder/digests.json


# ----------------------------------------------------------------------------- sections and reports
def slim_rows(results: dict) -> list[dict]:
    """The result rows without resolved configs (results.json of the grid keeps those)."""
    keep = ("variant", "params", "metrics", "metrics_std", "interval", "tuned", "sweep", "seeds", "tokens_per_s",
            "tokens_per_s_std", "train_tokens_per_s", "train_time_s", "n_seeds", "runs")
    return without_items([{k: r.get(k) for k in keep} for r in results["variants"]])


def without_items(rows: list[dict]) -> list[dict]:
    """`rows` with their seeds' per-item records left out (they stay in the grid's results.json; `paired`
    says whether every seed kept one)."""
    return [{**r, "seeds": [{k: v for k, v in s.items() if k != "items"} if isinstance(s, dict) else s
                            for s in r.get("seeds") or []]} for r in rows]


def paired(results: dict) -> bool:
    """Whether every seed row of a grid's results kept its per-item record (its intervals pair the items)."""
    seeds = [s for r in results["variants"] for s in r.get("seeds") or [] if isinstance(s, dict)]
    return bool(seeds) and all(isinstance(s.get("items"), dict) for s in seeds)


def grid_section(grid: Grid, results: dict, tables: tuple, extra_body: str = "") -> Section:
    """The standard section of a grid: our table beside the paper's columns, the curves, the claims."""
    rows = with_floor(results)
    kind = results["kind"]
    # judged now, not read from the grid's results.json: a rule changed since the runs applies to them too
    found = [f for f in judge_rows(rows, kind, gated=results.get("gated")) if f["table"] in tables]
    body = [grid.note, "", table_markdown(rows, grid.task, kind=kind, split=results.get("split", "valid"))]
    if results.get("gated"):
        body += ["", f"**{gate_line(results['gated'])}**"]
    body += ["", tuning_markdown(rows, results.get("tuning"), results.get("seeds"))]
    if results.get("speed"):
        body += ["", speed_note(results["speed"])]
    if extra_body:
        body += ["", extra_body]
    body += ["", f"![learning curves]({grid.key}/curves.png)"]
    return Section(grid.title, "\n".join(body).strip("\n"), found, kinds=(kind,),
                   variants=tuple(r["variant"] for r in results["variants"]),
                   data={"key": grid.key, "task": grid.task, "data": grid.data, "kind": kind,
                         "folder": grid.key, "rows": slim_rows(results), "floor": results.get("floor"),
                         "tuning": results.get("tuning"), "paired": paired(results), "findings": found})


def claim_statuses(spec: Spec, sections: list[Section]) -> list[dict]:
    """Every claim of the spec's tables: its status here, or why it was not checked."""
    out = []
    found, mine = {}, {c.name for c in CLAIMS if c.table in spec.tables}
    for s in sections:
        for f in (f for f in s.findings if f["claim"] in mine):  # another table's (Table 4's speed: any task) aside
            if f["claim"] in found:  # judged by two grids: one would silently hide the other
                raise ReproduceError(f"claim {f['claim']} is judged by two sections of {spec.name}; give it one "
                                     "task kind (evidence/paper/claims.py)")
            found[f["claim"]] = f
    kinds = {k for s in sections for k in s.kinds}
    ran = {v for s in sections for v in s.variants}
    for claim in CLAIMS:
        if claim.table not in spec.tables:
            continue
        if claim.name in found:
            f = found[claim.name]
            out.append({"claim": claim.name, "table": claim.table, "text": claim.text, "status": f["status"],
                        "detail": short_finding(f), **({"open": why} if (why := open_reason(f)) else {})})
            continue
        applies = [k for k in kinds if claim.applies_to(k)]
        missing = [v for v in (claim.subject, *claim.others) if v not in ran]
        why = ("no run of its benchmark kind (" + ", ".join(claim.kinds) + ")" if not applies
               else f"variants not run: {', '.join(missing)}" if missing else f"metric {claim.metric} missing")
        out.append({"claim": claim.name, "table": claim.table, "text": claim.text, "status": NOT_CHECKED,
                    "detail": why})
    for s in sections:
        out.extend(s.extra)
    known = {c["claim"] for c in out}
    for cid, table, text in spec.extra_claims:
        if cid not in known:
            out.append({"claim": cid, "table": table, "text": text, "status": NOT_CHECKED,
                        "detail": "its run did not produce the numbers"})
    return out


def short_finding(f: dict) -> str:
    """A finding's numbers and rule without its status and claim text (the report's table shows those)."""
    line = finding_line(f)
    return line[line.index("Paper:"):] if "Paper:" in line else line


def is_open(status: str) -> bool:
    """Whether a claim's status leaves it open: inconclusive or undecidable at this size (a proxy's too)."""
    return status.startswith(("inconclusive", UNDECIDABLE))


def open_reason(f: dict) -> str | None:
    """Why a finding's claim is still open (inconclusive or undecidable at this size), in a line: per open pair,
    its half-width now and the one that would decide it, with the seeds or items that would bring it there
    (`judge.to_decide`, `judge.size_needed`); else the note (e.g. a metric not learned). None: decided."""
    if not is_open(f["status"]):
        return None
    subject = next(iter(f.get("ours") or {}), "")
    parts = [f"{subject} vs {p['other']} {p['gap']:+.1%}: ±{d['half']:.1%} now, under ±{d['under']:.1%} would decide: "
             + (" or ".join(d["sizes"]) if d["sizes"] else "3 or more seeds of each, shared" if d["under"] else
                "no size (the gap is on the line)") for p in f.get("pairs") or [] if (d := p.get("to_decide"))]
    return "; ".join(parts) or f.get("note") or "no pair could be compared"


def status_counts(claims: list[dict]) -> str:
    counts = {}
    for c in claims:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    return ", ".join(f"{counts[s]} {s}" for s in sorted(counts, key=status_rank))


def write_report(ctx: Context, spec: Spec, sections: list[Section], wall_s: float, images: list[str]) -> dict:
    """report.md and results.json of a name in ctx.out; returns the results dict."""
    from ..evidence.paper.numbers import CITATION
    from ..utils.integrity import write_recorded_json

    claims = claim_statuses(spec, sections)
    lines = [f"# synthformer reproduce {spec.name}: {spec.reproduces}", "",
             f"Budget **{ctx.budget}**, seeds per variant: {ctx.seeds_text}, device {ctx.device or 'auto'}; "
             f"{'the same learning-rate sweep for every variant (tables below)' if ctx.tune else 'no tuning'}; "
             f"{wall_s / 60:.1f} min of training and evaluation in this folder's runs "
             f"(`synthformer reproduce {spec.name} --budget {ctx.budget}"
             f"{'' if ctx.seeds is None else f' --seeds {ctx.seeds}'} --out {ctx.out}`).",
             "", f"Data: {spec.data}. Variants: {spec.variants}.", "",
             *([SMOKE_NOTE, ""] if ctx.budget == "smoke" else []),
             f"**How this differs from the paper.** {spec.differences} The paper's numbers ({CITATION}) were "
             "measured at full scale on TPUs: compare orderings and relative gaps, never absolute values.", "",
             f"## Claims of {', '.join(spec.tables)}: {status_counts(claims)}", "",
             "| claim | status | detail |", "|---|---|---|"]
    for c in claims:
        lines.append(f"| {c['text']} (`{c['claim']}`) | **{c['status']}** | {cell_text(c['detail'])} |")
    lines.append("")
    for s in sections:
        lines += [f"## {s.title}", "", s.body, ""]
    if images:
        lines += ["## Figures", ""] + [f"![{Path(i).stem}]({i})" for i in images] + [""]
    atomic_write_text(ctx.out / "report.md", "\n".join(lines))
    results = {"name": spec.name, "reproduces": spec.reproduces, "budget": ctx.budget,
               "seeds": "auto" if ctx.seeds is None else ctx.seeds, "tuning": ctx.tune.to_dict() if ctx.tune else None,
               "device": ctx.device, "wall_s": wall_s, "created": time.strftime("%Y-%m-%d %H:%M:%S"),
               "claims": claims, "sections": [{"title": s.title, **s.data} for s in sections], "images": images}
    write_recorded_json(ctx.out, ctx.out / "results.json", results)
    return results


def fmt(value, spec: str = "{:.2f}") -> str:
    return "—" if value is None else spec.format(value)


# ----------------------------------------------------------------------------- trained runs, post hoc
def open_grid_data(run_dir: Path, log=None):
    """(TrainConfig, TaskData) of a trained run, encoded with its own tokenizer (every run of a grid
    shares it, so one call serves the whole grid)."""
    from ..training.plan import open_trained

    run = open_trained(run_dir, with_data=True, log=log or (lambda *a: None))
    return run.train, run.data


def load_model(run_dir: Path, device: str = "cpu"):
    from ..training.plan import open_trained

    return open_trained(run_dir, device=device, log=lambda *a: None).model


def replace(obj, **kw):
    return dataclasses.replace(obj, **kw)

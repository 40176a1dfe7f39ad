"""Comparison reports: the Markdown table beside the paper's numbers (of the same task kind), with
95% intervals and the floor row; what each variant trained with (the tuning sweep); the paper's
claims (`synthformer.evidence.paper.claims`) checked on our numbers (`synthformer.evidence.judge`).
Everything here reads result rows only."""
from __future__ import annotations

import math
from collections import Counter

from .judge import finding_line, judge_rows, seed_values, status_rank
from ..utils.stats import stat, wilson
from .paper.numbers import CITATION, LABEL, paper_columns
from ..tasks.metrics import LOWER_IS_BETTER, METRIC_COLUMNS, POINT_METRICS, PROPORTION_METRICS, clip_to_range
from .tuning import at_chance, beyond_edge, protocol_text



SIZING = "reproductions/NOTES.md (section 'Sizing')"  # measured model sizes and steps that clear the floors
# The same pointer for compare's own report, which an installed package prints too (it has no reproductions/)
INSTALLED_SIZING = ("`synthformer reproduce --list` (each table's cpu budget is a size and a step count measured to "
                    "clear its floors, e.g. table2's LM: d=128, 4 layers, 3,000 steps); `make demo` is one that "
                    "clears it in a few minutes")


def floor_line(rows: list[dict], task: str, sizing: str = SIZING) -> str | None:
    """One line when no variant beats the floor row on the task's main metric (nothing was learned at
    this budget, so every finding is 'not learned'), naming the floor and where a sufficient size is
    measured; None when some variant beats it or there is no floor."""
    floors = [r for r in rows if r.get("floor")]
    key = METRIC_COLUMNS[task][0][1]
    floor = floors[0]["metrics"].get(key) if floors else None
    values = [(r.get("metrics") or {}).get(key) for r in rows if not r.get("floor")]
    if floor is None or not values or any(v is None for v in values):
        return None
    beats = [v < floor if key in LOWER_IS_BETTER else v > floor for v in values]
    if any(beats):
        return None
    return (f"No variant beats the floor ({floors[0].get('name', 'trivial baseline')}: {key} {floor:.4g}) at this "
            f"budget, so every finding is 'not learned'; model sizes and steps that clear it: {sizing}.")


def _on_split(title: str, split: str) -> str:
    """A metric column's title on `split`: "valid PPL" -> "test PPL", "accuracy %" -> "test accuracy %"."""
    if split == "valid":
        return title
    return title.replace("valid ", f"{split} ") if "valid " in title else f"{split} {title}"


def _fmt(value, spec: str = "{}") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return spec.format(value) if isinstance(value, (int, float)) else str(value)


def _params(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k"


def _table_parts(rows: list[dict], task: str, kind: str | None, split: str) -> tuple:
    """(kind, the floor rows, the variants' rows, our metric columns [(title, key, format)]) of a table."""
    ours = [(_on_split(t, split), k, f) for t, k, f in METRIC_COLUMNS.get(task, [("loss", "loss", "{:.3f}")])]
    return kind or task, [r for r in rows if r.get("floor")], [r for r in rows if not r.get("floor")], ours


def table_markdown(rows: list[dict], task: str, baseline: str = "V", kind: str | None = None,
                   split: str = "valid") -> str:
    """Markdown table: ours (params, metrics, change vs the baseline, tokens/s relative to it) beside the
    paper's columns of the same task kind, and the floor row last.

    `rows`: dicts with "variant", "params", "metrics" (task metrics; the mean over seeds) and
    "tokens_per_s"; a row with "interval" ({metric: [lo, hi]}) shows each metric with its 95% interval,
    one with several "seeds" (per-seed rows) and no interval as mean ± std. A row with "floor": true
    (`synthformer.evidence.floors`) is the trivial baseline of the data: its metrics only.
    `kind`: the task kind (`reference_results.task_kind`); default the task itself. `split`: the split
    the metrics were measured on ("valid" or "test"), named in the column titles.
    """
    kind, floors, rows, ours = _table_parts(rows, task, kind, split)
    main_title, main_key, _ = ours[0]
    base = next((r for r in rows if r["variant"] == baseline), None)
    paper_titles = list(paper_columns(kind, baseline))
    head = ["model", "params"] + [t for t, _, _ in ours] + [f"Δ {main_title} vs {baseline}", "tokens/s",
                                                            f"speed vs {baseline}"]
    head += [f"paper: {t}" for t in paper_titles]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        m = r.get("metrics") or {}
        cells = [r["variant"], _params(r["params"])] + [_fmt_stat(r, k, f) for _, k, f in ours]
        if base is not None and m.get(main_key) is not None and (base.get("metrics") or {}).get(main_key):
            b = base["metrics"][main_key]
            cells.append(f"{100.0 * (m[main_key] - b) / b:+.1f}%")
        else:
            cells.append("—")
        machines = _machines(r)
        cells.append(_fmt_stat(r, "tokens_per_s", "{:,.0f}") if len(machines) == 1 else "—")
        cells.append(_speed_ratio(r, base, machines))
        cells += [_fmt(v) for v in paper_columns(kind, r["variant"]).values()]
        lines.append("| " + " | ".join(cells) + " |")
    for f in floors:
        cells = [f"floor: {f.get('name', 'trivial baseline')}", "—"]
        cells += [_fmt((f.get("metrics") or {}).get(k), spec) for _, k, spec in ours]
        lines.append("| " + " | ".join(cells + ["—"] * (len(head) - len(cells))) + " |")
    seeds = max((len(r.get("seeds") or [r]) for r in rows), default=1)
    notes = []
    if any(r.get("interval") for r in rows):
        notes.append(f"Our metrics: mean over {seeds} seed(s) [95% interval: bootstrap over the evaluation items "
                     "combined with the spread over seeds]; Δ and speed compare means.")
    elif seeds > 1:
        notes.append(f"Our metrics: mean ± sample std over {seeds} seeds (each variant trained once per seed "
                     "on the same data); Δ and speed compare means.")
    notes += _shared_notes(rows, floors, baseline, paper_titles)
    return "\n".join(lines + ([""] + notes if notes else []))


MIN_SEEDS = 3  # under this many seeds per variant the table warns: the seed spread is barely estimated


def few_seeds_warning(rows: list[dict]) -> str | None:
    """One line when a variant has fewer than MIN_SEEDS seeds, else None."""
    n = min((len(r.get("seeds") or [r]) for r in rows if not r.get("floor")), default=MIN_SEEDS)
    if n >= MIN_SEEDS:
        return None
    why = ("one seed shows no training noise: its interval covers the evaluation items only" if n == 1 else
           "a t interval over 2 seeds has 1 degree of freedom (t = 12.7), so it is mostly width")
    return (f"Warning: {n} seed(s) per variant; {why}. Findings need {MIN_SEEDS} or more seeds to be decided "
            f"reliably (--seeds {MIN_SEEDS}).")


def compare_table_markdown(rows: list[dict], task: str, baseline: str = "V", kind: str | None = None,
                           split: str = "valid") -> str:
    """`synthformer compare`'s own table (table.md and the console): per metric its mean, the seed spread
    (sample std) and the 95% interval in labelled columns, intervals cut to the metric's range, changes in
    points for 0-100 metrics (with the relative change beside) and relative for the others, and a warning
    under MIN_SEEDS seeds. With 2 seeds a proportion's interval is Wilson's over the evaluation items (a t
    interval with 1 degree of freedom says nothing), marked as covering the items only. `reproduce` reports
    keep `table_markdown`."""
    kind, floors, rows, ours = _table_parts(rows, task, kind, split)
    main_title, main_key, main_spec = ours[0]
    base = next((r for r in rows if r["variant"] == baseline), None)
    paper_titles = list(paper_columns(kind, baseline))
    unit = "points (relative)" if main_key in POINT_METRICS else "relative"
    head = ["model", "params"]
    for title, _, _ in ours:
        head += [f"{title}: mean", "seed spread (std)", "95% interval"]
    head += [f"Δ {main_title} vs {baseline}, {unit}", "tokens/s", f"speed vs {baseline}"]
    head += [f"paper: {t}" for t in paper_titles]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    marks = set()
    for r in rows:
        m = r.get("metrics") or {}
        cells = [r["variant"], _params(r["params"])]
        for _, k, spec in ours:
            s = stat(seed_values(r, k)) if r.get("seeds") else None
            cells += [_fmt(m.get(k), spec), "—" if s is None or s.std is None else spec.format(s.std)]
            interval, mark = _display_interval(r, k)
            marks |= {mark} if mark else set()
            cells.append("—" if interval is None else
                         f"[{_fmt(interval[0], spec)}, {_fmt(interval[1], spec)}]{mark}")
        b = (base.get("metrics") or {}).get(main_key) if base is not None else None
        cells.append(_change(m.get(main_key), b, main_key, main_spec))
        machines = _machines(r)
        cells.append(_fmt(r.get("tokens_per_s"), "{:,.0f}") if len(machines) == 1 else "—")
        cells.append(_speed_ratio(r, base, machines))
        cells += [_fmt(v) for v in paper_columns(kind, r["variant"]).values()]
        lines.append("| " + " | ".join(cells) + " |")
    for f in floors:
        cells = [f"floor: {f.get('name', 'trivial baseline')}", "—"]
        for _, k, spec in ours:
            cells += [_fmt((f.get("metrics") or {}).get(k), spec), "—", "—"]
        lines.append("| " + " | ".join(cells + ["—"] * (len(head) - len(cells))) + " |")
    seeds = max((len(r.get("seeds") or [r]) for r in rows), default=1)
    notes = [f"Our metrics: mean over {seeds} seed(s); seed spread = sample std over the seeds; 95% interval = the "
             "bootstrap over evaluation items combined with the spread over seeds (t), cut to the metric's range. "
             + ("Δ is in points of the metric, with the relative change in brackets; " if main_key in POINT_METRICS
                else "Δ is the relative change of the mean; ")
             + f"speed compares mean tokens/s (above 1.00x: faster than {baseline})."]
    if "ʷ" in marks:
        notes.append("ʷ 2 seeds: Wilson interval of the proportion over the evaluation items; it does not cover "
                     "the seed spread, which 2 seeds cannot estimate.")
    if "‡" in marks:
        notes.append("‡ 2 seeds: a t interval with 1 degree of freedom (t = 12.7), so wide it decides little.")
    warning = few_seeds_warning(rows)
    if warning:
        notes.append(f"**{warning}**")
    notes += _shared_notes(rows, floors, baseline, paper_titles)
    return "\n".join(lines + [""] + notes)


def _speed_ratio(row: dict, base: dict | None, machines: set) -> str:
    """A row's tokens/s over the baseline's, where both ran on one machine."""
    if base and len(machines) == 1 and machines == _machines(base):
        return f"{row['tokens_per_s'] / base['tokens_per_s']:.2f}x"
    return "—"


def _shared_notes(rows: list[dict], floors: list[dict], baseline: str, paper_titles: list) -> list[str]:
    """The notes both tables end with: the floor row, runs on different machines, the paper's columns."""
    notes = []
    if floors:
        notes.append("The floor row is a trivial baseline on the same data and tokens (e.g. a Kneser-Ney bigram "
                     "for LM, the majority class for classification): a variant not beating it learned nothing "
                     "a claim can be read from.")
    machines = set().union(*(_machines(r) for r in rows))
    if len(machines) > 1:
        named = "; ".join(sorted(m or "not recorded" for m in machines))
        notes.append(f"The training runs ran on different machines ({named}): tokens/s and speed are shown only "
                     f"where a variant's runs and {baseline}'s all ran on one of them.")
    if paper_titles:
        notes.append(f"Columns marked *paper:* are {LABEL} ({CITATION}); compare orderings, not values.")
    return notes


def _display_interval(row: dict, key: str) -> tuple[tuple[float, float] | None, str]:
    """The 95% interval compare's table shows for `key` and its mark: the row's interval cut to the metric's
    range; with 2 seeds a proportion's Wilson interval over the evaluation items ("ʷ"), another metric's t
    interval marked "‡"."""
    n = len(row.get("seeds") or [row])
    mean = (row.get("metrics") or {}).get(key)
    items = (row.get("metrics") or {}).get("examples")
    if n == 2 and key in PROPORTION_METRICS and mean is not None and items:
        lo, hi = wilson(min(max(mean / 100.0, 0.0), 1.0), items)
        return (100.0 * lo, 100.0 * hi), "ʷ"
    interval = (row.get("interval") or {}).get(key)
    if not interval or any(v is None or not math.isfinite(v) for v in interval):
        return None, ""
    return clip_to_range(key, *interval), "‡" if n == 2 else ""


def _change(value, base, key: str, spec: str) -> str:
    """A mean's change from the baseline's: points (and relative) on a 0-100 metric, relative otherwise."""
    if value is None or not base:
        return "—"
    rel = f"{100.0 * (value - base) / base:+.1f}%"
    if key in POINT_METRICS:
        return f"{value - base:+.2f} pt ({rel})"
    return rel


def _machines(row: dict) -> set:
    """The hardware the row's tokens/s were measured on (None: not recorded, as in runs before it was): its
    training runs' own, or the one machine of `synthformer.evidence.speed`'s timing when that replaced them."""
    if "train_tokens_per_s" in row:
        return {"timed alike"}
    return {s.get("hardware") for s in row.get("seeds") or [row]}


def _fmt_stat(row: dict, key: str, spec: str) -> str:
    interval = (row.get("interval") or {}).get(key)
    if interval and key != "tokens_per_s":
        mean = (row.get("metrics") or {}).get(key)
        return f"{_fmt(mean, spec)} [{_fmt(interval[0], spec)}, {_fmt(interval[1], spec)}]"
    s = stat(seed_values(row, key)) if row.get("seeds") else None
    if s is None or s.std is None:
        return _fmt(row.get(key) if key == "tokens_per_s" else (row.get("metrics") or {}).get(key), spec)
    return f"{spec.format(s.mean)} ± {spec.format(s.std)}"


def tuning_markdown(rows: list[dict], protocol: dict | None, seeds: list | None = None) -> str:
    """What each variant trained with: the values the sweep chose (`synthformer.evidence.tuning`), every candidate's
    validation score and their number (n), and the protocol (`seeds`: the reported ones); or the one setting all
    shared when there was no sweep."""
    rows = [r for r in rows if not r.get("floor") and r.get("tuned")]
    if not rows:
        return ""
    if not protocol:
        t = rows[0]["tuned"]
        return (f"Not tuned: every variant trained with lr {t['lr']:g}, {t['warmup_steps']} warm-up steps and "
                f"table lr multiplier {t['table_lr_mult']:g} (`synthformer compare --tune`, and `reproduce` at "
                "its cpu and gpu budgets, give each variant the same learning-rate sweep first).")
    mults = "/".join(f"{m:g}" for m in protocol["lr_mults"])
    tables = "/".join(f"{m:g}" for m in protocol["table_lr_mults"])
    lines = [f"Tuning (the same sweep for every variant, chosen by validation {protocol.get('metric', 'loss')}; "
             f"`synthformer.evidence.tuning`): lr x{mults} of the base, table multiplier {tables} where a variant has "
             f"position tables, {protocol['fraction']:g} of the steps per candidate"
             f"{_beyond_edges(protocol)}. {protocol_text(protocol, seeds)}", "",
             "| model | lr | warm-up | table lr x | n | candidates (lr, warm-up, table x: validation) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        t, tried = r["tuned"], r.get("sweep") or []
        text = "; ".join(f"{c['lr']:.3g}, {c['warmup_steps']}, x{c['table_lr_mult']:g}: {c['valid']:.4f}" for c in tried)
        lines.append(f"| {r['variant']} | {t['lr']:.3g} | {t['warmup_steps']} | {t['table_lr_mult']:g} | "
                     f"{len(tried)} | {text or '—'} |")
    edge = []
    for r in rows:  # a choice at the grid's edge: that variant's best lr may lie beyond the grid
        beyond = beyond_edge(r["sweep"]) if r.get("sweep") else None
        if beyond:
            edge.append(f"{r['variant']} ({'largest' if beyond['lr'] > r['tuned']['lr'] else 'smallest'})")
    if edge:
        lines += ["", f"Chosen at an edge of the lr grid, so the best lr may lie beyond it: {', '.join(edge)}."]
    noise = [r["variant"] for r in rows if at_chance(r.get("sweep") or [])]
    if noise:
        lines += ["", f"No sweep candidate beat the majority class on validation, so the choice rests on noise: "
                      f"{', '.join(noise)}."]
    return "\n".join(lines)


def _beyond_edges(protocol: dict) -> str:
    """How the protocol (`TuneConfig.edge_steps`, ``edge_spacing``) extends a choice at an edge of the lr grid."""
    if not (steps := protocol.get("edge_steps", 0)):
        return ""
    step = ("the next lr of its grid continued at the grid's own spacing" if protocol.get("edge_spacing") else
            "twice (half) it")
    return f"; a choice at the largest (smallest) lr gets a candidate at {step}, while the new one wins, at most {steps}"


def findings(rows: list[dict], kind: str, claims=None, gated: dict | None = None) -> list[dict]:
    """The paper's claims of task kind `kind` that `rows` can check, each a structured finding
    (see `synthformer.evidence.judge`: claim, table, paper, ours, status, rule); `gated`: `judge.judge_rows`'."""
    return judge_rows(rows, kind, claims, gated)


def findings_markdown(found: list[dict], words: bool = False) -> str:
    """Findings as Markdown bullets, with the rule that decided them (`words`: gaps in the words of their
    direction, compare's own report; `judge.finding_line`)."""
    if not found:
        return "No claim of the paper applies to this task and these variants."
    counts = Counter(f["status"] for f in found)
    summary = ", ".join(f"{counts[s]} {s}" for s in sorted(counts, key=status_rank))
    return f"{summary}.\n\n" + "\n".join(f"- {finding_line(f, words=words)}" for f in found)


def cell_text(text) -> str:
    """A value as one Markdown table cell (pipes escaped, one line)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(head: list[str], rows: list[list]) -> str:
    """The one Markdown table writer: a header row, the separator, one line per row."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(cell_text(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)

"""The rule that judges each of the paper's claims (`synthformer.evidence.paper.claims`) on a comparison's
result rows: reproduced, not reproduced, inconclusive or undecidable at this size.

Every pair (subject A, other B) of a claim is judged on the **gap** = A's shortfall relative to B,
``(A - B) / |B|`` when lower is better, ``(B - A) / |B|`` when higher is better (positive = A worse):

* ``worse``  -- A worse than every other by more than ``t``: the line is ``gap = t``;
* ``better`` -- A better than every other by more than ``t`` (0 = simply better): ``gap = -t``;
* ``within`` -- A close to every other, a two-sided band: ``-t < gap < t``.

**The rule** (`judge`):

1. *Floor.* When the rows hold a floor row (``"floor": true``; never a variant) with the claim's
   metric (``Claim.gates``: ``Claim.learned_on``, several joined by ",", default the claim's metric), every
   seed of every variant compared (not their mean) must beat it by
   a stated margin: ``FLOOR_REL_MARGIN`` (5%) below it for perplexity / loss, ``FLOOR_POINTS[metric]``
   points above it for accuracy (``CHANCE_MARGIN``), BLEU and ROUGE-L, and at least ``Claim.learned_min``
   where the claim sets one (the MT BLEU claims: ``MT_BLEU_LEARNED``). Otherwise the claim is
   *inconclusive* with the note "not learned: <variant> [seed <s>] <value> vs floor <value>". The majority-class
   floor of accuracy is the better of the floor row's and each seed's "chance_accuracy" (the evaluated split's
   own majority class; `floors.majority_accuracy` takes the better of the two itself). Without a floor row
   two older guards apply: every variant within ``CHANCE_MARGIN`` points of the majority-class
   accuracy, or every BLEU under ``BLEU_FLOOR`` / a tenth of the paper's -> *inconclusive*.
2. *Interval.* Per pair a 95% interval of the gap:

   * two or more seeds shared by A and B: per-seed gaps ``g_i`` (a seed's data order is common to
     both, so its swing cancels); ``gap = mean(g_i)``, half-width
     ``sqrt((t95(n - 1) * sd(g_i) / sqrt(n))^2 + (1.96 * se_item)^2)``: each source of noise with its
     own quantile, as `stats.combine` (the item error is not estimated from the seeds, so a t with
     n - 1 degrees of freedom does not apply to it);
   * two or more seeds of each, not shared: gap of the means, half-width
     ``sqrt((t95(min(n_A, n_B) - 1) * sqrt(var))^2 + (1.96 * se_item)^2)``, ``var`` = the delta-method
     variance of the ratio from ``sd_A^2 / n_A`` and ``sd_B^2 / n_B``;
   * fewer than two seeds on a side: half-width ``max(1.96 * sqrt(var), SINGLE_SEED_MARGIN)`` -- one
     seed cannot show the training noise, so never narrower than 5%; item errors widen it.

   (`synthformer.evidence.gaps.pair_gap`.) Where every compared run kept its per-item record (``"items"``, new cells), ``1.96 * se_item`` is
   replaced by the paired bootstrap's: item indices resampled jointly across A's and B's runs
   (`synthformer.evidence.paired.gap_item_se`), the pair's ``method`` then ending ", paired bootstrap over N
   items". Otherwise (older cells):
   ``se_item`` is the evaluation-item error of the gap from the per-seed ``M_se`` (bootstrap standard
   error over evaluation items) of A and B, by the delta method, averaged over seeds without
   dividing by their number (the seeds share the evaluation items, so that error does not average
   out); 0 when a seed lacks ``M_se`` (older rows).
3. *Decision.* ``worse``: reproduced when the interval lies above ``t``, not reproduced when it lies
   below; ``better``: reproduced when it lies below ``-t``, not reproduced when above; ``within``:
   reproduced when it lies inside ``(-t, t)``, not reproduced when it lies wholly beyond either edge
   (the pair's ``direction`` says which way, e.g. "R 15.0% better than V, beyond the ±10% band"). A band
   the paper gives a side (``Claim.lean``: "close to V, slightly worse") is also *not reproduced* when the
   interval lies wholly on the other side of 0 ("FR 9.8% better than V, on the other side of the paper's
   'slightly worse'"). A band whose interval's half-width is at least the band's ``t`` can never lie inside
   it: such a pair, when not refuted, is *undecidable at this size* (``UNDECIDABLE``), and the note says what
   would decide it (`size_needed`: each part of the half-width scales as 1/sqrt(n), seeds or items).
   Anything else is inconclusive, its note saying what size would decide it were the gap to hold (`to_decide`:
   the half-width under the gap's distance to the line it must clear, `decisive_half`). A claim is *not
   reproduced* when any pair is, else *inconclusive* when any pair is, else *undecidable at this size* when any
   pair is, else *reproduced*; step 1 overrides all of it with *inconclusive*.

4. *Proxy.* A claim with a proxy metric (``Claim.proxy``; the MT BLEU and every Table 3 claim: ``ppl``, the
   teacher-forced perplexity, on the split the rows report) whose own metric is *not learned* by step 1 is judged again,
   steps 1-3, on the proxy: same subject, others, relation and threshold (relative gaps of the
   perplexity, lower is better; the paper printed no perplexity, so it is a proxy, not the claim),
   gated by the floor rows' proxy value (MT: the target-side Kneser-Ney bigram, `floors.
   seq2seq_target_floor`) with the same ``FLOOR_REL_MARGIN`` as the LM claims. Its verdict becomes
   the finding, with the proxy in the status itself, e.g. ``"reproduced (proxy: teacher-forced
   validation ppl; BLEU not learned)"`` (`proxy_status`), "metric" the proxy's, "ours" / "pairs" the
   proxy's numbers, "note" starting "BLEU not learned: ..." and the BLEU numbers kept under
   "not_learned"; so a reader sees both the BLEU gate and the proxy verdict in one line, and never
   takes the verdict for BLEU's. When the proxy is not learned either (or no floor row holds it) the
   finding stays the BLEU one, *inconclusive*, its note "not learned: ...; proxy (teacher-forced
   validation ppl) not learned either: ...". A claim whose metric is learned is judged on it alone.

Only the variants that were run count; a claim whose subject, every other variant, or metric is
missing from the rows is not shown. Rows without ``_se``, ``interval`` or a floor row are judged by
the same rule with those parts left out.

`judge` gives one claim's finding, `judge_rows` the findings of every claim of a task kind, `gate_note`
why a comparison stops after its first variant, `finding_line` a finding as a Markdown bullet.
Statistics come from `synthformer.utils.stats` (`Stat`, `stat`) and the pairs' intervals from
`synthformer.evidence.gaps`.
"""
from __future__ import annotations

import statistics
from dataclasses import replace

from ..tasks.metrics import LOWER_IS_BETTER, METRIC_TITLES, clip_to_range
from ..utils.stats import Stat, finite_number, stat
from .gaps import BESIDE_METRICS, SINGLE_SEED_MARGIN, Gap, pair_gap, parts_text, read_metric, sizes_for
from .paper.claims import CLAIMS, PROXY_LABELS, Claim

FLOOR_REL_MARGIN = 0.05  # perplexity / loss: a variant must be this fraction below the floor's value
CHANCE_MARGIN = 2.0  # accuracy points above the majority class (floor row or "chance_accuracy")
FLOOR_POINTS = {"bleu": 1.0, "rougeL": 1.0}  # BLEU / ROUGE-L points above the copy / lead floor
BLEU_FLOOR = 1.0  # no floor row: every variant under this BLEU (0-100) learned no output, gaps are noise
BLEU_PAPER_FRACTION = 0.1  # ... nor under a tenth of the paper's lowest score in the claim
UNDECIDABLE = "undecidable at this size"  # a band the data's interval cannot fit in: refutable, never reproducible
ON_LINE = 5e-4  # a gap this close to its decision line: no size decides it (`to_decide`)
STATUSES = ("reproduced", "not reproduced", "inconclusive", UNDECIDABLE)


def rule_text(claim: Claim) -> str:
    """The decision rule of `claim` in words, as each finding prints it (the module docstring has it
    in full)."""
    t = _pct(claim.threshold)
    what = {"worse": f"worse than each by > {t}: reproduced when the 95% interval of the gap lies above +{t}, "
                     "not when below",
            "within": f"within ±{t} of each (two-sided band): reproduced when the 95% interval of the gap lies "
                      "inside it, not when wholly outside"
                      + (f"; the paper has it slightly {claim.lean}, so not reproduced either when the interval lies "
                         f"wholly on the {'better' if claim.lean == 'worse' else 'worse'} side of 0" if claim.lean else "")
                      + f"; undecidable at this size when the interval's half-width reaches ±{t}",
            "better": f"better than each{f' by > {t}' if claim.threshold else ''}: reproduced when the 95% "
                      f"interval of the gap lies below {'-' + t if claim.threshold else '0'}, not when above"
            }[claim.relation]
    floor = "".join(
        (f"; judged only when every seed of every variant is {FLOOR_REL_MARGIN:.0%} below the floor's {gate}"
         if _lower(claim, gate) else
         f"; judged only when every seed of every variant is {_floor_points(gate):g} points above the floor's {gate}"
         + (" (the better of the train and the test majority class)" if gate == "accuracy" else "")
         + (f" and at least {claim.learned_min:g}" if claim.learned_min else "")) for gate in claim.gates)
    way = "lower" if claim.proxy in LOWER_IS_BETTER else "higher"
    proxy = (f"; while {_title(claim.metric)} is not learned, the same relation on the {PROXY_LABELS[claim.proxy]} "
             f"({way} is better), gated by its floor, gives a verdict labelled as that proxy" if claim.proxy else "")
    return (f"{claim.subject} {what} ({'lower' if claim.lower_is_better else 'higher'} {claim.metric} counts as "
            f"better); interval: t over paired seeds plus item errors (a paired bootstrap over the items where every "
            f"compared run kept them), at least ±{SINGLE_SEED_MARGIN:.0%} with one seed" + ("" if claim.metric in BESIDE_METRICS else floor) + proxy)


def _title(metric: str) -> str:
    return METRIC_TITLES.get(metric, metric)


def _pct(x: float) -> str:
    return f"{x:.1%}".replace(".0%", "%")


def _lower(claim: Claim, metric: str) -> bool:
    return claim.lower_is_better if metric == claim.metric else metric in LOWER_IS_BETTER


def _floor_points(metric: str) -> float:
    return FLOOR_POINTS.get(metric, CHANCE_MARGIN)


# ----------------------------------------------------------------------------- our numbers
def seed_runs(row: dict, metric: str) -> list[tuple[object, float, float | None]]:
    """(seed or None, value, item standard error or None) of each run of a row that has `metric`: its
    "seeds" list when present, else the row itself. The error is the run's "<metric>_se"."""
    out = []
    for r in row.get("seeds") or [row]:
        v = read_metric(r, metric)
        if v is not None:
            out.append((r.get("seed"), v, read_metric(r, f"{metric}_se")))
    return out


def seed_values(row: dict, metric: str) -> list[float]:
    """Per-seed values of `metric` in a result row: its "seeds" list when present, else the row itself.
    "tokens_per_s" (and "peak_bytes") are read beside the metrics."""
    return [v for _, v, _ in seed_runs(row, metric)]


def row_stat(row: dict, metric: str) -> Stat | None:
    """`stat` of a row's per-seed values, with the row's "interval" of the metric when it has one."""
    s = stat(seed_values(row, metric))
    iv = (row.get("interval") or {}).get(metric)
    if (s is not None and isinstance(iv, (list, tuple)) and len(iv) == 2
            and all(finite_number(x) is not None for x in iv)):
        s = Stat(s.mean, s.std, s.n, (float(iv[0]), float(iv[1])))
    return s


def is_floor(row: dict) -> bool:
    """A floor row (a trivial baseline on the same data): never a variant."""
    return bool(row.get("floor"))


# ----------------------------------------------------------------------------- the rule
def decide(claim: Claim, g: Gap) -> str:
    """The status of one pair's gap under the claim's relation (module docstring, step 3)."""
    t = claim.threshold
    if claim.relation == "worse":
        status = "reproduced" if g.lo > t else "not reproduced" if g.hi < t else "inconclusive"
    elif claim.relation == "better":
        status = "reproduced" if g.hi < -t else "not reproduced" if g.lo > -t else "inconclusive"
    else:
        wrong_side = (claim.lean == "worse" and g.hi < 0) or (claim.lean == "better" and g.lo > 0)
        status = ("not reproduced" if g.lo > t or g.hi < -t or wrong_side else
                  "reproduced" if -t < g.lo and g.hi < t else
                  UNDECIDABLE if g.half >= t else "inconclusive")
    return status


def size_needed(claim: Claim, g: Gap) -> str:
    """In words: why a band claim is undecidable with the gap's interval `g` (its half-width reaches the band
    ±t) and what size would bring the half-width under t (`gaps.sizes_for`). Under t is necessary, not
    sufficient: the gap itself must also sit inside the band."""
    t = claim.threshold
    head = f"the 95% half-width this data reaches, {parts_text(g)}, is at least the ±{_pct(t)} band, so its " \
           "interval can never lie inside it"
    if g.floor_half >= t:
        return (f"{head}: one seed's interval is never narrower than ±{g.floor_half:.0%}; with 3 or more seeds of "
                "each, shared, the seed spread can be measured")
    return (f"{head}; each part of the half-width scales as 1/sqrt(n) (n: seeds for the seed part, items for "
            f"the item part), so {' or '.join(sizes_for(g, t))} would bring it under ±{_pct(t)} (necessary, not "
            "sufficient: the gap must also sit inside the band)")


def decisive_half(claim: Claim, gap: float) -> float:
    """The widest 95% half-width at which an interval centred on `gap` decides the pair under the claim's
    relation (`decide`: reproduced or not reproduced): its distance to the line it must clear -- t for
    "worse", -t for "better"; for a band the nearer edge from inside (or the farther side beyond it), or 0 on
    the wrong side of a band with the paper's lean, whichever decides at the wider interval. 0: on a line."""
    t = claim.threshold
    if claim.relation == "worse":
        return abs(gap - t)
    if claim.relation == "better":
        return abs(gap + t)
    wrong_side = (claim.lean == "worse" and gap < 0) or (claim.lean == "better" and gap > 0)
    return max(abs(abs(gap) - t), abs(gap) if wrong_side else 0.0)


def to_decide(claim: Claim, g: Gap) -> str:
    """In words: what size would decide an inconclusive pair were its gap to hold (`decisive_half`, `sizes_for`),
    e.g. "a 95% half-width under ±9.1%, against ±30.4% (seeds ±30.3% over 3, items ±1.4%) now, would decide it were
    the gap to hold at +9.1%: ~10 seeds (items as now)". Only a guide: the gap moves as the size grows."""
    h = decisive_half(claim, g.gap)
    sizes = _sizes(g, h)
    if h < ON_LINE:
        return f"the gap {g.gap:+.1%} sits on the line the claim is decided by; no size decides it were it to hold"
    if not sizes:
        return (f"one seed's interval is never narrower than ±{g.floor_half:.0%}; a half-width under ±{h:.1%} "
                "needs 3 or more seeds of each, shared")
    return (f"a 95% half-width under ±{h:.1%}, against {parts_text(g)} now, would decide it were the gap to hold "
            f"at {g.gap:+.1%}: {' or '.join(sizes)}")


def _sizes(g: Gap, under: float) -> list[str]:
    """`sizes_for(g, under)`, or none where no size reaches it (a gap on its line, one seed's floor)."""
    return sizes_for(g, under) if under >= ON_LINE and g.floor_half < under else []


def _open_pair(claim: Claim, g: Gap, status: str) -> dict:
    """What a pair left open carries: "needs", the sentence of `size_needed` (undecidable) or `to_decide`
    (inconclusive), and "to_decide", its numbers: the half-width now, the one that would decide, the sizes."""
    if status not in (UNDECIDABLE, "inconclusive"):
        return {}
    under = claim.threshold if status == UNDECIDABLE else decisive_half(claim, g.gap)
    return {"needs": (size_needed if status == UNDECIDABLE else to_decide)(claim, g),
            "to_decide": {"half": round(g.half, 4), "under": round(under, 4), "sizes": _sizes(g, under)}}


def _direction(claim: Claim, other: str, g: Gap) -> str:
    """In words: how the subject stands against `other`, and against which line (for failing pairs)."""
    t = _pct(claim.threshold)
    gap = round(g.gap, 4)  # as the finding's "gap" shows it
    way = f"{claim.subject} {abs(gap):.1%} {'worse' if gap > 0 else 'better'} than {other}"
    if claim.relation == "within":
        if g.lo > claim.threshold or g.hi < -claim.threshold:
            return f"{way}, beyond the ±{t} band"
        return f"{way}, on the other side of the paper's 'slightly {claim.lean}'"
    if claim.relation == "worse":
        return f"{way}, not worse by more than {t}" if claim.threshold else f"{way}, not worse"
    return f"{way}, not better by more than {t}" if claim.threshold else f"{way}, not better"


def judge(claim: Claim, rows: list[dict]) -> dict | None:
    """The finding of one claim on result rows, or None when it cannot be checked (the subject,
    every other variant, or the metric is missing). Floor rows are read for the floor, never compared.
    A claim with a `Claim.proxy` whose metric is not learned is judged on the proxy (`_proxy_finding`)."""
    found = _judge(claim, rows)
    if found is None:
        return None
    finding, learned = found
    return finding if learned or not claim.proxy else _proxy_finding(claim, rows, finding)


def _judge(claim: Claim, rows: list[dict]) -> tuple[dict, bool] | None:
    """(the finding of `judge` on the claim's own metric, whether its variants learned it: False when
    a floor or an older guard made it inconclusive), or None when it cannot be checked."""
    floors = [r for r in rows if is_floor(r)]
    by_variant = {r["variant"]: r for r in rows if not is_floor(r)}
    if claim.subject not in by_variant:
        return None
    a_row = by_variant[claim.subject]
    a_runs, a = seed_runs(a_row, claim.metric), row_stat(a_row, claim.metric)
    if a is None:
        return None
    pairs = []
    for other in claim.others:
        b_runs = seed_runs(by_variant[other], claim.metric) if other in by_variant else []
        if b_runs:
            g = pair_gap(claim.lower_is_better, a_runs, b_runs, claim.metric, a_row, by_variant[other])
            status = decide(claim, g)
            pairs.append({"other": other, "status": status, "gap": round(g.gap, 4),
                          "interval": [round(g.lo, 4), round(g.hi, 4)], "method": g.method,
                          **({"direction": _direction(claim, other, g)} if status == "not reproduced" else {}),
                          **_open_pair(claim, g, status)})
    if not pairs:
        return None
    statuses = [p["status"] for p in pairs]
    status = next(s for s in ("not reproduced", "inconclusive", UNDECIDABLE, "reproduced") if s in statuses)
    compared = [by_variant[v] for v in (claim.subject, *(p["other"] for p in pairs))]
    note = _not_learned(claim, compared, floors)
    if note is None and not any(_floor_value(floors, m) for m in claim.gates):
        note = _at_chance(claim, compared) or _below_floor(claim, compared)
    learned = not note
    if note:  # a floor decides it: the sizes of its open pairs would not
        status = "inconclusive"
        pairs = [{k: v for k, v in p.items() if k not in ("needs", "to_decide")} for p in pairs]
    elif status == "not reproduced":
        note = "; ".join(p["direction"] for p in pairs if "direction" in p)
    elif status in (UNDECIDABLE, "inconclusive"):
        note = "; ".join(f"{claim.subject} vs {p['other']}: {p['needs']}" for p in pairs if "needs" in p)
    ours = {claim.subject: _stat_dict(a), **{p["other"]: _stat_dict(row_stat(by_variant[p["other"]], claim.metric))
                                            for p in pairs}}
    return {"claim": claim.name, "text": claim.text, "table": claim.table, "benchmark": claim.benchmark,
            "metric": claim.metric, "relation": claim.relation, "threshold": claim.threshold, "status": status,
            "rule": rule_text(claim), "paper": {v: claim.paper[v] for v in ours if v in claim.paper},
            "ours": ours, "pairs": pairs, **({"note": note} if note else {})}, learned


def judge_learned(claim: Claim, rows: list[dict]) -> tuple[dict, bool] | None:
    """Steps 1-3 of the rule on the claim's own metric alone, no proxy: (the finding, whether every variant compared
    learned the metric: False when step 1, a floor or an older guard, made it inconclusive), or None when it cannot
    be checked. For a rule built on this one (`synthformer.evidence.crosstask`: one pair per task)."""
    return _judge(claim, rows)


def proxy_claim(claim: Claim) -> Claim:
    """`claim` on its proxy metric (step 4): the same subject, others, relation and threshold, the proxy's direction."""
    return replace(claim, metric=claim.proxy, lower_is_better=claim.proxy in LOWER_IS_BETTER, proxy="")


def floor_holds(rows: list[dict], metric: str) -> bool:
    """Whether a floor row of `rows` holds `metric` (a proxy is judged only where a floor gates it)."""
    return _floor_value([r for r in rows if is_floor(r)], metric) is not None


def proxy_status(status: str, claim: Claim) -> str:
    """The status of a verdict reached on `claim`'s proxy, labelled so it never reads as one on its metric,
    e.g. "reproduced (proxy: teacher-forced ppl; BLEU not learned)"."""
    return f"{status} (proxy: {PROXY_LABELS[claim.proxy]}; {_title(claim.metric)} not learned)"


def status_rank(status: str) -> tuple[int, int, str]:
    """Sort key of a finding's status: `STATUSES`' order, a labelled one ("reproduced (proxy: ...)",
    `proxy_status`) right after its own, any other last."""
    for i, s in enumerate(STATUSES):
        if status == s:
            return i, 0, ""
        if status.startswith(s + " ("):
            return i, 1, status
    return len(STATUSES), 0, status


def _proxy_missed(claim: Claim, note: str) -> str:
    """What is appended to a "not learned: ..." note when `claim`'s proxy is not learned either (`note`, its own)."""
    return f"; proxy ({PROXY_LABELS[claim.proxy]}) {note.replace('not learned', 'not learned either', 1)}"


def _proxy_finding(claim: Claim, rows: list[dict], finding: dict) -> dict:
    """The finding of a claim whose own metric was not learned (`finding`, inconclusive), judged on its
    proxy: the same subject, others, relation and threshold on the proxy metric, gated by the floor rows'
    proxy value with the same margin rule. A verdict there becomes the finding, its status labelled
    (`proxy_status`), the unlearned metric kept under "not_learned"; a proxy not learned either (or
    without a floor to gate it) leaves `finding` inconclusive, its note saying why."""
    label, title = PROXY_LABELS[claim.proxy], _title(claim.metric)
    floor = _floor_value([r for r in rows if is_floor(r)], claim.proxy)
    found = _judge(proxy_claim(claim), rows)
    if floor is None or found is None:
        why = (f"no floor row holds a {claim.proxy} to gate it (compute the floor again)" if found else
               f"a variant compared has no {claim.proxy}")
        return {**finding, "note": f"{finding['note']}; no proxy verdict on the {label}: {why}"}
    proxy, learned = found
    if not learned:
        return {**finding, "note": finding["note"] + _proxy_missed(claim, proxy["note"])}
    note = f"{title} {finding['note']}; the status is the proxy's: the {label} against the {floor[1]} floor"
    return {**proxy, "status": proxy_status(proxy["status"], claim),
            "benchmark": f"{claim.benchmark}; ours: proxy, {label}",
            "rule": f"proxy for {title}, which is not learned: {proxy['rule']}",
            "note": note + (f"; {proxy['note']}" if proxy.get("note") else ""),
            "proxy": {"metric": claim.proxy, "label": label, "status": proxy["status"]},
            "not_learned": {k: finding[k] for k in ("metric", "ours", "pairs", "note")}}


def _floor_value(floors: list[dict], metric: str) -> tuple[float, str] | None:
    """(value, name) of the hardest floor row holding `metric` (the one a variant finds hardest to beat)."""
    found = [(v, (f.get("names") or {}).get(metric) or f.get("name") or "floor")
             for f in floors if (v := read_metric(f, metric)) is not None]
    if not found:
        return None
    return min(found) if metric in LOWER_IS_BETTER else max(found)


def _not_learned(claim: Claim, rows: list[dict], floors: list[dict]) -> str | None:
    """Step 1 of the rule with a floor row: why the claim says nothing (a seed of a variant compared does not
    beat the floor by the margin, on any of the claim's `Claim.gates`), or None when every seed of every one
    does or no floor row holds a gated metric."""
    notes = [note for metric in claim.gates if (note := _seeds_below(claim, metric, rows, floors))]
    return "; ".join(notes) or None


def _majority(floor: float, run: dict | None) -> float:
    """The majority-class floor of one seed's accuracy: the better of the floor row's (the train split's
    majority class scored on the evaluated split, `floors.majority_accuracy` before it took the better of the
    two) and the seed's own "chance_accuracy" (the evaluated split's majority class, `ClassifyTask.eval_metrics`)."""
    chance = finite_number(((run or {}).get("metrics") or {}).get("chance_accuracy"))
    return max(floor, chance) if chance is not None else floor


def _seeds_below(claim: Claim, metric: str, rows: list[dict], floors: list[dict]) -> str | None:
    """`_not_learned` on one gated metric: every seed of every row must clear the floor's line."""
    found = _floor_value(floors, metric)
    if found is None:
        return None
    floor, name = found
    lower = _lower(claim, metric)
    least = 0.0 if lower else claim.learned_min  # an absolute bar above the floor's line (MT BLEU)
    failed, used = [], floor
    for r in rows:
        runs = r.get("seeds") or [r]
        bad = []
        for run in runs:
            v = read_metric(run, metric)
            if v is None:
                continue
            f = _majority(floor, run) if metric == "accuracy" else floor
            used = max(used, f)
            line = f * (1 - FLOOR_REL_MARGIN) if lower else f + _floor_points(metric)
            if not (v < line if lower else v > line and v >= least):
                bad.append((run.get("seed"), v))
        if bad and len(bad) < len(runs):  # some seeds only: name them
            failed.append(f"{r['variant']} " + ", ".join(f"seed {sd} {v:.4g}" if sd is not None else f"{v:.4g}"
                                                          for sd, v in bad) + f" (of {len(runs)} seeds)")
        elif bad:  # every seed: their mean
            failed.append(f"{r['variant']} {statistics.fmean(v for _, v in bad):.4g}")
    if not failed:
        return None
    line = used * (1 - FLOOR_REL_MARGIN) if lower else used + _floor_points(metric)
    if used > floor:
        name = f"{name}: the better of the train majority, {floor:.4g}, and the test majority, {used:.4g}"
    need = (f"{metric} < {line:.4g}: {FLOOR_REL_MARGIN:.0%} below it" if lower
            else f"{metric} > {line:.4g}: {_floor_points(metric):g} points above it"
            + (f", and at least {least:g}" if least > line else ""))
    return f"not learned: {', '.join(failed)} vs floor {used:.4g} ({name}; every seed needs {need})"


def _at_chance(claim: Claim, rows: list[dict]) -> str | None:
    """Without a floor row: why a classification claim says nothing: every variant compared sits within
    CHANCE_MARGIN points of the majority-class accuracy (rows carry "chance_accuracy" beside
    "accuracy"), so the gaps between them are noise. None when any variant learned, or for other metrics."""
    if claim.metric in ("tokens_per_s", "peak_bytes", "loss", "ppl", "weight_var"):
        return None
    accs = [stat(seed_values(r, "accuracy")) for r in rows]
    chances = [stat(seed_values(r, "chance_accuracy")) for r in rows]
    if any(a is None for a in accs) or any(c is None for c in chances):
        return None
    if all(a.mean <= c.mean + CHANCE_MARGIN for a, c in zip(accs, chances)):
        return (f"no variant beats the majority-class accuracy ({chances[0].mean:.1f}%) by more than "
                f"{CHANCE_MARGIN:g} points: nothing was learned at this budget")
    return None


def _below_floor(claim: Claim, rows: list[dict]) -> str | None:
    """Without a floor row: why a BLEU claim says nothing: every variant compared scores under BLEU_FLOOR,
    or a tenth of the paper's lowest number in the claim if higher, where BLEU counts a few chance
    n-gram matches and gaps between variants are noise. None otherwise."""
    if claim.metric != "bleu":
        return None
    scores = [stat(seed_values(r, "bleu")) for r in rows]
    paper = [claim.paper[r["variant"]] for r in rows if r["variant"] in claim.paper]
    floor = max(BLEU_FLOOR, BLEU_PAPER_FRACTION * min(paper, default=0.0))
    if all(s is not None and s.mean < floor for s in scores):
        return (f"every variant compared scores below {floor:.3g} BLEU (a tenth of the paper's, at least "
                f"{BLEU_FLOOR:g}): no translation or response was learned at this budget")
    return None


def _stat_dict(s: Stat) -> dict:
    return {"mean": s.mean, "std": s.std, "n": s.n, **({"interval": list(s.interval)} if s.interval else {})}


def judge_rows(rows: list[dict], kind: str, claims: tuple[Claim, ...] | None = None,
             gated: dict | None = None) -> list[dict]:
    """Findings of every claim of task kind `kind` (of `claims`, default all) that `rows` can check.
    Floor rows (``"floor": true``) gate the claims and are never compared as variants. `gated`: the
    comparison stopped after its first variant (`gate_note`; {"by", "skipped", "note"}), and a claim
    naming a variant it skipped is *inconclusive*, not learned at this budget (`_gated`; a speed or memory
    claim, which no floor gates, is left out like any claim whose variants were not run)."""
    out = []
    for claim in claims if claims is not None else CLAIMS:
        if claim.applies_to(kind):
            finding = judge(claim, rows)
            if (finding is None and gated and claim.metric not in BESIDE_METRICS
                    and set(gated["skipped"]) & {claim.subject, *claim.others}):
                finding = _gated(claim, rows, gated)
            if finding is not None:
                out.append(finding)
    return out


def gate_note(row: dict, floors: list[dict], kind: str, claims: tuple[Claim, ...] | None = None) -> str | None:
    """Why a comparison stops after the variant of `row` (compare's ``gate``, V at a budget too small for its
    task): it does not beat the floor (step 1 of the rule, on `row` alone) on the metric of any claim of `kind`
    that a floor row gates, nor on such a claim's proxy, so no claim of the grid could be judged at this budget.
    The "not learned: ..." notes, or None when it learned one (or no claim is gated by a floor)."""
    notes = []
    for claim in claims if claims is not None else CLAIMS:
        if not claim.applies_to(kind) or not any(_floor_value(floors, m) is not None and row_stat(row, m) is not None
                                                 for m in claim.gates):
            continue
        note = _not_learned(claim, [row], floors)
        if note is not None and claim.proxy and _floor_value(floors, claim.proxy) and row_stat(row, claim.proxy):
            on_proxy = replace(claim, metric=claim.proxy, lower_is_better=claim.proxy in LOWER_IS_BETTER, learned_on="")
            if (missed := _not_learned(on_proxy, [row], floors)) is None:
                return None  # judged on its proxy
            note += _proxy_missed(claim, missed)
        if note is None:
            return None
        notes.append(note)
    return "; ".join(dict.fromkeys(notes)) or None


def _gated(claim: Claim, rows: list[dict], gated: dict) -> dict:
    """The finding of a claim naming a variant the comparison did not train (`judge_rows`' `gated`)."""
    by_variant = {r["variant"]: r for r in rows if not is_floor(r)}
    ours = {v: _stat_dict(s) for v in (claim.subject, *claim.others)
            if v in by_variant and (s := row_stat(by_variant[v], claim.metric)) is not None}
    skipped = [v for v in (claim.subject, *claim.others) if v in gated["skipped"]]
    return {"claim": claim.name, "text": claim.text, "table": claim.table, "benchmark": claim.benchmark,
            "metric": claim.metric, "relation": claim.relation, "threshold": claim.threshold,
            "status": "inconclusive", "rule": rule_text(claim), "paper": dict(claim.paper), "ours": ours, "pairs": [],
            "note": f"{gated['note']}; {gated['by']}, trained first, did not clear the floor, so "
                    f"{', '.join(skipped)} were not trained at this budget", "gated": True}


def finding_line(f: dict, words: bool = False) -> str:
    """One Markdown bullet for a finding: paper, ours (with 95% intervals when present), each pair's gap
    with its interval, the rule and any note. `words` (compare's own report): each gap in the words of
    its direction ("R 15.5% faster than V"; `gap_words`) instead of the signed shortfall."""
    spec = "{:,.0f}" if f["metric"] in BESIDE_METRICS else "{:.4g}"
    if words:  # labelled, and each interval cut to the metric's range
        ours = ", ".join(f"{v} {_labelled(s, f['metric'], spec)}" for v, s in f["ours"].items()) or "none trained"
    else:
        ours = ", ".join(f"{v} {Stat(**{**s, 'interval': tuple(s['interval']) if s.get('interval') else None}).show(spec)}"
                         for v, s in f["ours"].items()) or "none trained"
    paper = ", ".join(f"{v} {_paper(p)}" for v, p in f["paper"].items()) or "a figure, no numbers"
    if words:
        gaps = "; ".join(gap_words(next(iter(f["ours"])), p, f["metric"]) for p in f["pairs"])
        gaps = f"; {gaps}" if gaps else ""
    else:
        gaps = ", ".join(f"{next(iter(f['ours']))} vs {p['other']} {p['gap']:+.1%}"
                         + (f" [{p['interval'][0]:+.1%}, {p['interval'][1]:+.1%}]" if p.get("interval") else "")
                         + (f" ({p['method']})" if p.get("method") else "")  # which interval: paired bootstrap or not
                         for p in f["pairs"])
        gaps = f"; shortfall {gaps}" if gaps else ""
    return (f"**{f['status']}**: {f['text']} [{f['table']}, {f['benchmark']}; `{f['claim']}`]. "
            f"Paper: {paper}. Ours ({f['metric']}): {ours}" + gaps
            + f". Rule: {f['rule']}." + (f" Note: {f['note']}." if f.get("note") else ""))


def _labelled(s: dict, metric: str, spec: str) -> str:
    """A variant's value in a finding of compare's own report: "9.29 (seed std 0.21; 95% interval [8.79, 9.81])",
    the interval cut to the metric's range."""
    parts = [f"seed std {s['std']:.2g}"] if s.get("std") is not None else []
    if s.get("interval"):
        lo, hi = clip_to_range(metric, *s["interval"])
        parts.append(f"95% interval [{spec.format(lo)}, {spec.format(hi)}]")
    return spec.format(s["mean"]) + (f" ({'; '.join(parts)})" if parts else "")


# How a gap reads in each direction (positive gap = the subject worse), per metric; the rest: worse / better.
GAP_WORDS = {"tokens_per_s": ("slower", "faster"), "peak_bytes": ("heavier", "lighter")}


def gap_words(subject: str, pair: dict, metric: str) -> str:
    """A pair's relative gap in words that follow the metric's direction, e.g. "R 15.5% faster than V (95%
    interval: 10.2% to 20.8% faster)"; the gap is relative to the other's mean."""
    worse, better = GAP_WORDS.get(metric, ("worse", "better"))

    def say(g: float) -> str:
        return f"{abs(g):.1%} {worse if g > 0 else better}" if g else "level"

    text = f"{subject} {say(pair['gap'])} than {pair['other']}"
    if pair.get("interval"):
        lo, hi = pair["interval"]
        text += f" (95% interval: {say(lo)} to {say(hi)})"
    return text


def _paper(value: float) -> str:
    """A paper number as the tables print it (two decimals, three for log perplexities)."""
    return f"{value:.2f}" if round(value, 2) == value else f"{value:g}"

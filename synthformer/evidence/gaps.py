"""A claim's pair gap and its 95% interval: step 2 of the rule in `synthformer.evidence.judge`.

The gap of subject A against other B is A's shortfall relative to B, ``(A - B) / |B|`` when lower is better,
``(B - A) / |B|`` when higher is better (positive = A worse). `pair_gap` gives it with its interval from each
side's per-seed runs: the per-seed gaps over shared seeds (t over the seeds), else the gap of the means (the
delta method's variance), one seed never narrower than ``SINGLE_SEED_MARGIN``; the item part from the runs'
own errors, or the paired bootstrap over the items where every run kept them (`synthformer.evidence.paired`).
`t95` is the two-sided t quantile it uses, `Gap` what it returns, `read_metric` a row's value of a metric,
`sizes_for` the sizes (seeds or items) that would bring a gap's half-width under a target.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, replace

from ..utils.stats import finite_number, mean_se_shared, t_quantile

SINGLE_SEED_MARGIN = 0.05  # fewer than two seeds a side: the gap's interval is at least ± this (relative)
Z95 = 1.96  # normal 97.5% quantile (one seed: item errors only)
BESIDE_METRICS = ("tokens_per_s", "peak_bytes")  # read beside a row's "metrics" (metrics as fallback)


def read_metric(r: dict, key: str) -> float | None:
    """`key` of one (per-seed) row: inside "metrics", or beside it for tokens_per_s / peak_bytes."""
    metrics = r.get("metrics") or {}
    if key in BESIDE_METRICS:
        return finite_number(r.get(key)) if r.get(key) is not None else finite_number(metrics.get(key))
    return finite_number(metrics.get(key))


@functools.lru_cache(maxsize=None)
def t95(df: int) -> float:
    """Two-sided 95% Student t quantile with `df` degrees of freedom (df >= 1): `stats.t_quantile(0.975, df)`
    to three decimals, the precision of the printed t table the rule was written with (for df <= 30 these are
    that table's numbers, digit for digit)."""
    return round(t_quantile(0.975, df), 3)


@dataclass(frozen=True)
class Gap:
    """A pair's relative gap (positive = the subject worse) with its 95% interval."""

    gap: float
    lo: float
    hi: float
    method: str  # "paired seeds" | "unpaired seeds" | "one seed" (+ ", paired bootstrap over N items")
    seed_half: float = 0.0  # the seed part of the half-width (t over seeds; one seed: 0)
    item_half: float = 0.0  # the item part (1.96 x the item error of the gap)
    n_seeds: int = 1  # seeds the seed part is over (shared seeds, or the smaller side)
    n_items: int | None = None  # evaluation items, where the rows say
    floor_half: float = 0.0  # a half-width no size changes (one seed: SINGLE_SEED_MARGIN)

    @property
    def half(self) -> float:
        return (self.hi - self.lo) / 2


def _ratio_var(a: float, b: float, var_a: float, var_b: float) -> float:
    """Delta-method variance of (a - b) / |b| from the variances of a and b (independent)."""
    return (var_a + (a / b) ** 2 * var_b) / b ** 2


def pair_gap(lower_is_better: bool, a_runs: list, b_runs: list, metric: str = "", a_row: dict | None = None,
             b_row: dict | None = None) -> Gap:
    """The gap of subject A against other B and its 95% interval (module docstring, step 2), from
    `seed_runs` of each. With `metric` and the rows, where every compared run kept its per-item record the item
    part is the paired bootstrap's (`paired.gap_item_se`) instead of the runs' own item errors."""
    gap = _pair_gap(lower_is_better, a_runs, b_runs)
    if not metric or a_row is None or b_row is None:
        return gap
    from .paired import gap_item_se

    a_all = [r for r in a_row.get("seeds") or [a_row] if read_metric(r, metric) is not None]
    b_all = [r for r in b_row.get("seeds") or [b_row] if read_metric(r, metric) is not None]
    if gap.method == "paired seeds":
        b_by_seed = {r.get("seed"): r for r in b_all if r.get("seed") is not None}
        a_all = [r for r in a_all if r.get("seed") in b_by_seed]
        b_all = [b_by_seed[r.get("seed")] for r in a_all]
    found = gap_item_se(metric, lower_is_better, a_all, b_all, gap.method == "paired seeds")
    if found is None:
        return gap
    se, n_items = found
    item_half = Z95 * se
    if gap.method == "one seed":
        half = max(math.hypot(gap.seed_half, item_half), SINGLE_SEED_MARGIN)
    else:
        half = math.hypot(gap.seed_half, item_half)
    return replace(gap, lo=gap.gap - half, hi=gap.gap + half, method=f"{gap.method}, paired bootstrap over "
                   f"{n_items:,} items", item_half=item_half, n_items=n_items)


def _pair_gap(lower_is_better: bool, a_runs: list, b_runs: list) -> Gap:
    """`pair_gap` with the runs' own item errors (unpaired: their variances add)."""
    sign = 1.0 if lower_is_better else -1.0

    def rel(a, b):
        return sign * (a - b) / (abs(b) or 1.0)

    b_seeds = {s: (v, se) for s, v, se in b_runs if s is not None}
    shared = [(v, se, *b_seeds[s]) for s, v, se in a_runs if s in b_seeds]
    if len(shared) >= 2:
        gaps = [rel(a, b) for a, _, b, _ in shared]
        item = _item_var([(a, sa, b, sb) for a, sa, b, sb in shared])
        n = len(gaps)
        # each source of noise with its own quantile, as stats.combine: t over the seeds, normal for the
        # items (a t with n - 1 degrees of freedom on the item part would widen it 2x at 3 seeds for nothing)
        mean = statistics.fmean(gaps)
        seed_half, item_half = t95(n - 1) * math.sqrt(statistics.variance(gaps) / n), Z95 * math.sqrt(item)
        half = math.hypot(seed_half, item_half)
        return Gap(mean, mean - half, mean + half, "paired seeds", seed_half, item_half, n)
    a_vals, b_vals = [v for _, v, _ in a_runs], [v for _, v, _ in b_runs]
    a, b = statistics.fmean(a_vals), statistics.fmean(b_vals)
    ref = abs(b) or 1.0
    var_a = statistics.variance(a_vals) / len(a_vals) if len(a_vals) > 1 else 0.0
    var_b = statistics.variance(b_vals) / len(b_vals) if len(b_vals) > 1 else 0.0
    seeds = _ratio_var(a, ref, var_a, var_b)
    a_se, b_se = mean_se_shared([se for _, _, se in a_runs]), mean_se_shared([se for _, _, se in b_runs])
    item = _item_var([(a, a_se, b, b_se)])
    gap = rel(a, b)
    if len(a_vals) > 1 and len(b_vals) > 1:
        n = min(len(a_vals), len(b_vals))
        seed_half, item_half = t95(n - 1) * math.sqrt(seeds), Z95 * math.sqrt(item)
        half = math.hypot(seed_half, item_half)
        return Gap(gap, gap - half, gap + half, "unpaired seeds", seed_half, item_half, n)
    half = max(Z95 * math.sqrt(seeds + item), SINGLE_SEED_MARGIN)
    return Gap(gap, gap - half, gap + half, "one seed", Z95 * math.sqrt(seeds), Z95 * math.sqrt(item), 1,
               floor_half=SINGLE_SEED_MARGIN)


def _item_var(pairs: list) -> float:
    """Item-error variance of the gap (items shared by the seeds: the mean of the per-seed errors,
    squared); 0 unless every (a, se_a, b, se_b) has both errors."""
    if not pairs or any(sa is None or sb is None for _, sa, _, sb in pairs):
        return 0.0
    return statistics.fmean(math.sqrt(_ratio_var(a, abs(b) or 1.0, sa ** 2, sb ** 2)) for a, sa, b, sb in pairs) ** 2


def parts_text(g: Gap) -> str:
    """A gap's half-width and its parts in words: "±13.0% (seeds ±13.0% over 3, items ±0.4% over 1,488)"."""
    if not (g.seed_half or g.item_half):
        return f"±{g.half:.1%}"
    items = f" over {g.n_items:,}" if g.n_items else ""
    return f"±{g.half:.1%} (seeds ±{g.seed_half:.1%} over {g.n_seeds}, items ±{g.item_half:.1%}{items})"


def sizes_for(g: Gap, target: float) -> list[str]:
    """In words, the sizes that would bring `g`'s 95% half-width under `target` (> 0), e.g. ["~7 seeds (items as
    now)", "~12,000 items (seeds as now)"]. Each part scales as 1/sqrt(n): the seed part t95(n - 1) x sd / sqrt(n)
    with the seeds n (its t quantile recomputed), the item part 1.96 x se_item with the evaluation items (se_item
    ~ 1/sqrt(N)); half = hypot(seed, item). Where neither alone does it, both scaled by the same factor."""
    seed, item, n = g.seed_half, g.item_half, g.n_seeds
    ways = []
    if item < target and seed > 0 and n >= 2:  # more seeds, the items as now
        sd = seed * math.sqrt(n) / t95(n - 1)
        m = next((m for m in range(n + 1, 10_001) if math.hypot(t95(m - 1) * sd / math.sqrt(m), item) < target),
                 None)
        if m:
            ways.append(f"~{m} seeds (items as now)")
    if seed < target and item > 0:  # more items, the seeds as now
        k = item ** 2 / (target ** 2 - seed ** 2)
        ways.append(f"~{math.ceil(k * g.n_items):,} items (seeds as now)" if g.n_items
                    else f"~{k:.1f}x the evaluation items (seeds as now)")
    return ways or [f"both ~{(g.half / target) ** 2:.1f}x the seeds and the items"]

"""Uncertainty of evaluation numbers: a bootstrap over evaluation items, and a 95% interval over seeds.

Two sources of noise make a reported metric uncertain:
- **items**: the evaluation set is a sample of the items (sequences, examples, sentences) a task
  could be scored on. `bootstrap_se` resamples the items with replacement and recomputes the
  corpus-level statistic (perplexity, corpus BLEU, accuracy, ...); the standard deviation of the
  recomputed values is the standard error (Efron & Tibshirani 1993, ch. 6).
- **seeds**: training itself is random. `combine` takes one value per seed (each with its item SE)
  and gives the mean with a 95% interval that counts both.

Corpus statistics that are functions of per-item sums (perplexity from loss sums and token counts,
BLEU and chrF from sacrebleu's per-sentence n-gram counts, mean ROUGE-L, accuracy) pass a 2-D array
of per-item statistics, and a `statistic` that sums it; resampling then costs one gather and one sum
per replicate (`bootstrap_ses` scores several statistics on the same resamples).

Variants scored on the same items are compared with `paired_bootstrap_se`: one set of resampled item indices
per replicate for every variant and seed, so the items' shared difficulty cancels in a gap (unpaired, the item
errors of two variants add as if they were scored on different items: ~1.7x too wide on our sentiment test);
`stratified_bootstrap_se` does the same over several evaluation sets drawn independently (a suite's tasks).

Values over seeds as the reports show them: `stat` (mean, sample std, n: a `Stat`), `mean_std` over
per-seed rows, and the standard error of a mean from its parts' errors, two contracts by name:
`mean_se_shared` (the seeds share the evaluation items: the mean of the SEs) and `mean_se_independent`
(independent estimates: sqrt(sum se^2) / n). `is_number` / `finite_number` say what counts as a value.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

N_BOOT = 200  # bootstrap replicates: enough for a standard error to ~5% (its CV is ~1/sqrt(2 n_boot))


def bootstrap_ses(items, statistics: dict[str, Callable], n_boot: int = N_BOOT, seed: int = 0) -> dict[str, float]:
    """{name: bootstrap standard error} of several corpus statistics on the same resamples.

    `items` is a sequence (or array whose first axis indexes the items) of N evaluation items; each
    replicate draws N item indices uniformly with replacement from a generator seeded with `seed`
    (numpy's default PCG64), and every `statistics[name]` gets ``items[indices]`` (a numpy array)
    and returns a float. The SE is the standard deviation (ddof=1) of the `n_boot` replicate values.
    One item gives 0.0 (every resample is that item); no items is an error."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    arr = items if isinstance(items, np.ndarray) else np.asarray(items)
    n = len(arr)
    if n == 0:
        raise ValueError("bootstrap_se needs at least one item")
    if n_boot < 2:
        raise ValueError(f"bootstrap_se needs n_boot >= 2, got {n_boot}")
    if n == 1:
        return {name: 0.0 for name in statistics}
    rng = np.random.default_rng(seed)
    values = {name: np.empty(n_boot) for name in statistics}
    for b in range(n_boot):
        sample = arr[rng.integers(0, n, size=n)]
        for name, fn in statistics.items():
            values[name][b] = fn(sample)
    return {name: float(np.std(v, ddof=1)) for name, v in values.items()}


def bootstrap_se(items, statistic: Callable, n_boot: int = N_BOOT, seed: int = 0) -> float:
    """Bootstrap standard error of ``statistic(items)`` over resamples of the items (see `bootstrap_ses`).

    Example: the SE of a perplexity from per-sequence (loss sum, token count) rows::

        bootstrap_se(rows, lambda s: math.exp(s[:, 0].sum() / s[:, 1].sum()))
    """
    return bootstrap_ses(items, {"se": statistic}, n_boot, seed)["se"]


def paired_bootstrap_se(arrays: Sequence, statistic: Callable, n_boot: int = N_BOOT, seed: int = 0) -> float:
    """Bootstrap standard error of ``statistic([a[idx] for a in arrays])`` where every array holds one row
    per evaluation item, the **same** N items in the same order (several variants and seeds scored on one
    evaluation split): each replicate draws one set of N item indices (as `bootstrap_ses`, from a generator
    seeded with `seed`) and applies it to every array jointly, so what the arrays share -- which items are
    hard -- moves together and cancels in a difference. With one array per side and a difference of means
    this is the bootstrap of the per-item differences ("the literal pairing"), replicate for replicate.
    Arrays of different lengths are an error; one item gives 0.0."""
    return stratified_bootstrap_se([[a] for a in arrays], lambda runs: statistic([r[0] for r in runs]),
                                   n_boot=n_boot, seed=seed)


def stratified_bootstrap_se(runs: Sequence, statistic: Callable, n_boot: int = N_BOOT, seed: int = 0) -> float:
    """`paired_bootstrap_se` over strata drawn independently: ``runs[r][s]`` is run r's array over stratum s's
    items (a suite's tasks, each its own evaluation set), the same items in every run. Each replicate draws
    every stratum's indices in turn (stratum s: N_s of them) and applies them to that stratum of every run;
    ``statistic`` gets the resampled ``runs``. With one stratum this is `paired_bootstrap_se`, replicate for
    replicate. Runs whose strata differ in number or length are an error; strata of one item each give 0.0."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    arrs = [[a if isinstance(a, np.ndarray) else np.asarray(a) for a in run] for run in runs]
    shapes = {tuple(len(a) for a in run) for run in arrs}
    if not arrs or len(shapes) != 1 or not next(iter(shapes)):
        raise ValueError("paired_bootstrap_se needs arrays over the same items, got lengths "
                         f"{[[len(a) for a in run] for run in arrs]}")
    sizes = next(iter(shapes))
    if min(sizes) == 0 or n_boot < 2:
        raise ValueError(f"paired_bootstrap_se needs at least one item and n_boot >= 2, got {min(sizes)}, {n_boot}")
    if max(sizes) == 1:
        return 0.0
    rng = np.random.default_rng(seed)
    values = np.empty(n_boot)
    for b in range(n_boot):
        idx = [rng.integers(0, n, size=n) for n in sizes]
        values[b] = statistic([[a[i] for a, i in zip(run, idx)] for run in arrs])
    return float(np.std(values, ddof=1))


def t_quantile(p: float, dof: float) -> float:
    """The `p` quantile (0.5 <= p < 1) of Student's t with `dof` > 0 degrees of freedom (inf: normal).

    Newton's method on the CDF, the CDF being 1/2 + the integral of the density from 0 (Simpson's
    rule on a grid fine enough for 1e-9 here); no scipy needed."""
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    if not 0.5 <= p < 1.0 or not dof > 0:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1 and dof > 0, got p={p}, dof={dof}")
    if math.isinf(dof):
        return _normal_quantile(p)
    log_c = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)

    def density(t):
        return np.exp(log_c - (dof + 1) / 2 * np.log1p(np.square(t) / dof))

    def cdf(x):
        grid = np.linspace(0.0, x, 4001)  # even number of intervals for Simpson's rule
        w = np.ones_like(grid)
        w[1:-1:2], w[2:-1:2] = 4.0, 2.0
        return 0.5 + float((w * density(grid)).sum()) * (x / 4000) / 3

    x = _normal_quantile(p) * (1.0 + 1.0 / dof)  # a start above the root's neighbourhood for small dof
    for _ in range(100):
        step = (cdf(x) - p) / float(density(x))
        # never jump to or past 0; the CDF is concave for x > 0, so from below Newton climbs monotonically
        x = max(x - step, x / 10)
        if abs(step) < 1e-10 * max(1.0, x):
            break
    return x


def _normal_quantile(p: float) -> float:
    """Standard normal quantile by bisection on erf (exact to float precision)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def combine(values: Sequence[float], ses: Sequence[float | None], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean over seeds of a metric and its `level` (95%) interval.

    With n seeds, values v_i and item SEs se_i (None where a seed has none), q = 1 - (1 - level) / 2:
        a = s^2 / n      s^2 = sum (v_i - mean)^2 / (n - 1)   (the seed spread; 0 when n = 1)
        b = mean(se_i^2) over the seeds that have one          (the item variance; 0 when none)
        half = sqrt((t(q, n - 1) * sqrt(a))^2 + (z(q) * sqrt(b))^2),   lo, hi = mean -/+ half
    i.e. the half-widths of the two intervals, the t interval over seeds and the normal interval of
    the item bootstrap, added in quadrature. The seeds are scored on the same evaluation items, so
    the item noise is shared by all of them and does not average out over seeds: b enters whole,
    not divided by n. With b = 0 this is the t interval over seeds; with one seed (a = 0) it is the
    item interval alone, which misses the seed spread. Each part keeps its own quantile, so the
    interval never narrows when either source of noise grows (a Welch-Satterthwaite t on a + b
    would: more item noise raises its degrees of freedom), at the price of erring wide.
    With one seed and no SE there is no interval: lo = hi = NaN (every comparison with NaN is
    false, so nothing is decided on it). A non-finite mean gives NaN bounds too.
    """
    import numpy as np  # train extra: imported when used, so the core install runs on torch alone
    v = np.asarray([float(x) for x in values], dtype=float)
    n = len(v)
    if n == 0:
        raise ValueError("combine needs at least one value")
    mean = float(v.mean())
    known = [float(s) for s in ses if s is not None]
    if any(not math.isfinite(s) or s < 0 for s in known):
        raise ValueError(f"combine: standard errors must be finite and >= 0, got {list(ses)}")
    a = float(v.var(ddof=1)) / n if n > 1 else 0.0
    b = float(np.mean(np.square(known))) if known else 0.0
    if not math.isfinite(mean) or (n == 1 and not known):
        return mean, math.nan, math.nan
    if a + b == 0.0:
        return mean, mean, mean  # identical seeds and no item noise: a point
    q = 1 - (1 - level) / 2
    seed_half = t_quantile(q, n - 1) * math.sqrt(a) if n > 1 else 0.0
    half = math.hypot(seed_half, _normal_quantile(q) * math.sqrt(b))
    return mean, mean - half, mean + half


# ----------------------------------------------------------------------------- values over seeds
@dataclass(frozen=True)
class Stat:
    """One variant's value of one metric over its seeds (and its 95% interval when the row has one)."""

    mean: float
    std: float | None  # sample std over seeds; None with one seed
    n: int
    interval: tuple[float, float] | None = None  # the row's "interval" of the metric (seeds x items)

    def show(self, spec: str = "{:.4g}") -> str:
        text = spec.format(self.mean) + (f" ± {self.std:.2g}" if self.std is not None else "")
        if self.interval is not None:
            text += " [" + ", ".join(spec.format(x) for x in self.interval) + "]"
        return text


def stat(values: Sequence[float]) -> Stat | None:
    """The `Stat` of per-seed values: their mean, their sample standard deviation (n - 1; None with one
    value) and their number; None when there are none. Non-finite values go in as they are."""
    if not values:
        return None
    return Stat(statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None, len(values))


def is_number(v) -> bool:
    """`v` is an int or a float, finite or not (a bool is not a number here)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def finite_number(v) -> float | None:
    """`v` as a float when it is a finite int or float (not a bool), else None."""
    return float(v) if is_number(v) and math.isfinite(v) else None


def mean_std(per_seed: list[dict], keys) -> tuple[dict, dict]:
    """({key: mean over seeds}, {key: sample std, None with one seed}) of the `keys` of each per-seed row's
    "metrics" dict; a seed whose value of a key is not a number (`is_number`) is left out of that key, and a
    key no seed has a number for gets None and None."""
    mean, std = {}, {}
    for k in keys:
        s = stat([r["metrics"][k] for r in per_seed if is_number(r["metrics"].get(k))])
        mean[k], std[k] = (s.mean, s.std) if s else (None, None)
    return mean, std


def mean_se_shared(ses: Sequence[float | None]) -> float | None:
    """Standard error of a mean over seeds of estimates scored on the **same** evaluation items, from each
    seed's item SE: the item errors are shared, so they do not average out and the mean's is the mean of
    the SEs. None when there are none or any is unknown (None)."""
    return statistics.fmean(ses) if ses and all(se is not None for se in ses) else None


def mean_se_independent(ses: Sequence[float | None]) -> float | None:
    """Standard error of a mean of **independent** estimates (e.g. tasks with separate dev sets) from their
    SEs: sqrt(sum se^2) / n. None when there are none or any is unknown (None)."""
    if not ses or any(s is None for s in ses):
        return None
    return math.sqrt(sum(s * s for s in ses)) / len(ses)


def wilson(p: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion `p` (0..1) observed on `n` items: (lo, hi), always inside
    [0, 1], and sensible at p near 0 or 1 where the normal interval is not."""
    if not n > 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"wilson needs 0 <= p <= 1 and n > 0, got p={p}, n={n}")
    z = _normal_quantile(1 - (1 - level) / 2)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)

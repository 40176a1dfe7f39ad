"""Statistics: the item bootstrap against exact and literal references, t quantiles, the seed+item interval,
values over seeds (`stat`, `mean_std`) and the two standard errors of a mean."""
import itertools
import math

import numpy as np
import pytest

from synthformer.utils.stats import (Stat, bootstrap_se, bootstrap_ses, combine, finite_number, is_number,
                                     mean_se_independent, mean_se_shared, mean_std, stat, t_quantile)


def test_bootstrap_se_of_a_mean_is_the_plug_in_standard_error():
    x = np.random.default_rng(1).normal(size=400)
    exact = x.std(ddof=0) / math.sqrt(len(x))  # the ideal bootstrap's SE of a mean (n_boot -> infinity)
    assert bootstrap_se(x, np.mean, n_boot=4000) == pytest.approx(exact, rel=0.05)


def test_bootstrap_se_of_a_ratio_matches_the_exact_bootstrap_by_enumeration():
    rows = np.array([[3.0, 2.0], [1.0, 4.0], [5.0, 1.0], [2.0, 2.0]])  # (loss sum, tokens) per sequence

    def ppl(s):
        return math.exp(s[:, 0].sum() / s[:, 1].sum())

    # every one of the 4^4 equally likely resamples, literally
    values = [ppl(rows[list(idx)]) for idx in itertools.product(range(4), repeat=4)]
    exact = float(np.std(values, ddof=0))
    assert bootstrap_se(rows, ppl, n_boot=20000) == pytest.approx(exact, rel=0.03)


def test_bootstrap_is_seeded_shares_resamples_and_refuses_nothing():
    x = np.arange(50.0)
    assert bootstrap_se(x, np.mean, seed=3) == bootstrap_se(list(x), np.mean, seed=3)
    assert bootstrap_se(x, np.mean, seed=3) != bootstrap_se(x, np.mean, seed=4)
    both = bootstrap_ses(x, {"mean": np.mean, "twice": lambda s: 2 * np.mean(s)}, seed=5)
    assert both["twice"] == pytest.approx(2 * both["mean"]) and both["mean"] == bootstrap_se(x, np.mean, seed=5)
    assert bootstrap_se([7.0], np.mean) == 0.0
    with pytest.raises(ValueError, match="at least one item"):
        bootstrap_se([], np.mean)


@pytest.mark.parametrize("dof,table", [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622),
                                       (29, 2.0452), (math.inf, 1.9600)])
def test_t_quantile_matches_the_tables(dof, table):
    assert t_quantile(0.975, dof) == pytest.approx(table, abs=1e-4)


def test_t_quantile_of_two_dof_has_a_closed_form():
    for p in (0.6, 0.9, 0.975, 0.995):
        closed = (2 * p - 1) / math.sqrt(2 * p * (1 - p))  # t with 2 dof: F^-1(p) = (2p-1)/sqrt(2p(1-p))
        assert t_quantile(p, 2) == pytest.approx(closed, rel=1e-7)


def test_combine_without_item_errors_is_the_t_interval_over_seeds():
    v = [10.0, 12.0, 11.0, 15.0]
    mean, lo, hi = combine(v, [None] * 4)
    half = 3.1824463 * np.std(v, ddof=1) / 2  # t(0.975, 3) s / sqrt(4)
    assert mean == pytest.approx(12.0) and (lo, hi) == pytest.approx((12.0 - half, 12.0 + half), rel=1e-6)


def test_combine_with_one_seed_is_the_normal_item_interval():
    assert combine([5.0], [0.5]) == pytest.approx((5.0, 5.0 - 1.959964 * 0.5, 5.0 + 1.959964 * 0.5), rel=1e-6)
    mean, lo, hi = combine([5.0], [None])  # nothing known about the spread: no interval
    assert mean == 5.0 and math.isnan(lo) and math.isnan(hi)
    assert combine([2.0, 2.0], [0.0, None]) == (2.0, 2.0, 2.0)


def test_combine_widens_with_item_noise_and_covers_the_truth():
    base = combine([1.0, 2.0, 3.0], [None] * 3)
    noisy = combine([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    assert noisy[1] < base[1] and noisy[2] > base[2]
    # seeds spread by sigma, all scored on one item sample whose error (sd tau) they share
    rng = np.random.default_rng(0)
    sigma, tau, n, hits, trials = 1.0, 0.7, 3, 0, 2000
    for _ in range(trials):
        values = rng.normal(size=n) * sigma + rng.normal() * tau
        _, lo, hi = combine(list(values), [tau] * n)
        hits += lo <= 0.0 <= hi
    assert 0.95 <= hits / trials <= 0.999


def test_combine_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        combine([], [])
    with pytest.raises(ValueError, match="finite"):
        combine([1.0, 2.0], [-1.0, None])


def test_combine_adds_the_two_half_widths_in_quadrature():
    v, ses = [1.0, 2.0, 3.0], [0.5, 1.0, None]
    seed_half = 4.3026527 * 1.0 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n), s = 1
    item_half = 1.959964 * math.sqrt((0.25 + 1.0) / 2)  # z * sqrt(mean se^2 of the seeds that have one)
    half = math.sqrt(seed_half ** 2 + item_half ** 2)
    assert combine(v, ses) == pytest.approx((2.0, 2.0 - half, 2.0 + half), rel=1e-6)


def test_stat_is_mean_sample_std_and_count_and_shows_its_interval():
    assert stat([]) is None
    assert stat([2.0]) == Stat(2.0, None, 1)
    s = stat([1.0, 2.0, 3.0])
    assert (s.mean, s.std, s.n, s.interval) == (2.0, 1.0, 3, None)
    assert Stat(2.0, 1.0, 3, (1.5, 2.5)).show() == "2 ± 1 [1.5, 2.5]"
    assert Stat(1234.5, None, 1).show("{:,.0f}") == "1,234"


def test_what_counts_as_a_number():
    assert [is_number(v) for v in (1, 1.5, math.inf, math.nan, True, "1", None)] == [True] * 4 + [False] * 3
    assert [finite_number(v) for v in (1, 1.5, math.inf, math.nan, True, "1")] == [1.0, 1.5, None, None, None, None]
    assert isinstance(finite_number(1), float)


def test_mean_std_over_per_seed_rows_skips_what_is_not_a_number():
    rows = [{"metrics": {"a": 1.0, "b": "x", "c": True}}, {"metrics": {"a": 3.0, "b": 2.0}}]
    mean, std = mean_std(rows, ["a", "b", "c"])
    assert mean == {"a": 2.0, "b": 2.0, "c": None}
    assert std == {"a": pytest.approx(math.sqrt(2)), "b": None, "c": None}


def test_the_two_standard_errors_of_a_mean():
    # shared evaluation items: the errors do not average out (the mean of the SEs)
    assert mean_se_shared([0.1, 0.3]) == pytest.approx(0.2)
    # independent estimates: sqrt(sum se^2) / n
    assert mean_se_independent([0.3, 0.4]) == pytest.approx(0.25)
    for f in (mean_se_shared, mean_se_independent):
        assert f([]) is None and f([0.1, None]) is None

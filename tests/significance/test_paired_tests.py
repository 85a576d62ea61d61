"""The paired tests: exact cases, equality with scipy one replicate at a time, paired deletion, validation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from simrec.significance import (
    PAIRED_TESTS,
    BootstrapBCa,
    Permutation,
    UndefinedStatisticWarning,
    Wilcoxon,
    bootstrap_bca_test,
    bootstrap_percentile_test,
    paired_permutation_test,
    paired_t_test,
    sign_test,
    wilcoxon_test,
)


def _metric_like(rng: np.random.Generator, shape: tuple[int, ...], shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per-user values in [0, 1] of two correlated systems, with zero differences and ties (like NDCG@K)."""
    base = rng.beta(0.6, 2.0, shape)
    a = np.round(np.clip(base + rng.normal(0, 0.08, shape) * (rng.random(shape) < 0.6), 0, 1), 3)
    b = np.round(np.clip(base + rng.normal(0, 0.08, shape) * (rng.random(shape) < 0.6) - shift, 0, 1), 3)
    return a, b


@pytest.mark.parametrize("test", PAIRED_TESTS, ids=lambda t: t.name)
def test_identical_lists_give_p_one_for_every_test(test):
    a, _ = _metric_like(np.random.default_rng(0), (4, 50))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)  # the effect sizes are 0/0 here
        res = test(a, a.copy(), rng=1)
    np.testing.assert_array_equal(res.p_value, 1.0)
    assert not res.significant(0.5).any()
    np.testing.assert_array_equal(res.mean_difference, 0.0)
    assert res.p_value.shape == (4,) and res.test == test.name


@pytest.mark.parametrize("test", PAIRED_TESTS, ids=lambda t: t.name)
@pytest.mark.parametrize("shift", [0.1, -0.03])
def test_a_constant_shift_is_significant_with_the_right_sign(test, shift):
    a, _ = _metric_like(np.random.default_rng(1), (3, 40))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)  # d_z is c/0
        res = test(a + shift, a, rng=2)
    assert (res.p_value <= 1e-3).all(), res.p_value
    np.testing.assert_array_equal(res.sign, np.sign(shift))
    np.testing.assert_allclose(res.mean_difference, shift, rtol=1e-9)
    if res.ci_of == "mean difference":
        np.testing.assert_allclose(res.ci_low, shift, rtol=1e-9)
        np.testing.assert_allclose(res.ci_high, shift, rtol=1e-9)


def test_a_constant_shift_makes_the_effect_size_nan_with_a_warning():
    a, _ = _metric_like(np.random.default_rng(1), (40,))
    with pytest.warns(UndefinedStatisticWarning, match="d_z"):
        res = paired_t_test(a + 0.1, a)
    assert np.isnan(res.effect_size) and res.effect_size_name == "cohens_dz"


def test_paired_t_equals_scipy_one_replicate_at_a_time():
    rng = np.random.default_rng(3)
    a, b = _metric_like(rng, (6, 120), shift=0.01)
    res = paired_t_test(a, b, confidence=0.9)
    for r in range(6):
        ref = stats.ttest_rel(a[r], b[r])
        ci = ref.confidence_interval(0.9)
        assert res.statistic[r] == pytest.approx(ref.statistic, rel=1e-12)
        assert res.p_value[r] == pytest.approx(ref.pvalue, rel=1e-12)
        assert (res.ci_low[r], res.ci_high[r]) == pytest.approx((ci.low, ci.high), rel=1e-12)
        d = a[r] - b[r]
        assert res.effect_size[r] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
    one = paired_t_test(a[2], b[2], confidence=0.9)
    assert one.p_value.shape == () and float(one.p_value) == pytest.approx(res.p_value[2], rel=1e-14)


@pytest.mark.slow
@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
def test_wilcoxon_equals_scipy_one_replicate_at_a_time(zero_method):
    rng = np.random.default_rng(4)
    a, b = _metric_like(rng, (5, 80), shift=0.02)
    a[:, :3] = b[:, :3]  # zero differences in every replicate
    res = wilcoxon_test(a, b, zero_method=zero_method)
    for r in range(5):
        ref = stats.wilcoxon(a[r], b[r], zero_method=zero_method)
        assert res.statistic[r] == pytest.approx(ref.statistic, rel=1e-12)
        assert res.p_value[r] == pytest.approx(ref.pvalue, rel=1e-12)
    nonzero = np.count_nonzero(a != b, axis=1)
    np.testing.assert_array_equal(res.n_used, nonzero if zero_method == "wilcox" else 80)
    # small samples: scipy's exact distribution
    small = wilcoxon_test(a[0, 3:15], b[0, 3:15])
    assert float(small.p_value) == pytest.approx(stats.wilcoxon(a[0, 3:15], b[0, 3:15]).pvalue, rel=1e-12)


def test_sign_test_equals_binomtest_one_replicate_at_a_time():
    rng = np.random.default_rng(5)
    a, b = _metric_like(rng, (8, 60), shift=0.01)
    res = sign_test(a, b, confidence=0.9)
    for r in range(8):
        k, n = int((a[r] > b[r]).sum()), int((a[r] != b[r]).sum())
        ref = stats.binomtest(k, n)
        ci = ref.proportion_ci(0.9, method="exact")
        assert res.statistic[r] == k and res.n_used[r] == n
        assert res.p_value[r] == pytest.approx(ref.pvalue, rel=1e-10)
        assert (res.ci_low[r], res.ci_high[r]) == pytest.approx((ci.low, ci.high), rel=1e-7)
        assert res.effect_size[r] == pytest.approx((2 * k - n) / n)
    # odd and even n at the centre, and the extremes
    for k, n in ((3, 7), (4, 8), (0, 5), (5, 5), (1, 1)):
        x = np.r_[np.ones(k), -np.ones(n - k)]
        out = sign_test(x, np.zeros(n))
        assert float(out.p_value) == pytest.approx(stats.binomtest(k, n).pvalue, rel=1e-12)
        ci = stats.binomtest(k, n).proportion_ci(0.95)
        assert (float(out.ci_low), float(out.ci_high)) == pytest.approx((ci.low, ci.high), rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_bootstrap_intervals_equal_scipys_for_the_same_seed(method):
    rng = np.random.default_rng(6)
    # continuous values: with ties (rounded metrics) scipy's tie count follows its own rounding (next test)
    a, b = rng.beta(0.6, 2.0, (4, 150)) + 0.01, rng.beta(0.6, 2.0, (4, 150))
    test = bootstrap_percentile_test if method == "percentile" else bootstrap_bca_test
    # one replicate, and a batch (scipy shares its resample indices across the batch, as we do)
    for x, y in ((a[1], b[1]), (a, b)):
        ref = stats.bootstrap(
            (x - y,),
            np.mean,
            method=method,
            n_resamples=1000,
            confidence_level=0.9,
            axis=-1,
            rng=np.random.default_rng(7),
        )
        res = test(x, y, n_resamples=1000, confidence=0.9, rng=np.random.default_rng(7))
        np.testing.assert_allclose(res.ci_low, ref.confidence_interval.low, rtol=1e-10)
        np.testing.assert_allclose(res.ci_high, ref.confidence_interval.high, rtol=1e-10)


def test_bca_acceleration_is_scipys_jackknife():
    """The BCa interval on skewed data, where â matters, equals scipy's (its jackknife loop)."""
    rng = np.random.default_rng(8)
    d = rng.exponential(1.0, 60) - 0.8
    ref = stats.bootstrap((d,), np.mean, method="BCa", n_resamples=4000, rng=np.random.default_rng(9))
    res = bootstrap_bca_test(d, np.zeros(60), n_resamples=4000, rng=np.random.default_rng(9))
    pct = bootstrap_percentile_test(d, np.zeros(60), n_resamples=4000, rng=np.random.default_rng(9))
    assert (float(res.ci_low), float(res.ci_high)) == pytest.approx(
        (ref.confidence_interval.low, ref.confidence_interval.high), rel=1e-10
    )
    assert float(res.ci_low) != pytest.approx(float(pct.ci_low), rel=1e-3)  # the correction did something


def test_bootstrap_counts_exact_ties_with_the_observed_mean():
    """Integer differences: every bootstrap mean is a sum of integers over n, exact in both computations, so
    scipy's tie count is exact too and the BCa intervals agree; the rounded-decimal version of the same data
    (x 0.001) gives the same interval up to the scale, which scipy's raw comparisons need not."""
    rng = np.random.default_rng(23)
    d = rng.integers(-3, 5, 90).astype(float)
    ref = stats.bootstrap((d,), np.mean, method="BCa", n_resamples=3000, rng=np.random.default_rng(24))
    res = bootstrap_bca_test(d, np.zeros(90), n_resamples=3000, rng=np.random.default_rng(24))
    ties = bootstrap_bca_test(d * 0.001 + 0.2, np.full(90, 0.2), n_resamples=3000, rng=np.random.default_rng(24))
    assert (float(res.ci_low), float(res.ci_high)) == pytest.approx(
        (ref.confidence_interval.low, ref.confidence_interval.high), rel=1e-12
    )
    assert (float(ties.ci_low), float(ties.ci_high)) == pytest.approx((res.ci_low * 0.001, res.ci_high * 0.001))


@pytest.mark.parametrize("bca", [False, True])
def test_bootstrap_p_value_is_the_dual_of_the_interval(bca):
    """p <= α exactly when the (1 - α) interval excludes 0, except within a resample or two of the boundary."""
    rng = np.random.default_rng(10)
    a, b = _metric_like(rng, (400, 80), shift=0.015)
    test = bootstrap_bca_test if bca else bootstrap_percentile_test
    B = 2000
    for alpha in (0.05, 0.2):
        res = test(a, b, n_resamples=B, confidence=1 - alpha, rng=11)
        excluded = (res.ci_low > 0) | (res.ci_high < 0)
        clear = np.abs(res.p_value - alpha) > 4 / B
        assert clear.sum() > 300
        np.testing.assert_array_equal((res.p_value <= alpha)[clear], excluded[clear])
        assert 0 < excluded.mean() < 1


def test_permutation_exact_equals_scipys_exact_test():
    rng = np.random.default_rng(12)
    for n, dtype in ((9, float), (12, float), (11, int)):
        d = rng.normal(0.2, 1, n) if dtype is float else rng.integers(-2, 3, n).astype(float)
        ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=9999, vectorized=True)
        res = paired_permutation_test(d, np.zeros(n))
        assert float(res.p_value) == pytest.approx(ref.pvalue, rel=1e-12)
        assert float(res.statistic) == pytest.approx(d.mean(), rel=1e-12)


def test_permutation_random_agrees_with_scipy_within_monte_carlo_error():
    rng = np.random.default_rng(13)
    a, b = _metric_like(rng, (200,), shift=0.012)
    B = 20000
    ref = stats.permutation_test(
        (a - b,), np.mean, permutation_type="samples", n_resamples=B, vectorized=True, rng=np.random.default_rng(1)
    )
    res = paired_permutation_test(a, b, n_resamples=B, rng=2)
    p = ref.pvalue
    assert 0.005 < p < 0.5  # a p-value with room on both sides
    # two independent Monte Carlo estimates of the same p: sd of a difference sqrt(2 · 2p(1-p)/B) (two tails doubled)
    assert abs(float(res.p_value) - p) < 5 * np.sqrt(2 * 2 * p * (1 - p) / B)
    # and both near the t-test's for this symmetric-ish sample
    assert float(res.p_value) == pytest.approx(float(paired_t_test(a, b).p_value), rel=0.3)


def test_paired_deletion_equals_the_tests_on_the_complete_pairs():
    rng = np.random.default_rng(14)
    a, b = _metric_like(rng, (3, 90), shift=0.02)
    a[0, :7] = np.nan
    b[0, 5:12] = np.nan
    b[2, 40] = np.nan  # replicates now have 78, 90 and 89 users
    keep = [~(np.isnan(a[r]) | np.isnan(b[r])) for r in range(3)]
    for test in PAIRED_TESTS:
        res = test(a, b, rng=15)
        for r in range(3):
            one = test(a[r][keep[r]], b[r][keep[r]], rng=15)
            if test.random:
                # a ragged batch shares its draws across replicates: the bootstrap its uniforms of width 90
                # (exact per-replicate reference: test_bootstrap_ragged.py), the permutation test its signs of
                # width 90; both checked statistically by the next test
                continue
            assert res.p_value[r] == pytest.approx(float(one.p_value), rel=1e-10), (test.name, r)
            assert res.effect_size[r] == pytest.approx(float(one.effect_size), rel=1e-10)
        np.testing.assert_array_equal(res.n_used[[0, 1, 2]] <= [78, 90, 89], True)
    np.testing.assert_array_equal(paired_t_test(a, b).n_used, [78, 90, 89])


@pytest.mark.parametrize("test", [BootstrapBCa(n_resamples=1000), Permutation(n_resamples=2000)], ids=lambda t: t.name)
def test_random_tests_on_ragged_rows_are_reproducible_and_right(test):
    rng = np.random.default_rng(16)
    a, b = _metric_like(rng, (40, 100), shift=0.0)
    drop = rng.random((40, 100)) < 0.1
    a[drop] = np.nan
    first, second = test(a, b, rng=17), test(a, b, rng=17)
    np.testing.assert_array_equal(first.p_value, second.p_value)
    other = test(a, b, rng=18)
    assert not np.array_equal(first.p_value, other.p_value)
    # each ragged replicate's p-value estimates the same p as the test on its complete pairs alone
    r = 3
    keep = ~(np.isnan(a[r]) | np.isnan(b[r]))
    alone = float(test(a[r][keep], b[r][keep], rng=19).p_value)
    assert abs(first.p_value[r] - alone) < 0.06


@pytest.mark.parametrize("test", PAIRED_TESTS, ids=lambda t: t.name)
def test_a_replicate_without_users_is_nan_with_one_warning(test):
    a, b = _metric_like(np.random.default_rng(20), (3, 30), shift=0.05)
    a[1] = np.nan
    with pytest.warns(UndefinedStatisticWarning, match="1 of 3"):
        res = test(a, b, rng=21)
    assert np.isnan(res.p_value[1]) and np.isfinite(res.p_value[[0, 2]]).all()
    assert res.n_used[1] == 0


def test_results_are_read_only_and_shaped_like_the_batch():
    a, b = _metric_like(np.random.default_rng(22), (2, 3, 25))
    res = paired_t_test(a, b)
    assert res.p_value.shape == res.statistic.shape == res.n_used.shape == (2, 3)
    with pytest.raises(ValueError, match="read-only"):
        res.p_value[0, 0] = 0.0
    np.testing.assert_array_equal(res.significant(0.05), res.p_value <= 0.05)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: paired_t_test(np.ones(3), np.ones(4)), ValueError, "same shape"),
        (lambda: paired_t_test(np.ones((2, 0)), np.ones((2, 0))), ValueError, "at least one user"),
        (lambda: paired_t_test(1.0, 2.0), ValueError, "scalar"),
        (lambda: paired_t_test(np.array([1.0, np.inf]), np.ones(2)), ValueError, "finite or NaN"),
        (lambda: paired_t_test(["x", "y"], [1, 2]), TypeError, "numbers"),
        (lambda: paired_t_test(np.ones(3), np.ones(3), confidence=1.0), ValueError, "`confidence`"),
        (lambda: paired_t_test(np.ones(3), np.ones(3), alternative="bigger"), ValueError, "`alternative`"),
        (lambda: wilcoxon_test(np.ones(3), np.ones(3), zero_method="drop"), ValueError, "`zero_method`"),
        (lambda: wilcoxon_test(np.ones(3), np.ones(3), correction="yes"), TypeError, "`correction`"),
        (lambda: bootstrap_bca_test(np.ones(3), np.ones(3), n_resamples=1), ValueError, "`n_resamples`"),
        (lambda: paired_permutation_test(np.ones(3), np.ones(3), n_resamples=2.5), TypeError, "`n_resamples`"),
        (lambda: paired_permutation_test(np.ones(3), np.ones(3), rng=-1), ValueError, "`rng`"),
        (lambda: Wilcoxon(zero_method="nope"), ValueError, "`zero_method`"),
        (lambda: BootstrapBCa(n_resamples=0), ValueError, "`n_resamples`"),
    ],
)
def test_bad_input_names_the_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()

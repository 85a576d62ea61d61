"""One fit/estimate API for every estimator, bootstrap intervals over users (issue 10)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from simrec.sampling import (
    MES,
    MLE,
    AdaptiveMLE,
    BiasVariance,
    BiasVarianceInverseUsers,
    ConstrainedLeastSquares,
    LeastSquares,
    MappingEstimator,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    OutOfRangeWarning,
    RankEstimate,
    SamplingScheme,
    WeightedMLE,
    auc,
    bias_variance,
    bootstrap_histograms,
    fit,
    fit_adaptive,
    mes,
    mle,
    mse_optimal,
    naive,
    ndcg,
    rank_estimate,
    recall,
    sample_ranks_adaptive,
)

EVERY = (
    Naive(),
    RankEstimate(),
    ConstrainedLeastSquares(),
    BiasVariance(0.1),
    MSEOptimal(),
    BiasVarianceInverseUsers(MLEPrior()),
    MLE(),
    WeightedMLE(10.0),
    MES(),
    MSEOptimal(MLEPrior()),
    MSEOptimal(MESPrior()),
    BiasVariance(0.01, MESPrior()),
    MappingEstimator("linear"),
    MappingEstimator("beta@P"),
)


def _ranks(N, M, seed, shape=0.3):
    return 1 + np.floor((N - 1) * np.random.default_rng(seed).beta(shape, 1.0, M)).astype(int)


@pytest.mark.parametrize("estimator", EVERY, ids=lambda e: e.name)
def test_every_estimator_has_the_same_call_shape_and_an_interval(estimator):
    N, n, M = 800, 40, 300
    s = SamplingScheme(N, n)
    r = s.sample(_ranks(N, M, 0), rng=1)
    e = estimator.fit(r, s, n_boot=30, rng=2).estimate(recall(10))
    assert (e.estimator, e.metric, e.k, e.n_users, e.n_boot, e.confidence) == (
        estimator.name,
        "Recall@10",
        10,
        M,
        30,
        0.95,
    )
    assert e.lower <= e.upper and math.isfinite(e.std_error) and e.std_error > 0
    # the same object through the free function, same seed: the same interval
    assert fit(estimator, r, s, n_boot=30, rng=2).estimate(recall(10)) == e


def test_point_estimates_are_those_of_the_functional_api():
    N, n, M = 800, 40, 300
    s = SamplingScheme(N, n)
    r = s.sample(_ranks(N, M, 3), rng=4)
    m = ndcg(10)
    d_mle, d_mes = mle(r, s), mes(r, s)
    expected = {
        Naive(): naive(m, s).mean(r),
        BiasVariance(0.1): bias_variance(m, s, 0.1).mean(r),
        MSEOptimal(): mse_optimal(m, s, sampled_ranks=r).mean(r),  # M taken from the ranks
        MSEOptimal(MLEPrior()): mse_optimal(m, s, sampled_ranks=r, prior=d_mle).mean(r),
        MSEOptimal(MESPrior()): mse_optimal(m, s, sampled_ranks=r, prior=d_mes).mean(r),
        MLE(): d_mle.expectation(m),
        MES(): d_mes.expectation(m),
    }
    for est, value in expected.items():
        assert est.fit(r, s, n_boot=2, rng=0).estimate(m).estimate == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_bootstrap_histograms_are_a_user_resample():
    # multinomial(M, h/M) has the mean and covariance of resampling M users with replacement
    counts = np.array([50, 30, 0, 20])
    boot = bootstrap_histograms(counts, 20_000, rng=0)
    assert (boot.sum(axis=1) == 100).all() and (boot[:, 2] == 0).all()
    p = counts / 100
    np.testing.assert_allclose(boot.mean(axis=0), counts, atol=4 * math.sqrt(100 * 0.25 / 20_000))
    cov = np.cov(boot.T)
    np.testing.assert_allclose(cov, 100 * (np.diag(p) - np.outer(p, p)), atol=1.0)


@pytest.mark.parametrize("metric", [auc(), recall(200)], ids=lambda m: m.label)
def test_bootstrap_interval_reaches_nominal_coverage_for_an_unbiased_estimator(metric):
    # Users drawn i.i.d. from a population P(R), then items sampled: the bootstrap over users
    # estimates the spread of the estimate over both. For an unbiased estimator the 95%
    # percentile interval must cover the population metric E[F(R)] in 95% of the repeats, within
    # 4 binomial sd of the repeats plus 1% for the percentile interval's O(1/M) error. Unbiased:
    # the naive AUC exactly (K&R §4.4.1); the rank estimate of Recall@K nearly (its bias, from
    # rounding and the binomial's spread around the cutoff, is checked to be < 0.2 sd here).
    N, n, M, repeats = 2000, 100, 400, 300
    s = SamplingScheme(N, n)
    est = Naive() if metric.name == "AUC" else RankEstimate()
    pop = np.diff(np.linspace(0, 1, N + 1) ** 0.5)  # P(R) ∝ R^{-1/2}: Beta(0.5)-shaped
    target = float(pop @ metric.table(N))
    rng = np.random.default_rng(7)
    inside = 0
    spread = []
    for _ in range(repeats):
        R = rng.choice(N, size=M, p=pop) + 1
        e = est.fit(s.sample(R, rng=rng), s, n_boot=200, rng=rng).estimate(metric)
        inside += e.lower <= target <= e.upper
        spread.append(e.estimate)
    # the premise, exactly: the estimator's expectation under the population is within 0.1 sd of the target
    correction = naive(metric, s) if metric.name == "AUC" else rank_estimate(metric, s)
    assert abs(pop @ correction.conditional_mean() - target) < 0.2 * np.std(spread)  # costs < 0.5% coverage
    sd = math.sqrt(0.95 * 0.05 / repeats)
    assert abs(inside / repeats - 0.95) < 4 * sd + 0.01


def test_out_of_range_and_least_squares_warn():
    N, n, M = 1000, 100, 500
    s = SamplingScheme(N, n)
    r = s.sample(_ranks(N, M, 5), rng=6)
    with pytest.warns(RuntimeWarning, match="LS .* is unusable"):
        fitted = LeastSquares().fit(r, s, n_boot=10, rng=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = fitted.estimate(recall(10))
    if not 0 <= e.estimate <= 1:  # LS at n = 100 is far outside [0, 1] (it is, at this seed)
        assert any(
            issubclass(w.category, OutOfRangeWarning) and "outside the metric's range [0, 1]" in str(w.message)
            for w in caught
        )
    assert not 0 <= e.estimate <= 1
    with pytest.warns(RuntimeWarning, match="does not estimate NDCG@10"):
        assert math.isnan(MappingEstimator("bound").fit(r, s, n_boot=5, rng=0).estimate(ndcg(10)).estimate)


def test_adaptive_mle_interval():
    N, M = 600, 400
    ad = sample_ranks_adaptive(_ranks(N, M, 8, 0.2), N, 20, n_max=320, rng=9)
    est = fit_adaptive(ad, N, [recall(10), ndcg(10)], n_boot=20, rng=1)
    assert [e.metric for e in est] == ["Recall@10", "NDCG@10"]
    assert all(e.lower <= e.upper and e.estimator == "adaptive_MLE" for e in est)


S = SamplingScheme(100, 10)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: Naive().fit([1, 11], S), ValueError, r"`sampled_ranks` must be integers in \[1, 10\]; got 11"),
        (lambda: Naive().fit([0, 1], S), ValueError, "`sampled_ranks`"),
        (lambda: Naive().fit([], S), ValueError, "`sampled_ranks` must not be empty"),
        (lambda: Naive().fit([1.5], S), ValueError, "`sampled_ranks` must hold integers"),
        (lambda: Naive().fit([1, 2], "scheme"), TypeError, "`scheme` must be a SamplingScheme"),
        (lambda: Naive().fit([1, 2], S, n_boot=1), ValueError, "`n_boot`"),
        (lambda: Naive().fit([1, 2], S, confidence=1.0), ValueError, "`confidence`"),
        (lambda: fit("MLE", [1, 2], S), TypeError, "`estimator` must be an Estimator"),
        (lambda: AdaptiveMLE().fit([1, 2], S), TypeError, "fit_adaptive"),
        (lambda: Naive().fit([1, 2], S).estimate("NDCG@10"), TypeError, "RankMetric"),
        (lambda: Naive().fit([1, 2], S).estimates([]), ValueError, "`metrics`"),
        (lambda: MSEOptimal(MLE()), TypeError, "`prior`"),
        (lambda: fit_adaptive([1, 2], 100, [recall(1)]), TypeError, "AdaptiveRanks"),
    ],
)
def test_bad_input_gives_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match):
        call()

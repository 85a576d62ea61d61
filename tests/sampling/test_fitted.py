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
    ConvergenceWarning,
    IntervalKind,
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
    mle_adaptive,
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
        (lambda: fit(AdaptiveMLE(), [1, 2], S), TypeError, r"AdaptiveMLE fits AdaptiveRanks.*fit_adaptive"),
        (lambda: AdaptiveMLE().fit([1, 2]), TypeError, "`ranks` must be AdaptiveRanks"),
        (lambda: Naive().fit([1, 2], S).estimate("NDCG@10"), TypeError, "RankMetric"),
        (lambda: Naive().fit([1, 2], S).estimates([]), ValueError, "`metrics`"),
        (lambda: MSEOptimal(MLE()), TypeError, "`prior`"),
        (lambda: fit_adaptive([1, 2], 100, [recall(1)]), TypeError, "AdaptiveRanks"),
        (lambda: Naive().fit([1, 2], S).estimate(recall(101)), ValueError, r"must be <= the number of items N = 100"),
    ],
)
def test_bad_input_gives_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------------------
# issue 22: estimates say what they are
# ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("estimator", [MLE(), WeightedMLE(10.0), BiasVariance(0.1, MLEPrior()), MSEOptimal(MLEPrior())])
def test_an_em_stopped_at_max_iter_is_flagged_and_warns_once(estimator):
    N, n, M = 800, 40, 300
    s = SamplingScheme(N, n)
    r = s.sample(_ranks(N, M, 0), rng=1)
    with pytest.warns(ConvergenceWarning) as caught:
        est = estimator.fit(r, s, n_boot=20, max_iter=3, rng=2).estimates([recall(5), ndcg(10)])
    mine = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(mine) == 1  # one per fit call, not one per metric or replicate
    text = str(mine[0].message)
    assert estimator.name in text and "max_iter = 3" in text and "1e-09" in text
    assert all(not e.converged and e.n_iter == 3 for e in est)
    # a generous cap converges here: no warning, the iterations used are reported
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ok = estimator.fit(r, s, n_boot=20, max_iter=20_000, rng=2).estimate(recall(5))
    assert ok.converged and 3 < ok.n_iter < 20_000


def test_refitted_replicates_count_in_converged():
    N, n, M = 800, 40, 300
    s = SamplingScheme(N, n)
    r = s.sample(_ranks(N, M, 0), rng=1)
    with pytest.warns(ConvergenceWarning, match=r"MLE did not converge: its EM stopped at max_iter = 2"):
        e = MLE().fit(r, s, n_boot=10, max_iter=2, rng=2, refit=True).estimate(recall(5))
    assert not e.converged and e.n_iter == 2


def test_closed_form_estimators_report_no_iterations():
    s = SamplingScheme(500, 20)
    r = s.sample(_ranks(500, 200, 3), rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for est in (Naive(), BiasVariance(0.1), ConstrainedLeastSquares(), MappingEstimator("bound")):
            e = est.fit(r, s, n_boot=5, rng=0).estimate(recall(5))
            assert e.converged and e.n_iter == 0
    e = MappingEstimator("beta@P").fit(r, s, n_boot=5, rng=0).estimate(recall(5))
    assert e.converged and e.n_iter > 0  # beta@P's fixed point


@pytest.mark.parametrize("estimator", EVERY, ids=lambda e: e.name)
def test_every_estimate_carries_its_estimators_interval_kind(estimator):
    s = SamplingScheme(500, 20)
    r = s.sample(_ranks(500, 200, 3), rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        e = estimator.fit(r, s, n_boot=5, rng=0).estimate(recall(5))
    assert e.interval_kind is estimator.interval_kind
    assert e.coverage_known_to_fail == (estimator.interval_kind is IntervalKind.SAMPLING_BIASED)


def test_fit_adaptive_uses_the_stored_replace_and_n_items():
    """Ranks drawn without replacement are fitted as drawn (issue 22: 0.0935 vs 0.0995 before)."""
    N, M = 300, 400
    ad = sample_ranks_adaptive(_ranks(N, M, 8, 0.2), N, 10, n_max=160, replace=False, rng=9)
    est = fit_adaptive(ad, metrics=[recall(10)], n_boot=5, max_iter=50, rng=1)[0]
    hyper = mle_adaptive(ad.ranks, ad.sizes, N, replace=False, max_iter=50).expectation(recall(10))
    binom = mle_adaptive(ad.ranks, ad.sizes, N, replace=True, max_iter=50).expectation(recall(10))
    assert est.estimate == hyper and abs(hyper - binom) > 1e-3
    # the stored values may be repeated
    again = fit_adaptive(ad, N, [recall(10)], replace=False, n_boot=5, max_iter=50, rng=1)[0]
    assert again.estimate == est.estimate and again.lower == est.lower


def test_fit_adaptive_refuses_arguments_that_contradict_the_ranks():
    N, M = 300, 200
    ad = sample_ranks_adaptive(_ranks(N, M, 8, 0.2), N, 10, n_max=160, replace=False, rng=9)
    with pytest.raises(ValueError, match=r"`n_items` must be the N the ranks were drawn at \(N = 300.*got 5000"):
        fit_adaptive(ad, 5000, [recall(10)])
    with pytest.raises(ValueError, match=r"`replace` must be how the ranks were drawn \(replace = False.*got True"):
        fit_adaptive(ad, metrics=[recall(10)], replace=True)
    with pytest.raises(TypeError, match="`metrics` must be given"):
        fit_adaptive(ad)
    # per-user candidate counts: one N must be named, within their range
    n_u = np.where(np.arange(M) % 2 == 0, 290, 310)
    per_user = sample_ranks_adaptive(np.minimum(_ranks(N, M, 8, 0.2), 290), n_u, 10, n_max=160, rng=9)
    with pytest.raises(ValueError, match=r"`n_items` must be given.*N_u in \[290, 310\].*round\(mean N_u\) = 300"):
        fit_adaptive(per_user, metrics=[recall(10)])
    with pytest.raises(ValueError, match=r"`n_items` must lie in \[290, 310\]"):
        fit_adaptive(per_user, 5000, [recall(10)])
    assert fit_adaptive(per_user, 300, [recall(10)], n_boot=3, max_iter=20, rng=0)[0].n_users == M


def test_a_cutoff_above_the_items_is_refused_and_naive_warns_above_the_sample_size():
    s = SamplingScheme(300, 20)
    r = s.sample(_ranks(300, 200, 3), rng=4)
    with pytest.raises(
        ValueError, match=r"cutoff of Recall@301 must be <= the number of items N = 300 .*; got K = 301"
    ):
        MLE().fit(r, s, n_boot=5, rng=0).estimate(recall(301))
    ad = sample_ranks_adaptive(_ranks(300, 50, 8), 300, 10, n_max=80, rng=9)
    with pytest.raises(ValueError, match="cutoff of NDCG@400"):
        fit_adaptive(ad, metrics=[ndcg(400)])
    # K >= n: the naive estimate ignores the cutoff (Recall = 1 whatever the ranks): said, not silent
    with pytest.warns(RuntimeWarning, match=r"naive: the cutoff of Recall@20, NDCG@50 is >= the sample size n = 20"):
        e_r, e_n, e_small = Naive().fit(r, s, n_boot=5, rng=0).estimates([recall(20), ndcg(50), recall(5)])
    assert e_r.estimate == 1.0 and e_small.estimate < 1.0
    # the other estimators estimate the global metric at K > n: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert BiasVariance(0.1).fit(r, s, n_boot=5, rng=0).estimate(recall(50)).estimate < 1.0


def test_one_user_gives_a_nan_interval_never_a_zero_width_one():
    s = SamplingScheme(300, 20)
    with pytest.warns(RuntimeWarning, match="needs at least 2 users; got M = 1"):
        e = Naive().fit([3], s, n_boot=10, rng=0).estimate(recall(5))
    assert e.estimate == naive(recall(5), s).mean([3])  # the point estimate is kept
    assert math.isnan(e.lower) and math.isnan(e.upper) and math.isnan(e.std_error)
    ad = sample_ranks_adaptive([5], 300, 10, n_max=80, rng=9)
    with pytest.warns(RuntimeWarning, match="got M = 1"):
        a = fit_adaptive(ad, metrics=[recall(10)], n_boot=5, max_iter=50, rng=0)[0]
    assert math.isnan(a.lower) and math.isnan(a.upper) and math.isfinite(a.estimate)
    with warnings.catch_warnings():  # two users: a real interval
        warnings.simplefilter("ignore", ConvergenceWarning)
        two = Naive().fit([1, 15], s, n_boot=50, rng=0).estimate(recall(5))
    assert two.upper > two.lower

"""Stress harness: exact metrics, analytic expectations of the linear estimators, tables."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.sampling import (
    CorrectionProblem,
    SamplingScheme,
    average_precision,
    constrained_least_squares,
    mle,
    ndcg,
    recall,
)
from simrec.stress import (
    RecommenderRanks,
    StressConfig,
    StressResult,
    estimate_table,
    estimator_names,
    expected_sampled_metrics,
    linear_family,
    ordering_table,
    run_stress,
    true_metric_values,
    winner_table,
)
from simrec.sampling import metric_table


def _ranks(name: str, R: np.ndarray, N: int, **kw) -> RecommenderRanks:
    return RecommenderRanks(name, R, np.full(R.size, N), np.arange(R.size), **kw)


@pytest.fixture(scope="module")
def known() -> RecommenderRanks:
    # ranks with a known distribution: R - 1 ~ Geometric truncated to [1, N]
    rng = np.random.default_rng(11)
    N, M = 1000, 300
    return _ranks("A", np.minimum(rng.geometric(1 / 60, M), N), N)


def test_exact_metrics_match_direct_computation(known):
    cfg = StressConfig(repeats=2, k_max=20, estimators=("naive",))
    res = run_stress(known, "binomial", 50, cfg, rng=0)
    R = known.ranks.astype(float)
    for j, (fam, k) in enumerate(zip(res.families, res.ks)):
        direct = {"recall": (R <= k), "ndcg": (R <= k) / np.log2(R + 1), "average_precision": (R <= k) / R}[fam]
        assert res.exact[j] == pytest.approx(direct.mean(), abs=1e-12)


@pytest.mark.parametrize("scheme", ["binomial", "hypergeometric"])
def test_linear_estimators_mean_matches_analytic_expectation(known, scheme):
    """Mean over repeats of each linear estimator = Σ_u E[F̂(r)|R_u]/M from P(r|R), within 4 analytic SE."""
    repeats, n = 200, 50
    cfg = StressConfig(repeats=repeats, k_max=20, estimators=("naive", "rank_estimate", "CLS", "BV"),
                       bv_gammas=(1.0, 0.1))
    res = run_stress(known, scheme, n, cfg, rng=5)
    N, M = 1000, known.n_users
    P = np.exp(SamplingScheme(N, n, replace=scheme == "binomial").log_probabilities(known.ranks))  # (M, n)
    sch = SamplingScheme(N, n, replace=scheme == "binomial")
    for j in [0, 9, 19, 29, 49, 59]:  # recall@1, @10, @20, ndcg@10, ndcg@30?, ...
        metric = {"recall": recall, "ndcg": ndcg, "average_precision": average_precision}[res.families[j]](
            int(res.ks[j]))
        for e, name in enumerate(res.estimators):
            fhat = _fhat(name, metric, sch, n)
            mu = P @ fhat  # E[F̂ | R_u]
            var = P @ fhat**2 - mu**2
            expected = mu.mean()
            se = math.sqrt(max(var.sum(), 0) / M**2 / repeats)  # SE of the mean of `repeats` estimates
            got = res.estimates[:, e, j].mean()
            assert abs(got - expected) <= 4 * se + 1e-12, (name, metric.label, got, expected, se)
            # the mean error vs the exact metric is then the analytic bias
            assert abs((got - res.exact[j]) - (expected - res.exact[j])) <= 4 * se + 1e-12


def _fhat(name, metric, sch, n):
    from simrec.sampling import bias_variance, rank_estimate

    if name == "naive":
        return metric.table(n)
    if name == "rank_estimate":
        return rank_estimate(metric, sch).values
    if name == "CLS":
        return constrained_least_squares(metric, sch).values
    gamma = float(name.split("=")[1].rstrip(")"))
    return bias_variance(metric, sch, gamma).values


def test_linear_family_matches_correction_problem(known):
    """The batched solve equals CorrectionProblem.solve metric by metric (uniform and MLE priors)."""
    N, n, k_max = 1000, 50, 30
    sch = SamplingScheme(N, n)
    metrics = [recall(5), ndcg(10), average_precision(30), recall(1)]
    f_top = metric_table(metrics, k_max)
    r = sch.sample(known.ranks, rng=3)
    for prob in (CorrectionProblem(sch), CorrectionProblem(sch, mle(r, sch).probabilities, prior_name="MLE")):
        gammas = (0.0, 1.0, 0.1, 1 / 300)
        sol = linear_family(prob, f_top, gammas)
        for g in gammas:
            for j, m in enumerate(metrics):
                ref = prob.solve(m, g)
                scale = max(1.0, np.abs(ref).max())
                np.testing.assert_allclose(sol[g][:, j], ref, atol=1e-8 * scale, rtol=1e-7)


def test_popularity_negatives_bias_uniform_estimators_downward():
    """Shares above uniform (popular items ranked high) push every monotone estimate down (more negatives above)."""
    rng = np.random.default_rng(2)
    N, M, n = 2000, 400, 100
    R = np.minimum(rng.geometric(1 / 80, M), N)
    theta = (R - 1) / (N - 1)
    shares = np.minimum(1.0, theta * 2.0 + 0.01)  # popular negatives rank above more often
    ranks = _ranks("P", R, N, popularity_shares=shares)
    cfg = StressConfig(repeats=25, k_max=10, estimators=("naive", "CLS", "MLE"))
    uni = run_stress(ranks, "binomial", n, cfg, rng=1)
    pop = run_stress(ranks, "popularity", n, cfg, rng=1)
    for e in range(len(uni.estimators)):
        for j in (0, 9, 19):
            a, b = uni.estimates[:, e, j], pop.estimates[:, e, j]
            se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
            assert b.mean() < a.mean() - 3 * se, (uni.estimators[e], j)
            assert b.mean() < pop.exact[j] or uni.estimators[e] == "naive"  # biased low vs exact


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 60), st.floats(0.0, 1.0), st.floats(1.0, 3.0), st.integers(1, 10))
def test_larger_share_lowers_expected_sampled_recall(r0, base, factor, k):
    """E[naive Recall@k] = P(Bin(n-1, s) <= k-1) is non-increasing in s: popularity shares >= θ bias it down."""
    from scipy.stats import binom

    n = 50
    theta = min(1.0, base * r0 / 60)
    share = min(1.0, theta * factor)
    assert binom.cdf(k - 1, n - 1, share) <= binom.cdf(k - 1, n - 1, theta) + 1e-12


def test_true_metric_is_mean_over_true_relevant_then_users():
    # user 0: true ranks 1 and 3; user 1: true rank 2 (hand computation)
    r = RecommenderRanks("T", np.array([1, 2]), np.array([10, 10]), np.array([0, 1]),
                         true_ranks=np.array([1, 3, 2]), true_users=np.array([0, 0, 1]))
    f_top = metric_table([recall(1), recall(2), average_precision(5)], 5)
    got = true_metric_values(r, f_top)
    expected = [(0.5 + 0) / 2, (0.5 + 1) / 2, ((1 + 1 / 3) / 2 + 1 / 2) / 2]
    np.testing.assert_allclose(got, expected)


def test_expected_sampled_metrics_closed_form():
    # one user, θ = 1/2, n = 3: r-1 ~ Bin(2, 1/2) -> P(r=1) = 1/4; Recall@1 = 1/4, AP = 1/4 + 1/2*1/2 + 1/4*1/3
    r = RecommenderRanks("X", np.array([6]), np.array([11]), np.array([0]))
    got = expected_sampled_metrics(r, [recall(1), average_precision()], (3,))
    np.testing.assert_allclose(got, [[0.25, 0.25 + 0.25 + 1 / 12]])


def test_adaptive_mle_is_close_to_exact_on_easy_ranks():
    rng = np.random.default_rng(4)
    N, M = 3000, 3000
    R = np.minimum(rng.geometric(1 / 20, M), N)
    res = run_stress(_ranks("A", R, N), "adaptive", 20, StressConfig(repeats=3, k_max=10, adaptive_n_max=640), rng=2)
    assert res.estimators == ("adaptive_MLE",)
    assert res.mean_sample_size > 20
    # Recall@10 (column 9): adaptive sampling resolves the top ranks; 0.05 absolute is ~4 sd at M = 3000
    assert abs(res.estimates[:, 0, 9].mean() - res.exact[9]) < 0.05


def test_names_and_validation(known):
    cfg = StressConfig(estimators=("naive", "BV", "mapping"), bv_gammas=(0.1,))
    assert estimator_names(cfg, "binomial") == ("naive", "BV(gamma=0.1)", "mapping:linear", "mapping:bound",
                                                "mapping:beta@P")
    with pytest.raises(ValueError, match="`estimators`"):
        StressConfig(estimators=("nope",))
    with pytest.raises(ValueError, match="`bv_gammas`"):
        StressConfig(bv_gammas=(1.5,))
    with pytest.raises(ValueError, match="`scheme`"):
        run_stress(known, "bogus", 50)
    with pytest.raises(ValueError, match="popularity shares"):
        run_stress(known, "popularity", 50)
    with pytest.raises(ValueError, match="`n`"):
        run_stress(known, "binomial", 5000)


def test_same_seed_same_result(known):
    cfg = StressConfig(repeats=3, k_max=10, estimators=("naive", "MLE", "mapping"))
    a = run_stress(known, "binomial", 50, cfg, rng=9)
    b = run_stress(known, "binomial", 50, cfg, rng=9)
    np.testing.assert_array_equal(a.estimates, b.estimates)


def _result(name, exact, est):
    est = np.asarray(est, dtype=float)[:, None, None]
    return StressResult(name, "binomial", 10, 100, 5, ("recall",), np.array([1]), ("naive",), np.array([exact]), est)


def test_ordering_and_winner_tables_count_correct_repeats():
    a = _result("A", 0.3, [0.5, 0.2, 0.4, 0.4])  # A best exactly
    b = _result("B", 0.2, [0.3, 0.3, 0.1, 0.4])  # repeat 2: A < B (wrong), repeat 4: tie (wrong)
    c = _result("C", 0.1, [0.1, 0.1, 0.6, 0.0])
    order = ordering_table([a, b, c]).set_index(["recommender_a", "recommender_b"])["share_correct"]
    assert order["A", "B"] == pytest.approx(2 / 4)
    assert order["A", "C"] == pytest.approx(3 / 4)
    assert order["B", "C"] == pytest.approx(3 / 4)
    win = winner_table([a, b, c])
    assert win["exact_winner"].iloc[0] == "A"
    # picks: A, B, C, tie(A,B) -> only repeat 1 right
    assert win["share_correct"].iloc[0] == pytest.approx(1 / 4)
    tab = estimate_table([a])
    assert tab["mean"].iloc[0] == pytest.approx(0.375)
    assert tab["rel_error"].iloc[0] == pytest.approx((0.375 - 0.3) / 0.3)
    assert tab["sd"].iloc[0] == pytest.approx(np.std([0.5, 0.2, 0.4, 0.4], ddof=1))


def test_exact_ties_give_nan_with_warning():
    a = _result("A", 0.2, [0.5, 0.2])
    b = _result("B", 0.2, [0.3, 0.3])
    with pytest.warns(RuntimeWarning, match="tied"):
        order = ordering_table([a, b])
    assert np.isnan(order["share_correct"].iloc[0])
    z = _result("Z", 0.0, [0.1, 0.0])
    with pytest.warns(RuntimeWarning, match="exact metric of 0"):
        tab = estimate_table([z])
    assert np.isnan(tab["rel_error"].iloc[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate_table([a])  # no warning when defined

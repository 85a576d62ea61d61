"""Stress harness: exact metrics, analytic expectations of the linear estimators, estimator dispatch, tables."""

from __future__ import annotations

import dataclasses
import importlib
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.config.estimators import ESTIMATOR_FAMILIES, EstimatorsSpec
from simrec.sampling import (
    MES,
    MLE,
    AdaptiveMLE,
    BiasVariance,
    ConstrainedLeastSquares,
    LeastSquares,
    MappingEstimator,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    RankEstimate,
    SamplingScheme,
    WeightedMLE,
    average_precision,
    bias_variance,
    constrained_least_squares,
    decay_weights,
    mes,
    metric_table,
    mle,
    mse_optimal,
    ndcg,
    rank_estimate,
    recall,
    sample_ranks_binomial,
    weighted_mle,
)
from simrec.stress import (
    DEFAULT_ESTIMATORS,
    RecommenderRanks,
    StressConfig,
    StressResult,
    coverage_table,
    estimate_table,
    estimator_names,
    expected_sampled_metrics,
    fitted_a_table,
    mapping_error_table,
    ordering_table,
    relative_error_table,
    run_stress,
    true_metric_values,
    winner_table,
)


def _ranks(name: str, R: np.ndarray, N: int, **kw) -> RecommenderRanks:
    return RecommenderRanks(name, R, np.full(R.size, N), np.arange(R.size), **kw)


@pytest.fixture(scope="module")
def known() -> RecommenderRanks:
    # ranks with a known distribution: R - 1 ~ Geometric truncated to [1, N]
    rng = np.random.default_rng(11)
    N, M = 1000, 300
    return _ranks("A", np.minimum(rng.geometric(1 / 60, M), N), N)


def test_exact_metrics_match_direct_computation(known):
    cfg = StressConfig(repeats=2, k_max=20, estimators=(Naive(),))
    res = run_stress(known, "binomial", 50, cfg, rng=0)
    R = known.ranks.astype(float)
    for j, (fam, k) in enumerate(zip(res.families, res.ks)):
        direct = {"recall": (R <= k), "ndcg": (R <= k) / np.log2(R + 1), "average_precision": (R <= k) / R}[fam]
        assert res.exact[j] == pytest.approx(direct.mean(), abs=1e-12)


@pytest.mark.parametrize("scheme", ["binomial", "hypergeometric"])
def test_linear_estimators_mean_matches_analytic_expectation(known, scheme):
    """Mean over repeats of each linear estimator = Σ_u E[F̂(r)|R_u]/M from P(r|R), within 4 analytic SE."""
    repeats, n = 200, 50
    cfg = StressConfig(
        repeats=repeats,
        k_max=20,
        estimators=(Naive(), RankEstimate(), ConstrainedLeastSquares(), BiasVariance(1.0), BiasVariance(0.1)),
    )
    res = run_stress(known, scheme, n, cfg, rng=5)
    N, M = 1000, known.n_users
    P = np.exp(SamplingScheme(N, n, replace=scheme == "binomial").log_probabilities(known.ranks))  # (M, n)
    sch = SamplingScheme(N, n, replace=scheme == "binomial")
    for j in [0, 9, 19, 29, 49, 59]:  # recall@1, @10, @20, ndcg@10, ndcg@30?, ...
        metric = {"recall": recall, "ndcg": ndcg, "average_precision": average_precision}[res.families[j]](
            int(res.ks[j])
        )
        for e, estimator in enumerate(cfg.estimators):
            fhat = _fhat(estimator, metric, sch)
            mu = P @ fhat  # E[F̂ | R_u]
            var = P @ fhat**2 - mu**2
            expected = mu.mean()
            se = math.sqrt(max(var.sum(), 0) / M**2 / repeats)  # SE of the mean of `repeats` estimates
            got = res.estimates[:, e, j].mean()
            assert abs(got - expected) <= 4 * se + 1e-12, (estimator.name, metric.label, got, expected, se)
            # the mean error vs the exact metric is then the analytic bias
            assert abs((got - res.exact[j]) - (expected - res.exact[j])) <= 4 * se + 1e-12


def _fhat(estimator, metric, sch):
    """F̂ of a uniform-prior correction, computed one metric at a time by simrec.sampling's functions."""
    if isinstance(estimator, Naive):
        return metric.table(sch.n)
    if isinstance(estimator, RankEstimate):
        return rank_estimate(metric, sch).values
    if isinstance(estimator, ConstrainedLeastSquares):
        return constrained_least_squares(metric, sch).values
    return bias_variance(metric, sch, estimator.gamma).values


def test_popularity_negatives_bias_uniform_estimators_downward():
    """Shares above uniform (popular items ranked high) push every monotone estimate down (more negatives above)."""
    rng = np.random.default_rng(2)
    N, M, n = 2000, 400, 100
    R = np.minimum(rng.geometric(1 / 80, M), N)
    theta = (R - 1) / (N - 1)
    shares = np.minimum(1.0, theta * 2.0 + 0.01)  # popular negatives rank above more often
    ranks = _ranks("P", R, N, popularity_shares=shares)
    cfg = StressConfig(repeats=25, k_max=10, estimators=(Naive(), ConstrainedLeastSquares(), MLE()))
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
    r = RecommenderRanks(
        "T",
        np.array([1, 2]),
        np.array([10, 10]),
        np.array([0, 1]),
        true_ranks=np.array([1, 3, 2]),
        true_users=np.array([0, 0, 1]),
    )
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


def test_names_come_from_the_objects(known):
    maps = tuple(MappingEstimator(k) for k in ("linear", "bound", "beta@P"))
    cfg = StressConfig(estimators=(Naive(), BiasVariance(0.1), *maps))
    assert estimator_names(cfg, "binomial") == (
        "naive",
        "BV(gamma=0.1)",
        "mapping:linear",
        "mapping:bound",
        "mapping:beta@P",
    )
    assert estimator_names(cfg, "adaptive") == ("adaptive_MLE",)
    assert estimator_names(StressConfig(), "popularity") == tuple(e.name for e in DEFAULT_ESTIMATORS)
    cfg = StressConfig(repeats=1, k_max=3, estimators=(MSEOptimal(MESPrior()), BiasVariance(0.5, MLEPrior())))
    assert run_stress(known, "binomial", 50, cfg).estimators == ("MN_MES", "BV_MLE(gamma=0.5)")


def test_default_estimators_are_the_expanded_default_families():
    gam = ["1", "0.1", "0.01", "0.001"]
    assert [e.name for e in DEFAULT_ESTIMATORS] == (
        ["naive", "rank_estimate", "LS", "CLS"]
        + [f"BV(gamma={g})" for g in gam]
        + ["MLE", "WMLE", "MES", "MN_MLE", "MN_MES", "BV_MLE(gamma=1/M)", "BV_MES(gamma=1/M)"]
        + [f"BV_MLE(gamma={g})" for g in gam]
        + [f"BV_MES(gamma={g})" for g in gam]
        + [
            "mapping:linear",
            "mapping:bound",
            "mapping:beta@1",
            "mapping:beta@0.5",
            "mapping:beta@0.2",
            "mapping:beta@P",
        ]
    )
    assert StressConfig().estimators == DEFAULT_ESTIMATORS
    assert EstimatorsSpec().build() == DEFAULT_ESTIMATORS


def test_estimators_spec_builds_objects_in_the_listed_order():
    spec = EstimatorsSpec(
        names=["BV_MES", "mapping", "naive", "WMLE", "MN_MES", "MES"],
        bv_gammas=[0.5, 0.0],
        wmle_scale=4.0,
        mes_eta=0.02,
    )
    assert spec.build() == (
        BiasVariance(0.5, MESPrior(0.02)),
        BiasVariance(0.0, MESPrior(0.02)),
        MappingEstimator("linear"),
        MappingEstimator("bound"),
        MappingEstimator("beta", 1.0),
        MappingEstimator("beta", 0.5),
        MappingEstimator("beta", 0.2),
        MappingEstimator("beta@P"),
        Naive(),
        WeightedMLE(4.0),
        MSEOptimal(MESPrior(0.02)),
        MES(0.02),
    )
    assert [e.name for e in spec.build()] == [
        "BV_MES(gamma=0.5)",
        "BV_MES(gamma=0)",
        "mapping:linear",
        "mapping:bound",
        "mapping:beta@1",
        "mapping:beta@0.5",
        "mapping:beta@0.2",
        "mapping:beta@P",
        "naive",
        "WMLE",
        "MN_MES",
        "MES",
    ]
    every = EstimatorsSpec(names=list(ESTIMATOR_FAMILIES), bv_gammas=[0.1])
    assert len(every.build()) == 11 + 3 + 6  # 11 single families, BV/BV_MLE/BV_MES at one γ, 6 mappings
    StressConfig(estimators=every.build())  # a valid harness configuration
    with pytest.raises(ValueError, match="names"):
        EstimatorsSpec(names=["nope"])
    with pytest.raises(ValueError, match="lists naive twice"):
        EstimatorsSpec(names=["naive", "naive"])


def test_config_validation():
    with pytest.raises(TypeError, match="`estimators` must hold estimator objects"):
        StressConfig(estimators=("naive",))  # names are not parsed
    with pytest.raises(ValueError, match="`estimators` must hold at least one"):
        StressConfig(estimators=())
    with pytest.raises(ValueError, match=r"must have distinct names; got BV\(gamma=0.1\) more than once"):
        StressConfig(estimators=(BiasVariance(0.1), BiasVariance(0.1)))
    with pytest.raises(ValueError, match="must have distinct names; got MES more than once"):
        StressConfig(estimators=(MES(0.001), MES(0.01)))
    with pytest.raises(ValueError, match="AdaptiveMLE"):
        StressConfig(estimators=(Naive(), AdaptiveMLE()))
    with pytest.raises(ValueError, match="`metrics`"):
        StressConfig(metrics=("nope",))


def test_run_validation(known):
    with pytest.raises(ValueError, match="`scheme`"):
        run_stress(known, "bogus", 50)
    with pytest.raises(ValueError, match="popularity shares"):
        run_stress(known, "popularity", 50)
    with pytest.raises(ValueError, match=r"`n` must be an integer in \[2, 1000\]; got 5000"):
        run_stress(known, "binomial", 5000)
    with pytest.raises(ValueError, match="`k_max` must be <= N"):
        run_stress(_ranks("S", np.array([1, 2]), 8), "binomial", 5, StressConfig(k_max=10))
    # per-user candidate sets (N = round(mean N_u) = 100): without replacement n must fit the smallest
    mixed = RecommenderRanks("X", np.array([1, 5, 30]), np.array([40, 200, 60]), np.arange(3))
    one = StressConfig(repeats=1, k_max=5, estimators=(Naive(),))
    with pytest.raises(ValueError, match="`n` must be <= every user's `n_items`.*smallest is 40 at position 0"):
        run_stress(mixed, "hypergeometric", 50, one)
    assert run_stress(mixed, "binomial", 50, one).n == 50
    with pytest.raises(ValueError, match=r"`n0` must be an integer in \[2, 64\]; got 80"):
        run_stress(mixed, "adaptive", 80, StressConfig(repeats=1, k_max=5, adaptive_n_max=64))


def test_sampling_uses_each_users_candidate_count():
    """Naive Recall/NDCG over repeats match E[F(r)] from each user's θ_u = (R_u-1)/(N_u-1), not from a shared N."""
    rng = np.random.default_rng(21)
    M = 600
    N_u = np.where(np.arange(M) % 3 == 0, 150, 1500)
    R = np.minimum(rng.geometric(1 / 20, M), N_u)
    ranks = RecommenderRanks("U", R, N_u, np.arange(M))
    cfg = StressConfig(repeats=300, k_max=10, metrics=("recall", "ndcg"), estimators=(Naive(),))
    res = run_stress(ranks, "binomial", 40, cfg, rng=8)
    metrics = cfg.rank_metrics()
    expected = expected_sampled_metrics(ranks, metrics, (40,))[0]
    common = RecommenderRanks("S", R, np.full(M, int(np.rint(N_u.mean()))), np.arange(M))
    shared = expected_sampled_metrics(common, metrics, (40,))[0]
    got = res.estimates[:, 0, :]
    se = got.std(axis=0, ddof=1) / np.sqrt(cfg.repeats)
    for j in (2, 9, 14):  # Recall@3, Recall@10, NDCG@5
        assert abs(got[:, j].mean() - expected[j]) <= 4 * se[j], (j, got[:, j].mean(), expected[j], se[j])
        assert abs(shared[j] - expected[j]) > 8 * se[j]  # the check tells N_u from a shared N


def _replay_draws(ranks, n, repeats, seed):
    gen = np.random.default_rng(seed)
    return [sample_ranks_binomial(ranks.ranks, ranks.n_candidates, n, rng=gen) for _ in range(repeats)]


def test_dispatch_matches_simrec_sampling_estimator_by_estimator(known):
    """Each object runs the matching simrec.sampling estimator on the same draws (a prior with its own η)."""
    n, repeats, seed = 50, 2, 31
    ests = (
        LeastSquares(),
        MLE(),
        MES(0.001),
        WeightedMLE(4.0),
        BiasVariance(0.1, MESPrior(0.01)),
        MSEOptimal(MLEPrior()),
        MSEOptimal(MESPrior(0.001)),
        BiasVariance(0.5),
    )
    cfg = StressConfig(repeats=repeats, k_max=10, metrics=("ndcg",), estimators=ests, max_iter=50)
    res = run_stress(known, "binomial", n, cfg, rng=seed)
    sch = SamplingScheme.cached(1000, n)
    m, j = ndcg(10), 9
    f = metric_table([m], 10)[:, 0]
    draws = _replay_draws(known, n, repeats, seed)
    for rep, r in enumerate(draws):
        fit_mle, fit_mes = mle(r, sch, max_iter=50), mes(r, sch, eta=0.001)
        ref = {
            "LS": bias_variance(m, sch, 0.0).mean(r),
            "MLE": fit_mle.probabilities[:10] @ f,
            "MES": fit_mes.probabilities[:10] @ f,
            "WMLE": weighted_mle(r, sch, decay_weights(ndcg(), n, 4.0), max_iter=50).probabilities[:10] @ f,
            "BV_MES(gamma=0.1)": bias_variance(m, sch, 0.1, prior=mes(r, sch, eta=0.01)).mean(r),
            "MN_MLE": mse_optimal(m, sch, sampled_ranks=r, prior=fit_mle).mean(r),
            "MN_MES": mse_optimal(m, sch, sampled_ranks=r, prior=fit_mes).mean(r),
            "BV(gamma=0.5)": bias_variance(m, sch, 0.5).mean(r),
        }
        for e, name in enumerate(res.estimators):
            tol = 1e-6 if name == "LS" else 1e-9  # γ = 0 amplifies solve-vs-solve_many rounding
            assert res.estimates[rep, e, j] == pytest.approx(ref[name], abs=tol), (rep, name)
    # BV_MES(gamma=0.1)'s prior has η = 0.01, not MES's 0.001: the two give different estimates
    other = bias_variance(m, sch, 0.1, prior=mes(draws[0], sch, eta=0.001)).mean(draws[0])
    assert abs(res.estimates[0, res.estimators.index("BV_MES(gamma=0.1)"), j] - other) > 1e-6


def test_mapping_estimators_apply_to_recall_only(known):
    cfg = StressConfig(repeats=2, k_max=5, estimators=(MappingEstimator("bound"), MappingEstimator("beta@P")))
    res = run_stress(known, "binomial", 50, cfg, rng=3)
    rec = np.asarray(res.families) == "recall"
    assert np.isfinite(res.estimates[:, :, rec]).all() and np.isnan(res.estimates[:, :, ~rec]).all()
    assert set(res.mapping_values) == {"linear", "bound", "beta@P"}


def test_same_seed_same_result(known):
    cfg = StressConfig(repeats=3, k_max=10, estimators=(Naive(), MLE(), MappingEstimator("beta@P")))
    a = run_stress(known, "binomial", 50, cfg, rng=9)
    b = run_stress(known, "binomial", 50, cfg, rng=9)
    np.testing.assert_array_equal(a.estimates, b.estimates)


@pytest.mark.parametrize("scheme", ["binomial", "adaptive"])
def test_progress_is_reported_after_every_repeat_and_changes_nothing(known, scheme):
    cfg = StressConfig(repeats=3, k_max=10, estimators=(Naive(), MLE()))
    seen: list[int] = []
    a = run_stress(known, scheme, 50, cfg, rng=9, progress=seen.append)
    b = run_stress(known, scheme, 50, cfg, rng=9)
    assert seen == [1, 2, 3]
    np.testing.assert_array_equal(a.estimates, b.estimates)


def test_few_users_fixed_scheme_matches_the_plain_estimators():
    # 2 users (the ranks file of docs/howto/ranks.md): the EM runs on the observed sampled ranks only; same estimates
    # as simrec.sampling's MLE / WMLE on every repeat's sampled ranks
    N, n = 20_720, 100
    ranks = _ranks("MyModel", np.array([12, 3]), N)
    cfg = StressConfig(repeats=3, k_max=10, estimators=(MLE(), WeightedMLE(10.0)))
    res = run_stress(ranks, "binomial", n, cfg, rng=4)
    gen = np.random.default_rng(4)
    s = SamplingScheme(N, n)
    table = metric_table(cfg.rank_metrics(), N)
    w = decay_weights(ndcg(), n, 10.0)
    for rep in range(3):
        r = sample_ranks_binomial(ranks.ranks, ranks.n_candidates, n, rng=gen)
        np.testing.assert_allclose(res.estimates[rep, 0], mle(r, s).probabilities @ table, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(
            res.estimates[rep, 1], weighted_mle(r, s, w).probabilities @ table, rtol=1e-9, atol=1e-15
        )


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


def test_intervals_and_coverage_table_agree_with_a_direct_count(known):
    ests = (Naive(), BiasVariance(0.1), MSEOptimal(MLEPrior()), MappingEstimator("linear"))
    cfg = StressConfig(repeats=12, k_max=5, estimators=ests, n_boot=25, max_iter=50)
    res = run_stress(known, "binomial", 40, cfg, rng=3)
    assert res.lower.shape == res.upper.shape == res.estimates.shape and res.confidence == 0.95
    # the sampled ranks are those of a run without intervals (the bootstrap has its own child stream)
    plain = run_stress(known, "binomial", 40, StressConfig(repeats=12, k_max=5, estimators=ests, max_iter=50), rng=3)
    np.testing.assert_allclose(plain.estimates, res.estimates, rtol=1e-12, atol=1e-15)
    assert plain.lower is None
    table = coverage_table([res])
    assert len(coverage_table([plain])) == 0
    for e, name in enumerate(res.estimators):
        for j, (fam, k) in enumerate(zip(res.families, res.ks)):
            lo, hi = res.lower[:, e, j], res.upper[:, e, j]
            ok = np.isfinite(lo)
            row = table[(table.estimator == name) & (table.metric == fam) & (table.k == k)]
            if not ok.any():  # the mapping for NDCG/AP: no row
                assert len(row) == 0
                continue
            direct = np.mean((lo[ok] <= res.exact[j]) & (res.exact[j] <= hi[ok]))
            assert row.coverage.item() == pytest.approx(direct)
            assert row.bias.item() == pytest.approx(np.nanmean(res.estimates[:, e, j]) - res.exact[j])
            assert row.n_repeats.item() == ok.sum() and (lo[ok] <= hi[ok]).all()


def test_intervals_are_those_of_the_library_call(known):
    # the harness's bootstrap is the library's (linearised for MLE, MN_MLE, MES): for the first repeat the
    # interval is estimator.fit(r, scheme, n_boot, rng=<the harness's bootstrap stream>).estimate(metric)
    ests = (MLE(), MSEOptimal(MLEPrior()), MES(), Naive())
    cfg = StressConfig(repeats=1, k_max=3, metrics=("recall", "ndcg"), estimators=ests, n_boot=30, max_iter=60)
    res = run_stress(known, "binomial", 40, cfg, rng=5)
    scheme = SamplingScheme.cached(1000, 40)
    metrics = cfg.rank_metrics()
    for e, est in enumerate(ests):
        gen = np.random.default_rng(5)
        r = sample_ranks_binomial(known.ranks, known.n_candidates, 40, rng=gen)  # the first repeat's draw
        boot_gen = gen.spawn(1)[0]  # the harness's bootstrap stream
        lib = est.fit(r, scheme, n_boot=30, max_iter=60, rng=boot_gen).estimates(metrics)
        scale = max(x.upper - x.lower for x in lib)
        np.testing.assert_allclose(res.estimates[0, e], [x.estimate for x in lib], rtol=1e-12)
        np.testing.assert_allclose(res.lower[0, e], [x.lower for x in lib], rtol=0, atol=1e-6 * scale)
        np.testing.assert_allclose(res.upper[0, e], [x.upper for x in lib], rtol=0, atol=1e-6 * scale)


def test_adaptive_scheme_intervals(known):
    cfg = StressConfig(repeats=2, k_max=3, estimators=(Naive(),), n_boot=5, max_iter=30, adaptive_n_max=200)
    res = run_stress(known, "adaptive", 20, cfg, rng=0)
    assert res.estimators == ("adaptive_MLE",) and np.isfinite(res.lower).all()
    assert (res.lower <= res.upper).all()


def test_relative_error_and_mapping_error_tables_by_hand(known):
    maps = (MappingEstimator("linear"), MappingEstimator("beta", 0.5), MappingEstimator("beta@P"))
    res = run_stress(known, "binomial", 40, StressConfig(repeats=3, k_max=12, estimators=(Naive(), *maps)), rng=1)
    est = estimate_table([res])
    rel = relative_error_table(est)
    row = rel[(rel.estimator == "naive") & (rel.metric == "ndcg")]
    cells = est[(est.estimator == "naive") & (est.metric == "ndcg")]
    by_hand = np.abs((cells["mean"] - cells["exact"]) / cells["exact"]) * 100
    assert row.rel_error_pct.item() == pytest.approx(by_hand.mean())
    assert row.rel_error_pct_sd.item() == pytest.approx(by_hand.std(ddof=1)) and row.n_k.item() == 12
    table = mapping_error_table([res])
    assert set(table.mapping) == {"linear", "bound", "beta@0.5", "beta@P"}  # bound's curve is always recorded
    t = table[table.mapping == "beta@0.5"]
    e = np.abs(res.global_hr_at_f["beta@0.5"] - res.shr)
    assert t.abs_error.item() == pytest.approx(e.mean()) and t.abs_at_1.item() == pytest.approx(e[0])
    assert t.abs_2_10.item() == pytest.approx(e[1:10].mean())
    assert t.rel_at_1.item() == pytest.approx(e[0] / res.shr[0])
    assert res.fitted_a.shape == (3,) and fitted_a_table([res]).a_mean.item() == pytest.approx(res.fitted_a.mean())


def test_corrected_expected_curve_is_the_corrections_exact_expectation(known):
    # K&R Figure 6's corrected curve: E[(1/M) Σ_u F̂(r_u)] given the users' ranks, one common N here
    metrics = [recall(10), ndcg(10)]
    sch = SamplingScheme.cached(1000, 50)
    for est, corr in ((RankEstimate(), rank_estimate), (BiasVariance(0.1), lambda m, s: bias_variance(m, s, 0.1))):
        got = expected_sampled_metrics(known, metrics, (50,), est)[0]
        want = [corr(m, sch).expected(known.ranks) for m in metrics]
        np.testing.assert_allclose(got, want, rtol=1e-9)
    with pytest.raises(TypeError, match="data-independent"):
        expected_sampled_metrics(known, metrics, (50,), MLE())


# ---------------------------------------------------------------------------
# issue 22: the tables say what the estimates and intervals are
# ---------------------------------------------------------------------------
def test_tables_report_iterations_convergence_and_interval_kinds(known):
    ests = (Naive(), MLE(), BiasVariance(0.1), BiasVariance(0.1, MLEPrior()), MappingEstimator("bound"))
    capped = run_stress(
        known, "binomial", 40, StressConfig(repeats=3, k_max=5, estimators=ests, n_boot=10, max_iter=4), rng=3
    )
    assert capped.n_iter.shape == capped.converged.shape == (3, len(ests))
    assert (capped.n_iter[:, [1, 3]] == 4).all() and not capped.converged[:, [1, 3]].any()  # EM stopped at the cap
    assert (capped.n_iter[:, [0, 2, 4]] == 0).all() and capped.converged[:, [0, 2, 4]].all()  # closed forms
    # the iterations recorded are those of the library's fit on the same draw (EM converges here within 20,000)
    small = _ranks("B", np.minimum(np.random.default_rng(11).geometric(0.1, 300), 100), 100)
    r = sample_ranks_binomial(small.ranks, small.n_candidates, 50, rng=np.random.default_rng(3))
    free = run_stress(small, "binomial", 50, StressConfig(repeats=1, k_max=5, estimators=ests, max_iter=20_000), rng=3)
    assert free.n_iter[0, 1] == mle(r, SamplingScheme.cached(100, 50), max_iter=20_000).n_iter
    assert free.converged.all() and 4 < free.n_iter[0, 1] < 20_000
    np.testing.assert_array_equal(
        capped.estimates[:1, 0],
        run_stress(
            known, "binomial", 40, StressConfig(repeats=1, k_max=5, estimators=ests, max_iter=4), rng=3
        ).estimates[:, 0],
    )  # recording changes no estimate

    table = estimate_table([capped])
    assert list(table.columns[-3:]) == ["n_iter", "converged", "interval"]
    by = table.groupby("estimator")[["n_iter", "converged", "interval"]].first()
    assert by.loc["MLE", "n_iter"] == 4 and by.loc["MLE", "converged"] == 0
    assert by.loc["naive", "n_iter"] == 0 and by.loc["naive", "converged"] == 1
    assert by["interval"].to_dict() == {
        "naive": "sampling_biased",
        "MLE": "sampling",
        "BV(gamma=0.1)": "sampling_biased",
        "BV_MLE(gamma=0.1)": "sampling",
        "mapping:bound": "sampling_biased",
    }
    cov = coverage_table([capped])
    assert list(cov.columns[-2:]) == ["interval", "coverage_known_to_fail"]
    marked = cov.groupby("estimator")["coverage_known_to_fail"].agg(["min", "max"])
    assert marked.loc[["naive", "BV(gamma=0.1)", "mapping:bound"]].all(axis=None)
    assert not marked.loc[["MLE", "BV_MLE(gamma=0.1)"]].any(axis=None)
    # results without the records (shards of an older run): unknown, not made up
    old = dataclasses.replace(capped, n_iter=None, converged=None, interval_kinds=None)
    t_old = estimate_table([old])
    assert t_old["n_iter"].isna().all() and (t_old["interval"] == "").all()
    assert coverage_table([old])["coverage_known_to_fail"].isna().all()


def test_adaptive_scheme_records_its_em(known):
    cfg = StressConfig(repeats=2, k_max=3, estimators=(Naive(),), max_iter=3, adaptive_n_max=200)
    for boot in (0, 4):
        res = run_stress(known, "adaptive", 20, dataclasses.replace(cfg, n_boot=boot), rng=0)
        assert (res.n_iter == 3).all() and not res.converged.any() and res.interval_kinds == ("sampling",)


@pytest.mark.parametrize("scheme", ["binomial", "adaptive"])
def test_one_user_gets_no_interval(scheme):
    one = _ranks("A", np.array([7]), 500)
    cfg = StressConfig(repeats=3, k_max=5, estimators=(Naive(), MLE()), n_boot=5, max_iter=20, adaptive_n_max=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = run_stress(one, scheme, 20, cfg, rng=0)
    assert np.isfinite(res.estimates).any() and np.isnan(res.lower).all() and np.isnan(res.upper).all()
    assert len(coverage_table([res])) == 0  # no zero-width interval counted as covering or not


@pytest.mark.parametrize("scheme", ["binomial", "adaptive"])
def test_a_stress_run_without_intervals_does_no_gradient_work(scheme, monkeypatch):
    """Issue 29: with ``n_boot = 0`` (the default) no repeat records an EM history or pulls back a gradient,
    and the estimates are those of a run whose linearisation helpers are intact."""
    from simrec.sampling import _em, _mes
    from simrec.sampling.estimators import priors
    from simrec.stress.memo import REPEAT_MEMO

    R = np.minimum(1 + np.random.default_rng(4).geometric(1 / 30, 60), 500)
    ranks = _ranks("G", R, 500)
    config = StressConfig(repeats=3, k_max=10)
    with REPEAT_MEMO.disabled(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = run_stress(ranks, scheme, 50, config, rng=7)

        def boom(*args, **kwargs):
            raise AssertionError("gradient work without an interval")

        em = _em.em

        def em_without_history(*args, history=None, **kwargs):
            if history is not None:
                raise AssertionError("an EM history without an interval")
            return em(*args, **kwargs)

        for module, name in ((_em, "em_gradient"), (_em, "em_jvp"), (_mes, "mes_gradient"), (_mes, "mes_jvp")):
            monkeypatch.setattr(module, name, boom)
        for name in ("_em_history", "em_gradient", "mes_gradient"):
            monkeypatch.setattr(priors, name, boom)
        for module in (_em, priors, importlib.import_module("simrec.sampling.distribution")):
            if hasattr(module, "em"):
                monkeypatch.setattr(module, "em", em_without_history)
        after = run_stress(ranks, scheme, 50, config, rng=7)
    assert after.lower is None and np.array_equal(after.estimates, before.estimates, equal_nan=True)

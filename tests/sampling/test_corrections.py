"""Per-rank corrections: naive, rank estimate, LS, CLS, BV γ, MN (K&R 2020 §5; dissertation §2.5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.optimize import lsq_linear

from simrec.sampling import (
    CorrectionProblem,
    SamplingScheme,
    auc,
    average_precision,
    bias_variance,
    bias_variance_distribution,
    bias_variance_inverse_users,
    constrained_least_squares,
    least_squares,
    mes,
    mle,
    mse_optimal,
    naive,
    ndcg,
    rank_estimate,
    recall,
    unrounded_rank_estimates,
)

SCHEMES = [(500, 30, True), (500, 30, False), (2000, 101, True)]


def _dense_parts(scheme, prior, metric):
    a = scheme.matrix
    g = a.T @ (prior[:, None] * a)
    c = a.T @ prior
    h = a.T @ (prior * metric.table(scheme.n_items))
    return a, g, c, h


@pytest.mark.parametrize("N,n,replace", SCHEMES)
def test_sampled_auc_is_unbiased_exactly(N, n, replace):
    # K&R §4.4.1: E[AUC_n(r) | R] = AUC_N(R) for every R, with and without replacement
    s = SamplingScheme(N, n, replace=replace, tail_cutoff=0)
    np.testing.assert_allclose(naive(auc(), s).conditional_mean(), auc().table(N), atol=1e-12)


@pytest.mark.parametrize("N,n,replace", SCHEMES)
def test_rank_estimate_is_unbiased_for_the_rank(N, n, replace):
    # K&R §5.1: r̂ = 1 + (N-1)(r-1)/(n-1) has E[r̂ | R] = R exactly
    s = SamplingScheme(N, n, replace=replace, tail_cutoff=0)
    np.testing.assert_allclose(s.matrix @ unrounded_rank_estimates(N, n), np.arange(1, N + 1), rtol=1e-11)


def test_rank_estimate_rounds_down():
    s = SamplingScheme(1000, 11)
    c = rank_estimate(average_precision(), s)
    # r̂ = 1 + 999 (r - 1)/10 = 1, 100.9, 200.8, ..., 1000 -> floor 1, 100, 200, ..., 1000
    np.testing.assert_allclose(c.values, 1 / np.array([1, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]))
    np.testing.assert_array_equal(rank_estimate(recall(10), s).values, np.eye(11)[0])


def _random_prior(N, seed):
    p = np.random.default_rng(seed).gamma(0.5, size=N)
    return p / p.sum()


@pytest.mark.parametrize("prior_seed", [None, 1])
@pytest.mark.parametrize("metric", [recall(5), ndcg(10), average_precision()])
def test_bv_gamma_one_is_the_posterior_mean(metric, prior_seed):
    # K&R eq. 26: F̂(r) = Σ_R P(R|r) F(R), P(R|r) ∝ π_R P(r|R)
    s = SamplingScheme(400, 25, tail_cutoff=0)
    prior = np.full(400, 1 / 400) if prior_seed is None else _random_prior(400, prior_seed)
    a = s.matrix
    posterior = prior[:, None] * a / (a.T @ prior)[None, :]
    expected = posterior.T @ metric.table(400)
    got = bias_variance(metric, s, 1.0, prior=None if prior_seed is None else prior).values
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("gamma", [0.5, 0.1, 0.01])
def test_bv_matches_a_dense_solve(gamma):
    # K&R eq. 25 solved directly with an explicit n x n system
    s = SamplingScheme(300, 12, replace=False, tail_cutoff=0)
    prior = _random_prior(300, 4)
    m = ndcg(10)
    _, g, c, h = _dense_parts(s, prior, m)
    expected = np.linalg.solve((1 - gamma) * g + gamma * np.diag(c), h)
    got = bias_variance(m, s, gamma, prior=prior)
    np.testing.assert_allclose(got.values, expected, rtol=1e-6, atol=1e-9)
    assert got.estimator == f"BV_prior(gamma={gamma:g})"


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 25),
    st.integers(0, 300),
    st.floats(1e-3, 1.0),
    st.booleans(),
    st.integers(0, 2**31 - 1),
    st.sampled_from([recall(1), recall(4), ndcg(), average_precision(3)]),
)
def test_bv_solves_its_normal_equations(n, extra, gamma, replace, seed, metric):
    # ((1-γ) AᵀDA + γ diag(c)) F̂ = AᵀDb for any scheme, prior, metric and γ in (0, 1]
    N = n + extra
    s = SamplingScheme(N, n, replace=replace, tail_cutoff=0)
    prior = _random_prior(N, seed)
    _, g, c, h = _dense_parts(s, prior, metric)
    x = bias_variance(metric, s, gamma, prior=prior).values
    residual = ((1 - gamma) * g + gamma * np.diag(c)) @ x - h
    assert np.linalg.norm(residual) <= 1e-8 * max(np.linalg.norm(h), 1e-300)


def test_mn_solves_eq_45_and_bv_inverse_users_is_bv_at_one_over_m():
    N, n, M = 600, 20, 250
    s = SamplingScheme(N, n, tail_cutoff=0)
    R = 1 + np.floor((N - 1) * np.random.default_rng(0).random(M) ** 3).astype(int)
    r = s.sample(R, rng=1)
    prior = mle(r, s, max_iter=50)
    m = recall(20)
    mn = mse_optimal(m, s, sampled_ranks=r, prior=prior)
    assert mn.estimator == "MN_MLE"
    # dissertation eq. 45 as printed, solved independently on the dense matrices:
    # (A^T D A - (1/M) A^T A + (1/M) Λ1)^{-1} A^T D b, Λ1 = diag(Σ_R P(r|R)) (no prior weights)
    a, g, c, h = _dense_parts(s, prior.probabilities, m)
    expected = np.linalg.solve(g - a.T @ a / M + np.diag(a.sum(axis=0)) / M, h)
    np.testing.assert_allclose(mn.values, expected, rtol=1e-8, atol=1e-12)
    # the γ = 1/M variant is K&R's BV at γ = 1/M (variance weighted by the prior), a different estimator
    bvm = bias_variance_inverse_users(m, s, sampled_ranks=r, prior=prior)
    np.testing.assert_allclose(bvm.values, bias_variance(m, s, 1 / M, prior=prior).values, rtol=1e-12)
    assert bvm.estimator == "BV_MLE(gamma=1/M)"
    assert np.max(np.abs(bvm.values - mn.values)) > 1e-3


def _authors_mn_estimate(sampled_ranks, n_items, n, n_users, prior, metric_values):
    """MN as the authors' code computes it (``new_PR_gpu`` and its caller in estimator/MN_MES_MLE.ipynb of
    dli12/AAAI23-Towards-Reliable-Item-Sampling-for-Recommendation-Evaluation), restated in numpy float64:
    A from scipy.stats.binom.pmf with θ = (R-1)/(N-1) (their utils.A_Nn), W = inv(AᵀDA - AᵀA/H +
    diag(A.sum(0))/H) AᵀD, P̂(R) = mean over users of W[r_u], estimate = Σ_R P̂(R) F(R)."""
    x = np.arange(n)
    theta = (np.arange(1, n_items + 1)[:, None] - 1) / (n_items - 1)
    a = stats.binom.pmf(np.tile(x, (n_items, 1)), n - 1, np.tile(theta, (1, n)))
    d = np.diag(prior)
    w = np.linalg.inv(a.T @ d @ a - a.T @ a / n_users + np.diag(a.sum(0)) / n_users) @ a.T @ d
    return w[np.asarray(sampled_ranks) - 1].mean(0) @ metric_values


@pytest.mark.parametrize("seed", [11, 12])
def test_mn_matches_the_authors_formula_on_unseen_ranks(seed):
    # Ranks the authors' code never saw: Beta(0.3)-shaped global ranks, N = 1,500, n = 60, M = 700,
    # MLE and MES priors; agreement to rounding (their float32 GPU run aside, the formula is the same)
    N, n, M = 1500, 60, 700
    rng = np.random.default_rng(seed)
    R = 1 + np.floor((N - 1) * rng.beta(0.3, 1.0, M)).astype(int)
    s = SamplingScheme(N, n, tail_cutoff=0)
    r = s.sample(R, rng=rng)
    for prior in (mle(r, s, max_iter=200), mes(r, s)):
        for m in (ndcg(10), recall(20), average_precision(50)):
            ours = mse_optimal(m, s, sampled_ranks=r, prior=prior).mean(r)
            theirs = _authors_mn_estimate(r, N, n, M, prior.probabilities, m.table(N))
            assert ours == pytest.approx(theirs, rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("metric", [recall(10), ndcg(10), average_precision()])
def test_bias_shrinks_as_gamma_goes_to_zero(metric):
    # the bias term of K&R eq. 24 is non-decreasing in γ; γ -> 0 (LS) beats the naive metric
    s = SamplingScheme(5000, 100)
    biases = [bias_variance(metric, s, g).bias() for g in (1.0, 0.1, 0.01, 0.001)]
    ls = least_squares(metric, s).bias()
    assert all(b1 >= b2 * (1 - 1e-9) for b1, b2 in zip(biases, biases[1:]))
    assert ls <= biases[-1] * (1 + 1e-9)
    assert ls < 0.05 * naive(metric, s).bias()
    assert rank_estimate(metric, s).bias() < naive(metric, s).bias()


def test_least_squares_solves_the_normal_equations():
    s = SamplingScheme(200, 15, tail_cutoff=0)
    m = ndcg(5)
    _, g, _, h = _dense_parts(s, np.full(200, 1 / 200), m)
    x = least_squares(m, s).values
    assert np.linalg.norm(g @ x - h) <= 1e-6 * np.linalg.norm(h)


@pytest.mark.parametrize("metric", [recall(10), ndcg(10), average_precision()])
def test_cls_is_monotone_and_optimal(metric):
    N, n = 2000, 40
    s = SamplingScheme(N, n, tail_cutoff=0)
    cls = constrained_least_squares(metric, s)
    assert np.all(np.diff(cls.values) <= 1e-12)
    # independent solve on the full N x n problem (K&R eq. 21 with decrements z >= 0)
    pi = np.full(N, 1 / N)
    x_design = np.sqrt(pi)[:, None] * s.matrix @ np.triu(np.ones((n, n)))
    lower = np.zeros(n)
    lower[-1] = -np.inf
    ref = lsq_linear(x_design, np.sqrt(pi) * metric.table(N), bounds=(lower, np.inf), method="bvls", tol=1e-14)
    ref_x = np.triu(np.ones((n, n))) @ ref.x
    assert cls.bias() <= float(pi @ (s.matrix @ ref_x - metric.table(N)) ** 2) * (1 + 1e-6) + 1e-15
    # and between the unconstrained optimum and the (monotone) posterior mean
    assert least_squares(metric, s).bias() <= cls.bias() * (1 + 1e-9) + 1e-15
    assert cls.bias() <= bias_variance(metric, s, 1.0).bias() * (1 + 1e-9)


def test_problem_reuse_and_impossible_ranks():
    s = SamplingScheme(1000, 30)
    prior = np.zeros(1000)
    prior[:5] = 1  # only the top 5 global ranks are possible: large sampled ranks have c_r ~ 0
    prob = CorrectionProblem.from_prior(s, prior)
    for m in (recall(3), ndcg(3)):
        v = bias_variance(m, prob, 0.01).values
        assert np.isfinite(v).all()
        assert np.all(np.diff(constrained_least_squares(m, prob).values) <= 1e-12)
    assert prob.c.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="not both"):
        bias_variance(recall(3), prob, 0.1, prior=prior)


# -- many metrics and γ from one eigendecomposition ------------------------------------
@pytest.mark.parametrize("replace", [True, False])
def test_solve_many_equals_solve_for_every_metric_and_gamma(replace):
    """solve_many (A_top^T (π ⊙ F_top), one product for J metrics) = solve (banded A^T D b), metric by metric."""
    N, n, k_max = 1000, 50, 30
    sch = SamplingScheme(N, n, replace=replace)
    metrics = [recall(5), ndcg(10), average_precision(30), recall(1)]
    from simrec.sampling import metric_table

    f_top = metric_table(metrics, k_max)
    R = np.minimum(np.random.default_rng(11).geometric(1 / 60, 300), N)
    r = sch.sample(R, rng=3)
    # γ = 0 is ill-conditioned: rounding differences grow with the solution's scale (hence `scale` below);
    # with only 5 possible global ranks (impossible sampled ranks: the nearest-rank fill) γ > 0 only
    cases = (
        (CorrectionProblem(sch), (0.0, 1.0, 0.1, 1 / 300)),
        (CorrectionProblem(sch, mle(r, sch).probabilities, prior_name="MLE"), (0.0, 1.0, 0.1, 1 / 300)),
        (CorrectionProblem(sch, np.r_[np.ones(5), np.zeros(N - 5)]), (1.0, 0.1, 1 / 300)),
    )
    for prob, gammas in cases:
        sol = prob.solve_many(f_top, gammas)
        assert set(sol) == set(gammas) and all(isinstance(g, float) for g in sol)
        for g in gammas:
            assert sol[g].shape == (n, len(metrics))
            for j, m in enumerate(metrics):
                ref = prob.solve(m, g)
                scale = max(1.0, np.abs(ref).max())
                np.testing.assert_allclose(sol[g][:, j], ref, atol=1e-8 * scale, rtol=1e-7)
        # a given P(r | R <= k_max) is the one the scheme would compute
        a_top = np.exp(sch.log_probabilities(np.arange(1, k_max + 1)))
        again = prob.solve_many(f_top, gammas[:2], a_top)
        for g in gammas[:2]:
            np.testing.assert_array_equal(again[g], sol[g])


def test_solve_many_gamma_zero_and_validation():
    sch = SamplingScheme(400, 20)
    prob = CorrectionProblem(sch)
    from simrec.sampling import metric_table

    f_top = metric_table([recall(3), ndcg(8)], 10)
    sol = prob.solve_many(f_top, [0])
    np.testing.assert_allclose(sol[0.0][:, 0], least_squares(recall(3), sch).values, atol=1e-8)
    with pytest.raises(ValueError, match="`gammas` must be in \\[0, 1\\]"):
        prob.solve_many(f_top, [1.5])
    with pytest.raises(ValueError, match="`f_top` must have shape \\(k_max, J\\)"):
        prob.solve_many(f_top[:, 0], [0.1])
    with pytest.raises(ValueError, match="`f_top` must have shape"):
        prob.solve_many(np.zeros((401, 2)), [0.1])
    with pytest.raises(ValueError, match="`a_top` must have shape \\(10, 20\\)"):
        prob.solve_many(f_top, [0.1], np.zeros((9, 20)))


def test_bv_rank_distribution_is_eq_27():
    # dissertation eq. 27: P̂(R) = P̂(r)ᵀ (F̂_BV,Recall@R − F̂_BV,Recall@R−1), computed literally for a few R
    N, n, M, gamma = 400, 25, 300, 0.1
    s = SamplingScheme(N, n, tail_cutoff=0)
    r = s.sample(1 + np.floor((N - 1) * np.random.default_rng(3).random(M) ** 2).astype(int), rng=4)
    d = bias_variance_distribution(r, s, gamma)
    assert d.estimator == "BV_PR(gamma=0.1)" and d.n_users == M
    p = np.bincount(r - 1, minlength=n) / M
    for R in (1, 2, 7, 50, 399):
        lower = bias_variance(recall(R - 1), s, gamma).values if R > 1 else np.zeros(n)
        literal = p @ (bias_variance(recall(R), s, gamma).values - lower)
        assert d.probabilities[R - 1] == pytest.approx(literal, rel=1e-8, abs=1e-13)
    # by linearity its plug-in estimate of any metric is BV's estimate
    for m in (recall(10), ndcg(10), average_precision()):
        assert d.expectation(m) == pytest.approx(bias_variance(m, s, gamma).mean(r), rel=1e-8, abs=1e-13)


@pytest.mark.parametrize("replace", [True, False])
def test_cls_of_many_metrics_at_once_is_cls_of_each(replace):
    """Issue 29: the stress harness's CLS solves every metric column with one product for the right-hand sides
    (:meth:`CorrectionProblem.solve_monotone_many` on ``MetricTables.rhs``): the same F̂ as one metric at a time up to
    the order of the sums (measured 1e-15 absolute at N = 20,720, n = 100)."""
    from simrec.sampling import ConstrainedLeastSquares, average_precision, ndcg, recall
    from simrec.sampling.estimators.base import fixed_corrections

    s = SamplingScheme(3000, 60, replace=replace)
    metrics = tuple(f(k) for f in (recall, ndcg, average_precision) for k in (1, 5, 20))
    many = np.asarray(fixed_corrections(ConstrainedLeastSquares(), s, metrics))
    one = np.column_stack([constrained_least_squares(m, s).values for m in metrics])
    np.testing.assert_allclose(many, one, rtol=1e-12, atol=1e-14)
    assert np.all(np.diff(many, axis=0) <= 1e-12)

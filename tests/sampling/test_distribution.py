"""Rank-distribution estimators: MLE (EM), weighted MLE, MES, adaptive MLE (dissertation §2.4, §2.6)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from simrec.sampling import (
    MES_UNWEIGHTED,
    SamplingScheme,
    average_precision,
    decay_weights,
    mes,
    mle,
    mle_adaptive,
    ndcg,
    recall,
    sample_ranks_adaptive,
    weighted_mle,
)


def _top_heavy(N, M, a, rng):
    """Global ranks with P(R <= x) ≈ ((x - 1)/(N - 1))^a (a Beta(a, 1) shape)."""
    return 1 + np.floor((N - 1) * rng.random(M) ** (1 / a)).astype(int)


def test_fast_em_update_equals_the_per_user_update():
    # dissertation eq. 33 (on P̂(r)) vs eq. 32 (per user): same iterates
    N, n, M = 80, 9, 300
    s = SamplingScheme(N, n, tail_cutoff=0)
    r = s.sample(_top_heavy(N, M, 0.5, np.random.default_rng(0)), rng=1)
    a = s.matrix
    pi = np.full(N, 1 / N)
    for _ in range(5):
        like = a[:, r - 1] * pi[:, None]  # (N, M): π_R P(r_u | R)
        pi = (like / like.sum(axis=0)).mean(axis=1)
    np.testing.assert_allclose(mle(r, s, max_iter=5, tol=0).probabilities, pi, rtol=1e-10)


@pytest.mark.parametrize("replace", [True, False])
def test_em_on_few_observed_ranks_equals_the_per_user_update(replace):
    # few users: the EM runs on the observed columns of P(r|R) only (issue 13); same iterates as eq. 32
    N, n, M = 500, 60, 6
    s = SamplingScheme(N, n, replace=replace)
    r = s.sample(_top_heavy(N, M, 0.5, np.random.default_rng(4)), rng=5)
    assert 2 * np.unique(r).size <= n  # the restricted path
    a = s.matrix
    pi = np.full(N, 1 / N)
    for _ in range(40):
        like = a[:, r - 1] * pi[:, None]
        pi = (like / like.sum(axis=0)).mean(axis=1)
    d = mle(r, s, max_iter=40, tol=0)
    np.testing.assert_allclose(d.probabilities, pi, rtol=1e-9, atol=1e-300)
    # weighted MLE (eq. 35) on the dense matrix, every column
    w = decay_weights(ndcg(), n, 5)
    pw = np.bincount(r - 1, minlength=n) * w
    pw /= pw.sum()
    pi = np.full(N, 1 / N)
    for _ in range(40):
        pi = pi * (a @ np.where(pw > 0, pw / np.maximum(a.T @ pi, 1e-300), 0.0))
        pi /= pi.sum()
    np.testing.assert_allclose(weighted_mle(r, s, w, max_iter=40, tol=0).probabilities, pi, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("replace", [True, False])
def test_em_log_likelihood_never_decreases(replace):
    N, n = 3000, 60
    s = SamplingScheme(N, n, replace=replace)
    r = s.sample(_top_heavy(N, 5000, 0.3, np.random.default_rng(2)), rng=3)
    for d in (mle(r, s, max_iter=150, tol=0), weighted_mle(r, s, decay_weights(ndcg(), n, 5), max_iter=150, tol=0)):
        assert np.all(np.diff(d.objective) >= -1e-13 * np.abs(d.objective[1:]))
        assert d.objective[-1] > d.objective[0]
        assert d.probabilities.sum() == pytest.approx(1.0)
    # the log-likelihood reported is the model's: Σ_r P̂(r) log Σ_R π_R P(r|R)
    d = mle(r, s, max_iter=20, tol=0)
    p_hat = np.bincount(r - 1, minlength=n) / r.size
    q = s.matrix.T @ d.probabilities
    assert d.objective[-1] == pytest.approx(p_hat[p_hat > 0] @ np.log(q[p_hat > 0]), rel=1e-10)


def test_mle_recovers_a_known_distribution():
    # identifiable case: with replacement and n = N the N binomials Bin(N - 1, θ_R) are
    # linearly independent, so the MLE is consistent; total variation shrinks with M
    N = 10
    s = SamplingScheme(N, N, tail_cutoff=0)
    truth = 0.7 ** np.arange(N)
    truth /= truth.sum()

    def tv(M, seed):
        rng = np.random.default_rng(seed)
        R = rng.choice(np.arange(1, N + 1), size=M, p=truth)
        d = mle(s.sample(R, rng=rng), s, max_iter=5000, tol=1e-13)
        return 0.5 * np.abs(d.probabilities - truth).sum()

    small = np.mean([tv(1_000, seed) for seed in range(3)])
    large = np.mean([tv(300_000, seed) for seed in range(3)])
    assert large < 0.4 * small
    assert large < 0.05


def test_mle_estimates_metrics_at_scale():
    # N = 5000, n = 100: the MLE of Recall@K at resolution K >= (N-1)/(n-1) is close to the exact value
    N, n, M = 5000, 100, 50_000
    s = SamplingScheme(N, n)
    R = _top_heavy(N, M, 0.3, np.random.default_rng(4))
    d = mle(s.sample(R, rng=5), s)
    for k in (200, 500, 1000):
        assert abs(d.expectation(recall(k)) - np.mean(R <= k)) < 0.01
    est = d.expectations([recall(500), ndcg(500), average_precision()])
    assert est[0] == pytest.approx(d.expectation(recall(500)))
    assert est[2] == pytest.approx(d.expectation(average_precision()))


def test_weighted_mle_with_constant_weights_is_the_mle():
    N, n = 500, 30
    s = SamplingScheme(N, n)
    r = s.sample(_top_heavy(N, 2000, 0.4, np.random.default_rng(6)), rng=7)
    a = mle(r, s, max_iter=40, tol=0).probabilities
    b = weighted_mle(r, s, np.full(n, 3.0), max_iter=40, tol=0).probabilities
    np.testing.assert_allclose(a, b, rtol=1e-12)


def _mes_objective(pi, a, p_hat, eta):
    nz = pi > 0
    return -eta * pi[nz] @ np.log(pi[nz]) - np.sum((a.T @ pi - p_hat) ** 2)


@pytest.mark.parametrize("eta", [0.001, 0.05])
def test_mes_satisfies_kkt_and_matches_a_general_solver(eta):
    N, n = 30, 6
    s = SamplingScheme(N, n, tail_cutoff=0)
    r = s.sample(_top_heavy(N, 400, 0.5, np.random.default_rng(8)), rng=9)
    p_hat = np.bincount(r - 1, minlength=n) / r.size
    a = s.matrix
    d = mes(r, s, eta=eta, objective=MES_UNWEIGHTED)  # this test writes the unweighted objective
    pi = d.probabilities
    assert d.converged
    # KKT on the simplex (π > 0 by the entropy): the gradient of η Σπ log π + ||A^T π - P̂||² is constant
    grad = eta * (np.log(pi) + 1) + 2 * a @ (a.T @ pi - p_hat)
    assert np.ptp(grad) < 1e-7
    # SLSQP with the simplex constraint on the primal
    res = minimize(
        lambda x: -_mes_objective(x, a, p_hat, eta),
        np.full(N, 1 / N),
        jac=lambda x: -(-eta * (np.log(x) + 1) - 2 * a @ (a.T @ x - p_hat)),
        bounds=[(1e-15, 1)] * N,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones(N)}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert res.success
    ours, theirs = _mes_objective(pi, a, p_hat, eta), _mes_objective(res.x, a, p_hat, eta)
    assert ours >= theirs - 1e-10
    np.testing.assert_allclose(pi, res.x, atol=1e-4)
    assert d.objective[-1] == pytest.approx(ours, rel=1e-9)


def test_mes_at_scale_is_smooth_and_converges():
    N, n = 3000, 100
    s = SamplingScheme(N, n, replace=False)
    R = _top_heavy(N, 20_000, 0.3, np.random.default_rng(10))
    d = mes(s.sample(R, rng=11), s)
    assert d.converged and np.all(d.probabilities > 0)
    assert abs(d.expectation(recall(300)) - np.mean(R <= 300)) < 0.02


def test_adaptive_mle_equals_mle_for_equal_sizes():
    N, n = 400, 25
    s = SamplingScheme(N, n)
    r = s.sample(_top_heavy(N, 1000, 0.5, np.random.default_rng(12)), rng=13)
    a = mle(r, s, max_iter=30, tol=0).probabilities
    b = mle_adaptive(r, np.full(r.size, n), N, max_iter=30, tol=0).probabilities
    np.testing.assert_allclose(a, b, rtol=1e-10)


def test_adaptive_sampling_improves_small_k_estimates():
    # dissertation §2.6: on a top-heavy distribution, adaptive sampling + its EM estimates Recall@K
    # for small K much better than a fixed sample of n0, and (on average over seeds: the errors are
    # noisy) better than a fixed sample of the same mean cost
    N, M, n0 = 2000, 20_000, 20
    errors = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        R = _top_heavy(N, M, 0.25, rng)
        fixed = SamplingScheme(N, n0)
        ad = sample_ranks_adaptive(R, N, n0, n_max=640, rng=rng)
        same_cost = SamplingScheme(N, int(round(ad.mean_size)))
        est_ad = mle_adaptive(ad.ranks, ad.sizes, N)
        assert np.all(np.diff(est_ad.objective) >= -1e-13 * np.abs(est_ad.objective[1:]))

        def err(d, R=R):
            return sum(abs(d.expectation(recall(k)) - np.mean(R <= k)) for k in range(1, 11))

        errors.append(
            (err(mle(fixed.sample(R, rng=rng), fixed)), err(mle(same_cost.sample(R, rng=rng), same_cost)), err(est_ad))
        )
    e_fixed, e_cost, e_ad = np.array(errors).T
    assert np.all(e_ad < 0.25 * e_fixed)
    assert e_ad.mean() < 0.7 * e_cost.mean()

"""Sampled ranks and P(r|R) (K&R 2020 §4.3; Li's dissertation §2.3.2, §2.6)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from simrec.sampling import (
    SamplingScheme,
    above_weight_share,
    conditional_rank_matrix,
    global_ranks,
    log_conditional_rank_probabilities,
    log_rank_probabilities_from_shares,
    rank_histogram,
    sample_ranks_adaptive,
    sample_ranks_binomial,
    sample_ranks_by_draws,
    sample_ranks_from_shares,
    sample_ranks_hypergeometric,
)


# -- P(r|R) ------------------------------------------------------------------
@pytest.mark.parametrize("N,n", [(2, 2), (50, 50), (300, 40), (1000, 7)])
def test_conditional_matrix_matches_scipy(N, n):
    R = np.arange(1, N + 1)[:, None]
    k = np.arange(n)[None, :]
    binom = stats.binom.pmf(k, n - 1, (R - 1) / (N - 1))
    hyper = stats.hypergeom.pmf(k, N - 1, R - 1, n - 1)
    np.testing.assert_allclose(conditional_rank_matrix(N, n, replace=True), binom, atol=1e-13)
    np.testing.assert_allclose(conditional_rank_matrix(N, n, replace=False), hyper, atol=1e-11)
    # the cached banded matrix agrees up to its 1e-30 relative tail cutoff
    np.testing.assert_allclose(SamplingScheme(N, n, replace=True).matrix, binom, atol=1e-13)
    np.testing.assert_allclose(SamplingScheme(N, n, replace=False).matrix, hyper, atol=1e-11)


@pytest.mark.parametrize("replace", [True, False])
def test_log_space_at_movie_scale_neither_overflows_nor_underflows(replace):
    # N = 140,000 items (K&R's largest dataset), n = 3,200 (the adaptive ceiling)
    N, n = 140_000, 3_200
    rows = np.array([1, 2, 100, 5_000, 70_000, 139_999, 140_000])
    lp = log_conditional_rank_probabilities(N, n, replace=replace, ranks=rows)
    assert lp.shape == (rows.size, n)
    assert not np.isnan(lp).any() and not np.isposinf(lp).any()
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, rtol=1e-9)
    k = np.arange(n)
    for i, R in enumerate(rows):
        ref = (
            stats.binom.logpmf(k, n - 1, (R - 1) / (N - 1))
            if replace
            else stats.hypergeom.logpmf(k, N - 1, R - 1, n - 1)
        )
        finite = np.isfinite(ref) & (ref > -600)
        np.testing.assert_allclose(lp[i, finite], ref[finite], rtol=1e-9, atol=1e-8)
        # very small probabilities are still represented (log far below double's range)
        assert np.isfinite(lp[i]).sum() == np.isfinite(ref).sum()
    if replace:
        assert lp[3, -1] < -1e4  # P(r = n | R = 5000) ~ exp(-10^4): only representable in log space


def test_blocks_products_match_dense():
    s = SamplingScheme(400, 31, tail_cutoff=0.0)
    a = s.matrix
    rng = np.random.default_rng(3)
    x, y, w = rng.random(31), rng.random(400), rng.random(400)
    b = s.blocks
    np.testing.assert_allclose(b.matvec(x), a @ x, rtol=1e-12)
    np.testing.assert_allclose(b.rmatvec(y), a.T @ y, rtol=1e-12)
    np.testing.assert_allclose(b.gram(w), a.T @ (w[:, None] * a), rtol=1e-10, atol=1e-15)
    pi_new, q_new = b.em_pass(y, x)
    np.testing.assert_allclose(pi_new, y * (a @ x), rtol=1e-12)
    np.testing.assert_allclose(q_new, a.T @ pi_new, rtol=1e-12)


def test_one_column_blocks_and_reused_em_buffers_give_the_same_numbers():
    """Issue 29: a one-column block times a vector is ``v[:, 0] * x[c0]`` (numpy's matmul on an inner dimension of 1
    is 25x slower), and EM without a history alternates two buffers: the same numbers as matmul and fresh arrays, to
    the bit, on a matrix whose blocks have one and two columns and leave rows uncovered."""
    from simrec.sampling._blocks import BlockMatrix
    from simrec.sampling._em import em

    rng = np.random.default_rng(29)
    v = [rng.random((50, 1)), rng.random((70, 2)), rng.random((30, 1)) * 1e-3]
    b = BlockMatrix(
        (200, 3), ((0, 50, 0, 1, v[0]), (50, 120, 1, 3, v[1]), (150, 180, 2, 3, v[2]))
    )  # 120..149 uncovered
    x, pi = rng.random(3), rng.random(200)
    ref = np.zeros(200)
    for r0, r1, c0, c1, blk in b.blocks:
        ref[r0:r1] = blk @ x[c0:c1]
    assert b.matvec(x).tobytes() == ref.tobytes()
    pi_new, q_new = b.em_pass(pi, x)
    assert pi_new.tobytes() == (pi * ref).tobytes()
    again = b.em_pass(pi, x, out=np.zeros(200))
    assert again[0].tobytes() == pi_new.tobytes() and again[1].tobytes() == q_new.tobytes()
    p = np.array([0.2, 0.5, 0.3])
    plain, recorded = em(b, p, 40, 0.0), em(b, p, 40, 0.0, history=[])
    assert plain[0].tobytes() == recorded[0].tobytes() and plain[1:3] == recorded[1:3]
    assert plain[3].tobytes() == recorded[3].tobytes()
    assert (plain[0][120:150] == 0).all()


def test_banded_storage_is_smaller_at_scale():
    s = SamplingScheme(20_720, 501)
    assert s.blocks.nnz < 0.6 * 20_720 * 501


def test_shared_schemes_build_once():
    a = SamplingScheme.cached(300, 20)
    assert a is SamplingScheme.cached(300, 20) and a == SamplingScheme(300, 20)
    assert a is not SamplingScheme.cached(300, 20, replace=False)
    assert a.blocks is SamplingScheme.cached(300, 20).blocks


def test_scheme_expected_equals_explicit_sum():
    s = SamplingScheme(200, 20)
    v = np.random.default_rng(0).random(20)
    R = np.array([1, 1, 7, 150, 200])
    assert math.isclose(s.expected(v, R), float(np.mean(s.matrix[R - 1] @ v)), rel_tol=1e-12)


# -- closed-form samplers ---------------------------------------------------------
def _check_moments(r, R, N, n, replace):
    """Mean of r for each distinct R within 4.5 standard errors (theory: binomial/hypergeometric)."""
    theta = (R - 1) / (N - 1)
    var = (n - 1) * theta * (1 - theta)
    if not replace:
        var = var * (N - n) / (N - 2)
    mean = 1 + (n - 1) * theta
    se = np.sqrt(var / r.shape[0])
    got = r.mean(axis=0)
    ok = np.where(se > 0, np.abs(got - mean) <= 4.5 * se, got == mean)
    assert ok.all(), (got, mean, se)


@pytest.mark.parametrize("replace", [True, False])
def test_samplers_have_the_right_moments(replace):
    N, n = 1000, 100
    R = np.array([1, 2, 50, 500, 999, 1000])
    fn = sample_ranks_binomial if replace else sample_ranks_hypergeometric
    r = fn(np.tile(R, (20_000, 1)), N, n, rng=7)
    assert r.min() >= 1 and r.max() <= n
    _check_moments(r, R, N, n, replace)
    # full distribution at R = 50 by a chi-square goodness-of-fit test
    p = SamplingScheme(N, n, replace=replace, tail_cutoff=0).matrix[49]
    counts = np.bincount(r[:, 2] - 1, minlength=n)
    keep = p * r.shape[0] >= 5
    obs = np.r_[counts[keep], counts[~keep].sum()]
    exp = np.r_[p[keep], p[~keep].sum()] * r.shape[0]
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def test_samplers_are_reproducible():
    R = np.arange(1, 101)
    np.testing.assert_array_equal(sample_ranks_binomial(R, 100, 10, rng=3), sample_ranks_binomial(R, 100, 10, rng=3))
    s = SamplingScheme(100, 10, replace=False)
    np.testing.assert_array_equal(s.sample(R, rng=5), s.sample(R, rng=5))


# -- per-user candidate counts N_u ---------------------------------------------------
def _chi_square_pvalue(draws: np.ndarray, p: np.ndarray) -> float:
    """Goodness of fit of integer draws in [1, len(p)] to the pmf p (cells with < 5 expected pooled)."""
    counts = np.bincount(draws - 1, minlength=p.size)
    keep = p * draws.size >= 5
    obs = np.r_[counts[keep], counts[~keep].sum()]
    exp = np.r_[p[keep], p[~keep].sum()] * draws.size
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("replace", [True, False])
def test_per_user_candidate_counts_give_each_user_its_own_distribution(replace):
    """Users with one global rank R = 5 but N_u in {12, 60, 1000}: r_u - 1 ~ Bin/Hypergeom with N_u, not a shared N."""
    n, reps = 10, 30_000
    R = np.array([5, 5, 5, 12])
    N = np.array([12, 60, 1000, 12])
    fn = sample_ranks_binomial if replace else sample_ranks_hypergeometric
    r = fn(np.tile(R, (reps, 1)), N, n, rng=2024)
    assert r.shape == (reps, 4) and r.min() >= 1 and r.max() <= n
    for u in range(3):
        x = np.arange(n)
        if replace:
            p = stats.binom.pmf(x, n - 1, (R[u] - 1) / (N[u] - 1))
        else:
            p = stats.hypergeom.pmf(x, N[u] - 1, R[u] - 1, n - 1)
        assert _chi_square_pvalue(r[:, u], p) > 1e-4, (u, np.bincount(r[:, u] - 1, minlength=n) / reps, p)
    assert np.all(r[:, 3] == n)  # the last of 12 candidates is ranked below every negative
    # the users' means differ as their θ_u do (a shared N would make the first three users alike)
    assert r[:, 0].mean() > r[:, 1].mean() + 1 > r[:, 2].mean() + 1


def test_per_user_candidate_counts_reduce_to_a_common_n():
    """A constant N_u array draws exactly what the scalar N draws (same stream, same values)."""
    R = np.arange(1, 301)
    for fn in (sample_ranks_binomial, sample_ranks_hypergeometric):
        np.testing.assert_array_equal(fn(R, np.full(300, 300), 40, rng=8), fn(R, 300, 40, rng=8))
    a = sample_ranks_adaptive(R, np.full(300, 300), 10, n_max=160, rng=3)
    b = sample_ranks_adaptive(R, 300, 10, n_max=160, rng=3)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    np.testing.assert_array_equal(a.sizes, b.sizes)


def test_per_user_candidate_count_rules():
    R = np.array([1, 3, 8])
    N = np.array([10, 20, 8])
    with pytest.raises(ValueError, match=r"`n` must be <= every user's `n_items`.*smallest is 8 at position 2; got 9"):
        sample_ranks_hypergeometric(R, N, 9)
    assert sample_ranks_binomial(R, N, 20, rng=0).max() <= 20  # with replacement: n <= max N_u
    with pytest.raises(ValueError, match=r"`n` must be an integer in \[1, 20\]; got 21"):
        sample_ranks_binomial(R, N, 21)
    with pytest.raises(ValueError, match=r"`ranks` must be integers in \[1, 8\]; got 9 at position 2"):
        sample_ranks_binomial([1, 3, 9], N, 5)
    with pytest.raises(ValueError, match=r"`n_items` must be an int or have shape \(3,\)"):
        sample_ranks_binomial(R, np.array([10, 20]), 5)
    with pytest.raises(ValueError, match=r"`n_items` must be >= 2; got 1 at position 0"):
        sample_ranks_binomial([1, 1], np.array([1, 5]), 2)
    with pytest.raises(TypeError, match="`n_items`"):
        sample_ranks_binomial(R, N.astype(float), 5)
    with pytest.raises(ValueError, match="`n_max` must be <= every user's `n_items`"):
        sample_ranks_adaptive(R, N, 4, n_max=9, replace=False)
    assert sample_ranks_adaptive(R, N, 4, n_max=20, rng=1).sizes.max() <= 20


def test_adaptive_with_per_user_candidate_counts():
    """Algorithm 1 with θ_u = (R_u - 1)/(N_u - 1): P(stop at n0) = 1 - (1 - θ_u)^(n0 - 1) per group."""
    M, n0, n_max = 40_000, 20, 320
    R = np.full(M, 11)
    N = np.where(np.arange(M) % 2 == 0, 101, 2001)
    a = sample_ranks_adaptive(R, N, n0, n_max=n_max, rng=77)
    for N_u in (101, 2001):
        sel = N == N_u
        theta = 10 / (N_u - 1)
        for got, p in (
            (np.mean(a.sizes[sel] == n0), 1 - (1 - theta) ** (n0 - 1)),
            (np.mean(a.ranks[sel] == 1), (1 - theta) ** (n_max - 1)),
        ):
            assert abs(got - p) < 4.5 * math.sqrt(p * (1 - p) / sel.sum()) + 1e-12, (N_u, got, p)


# -- P(r | share) --------------------------------------------------------------------
@pytest.mark.parametrize("N,n", [(2, 2), (300, 40), (5000, 500)])
def test_share_probabilities_are_the_rows_of_the_binomial_scheme(N, n):
    R = np.unique(np.clip([1, 2, N // 3, N - 1, N], 1, N))
    got = log_rank_probabilities_from_shares((R - 1) / (N - 1.0), n)
    np.testing.assert_array_equal(got, log_conditional_rank_probabilities(N, n, ranks=R))
    with np.errstate(divide="ignore"):
        ref = stats.binom.logpmf(np.arange(n)[None, :], n - 1, ((R - 1) / (N - 1.0))[:, None])
    np.testing.assert_allclose(np.exp(got), np.exp(ref), atol=1e-12)
    np.testing.assert_allclose(np.exp(got).sum(axis=1), 1.0, rtol=1e-10)


def test_share_probabilities_per_user_and_validation():
    # θ = 1/2, n = 3: P(r) = 1/4, 1/2, 1/4; θ = 0 and 1 are exact point masses
    np.testing.assert_allclose(
        np.exp(log_rank_probabilities_from_shares([0.5, 0.0, 1.0], 3)),
        [[0.25, 0.5, 0.25], [1, 0, 0], [0, 0, 1]],
        atol=1e-15,
    )
    with pytest.raises(ValueError, match="`shares` must be in \\[0, 1\\]"):
        log_rank_probabilities_from_shares([0.5, 1.5], 3)
    with pytest.raises(ValueError, match="`shares` must be a non-empty 1-d array"):
        log_rank_probabilities_from_shares([[0.5]], 3)


def test_rank_histogram():
    np.testing.assert_array_equal(rank_histogram([1, 1, 3], 4), [2, 0, 1, 0])


# -- score-based ------------------------------------------------------------------
def test_global_ranks_against_argsort():
    rng = np.random.default_rng(0)
    scores = rng.random((50, 30))
    targets = rng.integers(0, 30, 50)
    order = np.argsort(-scores, axis=1)
    expected = np.argmax(order == targets[:, None], axis=1) + 1
    np.testing.assert_array_equal(global_ranks(scores, targets), expected)


def test_global_ranks_exclusions_and_ties():
    scores = np.array([[3.0, 2.0, 2.0, 2.0, 1.0]])
    # target item 2 ties with items 1 and 3
    assert global_ranks(scores, [2], ties="optimistic")[0] == 2
    assert global_ranks(scores, [2], ties="pessimistic")[0] == 4
    many = np.repeat(scores, 30_000, axis=0)
    r = global_ranks(many, np.full(30_000, 2), ties="random", rng=1)
    # uniform over {2, 3, 4}: mean 3, sd sqrt(2/3)
    assert set(np.unique(r)) == {2, 3, 4}
    assert abs(r.mean() - 3) < 4.5 * math.sqrt(2 / 3 / 30_000)
    ex = np.array([[True, False, False, False, False]])
    assert global_ranks(scores, [4], exclude=ex, ties="optimistic")[0] == 4
    assert global_ranks(scores, [4], exclude=sp.csr_array(ex), ties="optimistic")[0] == 4
    with pytest.raises(ValueError, match="exclude"):
        global_ranks(scores, [0], exclude=ex)


def test_global_ranks_with_shares_come_from_one_tie_break():
    """Ranks and shares from the same above-set: uniform shares are exactly (R - 1)/(N_u - 1), even with ties."""
    rng = np.random.default_rng(4)
    M, N = 400, 30
    scores = np.round(rng.random((M, N)) * 4)  # five score levels: many ties
    targets = rng.integers(0, N, M)
    ex = rng.random((M, N)) < 0.3
    ex[np.arange(M), targets] = False
    ranks, shares = global_ranks(scores, targets, exclude=ex, rng=12, return_shares=True)
    n_cand = N - ex.sum(axis=1)
    np.testing.assert_array_equal(shares, (ranks - 1) / (n_cand - 1))
    # the shares draw nothing more: the ranks are those of global_ranks with the same seed
    np.testing.assert_array_equal(ranks, global_ranks(scores, targets, exclude=ex, rng=12))
    w = rng.random(N) + 0.1
    r2, s2 = global_ranks(scores, targets, exclude=ex, rng=12, return_shares=True, weights=w)
    np.testing.assert_array_equal(r2, ranks)
    np.testing.assert_array_equal(s2, above_weight_share(scores, targets, exclude=ex, rng=12, weights=w))
    with pytest.raises(ValueError, match="`weights` only weigh the shares"):
        global_ranks(scores, targets, weights=w)


def _one_ranking(n_users, n_items, target_rank, rng):
    """Every user ranks the items in index order (item 0 best) with the target at ``target_rank``."""
    scores = np.tile(-np.arange(n_items, dtype=float), (n_users, 1))
    return scores, np.full(n_users, target_rank - 1)


def test_uniform_draws_without_replacement_are_hypergeometric():
    N, n, R, M = 60, 12, 20, 30_000
    scores, targets = _one_ranking(M, N, R, None)
    r = sample_ranks_by_draws(scores, targets, n, rng=11)
    p = stats.hypergeom.pmf(np.arange(n), N - 1, R - 1, n - 1)
    counts = np.bincount(r - 1, minlength=n)
    keep = p * M >= 5
    obs = np.r_[counts[keep], counts[~keep].sum()]
    assert stats.chisquare(obs, np.r_[p[keep], p[~keep].sum()] * M).pvalue > 1e-4
    # with exclusions the population shrinks: items 0..9 excluded, 9 of them above the target
    ex = np.zeros((M, N), dtype=bool)
    ex[:, :9] = True
    r2 = sample_ranks_by_draws(scores, targets, n, exclude=sp.csr_array(ex), rng=12)
    # population: N - 1 - 9 = 50 negatives, R - 1 - 9 = 10 above
    mean = 1 + (n - 1) * 10 / 50
    var = (n - 1) * 0.2 * 0.8 * (50 - (n - 1)) / 49
    assert abs(r2.mean() - mean) < 4.5 * math.sqrt(var / M)


def test_draws_with_replacement_match_shares():
    N, n, R, M = 40, 30, 10, 20_000
    scores, targets = _one_ranking(M, N, R, None)
    w = np.linspace(1.0, 3.0, N)
    shares = above_weight_share(scores, targets, weights=w)
    expected_share = w[: R - 1].sum() / (w.sum() - w[R - 1])
    np.testing.assert_allclose(shares, expected_share)
    r = sample_ranks_by_draws(scores, targets, n, weights=w, replace=True, rng=2)
    r2 = sample_ranks_from_shares(shares, n, rng=3)
    se = math.sqrt((n - 1) * expected_share * (1 - expected_share) / M)
    assert abs(r.mean() - (1 + (n - 1) * expected_share)) < 4.5 * se
    assert abs(r2.mean() - (1 + (n - 1) * expected_share)) < 4.5 * se


def test_weighted_draws_without_replacement_match_enumeration():
    # 5 items, target at rank 3, 2 negatives drawn successively with probability ∝ weight
    w = np.array([5.0, 1.0, 2.0, 1.0, 3.0])
    target = 2
    negatives = [0, 1, 3, 4]
    above = {0, 1}
    p = np.zeros(3)
    for a, b in itertools.permutations(negatives, 2):
        wa = w[negatives].sum()
        prob = w[a] / wa * w[b] / (wa - w[a])
        p[(a in above) + (b in above)] += prob
    M = 40_000
    scores = np.tile(-np.arange(5, dtype=float), (M, 1))
    r = sample_ranks_by_draws(scores, np.full(M, target), 3, weights=w, rng=4)
    counts = np.bincount(r - 1, minlength=3)
    assert stats.chisquare(counts, p * M).pvalue > 1e-4


def test_draws_all_negatives_recover_the_global_rank():
    rng = np.random.default_rng(1)
    scores = rng.random((200, 25))
    targets = rng.integers(0, 25, 200)
    R = global_ranks(scores, targets)
    np.testing.assert_array_equal(sample_ranks_by_draws(scores, targets, 25, rng=2), R)


def test_draws_need_enough_candidates():
    scores, targets = _one_ranking(3, 10, 2, None)
    w = np.ones(10)
    w[5:] = 0
    with pytest.raises(ValueError, match="candidate negatives"):
        sample_ranks_by_draws(scores, targets, 7, weights=w)


# -- adaptive ---------------------------------------------------------------------
@pytest.mark.parametrize("replace", [True, False])
def test_adaptive_sampling_path_probabilities(replace):
    N, n0, n_max, M = 5000, 50, 800, 40_000
    R = np.full(M, 30)
    a = sample_ranks_adaptive(R, N, n0, n_max=n_max, replace=replace, rng=5)
    assert set(np.unique(a.sizes)) <= {50, 100, 200, 400, 800}
    assert np.all(a.ranks[a.sizes < n_max] >= 2)  # stopped early only when r > 1
    theta = 29 / 4999
    if replace:
        p_first = 1 - (1 - theta) ** (n0 - 1)  # r > 1 with the first n0 - 1 draws
        p_end_top = (1 - theta) ** (n_max - 1)  # r = 1 after all n_max - 1 draws
    else:
        p_first = 1 - stats.hypergeom.pmf(0, N - 1, 29, n0 - 1)
        p_end_top = stats.hypergeom.pmf(0, N - 1, 29, n_max - 1)
    for got, p in ((np.mean(a.sizes == n0), p_first), (np.mean(a.ranks == 1), p_end_top)):
        assert abs(got - p) < 4.5 * math.sqrt(p * (1 - p) / M)


def test_adaptive_reduces_share_of_top_rank():
    rng = np.random.default_rng(0)
    N = 3000
    R = 1 + np.floor((N - 1) * rng.random(20_000) ** (1 / 0.3)).astype(int)
    fixed = sample_ranks_binomial(R, N, 50, rng=1)
    a = sample_ranks_adaptive(R, N, 50, n_max=1600, rng=1)
    assert np.mean(a.ranks == 1) < 0.5 * np.mean(fixed == 1)
    assert np.mean(a.sizes == 50) == pytest.approx(np.mean(fixed > 1), abs=0.02)  # same first stage


def test_dense_and_sparse_exclusions_agree():
    rng = np.random.default_rng(9)
    M, N = 300, 40
    scores = rng.random((M, N))
    targets = rng.integers(0, N, M)
    ex = rng.random((M, N)) < 0.2
    ex[np.arange(M), targets] = False
    R = global_ranks(scores, targets, exclude=ex)
    np.testing.assert_array_equal(R, global_ranks(scores, targets, exclude=sp.csr_array(ex)))
    # uniform weights: the above share is (R - 1)/(N_u - 1), N_u = number of candidates
    n_u = N - ex.sum(axis=1)
    np.testing.assert_allclose(above_weight_share(scores, targets, exclude=ex), (R - 1) / (n_u - 1))
    w = rng.random(N)
    a = sample_ranks_by_draws(scores, targets, 10, weights=w, exclude=ex, rng=3)
    b = sample_ranks_by_draws(scores, targets, 10, weights=w, exclude=sp.coo_array(ex), rng=3)
    np.testing.assert_array_equal(a, b)
    assert np.all((a >= 1) & (a <= np.minimum(R, 10)))  # at most R - 1 negatives can rank above

"""Preference-driven observation with consumption of disliked items (issue 24): a Poisson-sampling design."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.optimize import brentq

from simrec.interactions import Interactions
from simrec.observation import PreferenceSampler, TruncatedPareto, observe
from simrec.preference import LDA


def _reference_probs(w: np.ndarray, n: float) -> np.ndarray:
    """min(1, c w) summing to n (the test's own bracketing solver)."""
    w = np.asarray(w, dtype=np.float64)
    if n <= 0:
        return np.zeros_like(w)
    if n >= len(w):
        return np.ones_like(w)
    c = brentq(lambda c: np.minimum(1.0, c * w).sum() - n, 0.0, 1e3 * n / w.min() + 1.0, xtol=1e-15, rtol=1e-15)
    return np.minimum(1.0, c * w)


def _graded_truth() -> Interactions:
    """6 users x 8 items with like counts (relative counts are the preference), every item liked by someone."""
    rows = [[0, 1, 2, 3], [1, 2, 5], [0, 3, 4, 6, 7], [2], [0, 1, 2, 3, 4, 5, 6], []]
    gains = [[3, 1, 1, 2], [1, 4, 2], [1, 1, 5, 2, 1], [2], [1, 2, 3, 4, 5, 6, 7], []]
    indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows])))
    return Interactions.from_csr(indptr, np.concatenate(rows), (6, 8), sort=False, gains=np.concatenate(gains))


SIZES = np.array([2, 3, 2, 1, 6, 0])


def _tiled(truth: Interactions, reps: int) -> Interactions:
    """``reps`` copies of every row (row r of copy k is row k * n_users + r): one draw observes them all at once."""
    return truth.select_users(np.tile(np.arange(truth.n_users), reps))


@pytest.mark.parametrize("a, b", [(1.0, 1.0), (0.0, 2.0), (-0.5, 0.0), (2.0, -1.0)])
def test_like_propensity_is_the_water_filling_of_pop_a_pref_b(a, b):
    truth = _graded_truth()
    s = PreferenceSampler(a, b)
    pi = s.propensity(truth, SIZES)
    pref = truth.pair_preference()
    pop = truth.item_counts()
    rows = truth.row_of_pairs()
    w = (1.0 + pop[truth.matrix.indices]) ** a * pref**b
    for u in range(truth.n_users):
        at = rows == u
        np.testing.assert_allclose(pi[at], _reference_probs(w[at], min(SIZES[u], at.sum())), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.bincount(rows, weights=pi, minlength=6), np.minimum(SIZES, truth.user_counts()))


@pytest.mark.parametrize("rho", [0.0, 0.7, 5.0])  # no dislikes; dislikes; dislikes capped (every non-liked item)
def test_observation_frequencies_match_the_propensities(rho):
    # 4000 copies of the 6 x 8 truth observed in one draw: every pair's frequency over its copies within its
    # binomial SE of pi (liked) or q (not liked); sum of z^2 against chi2 (a Poisson-sampling design: independent)
    reps = 4000
    truth = _tiled(_graded_truth(), reps)
    sizes = np.tile(SIZES, reps)
    s = PreferenceSampler(1.0, 1.5, rho)
    got = s.sample(truth, sizes, 1).matrix.toarray().reshape(reps, 6, 8)
    freq = got.mean(axis=0)
    liked = truth.matrix.toarray().astype(bool).reshape(reps, 6, 8)[0]
    p = np.zeros(truth.matrix.shape)
    p[truth.row_of_pairs(), truth.matrix.indices] = s.propensity(truth, sizes)
    u, i = np.nonzero(np.ones(truth.matrix.shape, dtype=bool))
    q = s.dislike_propensity(truth, sizes, u, i).reshape(truth.matrix.shape)
    assert (q[truth.matrix.toarray() > 0] == 0).all()
    p = np.where(truth.matrix.toarray() > 0, p, q).reshape(reps, 6, 8)
    assert np.allclose(p, p[0])  # every copy has the same law
    p = p[0]
    inner = (p > 0) & (p < 1)
    z2 = (freq - p)[inner] ** 2 / (p * (1 - p) / reps)[inner]
    assert stats.chi2.sf(z2.sum(), inner.sum()) > 1e-4
    assert (freq[p == 1] == 1).all() and (freq[p == 0] == 0).all()
    # expected dislikes per user: rho n_u, capped at the items the user does not like
    eff = np.minimum(SIZES, liked.sum(axis=1))
    q0 = np.where(liked, 0.0, p)
    np.testing.assert_allclose(q0.sum(axis=1), np.minimum(rho * eff, 8 - liked.sum(axis=1)), rtol=1e-9)
    full = rho * eff >= 8 - liked.sum(axis=1)  # users consuming every item they do not like
    assert (q0[full][~liked[full]] == 1).all() and (full.any() if rho == 5.0 else True)


def test_joint_law_of_one_users_observed_subset_is_the_product_law():
    # user 2 (5 likes, n = 2), 10000 copies observed in one draw: the 2**8 subsets of its row (likes and
    # dislikes) against the product of Bernoulli(p) (chi-square)
    reps = 10000
    base = _graded_truth()
    truth = _tiled(base.select_users(np.array([2, 0, 4])), reps)  # user 2 and two others (item popularity)
    sizes = np.tile([2, 0, 0], reps)
    s = PreferenceSampler(0.5, 1.0, 0.8)
    got = s.sample(truth, sizes, 2).matrix.toarray().reshape(reps, 3, 8)[:, 0]
    codes = got @ (2 ** np.arange(7, -1, -1))
    p = s.dislike_propensity(truth, sizes, np.zeros(8, dtype=np.int64), np.arange(8))
    p[truth.matrix[[0]].indices] = s.propensity(truth, sizes)[: truth.matrix.indptr[1]]
    law = np.array([np.prod(np.where(b, p, 1 - p)) for b in itertools.product([0, 1], repeat=8)])
    obs = np.bincount(codes, minlength=256)
    keep = law * reps >= 5
    o, e = np.append(obs[keep], obs[~keep].sum()), np.append(law[keep], law[~keep].sum()) * reps
    assert stats.chisquare(o, e).pvalue > 1e-4


def test_preference_drives_observation():
    # b > 0: among a user's likes, those with a larger count (preference) are observed more often (up to the
    # cap at 1); b = 0 not at all
    truth = _graded_truth()
    for b, sign in ((2.0, 1), (0.0, 0)):
        pi = PreferenceSampler(0.0, b).propensity(truth, SIZES)
        row4 = slice(truth.matrix.indptr[4], truth.matrix.indptr[5])  # counts 1..7
        diffs = np.diff(pi[row4])
        assert ((diffs >= 0).all() and (diffs > 0).any()) if sign else np.allclose(diffs, 0)


def test_on_an_lda_truth_expected_counts_and_disliked_share():
    truth = LDA(400, 150, 5, 40.0, 0.3, 0.1).generate(3)
    sizes = TruncatedPareto(5, 1.0, 60).sample(truth.user_counts(), 4)
    eff = np.minimum(sizes, truth.user_counts())
    s = PreferenceSampler(1.0, 1.0, 0.5)
    draws = [s.sample(truth, sizes, 10 + k) for k in range(40)]
    liked = np.array([d.matrix.multiply(truth.matrix).nnz for d in draws], dtype=float)
    disliked = np.array([d.n_pairs for d in draws]) - liked
    pi = s.propensity(truth, sizes)
    assert abs(liked.mean() - eff.sum()) < 4 * np.sqrt((pi * (1 - pi)).sum() / len(draws))
    assert abs(disliked.mean() - 0.5 * eff.sum()) < 4 * np.sqrt(0.5 * eff.sum() / len(draws))
    obs = observe(truth, TruncatedPareto(5, 1.0, 60), s, 5)
    assert (obs.observed.matrix.multiply(truth.matrix[obs.truth_rows]) != obs.observed.matrix).nnz > 0  # not a subset
    np.testing.assert_array_equal(obs.sizes, TruncatedPareto(5, 1.0, 60).sample(truth.user_counts(), 5))


def test_validation():
    with pytest.raises(ValueError, match="`dislike_rate` must be in"):
        PreferenceSampler(dislike_rate=-0.1)
    with pytest.raises(TypeError, match="`pop_exponent`"):
        PreferenceSampler(pop_exponent="1")
    with pytest.raises(ValueError, match="`pref_exponent` must be finite"):
        PreferenceSampler(pref_exponent=float("inf"))
    truth = _graded_truth()
    with pytest.raises(ValueError, match="`sizes` must have shape"):
        PreferenceSampler().sample(truth, np.ones(3, dtype=int), 0)
    with pytest.raises(ValueError, match="inside the truth's shape"):
        PreferenceSampler().dislike_propensity(truth, SIZES, np.array([6]), np.array([0]))


@settings(max_examples=50, deadline=None)
@given(
    n_users=st.integers(1, 12),
    n_items=st.integers(1, 15),
    density=st.floats(0, 1),
    a=st.sampled_from([-1.0, 0.0, 1.0, 3.0]),
    b=st.sampled_from([-1.0, 0.0, 2.0]),
    rho=st.sampled_from([0.0, 0.3, 2.0, 50.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariants(n_users, n_items, density, a, b, rho, seed):
    rng = np.random.default_rng(seed)
    dense = rng.random((n_users, n_items)) < density
    u, i = np.nonzero(dense)
    gains = rng.integers(1, 6, len(u))
    truth = Interactions.from_csr(
        np.concatenate(([0], np.cumsum(dense.sum(axis=1)))), i, (n_users, n_items), sort=False, gains=gains
    )
    sizes = rng.integers(0, n_items + 3, n_users)
    s = PreferenceSampler(a, b, rho)
    obs = s.sample(truth, sizes, rng)
    assert obs.matrix.shape == truth.matrix.shape and obs.matrix.has_canonical_format
    pi = s.propensity(truth, sizes)
    assert pi.shape == (truth.n_pairs,) and ((pi >= 0) & (pi <= 1)).all()
    eff = np.minimum(sizes, truth.user_counts())
    np.testing.assert_allclose(np.bincount(truth.row_of_pairs(), weights=pi, minlength=n_users), eff, atol=1e-9)
    got = obs.matrix.toarray().astype(bool)
    assert not got[(eff == 0)].any()  # no size: nothing observed, liked or not
    if rho == 0:
        assert not (got & ~dense).any()
    q = s.dislike_propensity(truth, sizes, *np.nonzero(np.ones((n_users, n_items), dtype=bool))).reshape(got.shape)
    assert ((q >= 0) & (q <= 1)).all() and (q[dense] == 0).all()
    assert not (got & ~dense & (q == 0)).any() and (got[(q == 1)]).all()

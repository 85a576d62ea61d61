"""Dense low-rank truth with item clusters (issue 24): log w_ui = s u_u.v_i/sqrt K + t eta_{u,g(i)} + gamma zeta_i."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.optimize import brentq
from scipy.special import ndtr

import simrec.preference.factor as factor_mod
from simrec.interactions import Interactions
from simrec.preference import ClusteredFactor, LatentFactor, PreferenceModel

GOOD = dict(n_users=10, n_items=5, n_factors=2, n_clusters=3, signal=1.0, cluster_signal=1.0, pop_exponent=1.0, lam=2.0)


def _reference_pi(w: np.ndarray, n: float) -> np.ndarray:
    """min(1, c w) with sum = n, c by bracketing (the test's own solver: no water-filling)."""
    w = np.asarray(w, dtype=np.float64)
    if n >= (w > 0).sum():
        return (w > 0).astype(float)
    c = brentq(lambda c: np.minimum(1.0, c * w).sum() - n, 0.0, 1e3 * n / w[w > 0].min() + 1.0, xtol=1e-14, rtol=1e-14)
    return np.minimum(1.0, c * w)


def _latents(m: ClusteredFactor, seed: int, n: int | None = None):
    """The latents ``generate(seed)`` draws first (the Notes' order): the items' v, zeta, g, then the first block's
    u, eta, eps (its ``n`` users: all of them when they fit one block)."""
    gen = np.random.default_rng(seed)
    v, zeta, g = m._item_factors(gen)
    u, eta, targets = m._user_factors(gen, n or m.n_users)
    return u, eta, v, zeta, g, targets


@pytest.mark.parametrize(
    "change, message",
    [
        ({"n_users": 0}, "`n_users` must be an integer in [1, inf]; got 0"),
        ({"n_items": 0}, "`n_items` must be an integer in [1, inf]; got 0"),
        ({"n_factors": 0}, "`n_factors` must be an integer in [1, inf]; got 0"),
        ({"n_clusters": 0}, "`n_clusters` must be an integer in [1, inf]; got 0"),
        ({"signal": -0.1}, "`signal` must be in [0, inf); got -0.1"),
        ({"cluster_signal": -1.0}, "`cluster_signal` must be in [0, inf); got -1"),
        ({"cluster_signal": float("nan")}, "`cluster_signal` must be finite; got nan"),
        ({"pop_exponent": -1.0}, "`pop_exponent` must be in [0, inf); got -1"),
        ({"lam": 0.0}, "`lam` must be in (0, inf); got 0"),
        ({"activity_sd": -0.5}, "`activity_sd` must be in [0, inf); got -0.5"),
    ],
)
def test_bad_parameters_are_named(change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ClusteredFactor(**{**GOOD, **change})
    with pytest.raises(TypeError, match="`n_clusters` must be an integer; got 2.5"):
        ClusteredFactor(**{**GOOD, "n_clusters": 2.5})


def test_like_probability_is_the_water_filling_of_the_clustered_weights():
    m = ClusteredFactor(6, 40, 3, 4, 1.5, 2.0, 1.0, 10.0)
    u, eta, v, zeta, g, _ = _latents(m, 5)
    targets = np.array([0.5, 3.0, 10.0, 25.0, 39.9, 40.0])
    pi = m.like_probability(u, eta, v, zeta, g, targets)
    np.testing.assert_allclose(pi.sum(axis=1), targets, rtol=1e-9)
    lw = 1.5 * (u @ v.T) / math.sqrt(3) + 2.0 * eta[:, g] + 1.0 * zeta  # the formula, written out
    np.testing.assert_allclose(m.log_weights(u, eta, v, zeta, g), lw, rtol=1e-12)
    for r in range(6):
        np.testing.assert_allclose(pi[r], _reference_pi(np.exp(lw[r] - lw[r].max()), targets[r]), rtol=1e-8, atol=1e-12)


def test_zero_cluster_signal_or_one_cluster_is_the_latent_factor_law():
    # t = 0: LatentFactor's like probabilities for the same u, v, zeta; G = 1: too, whatever t (the one cluster's
    # offset is a per-user constant, absorbed by c_u); with t > 0 and G > 1 they differ
    rng = np.random.default_rng(6)
    u, v, zeta = rng.standard_normal((8, 3)), rng.standard_normal((30, 3)), rng.standard_normal(30)
    targets = rng.uniform(0.5, 25.0, 8)
    base = LatentFactor(8, 30, 3, 1.75, 1.25, 10.0).like_probability(u, v, zeta, targets)
    for G, t in [(5, 0.0), (1, 3.0)]:
        eta, g = rng.standard_normal((8, G)), rng.integers(0, G, 30)
        got = ClusteredFactor(8, 30, 3, G, 1.75, t, 1.25, 10.0).like_probability(u, eta, v, zeta, g, targets)
        np.testing.assert_allclose(got, base, rtol=1e-9, atol=1e-12)
    eta, g = rng.standard_normal((8, 5)), rng.integers(0, 5, 30)
    other = ClusteredFactor(8, 30, 3, 5, 1.75, 1.0, 1.25, 10.0).like_probability(u, eta, v, zeta, g, targets)
    assert np.abs(other - base).max() > 0.05


def test_like_frequencies_over_many_seeds_are_the_like_probabilities():
    # exact law of generate: per seed, the latents replayed in the Notes' order give every cell's pi; given them the
    # cells are independent Bernoulli(pi), so over seeds each cell's (likes - sum pi) / sqrt(sum pi (1 - pi)) is about
    # N(0, 1) and their sum of squares chi2(cells). A wrong cluster column, shift or draw order moves pi by far more.
    m = ClusteredFactor(5, 12, 2, 3, 1.0, 2.0, 0.5, 4.0, 0.5)
    seeds = range(2000)
    likes, mean, var = np.zeros((5, 12)), np.zeros((5, 12)), np.zeros((5, 12))
    for seed in seeds:
        u, eta, v, zeta, g, targets = _latents(m, seed)
        pi = m.like_probability(u, eta, v, zeta, g, targets)
        likes += m.generate(seed).matrix.toarray()
        mean += pi
        var += pi * (1 - pi)
    z2 = (likes - mean) ** 2 / var
    assert stats.chi2.sf(z2.sum(), z2.size) > 1e-4
    assert np.abs(likes - mean).max() < 5 * np.sqrt(var).max()


def test_expected_pairs_exact():
    m = ClusteredFactor(400, 120, 3, 6, 1.0, 1.5, 1.0, 30.0, 1.2)  # the lognormal targets cross the cap at 120
    pairs = np.array([m.generate(20 + s).n_pairs for s in range(30)], dtype=float)
    assert abs(pairs.mean() - m.expected_pairs()) < 4 * pairs.std(ddof=1) / np.sqrt(len(pairs))
    rng = np.random.default_rng(9)
    x = np.minimum(120.0, 30.0 * np.exp(1.2 * rng.standard_normal(10**6) - 0.72))
    assert m.expected_pairs() == pytest.approx(400 * x.mean(), rel=3e-3)
    assert m.expected_pairs() == LatentFactor(400, 120, 3, 1.0, 1.0, 30.0, 1.2).expected_pairs()
    assert ClusteredFactor(10, 50, 2, 3, 1.0, 1.0, 1.0, 80.0, 0.0).expected_pairs() == 500.0


def test_generate_canonical_reproducible_and_preference_is_phi_of_the_combined_affinity():
    m = ClusteredFactor(300, 90, 4, 6, 1.75, 1.5, 1.75, 12.0, 0.8)
    x, y, z = m.generate(7), m.generate(7), m.generate(8)
    ref = Interactions.from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape)
    assert x.matrix.shape == (300, 90) and (ref.matrix != x.matrix).nnz == 0
    assert (x.matrix != y.matrix).nnz == 0 and np.array_equal(x.preference, y.preference)
    assert (x.matrix != z.matrix).nnz > 0
    assert x.preference is x.gains and x.preference.dtype == np.float32
    assert isinstance(m, PreferenceModel) and m.expected_items() == 90
    assert x.preference.min() > 0 and x.preference.max() < 1
    u, eta, v, zeta, g, _ = _latents(m, 7)
    rows, cols = x.row_of_pairs(), x.matrix.indices
    zz = (u[rows] * v[cols]).sum(axis=1) / 2.0
    np.testing.assert_allclose(x.preference, ndtr((zz + eta[rows, g[cols]]) / math.sqrt(2)), rtol=1e-6)
    # the likes are selected by both parts: the liked pairs' affinity and cluster taste are above average
    assert zz.mean() > 0.3 and eta[rows, g[cols]].mean() > 0.3


def test_many_blocks_draw_in_the_documented_order(monkeypatch):
    # 3 users per block (70 items pad to 96): the first block's latents come right after the items' (the next
    # block's after the first block's like draws), so its preferences are replayed; the profile sizes keep their law
    m = ClusteredFactor(200, 70, 3, 4, 1.5, 1.5, 1.0, 9.0, 0.5)
    one = np.array([m.generate(60 + s).user_counts().mean() for s in range(25)])
    monkeypatch.setattr(factor_mod, "_BLOCK_BYTES", 4 * 96 * 3)
    x = m.generate(3)
    u, eta, v, zeta, g, _ = _latents(m, 3, n=3)
    rows, cols = x.row_of_pairs(), x.matrix.indices
    first = rows < 3
    rows, cols, p = rows[first], cols[first], x.preference[first]
    z = (u[rows] * v[cols]).sum(axis=1) / math.sqrt(3)
    assert len(p) > 5
    np.testing.assert_allclose(p, ndtr((z + eta[rows, g[cols]]) / math.sqrt(2)), rtol=1e-6)
    assert (Interactions.from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape).matrix != x.matrix).nnz == 0
    many = np.array([m.generate(90 + s).user_counts().mean() for s in range(25)])
    assert stats.ttest_ind(one, many, equal_var=False).pvalue > 1e-3


def test_users_like_within_their_favourite_clusters():
    # s = gamma = 0: only the cluster taste selects; a user's likes in cluster k are ~ exp(t eta_uk), so the cluster
    # of the user's largest eta holds more of its likes than the 1/G of the items
    m = ClusteredFactor(500, 200, 2, 5, 0.0, 2.0, 0.0, 20.0, 0.0)
    x = m.generate(2)
    u, eta, v, zeta, g, _ = _latents(m, 2)
    rows, cols = x.row_of_pairs(), x.matrix.indices
    top = eta.argmax(axis=1)
    share = np.mean(g[cols] == top[rows])
    assert share > 0.6  # the exact share is about 0.8; 1/G = 0.2 without clusters


def test_extreme_weights_stay_finite():
    # s = 8, t = 8, gamma = 5: log-weights far beyond float32's exp range; the per-user shift keeps them finite
    x = ClusteredFactor(50, 40, 2, 3, 8.0, 8.0, 5.0, 6.0, 0.5).generate(4)
    assert x.n_pairs > 0 and np.isfinite(x.preference).all() and x.preference.min() > 0
    # t = 40 alone: the cluster part spreads the log-weights by ~200 (exp overflows unless the shift bounds t eta);
    # the likes still have the exact law: every cell with pi = 1 liked, the count within 5 sd of sum pi
    m = ClusteredFactor(50, 40, 2, 10, 0.0, 40.0, 0.0, 6.0, 0.5)
    x = m.generate(4)
    u, eta, v, zeta, g, targets = _latents(m, 4)
    pi = m.like_probability(u, eta, v, zeta, g, targets)
    np.testing.assert_allclose(pi.sum(axis=1), targets, rtol=1e-9)
    liked = x.matrix.toarray() > 0
    assert liked[pi == 1].all() and not liked[pi == 0].any()
    assert abs(x.n_pairs - pi.sum()) < 5 * np.sqrt((pi * (1 - pi)).sum())


@settings(max_examples=30, deadline=None)
@given(
    n_users=st.integers(1, 25),
    n_items=st.integers(1, 80),
    K=st.integers(1, 4),
    G=st.integers(1, 6),
    signal=st.sampled_from([0.0, 1.75, 4.0]),
    t=st.sampled_from([0.0, 1.0, 4.0]),
    gamma=st.sampled_from([0.0, 1.0, 2.5]),
    lam=st.sampled_from([0.2, 3.0, 40.0, 500.0]),
    sd=st.sampled_from([0.0, 1.0, 2.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariants(n_users, n_items, K, G, signal, t, gamma, lam, sd, seed):
    m = ClusteredFactor(n_users, n_items, K, G, signal, t, gamma, lam, sd)
    x = m.generate(seed)
    ref = Interactions.from_pairs(x.row_of_pairs(), x.matrix.indices, (n_users, n_items))
    assert x.matrix.shape == (n_users, n_items) and (ref.matrix != x.matrix).nnz == 0
    assert len(x.preference) == x.n_pairs and (x.n_pairs == 0 or (x.preference.min() > 0 and x.preference.max() <= 1))
    assert 0 < m.expected_pairs() <= n_users * n_items * (1 + 1e-12)

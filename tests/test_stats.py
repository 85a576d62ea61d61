"""Key statistics, similarity sampling, KL divergence and losses (simrec.stats).

Hand-computed references are derived in the comments next to them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import hypergeom

from simrec.interactions import Interactions
from simrec.stats import (
    STATISTICS,
    KeyStatistics,
    StatisticBins,
    average_loss,
    count_histogram,
    item_cosines,
    item_popularity,
    item_similarity,
    key_statistics,
    kl_by_statistic,
    kl_divergence,
    log_count_edges,
    pair_intersections,
    pair_intersections_sparse,
    relative_loss,
    sample_unique_pairs,
    user_activity,
    user_cosines,
    user_similarity,
)
from simrec.stats.similarity import pack_rows


def make(rows: list[list[int]], n_items: int) -> Interactions:
    u = np.array([r for r, items in enumerate(rows) for _ in items], dtype=np.int64)
    i = np.array([c for items in rows for c in items], dtype=np.int64)
    return Interactions.from_pairs(u, i, (len(rows), n_items))


def random_inter(n_users: int, n_items: int, density: float, seed: int) -> Interactions:
    rng = np.random.default_rng(seed)
    u, i = np.nonzero(rng.random((n_users, n_items)) < density)
    return Interactions.from_pairs(u, i, (n_users, n_items))


# Toy matrix (users x items):   u0: i0 i1 i2 | u1: i0 i1 | u2: i0 i2 i3 | u3: i3 ; i4 unobserved
TOY = make([[0, 1, 2], [0, 1], [0, 2, 3], [3]], 5)
TOY_BINS = StatisticBins(
    popularity_edges=np.array([1, 2, 3]), activity_edges=np.array([1, 2, 3]), n_similarity_bins=4, min_observations=1
)


# -- counts -------------------------------------------------------------------
def test_count_histograms_by_hand():
    # popularity 3,2,2,2 (i4 = 0 is left out): bins [1,2) [2,3) [3,inf) -> 0, 3, 1 of 4
    np.testing.assert_allclose(item_popularity(TOY, TOY_BINS), [0, 0.75, 0.25])
    # activity 3,2,3,1 -> 1, 1, 2 of 4
    np.testing.assert_allclose(user_activity(TOY, TOY_BINS), [0.25, 0.25, 0.5])
    # overflow: counts beyond the last edge land in the last bin
    np.testing.assert_allclose(count_histogram(np.array([1, 5, 100, 0]), np.array([1, 2, 4])), [1 / 3, 0, 2 / 3])
    with pytest.warns(RuntimeWarning, match="no positive count"):
        assert np.isnan(count_histogram(np.zeros(3, dtype=int), np.array([1, 2]))).all()


@settings(max_examples=50, deadline=None)
@given(max_count=st.integers(1, 100_000), n_bins=st.integers(1, 80))
def test_log_count_edges_properties(max_count, n_bins):
    e = log_count_edges(max_count, n_bins)
    assert e[0] == 1 and e[-1] == max_count + 1
    assert (np.diff(e) > 0).all() and len(e) - 1 <= n_bins


def test_bins_from_reference_and_roundtrip():
    b = StatisticBins.from_reference(TOY, n_count_bins=50)
    # counts up to 3: edges 1,2,3,4 (one bin per integer) + overflow bin
    assert b.popularity_edges.tolist() == [1, 2, 3, 4] and b.activity_edges.tolist() == [1, 2, 3, 4]
    assert b.n_bins("item_popularity") == 4 and b.n_bins("item_similarity") == 50
    assert b.min_observations == 5
    assert StatisticBins.from_dict(b.to_dict()) == b
    np.testing.assert_allclose(b.similarity_edges[[0, 1, -1]], [0, 0.02, 1])
    with pytest.raises(ValueError, match="`popularity_edges` must start at 1"):
        StatisticBins(popularity_edges=np.array([0, 2]), activity_edges=np.array([1, 2]))
    with pytest.raises(ValueError, match="`data` must be a dict with keys"):
        StatisticBins.from_dict({"popularity_edges": [1, 2]})
    with pytest.raises(ValueError, match="at least one pair"):
        StatisticBins.from_reference(make([[]], 2))


# -- cosines ------------------------------------------------------------------
def test_item_cosines_by_hand():
    s = item_cosines(TOY, 0, min_observations=1)
    # all 6 pairs of the 4 observed items (i4 has 0 < 1 observation): exact path
    assert s.exact and s.n_eligible == 4
    got = {(int(a), int(b)): c for a, b, c in zip(s.left, s.right, s.cosines)}
    r6 = math.sqrt(6)
    # U0={u0,u1,u2}, U1={u0,u1}, U2={u0,u2}, U3={u2,u3}
    want = {(0, 1): 2 / r6, (0, 2): 2 / r6, (0, 3): 1 / r6, (1, 2): 1 / 2, (1, 3): 0.0, (2, 3): 1 / 2}
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12)
    # 4 bins: 0 -> bin0, 1/sqrt6=.41 -> bin1, .5 .5 -> bin2, .82 .82 -> bin3
    np.testing.assert_allclose(item_similarity(TOY, TOY_BINS, 0), [1 / 6, 1 / 6, 2 / 6, 2 / 6])


def test_user_cosines_by_hand():
    # min 2 observations drops u3; I0={0,1,2}, I1={0,1}, I2={0,2,3}
    s = user_cosines(TOY, 0, min_observations=2)
    got = {(int(a), int(b)): c for a, b, c in zip(s.left, s.right, s.cosines)}
    assert got == pytest.approx({(0, 1): 2 / math.sqrt(6), (0, 2): 2 / 3, (1, 2): 1 / math.sqrt(6)})
    b2 = StatisticBins(np.array([1, 2]), np.array([1, 2]), n_similarity_bins=4, min_observations=2)
    np.testing.assert_allclose(user_similarity(TOY, b2, 0), [0, 1 / 3, 1 / 3, 1 / 3])
    # no eligible pair: undefined, NaN with a warning
    with pytest.warns(RuntimeWarning, match="no pair"):
        assert np.isnan(user_similarity(TOY, StatisticBins(np.array([1, 2]), np.array([1, 2]), 4, 4), 0)).all()


@settings(max_examples=40, deadline=None)
@given(
    n_rows=st.integers(1, 12),
    n_cols=st.integers(1, 200),
    density=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_pair_intersections_equal_dense(n_rows, n_cols, density, seed):
    rng = np.random.default_rng(seed)
    dense = rng.random((n_rows, n_cols)) < density
    rows = sp.csr_array(dense.astype(np.int8))
    left, right = np.triu_indices(n_rows, 1)
    want = (dense[left] & dense[right]).sum(axis=1)
    np.testing.assert_array_equal(pair_intersections(rows, left, right), want)
    np.testing.assert_array_equal(pair_intersections(rows, left, right, bitset_max_bytes=0), want)  # sparse fallback
    np.testing.assert_array_equal(pair_intersections_sparse(rows, left, right, chunk=3), want)
    # packed popcount of a row = its count (bits beyond n_cols stay 0)
    np.testing.assert_array_equal(np.bitwise_count(pack_rows(rows)).sum(axis=1), dense.sum(axis=1))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 80))
def test_all_pairs_path_is_triu(n):
    left, right, exact = sample_unique_pairs(n, max(1, n * (n - 1) // 2), 0)
    tl, tr = np.triu_indices(n, 1)
    assert exact
    np.testing.assert_array_equal(left, tl)
    np.testing.assert_array_equal(right, tr)


@pytest.mark.parametrize("k", [10, 35])  # 35 > 45/2 exercises the complement branch
def test_sampled_pairs_unique_and_uniform(k):
    n, total, reps = 10, 45, 3000
    rng = np.random.default_rng(7)
    hits = np.zeros((n, n))
    for _ in range(reps):
        left, right, exact = sample_unique_pairs(n, k, rng)
        assert not exact and len(left) == k and (left < right).all() and right.max() < n
        assert len(set(zip(left.tolist(), right.tolist()))) == k
        hits[left, right] += 1
    # each pair is included with probability k/45; 5 binomial SEs
    freq = hits[np.triu_indices(n, 1)] / reps
    pi = k / total
    assert np.abs(freq - pi).max() <= 5 * math.sqrt(pi * (1 - pi) / reps)


@pytest.mark.parametrize("side", ["item", "user"])
def test_sampled_histogram_close_to_exact(side):
    inter = random_inter(400, 150, 0.08, seed=3)
    fn = item_cosines if side == "item" else user_cosines
    exact = fn(inter, 0, min_observations=5, max_pairs=10**9)
    assert exact.exact
    total, n = len(exact.cosines), 3000
    sample = fn(inter, 11, min_observations=5, max_pairs=n)
    assert not sample.exact and len(sample.cosines) == n
    big = np.histogram(exact.cosines, bins=20, range=(0, 1))[0]
    small = np.histogram(sample.cosines, bins=20, range=(0, 1))[0]
    # a simple random sample without replacement: each bin's sample count is
    # Hypergeometric(N=total, K=bin count, n); exact two-sided test per bin
    # at 1e-4 (20 bins: family-wise false alarm < 2e-3; the seed is fixed)
    pvals = [
        min(1.0, 2 * min(hypergeom.cdf(k, total, K, n), hypergeom.sf(k - 1, total, K, n))) for K, k in zip(big, small)
    ]
    assert min(pvals) > 1e-4, (big, small, pvals)
    p, q = big / total, small / n
    # and, where the normal approximation holds (n p >= 10), within 5 standard errors
    se = np.sqrt(p * (1 - p) / n * (total - n) / (total - 1))
    ok = n * p >= 10
    assert ok.sum() >= 3  # the test is not vacuous: several populated bins
    assert (np.abs(q - p)[ok] <= 5 * se[ok]).all()


# -- KL and losses ------------------------------------------------------------
def test_kl_divergence_by_hand():
    p, q = [0.5, 0.25, 0.25], [0.25, 0.25, 0.5]
    # eps = 0: 0.5 ln 2 + 0.25 ln(1/2) = 0.25 ln 2
    assert kl_divergence(p, q, eps=0) == pytest.approx(0.25 * math.log(2), rel=1e-12)
    # eps = 0.1: p~ = (.6,.35,.35)/1.3, q~ = (.35,.35,.6)/1.3 -> (0.25/1.3) ln(.6/.35)
    assert kl_divergence(p, q, eps=0.1) == pytest.approx(0.25 / 1.3 * math.log(0.6 / 0.35), rel=1e-12)
    # counts are normalised first; identical inputs give 0; direction matters
    assert kl_divergence([2, 1, 1], [1, 1, 2], eps=0) == pytest.approx(0.25 * math.log(2))
    assert kl_divergence(p, p) == 0.0
    assert kl_divergence([1, 0, 0], [0.9, 0.1, 0]) > 0
    assert kl_divergence([0.9, 0.1], [1.0, 0.0]) != pytest.approx(kl_divergence([1.0, 0.0], [0.9, 0.1]))
    # a missed bin: infinite without smoothing, finite with it
    assert kl_divergence([0.5, 0.5], [1, 0], eps=0) == math.inf
    assert math.isfinite(kl_divergence([0.5, 0.5], [1, 0]))
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert math.isnan(kl_divergence([np.nan, 1], [0.5, 0.5]))
    with pytest.raises(ValueError, match="equal length"):
        kl_divergence([1, 0], [1, 0, 0])
    with pytest.raises(ValueError, match="`q_simulated` must be finite and non-negative"):
        kl_divergence([1, 0], [2, -1])
    with pytest.raises(ValueError, match="`p_reference` must have a positive sum"):
        kl_divergence([0, 0], [1, 1])
    with pytest.raises(ValueError, match=r"`eps` must be in \[0, 1\]"):
        kl_divergence(p, q, eps=-1)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0, 10), min_size=2, max_size=10).filter(lambda x: sum(x) > 0),
    st.integers(0, 2**32 - 1),
)
def test_kl_nonnegative_and_zero_iff_equal(p, seed):
    q = np.random.default_rng(seed).permutation(p)
    d = kl_divergence(p, q)
    assert d >= -1e-12
    if not np.allclose(np.asarray(p) / sum(p), q / q.sum()):
        assert d > 0
    assert kl_divergence(p, p) == pytest.approx(0, abs=1e-12)


def test_relative_and_average_loss():
    assert relative_loss(0.3, 0.2) == pytest.approx(1.5)
    kls = {"item_popularity": 0.2, "user_activity": 0.4, "item_similarity": 0.1, "user_similarity": 0.05}
    best = {"item_popularity": 0.1, "user_activity": 0.4, "item_similarity": 0.05, "user_similarity": 0.05}
    # (2 + 1 + 2 + 1) / 4
    assert average_loss(kls, best) == pytest.approx(1.5)
    with pytest.warns(RuntimeWarning, match="best_kl = 0"):
        assert math.isnan(relative_loss(0.1, 0.0))
    with pytest.raises(ValueError, match=r"`kl` must be in \[0, inf\)"):
        relative_loss(-0.1, 1.0)
    with pytest.raises(ValueError, match="missing"):
        average_loss(kls, {"item_popularity": 1.0})


# -- all four together ----------------------------------------------------------
def test_key_statistics_reproducible_and_serialisable():
    ref = random_inter(300, 200, 0.05, seed=1)
    bins = StatisticBins.from_reference(ref, n_similarity_bins=20)
    a = key_statistics(ref, bins, 5, max_pairs=2000)
    b = key_statistics(ref, bins, np.random.default_rng(5), max_pairs=2000)
    c = key_statistics(ref, bins, 6, max_pairs=2000)
    assert not a.item_pairs_exact and a.n_item_pairs == 2000 and a.n_user_pairs == 2000
    for name in STATISTICS:
        np.testing.assert_array_equal(a[name], b[name])
        assert a[name].sum() == pytest.approx(1.0)
    assert not np.array_equal(a["user_similarity"], c["user_similarity"])
    assert list(a) == list(STATISTICS) and set(a.as_dict()) == set(STATISTICS)
    again = KeyStatistics.from_dict(a.to_dict())
    assert kl_by_statistic(a, again) == {name: 0.0 for name in STATISTICS}
    with pytest.raises(ValueError):  # read-only histograms
        a.item_popularity[0] = 1.0


def test_kl_by_statistic_between_datasets():
    ref = random_inter(300, 200, 0.05, seed=1)
    bins = StatisticBins.from_reference(ref)
    sim = random_inter(300, 200, 0.15, seed=2)  # denser: every count shifts up
    kls = kl_by_statistic(key_statistics(ref, bins, 0), key_statistics(sim, bins, 0))
    assert set(kls) == set(STATISTICS) and all(v > 0.1 for v in kls.values())
    # the simulation's larger counts beyond the reference max land in the overflow bin
    assert key_statistics(sim, bins, 0).user_activity[-1] > 0
    other = StatisticBins.from_reference(sim)
    with pytest.raises(ValueError, match="same StatisticBins"):
        kl_by_statistic(key_statistics(ref, bins, 0), key_statistics(sim, other, 0))


def test_undefined_statistic_gives_nan_kl():
    ref = random_inter(50, 40, 0.2, seed=4)
    bins = StatisticBins.from_reference(ref)
    tiny = make([[0], [1]], 2)  # no item or user with 5 observations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ks = key_statistics(tiny, bins, 0)
    assert np.isnan(ks.item_similarity).all() and ks.n_item_pairs == 0
    with pytest.warns(RuntimeWarning):
        kls = kl_by_statistic(key_statistics(ref, bins, 0), ks)
    assert math.isnan(kls["item_similarity"]) and math.isfinite(kls["item_popularity"])

"""Tests of simrec.recommenders: baselines, top_n, and the LensKit adapter."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import simrec._blocks as blocks
import simrec.recommenders._base as base
from simrec.interactions import Interactions
from simrec.metrics import UndefinedMetricWarning, precision
from simrec.metrics._common import check_lists
from simrec.recommenders import (
    LensKitRecommender,
    Oracle,
    Popular,
    ProbabilisticOracle,
    RandomRecommender,
    Recommender,
    top_n,
)

ML100K = "/work/shared/data/ml-100k"


# -- fixtures -----------------------------------------------------------------------


def make_world(seed: int, n_users: int = 300, n_items: int = 40):
    """Truth, train and relevant = truth - train, with edge-case users.

    Users 0 and 1 have every item in train (no candidate); user 2 all but 3
    (fewer candidates than n = 10); user 3 has an empty train; the others are
    random with popular items (low index) more likely.
    """
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, n_items + 1)
    like = rng.random((n_users, n_items)) < np.clip(0.9 * w * 8, 0.05, 0.9)
    seen = like & (rng.random((n_users, n_items)) < 0.5)
    seen[0:2] = True
    like[0:2] = True
    seen[2] = True
    seen[2, [5, 17, 33]] = False
    like[2, 17] = True
    seen[3] = False
    train = Interactions.from_pairs(*np.nonzero(seen), (n_users, n_items))
    truth = Interactions.from_pairs(*np.nonzero(like | seen), (n_users, n_items))
    relevant = sp.csr_array(((truth.matrix.toarray() > 0) & ~seen).astype(np.int8))
    return train, truth, relevant


@pytest.fixture(scope="module")
def world():
    return make_world(0)


BASELINES = [
    RandomRecommender(),
    Popular(),
    Oracle(),
    ProbabilisticOracle(0.3),
    ProbabilisticOracle(0.0),
    ProbabilisticOracle(1.0),
]


def check_valid_lists(L: np.ndarray, train: Interactions, n: int, exact_length: bool = True) -> None:
    assert L.dtype == np.int64 and L.shape == (train.n_users, n)
    check_lists(L, train.n_items)  # range, trailing -1 padding, no duplicate
    tr = train.matrix.toarray() > 0
    rows, cols = np.nonzero(L >= 0)
    assert not tr[rows, L[rows, cols]].any(), "a training item was recommended"
    n_cand = train.n_items - train.user_counts()
    length = (L >= 0).sum(axis=1)
    if exact_length:
        assert (length == np.minimum(n, n_cand)).all()
    else:
        assert (length <= np.minimum(n, n_cand)).all()


# -- top_n --------------------------------------------------------------------------


def test_top_n_hand_case():
    S = np.array([[0.1, -np.inf, 0.5, 0.3], [-np.inf, -np.inf, 1.0, -np.inf]])
    assert top_n(S, 3).tolist() == [[2, 3, 0], [2, -1, -1]]
    assert top_n(S, 6).tolist() == [[2, 3, 0, -1, -1, -1], [2, -1, -1, -1, -1, -1]]
    assert top_n(S, 1).dtype == np.int64


def test_top_n_validation():
    with pytest.raises(ValueError, match=r"`n` must be an integer in \[1, inf\]; got 0"):
        top_n(np.zeros((2, 3)), 0)
    with pytest.raises(TypeError, match="`n` must be an integer"):
        top_n(np.zeros((2, 3)), 2.0)
    with pytest.raises(ValueError, match="must not contain NaN"):
        top_n(np.array([[np.nan, 1.0]]), 1)
    with pytest.raises(TypeError, match="float array"):
        top_n(np.zeros((2, 3), dtype=int), 1)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_users=st.integers(1, 30), n_items=st.integers(1, 30), n=st.integers(1, 35))
def test_top_n_is_a_truncated_argsort(seed, n_users, n_items, n):
    rng = np.random.default_rng(seed)
    S = rng.random((n_users, n_items))  # distinct almost surely
    S[rng.random(S.shape) < 0.3] = -np.inf
    full = np.argsort(-S, axis=1, kind="stable")
    expect = np.where(np.take_along_axis(S, full, axis=1) > -np.inf, full, -1)
    expect = np.pad(expect, ((0, 0), (0, max(0, n - n_items))), constant_values=-1)[:, :n]
    old = blocks.BLOCK_ELEMENTS
    try:
        blocks.BLOCK_ELEMENTS = 3 * n_items  # several user blocks
        got = top_n(S, n)
    finally:
        blocks.BLOCK_ELEMENTS = old
    np.testing.assert_array_equal(got, expect)


# -- invariants of every baseline -------------------------------------------------------


@pytest.mark.parametrize("rec", BASELINES, ids=lambda r: r.name)
@pytest.mark.parametrize("n", [1, 10, 45])
def test_lists_valid(rec, n, world):
    train, truth, relevant = world
    assert isinstance(rec, Recommender)
    L = rec.recommend(train, relevant, n, rng=1)
    check_valid_lists(L, train, n)
    assert (L[:2] == -1).all() and (L[2, :3] >= 0).all() and (L[2, 3:] == -1).all()


@pytest.mark.parametrize("rec", BASELINES, ids=lambda r: r.name)
def test_scores_valid_and_consistent_with_lists(rec, world, monkeypatch):
    train, truth, relevant = world
    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 50 * train.n_items)  # several blocks
    S = rec.score(train, relevant, rng=2)
    assert S.dtype == np.float64 and S.shape == (train.n_users, train.n_items)
    tr = train.matrix.toarray() > 0
    assert (np.isneginf(S) == tr).all() and not np.isnan(S).any()
    check_valid_lists(top_n(S, 10), train, 10)
    users = np.array([7, 3, 7, 0])
    Su = rec.score(train, relevant, rng=2, users=users)
    assert Su.shape == (4, train.n_items)
    assert (np.isneginf(Su) == tr[users]).all()


@pytest.mark.parametrize("rec", BASELINES, ids=lambda r: r.name)
def test_same_seed_same_lists(rec, world):
    train, truth, relevant = world
    a = rec.recommend(train, relevant, 10, rng=5)
    assert (a == rec.recommend(train, relevant, 10, rng=5)).all()
    assert (a == rec.recommend(train, relevant, 10, rng=np.random.default_rng(5))).all()
    assert (a != rec.recommend(train, relevant, 10, rng=6)).any()
    assert (rec.score(train, relevant, rng=5) == rec.score(train, relevant, rng=5)).all()


def test_validation(world):
    train, truth, relevant = world
    with pytest.raises(ValueError, match="`relevant` is required"):
        Oracle().recommend(train, None, 10, rng=0)
    with pytest.raises(ValueError, match="`relevant` is required"):
        ProbabilisticOracle(0.5).score(train, None, rng=0)
    with pytest.raises(ValueError, match=r"`n` must be an integer in \[1, inf\]; got 0"):
        Popular().recommend(train, None, 0, rng=0)
    with pytest.raises(TypeError, match="`train` must be an Interactions"):
        RandomRecommender().recommend(train.matrix, None, 5, rng=0)
    with pytest.raises(ValueError, match="shape of `train`"):
        Oracle().recommend(train, relevant[:10], 5, rng=0)
    with pytest.raises(ValueError, match=r"`users` must be row indices in \[0, 300\)"):
        Popular().score(train, None, rng=0, users=np.array([300]))
    with pytest.raises(ValueError, match=r"`p` must be in \[0, 1\]; got 1.5"):
        ProbabilisticOracle(1.5)


# -- Oracle ---------------------------------------------------------------------------


@pytest.mark.parametrize("rel_kind", ["candidates", "full truth"])
def test_oracle_precision_one_with_enough_relevant(world, rel_kind):
    train, truth, relevant = world
    given_rel = relevant if rel_kind == "candidates" else truth.matrix  # train pairs are ignored
    N = 5
    L = Oracle().recommend(train, given_rel, N, rng=3)
    check_valid_lists(L, train, N)
    r = np.diff(relevant.indptr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        p = precision(L, relevant)
    assert (r >= N).sum() > 50
    assert (p[r >= N] == 1).all()
    # fewer relevant candidates than N: all of them first, then only non-relevant ones
    R = relevant.toarray() > 0
    for u in np.flatnonzero((r > 0) & (r < N))[:50]:
        assert set(L[u, : r[u]]) == set(np.flatnonzero(R[u]))
        assert not R[u, L[u, r[u] :][L[u, r[u] :] >= 0]].any()


def test_oracle_scores_put_relevant_first(world):
    train, truth, relevant = world
    S = Oracle().score(train, relevant, rng=4)
    R = relevant.toarray() > 0
    worst_rel = np.where(R, S, np.inf).min(axis=1)
    best_non = np.where(~R & np.isfinite(S), S, -np.inf).max(axis=1)
    assert (worst_rel > best_non).all()


# -- Random ---------------------------------------------------------------------------


def test_random_expected_precision(world):
    # E[precision_u] = r_u / C_u (hypergeometric); Var = q(1-q)(C-n)/(n(C-1)), q = r/C.
    train, truth, relevant = make_world(1, n_users=3000)
    n = 10
    L = RandomRecommender().recommend(train, relevant, n, rng=7)
    r = np.diff(relevant.indptr)
    C = train.n_items - train.user_counts()
    ok = (C >= n) & (r > 0)
    p = precision(L, relevant, evaluated=ok)[ok]
    q, Cc = r[ok] / C[ok], C[ok]
    var = q * (1 - q) * (Cc - n) / (n * (Cc - 1))
    se = math.sqrt(var.sum()) / ok.sum()
    assert abs(p.mean() - q.mean()) < 4 * se, (p.mean(), q.mean(), se)


@pytest.mark.parametrize("path", ["recommend", "top_n(score)"])
def test_random_lists_are_uniform_over_candidates(path):
    # 4000 identical users with items 0..4 in train and 20 candidates; n = 5: each
    # candidate appears with probability 1/4 and at position 0 with probability 1/20.
    n_users, n_items, n = 4000, 25, 5
    u = np.repeat(np.arange(n_users), 5)
    train = Interactions.from_pairs(u, np.tile(np.arange(5), n_users), (n_users, n_items))
    rec = RandomRecommender()
    L = rec.recommend(train, None, n, rng=8) if path == "recommend" else top_n(rec.score(train, None, rng=8), n)
    counts = np.bincount(L.ravel(), minlength=n_items)
    assert counts[:5].sum() == 0
    freq = counts[5:] / n_users
    assert np.all(np.abs(freq - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n_users))
    first = np.bincount(L[:, 0], minlength=n_items)[5:] / n_users
    assert np.all(np.abs(first - 0.05) < 4.5 * math.sqrt(0.05 * 0.95 / n_users))


# -- Popular --------------------------------------------------------------------------


def test_popular_sorted_by_training_popularity(world):
    train, truth, relevant = world
    pop = train.item_counts()
    L = Popular().recommend(train, None, 10, rng=9)
    P = np.where(L >= 0, pop[np.maximum(L, 0)], -1)
    full = (L >= 0).all(axis=1)
    assert (np.diff(P[full], axis=1) <= 0).all()
    # nothing better was left out: every candidate outside the list is at most as popular
    tr = train.matrix.toarray() > 0
    for u in np.flatnonzero(full)[:100]:
        out = np.ones(train.n_items, dtype=bool)
        out[L[u]] = False
        out &= ~tr[u]
        assert pop[out].max(initial=-1) <= P[u].min()


def popular_tie_world(n_test: int):
    """Popularity 0: 9+m, items 1, 2: 8, items 3..7: 6, items 8, 9: 0 (m = users of group B).

    Group A (first half of n_test users) has an empty train; group B has item 0 in train.
    """
    n_items = 10
    background = [(0, 9), (1, 8), (2, 8)] + [(i, 6) for i in range(3, 8)]
    u, i = [], []
    start = n_test
    for item, c in background:
        u += list(range(start, start + c))
        i += [item] * c
    n_users = start + 9
    half = n_test // 2
    u += list(range(half, n_test))
    i += [0] * (n_test - half)
    return Interactions.from_pairs(np.array(u), np.array(i), (n_users, n_items)), half


@pytest.mark.parametrize("path", ["recommend", "top_n(score)"])
def test_popular_breaks_ties_uniformly_per_user(path):
    n_test = 6000
    train, half = popular_tie_world(n_test)
    pop = train.item_counts()
    assert pop.tolist() == [9 + n_test - half, 8, 8, 6, 6, 6, 6, 6, 0, 0]
    rec = Popular()
    L = rec.recommend(train, None, 5, rng=10) if path == "recommend" else top_n(rec.score(train, None, rng=10), 5)
    A, B = L[:half], L[half:n_test]

    def close(freq, p, m, z=4.0):
        return abs(freq - p) < z * math.sqrt(p * (1 - p) / m)

    # group A: item 0, then {1, 2} in random order, then 2 of the 5 tied items 3..7
    assert (A[:, 0] == 0).all() and (np.sort(A[:, 1:3], axis=1) == [1, 2]).all()
    assert close((A[:, 1] == 1).mean(), 0.5, half)
    for item in range(3, 8):
        assert close((A[:, 3:] == item).any(axis=1).mean(), 2 / 5, half)
        assert close((A[:, 3] == item).mean(), 1 / 5, half)
    # group B (item 0 in train): {1, 2}, then 3 of the 5 tied items
    m = n_test - half
    assert (np.sort(B[:, :2], axis=1) == [1, 2]).all()
    for item in range(3, 8):
        assert close((B[:, 2:] == item).any(axis=1).mean(), 3 / 5, m)


@pytest.mark.parametrize("kernel", [False, True])
@pytest.mark.parametrize("world_name", ["random", "ties"])
def test_popular_window_and_sparse_paths_give_the_same_lists(world_name, kernel, monkeypatch):
    """Popular's first pass (a bitmap of the top ``_POPULAR_WINDOW * n``
    positions, user blocks of ``_WINDOW_CELLS``, or the compiled user-by-user
    pass) and its exact sparse fallback are one function: the same lists, draw
    for draw, whether all, some or no users fall back (lists or cut levels
    beyond the window), in one block or many."""
    import sys

    import simrec.recommenders._popular_lists as bl

    if not kernel:  # the numpy blocks: numba looks unloaded
        monkeypatch.delitem(sys.modules, "numba", raising=False)
    monkeypatch.setattr(bl, "_KERNEL_MIN_PAIRS", 0 if kernel else 1 << 62)

    if world_name == "random":
        train, n = make_world(5)[0], 10  # 40 items: the default window holds them all
    else:
        train, n = popular_tie_world(40)[0], 5  # levels {0}, {1, 2}, {3..7}, {8, 9}
    want = Popular().recommend(train, None, n, rng=3)
    for window, cells in ((0, 1 << 22), (1, 1 << 22), (1, 7), (2, 50), (100, 3)):
        monkeypatch.setattr(bl, "_POPULAR_WINDOW", window)
        monkeypatch.setattr(bl, "_WINDOW_CELLS", cells)
        np.testing.assert_array_equal(Popular().recommend(train, None, n, rng=3), want, err_msg=f"{window}, {cells}")


@pytest.mark.parametrize("width", [0, 1, 3, 12, 40])
def test_popular_window_kernel_equals_numpy_blocks(width):
    """The compiled window pass gives the numpy blocks' slow users, cut-level training positions and
    the fast users' list positions, on random training sets with many tied levels."""
    from simrec.recommenders._popular_kernel import popular_window_pass
    from simrec.recommenders._popular_lists import _window_pass_blocks

    rng = np.random.default_rng(width)
    n_users, n_items = 300, 40
    lens = rng.integers(0, 30, n_users)
    items = np.concatenate([np.sort(rng.choice(n_items, m, replace=False)) for m in lens]).astype(np.int32)
    bounds = np.concatenate(([0], np.cumsum(lens)))
    pop = np.bincount(items, minlength=n_items)
    order = np.argsort(-pop, kind="stable")
    gpos = np.empty(n_items, dtype=np.int64)
    gpos[order] = np.arange(n_items)
    spop = pop[order]
    new = np.r_[True, spop[1:] != spop[:-1]]
    lvl_first = np.maximum.accumulate(np.where(new, np.arange(n_items), 0))
    level_id = np.cumsum(new) - 1
    lvl_end = lvl_first + np.bincount(level_id)[level_id]
    k = np.minimum(rng.integers(0, 8, n_users), n_items - lens)
    qstart = np.concatenate(([0], np.cumsum(k)))
    qa, qb = np.full(qstart[-1], -7), np.full(qstart[-1], -7)
    a = popular_window_pass(bounds, items, gpos, k, lvl_first, lvl_end, width, qstart, qa)
    b = _window_pass_blocks(bounds, items, gpos, k, lvl_first, lvl_end, width, qstart, qb)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert 0 < len(a[0]) < n_users or width in (0, 40)
    fast = np.setdiff1d(np.arange(n_users), a[0])
    at = np.concatenate([np.arange(qstart[u], qstart[u + 1]) for u in fast] + [np.zeros(0, dtype=int)])
    np.testing.assert_array_equal(qa[at], qb[at])


# -- ProbabilisticOracle ------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.2, 0.7])
@pytest.mark.parametrize("path", ["recommend", "top_n(score)"])
def test_probabilistic_oracle_precision_is_p(p, path):
    # every user has 30 relevant and 30 non-relevant candidates, n = 10: no pool runs
    # out, slots are independent Bernoulli(p): hits ~ Binomial(10, p) per user.
    n_users, n_items, n = 2000, 80, 10
    rng = np.random.default_rng(11)
    items = np.argsort(rng.random((n_users, n_items)), axis=1)
    tr_items, rel_items = items[:, :20], items[:, 20:50]
    train = Interactions.from_pairs(np.repeat(np.arange(n_users), 20), tr_items.ravel(), (n_users, n_items))
    rel = Interactions.from_pairs(np.repeat(np.arange(n_users), 30), rel_items.ravel(), (n_users, n_items)).matrix
    rec = ProbabilisticOracle(p)
    L = rec.recommend(train, rel, n, rng=12) if path == "recommend" else top_n(rec.score(train, rel, rng=12), n)
    check_valid_lists(L, train, n)
    prec = precision(L, rel)
    se = math.sqrt(p * (1 - p) / (n * n_users))
    assert abs(prec.mean() - p) < 4 * se
    # each slot separately is relevant with probability p
    R = rel.toarray() > 0
    is_rel = np.take_along_axis(R, L, axis=1)
    for slot in (0, n - 1):
        assert abs(is_rel[:, slot].mean() - p) < 4 * math.sqrt(p * (1 - p) / n_users)


def test_probabilistic_oracle_pool_exhaustion(world):
    train, truth, relevant = world
    r = np.diff(relevant.indptr)
    R = relevant.toarray() > 0
    n = 10
    # p = 1: all relevant candidates first (like Oracle), then non-relevant ones
    L = ProbabilisticOracle(1.0).recommend(train, relevant, n, rng=13)
    is_rel = np.take_along_axis(R, np.maximum(L, 0), axis=1) & (L >= 0)
    assert (is_rel.sum(axis=1) == np.minimum(r, n)).all()
    assert (is_rel[:, :-1] >= is_rel[:, 1:]).all()  # relevant block first
    # p = 0: relevant items only once the non-relevant candidates run out
    L0 = ProbabilisticOracle(0.0).recommend(train, relevant, n, rng=13)
    m = train.n_items - train.user_counts() - r
    is_rel0 = np.take_along_axis(R, np.maximum(L0, 0), axis=1) & (L0 >= 0)
    assert (is_rel0.sum(axis=1) == np.clip(np.minimum(n, m + r) - m, 0, None)).all()


# -- LensKit adapter ----------------------------------------------------------------------


def lenskit_world():
    """ML-100K (first 250 users) if present, else a random implicit data set."""
    if os.path.isdir(ML100K):
        import pandas as pd

        df = pd.read_csv(os.path.join(ML100K, "u.data"), sep="\t", names=["user", "item", "rating", "ts"])
        df = df[df["user"] <= 250]
        users, u = np.unique(df["user"].to_numpy(), return_inverse=True)
        items, i = np.unique(df["item"].to_numpy(), return_inverse=True)
        obs = Interactions.from_pairs(u, i, (len(users), len(items)))
    else:
        rng = np.random.default_rng(14)
        mask = rng.random((250, 300)) < np.linspace(0.3, 0.01, 300)
        obs = Interactions.from_pairs(*np.nonzero(mask), (250, 300))
    from simrec.split import holdout

    return holdout(obs, 0.2, rng=15)


@pytest.fixture(scope="module")
def lk_split():
    return lenskit_world()


@pytest.fixture(scope="module")
def knn_and_lists(lk_split):
    # `k = 20` here was silently ignored by LensKit (its default max_nbrs is 20); unknown keys are refused since issue 22
    rec = LensKitRecommender("ItemKNNScorer", max_nbrs=20)
    return rec, rec.recommend(lk_split.train, None, 10, rng=16)


@pytest.mark.slow
def test_lenskit_itemknn_lists_valid(lk_split, knn_and_lists):
    rec, L = knn_and_lists
    assert rec.name == "ItemKNNScorer" and rec.params["feedback"] == "implicit"
    check_valid_lists(L, lk_split.train, 10, exact_length=False)
    assert (L[:, 0] >= 0).mean() > 0.95  # almost every user gets a list


def test_lenskit_lists_of_some_users_are_their_rows_of_every_users_lists(lk_split, knn_and_lists):
    # a user sample (simrec.user_sample) asks LensKit for the sampled users' lists only: the same rows
    from simrec.recommenders import lists_of

    rec, L = knn_and_lists
    users = np.array([0, 3, 17, 120, 249])
    some = rec.recommend_users(lk_split.train, None, 10, 16, users)
    np.testing.assert_array_equal(some, L[users])
    np.testing.assert_array_equal(lists_of(rec, lk_split.train, None, 10, 16, users), L[users])
    assert rec.recommend_users(lk_split.train, None, 10, 16, users[:0]).shape == (0, 10)


def test_lenskit_adapter_equals_lenskit_own_pipeline(lk_split, knn_and_lists):
    from lenskit.knn import ItemKNNScorer
    from lenskit.pipeline import topn_pipeline

    _, L = knn_and_lists
    train = lk_split.train
    pipe = topn_pipeline(ItemKNNScorer(max_nbrs=20, feedback="implicit"))
    pipe.train(LensKitRecommender.to_dataset(train))
    for u in (0, 1, 17, 120):
        own = pipe.run("recommender", query=u, n=10).ids()
        assert L[u, : len(own)].tolist() == list(own)
        assert (L[u, len(own) :] == -1).all()


def test_lenskit_scores_rank_like_lists(lk_split, knn_and_lists):
    rec, L = knn_and_lists
    users = np.arange(12)
    S = rec.score(lk_split.train, None, users=users)
    tr = lk_split.train.matrix.toarray()[users] > 0
    assert (np.isneginf(S) == tr).all()
    for row, u in enumerate(users):
        lst = L[u][L[u] >= 0]
        s = S[row, lst]
        assert (np.diff(s) <= 0).all()
        rest = np.isfinite(S[row]).copy()
        rest[lst] = False
        assert S[row, rest].max(initial=-np.inf) <= s.min()


@pytest.mark.slow
def test_lenskit_implicit_mf_valid_and_reproducible(lk_split):
    rec = LensKitRecommender("ImplicitMFScorer", name="IMF", embedding_size=8, epochs=3)
    a = rec.recommend(lk_split.train, None, 10, rng=17)
    check_valid_lists(a, lk_split.train, 10, exact_length=False)
    assert rec.name == "IMF"
    b = LensKitRecommender("ImplicitMFScorer", embedding_size=8, epochs=3).recommend(lk_split.train, None, 10, rng=17)
    assert (a == b).all()


def test_lenskit_scorer_resolution():
    from lenskit.basic import PopScorer

    assert LensKitRecommender("lenskit.basic:PopScorer").name == "PopScorer"
    assert LensKitRecommender(PopScorer, name="pop").name == "pop"
    with pytest.raises(ValueError, match="module 'lenskit.knn' has no attribute 'NoSuchScorer'"):
        LensKitRecommender("lenskit.knn:NoSuchScorer")
    with pytest.raises(ValueError, match="or a 'package.module:Class' import path; got 'lenskit.basic.PopScorer'"):
        LensKitRecommender("lenskit.basic.PopScorer")  # a dotted path without ':' is refused
    with pytest.raises(ValueError, match="`scorer` must be one of 'ItemKNNScorer'"):
        LensKitRecommender("NoSuchScorer")
    with pytest.raises(TypeError, match="`scorer` must be a name, a 'package.module:Class' import path or a LensKit"):
        LensKitRecommender(3)
    with pytest.raises(TypeError, match="Factories .* are not accepted"):
        LensKitRecommender(lambda: PopScorer())  # never called
    with pytest.raises(ValueError, match="parameters of PopScorer: `k`: unknown parameter of PopScorer"):
        LensKitRecommender(PopScorer, k=20)  # LensKit ignores unknown keys silently; simrec refuses them


# -- sampling primitives ----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 8), M=st.integers(1, 40))
def test_nth_allowed_matches_brute_force(seed, n_rows, M):
    from simrec._sampling import nth_allowed

    rng = np.random.default_rng(seed)
    excl = rng.random((n_rows, M)) < rng.random()
    er, ev = np.nonzero(excl)
    allowed = [np.flatnonzero(~excl[r]) for r in range(n_rows)]
    qr = np.array([r for r in range(n_rows) for _ in allowed[r]], dtype=np.int64)
    qj = np.array([j for r in range(n_rows) for j in range(len(allowed[r]))], dtype=np.int64)
    got = nth_allowed(er.astype(np.int64), ev.astype(np.int64), n_rows, qr, qj, M + 1)
    assert got.tolist() == [int(allowed[r][j]) for r, j in zip(qr, qj)]


@pytest.mark.parametrize("k, a", [(3, 4), (3, 50), (1, 1)])
def test_sample_distinct_uniform_ordered_subsets(k, a):
    from simrec._sampling import sample_distinct

    n_rows = 6000
    rows, vals = sample_distinct(np.full(n_rows, k), np.full(n_rows, a), np.random.default_rng(18))
    V = vals.reshape(n_rows, k)
    assert (rows == np.repeat(np.arange(n_rows), k)).all()
    assert ((V >= 0) & (V < a)).all() and (np.sort(V, axis=1)[:, 1:] != np.sort(V, axis=1)[:, :-1]).all()
    if a > 1:
        # each value in the sample with probability k/a, first with probability 1/a
        incl = np.bincount(V.ravel(), minlength=a) / n_rows
        first = np.bincount(V[:, 0], minlength=a) / n_rows
        assert np.all(np.abs(incl - k / a) < 4.5 * math.sqrt(k / a * (1 - k / a) / n_rows) + 1e-12)
        assert np.all(np.abs(first - 1 / a) < 4.5 * math.sqrt(1 / a * (1 - 1 / a) / n_rows))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=40),
    st.sampled_from(["random", "ties", "tiny"]),
    st.integers(0, 2**32),
)
def test_permutation_rows_are_the_lexsort(sizes, kind, seed):
    """The row-wise packed-key sort gives each row's positions in np.lexsort's order of the flat
    entries (the previous implementation), also where u ties exactly ("ties") or only in the bits kept in
    the key ("tiny"); columns past a row's size follow in order."""
    from simrec._sampling import Uniforms, _permutation_rows

    rng = np.random.default_rng(seed)
    sizes = np.array(sizes, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    rows = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    pos = np.arange(sizes.sum(), dtype=np.int64) - np.repeat(starts, sizes)
    u = {
        "random": rng.random(len(rows)),
        "ties": rng.integers(0, 3, len(rows)) / 4.0,
        "tiny": rng.random(len(rows)) * 2.0**-40,
    }[kind]

    def want(u):
        flat = pos[np.lexsort((u, rows))]
        out = np.repeat(np.arange(sizes.max())[None, :], len(sizes), axis=0)
        for r in range(len(sizes)):
            out[r, : sizes[r]] = flat[starts[r] : starts[r] + sizes[r]]
        return out

    np.testing.assert_array_equal(_permutation_rows(sizes, Uniforms(u, False)), want(u))
    if kind == "random":  # the same draws kept raw: the same permutations
        raw = Uniforms.draw(np.random.default_rng(seed), len(rows))
        assert np.array_equal(raw.doubles(), np.random.default_rng(seed).random(len(rows)))
        np.testing.assert_array_equal(_permutation_rows(sizes, raw), want(raw.doubles()))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=200), st.booleans())
def test_first_occurrences_matches_numpy_unique(keys, huge):
    """The packed-sort first-occurrence mask equals np.unique's return_index (the
    previous implementation), also when the keys are too large to pack."""
    from simrec._sampling import first_occurrences

    k = np.array(keys, dtype=np.int64) + (2**62 if huge else 0)
    want = np.zeros(len(k), dtype=bool)
    want[np.unique(k, return_index=True)[1]] = True
    np.testing.assert_array_equal(first_occurrences(k), want)


def test_popular_without_ties_is_deterministic_and_equals_top_n_of_scores():
    # item i is in the train of the first i users: popularities 0..n_items-1, all distinct
    n_users, n_items = 60, 40
    rows, cols = np.nonzero(np.arange(n_users)[:, None] < np.arange(n_items)[None, :])
    train = Interactions.from_pairs(rows, cols, (n_users, n_items))
    assert len(set(train.item_counts().tolist())) == n_items
    rec = Popular()
    a = rec.recommend(train, None, 15, rng=1)
    assert (a == rec.recommend(train, None, 15, rng=2)).all()
    np.testing.assert_array_equal(a, top_n(rec.score(train, None, rng=3), 15))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_users=st.integers(1, 12),
    n_items=st.integers(1, 15),
    density=st.floats(0, 1),
    n=st.integers(1, 20),
)
def test_baselines_valid_on_random_small_worlds(seed, n_users, n_items, density, n):
    rng = np.random.default_rng(seed)
    seen = rng.random((n_users, n_items)) < density
    like = seen | (rng.random((n_users, n_items)) < 0.5)
    train = Interactions.from_pairs(*np.nonzero(seen), (n_users, n_items))
    rel = sp.csr_array((like & ~seen).astype(np.int8))
    for rec in BASELINES:
        check_valid_lists(rec.recommend(train, rel, n, rng=seed), train, n)
        S = rec.score(train, rel, rng=seed)
        assert (np.isneginf(S) == seen).all()
        check_valid_lists(top_n(S, n), train, n)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30), st.sampled_from([np.int32, np.int64]))
def test_row_ids_is_the_repeat_of_the_row_indices(lens, dtype):
    """The running-sum row ids equal np.repeat(arange, lens) (which they replace),
    also with empty rows first, last and in a run."""
    from simrec._sampling import row_ids

    lens = np.array(lens, dtype=np.int64)
    got = row_ids(lens, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.repeat(np.arange(len(lens), dtype=dtype), lens))


# -- blocked passes give the draws and results of one pass ------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=40), st.integers(1, 12))
def test_pair_blocks_cover_the_rows_in_order(lens, budget):
    from simrec._sampling import pair_blocks

    indptr = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    blocks = pair_blocks(indptr, budget)
    assert [r for r0, r1 in blocks for r in range(r0, r1)] == list(range(len(lens)))
    for r0, r1 in blocks:  # budget entries plus at most one row (and empty rows)
        full = [r for r in range(r0, r1) if lens[r]]
        assert r1 > r0 and (not full or indptr[full[-1]] - indptr[r0] < budget)
    # found by hypothesis in CI: empty rows at the end join the last block
    assert pair_blocks(np.array([0, 1, 1]), 1) == [(0, 2)]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 30), M=st.integers(1, 30))
def test_nth_allowed_by_blocks_equals_one_pass(seed, n_rows, M, monkeypatch_module):
    import simrec._sampling as sampling

    rng = np.random.default_rng(seed)
    er, ev = np.nonzero(rng.random((n_rows, M)) < rng.random())
    allowed = M - np.bincount(er, minlength=n_rows)
    qr = np.repeat(np.arange(n_rows), 3 * allowed)  # grouped by row: the blocked path
    qj = rng.integers(0, np.repeat(np.maximum(allowed, 1), 3 * allowed))
    args = (er.astype(np.int64), ev.astype(np.int64), n_rows, qr, qj, M + 1)
    with monkeypatch_module.context() as mp:
        mp.setattr(sampling, "_BLOCK", 3)
        blocked = sampling.nth_allowed(*args)
    np.testing.assert_array_equal(blocked, sampling._nth_allowed(*args))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.mark.parametrize("block, table", [(5, 0), (5, 10**9), (40, 8), (1 << 19, 0)])
def test_sample_distinct_draws_do_not_depend_on_blocks_or_the_dedup_path(block, table, monkeypatch):
    """Blocks of rows and the two first-occurrence paths (table, sort) change neither the draws nor the sample;
    the chunks hold every row with k > 0 exactly once, rows ascending within a chunk."""
    import simrec._sampling as sampling

    rng = np.random.default_rng(19)
    a = rng.integers(0, 60, 500)
    k = np.minimum(a, rng.integers(0, 25, 500))  # dense (2k > a), sparse and empty rows
    want = sampling.sample_distinct(k, a, np.random.default_rng(7))
    monkeypatch.setattr(sampling, "_BLOCK", block)
    monkeypatch.setattr(sampling, "_PERMUTATION_BLOCK", block)
    monkeypatch.setattr(sampling, "_TABLE_RATIO", table)
    got = sampling.sample_distinct(k, a, np.random.default_rng(7))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    chunks = list(sampling.sample_distinct_chunks(k, a, np.random.default_rng(7)))
    rows = np.concatenate([r for r, _, _ in chunks])
    assert sorted(rows.tolist()) == np.repeat(np.arange(500), k).tolist()
    assert all((np.diff(r) >= 0).all() for r, _, _ in chunks)
    assert len({int(u) for r, _, _ in chunks for u in np.unique(r)}) == int((k > 0).sum())  # a row in one chunk
    for r, _, rank in chunks:  # each value's place in its row's draw
        np.testing.assert_array_equal(rank, sampling.group_ranks(r))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([0, 1, 2, 20, 300, 7000]), min_size=1, max_size=300),
    block=st.sampled_from([5, 64, 1 << 17]),
)
def test_dense_blocks_keep_order_and_bound_their_2d_arrays(sizes, block, monkeypatch_module):
    """Blocks of rows for the 2-D permutations: every row once, in order, and rows x widest row within
    four times the block's entries (plus 1024) unless the block is one row; the sample does not depend on
    them (heterogeneous dense rows, e.g. profile sizes 20 to 7,000)."""
    import simrec._sampling as sampling

    a = np.array(sizes, dtype=np.int64)
    rows = np.flatnonzero(a > 0)
    with monkeypatch_module.context() as mp:
        mp.setattr(sampling, "_PERMUTATION_BLOCK", block)
        blocks = sampling._dense_blocks(rows, a)
        got = sampling.sample_distinct(a - a // 4, a, np.random.default_rng(1))
    assert np.concatenate(blocks or [np.zeros(0, dtype=np.int64)]).tolist() == rows.tolist()
    assert all(len(b) == 1 or len(b) * a[b].max() <= 4 * a[b].sum() + 1024 for b in blocks)
    want = sampling.sample_distinct(a - a // 4, a, np.random.default_rng(1))
    np.testing.assert_array_equal(got[1], want[1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30))
def test_group_ranks_is_the_rank_within_rows(lens):
    from simrec._sampling import group_ranks, rank_within_rows

    rows = np.repeat(np.arange(len(lens)), lens)
    np.testing.assert_array_equal(group_ranks(rows), rank_within_rows(rows, len(lens)))


@pytest.mark.slow
def test_baselines_by_blocks_give_the_lists_of_one_pass(monkeypatch):
    """Random, Oracle and Popular consume their draws block by block: tiny blocks give the same lists."""
    import simrec._sampling as sampling
    import simrec.recommenders._popular_lists as popular_lists

    train, _, relevant = make_world(5, n_users=400, n_items=60)
    recs = [RandomRecommender(), Oracle(), Popular()]
    sizes = (10, 30, 60)  # top-10, and lists long enough for Popular's long path (30, 60: full rankings)
    want = [[rec.recommend(train, relevant, n, rng=3) for n in sizes] for rec in recs]
    monkeypatch.setattr(sampling, "_BLOCK", 7)
    monkeypatch.setattr(sampling, "_PERMUTATION_BLOCK", 7)
    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 25)
    monkeypatch.setattr(popular_lists, "_ASSEMBLY_ENTRIES", 25)
    for rec, w in zip(recs, want):
        for n, lists in zip(sizes, w):
            np.testing.assert_array_equal(rec.recommend(train, relevant, n, rng=3), lists)


#: sha256 (first 16 hex digits) of the baselines' lists on make_world(11, 200, 50) for seed 5, computed
#: with simrec before issue 29 vectorised the full rankings (Popular's level shuffle as one integer
#: sort, Random's and Oracle's draws mapped through a bitmap, their full rankings by 2-D blocks;
#: n = 50 is every candidate): the lists must not change.
LISTS_BEFORE_ISSUE_29 = {
    ("Popular", 7): ("cb2998828a20a922", "cb2998828a20a922"),
    ("Popular", 20): ("58375be7d957dd13", "6e4f91df79e2aab2"),
    ("Popular", 50): ("d7753e9666e3efe0", "7719d93f47c100f7"),
    ("Random", 7): ("19f67376b9a9b499", "0efbdd08601e3541"),
    ("Random", 20): ("8a5ee6b0525ff026", "c53caf8ef66e5ce1"),
    ("Random", 50): ("563cefb0a04baab2", "dbbdfc76c915c254"),
    ("Oracle", 7): ("7abcadef930fb8b0", "cea7ce1daf36b1da"),
    ("Oracle", 20): ("d075a32efdded823", "4a11a00f56cab3fb"),
    ("Oracle", 50): ("19c88283488a204e", "06b356ad7b97aee6"),
    ("ProbabilisticOracle(0.5)", 7): ("833aaa23333d505d", "7a41829d545e711f"),
    ("ProbabilisticOracle(0.5)", 20): ("a3313f77405acbf2", "3d1497d93307068e"),
    ("ProbabilisticOracle(0.5)", 50): ("ccad1461a3e76011", "aa52dd2acdbe1e57"),
}


@pytest.mark.parametrize("key", sorted(LISTS_BEFORE_ISSUE_29), ids=lambda k: f"{k[0]}-{k[1]}")
def test_baseline_lists_are_those_before_the_vectorised_full_rankings(key):
    """For PCG64 (raw bits read) and MT19937 (doubles drawn), short lists and full rankings (n = 50)."""
    import hashlib

    name, n = key
    rec = {
        "Popular": Popular(),
        "Random": RandomRecommender(),
        "Oracle": Oracle(),
        "ProbabilisticOracle(0.5)": ProbabilisticOracle(0.5),
    }[name]
    train, _, relevant = make_world(11, n_users=200, n_items=50)
    got = []
    for bit_generator in (np.random.PCG64, np.random.MT19937):
        lists = rec.recommend(train, relevant, n, np.random.Generator(bit_generator(5)))
        got.append(hashlib.sha256(lists.tobytes()).hexdigest()[:16])
    assert tuple(got) == LISTS_BEFORE_ISSUE_29[key]


@pytest.mark.parametrize("draw_bits, min_bits", [(3, 1), (5, 1), (3, 24)])
@pytest.mark.parametrize("n", [8, 25, 50])
def test_popular_level_shuffle_ties_give_the_argsorts_lists(draw_bits, min_bits, n, monkeypatch):
    """Popular's level shuffle with only 3-5 bits of each draw in its keys: most rows have ties and are
    redone by the argsorts (min_bits 1), or every row is (min_bits 24); the lists are those of the full
    keys (so of the argsorts), for a raw-bits generator and a doubles one."""
    import functools

    import simrec.recommenders._popular_lists as popular_lists

    train, _, _ = make_world(4, n_users=150, n_items=50)
    for bit_generator in (np.random.PCG64, np.random.MT19937):
        want = Popular().recommend(train, None, n, np.random.Generator(bit_generator(9)))
        with monkeypatch.context() as mp:
            shuffle = functools.partial(popular_lists._LevelShuffle, draw_bits=draw_bits)
            mp.setattr(popular_lists, "_LevelShuffle", shuffle)
            mp.setattr(popular_lists._LevelShuffle.func, "MIN_DRAW_BITS", min_bits)
            got = Popular().recommend(train, None, n, np.random.Generator(bit_generator(9)))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [3, 20, 50])
def test_random_items_by_bitmap_and_by_search_agree(n, monkeypatch):
    """The j-th allowed item of a row, read from a bitmap of the chunk's rows (dense queries, e.g. full
    rankings) or found by nth_allowed's binary search: the same lists for Random and both oracles."""
    import simrec.recommenders._candidates as candidates

    train, _, relevant = make_world(6, n_users=120, n_items=50)
    recs = [RandomRecommender(), Oracle(), ProbabilisticOracle(0.3)]
    out = {}
    for cells in (0, 10**9):  # never the bitmap, always the bitmap
        monkeypatch.setattr(candidates, "_BITMAP_CELLS_PER_QUERY", cells)
        out[cells] = [rec.recommend(train, relevant, n, rng=2) for rec in recs]
    for a, b in zip(out[0], out[10**9]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bit_generator", ["PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"])
def test_uniforms_are_the_generators_doubles(bit_generator):
    """Uniforms.draw reads raw bits where the doubles are (raw >> 11) * 2**-53 (all but MT19937): the
    same doubles as Generator.random, the same top bits, and the generator left in the same state."""
    from simrec._sampling import Uniforms

    a = np.random.Generator(getattr(np.random, bit_generator)(3))
    b = np.random.Generator(getattr(np.random, bit_generator)(3))
    a.integers(0, 10, 3), b.integers(0, 10, 3)  # a buffered half-word must not matter
    u = Uniforms.draw(a, (7, 11))
    want = b.random((7, 11))
    assert u.raw == (bit_generator != "MT19937")
    np.testing.assert_array_equal(u.doubles(), want)
    np.testing.assert_array_equal(u.doubles(np.array([2, 5])), want[[2, 5]])
    for bits in (1, 24, 41, 53):
        np.testing.assert_array_equal(u.top(bits), np.floor(np.ldexp(want, bits)).astype(np.uint64))
    np.testing.assert_array_equal(a.random(5), b.random(5))


# -- compiled kernels (issue 29): the same lists as the numpy code ------------------------------


@pytest.mark.parametrize("n", [3, 10, 45])
@pytest.mark.parametrize("seed", [0, 1])
def test_baselines_compiled_and_numpy_paths_give_the_same_lists(n, seed, monkeypatch):
    """Every baseline, with its hot paths compiled (first distinct draws, items outside the excluded ones,
    the relevant-training check, Popular's window) or in numpy, draws the same lists: top-n lists with fill
    users (fewer relevant candidates than n) and lists as long as the catalogue."""
    from kernel_paths import use_kernels

    train, _, relevant = make_world(seed, n_users=250, n_items=60)
    recs = [RandomRecommender(), Oracle(), Popular(), ProbabilisticOracle(0.4)]
    with pytest.MonkeyPatch.context() as mp:
        use_kernels(mp, compiled=False)
        want = [rec.recommend(train, relevant, n, rng=8) for rec in recs]
    use_kernels(monkeypatch, compiled=True)
    for rec, lists in zip(recs, want):
        np.testing.assert_array_equal(rec.recommend(train, relevant, n, rng=8), lists, err_msg=rec.name)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 25), M=st.integers(1, 40), two=st.booleans())
def test_nth_outside_is_the_nth_allowed_of_both_rows(seed, n_rows, M, two):
    """The compiled search of the j-th value outside a row of A and the same (disjoint) row of B equals
    nth_allowed on the rows' union, for queries grouped by row in any order within a row."""
    from simrec._rows_kernel import nth_outside
    from simrec._sampling import nth_allowed

    rng = np.random.default_rng(seed)
    cells = rng.random((n_rows, M))
    in_a = cells < rng.random() / 2
    in_b = (cells > 1 - rng.random() / 2) & two
    a, b = sp.csr_array(in_a.astype(np.int8)), sp.csr_array(in_b.astype(np.int8))
    er, ev = np.nonzero(in_a | in_b)
    allowed = M - (in_a | in_b).sum(axis=1)
    qr = np.repeat(np.arange(n_rows), 3 * allowed)
    qj = rng.integers(0, np.repeat(np.maximum(allowed, 1), 3 * allowed))
    want = nth_allowed(er.astype(np.int64), ev.astype(np.int64), n_rows, qr, qj, M + 1)
    got = nth_outside(a.indptr, a.indices, b.indptr if two else None, b.indices if two else None, qr, qj)
    np.testing.assert_array_equal(got, want)
    assert not (in_a | in_b)[qr, got].any()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(0, 20), M=st.integers(0, 30))
def test_rows_overlap_and_minus_are_scipys(seed, n_rows, M):
    """The compiled merges of two canonical patterns: a common pair exists exactly when scipy's product has
    one, and row ``rows[u]`` of A minus row u of B is scipy's difference (rows of A in another order)."""
    from simrec._rows_kernel import rows_minus, rows_overlap

    rng = np.random.default_rng(seed)
    A = sp.csr_array((rng.random((n_rows, M)) < rng.random()).astype(np.int8))
    B = sp.csr_array((rng.random((n_rows, M)) < rng.random() / 4).astype(np.int8))
    want = bool(A.multiply(B).count_nonzero() > 0)
    assert rows_overlap(A.indptr, A.indices, B.indptr, B.indices, M) is want
    rows = rng.permutation(n_rows).astype(np.int64)
    indptr, indices = rows_minus(A.indptr, A.indices, rows, B.indptr, B.indices, M)
    got = sp.csr_array((np.ones(len(indices), np.int8), indices, indptr), shape=(n_rows, M))
    np.testing.assert_array_equal(got.toarray(), A.toarray()[rows] & ~B.toarray().astype(bool))
    for u in range(n_rows):  # each row ascending (canonical)
        assert (np.diff(indices[indptr[u] : indptr[u + 1]]) > 0).all()


@pytest.mark.parametrize("compiled", [False, True])
def test_oracle_drops_relevant_training_pairs_on_both_paths(compiled, monkeypatch):
    """check_relevant: a relevance that holds training pairs (the truth itself) is cut to truth - train,
    whether the overlap is found by the compiled merge or by scipy's product."""
    from kernel_paths import use_kernels

    train, truth, relevant = make_world(2)
    use_kernels(monkeypatch, compiled)
    rel = base.check_relevant(truth.matrix, train, required=True)
    np.testing.assert_array_equal(rel.toarray(), relevant.toarray())
    assert base.check_relevant(relevant, train, required=True) is not None
    np.testing.assert_array_equal(
        Oracle().recommend(train, truth.matrix, 10, rng=4), Oracle().recommend(train, relevant, 10, rng=4)
    )


@pytest.mark.parametrize("draws", ["default", "short"])
def test_sample_distinct_kernel_rounds_keep_the_numpy_draws(draws, monkeypatch):
    """The compiled round keeps each row's first k distinct draws as the numpy table and sort do, and rows
    that fall short draw again in the same later rounds (forced here: fewer draws than k for many rows)."""
    from kernel_paths import use_kernels

    import simrec._sampling as sampling

    rng = np.random.default_rng(23)
    a = rng.integers(0, 200, 600)
    k = np.minimum(a // 2, rng.integers(0, 40, 600))  # sparse rows (2k <= a) and empty ones
    if draws == "short":  # one draw more than needed: a collision (common) leaves the row short
        k = np.minimum(k, 12)
        monkeypatch.setattr(sampling, "_draws", lambda k, a: k + 1)
    got = {}
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            use_kernels(mp, compiled)
            mp.setattr(sampling, "_BLOCK", 37)
            gen = np.random.default_rng(5)
            got[compiled] = (sampling.sample_distinct(k, a, gen), gen.random())
    (rows0, vals0), after0 = got[False]
    (rows1, vals1), after1 = got[True]
    np.testing.assert_array_equal(rows1, rows0)
    np.testing.assert_array_equal(vals1, vals0)
    assert after1 == after0  # the generator consumed the same draws

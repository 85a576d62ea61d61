"""TiedLevels (simrec/recommenders/levels.py) and the baselines' ``score_levels``.

References:

* mid-ranks: ``scipy.stats.rankdata(-s, method="average")`` of each row's
  candidates in :meth:`TiedLevels.to_dense` (the average of the tied
  positions);
* AUC: :func:`simrec.metrics.auc` of the dense block with its ties, which
  :func:`simrec.metrics.auc_from_ranks` must reproduce bit for bit;
* the expectation over the tie-break, exactly: the mean of the AUC of every
  tie-broken order of a small row (all permutations inside each tie group)
  equals the AUC with ties counting 1/2 (to 1e-15);
* the baselines: ``score``'s dense block orders the candidates as
  ``score_levels`` does (never against the levels; equal levels in both orders).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

import simrec.recommenders.levels as levels_mod
from simrec.interactions import Interactions
from simrec.metrics import UndefinedMetricWarning, auc, auc_from_ranks
from simrec.recommenders import Oracle, Popular, RandomRecommender, TiedLevels


def _sparse(mask: np.ndarray) -> sp.csr_array:
    return sp.csr_array(mask.astype(np.float64))


@st.composite
def level_cases(draw):
    n_rows = draw(st.integers(0, 6))
    n_items = draw(st.integers(1, 9))
    n_levels = draw(st.integers(1, 4))
    g = np.array(draw(st.lists(st.integers(0, n_levels - 1), min_size=n_items, max_size=n_items)), dtype=float)
    cells = st.lists(st.booleans(), min_size=n_rows * n_items, max_size=n_rows * n_items)
    promoted = np.array(draw(cells), dtype=bool).reshape(n_rows, n_items)
    excluded = np.array(draw(cells), dtype=bool).reshape(n_rows, n_items)
    pairs = [np.array(draw(cells), dtype=bool).reshape(n_rows, n_items) for _ in range(draw(st.integers(1, 2)))]
    use_promoted = draw(st.booleans())
    lv = TiedLevels(
        n_rows,
        g * draw(st.sampled_from([1.0, 0.5, -3.0])),
        _sparse(promoted) if use_promoted else None,
        _sparse(excluded),
    )
    return lv, [_sparse(p) for p in pairs]


def reference_mid_ranks(dense: np.ndarray, pairs: sp.csr_array) -> np.ndarray:
    """Each stored pair's average position (1 = best) among its row's candidates, -1 at non-candidates."""
    out = []
    for r in range(pairs.shape[0]):
        row = dense[r]
        cand = np.isfinite(row)
        ranks = np.full(len(row), -1.0)
        ranks[cand] = rankdata(-row[cand], method="average")
        out.extend(ranks[pairs.indices[pairs.indptr[r] : pairs.indptr[r + 1]]])
    return np.array(out)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(level_cases(), st.integers(1, 3))
def test_mid_ranks_and_auc_match_the_dense_block(case, cell_bytes):
    lv, pairs = case
    dense = lv.to_dense()
    old = levels_mod._CELL_BYTES
    levels_mod._CELL_BYTES = cell_bytes * lv.shape[1]  # blocks of 1-3 rows
    try:
        got = lv.mid_ranks(pairs)
    finally:
        levels_mod._CELL_BYTES = old
    for p, r in zip(pairs, got):
        assert np.array_equal(r.indptr, p.indptr) and np.array_equal(r.indices, p.indices)
        assert np.array_equal(r.data, reference_mid_ranks(dense, p))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            want = auc(dense, p) if lv.n_rows else np.empty(0)
            have = auc_from_ranks(r, lv.n_candidates())
        assert np.array_equal(have, want, equal_nan=True)  # bit for bit


def test_mid_ranks_hand_case():
    # levels g = (2, 1, 1, 0, 1); row 0 excludes item 0 and promotes item 3; row 1 promotes item 0
    lv = TiedLevels(
        2,
        np.array([2.0, 1, 1, 0, 1]),
        sp.csr_array(np.array([[0, 0, 0, 1, 0], [1, 0, 0, 0, 0]], dtype=float)),
        sp.csr_array(np.array([[1, 0, 0, 0, 0], [0, 0, 0, 0, 0]], dtype=float)),
    )
    pairs = sp.csr_array(np.ones((2, 5)))
    # row 0: item 3 first (promoted), items 1, 2, 4 tied at positions 2-4, item 0 excluded
    # row 1: item 0 first, items 1, 2, 4 at 2-4, item 3 last
    assert lv.mid_ranks([pairs])[0].toarray().tolist() == [[-1, 3, 3, 1, 3], [1, 3, 3, 5, 3]]
    assert lv.n_candidates().tolist() == [4, 5]


def _tie_broken_orders(codes: np.ndarray):
    """Every strict order of the candidates that respects the level codes (all permutations inside each tie group)."""
    groups = [np.flatnonzero(codes == c) for c in np.unique(codes)[::-1]]
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield np.concatenate(perms)


def test_auc_from_levels_is_the_exact_mean_over_tie_breaks():
    # one row, 7 candidates at levels (2, 1, 1, 1, 0, 0, 1), relevant items 1, 4, 6: 3! * 2! * 1 * ... orders
    codes = np.array([2, 1, 1, 1, 0, 0, 1])
    rel = np.array([0, 1, 0, 0, 1, 0, 1], dtype=bool)
    lv = TiedLevels(1, codes.astype(float))
    got = auc_from_ranks(lv.mid_ranks([_sparse(rel[None, :])])[0], lv.n_candidates())[0]
    values = []
    for order in _tie_broken_orders(codes):
        s = np.empty(len(codes))
        s[order] = np.arange(len(codes), 0, -1)  # first in the order gets the highest score
        values.append(auc(s[None, :], _sparse(rel[None, :]))[0])
    assert len(values) == 24 * 2  # 4! orders of level 1 x 2! of level 0
    assert abs(np.mean(values) - got) < 1e-15
    assert len(set(values)) > 1  # the realised AUC does depend on the tie-break


def test_tied_levels_validation():
    with pytest.raises(ValueError, match="`item_level` must be finite"):
        TiedLevels(1, np.array([0.0, np.inf]))
    with pytest.raises(ValueError, match=r"`excluded` must have shape \(2, 3\); got \(2, 4\)"):
        TiedLevels(2, np.zeros(3), None, sp.csr_array((2, 4)))
    with pytest.raises(ValueError, match="`n_rows`"):
        TiedLevels(-1, np.zeros(3))
    with pytest.raises(ValueError, match="`pairs` must have shape"):
        TiedLevels(2, np.zeros(3)).mid_ranks([sp.csr_array((3, 3))])


def _world(seed: int = 3, n_users: int = 40, n_items: int = 30):
    rng = np.random.default_rng(seed)
    truth = rng.random((n_users, n_items)) < 0.3
    train = truth & (rng.random((n_users, n_items)) < 0.5)
    rel = sp.csr_array((truth & ~train).astype(np.float64))
    return Interactions(sp.csr_array(train.astype(np.float64))), rel


@pytest.mark.parametrize("rec", [RandomRecommender(), Popular(), Oracle()], ids=lambda r: r.name)
def test_score_orders_candidates_as_score_levels(rec):
    train, rel = _world()
    users = np.array([0, 5, 7, 39, 12])
    lv = rec.score_levels(train, rel, users=users)
    codes = lv.to_dense()
    s = rec.score(train, rel, np.random.default_rng(0), users=users)
    assert np.array_equal(np.isinf(s), np.isinf(codes))  # the same candidates
    for r in range(len(users)):
        cand = np.isfinite(s[r])
        order = np.argsort(-s[r][cand], kind="stable")
        assert (np.diff(codes[r][cand][order]) <= 0).all()  # levels never reordered


def test_popular_levels_are_popularity_and_oracle_promotes_relevant():
    train, rel = _world()
    lv = Popular().score_levels(train, rel)
    assert np.array_equal(lv.item_level, train.item_counts())
    o = Oracle().score_levels(train, rel)
    assert (o.promoted != rel).nnz == 0 and (o.item_level == 0).all()
    assert Oracle(ties="item_id").score_levels(train, rel) is None  # no random tie-break: dense scores


def test_random_auc_from_levels_is_one_half():
    train, rel = _world()
    lv = RandomRecommender().score_levels(train, rel)
    values = auc_from_ranks(lv.mid_ranks([rel])[0], lv.n_candidates())
    defined = ~np.isnan(values)
    assert defined.sum() > 30 and (values[defined] == 0.5).all()


@pytest.mark.filterwarnings("ignore::simrec.metrics.UndefinedMetricWarning")
def test_mean_of_realised_auc_converges_to_the_levels_auc():
    # Popular: the realised AUC of score()'s tie-break, averaged over 400 draws, within 4 standard errors
    train, rel = _world(seed=8)
    lv = Popular().score_levels(train, rel)
    exact = auc_from_ranks(lv.mid_ranks([rel])[0], lv.n_candidates())
    gen = np.random.default_rng(11)
    draws = np.array([auc(Popular().score(train, rel, gen), rel) for _ in range(400)])
    ok = ~np.isnan(exact)
    mean, se = draws[:, ok].mean(axis=0), draws[:, ok].std(axis=0, ddof=1) / np.sqrt(len(draws))
    tied = se > 0
    assert tied.sum() > 10
    assert (np.abs(mean[tied] - exact[ok][tied]) <= 4 * se[tied] + 1e-12).mean() >= 0.97
    assert np.abs(mean - exact[ok]).max() < 0.02

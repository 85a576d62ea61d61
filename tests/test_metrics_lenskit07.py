"""nDCG as LensKit 0.7 computed it for Tian's thesis (simrec.metrics.ndcg_lenskit07, a named variant).

Reference values: the issue's worked case (a 50-item list of relevant items
with |Rel| = 200 scores 0.3845 under LensKit 0.7's discount 1/max(1, log2 i)
and its ideal over all relevant items; 1.0 under the standard nDCG@N), and a
plain per-user loop written from that definition.

Graded gains (the LDA truth's like counts): a case computed by hand from
LensKit 0.7's ``lenskit.metrics.topn.ndcg`` as read in lkpy's tag 0.7.0 (with
a ``rating`` column, the list's gains are the truth's ratings of its items,
the ideal is the DCG of all the truth's ratings sorted descending; ``_dcg``
divides by log2(rank) where it exceeds 1), and a per-user loop written from
that reading.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.interactions import Interactions
from simrec.metrics import (
    NDCGLensKit07,
    UndefinedMetricWarning,
    list_metrics,
    list_metrics_many,
    measure_lists,
    measure_lists_many,
    ndcg,
    ndcg_lenskit07,
)


def _relevance(sets: list[set[int]], n_items: int) -> sp.csr_array:
    rows = [u for u, s in enumerate(sets) for _ in s]
    cols = [i for s in sets for i in sorted(s)]
    return sp.csr_array((np.ones(len(cols)), (rows, cols)), shape=(len(sets), n_items))


def _loop(lists: np.ndarray, sets: list[set[int]]) -> np.ndarray:
    out = []
    for row, rel in zip(lists, sets):
        if not rel:
            out.append(math.nan)
            continue
        dcg = sum(1 / max(1.0, math.log2(i)) for i, item in enumerate(row, 1) if item >= 0 and item in rel)
        idcg = sum(1 / max(1.0, math.log2(i)) for i in range(1, len(rel) + 1))
        out.append(dcg / idcg)
    return np.array(out)


def test_the_issues_worked_case():
    lists = np.arange(50)[None, :]
    rel = _relevance([set(range(200))], 300)
    assert ndcg_lenskit07(lists, rel)[0] == pytest.approx(0.3845, abs=5e-5)
    assert ndcg(lists, rel)[0] == pytest.approx(1.0)


def test_equals_the_definition_on_random_lists():
    rng = np.random.default_rng(3)
    n_users, n_items, n = 60, 40, 10
    sets = [set(rng.choice(n_items, size=rng.integers(0, 25), replace=False).tolist()) for _ in range(n_users)]
    lists = np.stack([rng.permutation(n_items)[:n] for _ in range(n_users)])
    lists[::7, -3:] = -1  # padded lists
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = ndcg_lenskit07(lists, _relevance(sets, n_items))
    np.testing.assert_allclose(got, _loop(lists, sets), rtol=1e-12, equal_nan=True)
    assert any(not s for s in sets)  # the NaN branch is exercised


def test_empty_relevance_is_nan_with_a_warning():
    with pytest.warns(UndefinedMetricWarning):
        out = ndcg_lenskit07(np.array([[0, 1]]), _relevance([set()], 3))
    assert math.isnan(out[0])


def test_metric_object_and_scenario_name():
    from simrec.metrics import METRICS

    assert METRICS["ndcg_lenskit07"] is NDCGLensKit07 and NDCGLensKit07().name == "ndcg_lenskit07"
    lists = np.array([[1, 0, 2]])
    got = measure_lists(lists, _relevance([{0, 2}], 3), [NDCGLensKit07()])
    assert got["ndcg_lenskit07"][0] == pytest.approx((1 / 1 + 1 / math.log2(3)) / (1 + 1))


# -- graded gains ---------------------------------------------------------------


def _graded(gains: list[dict[int, float]], n_items: int) -> Interactions:
    """Relevance sets with gains: one {item: gain} per user."""
    sizes = [len(g) for g in gains]
    indices = [i for g in gains for i in sorted(g)]
    values = [g[i] for g in gains for i in sorted(g)]
    indptr = np.concatenate(([0], np.cumsum(sizes)))
    return Interactions.from_csr(
        indptr,
        np.array(indices, dtype=np.int64),
        (len(gains), n_items),
        sort=False,
        gains=np.array(values, dtype=np.float64),
    )


def _graded_loop(lists: np.ndarray, gains: list[dict[int, float]]) -> np.ndarray:
    """LensKit 0.7's nDCG with a rating column, one user at a time."""
    out = []
    for row, g in zip(lists, gains):
        if not g:
            out.append(math.nan)
            continue
        dcg = sum(g.get(int(item), 0.0) / max(1.0, math.log2(i)) for i, item in enumerate(row, 1) if item >= 0)
        ideal = sorted(g.values(), reverse=True)
        idcg = sum(v / max(1.0, math.log2(j)) for j, v in enumerate(ideal, 1))
        out.append(dcg / idcg)
    return np.array(out)


def test_hand_computed_graded_case():
    # user 0: relevant items 0, 1, 2 with gains 3, 1, 2; list [1, 5, 2, 0]
    #   DCG  = 1/1 + 0 + 2/log2(3) + 3/log2(4) = 3.761860
    #   IDCG = 3/1 + 2/1 + 1/log2(3)           = 5.630930  (gains sorted 3, 2, 1)
    # user 1: gains {7: 1, 8: 4, 9: 2}; list [8, 9]: DCG = 4 + 2; IDCG over all three
    #   relevant items, not the first N = 2: 4 + 2 + 1/log2(3) = 6.630930
    rel = _graded([{0: 3, 1: 1, 2: 2}, {7: 1, 8: 4, 9: 2}], 10)
    lists = np.array([[1, 5, 2, 0], [8, 9, -1, -1]])
    got = ndcg_lenskit07(lists, rel)
    l3 = math.log2(3)
    assert got[0] == pytest.approx((1 + 2 / l3 + 3 / 2) / (3 + 2 + 1 / l3), rel=1e-12)
    assert got[0] == pytest.approx(0.668071, abs=5e-7)
    assert got[1] == pytest.approx(6 / (6 + 1 / l3), rel=1e-12)
    assert got[1] == pytest.approx(0.904850, abs=5e-7)
    # binary reading of the same sets (gains dropped): (1 + 1/log2 3 + 1/2) / (1 + 1 + 1/log2 3)
    assert ndcg_lenskit07(lists, rel.matrix)[0] == pytest.approx((1.5 + 1 / l3) / (2 + 1 / l3), rel=1e-12)


def test_graded_equals_the_definition_on_random_lists():
    rng = np.random.default_rng(11)
    n_users, n_items = 70, 40
    gains = []
    for _ in range(n_users):
        items = rng.choice(n_items, size=rng.integers(0, 25), replace=False)
        gains.append({int(i): float(rng.integers(1, 6)) for i in items})  # like counts 1..5, many ties
    gains[3] = {int(i): 0.25 + float(rng.random()) for i in range(12)}  # non-integer gains too
    rel = _graded(gains, n_items)
    arrays = [np.stack([rng.permutation(n_items)[:n] for _ in range(n_users)]) for n in (10, 3, 30)]
    arrays[0][::7, -3:] = -1  # padded lists
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        single = [ndcg_lenskit07(a, rel) for a in arrays]
        many = list_metrics_many(arrays, rel, ["ndcg", "ndcg_lenskit07"])
        objs = measure_lists_many(arrays, rel, [NDCGLensKit07()])
    for a, one, m, o in zip(arrays, single, many, objs):
        want = _graded_loop(a, gains)
        np.testing.assert_allclose(one, want, rtol=1e-12, equal_nan=True)
        np.testing.assert_array_equal(m["ndcg_lenskit07"], one)
        np.testing.assert_array_equal(o["ndcg_lenskit07"], one)
        # the standard nDCG stays binary
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            np.testing.assert_array_equal(m["ndcg"], ndcg(a, rel.matrix))
    assert any(not g for g in gains)  # the NaN branch is exercised


def test_unit_gains_and_sparse_values_are_the_binary_metric():
    rng = np.random.default_rng(12)
    sets = [set(rng.choice(30, size=rng.integers(1, 15), replace=False).tolist()) for _ in range(25)]
    lists = np.stack([rng.permutation(30)[:8] for _ in range(25)])
    binary = _relevance(sets, 30)
    want = ndcg_lenskit07(lists, binary)
    ones = _graded([{i: 1.0 for i in s} for s in sets], 30)
    np.testing.assert_allclose(ndcg_lenskit07(lists, ones), want, rtol=1e-12)
    # a sparse array's stored values are never gains: data of 7s gives the binary metric
    sevens = sp.csr_array((np.full(binary.nnz, 7.0), binary.indices, binary.indptr), shape=binary.shape)
    np.testing.assert_array_equal(ndcg_lenskit07(lists, sevens), want)
    # every other list metric reads a graded set as its binary pairs
    graded = _graded([{i: float(rng.integers(1, 9)) for i in s} for s in sets], 30)
    names = ["precision", "recall", "recall_truncated", "reciprocal_rank", "ndcg", "average_precision", "hits"]
    a, b = list_metrics(lists, graded, names), list_metrics(lists, binary, names)
    for name in names:
        np.testing.assert_array_equal(a[name], b[name])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 20), min_size=1, max_size=15),
    st.integers(1, 15),
    st.floats(0.01, 100.0),
)
def test_graded_invariants(counts, n, scale):
    """Property: nDCG is in [0, 1], scale-free in the gains, and 1 for the ideal list holding every relevant item."""
    g = {i: float(c) for i, c in enumerate(counts)}
    ideal = sorted(g, key=lambda i: (-g[i], i))
    rng = np.random.default_rng(len(counts) * 31 + n)
    pad = lambda row: row[:n] + [-1] * max(0, n - len(row))  # noqa: E731
    lists = np.array([pad(ideal), pad(rng.permutation(len(counts) + 5).tolist())])
    rel = _graded([g, g], len(counts) + 5)
    scaled = _graded([{i: v * scale for i, v in g.items()}] * 2, len(counts) + 5)
    got = ndcg_lenskit07(lists, rel)
    assert ((got >= 0) & (got <= 1 + 1e-12)).all()
    np.testing.assert_allclose(ndcg_lenskit07(lists, scaled), got, rtol=1e-9)
    if n >= len(counts):
        assert got[0] == pytest.approx(1.0)
    else:
        assert got[0] < 1.0  # the ideal runs over all relevant items, beyond the list


@pytest.mark.parametrize("block", [1 << 18, 7])  # one block; blocks smaller than most users' sets
def test_ideal_dcg_integer_and_general_sorts_agree(block, monkeypatch):
    # like counts take the int64-key sort, other gains numpy's lexsort: same ideal DCG
    import simrec.metrics.lists as lists_mod
    from simrec.metrics.lists import _lenskit07_ideal

    monkeypatch.setattr(lists_mod, "_IDEAL_BLOCK_PAIRS", block)

    rng = np.random.default_rng(13)
    sizes = rng.integers(0, 40, size=200)
    indptr = np.concatenate(([0], np.cumsum(sizes)))
    indices = np.concatenate([np.sort(rng.choice(60, size=k, replace=False)) for k in sizes])
    rel = sp.csr_array((np.ones(len(indices)), indices, indptr), shape=(200, 60))
    counts = rng.integers(1, 30, size=len(indices)).astype(np.int32)
    by_key = _lenskit07_ideal(rel, counts)
    np.testing.assert_allclose(_lenskit07_ideal(rel, counts * 0.5) * 2, by_key, rtol=1e-12)  # non-integer: lexsort
    for u in range(200):  # every user by hand
        g = np.sort(counts[indptr[u] : indptr[u + 1]])[::-1]
        assert by_key[u] == pytest.approx(sum(v / max(1.0, math.log2(j)) for j, v in enumerate(g, 1)), rel=1e-12)
    assert (by_key[sizes == 0] == 0).all()

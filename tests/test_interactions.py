"""Optional per-pair gains of :class:`simrec.interactions.Interactions` (graded truth, issue 11).

The binary-matrix invariants are tested in tests/test_core.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.interactions import Interactions


def _graded() -> Interactions:
    # user 0: items 1 (gain 3), 4 (gain 1); user 1: nothing; user 2: items 0 (2), 4 (5)
    return Interactions.from_csr([0, 2, 2, 4], [1, 4, 0, 4], (3, 5), sort=False, gains=np.array([3, 1, 2, 5]))


def test_binary_by_default_and_nothing_stored():
    x = Interactions.from_pairs(np.array([0, 1]), np.array([2, 0]), (2, 3))
    assert x.gains is None and not x.graded
    assert (x.gain_matrix().toarray() == x.matrix.toarray()).all()
    assert "gain" not in x.to_frame().columns and "graded" not in repr(x)


def test_gains_follow_their_pairs_when_sorted():
    # rows given unsorted: from_csr(sort=True) must permute the gains with the indices
    x = Interactions.from_csr([0, 3, 4], [4, 0, 2, 1], (2, 5), gains=np.array([40, 0.5, 20, 11]))
    assert x.matrix.indices.tolist() == [0, 2, 4, 1]
    assert x.gains.tolist() == [0.5, 20, 40, 11]
    dense = x.gain_matrix().toarray()
    assert dense[0, 4] == 40 and dense[0, 0] == 0.5 and dense[1, 1] == 11
    assert x.matrix.data.tolist() == [1, 1, 1, 1]  # the matrix itself stays binary


def test_select_users_to_frame_and_repr_keep_gains():
    x = _graded()
    sub = x.select_users(np.array([2, 0, 1]))
    assert sub.gains.tolist() == [2, 5, 3, 1] and sub.gains.dtype == x.gains.dtype
    assert (sub.gain_matrix().toarray() == x.gain_matrix().toarray()[[2, 0, 1]]).all()
    frame = x.to_frame()
    assert frame.to_dict("list") == {"user": [0, 0, 2, 2], "item": [1, 4, 0, 4], "gain": [3, 1, 2, 5]}
    assert repr(x).endswith("graded)")


def test_gains_are_validated():
    m = _graded().matrix
    with pytest.raises(ValueError, match=r"`gains` must be 1-d with one value per stored pair \(4\); got shape \(3,\)"):
        Interactions(m, gains=np.ones(3))
    with pytest.raises(ValueError, match=r"`gains` must be finite and > 0; got range \[0"):
        Interactions(m, gains=np.array([1, 0, 2, 3]))
    with pytest.raises(ValueError, match="finite"):
        Interactions(m, gains=np.array([1, np.nan, 2, 3]))
    with pytest.raises(TypeError, match="`gains` must hold integer or float values; got dtype bool"):
        Interactions(m, gains=np.ones(4, dtype=bool))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 7), st.integers(1, 9)), max_size=40))
def test_gain_matrix_round_trips(triples):
    # property: for unique pairs, gain_matrix is exactly the dense matrix of the gains given
    dense = np.zeros((6, 8))
    for u, i, g in triples:
        dense[u, i] = g
    coo = sp.coo_array(dense)
    order = np.lexsort((coo.col, coo.row))
    rows, cols, vals = coo.row[order], coo.col[order], coo.data[order]
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=6))))
    shuffled = np.random.default_rng(len(triples)).permutation(len(cols))
    # give each row's entries in a shuffled order (within rows) and let from_csr sort them
    key = np.lexsort((shuffled, rows))
    x = Interactions.from_csr(indptr, cols[key], (6, 8), gains=vals[key])
    assert (x.gain_matrix().toarray() == dense).all()
    assert (x.matrix.toarray() == (dense > 0)).all()


# -- graded preference in (0, 1] (issue 24) -----------------------------------------------------


def test_pair_preference_rules():
    # stored preference wins; else each gain over its user's largest; else 1
    x = _graded()  # user 0: gains 3, 1; user 1: none; user 2: gains 2, 5
    np.testing.assert_allclose(x.pair_preference(), [1.0, 1 / 3, 0.4, 1.0])
    np.testing.assert_allclose(x.pair_preference(slice(1, 3)), [0.4, 1.0])  # a block of rows: its pairs only
    assert x.pair_preference(slice(1, 2)).shape == (0,)
    binary = Interactions(x.matrix)
    assert binary.pair_preference().tolist() == [1.0] * 4
    stored = Interactions(x.matrix, gains=x.gains, preference=np.array([0.5, 0.25, 1.0, 0.125]))
    assert stored.pair_preference(slice(0, 1)).tolist() == [0.5, 0.25]
    with pytest.raises(ValueError, match="step 1"):
        x.pair_preference(slice(0, 3, 2))


def test_preference_follows_its_pairs_and_is_validated():
    x = Interactions.from_csr([0, 3, 4], [4, 0, 2, 1], (2, 5), preference=np.array([0.4, 0.5, 0.2, 1.0]))
    assert x.preference.tolist() == [0.5, 0.2, 0.4, 1.0] and x.gains is None  # sorted with the indices
    sub = x.select_users(np.array([1, 0]))
    assert sub.preference.tolist() == [1.0, 0.5, 0.2, 0.4] and sub.matrix.indices.tolist() == [1, 0, 2, 4]
    assert x.to_frame()["preference"].tolist() == [0.5, 0.2, 0.4, 1.0] and repr(x).endswith("graded)")
    m = x.matrix
    with pytest.raises(ValueError, match=r"`preference` must be in \(0, 1\]; got range \[0"):
        Interactions(m, preference=np.array([0.0, 0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match=r"`preference` must be in \(0, 1\]"):
        Interactions(m, preference=np.array([np.nan, 0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match=r"`preference` must be in \(0, 1\]"):
        Interactions(m, preference=np.array([1.5, 0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="`preference` must be 1-d with one value per stored pair"):
        Interactions(m, preference=np.ones(3))
    with pytest.raises(TypeError, match="`preference` must hold float values"):
        Interactions(m, preference=np.ones(4, dtype=np.int64))


def test_select_users_with_gains_and_preference_together():
    g = _graded()
    x = Interactions(g.matrix, gains=g.gains, preference=np.array([0.9, 0.3, 0.6, 0.7], dtype=np.float32))
    sub = x.select_users(np.array([2, 2, 0]))
    assert sub.gains.tolist() == [2, 5, 2, 5, 3, 1]
    np.testing.assert_allclose(sub.preference, [0.6, 0.7, 0.6, 0.7, 0.9, 0.3])
    assert sub.preference.dtype == np.float32 and sub.gains.dtype == g.gains.dtype


@pytest.mark.parametrize("compiled", [False, True])
def test_item_counts_by_slices_equal_one_bincount(compiled, monkeypatch):
    """``item_counts`` counts by slices of ``_COUNT_BLOCK`` pairs, or in one compiled pass: the same int64
    counts as one bincount (the last item liked by nobody)."""
    from kernel_paths import use_kernels

    import simrec.interactions as mod

    use_kernels(monkeypatch, compiled)
    rng = np.random.default_rng(4)
    inter = Interactions.from_pairs(rng.integers(0, 50, 400), rng.integers(0, 30, 400), (50, 31))
    want = np.bincount(inter.matrix.indices, minlength=31)
    for block in (1, 3, 7, 1 << 21):
        monkeypatch.setattr(mod, "_COUNT_BLOCK", block)
        got = inter.item_counts()
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)

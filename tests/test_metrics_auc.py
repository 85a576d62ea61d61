"""AUC's compiled kernel (simrec/metrics/_auc_kernel.py) against two references.

* ``reference_auc_values``: the numpy implementation the kernel replaced
  (issue 13; simrec.metrics.rankings at commit 158009e): sort each padded
  row, a branchless vectorized binary search per positive. The kernel must
  reproduce it bit for bit (same integer counts, same final division).
* ``sklearn.metrics.roc_auc_score`` per user on its candidates (mid-rank
  ties), equal within 1e-12.

Hypothesis draws small score matrices with many ties (scores from a few
levels, -inf non-candidates, +inf and -0.0), relevance sets including
relevant non-candidates, and block sizes that cut the users into several
blocks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import simrec._blocks as blocks
from simrec.metrics import UndefinedMetricWarning, auc, auc_from_ranks, auc_many
from simrec.metrics.rankings import _auc_values


def _count_less(flat, base, width, v):
    pos = base.copy()
    step = width >> 1
    while step:
        pos += (flat[pos + (step - 1)] < v) * step
        step >>= 1
    return pos - base


def reference_auc_values(s, rels):
    """The replaced numpy implementation of ``_auc_values`` (see the module docstring)."""
    n_users, n_items = s.shape
    outs = [(np.zeros(n_users), np.zeros(n_users, dtype=bool)) for _ in rels]
    width = 1 << n_items.bit_length()
    for blk in blocks.user_blocks(n_users, width):
        S = np.asarray(s[blk], dtype=np.float64)
        rows = S.shape[0]
        padded = np.empty((rows, width))
        padded[:, :n_items] = S
        padded[:, n_items:] = np.inf
        padded.sort(axis=1)
        flat = padded.ravel()
        row_base = np.arange(rows, dtype=np.int64) * width
        n_non = _count_less(flat, row_base, width, np.full(rows, -np.finfo(np.float64).max))
        n_cand = n_items - n_non
        for rel, (out, undefined) in zip(rels, outs):
            R = rel[blk]
            prow = np.repeat(np.arange(rows, dtype=np.int64), np.diff(R.indptr))
            v = S[prow, R.indices]
            keep = v > -np.inf
            prow, v = prow[keep], v[keep]
            base = row_base[prow]
            below = _count_less(flat, base, width, v)
            upto = below + 1
            tied = np.flatnonzero(flat[base + below + 1] == v)
            if len(tied):
                vt = v[tied]
                upto[tied] = np.where(
                    vt == np.inf, n_items, _count_less(flat, base[tied], width, np.nextafter(vt, np.inf))
                )
            npos = np.bincount(prow, minlength=rows)
            nneg = n_cand - npos
            rank_sum = np.bincount(prow, weights=(below + upto + 1) / 2.0 - n_non[prow], minlength=rows)
            den = npos * nneg
            val = np.zeros(rows)
            np.divide(rank_sum - npos * (npos + 1) / 2.0, den, out=val, where=den > 0)
            out[blk], undefined[blk] = val, den == 0
    return outs


def sklearn_auc(S, rel):
    """roc_auc_score of each user's candidates, NaN where a class is missing.

    sklearn refuses +inf, so the scores are replaced by their order codes
    (``np.unique``): AUC depends on the order only, and ties stay ties.
    """
    out = []
    for s, r in zip(S, rel):
        cand = s > -np.inf
        y = r[cand]
        if y.all() or not y.any():
            out.append(np.nan)
        else:
            out.append(roc_auc_score(y, np.unique(s[cand], return_inverse=True)[1]))
    return np.array(out)


LEVELS = np.array([-np.inf, -1.5, -0.0, 0.0, 0.25, 0.5, 0.5 + 2**-52, 3.0, np.inf])


@st.composite
def cases(draw):
    n_users = draw(st.integers(1, 9))
    n_items = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if draw(st.booleans()):  # few levels: many ties, -0.0 beside 0.0, neighbouring floats, +-inf
        S = LEVELS[rng.integers(0, len(LEVELS), (n_users, n_items))]
    else:  # continuous, some non-candidates
        S = rng.normal(size=(n_users, n_items))
        S[rng.random(S.shape) < 0.2] = -np.inf
    n_sets = draw(st.integers(1, 3))
    rels = [rng.random((n_users, n_items)) < draw(st.sampled_from([0.1, 0.4, 0.9])) for _ in range(n_sets)]
    rows_per_block = draw(st.integers(1, n_users))
    return S, rels, rows_per_block


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(cases())
def test_kernel_matches_replaced_implementation_and_sklearn(case):
    S, rels, rows_per_block = case
    csrs = [sp.csr_array(r.astype(np.int8)) for r in rels]
    old = blocks.BLOCK_ELEMENTS
    blocks.BLOCK_ELEMENTS = rows_per_block * S.shape[1]  # several blocks of users
    try:
        got = _auc_values(S, csrs)
    finally:
        blocks.BLOCK_ELEMENTS = old
    want = reference_auc_values(S, csrs)
    for (v, u), (v0, u0), r in zip(got, want, rels):
        np.testing.assert_array_equal(u, u0)
        np.testing.assert_array_equal(v, v0)  # bit-identical
        sk = sklearn_auc(S, r)
        np.testing.assert_array_equal(np.isnan(sk), u)
        np.testing.assert_allclose(v[~u], sk[~u], rtol=0, atol=1e-12)


def test_kernel_matches_replaced_implementation_on_recommender_like_scores():
    """Larger rows like the quickstart's: popularity levels plus a tie-break, training items -inf."""
    rng = np.random.default_rng(13)
    n_users, n_items = 120, 700
    pop = rng.zipf(1.5, n_items).clip(max=500).astype(float)
    S = pop + 0.5 * rng.random((n_users, n_items))
    S[:, : n_items // 3] = np.floor(S[:, : n_items // 3])  # a third of the items: exact ties
    S[rng.random(S.shape) < 0.1] = -np.inf
    rels = [sp.csr_array((rng.random(S.shape) < p).astype(np.int8)) for p in (0.02, 0.2)]
    for (v, u), (v0, u0) in zip(_auc_values(S, rels), reference_auc_values(S, rels)):
        np.testing.assert_array_equal(u, u0)
        np.testing.assert_array_equal(v, v0)


def test_auc_public_api_float32_and_strided_input():
    """float32 and non-contiguous score arrays give the float64 contiguous result."""
    rng = np.random.default_rng(3)
    S = rng.integers(0, 4, (10, 30)).astype(np.float32)
    S[rng.random(S.shape) < 0.2] = -np.inf
    rel = sp.csr_array((rng.random(S.shape) < 0.3).astype(np.int8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = auc(S.astype(np.float64), rel)
        np.testing.assert_array_equal(auc(S, rel), want)
        F = np.asfortranarray(S.astype(np.float64))
        np.testing.assert_array_equal(auc(F, rel), want)
        wide = np.zeros((10, 60))
        wide[:, ::2] = S
        np.testing.assert_array_equal(auc(wide[:, ::2], rel), want)
        np.testing.assert_array_equal(auc_many(S, [rel, rel])[1], want)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)])
def test_auc_empty_shapes(shape):
    S = np.zeros(shape)
    rel = sp.csr_array(shape, dtype=np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        out = auc(S, rel)
    assert out.shape == (shape[0],)
    assert np.isnan(out).all()


def test_auc_from_ranks_hand_case_and_nan_policy():
    # user 0: 5 candidates, relevant at mid-ranks 1 and 3.5 (tied with another) -> ascending 5 and 2.5:
    # 2U = 2 (5 + 2.5) - 2 * 3 = 9, AUC = 9 / (2 * 2 * 3) = 0.75; user 1: no relevant candidate (-1 only)
    ranks = sp.csr_array((np.array([1.0, 3.5, -1.0]), np.array([0, 2, 1]), np.array([0, 2, 3])), shape=(2, 4))
    with pytest.warns(UndefinedMetricWarning, match="undefined for 1 of 2"):
        v = auc_from_ranks(ranks, np.array([5, 3]))
    assert v[0] == 0.75 and np.isnan(v[1])
    with pytest.warns(UndefinedMetricWarning, match="undefined for 1 of 1"):
        assert np.isnan(auc_from_ranks(ranks, np.array([5, 3]), evaluated=np.array([False, True]))).all()


@pytest.mark.parametrize("value, m", [(0.0, 4), (2.25, 4), (5.0, 4), (-2.0, 4)])
def test_auc_from_ranks_refuses_values_that_are_not_mid_ranks(value, m):
    ranks = sp.csr_array((np.array([value]), np.array([0]), np.array([0, 1])), shape=(1, 3))
    with pytest.raises(ValueError, match="must be -1 or mid-ranks"):
        auc_from_ranks(ranks, np.array([m]))


def test_auc_from_ranks_refuses_a_wrong_candidate_count_shape():
    with pytest.raises(ValueError, match=r"`n_candidates` must have shape \(2,\); got \(3,\)"):
        auc_from_ranks(sp.csr_array((2, 3)), np.array([1, 2, 3]))

"""Tests of simrec.metrics: hand-computed cases, brute force, and LensKit cross-checks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import simrec._blocks as blocks
import simrec.metrics._common as common
import simrec.metrics.lists as lists_module
from simrec.interactions import Interactions
from simrec.metrics import (
    UndefinedMetricWarning,
    auc,
    auc_many,
    average_precision,
    hit,
    hits,
    list_metrics,
    list_metrics_many,
    ndcg,
    pap_at_k,
    precision,
    recall,
    recall_truncated,
    reciprocal_rank,
)

LIST_METRICS = [hits, hit, precision, recall, recall_truncated, reciprocal_rank, ndcg, average_precision]
LOG2_3 = math.log2(3)


def csr(rows: list[list[int]], n_items: int) -> sp.csr_array:
    m = np.zeros((len(rows), n_items), dtype=np.int8)
    for u, items in enumerate(rows):
        m[u, items] = 1
    return sp.csr_array(m)


def random_case(seed: int, n_users: int = 150, n_items: int = 40, N: int = 10, pad: bool = True):
    """Random lists (some padded) and relevance sets (some empty, some larger than N)."""
    rng = np.random.default_rng(seed)
    lists = np.full((n_users, N), -1, dtype=np.int64)
    lengths = rng.integers(0 if pad else N, N + 1, n_users)
    for u in range(n_users):  # test-data construction only
        lists[u, : lengths[u]] = rng.choice(n_items, lengths[u], replace=False)
    n_rel = rng.integers(0, min(2 * N, n_items) + 1, n_users)
    rel = np.zeros((n_users, n_items), dtype=np.int8)
    for u in range(n_users):
        rel[u, rng.choice(n_items, n_rel[u], replace=False)] = 1
    return lists, sp.csr_array(rel)


# -- hand-computed cases ----------------------------------------------------------

# user 0: list [1, 0, 2], Rel {1, 2}; user 1: list [3, 0, -1], Rel {0}; user 2: Rel {} (NaN)
HAND_LISTS = np.array([[1, 0, 2], [3, 0, -1], [0, 1, 2]])
HAND_REL = csr([[1, 2], [0], []], 5)
HAND_EXPECTED = {
    hits: [2, 1],
    hit: [1, 1],
    precision: [2 / 3, 1 / 2],  # user 1: real length 2, not 3
    recall: [1, 1],
    recall_truncated: [1, 1],
    reciprocal_rank: [1, 1 / 2],
    # DCG_0 = 1 + 1/log2(4) = 1.5, IDCG_0 = 1 + 1/log2(3); DCG_1 = 1/log2(3), IDCG_1 = 1
    ndcg: [1.5 / (1 + 1 / LOG2_3), 1 / LOG2_3],
    # AP_0 = (P@1 + P@3) / min(2, 3) = (1 + 2/3) / 2; AP_1 = P@2 / 1 = 1/2
    average_precision: [(1 + 2 / 3) / 2, 1 / 2],
}


@pytest.mark.parametrize("metric", LIST_METRICS, ids=lambda f: f.__name__)
def test_hand_cases(metric):
    with pytest.warns(UndefinedMetricWarning, match=rf"{metric.__name__} is undefined for 1 of 3 evaluated users"):
        v = metric(HAND_LISTS, HAND_REL)
    assert v.dtype == np.float64 and v.shape == (3,)
    np.testing.assert_allclose(v[:2], HAND_EXPECTED[metric], rtol=1e-12)
    assert np.isnan(v[2])


def test_recall_versus_truncated_when_rel_exceeds_n():
    # Rel = {0..5}, list of 3 with 2 hits: recall 2/6, truncated 2/min(6, 3)
    lists, rel = np.array([[0, 9, 1]]), csr([[0, 1, 2, 3, 4, 5]], 10)
    assert recall(lists, rel)[0] == pytest.approx(2 / 6)
    assert recall_truncated(lists, rel)[0] == pytest.approx(2 / 3)
    # "@k" by slicing: @2 -> one hit of min(6, 2)
    assert recall_truncated(lists[:, :2], rel)[0] == pytest.approx(1 / 2)


def test_ap_and_ndcg_hand_case_with_late_hits():
    # list [9, 0, 8, 1], Rel {0, 1, 2}: hits at 2 and 4
    lists, rel = np.array([[9, 0, 8, 1]]), csr([[0, 1, 2]], 10)
    assert average_precision(lists, rel)[0] == pytest.approx((1 / 2 + 2 / 4) / 3)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(lists, rel)[0] == pytest.approx(dcg / idcg)
    assert reciprocal_rank(lists, rel)[0] == pytest.approx(1 / 2)


def test_perfect_lists_score_one():
    # relevant items first -> nDCG = AP = truncated recall = 1, whatever |Rel| vs N
    lists = np.array([[0, 1, 2], [4, 5, 9]])
    rel = csr([[0, 1, 2, 3, 4], [4, 5]], 10)
    for metric in (ndcg, average_precision, recall_truncated):
        np.testing.assert_allclose(metric(lists, rel), [1, 1])
    np.testing.assert_allclose(recall(lists, rel), [3 / 5, 1])


def test_auc_hand_case_with_ties_and_noncandidates():
    S = np.array(
        [
            [0.1, 0.5, 0.5, -np.inf, 0.2],  # Rel {1, 2}: both beat both negatives -> 1
            [0.3, 0.3, 0.1, 0.0, 0.9],  # Rel {0}: tie(1/2) + 1 + 1 + 0 over 4 negatives
            [0.4, 0.4, 0.4, 0.4, -np.inf],  # Rel {0, 3}: all ties -> 1/2
        ]
    )
    rel = csr([[1, 2], [0], [0, 3]], 5)
    np.testing.assert_allclose(auc(S, rel), [1.0, 2.5 / 4, 0.5])


def test_auc_single_relevant_item_matches_rank_formula():
    # one relevant item at global rank R among N candidates: AUC = (N - R) / (N - 1)
    rng = np.random.default_rng(5)
    n_users, N = 30, 25
    S = rng.permutation(np.tile(np.arange(N, dtype=float), (n_users, 1)).T).T
    item = rng.integers(0, N, n_users)
    rel = sp.csr_array((np.ones(n_users, dtype=np.int8), (np.arange(n_users), item)), shape=(n_users, N))
    R = N - S[np.arange(n_users), item]  # score N-1 is rank 1
    np.testing.assert_allclose(auc(S, rel), (N - R) / (N - 1))


def test_pap_hand_case():
    # candidates of user 0 (item 3 is a non-candidate): positives {1: .5, 2: .5, 4: .05},
    # negatives {0: .1, 5: .3, 6: .2}; k = 2: beta = 2 (two .5's), top-2 negatives .3, .2
    # -> all 4 pairs won -> 1. User 1: positives {0: .3}, negatives .9, .3, .1, 0; k = 2:
    # pairs (.3 vs .9) = 0, (.3 vs .3) = 1/2 -> 1/4.
    S = np.array(
        [
            [0.1, 0.5, 0.5, -np.inf, 0.05, 0.3, 0.2],
            [0.3, 0.3, 0.1, 0.0, 0.9, -np.inf, -np.inf],
        ]
    )
    rel = csr([[1, 2, 4], [0]], 7)
    np.testing.assert_allclose(pap_at_k(S, rel, 2), [1.0, 0.25])
    # k = 3: beta = 3 -> positive .05 loses to all 3 negatives: 6/9
    assert pap_at_k(S, rel, 3)[0] == pytest.approx(6 / 9)


def brute_auc_pap(S: np.ndarray, rel: np.ndarray, k: int | None):
    """Double loop over (positive, negative) pairs of each user, straight from the definitions."""
    out = []
    for s, r in zip(S, rel):
        cand = s > -np.inf
        pos = np.sort(s[cand & r])[::-1]
        neg = np.sort(s[cand & ~r])[::-1]
        if k is not None:
            pos, neg = pos[: min(len(pos), k)], neg[:k]
        if len(pos) == 0 or len(neg) == 0:
            out.append(np.nan)
            continue
        tot = 0.0
        for a in pos:
            for b in neg:
                tot += 1.0 if a > b else (0.5 if a == b else 0.0)
        out.append(tot / (len(pos) * len(neg)))
    return np.array(out)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 3, 8, 50])
def test_auc_and_pap_match_brute_force(seed, k, monkeypatch):
    rng = np.random.default_rng(seed)
    n_users, n_items = 40, 20
    S = rng.integers(0, 6, (n_users, n_items)).astype(float)  # many ties
    S[rng.random(S.shape) < 0.3] = -np.inf
    rel = rng.random(S.shape) < 0.3
    rel_csr = sp.csr_array(rel.astype(np.int8))
    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 7 * n_items)  # several blocks of users
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        np.testing.assert_allclose(auc(S, rel_csr), brute_auc_pap(S, rel, None), rtol=1e-12)
        np.testing.assert_allclose(pap_at_k(S, rel_csr, k), brute_auc_pap(S, rel, k), rtol=1e-12)


@pytest.mark.parametrize("cells", [7, 40, 2**22])
def test_membership_matches_brute_force_in_blocks(cells, monkeypatch):
    """The block bitmap (one block, or blocks of 1 and 4 users) against a set look-up per user, with padding."""
    rng = np.random.default_rng(cells)
    n_users, n_items, N = 23, 9, 5
    rel = rng.random((n_users, n_items)) < 0.3
    lists = np.argsort(rng.random((n_users, n_items)), axis=1)[:, :N]
    lists[rng.random(n_users) < 0.3, 3:] = -1
    monkeypatch.setattr(common, "MEMBERSHIP_CELLS", cells)
    got = common.membership(lists, sp.csr_array(rel.astype(np.int8)))
    want = np.array([[i >= 0 and bool(rel[u, i]) for i in row] for u, row in enumerate(lists)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("cells", [7, 40, 2**22])
def test_membership_with_values_matches_brute_force(cells, monkeypatch):
    """With per-pair values: each entry's value, 0 where not relevant or padding (blocks of 1, 4 and all users)."""
    rng = np.random.default_rng(cells + 1)
    n_users, n_items = 23, 9
    dense = np.where(rng.random((n_users, n_items)) < 0.4, rng.integers(1, 9, (n_users, n_items)), 0)
    rel = sp.csr_array(dense)
    lists = np.argsort(rng.random((n_users, n_items)), axis=1)
    lists[rng.random(n_users) < 0.3, 5:] = -1
    monkeypatch.setattr(common, "MEMBERSHIP_CELLS", cells)
    got = common.membership(lists, rel, rel.data)
    want = np.array([[dense[u, i] if i >= 0 else 0 for i in row] for u, row in enumerate(lists)])
    assert got.dtype == rel.data.dtype
    np.testing.assert_array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_items=st.integers(1, 12),
    N=st.integers(1, 14),
    cells=st.sampled_from([1, 13, 40, 2**22]),
    repeat=st.booleans(),
    kernel=st.booleans(),
)
def test_repeat_check_matches_brute_force(seed, n_items, N, cells, repeat, kernel):
    """Every path of the repeated-item check (bitmap for lists covering >= 1/4 of the items, row sort for
    shorter ones or the compiled row bitmap), in blocks of one row up to all rows, against a set per row;
    padding is never a repeat."""
    import sys

    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 12))
    lists = rng.integers(0, n_items, (n_rows, N))
    if not repeat:  # distinct items where N allows, then padding
        lists = np.full((n_rows, N), -1)
        for r in range(n_rows):  # test-data construction only
            k = int(rng.integers(0, min(N, n_items) + 1))
            lists[r, :k] = rng.choice(n_items, k, replace=False)
    want = any(len(set(row[row >= 0].tolist())) < int((row >= 0).sum()) for row in lists)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(common, "MEMBERSHIP_CELLS", cells)
        mp.setattr(blocks, "BLOCK_ELEMENTS", cells)
        mp.setattr(common, "_KERNEL_MIN_ENTRIES", 0 if kernel else 1 << 62)
        if not kernel:  # numba looks unloaded
            mp.delitem(sys.modules, "numba", raising=False)
        assert common._repeats_in_rows(lists, n_items) is want


@pytest.mark.parametrize("n_rows", [1, 3, 40])
def test_repeat_check_on_padding_only(n_rows):
    # every list empty, no item at all (width 0: every user trained on the whole catalogue); found by hypothesis
    assert common._repeats_in_rows(np.full((n_rows, 2), -1), 0) is False
    assert common._repeats_in_rows(np.full((n_rows, 2), -1), 1) is False
    from simrec.metrics._repeats_kernel import repeats_in_rows

    assert repeats_in_rows(np.full((n_rows, 2), -1), 0) is False


@pytest.mark.parametrize("seed", range(3))
def test_auc_many_matches_auc_and_brute_force(seed, monkeypatch):
    """One sort shared by several relevance sets: each value equals the double loop.

    Blocks without ties (continuous scores: the h = l + 1 shortcut) and with
    ties and +inf scores (the second binary search) are both covered.
    """
    rng = np.random.default_rng(seed)
    n_users, n_items = 30, 13
    S = rng.random((n_users, n_items))
    S[15:] = rng.integers(0, 4, (15, n_items))  # ties in the second half only
    S[rng.random(S.shape) < 0.2] = -np.inf
    S[20:, 0] = np.inf
    rels = [rng.random(S.shape) < q for q in (0.1, 0.5)]
    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 15 * 16)  # two blocks: tie-free, then tied
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        many = auc_many(S, [sp.csr_array(r.astype(np.int8)) for r in rels])
        for got, r in zip(many, rels):
            np.testing.assert_allclose(got, brute_auc_pap(S, r, None), rtol=1e-12)
            np.testing.assert_array_equal(got, auc(S, sp.csr_array(r.astype(np.int8))))


def test_pap_equals_auc_when_k_covers_everything():
    rng = np.random.default_rng(9)
    S = rng.random((30, 15))
    S[:, :3] = -np.inf
    rel = sp.csr_array((rng.random(S.shape) < 0.4).astype(np.int8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        np.testing.assert_allclose(pap_at_k(S, rel, 15), auc(S, rel))


# -- NaN policy, evaluated mask, validation -------------------------------------------


def test_evaluated_mask_gives_silent_nan():
    lists, rel = HAND_LISTS, HAND_REL
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # user 2 (empty Rel) is not evaluated: no warning
        v = ndcg(lists, rel, evaluated=np.array([True, False, False]))
    assert v[0] == pytest.approx(HAND_EXPECTED[ndcg][0]) and np.isnan(v[1:]).all()


def test_one_warning_per_call_counting_users():
    lists, rel = random_case(0)
    n_empty = int((np.diff(rel.indptr) == 0).sum())
    assert n_empty > 1
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        v = recall(lists, rel)
    assert len(rec) == 1 and issubclass(rec[0].category, UndefinedMetricWarning)
    assert f"undefined for {n_empty} of {len(lists)} evaluated users" in str(rec[0].message)
    assert rec[0].filename == __file__  # points at the caller
    assert np.isnan(v).sum() == n_empty
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        auc(np.where(rel.toarray() > 0, 1.0, 0.0), rel)
    assert len(rec) == 1 and rec[0].filename == __file__


def test_list_metrics_equals_individual_calls():
    lists, rel = random_case(3)
    evaluated = np.arange(len(lists)) % 3 != 0
    names = [m.__name__ for m in LIST_METRICS]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = list_metrics(lists, rel, names, evaluated=evaluated)
    assert list(got) == names and len(rec) == len(names)  # one warning per metric
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for m in LIST_METRICS:
            np.testing.assert_array_equal(got[m.__name__], m(lists, rel, evaluated=evaluated))
    with pytest.raises(ValueError, match="`metrics` must name metrics among"):
        list_metrics(lists, rel, ["precision", "auc"])
    with pytest.raises(TypeError, match="not a string"):
        list_metrics(lists, rel, "precision")


def test_list_metrics_many_equals_one_call_per_array():
    """One relevance look-up for several list arrays (of different lengths) gives each
    array's list_metrics, with the same warnings."""
    lists, rel = random_case(3)
    other, _ = random_case(4)
    other = other[: len(lists), :3]
    evaluated = np.arange(len(lists)) % 3 != 0
    names = [m.__name__ for m in LIST_METRICS]
    with warnings.catch_warnings(record=True) as rec_many:
        warnings.simplefilter("always")
        got = list_metrics_many([lists, other, lists], rel, names, evaluated=evaluated)
    with warnings.catch_warnings(record=True) as rec_one:
        warnings.simplefilter("always")
        want = [list_metrics(a, rel, names, evaluated=evaluated) for a in (lists, other, lists)]
    assert [str(w.message) for w in rec_many] == [str(w.message) for w in rec_one]
    for g, w in zip(got, want):
        assert list(g) == names
        for name in names:
            np.testing.assert_array_equal(g[name], w[name])
    with pytest.raises(ValueError, match="rows"):
        list_metrics_many([lists, lists[:-1]], rel, names)
    with pytest.raises(ValueError, match="`lists` must not repeat an item"):
        list_metrics_many([lists, np.zeros((len(lists), 2), dtype=int)], rel, names)


def test_precision_of_empty_list_is_nan():
    with pytest.warns(UndefinedMetricWarning, match="empty relevance set or empty list"):
        v = precision(np.array([[-1, -1], [0, -1]]), csr([[0], [0]], 3))
    assert np.isnan(v[0]) and v[1] == 1.0


def test_interactions_accepted_as_relevance():
    rel = Interactions.from_pairs(np.array([0, 0, 1]), np.array([1, 2, 0]), (2, 5))
    np.testing.assert_allclose(precision(HAND_LISTS[:2], rel), HAND_EXPECTED[precision])


def test_noncanonical_relevance_is_handled():
    # duplicates and an explicit zero in the CSR
    m = sp.csr_array((np.array([1, 1, 0, 1]), np.array([2, 2, 0, 1]), np.array([0, 3, 4])), shape=(2, 4))
    np.testing.assert_allclose(hits(np.array([[2, 0], [1, 3]]), m), [1, 1])


@pytest.mark.parametrize(
    "lists, err, msg",
    [
        (np.array([[0, -1, 1]]), ValueError, "trailing padding"),
        (np.array([[0, 1, 0]]), ValueError, "must not repeat"),
        (np.array([[2, 3, 1, 3, -1]]), ValueError, "must not repeat"),  # a full ranking: the bitmap path
        (np.array([[0, 7, 1]]), ValueError, r"in \[-1, 5\)"),
        (np.array([[0, -2, 1]]), ValueError, r"in \[-1, 5\)"),
        (np.array([[0.0, 1.0, 2.0]]), TypeError, "integer item indices"),
        (np.array([0, 1, 2]), ValueError, "must be 2-d"),
    ],
)
def test_list_validation(lists, err, msg):
    with pytest.raises(err, match=msg):
        precision(lists, csr([[0]], 5))


def test_other_validation():
    with pytest.raises(ValueError, match="must have 1 rows"):
        precision(np.array([[0]]), csr([[0], [1]], 5))
    with pytest.raises(TypeError, match="scipy.sparse CSR"):
        precision(np.array([[0]]), np.ones((1, 5)))
    with pytest.raises(ValueError, match=r"`evaluated` must have shape \(1,\)"):
        precision(np.array([[0]]), csr([[0]], 5), evaluated=np.array([True, True]))
    with pytest.raises(TypeError, match="boolean mask"):
        precision(np.array([[0]]), csr([[0]], 5), evaluated=np.array([1]))
    with pytest.raises(ValueError, match="must not contain NaN"):
        auc(np.array([[np.nan, 1.0]]), csr([[0]], 2))
    with pytest.raises(ValueError, match=r"`k` must be an integer in \[1, inf\]; got 0"):
        pap_at_k(np.array([[0.0, 1.0]]), csr([[0]], 2), 0)
    with pytest.raises(ValueError, match="shape of `scores`"):
        auc(np.zeros((1, 3)), csr([[0]], 2))


# -- long lists: one pass (long_list_hits) against check_lists + membership ----------------------

ALL_LIST_METRICS = lists_module.LIST_METRICS  # every metric's name


def _outcome(fn):
    """Values and warning messages of ``fn()``, or the error it raises (type and message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn()
        except (TypeError, ValueError) as exc:
            return type(exc), str(exc)
    return out, [str(w.message) for w in caught]


def _same(a, b):
    if isinstance(a[0], dict):
        assert isinstance(b[0], dict) and list(a[0]) == list(b[0])
        for m in a[0]:
            np.testing.assert_array_equal(a[0][m], b[0][m])
        assert a[1] == b[1]
    else:
        assert a == b


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_items=st.integers(1, 20),
    extra=st.integers(0, 6),
    block=st.sampled_from([1, 7, 40, 2**17]),
    dtype=st.sampled_from(["int64", "int32", "int16", "int8", "uint16"]),
    fault=st.sampled_from(["none", "none", "repeat", "gap", "high", "low", "rows"]),
)
def test_long_lists_give_the_values_and_errors_of_the_general_path(seed, n_items, extra, block, dtype, fault):
    """Lists covering >= 1/4 of the items (full rankings) are checked and looked up in one pass by blocks
    of rows; every metric's values, warnings and every error (repeats, padding before an item, entries out
    of range, wrong row count) are those of check_lists + membership, in blocks of 1 row to all rows."""
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 9))
    N = max(1, -(-n_items // 4) + int(rng.integers(0, n_items + extra + 1)))  # N * 4 >= n_items
    lists = np.full((n_rows, N), -1, dtype=np.int64)
    for r in range(n_rows):  # test-data construction only
        k = int(rng.integers(0, min(N, n_items) + 1))
        lists[r, :k] = rng.choice(n_items, k, replace=False)
    r = int(rng.integers(0, n_rows))
    if fault == "repeat" and N >= 2 and n_items >= 1:
        lists[r, :2] = int(rng.integers(0, n_items))
    elif fault == "gap" and N >= 2:
        lists[r, 0], lists[r, -1] = -1, int(rng.integers(0, n_items))
    elif fault == "high":
        lists[r, 0] = n_items + int(rng.integers(0, 3))
    elif fault == "low":
        lists[r, 0] = -2 - int(rng.integers(0, 3))
    info = np.iinfo(dtype)
    if lists.min() < info.min or lists.max() > info.max:
        return
    lists = lists.astype(dtype)
    rel = sp.csr_array((rng.random((n_rows + (fault == "rows"), n_items)) < 0.3).astype(np.int8))
    assert common.is_long(lists, n_items)

    def run():
        return list_metrics(lists, rel, ALL_LIST_METRICS)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(common, "LONG_LIST_ENTRIES", block)
        fast = _outcome(run)
        mp.setattr(lists_module, "is_long", lambda *_: False)
        general = _outcome(run)
    _same(fast, general)
    if fault == "none" and dtype != "uint16":
        assert isinstance(fast[0], dict)


def test_long_list_hits_are_the_nonzero_entries_of_membership():
    lists, rel = random_case(3, n_users=60, n_items=12, N=12)
    length, rows, cols = common.long_list_hits(lists, rel)
    want_rows, want_cols = np.nonzero(common.membership(lists, rel))
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(cols, want_cols)
    np.testing.assert_array_equal(length, (lists >= 0).sum(axis=1))


def test_list_metrics_many_mixes_long_and_short_arrays():
    """Full rankings and top-N lists of the same users side by side: each array's values are those of
    its own call (the long ones take long_list_hits, the short ones share one membership look-up)."""
    lists, rel = random_case(8, n_users=80, n_items=30, N=30)
    arrays = [lists, lists[:, :5], lists[:, :20], lists[:, :3]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        many = list_metrics_many(arrays, rel, ALL_LIST_METRICS)
        for a, got in zip(arrays, many):
            want = list_metrics(a, rel, ALL_LIST_METRICS)
            for m in ALL_LIST_METRICS:
                np.testing.assert_array_equal(got[m], want[m])


# -- invariants (hypothesis) ---------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), N=st.integers(1, 12), n_items=st.integers(12, 30))
def test_list_metric_invariants(seed, N, n_items):
    lists, rel = random_case(seed, 25, n_items, N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        v = {m: m(lists, rel) for m in LIST_METRICS}
    defined = np.diff(rel.indptr) > 0
    length = (lists >= 0).sum(axis=1)
    for m in LIST_METRICS:
        assert np.isnan(v[m][~defined]).all()
    for m in (hit, precision, recall, recall_truncated, reciprocal_rank, ndcg, average_precision):
        x = v[m][defined & (length > 0)]
        assert ((x >= 0) & (x <= 1 + 1e-12)).all()
    d = defined & (length > 0)
    np.testing.assert_allclose(v[precision][d] * length[d], v[hits][d])
    assert (v[recall][defined] <= v[recall_truncated][defined] + 1e-12).all()
    assert ((v[hits][defined] > 0) == (v[reciprocal_rank][defined] > 0)).all()
    assert ((v[hits][defined] > 0) == (v[ndcg][defined] > 0)).all()
    np.testing.assert_array_equal(v[hit][defined], (v[hits][defined] > 0).astype(float))


# -- LensKit cross-checks ------------------------------------------------------------


def lenskit_values(lists: np.ndarray, rel: sp.csr_array, metric, users=None) -> np.ndarray:
    from lenskit.data import ItemList

    out = []
    for u in np.flatnonzero(users) if users is not None else range(len(lists)):
        recs = ItemList(item_ids=lists[u][lists[u] >= 0], ordered=True)
        test = ItemList(item_ids=rel.indices[rel.indptr[u] : rel.indptr[u + 1]])
        out.append(metric.measure_list(recs, test))
    return np.array(out, dtype=float)


def both(lists, rel, ours, lk, users):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ours(lists, rel)[users], lenskit_values(lists, rel, lk, users)


@pytest.fixture(scope="module")
def case():
    lists, rel = random_case(42, n_users=200, n_items=40, N=10)
    defined = np.diff(rel.indptr) > 0
    return lists, rel, defined


@pytest.fixture(scope="module")
def full_case():
    """Full rankings of 40 items (with padding): the one-pass path of long lists."""
    lists, rel = random_case(43, n_users=200, n_items=40, N=40)
    defined = np.diff(rel.indptr) > 0
    return lists, rel, defined


@pytest.mark.parametrize("which", ["case", "full_case"])
def test_matches_lenskit_where_definitions_coincide(which, request):
    from lenskit.metrics import NDCG, Hit, LogRankWeight, Precision, Recall, RecipRank

    lists, rel, defined = request.getfixturevalue(which)
    N = lists.shape[1]
    pairs = [
        (precision, Precision()),
        (recall, Recall()),
        (recall_truncated, Recall(n=N)),
        (reciprocal_rank, RecipRank()),
        (hit, Hit()),
        (ndcg, NDCG(n=N, weight=LogRankWeight(offset=1))),
    ]
    for ours, lk in pairs:
        a, b = both(lists, rel, ours, lk, defined)
        np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=ours.__name__)


def test_lenskit_recall_at_n_is_our_truncated_recall_not_classic(case):
    from lenskit.metrics import Recall

    lists, rel, defined = case
    N = lists.shape[1]
    big = defined & (np.diff(rel.indptr) > N) & (hits(lists, rel, evaluated=defined) > 0)
    assert big.sum() > 5
    a, b = both(lists, rel, recall, Recall(n=N), big)
    assert (b > a).all()  # LensKit divides by min(|Rel|, N) < |Rel|
    np.testing.assert_allclose(a * np.diff(rel.indptr)[big], b * N)


def test_lenskit_default_ndcg_discount_differs_at_rank_two():
    from lenskit.metrics import NDCG

    # one relevant item at position 2 of 3: LensKit's default discount log2(max(i, 2))
    # gives rank 2 the weight of rank 1 -> 1.0; ours 1/log2(3)
    lists, rel = np.array([[5, 0, 6]]), csr([[0]], 8)
    assert lenskit_values(lists, rel, NDCG(n=3))[0] == pytest.approx(1.0)
    assert ndcg(lists, rel)[0] == pytest.approx(1 / LOG2_3)
    # in general LensKit's weight at rank i >= 2, 1/log2(i), is ours at rank i - 1; they
    # agree only at rank 1. With |Rel| = 1 (IDCG = 1 for both) that shifts the values:
    for pos in range(3):
        lst = [5, 6, 7]
        lst[pos] = 0
        b = lenskit_values(np.array([lst]), rel, NDCG(n=3))[0]
        a_shift = 1.0 if pos <= 1 else 1 / math.log2(pos + 1)  # ours at rank max(pos, 1)
        assert b == pytest.approx(a_shift)
        assert ndcg(np.array([lst]), rel)[0] == pytest.approx(1 / math.log2(pos + 2))


def test_lenskit_default_ndcg_differs_on_random_lists(case):
    from lenskit.metrics import NDCG

    lists, rel, defined = case
    a, b = both(lists, rel, ndcg, NDCG(n=lists.shape[1]), defined)
    assert np.mean(np.abs(a - b) > 1e-9) > 0.3  # they genuinely differ, not by rounding


def test_average_precision_vs_lenskit(case):
    from lenskit.metrics.ranking import AveragePrecision

    lists, rel, defined = case
    N = lists.shape[1]
    full = (lists >= 0).all(axis=1)
    a, b = both(lists, rel, average_precision, AveragePrecision(n=N), defined & full)
    np.testing.assert_allclose(a, b, rtol=1e-9)
    # padded lists: LensKit divides by min(|Rel|, |L|), we by min(|Rel|, N)
    length = (lists >= 0).sum(axis=1)
    short = defined & ~full & (np.diff(rel.indptr) > length) & (hits(lists, rel, evaluated=defined) > 0)
    assert short.sum() > 3
    a, b = both(lists, rel, average_precision, AveragePrecision(n=N), short)
    den_ours = np.minimum(np.diff(rel.indptr)[short], N)
    np.testing.assert_allclose(a * den_ours, b * length[short], rtol=1e-9)


def test_precision_empty_relevance_is_nan_here_zero_in_lenskit():
    from lenskit.metrics import Precision

    lists, rel = np.array([[0, 1]]), csr([[]], 4)
    assert lenskit_values(lists, rel, Precision())[0] == 0.0
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(precision(lists, rel)[0])


def _check_positions_pair_by_pair(n_users, n_items, width, density, seed):
    # every relevant pair's 1-based position in its user's list (0 if absent), checked pair by pair against
    # list.index, and each list's real length
    from simrec.metrics import relevant_positions

    rng = np.random.default_rng(seed)
    width = min(width, n_items)
    lists = np.full((n_users, width), -1, dtype=np.int64)
    for u in range(n_users):
        k = int(rng.integers(0, width + 1))
        lists[u, :k] = rng.permutation(n_items)[:k]
    rel = sp.csr_array((rng.random((n_users, n_items)) < density).astype(np.int8))
    position, length = relevant_positions(lists, rel)
    assert np.array_equal(length, (lists >= 0).sum(axis=1))
    k = 0
    for u in range(n_users):
        row = list(lists[u])
        for i in rel.indices[rel.indptr[u] : rel.indptr[u + 1]]:
            assert position[k] == (row.index(i) + 1 if i in row else 0)
            k += 1


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 30), st.integers(0, 40), st.integers(0, 2**31 - 1))
def test_relevant_positions_match_a_lookup_pair_by_pair(n_users, n_items, width, seed):
    # lists shorter than the catalogue take the list-positions bitmap path, full rankings the long path
    _check_positions_pair_by_pair(n_users, n_items, width, 0.3, seed)


def test_list_positions_with_wide_lists_match_a_lookup_pair_by_pair():
    # top-N lists too short for the long path but wider than 255 columns: list_positions' bitmap holds uint16
    _check_positions_pair_by_pair(7, 1400, 300, 0.2, 5)


# -- short lists: the compiled pass (issue 29) against check_lists + membership -------------------------


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_items=st.integers(5, 40),
    n_arrays=st.integers(1, 3),
    dtype=st.sampled_from(["int64", "int32", "int16", "uint16"]),
    fault=st.sampled_from(["none", "none", "repeat", "gap", "high", "low", "rows"]),
)
def test_short_lists_compiled_give_the_values_and_errors_of_the_numpy_path(seed, n_items, n_arrays, dtype, fault):
    """Top-N arrays checked and looked up user by user by the compiled kernel (list_metrics_many): every
    metric's values and warnings, and every error (repeats, an item after padding, entries out of range,
    wrong row count), are those of check_lists + membership on the arrays side by side."""
    from kernel_paths import use_kernels

    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 9))
    arrays = []
    for _ in range(n_arrays):
        N = int(rng.integers(0, max(1, -(-n_items // 4))))  # N * 4 < n_items: not long
        lists = np.full((n_rows, N), -1, dtype=np.int64)
        for r in range(n_rows):  # test-data construction only
            k = int(rng.integers(0, N + 1))
            lists[r, :k] = rng.choice(n_items, k, replace=False)
        arrays.append(lists)
    a, r = arrays[int(rng.integers(0, n_arrays))], int(rng.integers(0, n_rows))
    N = a.shape[1]
    if fault == "repeat" and N >= 2:
        a[r, :2] = int(rng.integers(0, n_items))
    elif fault == "gap" and N >= 2:
        a[r, 0], a[r, -1] = -1, int(rng.integers(0, n_items))
    elif fault == "high" and N:
        a[r, 0] = n_items + int(rng.integers(0, 3))
    elif fault == "low" and N:
        a[r, 0] = -2 - int(rng.integers(0, 3))
    info = np.iinfo(dtype)
    if any(x.size and (x.min() < info.min or x.max() > info.max) for x in arrays):
        return
    arrays = [x.astype(dtype) for x in arrays]
    rel = sp.csr_array((rng.random((n_rows + (fault == "rows"), n_items)) < 0.3).astype(np.int8))

    def run():
        return list_metrics_many(arrays, rel, ALL_LIST_METRICS)

    outcomes = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            use_kernels(mp, compiled)
            outcomes.append(_outcome(run))
    numpy_path, compiled_path = outcomes
    if isinstance(numpy_path[0], list):
        assert isinstance(compiled_path[0], list) and len(compiled_path[0]) == len(numpy_path[0])
        for got, want in zip(compiled_path[0], numpy_path[0]):
            _same((got, []), (want, []))
        assert compiled_path[1] == numpy_path[1]
    else:
        assert compiled_path == numpy_path

"""The Oracle's tie rule as the thesis authors' code has it (``Oracle(ties="item_id")``, issue 11).

Reference: a per-user brute force of the authors' rule (candidates are the
items seen in training minus the user's training items; relevant ones first,
then the rest, each by ascending item index).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from simrec.interactions import Interactions
from simrec.recommenders import Oracle, top_n


def _random_case(seed: int, n_users=40, n_items=30):
    rng = np.random.default_rng(seed)
    train = (rng.random((n_users, n_items)) < 0.15) & (np.arange(n_items) < n_items - 4)  # last 4 items unseen
    truth = rng.random((n_users, n_items)) < 0.3
    return (
        Interactions(sp.csr_array(train.astype(np.int8))),
        sp.csr_array((truth & ~train).astype(np.int8)),
        train,
        truth,
    )


def _brute(train: np.ndarray, truth: np.ndarray, n: int) -> np.ndarray:
    seen = train.any(axis=0)
    out = np.full((train.shape[0], n), -1)
    for u in range(train.shape[0]):
        cand = [i for i in range(train.shape[1]) if seen[i] and not train[u, i]]
        ranked = [i for i in cand if truth[u, i]] + [i for i in cand if not truth[u, i]]
        out[u, : min(n, len(ranked))] = ranked[:n]
    return out


@pytest.mark.parametrize("seed, n", [(0, 5), (1, 12), (2, 30)])
def test_item_id_ties_equal_the_authors_rule(seed, n):
    inter, rel, train, truth = _random_case(seed)
    lists = Oracle(ties="item_id").recommend(inter, rel, n)
    np.testing.assert_array_equal(lists, _brute(train, truth, n))


def test_item_id_scores_rank_like_the_lists():
    inter, rel, _, _ = _random_case(3)
    oracle = Oracle(ties="item_id")
    scores = oracle.score(inter, rel)
    lists = oracle.recommend(inter, rel, 8)
    np.testing.assert_array_equal(top_n(scores, 8), lists)
    assert np.isneginf(scores[:, -4:]).all()  # never seen in training


def test_random_ties_are_the_default_and_bad_values_are_refused():
    assert Oracle().ties == "random"
    with pytest.raises(ValueError, match="`ties` must be one of"):
        Oracle(ties="alphabetical")


# -- graded truth (LDA like counts): the authors' Oracle ranks by count -----------------


def _brute_graded(train: np.ndarray, gain: np.ndarray, n: int) -> np.ndarray:
    """LensKit 0.7's Memorized + TopN on the counts: seen candidates with a count, by (count desc, item asc)."""
    seen = train.any(axis=0)
    out = np.full((train.shape[0], n), -1)
    for u in range(train.shape[0]):
        cand = [i for i in range(train.shape[1]) if seen[i] and not train[u, i]]
        ranked = sorted((i for i in cand if gain[u, i] > 0), key=lambda i: (-gain[u, i], i))
        ranked += [i for i in cand if gain[u, i] == 0]  # simrec fills the list with the other candidates
        out[u, : min(n, len(ranked))] = ranked[:n]
    return out


def _graded_case(seed: int):
    inter, rel, train, truth = _random_case(seed)
    rng = np.random.default_rng(100 + seed)
    counts = rng.integers(1, 4, size=rel.nnz)  # like counts 1..3: many ties
    graded = Interactions.from_csr(rel.indptr, rel.indices, rel.shape, sort=False, gains=counts)
    return inter, graded, train, graded.gain_matrix().toarray()


@pytest.mark.parametrize("seed, n", [(4, 5), (5, 12), (6, 30)])
def test_item_id_ties_rank_graded_truth_by_count_then_item(seed, n):
    inter, graded, train, gain = _graded_case(seed)
    lists = Oracle(ties="item_id").recommend(inter, graded, n)
    np.testing.assert_array_equal(lists, _brute_graded(train, gain, n))
    binary = Oracle(ties="item_id").recommend(inter, graded.matrix, n)
    assert not np.array_equal(lists, binary)  # the counts do change the order
    # the scores rank like the lists; relevant candidates still all above the others
    scores = Oracle(ties="item_id").score(inter, graded)
    np.testing.assert_array_equal(top_n(scores, n), lists)
    rel_scores = np.where((gain > 0) & np.isfinite(scores), scores, np.inf).min(axis=1)  # unseen items: -inf
    other = np.where((gain == 0) & np.isfinite(scores), scores, -np.inf).max(axis=1)
    assert (rel_scores > other).all()


def test_unit_gains_and_random_ties_ignore_the_counts():
    inter, graded, _, _ = _graded_case(7)
    ones = Interactions(graded.matrix, gains=np.ones(graded.n_pairs))
    np.testing.assert_array_equal(
        Oracle(ties="item_id").recommend(inter, ones, 9), Oracle(ties="item_id").recommend(inter, graded.matrix, 9)
    )
    # the thesis text's Oracle (ties at random) reads relevance as binary
    np.testing.assert_array_equal(
        Oracle().recommend(inter, graded, 9, np.random.default_rng(8)),
        Oracle().recommend(inter, graded.matrix, 9, np.random.default_rng(8)),
    )
    np.testing.assert_array_equal(
        Oracle().score(inter, graded, np.random.default_rng(9)),
        Oracle().score(inter, graded.matrix, np.random.default_rng(9)),
    )

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
    return Interactions(sp.csr_array(train.astype(np.int8))), sp.csr_array((truth & ~train).astype(np.int8)), train, truth


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

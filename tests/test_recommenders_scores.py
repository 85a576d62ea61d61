"""The baselines' dense ``score`` blocks are pinned to their earlier computation (issue 13).

``reference_scatter_rows`` is ``simrec.recommenders.baselines._scatter_rows``
as it was before issue 13's speed work (commit 5043fd8): a row selection of
the sparse matrix and a two-dimensional fancy assignment. The current helper
(flat indices, ``np.add.at``, no row-selection copy for all users in order)
must give bit-identical blocks, and every baseline's ``score`` with the
reference helper swapped in must equal its current ``score`` for the same
seed: same values, same random draws in the same order (the generator's
state after the call is compared too).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import simrec.recommenders.baselines as baselines
from simrec.interactions import Interactions
from simrec.recommenders import Oracle, Popular, ProbabilisticOracle, RandomRecommender


def reference_scatter_rows(out, m, users, value, *, add=False):
    """The replaced implementation (see the module docstring)."""
    sub = m[users]
    rows = np.repeat(np.arange(len(users), dtype=np.int64), np.diff(sub.indptr))
    if value is None:
        value = sub.data
    if add:
        out[rows, sub.indices] += value
    else:
        out[rows, sub.indices] = value


def _sparse(rng, n_rows, n_cols, density, graded=False):
    dense = rng.random((n_rows, n_cols)) < density
    data = rng.integers(1, 5, dense.sum()).astype(np.float64) if graded else np.ones(dense.sum(), dtype=np.int8)
    r, c = np.nonzero(dense)
    return sp.csr_array((data, (r, c)), shape=(n_rows, n_cols))


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_rows=st.integers(1, 12),
    n_cols=st.integers(1, 15),
    density=st.sampled_from([0.0, 0.2, 0.7, 1.0]),
    users_kind=st.sampled_from(["all", "subset", "repeated", "reversed"]),
    mode=st.sampled_from(["set", "add", "add_data"]),
)
def test_scatter_rows_matches_replaced_implementation(seed, n_rows, n_cols, density, users_kind, mode):
    rng = np.random.default_rng(seed)
    m = _sparse(rng, n_rows, n_cols, density, graded=mode == "add_data")
    users = {
        "all": np.arange(n_rows),
        "subset": np.flatnonzero(rng.random(n_rows) < 0.5),
        "repeated": rng.integers(0, n_rows, n_rows + 2),
        "reversed": np.arange(n_rows)[::-1].copy(),
    }[users_kind].astype(np.int64)
    start = rng.random((len(users), n_cols))
    value, add = {"set": (-np.inf, False), "add": (1.0, True), "add_data": (None, True)}[mode]
    got, want = start.copy(), start.copy()
    baselines._scatter_rows(got, m, users, value, add=add)
    reference_scatter_rows(want, m, users, value, add=add)
    np.testing.assert_array_equal(got, want)


def test_scatter_rows_refuses_a_non_contiguous_block():
    out = np.zeros((4, 6))[:, :3]
    m = sp.csr_array(np.eye(4, 3, dtype=np.int8))
    with pytest.raises(ValueError, match="C-contiguous"):
        baselines._scatter_rows(out, m, np.arange(4), -np.inf)


def _world(seed, n_users=60, n_items=25, graded=False):
    """Train and relevance (truth - train) with a user with every item in train and one with none."""
    rng = np.random.default_rng(seed)
    like = rng.random((n_users, n_items)) < 0.35
    seen = like & (rng.random((n_users, n_items)) < 0.4) | (rng.random((n_users, n_items)) < 0.05)
    seen[0], like[1], seen[1] = True, True, False
    train = Interactions.from_pairs(*np.nonzero(seen), (n_users, n_items))
    r, c = np.nonzero(like & ~seen)
    rel = Interactions.from_pairs(r, c, (n_users, n_items)).matrix
    if graded:  # the LDA truth's like counts: Oracle(ties="item_id") ranks by them
        return train, Interactions(rel, gains=rng.integers(1, 4, rel.nnz))
    return train, rel


RECOMMENDERS = [Oracle(), Oracle(ties="item_id"), Popular(), RandomRecommender(), ProbabilisticOracle(0.7)]


@pytest.mark.parametrize("rec", RECOMMENDERS, ids=repr)
@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("users_kind", ["none", "all", "subset"])
def test_scores_and_random_streams_unchanged(rec, graded, users_kind, monkeypatch):
    train, rel = _world(7, graded=graded)
    users = {"none": None, "all": np.arange(train.n_users), "subset": np.array([5, 1, 0, 9, 33, 34, 59])}[users_kind]
    g_new, g_old = np.random.default_rng(11), np.random.default_rng(11)
    new = rec.score(train, rel, g_new, users=users)
    with monkeypatch.context() as mp:
        mp.setattr(baselines, "_scatter_rows", reference_scatter_rows)
        old = rec.score(train, rel, g_old, users=users)
    np.testing.assert_array_equal(new, old)
    assert g_new.bit_generator.state == g_old.bit_generator.state
    assert g_new.random() == g_old.random()

"""Sources of global ranks: leave-one-out, ranks from scores, ranks files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.interactions import Interactions
from simrec.loo import leave_one_out
from simrec.recommenders import Popular
from simrec.sampling import above_weight_share, global_ranks
from simrec.stress import RanksFileError, loo_data, read_ranks_file, score_ranks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ranks"


def _random_interactions(seed: int, n_users: int = 60, n_items: int = 40, p: float = 0.2) -> Interactions:
    rng = np.random.default_rng(seed)
    u, i = np.nonzero(rng.random((n_users, n_items)) < p)
    return Interactions.from_pairs(u, i, (n_users, n_items))


def test_leave_one_out_holds_out_one_item_per_eligible_user():
    obs = _random_interactions(0)
    split = leave_one_out(obs, rng=1, min_items=2)
    counts = obs.user_counts()
    np.testing.assert_array_equal(split.test.user_counts(), (counts >= 2).astype(int))
    total = split.train.matrix + split.test.matrix
    assert (total != obs.matrix).nnz == 0
    assert split.train.matrix.multiply(split.test.matrix).nnz == 0
    with pytest.raises(ValueError, match="`min_items`"):
        leave_one_out(obs, rng=1, min_items=0)


def test_leave_one_out_is_uniform_within_a_profile():
    # 4000 users with the same 5 items: each position held out ~ 800 times (sd = sqrt(4000 * .2 * .8) = 25.3)
    u = np.repeat(np.arange(4000), 5)
    i = np.tile(np.arange(5), 4000)
    split = leave_one_out(Interactions.from_pairs(u, i, (4000, 5)), rng=3)
    freq = split.test.item_counts()
    assert np.all(np.abs(freq - 800) < 4 * 25.3), freq


class _Fixed:
    """A recommender returning fixed scores (for checking the rank computation)."""

    name = "Fixed"

    def __init__(self, scores):
        self.scores = scores

    def score(self, train, relevant, rng=None, users=None):
        out = self.scores[users].copy()
        out[train.matrix[users].toarray().astype(bool)] = -np.inf
        return out


def test_score_ranks_match_global_ranks_and_weight_shares():
    obs = _random_interactions(5, n_users=80, n_items=50, p=0.3)
    data = loo_data(obs, rng=2)
    scores = np.random.default_rng(8).random((obs.n_users, obs.n_items))  # no ties
    res = score_ranks(_Fixed(scores), data, rng=0)
    excl = data.train.matrix[data.users].toarray().astype(bool)
    s = scores[data.users]
    np.testing.assert_array_equal(res.ranks, global_ranks(s, data.targets, exclude=excl))
    np.testing.assert_allclose(
        res.popularity_shares, above_weight_share(s, data.targets, weights=data.weights, exclude=excl)
    )
    np.testing.assert_array_equal(res.n_candidates, obs.n_items - excl.sum(axis=1))


def test_score_ranks_with_ties_are_global_ranks_with_shares_on_the_same_stream():
    """Tied scores: score_ranks draws exactly what global_ranks(return_shares=True) draws from the same generator."""
    obs = _random_interactions(3, n_users=90, n_items=50, p=0.3)
    data = loo_data(obs, rng=5)
    scores = np.round(np.random.default_rng(1).random((obs.n_users, obs.n_items)) * 3)  # four levels: many ties
    res = score_ranks(_Fixed(scores), data, rng=np.random.default_rng(17))
    excl = data.train.matrix[data.users].toarray().astype(bool)
    s = np.where(excl, -np.inf, scores[data.users])
    ranks, shares = global_ranks(
        s, data.targets, exclude=excl, rng=np.random.default_rng(17), return_shares=True, weights=data.weights
    )
    np.testing.assert_array_equal(res.ranks, ranks)
    np.testing.assert_array_equal(res.popularity_shares, shares)
    # ties were broken at random (a pessimistic or optimistic rule gives other ranks)
    assert not np.array_equal(res.ranks, global_ranks(s, data.targets, exclude=excl, ties="optimistic"))
    assert not np.array_equal(res.ranks, global_ranks(s, data.targets, exclude=excl, ties="pessimistic"))


def test_score_ranks_of_true_items():
    truth = _random_interactions(6, n_users=30, n_items=25, p=0.5)
    obs = truth  # observe everything: relevant = truth - train
    data = loo_data(obs, rng=4, truth=truth, truth_rows=np.arange(truth.n_users))
    scores = np.random.default_rng(9).random(truth.matrix.shape)
    res = score_ranks(_Fixed(scores), data, rng=0)
    rel = data.relevant[data.users].toarray().astype(bool)
    excl = data.train.matrix[data.users].toarray().astype(bool)
    s = np.where(excl, -np.inf, scores[data.users])
    for p, (u, r) in enumerate(zip(res.true_users, res.true_ranks)):
        items = np.flatnonzero(rel[u])
        ranks = {i: 1 + int(((s[u] > s[u, i]) & ~excl[u]).sum()) for i in items}
        assert r in ranks.values()
    # each user's true ranks are exactly the ranks of its relevant candidates; the held-out item is one of them
    assert np.bincount(res.true_users, minlength=data.users.size).tolist() == rel.sum(axis=1).tolist()
    for u in range(data.users.size):
        assert res.ranks[u] in res.true_ranks[res.true_users == u]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_popular_shares_are_at_least_uniform(seed):
    """Ranking by training popularity puts heavier items above: weight share >= (R - 1)/(N_u - 1)."""
    obs = _random_interactions(seed, n_users=25, n_items=30, p=0.25)
    if (obs.user_counts() >= 2).sum() == 0:
        return
    data = loo_data(obs, rng=seed)
    if (data.weights > 0).sum() < 3:
        return
    try:
        res = score_ranks(Popular(), data, rng=seed)
    except ValueError:  # a user whose other candidates all have zero popularity
        return
    uniform = (res.ranks - 1) / (res.n_candidates - 1)
    assert np.all(res.popularity_shares >= uniform - 1e-12)


def test_good_ranks_file():
    src = read_ranks_file(FIXTURES / "good.csv")
    assert [r.name for r in src.recommenders] == ["A", "B", "C"]
    assert all(r.n_users == 60 and r.popularity_shares is not None for r in src.recommenders)


@pytest.mark.parametrize(
    "name, pattern",
    [
        ("rank_below_one.csv", r"row 2 \(line 3\), column `rank`: `rank` must be >= 1"),
        ("rank_above_candidates.csv", r"row 3 \(line 4\), column `rank`: `rank` must be <= `n_candidates`"),
        ("missing_column.csv", r"missing column\(s\) 'n_candidates'"),
        ("non_numeric.csv", r"row 2 \(line 3\), column `rank`: 'abc' is not an integer"),
        ("fractional.csv", r"row 2 \(line 3\), column `rank`: '2.5' is not an integer"),
        ("duplicate_user.csv", r"row 3 \(line 4\): user 'u1' is listed twice for recommender 'A'"),
        ("too_few_candidates.csv", r"row 2 \(line 3\), column `n_candidates`: `n_candidates` must be >= 2"),
    ],
)
def test_bad_ranks_files_name_row_and_column(name, pattern):
    with pytest.raises(RanksFileError, match=pattern):
        read_ranks_file(FIXTURES / name)


def test_parquet_ranks_file_rows_are_named(tmp_path):
    import pandas as pd

    p = tmp_path / "r.parquet"
    pd.DataFrame({"user": [1, 2], "recommender": ["A", "A"], "rank": [3, 0], "n_candidates": [10, 10]}).to_parquet(p)
    with pytest.raises(RanksFileError, match=r"row 2, column `rank`"):
        read_ranks_file(p)
    with pytest.raises(RanksFileError, match="no such ranks file"):
        read_ranks_file(tmp_path / "absent.csv")

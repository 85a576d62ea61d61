"""Tests of simrec.split: per-user holdout (Tian's thesis §3.5.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.interactions import Interactions
from simrec.split import Split, holdout, holdout_sizes


def random_interactions(seed: int, n_users: int = 200, n_items: int = 60, density: float = 0.15) -> Interactions:
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    u, i = np.nonzero(mask)
    return Interactions.from_pairs(u, i, (n_users, n_items))


def dense(x: Interactions) -> np.ndarray:
    return x.matrix.toarray().astype(int)


# -- sizes -------------------------------------------------------------------------


def test_holdout_sizes_table_at_20_percent():
    # floor(0.2 n + 1/2), worked by hand: 0.2, 0.4 -> 0; 0.6 .. 1.4 -> 1; 1.6 .. 2.4 -> 2; 2.6 -> 3
    n = np.array([0, 1, 2, 3, 7, 8, 12, 13, 100])
    assert holdout_sizes(n, 0.2).tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 20]


def test_holdout_sizes_agree_with_lenskit_round_at_20_percent():
    # LensKit's SampleFrac uses round(n * frac) (half to even); at 0.2 there is no exact
    # half, so the two rules coincide for every profile size.
    n = np.arange(0, 5001)
    assert holdout_sizes(n, 0.2).tolist() == [round(0.2 * float(k)) for k in n]


def test_holdout_sizes_round_half_up_and_float_tolerance():
    # exact halves: 0.5 * 5 = 2.5 -> 3 (LensKit's round would give 2); 0.5 * 3 = 1.5 -> 2
    assert holdout_sizes(np.array([3, 5]), 0.5).tolist() == [2, 3]
    # 0.7 * 45 == 31.499999999999996 in floating point; the documented tolerance counts it as 31.5
    assert 0.7 * 45 < 31.5
    assert holdout_sizes(np.array([45]), 0.7).tolist() == [32]


@pytest.mark.parametrize("bad", [0, 1, 1.2, -0.1])
def test_test_fraction_validated(bad):
    obs = random_interactions(0, 5, 5)
    with pytest.raises(ValueError, match=r"`test_fraction` must be in \(0, 1\); got"):
        holdout(obs, bad, rng=0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_test_fraction_must_be_finite(bad):
    with pytest.raises(ValueError, match="`test_fraction` must be finite"):
        holdout(random_interactions(0, 5, 5), bad, rng=0)


def test_test_fraction_type_and_observed_type():
    obs = random_interactions(0, 5, 5)
    with pytest.raises(TypeError, match="`test_fraction` must be a real number"):
        holdout(obs, "0.2", rng=0)
    with pytest.raises(TypeError, match="`observed` must be an Interactions"):
        holdout(obs.matrix, 0.2, rng=0)
    with pytest.raises(ValueError, match="`profile_sizes` must be >= 0"):
        holdout_sizes(np.array([-1, 2]), 0.2)


# -- the split ---------------------------------------------------------------------


def check_partition(obs: Interactions, split: Split, fraction: float) -> None:
    tr, te = dense(split.train), dense(split.test)
    assert split.train.matrix.shape == obs.matrix.shape == split.test.matrix.shape
    assert ((tr + te) == dense(obs)).all()  # union = observed and disjoint (no cell is 2)
    assert (split.test.user_counts() == holdout_sizes(obs.user_counts(), fraction)).all()
    assert (split.evaluated == (split.test.user_counts() > 0)).all()
    # Interactions' own checks (canonical, binary) passed at construction; sorted rows:
    for part in (split.train, split.test):
        assert part.matrix.has_canonical_format


def test_partition_default_fraction():
    obs = random_interactions(1)
    check_partition(obs, holdout(obs, rng=3), 0.2)


def test_users_with_one_or_two_items_are_not_evaluated():
    obs = Interactions.from_pairs(np.array([0, 1, 1, 2, 2, 2]), np.array([4, 0, 3, 1, 2, 5]), (4, 6))
    s = holdout(obs, 0.2, rng=0)
    assert s.test.user_counts().tolist() == [0, 0, 1, 0]  # profile sizes 1, 2, 3, 0
    assert s.evaluated.tolist() == [False, False, True, False]
    assert s.train.user_counts().tolist() == [1, 2, 2, 0]


def test_same_seed_same_split_and_different_seed_differs():
    obs = random_interactions(2)
    a, b, c = holdout(obs, 0.2, rng=7), holdout(obs, 0.2, rng=7), holdout(obs, 0.2, rng=8)
    assert (dense(a.test) == dense(b.test)).all()
    assert (dense(a.test) != dense(c.test)).any()
    gen = np.random.default_rng(7)  # a Generator is accepted and advanced
    d = holdout(obs, 0.2, rng=gen)
    assert (dense(d.test) == dense(a.test)).all()


def test_ids_follow():
    obs0 = random_interactions(3, 20, 10)
    obs = Interactions(obs0.matrix, np.array([f"u{k}" for k in range(20)]), np.arange(100, 110))
    s = holdout(obs, 0.2, rng=0)
    assert (s.train.user_ids == obs.user_ids).all() and (s.test.item_ids == obs.item_ids).all()


def test_test_items_uniform_within_user():
    # 4000 identical users with items 0..9: each holds out 2 items, so each item is in
    # test with probability 0.2; its frequency has SE sqrt(0.2*0.8/4000) = 0.0063.
    n_users = 4000
    u = np.repeat(np.arange(n_users), 10)
    i = np.tile(np.arange(10), n_users)
    obs = Interactions.from_pairs(u, i, (n_users, 10))
    freq = dense(holdout(obs, 0.2, rng=11).test).mean(axis=0)
    se = math.sqrt(0.2 * 0.8 / n_users)
    assert np.all(np.abs(freq - 0.2) < 4 * se), freq
    # pairs are exchangeable too: P(items 0 and 1 both in test) = C(8,0)/C(10,2) = 1/45
    both = (dense(holdout(obs, 0.2, rng=12).test)[:, :2].sum(axis=1) == 2).mean()
    p = 1 / 45
    assert abs(both - p) < 4 * math.sqrt(p * (1 - p) / n_users)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_users=st.integers(0, 30),
    n_items=st.integers(1, 25),
    density=st.floats(0.0, 1.0),
    fraction=st.floats(0.01, 0.99),
)
def test_partition_invariants(seed, n_users, n_items, density, fraction):
    obs = random_interactions(seed, n_users, n_items, density)
    check_partition(obs, holdout(obs, fraction, rng=seed), fraction)


@pytest.mark.parametrize("seed", [0, 3])
def test_holdout_compiled_partition_gives_the_numpy_split(seed, monkeypatch):
    """The compiled pass over the rows (test positions stamped, both parts written in order) and the numpy
    mask give the same train and test pairs, with empty rows and rows of one or two items."""
    from kernel_paths import use_kernels

    observed = random_interactions(seed, density=0.08)
    with pytest.MonkeyPatch.context() as mp:
        use_kernels(mp, compiled=False)
        want = holdout(observed, 0.3, seed)
    use_kernels(monkeypatch, compiled=True)
    got = holdout(observed, 0.3, seed)
    for a, b in ((got.train, want.train), (got.test, want.test)):
        np.testing.assert_array_equal(a.matrix.indptr, b.matrix.indptr)
        np.testing.assert_array_equal(a.matrix.indices, b.matrix.indices)
        assert a.matrix.indices.dtype == b.matrix.indices.dtype

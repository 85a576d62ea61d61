"""Ratings from graded preference and the Rated sampler wrapper (issue 24; Tian's thesis §5.3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.interactions import Interactions
from simrec.observation import (
    PreferenceSampler,
    Rated,
    Ratings,
    TruncatedPareto,
    UniformSampler,
    observe,
    observed_preference,
)
from simrec.preference import LatentFactor


@pytest.mark.parametrize(
    "ratings",
    [Ratings(noise=0.8), Ratings(shape=2.0, noise=0.3), Ratings(0.5, 5.0, 0.5, 0.7, 0.6), Ratings(1, 10, 1, 1.0, 2.0)],
)
def test_rating_law_is_the_pmf(ratings):
    # 20000 ratings at each of four preference values against the closed-form pmf (chi-square)
    for p in (0.0, 0.15, 0.6, 1.0):
        r = ratings.rate(np.full(20_000, p), np.random.default_rng(int(p * 100)))
        lv = ratings.levels
        obs = np.array([(np.abs(r - x) < 1e-6).sum() for x in lv])
        assert obs.sum() == len(r)  # every rating is a level
        exp = ratings.pmf(np.array([p]))[0] * len(r)
        keep = exp >= 5
        o, e = np.append(obs[keep], obs[~keep].sum()), np.append(exp[keep], exp[~keep].sum())
        if e[-1] == 0:
            assert o[-1] == 0
            o, e = o[:-1], e[:-1]
        assert stats.chisquare(o, e).pvalue > 1e-4, p


def test_noise_free_ratings_are_the_thesis_scale_times_preference():
    # sigma = 0, kappa = 1: the level ceil(5 p) (floor(5 p) + 1 below 1, 5 at p = 1); uniform p: uniform ratings
    r = Ratings()
    p = np.array([0.01, 0.19, 0.21, 0.5, 0.79, 0.81, 0.99, 1.0, 0.0])
    assert r.rate(p, None).tolist() == [1, 1, 2, 3, 4, 5, 5, 5, 1]
    u = np.random.default_rng(1).random(50_000)
    counts = np.bincount(r.rate(u, None).astype(int))[1:]
    assert stats.chisquare(counts).pvalue > 1e-3
    assert Ratings(shape=3.0).rate(u, None).mean() < r.rate(u, None).mean()  # kappa > 1 lowers the ratings


def test_p_at_least_is_the_pmf_tail_and_edges():
    r = Ratings(noise=0.7, shape=1.3)
    p = np.linspace(0, 1, 11)
    pmf = r.pmf(p)
    np.testing.assert_allclose(pmf.sum(axis=1), 1.0)
    np.testing.assert_allclose(r.p_at_least(p, 4), pmf[:, 3:].sum(axis=1), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(r.p_at_least(p, 3.5), pmf[:, 3:].sum(axis=1), rtol=1e-9, atol=1e-15)  # the next level up
    assert (r.p_at_least(p, 1) == 1).all() and (r.p_at_least(p, 5.5) == 0).all()
    np.testing.assert_array_equal(Ratings().p_at_least(p, 4), (p >= 0.6).astype(float))


def test_validation():
    with pytest.raises(ValueError, match="`low` must be in"):
        Ratings(low=0.0)
    with pytest.raises(ValueError, match="`high` must be in"):
        Ratings(low=3.0, high=2.0)
    with pytest.raises(ValueError, match="`step` must divide"):
        Ratings(step=0.3)
    with pytest.raises(ValueError, match="`noise`"):
        Ratings(noise=-1.0)
    with pytest.raises(ValueError, match="`shape`"):
        Ratings(shape=0.0)
    with pytest.raises(TypeError, match="`ratings` must be a Ratings"):
        Rated(UniformSampler(), "5-star")
    with pytest.raises(TypeError, match="`sampler`"):
        Rated(object(), Ratings())


def _truth() -> Interactions:
    # 3 users x 6 items, graded by counts: preferences 1, 0.5 | 0.25, 1 | 1
    return Interactions.from_csr([0, 2, 4, 5], [0, 3, 1, 2, 5], (3, 6), sort=False, gains=np.array([2, 1, 1, 4, 3]))


def test_observed_preference_looks_up_the_truth_and_zero_for_dislikes():
    truth = _truth()
    obs = Interactions.from_csr([0, 3, 4, 6], [0, 1, 3, 2, 4, 5], (3, 6), sort=False)
    np.testing.assert_allclose(observed_preference(truth, obs), [1.0, 0.0, 0.5, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="the truth's shape"):
        observed_preference(truth, Interactions.from_pairs(np.array([0]), np.array([0]), (2, 6)))


def test_rated_sampler_carries_ratings_and_filters_like_binarize():
    truth = LatentFactor(400, 80, 3, 1.5, 1.0, 15.0, 0.5).generate(1)
    sizes = TruncatedPareto(3, 1.0, 30).sample(truth.user_counts(), 2)
    ratings = Ratings(noise=0.6)
    inner = PreferenceSampler(1.0, 1.0, 0.4)
    full = Rated(inner, ratings).sample(truth, sizes, 3)
    assert full.gains.dtype == np.float32 and set(np.unique(full.gains)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    # the same draws without ratings give the same pairs (ratings come after the sampler's draws)
    gen = np.random.default_rng(3)
    assert (inner.sample(truth, sizes, gen).matrix != full.matrix).nnz == 0
    pref = observed_preference(truth, full)
    # dislikes (preference 0) rate low, likes by their preference
    assert full.gains[pref == 0].mean() < 1.6 and full.gains[pref > 0.8].mean() > 4.0
    kept = Rated(inner, ratings, min_rating=4).sample(truth, sizes, 3)
    assert kept.gains.min() >= 4 and (kept.matrix.multiply(full.matrix) != kept.matrix).nnz == 0
    assert kept.n_pairs == (full.gains >= 4).sum()
    obs = observe(truth, TruncatedPareto(3, 1.0, 30), Rated(inner, ratings, min_rating=4), 4)
    assert obs.observed.gains is not None and obs.observed.gains.min() >= 4 and len(obs.sizes) == truth.n_users
    assert Rated(inner, ratings).label == "preference-rated"


def test_rated_propensity_against_frequencies():
    # P(liked pair observed and rated >= 4) = pi * P(rating >= 4 | p): 3000 copies of a small truth in one draw
    reps = 3000
    base = _truth()
    truth = base.select_users(np.tile(np.arange(3), reps))
    sizes = np.tile([1, 1, 1], reps)
    rated = Rated(PreferenceSampler(0.5, 1.0), Ratings(noise=0.9), min_rating=4)
    p = rated.propensity(truth, sizes)
    got = rated.sample(truth, sizes, 5)
    hit = np.asarray(got.matrix[truth.row_of_pairs(), truth.matrix.indices]).ravel().reshape(reps, -1)
    p = p.reshape(reps, -1)
    assert np.allclose(p, p[0])
    freq, p = hit.mean(axis=0), p[0]
    z2 = (freq - p) ** 2 / (p * (1 - p) / reps)
    assert stats.chi2.sf(z2.sum(), len(p)) > 1e-4

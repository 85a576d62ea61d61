"""Propensities of the thesis's samplers (issue 24): exact for the uniform one, Monte Carlo for successive sampling."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from simrec.interactions import Interactions
from simrec.observation import PopularitySampler, UniformSampler
from simrec.preference import IBP


def _successive_inclusion(w: np.ndarray, n: int) -> np.ndarray:
    """Exact inclusion probabilities of n draws without replacement, each ∝ w among the remaining (enumeration)."""
    pi = np.zeros(len(w))
    for seq in itertools.permutations(range(len(w)), n):
        p, left = 1.0, w.sum()
        for j in seq:
            p *= w[j] / left
            left -= w[j]
        pi[list(seq)] += p
    return pi


def _star_truth() -> Interactions:
    """Rows over 6 items of very unequal popularity (extra single-item rows set each item's likers)."""
    core = [[0, 1, 2, 3, 4, 5], [0, 2, 4, 5], [1, 3, 5], [0, 1, 2, 3, 4]]
    extra = [0] * 30 + [1] * 12 + [2] * 5 + [3] * 2 + [5] * 8  # item 4 only in the core rows
    rows = core + [[i] for i in extra]
    indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows])))
    return Interactions.from_csr(indptr, np.concatenate(rows), (len(rows), 6), sort=False)


def test_uniform_propensity_exact():
    truth = _star_truth()
    sizes = np.zeros(truth.n_users, dtype=np.int64)
    sizes[:4] = [2, 9, 1, 0]
    pi = UniformSampler().propensity(truth, sizes)
    ptr = truth.matrix.indptr
    np.testing.assert_allclose(pi[ptr[0] : ptr[1]], 2 / 6)
    np.testing.assert_allclose(pi[ptr[1] : ptr[2]], 1.0)  # size above the likes: every like
    np.testing.assert_allclose(pi[ptr[2] : ptr[3]], 1 / 3)
    assert (pi[ptr[3] :] == 0).all()


@pytest.mark.parametrize("exponent", [1.0, 2.0, -0.5])
def test_successive_propensity_against_exact_enumeration(exponent):
    # the Rao-Blackwellised estimate of every pair of rows 0..3 within 4 of its standard errors of the exact value,
    # the standard errors below the binomial SE of the plain frequency of the same 64 draws
    truth = _star_truth()
    sizes = np.zeros(truth.n_users, dtype=np.int64)
    sizes[:4] = [3, 2, 2, 4]
    s = PopularitySampler(exponent=exponent)
    mean, se = s.propensity_estimate(truth, sizes, np.random.default_rng(1))
    w = truth.item_counts().astype(float) ** exponent
    ptr, idx = truth.matrix.indptr, truth.matrix.indices
    for r in range(4):
        exact = _successive_inclusion(w[idx[ptr[r] : ptr[r + 1]]], int(sizes[r]))
        got, err = mean[ptr[r] : ptr[r + 1]], se[ptr[r] : ptr[r + 1]]
        assert np.all(np.abs(got - exact) <= 4 * err + 1e-12), (r, got, exact, err)
        assert np.all(err <= np.sqrt(exact * (1 - exact) / 64) + 1e-12)  # below the plain frequency's SE
        assert abs(got.sum() - sizes[r]) <= 4 * err.sum() + 1e-9
    assert (mean[ptr[4] :] == 0).all() and (se[ptr[4] :] == 0).all()  # size 0: never observed


def test_rao_blackwell_beats_the_indicator():
    # the estimator's spread over seeds, against the binomial SE of the plain frequency of the same 64 draws
    truth = _star_truth()
    sizes = np.zeros(truth.n_users, dtype=np.int64)
    sizes[0] = 3
    s = PopularitySampler()
    ests = np.array([s.propensity(truth, sizes, seed, n_draws=64)[:6] for seed in range(40)])
    w = truth.item_counts().astype(float)
    exact = _successive_inclusion(w, 3)
    assert np.all(ests.std(axis=0) < 0.5 * np.sqrt(exact * (1 - exact) / 64))
    assert np.all(np.abs(ests.mean(axis=0) - exact) < 4 * ests.std(axis=0) / np.sqrt(40) + 1e-12)


def test_propensities_against_observation_frequencies_on_an_ibp_truth():
    # empirical frequencies of the popularity sampler over 300 draws against its estimated propensities:
    # z-scores over every partial row's pairs, sum of z^2 against chi2 (pairs of different rows independent;
    # within a row the fixed size makes them slightly negatively dependent, which only lowers the sum)
    truth = IBP(150, 12.0, 1.0, 0.3).generate(3)
    caps = truth.user_counts()
    sizes = np.maximum(caps // 2, 1)
    s = PopularitySampler()
    mean, se = s.propensity_estimate(truth, sizes, np.random.default_rng(4), n_draws=256)
    reps = 300
    gen = np.random.default_rng(5)
    hits = np.zeros(truth.n_pairs)
    rows = truth.row_of_pairs()
    for _ in range(reps):
        obs = s.sample(truth, sizes, gen)
        hits += np.asarray(obs.matrix[rows, truth.matrix.indices]).ravel()
    freq = hits / reps
    inner = (mean > 0) & (mean < 1)
    var = mean * (1 - mean) / reps + se**2
    z2 = ((freq - mean) ** 2 / var)[inner]
    assert stats.chi2.sf(z2.sum(), inner.sum()) > 1e-4
    # each row's estimates sum to its size up to their errors (triangle inequality: no independence assumed)
    assert np.all(
        np.abs(np.bincount(rows, weights=mean) - np.minimum(sizes, caps)) <= 4 * np.bincount(rows, weights=se) + 1e-9
    )


def test_n_draws_validated():
    truth = _star_truth()
    with pytest.raises(ValueError, match="`n_draws`"):
        PopularitySampler().propensity(truth, np.ones(truth.n_users, dtype=np.int64), 0, n_draws=1)

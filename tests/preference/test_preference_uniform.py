"""Uniform true-preference model (thesis §3.1.1)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.preference import Uniform, truncated_poisson_pmf


def test_truncated_poisson_pmf_matches_scipy():
    # reference: scipy's Poisson pmf renormalised on [1, n_max]
    for lam, n_max in [(3.0, 10), (0.2, 5), (40.0, 30), (7.5, 1000)]:
        k, p = truncated_poisson_pmf(lam, n_max)
        full = np.arange(1, n_max + 1)
        ref = stats.poisson.pmf(full, lam)
        ref /= ref.sum()
        got = np.zeros(n_max)
        got[k - 1] = p
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-100)  # window drops < e^-800 mass


def test_truncated_poisson_pmf_extremes():
    k, p = truncated_poisson_pmf(1e-6, 10**9)  # mass ~ all on 1; window keeps it cheap
    assert k[0] == 1 and p[0] > 1 - 1e-5 and len(k) < 200
    k, p = truncated_poisson_pmf(1e6, 50)  # lam >> n_max: all mass at n_max
    assert k[-1] == 50 and p[-1] > 0.999


def test_expected_pairs_is_exact_truncated_mean():
    m = Uniform(100, 20, 15.0)
    x = np.arange(1, 21)
    w = stats.poisson.pmf(x, 15.0)
    assert m.expected_pairs() == pytest.approx(100 * (x @ w) / w.sum(), rel=1e-12)
    assert m.expected_items() == 20


def test_profile_sizes_follow_truncated_poisson():
    # lam close to n_items so the upper truncation matters
    m = Uniform(20000, 30, 25.0)
    x = m.generate(0)
    sizes = x.user_counts()
    k, p = m.size_pmf()
    mean = k @ p
    sd = np.sqrt(((k - mean) ** 2) @ p)
    assert abs(sizes.mean() - mean) < 4 * sd / np.sqrt(len(sizes))
    assert sizes.min() >= 1 and sizes.max() <= 30
    # full law: chi-square GOF on bins with expected count >= 5, tail pooled
    exp = p * len(sizes)
    obs = np.bincount(sizes - k[0], minlength=len(k))[: len(k)]
    keep = exp >= 5
    o = np.append(obs[keep], obs[~keep].sum())
    e = np.append(exp[keep], exp[~keep].sum())
    if e[-1] == 0:
        o, e = o[:-1], e[:-1]
    assert stats.chisquare(o, e * o.sum() / e.sum()).pvalue > 1e-3


def test_items_uniform():
    m = Uniform(3000, 200, 60.0)
    x = m.generate(1)
    sizes = x.user_counts()
    q = sizes / m.n_items  # each item is in row u with probability s_u / n_items
    exp = q.sum()
    var = (q * (1 - q)).sum()  # exact variance of an item's count given the sizes
    z = (x.item_counts() - exp) / np.sqrt(var)
    # sum of squared z over items ~ chi2(n_items - 1) (the total is fixed)
    assert stats.chi2.sf((z**2).sum(), m.n_items - 1) > 1e-3
    assert x.matrix.has_canonical_format


def test_extreme_lambdas():
    full = Uniform(50, 7, 1e4).generate(2)
    assert np.all(full.user_counts() == 7)
    ones = Uniform(50, 7, 1e-9).generate(2)
    assert np.all(ones.user_counts() == 1)


def test_same_seed_same_matrix():
    m = Uniform(500, 100, 20.0)
    a, b, c = m.generate(5), m.generate(5), m.generate(6)
    assert (a.matrix != b.matrix).nnz == 0
    assert (a.matrix != c.matrix).nnz > 0
    g = np.random.default_rng(7)
    assert (m.generate(g).matrix != m.generate(g).matrix).nnz > 0  # a Generator advances

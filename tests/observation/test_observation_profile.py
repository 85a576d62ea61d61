"""Profile-size models: truncated Pareto and truncated beta-binomial (thesis §3.2.1)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.observation import TruncatedBetaBinomial, TruncatedPareto


def _chi2_gof(obs, exp):
    keep = exp >= 5
    o = np.append(obs[keep], obs[~keep].sum())
    e = np.append(exp[keep], exp[~keep].sum())
    if e[-1] < 1e-12:
        o, e = o[:-1], e[:-1]
    return stats.chisquare(o, e * o.sum() / e.sum()).pvalue


# -- truncated Pareto -----------------------------------------------------------
def test_pareto_cdf_ppf():
    d = TruncatedPareto(20.0, 0.7, 2000.0)
    x = np.array([20.0, 25.0, 100.0, 1999.0, 2000.0])
    # closed form: (1 - (m_low/x)^a) / (1 - (m_low/m_high)^a)
    want = (1 - (20 / x) ** 0.7) / (1 - (20 / 2000) ** 0.7)
    np.testing.assert_allclose(d.cdf(x), want, rtol=1e-12)
    assert d.cdf(5.0) == 0 and d.cdf(1e6) == 1
    p = np.linspace(0, 1, 11)
    np.testing.assert_allclose(d.cdf(d.ppf(p)), p, atol=1e-12)
    with pytest.raises(ValueError, match="`p`"):
        d.ppf(1.5)


def test_pareto_continuous_draws_ks():
    d = TruncatedPareto(1.1, 0.4, 9000.0)
    x = d._sample_continuous(20000, 0)
    assert x.min() >= 1.1 and x.max() <= 9000.0
    assert stats.kstest(x, d.cdf).pvalue > 1e-3
    # conditioned on x < upper: cdf(x) / cdf(upper)
    up = 50.0
    y = d._sample_continuous(20000, 1, np.full(20000, up))
    assert y.max() < up
    assert stats.kstest(y, lambda t: d.cdf(t) / d.cdf(up)).pvalue > 1e-3


def test_pareto_sizes_discrete_law_without_capping():
    d = TruncatedPareto(3.5, 1.2, 60.0)
    s = d.sample(np.full(30000, 10**6), 2)
    assert s.min() >= 3 and s.max() <= 60
    k = np.arange(3, 61)
    exp = (d.cdf(k + 1) - d.cdf(k)) * len(s)  # P(floor(x) = k) = F(k+1) - F(k)
    assert _chi2_gof(np.bincount(s, minlength=61)[3:61], exp) > 1e-3


def test_pareto_sizes_at_least_one():
    s = TruncatedPareto(0.2, 0.5, 10.0).sample(np.full(5000, 100), 3)
    assert s.min() == 1 and s.max() <= 10


def test_pareto_clamp_piles_mass_at_capacity_redraw_does_not():
    d = TruncatedPareto(5.0, 0.8, 500.0)
    n, cap = 20000, 12
    caps = np.full(n, cap)
    clamp = d.sample(caps, 4)
    redraw = TruncatedPareto(5.0, 0.8, 500.0, redraw=True).sample(caps, 4)
    assert clamp.max() == cap and redraw.max() == cap and clamp.min() >= 5 and redraw.min() >= 5
    p_clamp = 1 - d.cdf(cap)  # P(floor(x) >= cap)
    p_redraw = (d.cdf(cap + 1) - d.cdf(cap)) / d.cdf(cap + 1)  # P(floor(x) = cap | x < cap + 1)
    for s, p in ((clamp, p_clamp), (redraw, p_redraw)):
        assert abs(np.mean(s == cap) - p) < 4 * np.sqrt(p * (1 - p) / n)
    assert p_clamp > 5 * p_redraw
    # redraw: the whole law is the one conditioned on size <= cap
    k = np.arange(5, cap + 1)
    exp = (d.cdf(k + 1) - d.cdf(k)) / d.cdf(cap + 1) * n
    assert _chi2_gof(np.bincount(redraw, minlength=cap + 1)[5:], exp) > 1e-3


def test_pareto_capacity_edge_cases():
    caps = np.array([0, 1, 3, 0, 100])
    for redraw in (False, True):
        s = TruncatedPareto(10.0, 1.0, 50.0, redraw=redraw).sample(caps, 5)
        assert s.dtype == np.int64
        assert s[0] == 0 and s[3] == 0
        # capacity below m_low can never be satisfied: clamped under both policies
        assert s[1] == 1 and s[2] == 3
        assert 10 <= s[4] <= 50


def test_pareto_same_seed_same_sizes():
    d = TruncatedPareto(2.0, 0.6, 300.0, redraw=True)
    caps = np.random.default_rng(0).integers(0, 400, 1000)
    assert np.array_equal(d.sample(caps, 9), d.sample(caps, 9))
    assert not np.array_equal(d.sample(caps, 9), d.sample(caps, 10))


# -- truncated beta-binomial ----------------------------------------------------
def test_betabinomial_pmf_matches_scipy():
    d = TruncatedBetaBinomial(80, 0.6, 4.0, n_min=5)
    k = np.arange(0, 90)
    want = np.where((k >= 5) & (k <= 80), stats.betabinom.pmf(k - 5, 75, 0.6, 4.0), 0.0)
    np.testing.assert_allclose(d.pmf(k), want, rtol=1e-10, atol=1e-300)
    assert d.cdf(80) == pytest.approx(1.0) and d.cdf(4) == 0
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    q = d.ppf(p)
    assert np.all(d.cdf(q) >= p - 1e-12) and np.all(d.cdf(q - 1) < p + 1e-12)


@pytest.mark.parametrize("redraw", [False, True])
def test_betabinomial_sizes_law(redraw):
    d = TruncatedBetaBinomial(60, 0.8, 2.0, n_min=2, redraw=redraw)
    n, cap = 30000, 25
    s = d.sample(np.full(n, cap), 6)
    assert s.min() >= 2 and s.max() <= cap
    k = np.arange(2, cap + 1)
    pk = d.pmf(k)
    if redraw:
        exp = pk / pk.sum() * n
    else:  # clamp: the mass above cap lands on cap
        exp = pk.copy()
        exp[-1] += 1 - d.cdf(cap)
        exp *= n
    assert _chi2_gof(np.bincount(s, minlength=cap + 1)[2:], exp) > 1e-3


def test_betabinomial_uncapped_and_edges():
    d = TruncatedBetaBinomial(40, 2.0, 3.0)
    s = d.sample(np.full(20000, 1000), 7)
    k = np.arange(1, 41)
    assert _chi2_gof(np.bincount(s, minlength=41)[1:], d.pmf(k) * len(s)) > 1e-3
    e = TruncatedBetaBinomial(40, 2.0, 3.0, n_min=10, redraw=True).sample(np.array([0, 4, 100]), 0)
    assert e[0] == 0 and e[1] == 4 and 10 <= e[2] <= 40
    assert len(d.sample(np.zeros(0, dtype=int), 0)) == 0


# -- validation -----------------------------------------------------------------
BAD = [
    (TruncatedPareto, dict(m_low=0.0, alpha=1.0, m_high=10.0), "m_low", ValueError),
    (TruncatedPareto, dict(m_low=-1.0, alpha=1.0, m_high=10.0), "m_low", ValueError),
    (TruncatedPareto, dict(m_low=5.0, alpha=0.0, m_high=10.0), "alpha", ValueError),
    (TruncatedPareto, dict(m_low=5.0, alpha=1.0, m_high=5.0), "m_high", ValueError),
    (TruncatedPareto, dict(m_low=5.0, alpha=1.0, m_high=4.0), "m_high", ValueError),
    (TruncatedPareto, dict(m_low=5.0, alpha=1.0, m_high=9.0, redraw="yes"), "redraw", TypeError),
    (TruncatedBetaBinomial, dict(n_max=10, a=0.0, b=1.0), "a", ValueError),
    (TruncatedBetaBinomial, dict(n_max=10, a=1.0, b=-1.0), "b", ValueError),
    (TruncatedBetaBinomial, dict(n_max=1, a=1.0, b=1.0), "n_max", ValueError),
    (TruncatedBetaBinomial, dict(n_max=10, a=1.0, b=1.0, n_min=0), "n_min", ValueError),
    (TruncatedBetaBinomial, dict(n_max=10.5, a=1.0, b=1.0), "n_max", TypeError),
]


@pytest.mark.parametrize("cls,kw,name,exc", BAD, ids=[f"{c.__name__}-{n}-{i}" for i, (c, _, n, _) in enumerate(BAD)])
def test_bad_parameter_raises_naming_it(cls, kw, name, exc):
    with pytest.raises(exc, match=f"`{name}`"):
        cls(**kw)


@pytest.mark.parametrize(
    "cap,exc",
    [(np.array([1.0, 2.0]), TypeError), (np.array([[1, 2]]), ValueError), (np.array([3, -1]), ValueError)],
)
def test_bad_capacity(cap, exc):
    for d in (TruncatedPareto(1.0, 1.0, 5.0), TruncatedBetaBinomial(5, 1.0, 1.0)):
        with pytest.raises(exc, match="`capacity`"):
            d.sample(cap, 0)

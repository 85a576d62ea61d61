"""Hierarchical Poisson factorization truth (Gopalan, Hofman & Blei, UAI 2015, §2; issue 24)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import simrec.preference.hpf as hpf_mod
from simrec.interactions import Interactions
from simrec.preference import HPF, PreferenceModel

PAPER = dict(a=0.3, a_prime=0.3, b_prime=1.0, c=0.3, c_prime=0.3, d_prime=1.0)  # the paper's defaults


def _chi2_pvalue(obs: np.ndarray, exp: np.ndarray) -> float:
    """Chi-square GOF with the cells of fewer than 5 expected pooled into one (dropped when there are none)."""
    keep = exp >= 5
    o, e = obs[keep], exp[keep]
    if (~keep).any():
        o, e = np.append(o, obs[~keep].sum()), np.append(e, exp[~keep].sum())
    return stats.chisquare(o, e * o.sum() / e.sum()).pvalue


def _canonical(x: Interactions) -> bool:
    ref = Interactions.from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape)
    return (ref.matrix != x.matrix).nnz == 0 and x.matrix.has_canonical_format


def test_canonical_graded_reproducible():
    m = HPF(400, 120, 4, a=0.5, a_prime=2.0, b_prime=1.0, c=0.5, c_prime=2.0, d_prime=1.0)
    x, y, z = m.generate(0), m.generate(0), m.generate(1)
    assert x.matrix.shape == (400, 120) and _canonical(x)
    assert x.gains.dtype == np.int32 and x.gains.min() >= 1 and (x.gains > 1).any()
    assert (x.matrix != y.matrix).nnz == 0 and np.array_equal(x.gains, y.gains)
    assert (x.matrix != z.matrix).nnz > 0
    assert isinstance(m, PreferenceModel) and m.expected_items() == 120
    # preference: the count over the user's largest (Interactions.pair_preference's rule for count gains)
    p = x.pair_preference()
    rows = x.row_of_pairs()
    top = np.zeros(x.n_users)
    np.maximum.at(top, rows, x.gains)
    np.testing.assert_allclose(p, x.gains / top[rows])


def _block_counts(m: HPF, theta: np.ndarray, beta: np.ndarray, seed: int, cut: str = "auto") -> np.ndarray:
    """Dense (users x items) counts y drawn by the generator's block step for fixed latent variables.

    ``cut``: the rank from which cold events come from the streams: "auto" (the generator's), "zero" (every cold
    event from the streams), "all" (every cold event by inverse CDF).
    """
    gen = np.random.default_rng(seed)
    order, neg, asc = m._tables(beta)
    cuts = {"auto": m._cuts(theta, neg), "zero": np.zeros(m.n_factors, dtype=np.int64)}
    cuts["all"] = np.full(m.n_factors, m.n_items, dtype=np.int64)
    streams = m._tail_streams(gen, theta, order, neg, asc, cuts[cut], len(theta))
    per_user, items, y = m._block(gen, streams, theta, order, neg, asc, cuts[cut])
    out = np.zeros((len(theta), m.n_items), dtype=np.int64)
    out[np.repeat(np.arange(len(theta)), per_user), items] = y
    return out


@pytest.mark.parametrize(
    "kinds, path",
    [
        ([[1.0, 2.0], [1.5, 0.5]], "stream"),  # no hot cell: the components' item streams
        ([[8.0, 16.0], [12.0, 4.0]], "hot"),  # hot cells drawn directly, cold events by inverse CDF
        ([[30.0, 40.0], [25.0, 60.0]], "row"),  # more hot cells than items: the user's row at full rates
    ],
)
@pytest.mark.parametrize("cut", ["auto", "zero", "all"])
def test_counts_are_independent_poisson_given_theta_and_beta(kinds, path, cut):
    # y_ui ~ Poisson(theta_u . beta_i), independently over items: per cell, the count histogram against the Poisson
    # pmf (chi-square, tail pooled), and the joint law of the like indicators over the 2**4 subsets (product law)
    m = HPF(1, 4, 2, **PAPER)
    beta = np.array([[0.2, 0.05], [0.1, 0.3], [0.02, 0.02], [0.5, 0.1]])
    kinds = np.array(kinds)
    reps = 6000
    theta = np.repeat(kinds, reps, axis=0)
    n_hot = ((kinds[:, :, None] * beta.T[None]) > 1).sum(axis=(1, 2))
    assert {"stream": n_hot == 0, "hot": (n_hot > 0) & (n_hot <= 4), "row": n_hot > 4}[path].all()
    y = _block_counts(m, theta, beta, 3, cut)
    for k, th in enumerate(kinds):
        block = y[k * reps : (k + 1) * reps]
        rate = th @ beta.T
        for i in range(4):
            top = int(stats.poisson.ppf(0.999, rate[i])) + 1
            obs = np.bincount(np.minimum(block[:, i], top), minlength=top + 1)
            exp = stats.poisson.pmf(np.arange(top + 1), rate[i]) * reps
            exp[-1] = stats.poisson.sf(top - 1, rate[i]) * reps
            assert _chi2_pvalue(obs, exp) > 1e-4, (k, i)
        like = -np.expm1(-rate)
        subsets = list(itertools.product([0, 1], repeat=4))
        law = np.array([np.prod(np.where(s, like, 1 - like)) for s in subsets])
        code = (block > 0).astype(int) @ (2 ** np.arange(3, -1, -1))
        assert _chi2_pvalue(np.bincount(code, minlength=16), law * reps) > 1e-4, k


def test_a_block_mixing_hot_and_cold_keeps_rows_sorted_and_sums_components():
    # users with huge, middling, zero and small preferences: hot cells in one component, stream events in
    # another; every row sorted and unique, counts summed over components
    m = HPF(1, 6, 2, **PAPER)
    beta = np.array([[0.3, 0.01], [0.3, 0.02], [0.001, 0.3], [0.3, 0.3], [0.05, 0.0], [0.3, 0.1]])
    theta = np.array([[1e6, 1e6], [0.1, 0.2], [50.0, 1.0], [0.0, 0.0], [0.3, 8.0]])
    y = _block_counts(m, theta, beta, 0)
    assert (y[0] > 0).sum() == 6 - (beta[:, 0] + beta[:, 1] == 0).sum() and (y[3] == 0).all()
    assert y[0, 0] > 1e5  # rate 1e6 * 0.31
    order, neg, asc = m._tables(beta)
    cut = m._cuts(theta, neg)
    streams = m._tail_streams(np.random.default_rng(6), theta, order, neg, asc, cut, len(theta))
    per_user, items, g = m._block(np.random.default_rng(5), streams, theta, order, neg, asc, cut)
    ends = np.cumsum(per_user)
    for r in range(len(theta)):
        assert np.all(np.diff(items[ends[r] - per_user[r] : ends[r]]) > 0)
    assert g.min() >= 1 and g.dtype == np.int32


@pytest.mark.parametrize(
    "params",
    [
        PAPER,
        dict(a=1.0, a_prime=3.0, b_prime=0.5, c=0.7, c_prime=2.0, d_prime=2.0),
        dict(a=0.1, a_prime=0.5, b_prime=2.0, c=2.0, c_prime=0.8, d_prime=0.3),
        dict(a=5.0, a_prime=50.0, b_prime=1.0, c=5.0, c_prime=50.0, d_prime=1.0),
    ],
)
@pytest.mark.parametrize("K", [1, 6])
def test_no_like_probability_quadrature_against_monte_carlo(params, K):
    # E[exp(-theta_u . beta_i)] over independent users and items: Monte Carlo over the latent variables
    # (fresh users and items every batch, a bounded [0, 1] average: SE from the batches)
    m = HPF(1, 1, K, **params)
    rng = np.random.default_rng(11)
    vals = []
    for _ in range(60):
        beta = HPF(1, 200, K, **params)._item_factors(rng)
        theta = m._user_factors(rng, 200)
        vals.append(np.exp(-np.minimum(theta @ beta.T, 800)).mean())
    vals = np.array(vals)
    se = vals.std(ddof=1) / np.sqrt(len(vals))
    assert abs(m.no_like_probability() - vals.mean()) < 4 * se + 2e-4


def test_expected_pairs_against_generated_truths():
    m = HPF(300, 150, 3, a=0.4, a_prime=1.5, b_prime=1.0, c=0.5, c_prime=1.5, d_prime=1.0)
    pairs = np.array([m.generate(40 + s).n_pairs for s in range(40)], dtype=float)
    se = pairs.std(ddof=1) / np.sqrt(len(pairs))
    assert abs(pairs.mean() - m.expected_pairs()) < 4 * se
    assert m.expected_pairs() == pytest.approx(300 * 150 * (1 - m.no_like_probability()))


def test_latent_moments():
    # theta_uk = G_a / xi_u, xi ~ Gamma(a', rate a'/b'): E[theta] = a E[1/xi] = a (a'/b') / (a' - 1) (a' > 1);
    # E[beta] = c (c'/d') / (c' - 1); Var[log xi] = trigamma(a')
    m = HPF(1, 20_000, 2, a=0.7, a_prime=6.0, b_prime=2.0, c=1.5, c_prime=8.0, d_prime=0.5)
    rng = np.random.default_rng(12)
    theta, beta = m._user_factors(rng, 20_000), m._item_factors(rng)
    for x, mean in ((theta, 0.7 * 3.0 / 5.0), (beta, 1.5 * 16.0 / 7.0)):
        assert abs(x.mean() - mean) < 4 * x.std() / np.sqrt(x.size)
    # components of one user share xi: their correlation is positive (the hierarchy), none across users
    assert np.corrcoef(theta[:, 0], theta[:, 1])[0, 1] > 0.05


def test_heavy_tails_at_small_shapes():
    # a' = c' = 0.3 (the paper's shapes), sparse means: E[1/xi] is infinite, a few users and items carry
    # astronomical rates (hot cells, drawn directly; counts capped at int32), activity and popularity heavy-tailed
    m = HPF(2000, 300, 5, a=0.3, a_prime=0.3, b_prime=100.0, c=0.3, c_prime=0.3, d_prime=100.0)
    x = m.generate(13)
    sizes, pops = x.user_counts(), x.item_counts()
    assert sizes.max() > 5 * np.median(sizes) and pops.max() > 5 * np.median(pops)
    assert x.gains.max() <= np.iinfo(np.int32).max and x.gains.max() > 1e6
    assert abs(x.n_pairs - m.expected_pairs()) < 0.1 * m.expected_pairs()


def test_many_blocks_same_law(monkeypatch):
    m = HPF(300, 60, 3, a=0.5, a_prime=1.2, b_prime=1.0, c=0.5, c_prime=1.2, d_prime=1.0)
    one = np.array([m.generate(60 + s).n_pairs for s in range(20)], dtype=float)
    monkeypatch.setattr(hpf_mod, "_BLOCK_CELLS", 60 * 15)
    monkeypatch.setattr(hpf_mod, "_BLOCK_DRAWS", 50)
    many = np.array([m.generate(90 + s).n_pairs for s in range(20)], dtype=float)
    assert stats.ttest_ind(one, many, equal_var=False).pvalue > 1e-3
    x = m.generate(3)
    assert _canonical(x) and x.gains.min() >= 1


@settings(max_examples=40, deadline=None)
@given(
    n_users=st.integers(1, 30),
    n_items=st.integers(1, 25),
    K=st.integers(1, 4),
    shapes=st.tuples(*[st.sampled_from([0.05, 0.3, 1.0, 4.0])] * 4),
    means=st.tuples(st.sampled_from([0.1, 1.0, 10.0]), st.sampled_from([0.1, 1.0, 10.0])),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariants(n_users, n_items, K, shapes, means, seed):
    a, ap, c, cp = shapes
    m = HPF(n_users, n_items, K, a=a, a_prime=ap, b_prime=means[0], c=c, c_prime=cp, d_prime=means[1])
    x = m.generate(seed)
    assert x.matrix.shape == (n_users, n_items) and _canonical(x)
    assert len(x.gains) == x.n_pairs and (x.n_pairs == 0 or x.gains.min() >= 1)
    assert 0 <= m.expected_pairs() <= n_users * n_items * (1 + 1e-9)


@pytest.mark.parametrize("cut", ["auto", "zero", "all"])
def test_cell_totals_with_one_dominant_item(cut):
    # one item far above the others in both components: hot for every user, the 29 others cold (drawn by
    # inverse CDF above the hot rank, cell by cell or from the streams, by the cut); each cell's total over the
    # users is Poisson(sum of its rates), independent over cells: chi-square of the standardized totals
    m = HPF(1, 30, 2, **PAPER)
    beta = np.column_stack((np.r_[5.0, np.linspace(0.005, 0.03, 29)], np.r_[4.0, np.linspace(0.03, 0.002, 29)]))
    theta = np.repeat(np.array([[0.5, 0.3], [2.0, 0.8], [40.0, 0.1]]), 3000, axis=0)
    y = _block_counts(m, theta, beta, 7, cut)
    rate = (theta @ beta.T).sum(axis=0)
    z2 = (y.sum(axis=0) - rate) ** 2 / rate
    assert stats.chi2.sf(z2.sum(), 30) > 1e-4
    like = -np.expm1(-(theta @ beta.T)).sum(axis=0)
    assert stats.chi2.sf((((y > 0).sum(axis=0) - like) ** 2 / like).sum(), 30) > 1e-4


def test_only_the_product_of_the_mean_activity_and_popularity_matters():
    # theta scales with 1/b', beta with 1/d': the same product, the same truth for a seed (and expectation)
    a = HPF(200, 60, 3, a=0.3, a_prime=0.5, b_prime=2.0, c=0.4, c_prime=0.7, d_prime=5.0)
    b = HPF(200, 60, 3, a=0.3, a_prime=0.5, b_prime=10.0, c=0.4, c_prime=0.7, d_prime=1.0)
    x, y = a.generate(3), b.generate(3)
    assert (x.matrix != y.matrix).nnz == 0 and np.array_equal(x.gains, y.gains)
    assert a.expected_pairs() == pytest.approx(b.expected_pairs(), rel=1e-12)

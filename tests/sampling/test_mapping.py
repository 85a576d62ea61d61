"""Li & Jin's mapping functions (KDD 2020 §3-4; dissertation §2.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.sampling import (
    SamplingScheme,
    beta_mapping,
    bound_mapping,
    fit_beta_mapping,
    linear_mapping,
    sample_ranks_binomial,
    sampled_hit_ratio_curve,
)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 3.0), st.integers(2, 3000), st.integers(0, 10**6))
def test_beta_map_ends_at_n_items_and_increases(a, n, extra):
    # Lemma 3.1 of Li & Jin: f(n) = N for every a
    N = n + extra
    f = beta_mapping(N, n, a).values
    assert f[-1] == pytest.approx(N, rel=1e-10)
    assert np.all(np.diff(f) >= 0) and f[0] >= 1


@pytest.mark.parametrize("N,n", [(10, 10), (10_000, 100), (140_000, 3_200)])
def test_beta_one_is_linear(N, n):
    # Li & Jin eq. 18: f(k; a = 1) = k (N - 1)/n + 1
    k = np.arange(1, n + 1)
    np.testing.assert_allclose(beta_mapping(N, n, 1.0).values, k * (N - 1) / n + 1, rtol=1e-10)


def test_linear_and_bound_closed_forms():
    N, n = 10_000, 100
    k = np.arange(1, n + 1)
    np.testing.assert_allclose(linear_mapping(N, n).values, (k - 1) * 9999 / 99 + 1)
    b = bound_mapping(N, n).values
    assert b[0] == 51  # ⌊0.5 * 9999/99 + 0.5⌋ = ⌊51.0⌋
    assert b[-1] == N  # ⌊(99.5)(9999)/99 + 0.5⌋ = 10050, clipped to N
    np.testing.assert_array_equal(b[:-1], np.floor((k[:-1] - 0.5) * 9999 / 99 + 0.5))


def _beta_shaped(N, a):
    """P(R) with CDF (R/N)^a: the discretised Beta(a, 1) Li & Jin fit to user ranks."""
    return np.diff((np.arange(N + 1) / N) ** a)


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("a", [0.2, 0.5, 1.0])
def test_bound_and_beta_align_better_than_linear_in_expectation(a, replace):
    N, n = 10_000, 100
    s = SamplingScheme(N, n, replace=replace)
    p = _beta_shaped(N, a)
    expected_shr = np.cumsum(s.blocks.rmatvec(p))  # E[SHR@k], exactly
    cdf = np.cumsum(p)

    def error(mapping):
        hr = cdf[np.floor(mapping.values).astype(int) - 1]  # HR@f(k)
        return np.abs(hr - expected_shr).mean()

    lin, bnd, bet = error(linear_mapping(N, n)), error(bound_mapping(N, n)), error(beta_mapping(N, n, a))
    assert bnd < 0.6 * lin
    assert bet < 0.1 * lin


def test_mappings_on_drawn_ranks_and_beta_p_convergence():
    N, n, M, a = 10_000, 100, 50_000, 0.4
    rng = np.random.default_rng(1)
    R = np.minimum(1 + np.floor(N * rng.random(M) ** (1 / a)).astype(int), N)
    r = sample_ranks_binomial(R, N, n, rng=2)
    shr = sampled_hit_ratio_curve(r, n)

    def error(mapping):
        hr = np.array([np.mean(R <= np.floor(v)) for v in mapping.values])
        return np.abs(hr - shr).mean()

    fit = fit_beta_mapping(r, N, n, a0=1.0, tol=1e-6)
    assert fit.converged and fit.n_iter <= 8  # "two or three iterations" to a fixed point
    assert abs(fit.a_trace[3] - fit.a) < 1e-3 * fit.a
    # fixed point of Li & Jin eq. 19
    f = fit.values
    a_next = -M / np.sum(np.log((f[r - 1] - 1) / (N - 1)))
    assert a_next == pytest.approx(fit.a, rel=1e-5)
    lin = error(linear_mapping(N, n))
    for m in (bound_mapping(N, n), beta_mapping(N, n, a), fit):
        assert error(m) < 0.5 * lin


def test_hit_ratio_estimate_interpolates():
    N, n = 1000, 10
    m = linear_mapping(N, n)  # f(k) = 111 (k - 1) + 1
    r = np.array([1, 1, 2, 5, 10])
    assert m.hit_ratio(r, 112) == pytest.approx(0.6)  # = f(2): SHR@2 = 3/5
    assert m.hit_ratio(r, 1) == pytest.approx(0.4)  # f(1) = 1: SHR@1
    # halfway between f(2) = 112 and f(3) = 223: between SHR@2 = 0.6 and SHR@3 = 0.6
    assert m.hit_ratio(r, 167) == pytest.approx(0.6)


def test_beta_p_undefined_when_every_rank_is_last():
    with pytest.raises(ValueError, match="every sampled rank"):
        fit_beta_mapping([5, 5, 5], 100, 5)

"""The bootstrap tests on ragged batches (paired deletion leaves replicates different numbers of users).

Reference: each replicate resampled on its own valid values with the draws the
module documents (shared uniforms ``rng.random((n_resamples, max n_r))``,
indices ⌊u n_r⌋ over the first n_r columns), its means summed in draw order.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.significance import bootstrap_bca_test, bootstrap_percentile_test
from simrec.significance.bootstrap import _TIE_EPS, _acceleration, _interval_and_p, ragged_resampled_means


def _ragged(seed: int, n_replicates: int, n_users: int) -> tuple[np.ndarray, np.ndarray]:
    """Rounded per-user values of two systems (zero differences and ties), ~15% NaN in A or B, the first
    replicate complete."""
    rng = np.random.default_rng(seed)
    a = np.round(rng.beta(0.6, 2.0, (n_replicates, n_users)), 2)
    b = np.round(np.clip(a + rng.normal(0.01, 0.1, a.shape) * (rng.random(a.shape) < 0.5), 0, 1), 2)
    a[1:][rng.random((n_replicates - 1, n_users)) < 0.08] = np.nan
    b[1:][rng.random((n_replicates - 1, n_users)) < 0.08] = np.nan
    return a, b


def _reference_means(d: list[np.ndarray], n_resamples: int, seed: int) -> np.ndarray:
    """Bootstrap means of each replicate's valid differences ``d[r]``, one replicate at a time."""
    u = np.random.default_rng(seed).random((n_resamples, max(x.size for x in d)))
    out = np.empty((len(d), n_resamples))
    for r, x in enumerate(d):
        n = x.size
        idx = np.floor(u[:, :n] * n).astype(np.int64)
        out[r] = np.cumsum(x[idx], axis=1)[:, -1] / n  # sequential sums, in draw order
    return out


def _valid_differences(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    d = a - b
    return [row[~np.isnan(row)] for row in d]


def test_ragged_means_equal_the_per_replicate_reference_exactly():
    a, b = _ragged(0, 9, 257)
    d = _valid_differences(a, b)
    n_valid = np.array([x.size for x in d])
    assert np.unique(n_valid).size > 5 and n_valid[0] == 257
    values = np.zeros((len(d), n_valid.max()))
    for r, x in enumerate(d):
        values[r, : x.size] = x
    # 1,000 resamples: several blocks of draws at this width (the stream must not depend on the blocking)
    got = ragged_resampled_means(values, n_valid, 1000, np.random.default_rng(1))
    np.testing.assert_array_equal(got, _reference_means(d, 1000, 1))


@pytest.mark.parametrize("bca", [False, True])
def test_ragged_tests_equal_the_per_replicate_reference(bca):
    a, b = _ragged(2, 12, 300)
    a[5] = b[5] + 0.25  # a constant shift: the point interval
    a[7, :299] = np.nan  # one user: undefined
    d = _valid_differences(a, b)
    test = bootstrap_bca_test if bca else bootstrap_percentile_test
    with pytest.warns(RuntimeWarning, match="1 of 12"):
        res = test(a, b, n_resamples=1500, rng=3)
    sampled = [r for r in range(12) if r not in (5, 7)]  # the rows that are resampled, in order
    ref = _reference_means([d[r] for r in sampled], 1500, 3)
    theta = np.array([d[r].mean() for r in sampled])
    gamma = _TIE_EPS * np.array([np.abs(d[r]).mean() for r in sampled])
    if bca:
        accel = np.concatenate([_acceleration(d[r][None], np.array([d[r].size])) for r in sampled])
    else:
        accel = np.zeros(len(sampled))
    low, high, pval = _interval_and_p(ref, theta, gamma, accel, 0.95, bca)
    if bca:  # the acceleration's sums run over zero-padded rows: equal up to rounding
        np.testing.assert_allclose(res.p_value[sampled], pval, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(res.ci_low[sampled], low, rtol=1e-10)
        np.testing.assert_allclose(res.ci_high[sampled], high, rtol=1e-10)
    else:
        np.testing.assert_array_equal(res.p_value[sampled], pval)
        np.testing.assert_array_equal(res.ci_low[sampled], low)
        np.testing.assert_array_equal(res.ci_high[sampled], high)
    assert res.p_value[5] == 0.0 and res.ci_low[5] == pytest.approx(0.25)
    assert np.isnan(res.p_value[7])
    np.testing.assert_array_equal(res.n_used, [x.size for x in d])


def test_the_percentile_interval_is_the_quantiles_of_the_reference_means():
    """Independent of the module's helpers: the percentile interval and p-value from the reference means."""
    a, b = _ragged(4, 6, 400)
    d = _valid_differences(a, b)
    res = bootstrap_percentile_test(a, b, n_resamples=2000, confidence=0.9, rng=5)
    ref = _reference_means(d, 2000, 5)
    alpha = (1 - 0.9) / 2  # as the module computes it (0.04999...)
    ci = stats.quantile(ref, np.tile([alpha, 1 - alpha], (6, 1)), axis=-1)
    np.testing.assert_array_equal(res.ci_low, ci[:, 0])
    np.testing.assert_array_equal(res.ci_high, ci[:, 1])
    below = ((ref < 0).sum(axis=-1) + (ref <= 0).sum(axis=-1)) / (2 * 2000)
    np.testing.assert_array_equal(res.p_value, np.minimum(1, 2 * np.minimum(below, 1 - below)))


def test_ragged_resamples_have_the_bootstrap_mean_and_variance():
    """Each replicate's bootstrap means: mean d̄_r and variance s²_r / n_r (s² with divisor n_r), within
    Monte Carlo error over 4,000 resamples (sd of a mean of B means: sqrt(s²/(n B)); of a variance: about
    var · sqrt(2 / B)), so resampling over the wrong number of users (max n_r, say) fails."""
    a, b = _ragged(6, 5, 200)
    a[1:, 100:] = np.nan  # replicates of ~90 and 200 users: n_r matters
    d = _valid_differences(a, b)
    n_valid = np.array([x.size for x in d])
    values = np.zeros((5, n_valid.max()))
    for r, x in enumerate(d):
        values[r, : x.size] = x
    B = 4000
    got = ragged_resampled_means(values, n_valid, B, np.random.default_rng(7))
    for r, x in enumerate(d):
        var = x.var() / x.size
        assert abs(got[r].mean() - x.mean()) < 5 * np.sqrt(var / B)
        assert abs(got[r].var() - var) < 5 * var * np.sqrt(2 / B)


def test_no_index_reaches_the_number_of_users():
    """⌊fl(u n)⌋ < n for numpy's largest uniform 1 - 2⁻⁵³, every n up to 2²⁰ and around each power of two
    up to 2⁵³ (the kernel's indices need no clamp: _bootstrap_kernel's docstring)."""
    top = 1.0 - 2.0**-53
    assert np.nextafter(1.0, 0.0) == top
    n = np.arange(1, 2**20 + 1, dtype=np.float64)
    assert (np.floor(top * n) < n).all()
    powers = 2.0 ** np.arange(1, 54)
    near = np.concatenate([powers - 1, powers, powers + 1])
    near = near[near <= 2.0**53]
    assert (np.floor(top * near) < near).all()


def test_a_batch_whose_replicates_keep_the_same_users_count_uses_scipys_shared_indices():
    """NaN in different places but the same number of users per replicate: scipy's draws, as for 1-D input."""
    a, b = _ragged(8, 3, 120)
    a[:] = a[0]
    b[:] = b[0]
    a[0, :4] = np.nan
    a[1, 10:14] = np.nan
    b[2, 50:54] = np.nan
    res = bootstrap_percentile_test(a, b, n_resamples=1000, rng=9)
    d = _valid_differences(a, b)
    for r in range(3):
        ref = stats.bootstrap((d[r],), np.mean, method="percentile", n_resamples=1000, rng=np.random.default_rng(9))
        assert res.ci_low[r] == pytest.approx(ref.confidence_interval.low, rel=1e-12)
        assert res.ci_high[r] == pytest.approx(ref.confidence_interval.high, rel=1e-12)

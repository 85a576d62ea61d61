"""Bootstrap tests of the mean paired difference: percentile and BCa, as scipy.stats.bootstrap defines them.

scipy.stats.bootstrap resamples by gathering ``n_resamples x n_users``
values per replicate and computes the BCa acceleration from ``n_users``
jackknife samples (O(n_users²)); at 6,040 users x 100 replicates that is
minutes. For the mean the same quantities have cheap exact forms, so this
module computes scipy's intervals with:

* **Resampling by counts.** A resample of the n users is a row of counts W_b
  (how often each user was drawn); its mean is W_b · d / n. The draws are
  scipy's (``rng.integers(0, n, (n_resamples, n))``, drawn in chunks that
  leave the stream unchanged) and one matrix product gives every replicate's
  bootstrap means (single-threaded BLAS: on a shared machine busy-waiting
  BLAS threads cost 3-5x the CPU; parallelism belongs one level up). As in ``scipy.stats.bootstrap`` on a batch,
  replicates with the same number of users share the resampled indices.
* **Ragged batches share uniforms.** Where paired deletion leaves the
  replicates different numbers of users n_r (NaN-padded input), each
  replicate's valid values are compacted to the left and every replicate
  reads the same uniform draws, ``rng.random((n_resamples, max n_r))`` (drawn
  in row blocks, which leave the stream unchanged): resample b of replicate
  r takes the users ⌊u_bj n_r⌋, j < n_r, and its mean is their
  sum over n_r (:func:`simrec.significance._bootstrap_kernel.ragged_means`,
  one compiled pass). Each resample is uniform over the replicate's own users
  (up to the granularity 2⁻⁵³ of the uniforms). Drawing separate indices per
  size instead costs Σ_r n_r · n_resamples bounded integers (1.1·10⁹ at
  6,040 users x 100 replicates: ~6 s in numpy alone, against the 2 s
  target); the shared draws cost n_resamples · max n_r. So a replicate's
  draws in a ragged batch are not the ones it gets alone (1-D input, or a
  batch whose replicates all keep the same number of users, is resampled by
  scipy's indices as above).
  Sharing makes the replicates' outcomes dependent only through the pattern
  of draws, whose effect on a test's rejection rate is of order
  1/sqrt(n_users · n_resamples), far below a Monte Carlo rate's own error.
* **The jackknife acceleration in closed form.** The leave-one-out means are
  (n d̄ - d_u)/(n - 1), so scipy's

  .. math:: \\hat a = \\frac{\\sum_u U_u^3}{6 (\\sum_u U_u^2)^{3/2}},
            \\quad U_u = (n - 1)(\\bar\\theta_{(\\cdot)} - \\theta_{(u)}) = d_u - \\bar d

  (Efron & Tibshirani 1993, eq. 14.15) is the skewness term
  Σ(d - d̄)³ / (6 (Σ(d - d̄)²)^{3/2}).

Everything else is scipy's: z0 = Φ⁻¹ of the share of bootstrap means below
the observed mean (ties count half, scipy's ``_percentile_of_score``), the
BCa levels Φ(z0 + (z0 + z_α)/(1 - â(z0 + z_α))), and the interval ends by
:func:`scipy.stats.quantile` (linear). The tests check the intervals equal
``scipy.stats.bootstrap``'s for the same seed. One difference: a bootstrap
mean within γ = 100 ε · mean|d| of the observed mean (or of 0, for the
p-value) counts as a tie. Per-user metrics take few distinct values, so
resample means often equal the observed mean exactly, and which of them
rounding puts on which side decides z0; scipy's count follows its rounding,
this one the exact ties.

**p-values** (scipy gives none): the achieved significance level of the
interval's inversion, the smallest two-sided level at which the interval
excludes 0 (Efron & Tibshirani 1993, §15.4). With p0 the share of bootstrap
means below 0 (ties half), the percentile test's is p = 2 min(p0, 1 - p0);
the BCa test's solves the BCa level equation for the level at which an end
of the interval is 0:

.. math:: w = \\Phi^{-1}(p_0), \\quad
          z = \\frac{w - z_0}{1 + \\hat a (w - z_0)} - z_0, \\quad
          p = 2 \\min(\\Phi(z), 1 - \\Phi(z))

(p = 0 where 0 lies beyond every BCa interval: p0 in {0, 1}, or
1 + â(w - z0) <= 0). So p <= α exactly when the (1 - α) interval excludes 0,
up to the interpolation between two bootstrap means (1/n_resamples).
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from simrec._blas import blas_single_thread
from simrec._random import RNGLike, as_generator
from simrec.significance._common import check_confidence, check_resamples, paired, warn_undefined
from simrec.significance._mean_result import mean_test_result
from simrec.significance.result import PairedTestResult

__all__ = ["bootstrap_percentile_test", "bootstrap_bca_test", "DEFAULT_BOOTSTRAP_RESAMPLES"]

#: Default resamples of the bootstrap tests: Efron & Tibshirani (1993) advise
#: B >= 1,000 for percentile and BCa intervals (the tails need many more than
#: a standard error's ~200); at 2,000 the Monte Carlo sd of the 2.5% tail's
#: level is sqrt(0.025·0.975/2000) = 0.0035 (0.0049 at 1,000). Its cost:
#: ``bench/bench_significance.py``.
DEFAULT_BOOTSTRAP_RESAMPLES = 2000

#: Resampled indices drawn per chunk (int64: 16 MiB).
_CHUNK_ELEMENTS = 2**21
#: Shared uniforms drawn per block on the ragged path (float64: 1 MiB, cache-resident while every replicate reads it).
_RAGGED_BLOCK_ELEMENTS = 2**17
#: Bootstrap means within 100 ε · mean|d| of a score tie with it (rounding of sums of the differences).
_TIE_EPS = 100 * np.finfo(np.float64).eps


@blas_single_thread
def resampled_means(values: np.ndarray, n_resamples: int, gen: np.random.Generator) -> np.ndarray:
    """Bootstrap means of each row of ``values`` (rows, n), shared resample indices, shape (rows, n_resamples).

    The indices are drawn as ``gen.integers(0, n, (n_resamples, n))`` would
    draw them (chunks of an even number of values leave numpy's buffered
    32-bit draws aligned).
    """
    rows, n = values.shape
    chunk = max(2, (_CHUNK_ELEMENTS // n) // 2 * 2)
    out = np.empty((rows, n_resamples))
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        idx = gen.integers(0, n, (size, n))
        idx += (np.arange(size, dtype=np.int64) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)
        out[:, start : start + size] = (values @ counts.T) / n
    return out


def ragged_resampled_means(
    values: np.ndarray, n_valid: np.ndarray, n_resamples: int, gen: np.random.Generator
) -> np.ndarray:
    """Bootstrap means of rows with their own numbers of values, from shared uniforms, shape (rows, n_resamples).

    ``values`` (rows, width): row r's values in its first ``n_valid[r]``
    columns (1 <= n_valid <= width). The uniforms are
    ``gen.random((n_resamples, n_valid.max()))``, drawn in blocks of rows;
    resample b of row r takes the values at ⌊u_bj n_r⌋, j < n_r
    (module docstring).
    """
    from simrec.significance._bootstrap_kernel import ragged_means  # imports numba: only when used

    n_valid = np.ascontiguousarray(n_valid, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    width = int(n_valid.max())
    block = max(1, _RAGGED_BLOCK_ELEMENTS // width)
    out = np.empty((values.shape[0], n_resamples))
    for start in range(0, n_resamples, block):
        u = gen.random((min(block, n_resamples - start), width))
        ragged_means(values, n_valid, u, out, start)
    return out


def _compacted(diff: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's valid values moved to its left, zero-padded to the largest count, and the counts per row."""
    n_valid = valid.sum(axis=-1)
    out = np.zeros((diff.shape[0], int(n_valid.max())))
    rows, _ = np.nonzero(valid)
    out[rows, (np.cumsum(valid, axis=-1) - 1)[valid]] = diff[valid]
    return out, n_valid


def _acceleration(values: np.ndarray, n_valid: np.ndarray) -> np.ndarray:
    """Jackknife acceleration of the mean per row of ``values`` (rows, width), row r's values in its first
    ``n_valid[r]`` columns (zeros after); 0 where the values are constant."""
    mask = np.arange(values.shape[-1]) < n_valid[:, None]
    centred = np.where(mask, values - (values.sum(axis=-1) / n_valid)[:, None], 0.0)
    num = (centred**3).sum(axis=-1)
    den = (centred**2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / (6.0 * np.where(den > 0, den, 1.0) ** 1.5), 0.0)


def _share_below(dist: np.ndarray, score: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """Share of each row of ``dist`` below ``score`` (ties, within ``gamma``, count half): scipy's
    ``_percentile_of_score`` with a tolerance for rounding."""
    s, g = score[:, None], gamma[:, None]
    return (np.count_nonzero(dist < s - g, axis=-1) + np.count_nonzero(dist <= s + g, axis=-1)) / (2 * dist.shape[-1])


def _bootstrap(a: object, b: object, n_resamples: int, confidence: float, rng: RNGLike, bca: bool) -> PairedTestResult:
    confidence = check_confidence(confidence)
    n_resamples = check_resamples(n_resamples, 2)
    gen = as_generator(rng)
    p = paired(a, b)
    theta = p.mean_difference()
    with np.errstate(invalid="ignore", divide="ignore"):
        gamma = _TIE_EPS * np.where(p.valid, np.abs(p.diff), 0.0).sum(axis=-1) / p.n_valid
    zero = p.all_zero
    constant = (p.n_valid >= 2) & p.constant  # every bootstrap mean is the observed one
    defined = (p.n_valid >= 2) & ~constant
    R = theta.size
    dist = np.full((R, n_resamples), np.nan)
    accel = np.zeros(R)
    rows = np.flatnonzero(defined)
    if rows.size:
        values, n_valid = _compacted(p.diff[rows], p.valid[rows])
        if np.all(n_valid == n_valid[0]):  # scipy's shared indices
            dist[rows] = resampled_means(values, n_resamples, gen)
        else:
            dist[rows] = ragged_resampled_means(values, n_valid, n_resamples, gen)
        if bca:
            accel[rows] = _acceleration(values, n_valid)
    low, high, pval = (np.full(R, np.nan) for _ in range(3))
    if defined.any():
        low[defined], high[defined], pval[defined] = _interval_and_p(
            dist[defined], theta[defined], gamma[defined], accel[defined], confidence, bca
        )
    low[constant] = high[constant] = theta[constant]
    pval[constant] = np.where(theta[constant] == 0, 1.0, 0.0)
    low[zero] = high[zero] = 0.0
    pval[zero] = 1.0
    name = "bootstrap_bca" if bca else "bootstrap_percentile"
    warn_undefined(
        f"{name} test",
        ~zero & np.isnan(pval),
        "fewer than 2 users with both systems defined, or the observed mean outside the bootstrap distribution",
    )
    return mean_test_result(p, name, theta, pval, (low, high), confidence)


def _interval_and_p(
    dist: np.ndarray, theta: np.ndarray, gamma: np.ndarray, accel: np.ndarray, confidence: float, bca: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interval ends and two-sided p-value of H0: mean difference = 0, per row of ``dist``; ``gamma`` the tie
    tolerance."""
    alpha = (1 - confidence) / 2
    below0 = _share_below(dist, np.zeros(theta.size), gamma)
    if bca:
        z0 = special.ndtri(_share_below(dist, theta, gamma))
        z_alpha = float(special.ndtri(alpha))
        with np.errstate(invalid="ignore", divide="ignore"):
            num1 = z0 + z_alpha
            num2 = z0 - z_alpha
            levels = np.stack(
                [special.ndtr(z0 + num1 / (1 - accel * num1)), special.ndtr(z0 + num2 / (1 - accel * num2))], axis=-1
            )
            delta = special.ndtri(below0) - z0
            den = 1 + accel * delta
            tail = special.ndtr(delta / den - z0)
            pval = np.where((below0 > 0) & (below0 < 1) & (den > 0), 2 * np.minimum(tail, 1 - tail), 0.0)
        ok = np.isfinite(z0) & np.isfinite(levels).all(axis=-1)
        pval = np.where(ok, pval, np.nan)
    else:
        levels = np.broadcast_to(np.array([alpha, 1 - alpha]), (theta.size, 2))
        pval = np.minimum(1.0, 2 * np.minimum(below0, 1 - below0))
        ok = np.ones(theta.size, bool)
    low = np.full(theta.size, np.nan)
    high = np.full(theta.size, np.nan)
    if ok.any():
        ci = stats.quantile(dist[ok], levels[ok], axis=-1)
        low[ok], high[ok] = ci[:, 0], ci[:, 1]
    return low, high, pval


def bootstrap_percentile_test(
    a: object,
    b: object,
    *,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    rng: RNGLike = None,
) -> PairedTestResult:
    """Percentile bootstrap test and interval of the mean paired difference, two-sided, per replicate.

    .. math:: \\bar d^*_b = \\frac{1}{n} \\sum_u W_{bu} d_u, \\qquad
              \\big[q_{(1-c)/2}(\\bar d^*),\\ q_{(1+c)/2}(\\bar d^*)\\big], \\qquad
              p = 2 \\min(p_0, 1 - p_0)

    the interval of ``scipy.stats.bootstrap(method="percentile")`` on the
    differences with ``np.mean`` (Efron & Tibshirani 1993, §13.3), p0 the
    share of the bootstrap means below 0 (ties half). Module docstring:
    computation, shared resamples, the p-value's definition.

    Parameters
    ----------
    a, b : array-like of float, shape (n_users,) or (n_replicates, n_users)
        Per-user metric values of systems A and B; NaN = undefined (paired
        deletion).
    n_resamples : int, default 2000
        Bootstrap resamples (>= 2); :data:`DEFAULT_BOOTSTRAP_RESAMPLES`.
    confidence : float in (0, 1), default 0.95
    rng : Generator, int, SeedSequence or None
        The resampling draws (scipy's: the same seed gives scipy's interval).

    Returns
    -------
    PairedTestResult
        ``test="bootstrap_percentile"``, statistic the mean difference,
        effect size Cohen's d_z, interval of the mean difference.

    Notes
    -----
    Identical lists: p = 1, interval [0, 0]. A constant shift c: every
    bootstrap mean is c, interval [c, c], p = 0. Fewer than two users: NaN
    with an :class:`~simrec.significance.UndefinedStatisticWarning`.
    Ihemelandu & Ekstrand (SIGIR 2023) find the bootstrap close to nominal
    type I error on large recommendation evaluations.
    """
    return _bootstrap(a, b, n_resamples, confidence, rng, bca=False)


def bootstrap_bca_test(
    a: object,
    b: object,
    *,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    rng: RNGLike = None,
) -> PairedTestResult:
    """Bias-corrected and accelerated (BCa) bootstrap test and interval of the mean paired difference.

    .. math:: \\alpha_{1,2} = \\Phi\\Big(z_0 + \\frac{z_0 + z_{\\alpha/2,\\,1-\\alpha/2}}
              {1 - \\hat a (z_0 + z_{\\alpha/2,\\,1-\\alpha/2})}\\Big), \\qquad
              \\big[q_{\\alpha_1}(\\bar d^*),\\ q_{\\alpha_2}(\\bar d^*)\\big]

    the interval of ``scipy.stats.bootstrap(method="BCa")`` on the
    differences with ``np.mean`` (Efron 1987; Efron & Tibshirani 1993,
    §14.3), α = 1 - confidence, z0 the bias correction and â the jackknife
    acceleration (closed form for the mean); the p-value inverts the BCa
    interval (module docstring).

    Parameters
    ----------
    a, b : array-like of float, shape (n_users,) or (n_replicates, n_users)
        Per-user metric values of systems A and B; NaN = undefined (paired
        deletion).
    n_resamples : int, default 2000
        Bootstrap resamples (>= 2); :data:`DEFAULT_BOOTSTRAP_RESAMPLES`.
    confidence : float in (0, 1), default 0.95
    rng : Generator, int, SeedSequence or None
        The resampling draws (scipy's: the same seed gives scipy's interval).

    Returns
    -------
    PairedTestResult
        ``test="bootstrap_bca"``, as :func:`bootstrap_percentile_test`.

    Notes
    -----
    Constant differences (identical lists, a constant shift c) make â = 0/0
    and every bootstrap mean c: here the interval is the point [c, c] (scipy
    returns NaN with a ``DegenerateDataWarning``) and p = 1 for c = 0, else 0.
    Where the observed mean lies outside every bootstrap mean (z0 infinite,
    tiny samples) the test is NaN with an
    :class:`~simrec.significance.UndefinedStatisticWarning`, as scipy's
    interval is degenerate there.
    """
    return _bootstrap(a, b, n_resamples, confidence, rng, bca=True)

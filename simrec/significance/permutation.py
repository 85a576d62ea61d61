"""The paired permutation (randomisation, sign-flip) test of the mean difference, as scipy.stats.permutation_test.

Under H0 the two systems' labels are exchangeable within each user, so each
difference d_u keeps or flips its sign with probability 1/2 (Fisher 1935;
the "randomization test" of Smucker, Allan & Carterette, CIKM 2007).
:func:`scipy.stats.permutation_test` with ``permutation_type="samples"`` on
the one sample of differences and ``np.mean`` is this test; it builds every
resample as an array of ``n_users`` values per replicate, so here the null
means of all replicates come from one matrix product D · Sᵀ / n with a
matrix S of random signs (n_resamples x n_users), in chunks, with
single-threaded BLAS.

* **Exact or random, scipy's rule.** When ``n_resamples >= 2**n`` every sign
  pattern is enumerated once (the exact test, p = count / 2**n); otherwise
  ``n_resamples`` random patterns and p = (count + 1)/(n_resamples + 1)
  (the observed pattern counted once, Phipson & Smyth 2010; scipy's
  ``adjustment``). Two-sided p = min(1, 2 min(p_less, p_greater)).
* **Shared signs.** The random signs are drawn once for all replicates (as
  scipy shares them across a batch); a replicate with fewer users (NaN
  padding, paired deletion) uses the signs at its own users, still i.i.d.
  fair signs, so ragged input needs no extra draws.
* **Ties.** A null mean within γ of the observed one counts as a tie (as
  large as the observed), scipy's guard against rounding: scipy uses
  γ = 100 ε |observed|; here γ = 100 ε · mean|d|, the scale of the rounding
  error of a sum of signed differences, which stays right when the observed
  mean is 0 up to rounding (|observed| ≈ 1e-17 would make scipy's γ
  vanish). The draws are not scipy's, so p-values equal scipy's exactly for
  the exact test and within Monte Carlo error otherwise.
"""

from __future__ import annotations

import numpy as np

from simrec._blas import blas_single_thread
from simrec._random import RNGLike, as_generator
from simrec.significance._common import Paired, check_resamples, paired, warn_undefined
from simrec.significance._mean_result import mean_test_result
from simrec.significance.result import PairedTestResult

__all__ = ["paired_permutation_test", "DEFAULT_PERMUTATION_RESAMPLES"]

#: Default random sign patterns: 9,999 (scipy's default), so that with the
#: observed pattern counted p is a multiple of 1/10,000 and the Monte Carlo sd
#: of p at 0.05 is sqrt(0.05·0.95/9999) = 0.0022.
DEFAULT_PERMUTATION_RESAMPLES = 9999

#: Signs per chunk of the random sign matrix (float64: 16 MiB).
_CHUNK_ELEMENTS = 2**21
_GAMMA_EPS = 100 * np.finfo(np.float64).eps


@blas_single_thread
def _exact_counts(values: np.ndarray, observed: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Null means at or below / at or above the observed one over all 2**n sign patterns, rows of ``values`` (rows, n)."""
    n = values.shape[1]
    signs = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2.0 - 1.0  # (2**n, n)
    null = (values @ signs.T) / n
    less = np.count_nonzero(null <= (observed + gamma)[:, None], axis=-1)
    greater = np.count_nonzero(null >= (observed - gamma)[:, None], axis=-1)
    return less, greater


@blas_single_thread
def _random_counts(
    values: np.ndarray,
    n: np.ndarray,
    observed: np.ndarray,
    gamma: np.ndarray,
    n_resamples: int,
    gen: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`_exact_counts` over ``n_resamples`` random sign patterns shared by the rows; ``values`` (rows, n_max)
    with 0 at a row's missing users, ``n`` the users per row."""
    rows, width = values.shape
    chunk = max(1, _CHUNK_ELEMENTS // width)
    less = np.zeros(rows, dtype=np.int64)
    greater = np.zeros(rows, dtype=np.int64)
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        bits = np.unpackbits(gen.integers(0, 256, size=(size * width + 7) // 8, dtype=np.uint8), count=size * width)
        signs = bits.reshape(size, width).astype(np.float64)
        signs *= 2.0
        signs -= 1.0
        null = (values @ signs.T) / n[:, None]
        less += np.count_nonzero(null <= (observed + gamma)[:, None], axis=-1)
        greater += np.count_nonzero(null >= (observed - gamma)[:, None], axis=-1)
    return less, greater


def paired_permutation_test(
    a: object, b: object, *, n_resamples: int = DEFAULT_PERMUTATION_RESAMPLES, rng: RNGLike = None
) -> PairedTestResult:
    """Paired permutation (sign-flip randomisation) test of H0: the labels A, B are exchangeable within users.

    .. math:: \\bar d^{(s)} = \\frac1n \\sum_u s_u d_u,\\ s_u = \\pm 1, \\qquad
              p = \\min\\Big(1,\\ 2 \\min\\big(\\tfrac{\\#\\{\\bar d^{(s)} \\le \\bar d\\} + \\delta}{B + \\delta},
              \\tfrac{\\#\\{\\bar d^{(s)} \\ge \\bar d\\} + \\delta}{B + \\delta}\\big)\\Big)

    with δ = 1 and B = ``n_resamples`` random sign patterns, or δ = 0 and all
    B = 2**n patterns when ``n_resamples >= 2**n`` (exact). The test of
    :func:`scipy.stats.permutation_test` (``permutation_type="samples"``,
    statistic ``np.mean``), vectorised (module docstring). Ihemelandu &
    Ekstrand (SIGIR 2023) find it close to nominal type I error on large
    recommendation evaluations.

    Parameters
    ----------
    a, b : array-like of float, shape (n_users,) or (n_replicates, n_users)
        Per-user metric values of systems A and B; NaN = undefined (paired
        deletion).
    n_resamples : int, default 9999
        Random sign patterns (>= 1); :data:`DEFAULT_PERMUTATION_RESAMPLES`.
    rng : Generator, int, SeedSequence or None
        The random signs (not drawn for exact rows only).

    Returns
    -------
    PairedTestResult
        ``test="permutation"``, statistic the mean difference, effect size
        Cohen's d_z, no interval.

    Notes
    -----
    Identical lists: p = 1. No user left after paired deletion: NaN with an
    :class:`~simrec.significance.UndefinedStatisticWarning`.
    """
    n_resamples = check_resamples(n_resamples, 1)
    gen = as_generator(rng)
    p: Paired = paired(a, b)
    values = np.where(p.valid, p.diff, 0.0)
    n = p.n_valid
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = values.sum(axis=-1) / n
        gamma = _GAMMA_EPS * np.abs(values).sum(axis=-1) / n
    zero = p.all_zero
    undefined = n == 0
    test_rows = ~zero & ~undefined
    exact = test_rows & (n <= np.log2(n_resamples))
    less = np.zeros(n.size, dtype=np.int64)
    greater = np.zeros(n.size, dtype=np.int64)
    total = np.full(n.size, float(n_resamples + 1))
    for size in np.unique(n[exact]):
        rows = np.flatnonzero(exact & (n == size))
        compact = p.diff[rows][p.valid[rows]].reshape(rows.size, size)
        less[rows], greater[rows] = _exact_counts(compact, observed[rows], gamma[rows])
        total[rows] = 2.0**size
    rand = np.flatnonzero(test_rows & ~exact)
    if rand.size:
        less[rand], greater[rand] = _random_counts(values[rand], n[rand], observed[rand], gamma[rand], n_resamples, gen)
        less[rand] += 1
        greater[rand] += 1
    pval = np.minimum(1.0, 2 * np.minimum(less, greater) / total)
    pval = np.where(undefined, np.nan, np.where(zero, 1.0, pval))
    warn_undefined("permutation test", undefined, "no user with both systems defined")
    return mean_test_result(p, "permutation", p.mean_difference(), pval, None, float("nan"))

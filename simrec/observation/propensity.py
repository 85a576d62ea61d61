"""Inclusion probabilities (propensities) of the thesis's samplers, given the truth and the profile sizes.

* :func:`uniform_propensity` — the uniform sampler keeps :math:`n_u` of
  :math:`|\\tilde I_u|` likes uniformly: :math:`\\pi_{ui} = n_u / |\\tilde I_u|`,
  exact.
* :func:`successive_propensity` — the popularity sampler draws :math:`n_u`
  likes one after another, each ∝ its weight among the remaining
  (successive sampling, sampled with exponential keys). Its inclusion
  probabilities have no closed form; this estimates them by Monte Carlo
  over the sampler's own key draws, Rao-Blackwellised: in one draw of the
  keys :math:`x_j = E_j / w_j`, item i is kept when :math:`x_i` is below
  the :math:`n`-th smallest key of the others, :math:`T_{-i}`, so

  .. math:: P(i \\text{ kept} \\mid x_{-i}) = 1 - e^{-w_i T_{-i}}, \\qquad
            T_{-i} = \\begin{cases} x_{(n+1)} & x_i \\le x_{(n)} \\\\
                                   x_{(n)} & \\text{otherwise,} \\end{cases}

  an unbiased estimate of :math:`\\pi_i` with a much smaller variance than
  the indicator (it averages over :math:`x_i` exactly). The mean over
  ``n_draws`` draws and its standard error (the draws' standard deviation
  over :math:`\\sqrt{R}`) are returned: the stated accuracy, checked in the
  tests against exact enumeration of small cases and against empirical
  observation frequencies.
"""

from __future__ import annotations

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._sampling import pair_blocks
from simrec._validation import check_int
from simrec.interactions import Interactions

__all__ = ["uniform_propensity", "successive_propensity"]

#: True pairs per block of rows.
_BLOCK_PAIRS = 1 << 18


def uniform_propensity(truth: Interactions, eff: np.ndarray) -> np.ndarray:
    """:math:`\\pi_{ui} = n_u/|\\tilde I_u|` of every true pair (``eff`` the sizes capped at the likes), float64."""
    lens = truth.user_counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        per_row = np.where(lens > 0, eff / np.maximum(lens, 1), 0.0)
    return np.repeat(per_row, lens)


def successive_propensity(
    truth: Interactions, eff: np.ndarray, weight: np.ndarray, rng: RNGLike, n_draws: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """Inclusion probabilities of successive sampling of ``eff[u]`` likes ∝ ``weight``, and their standard errors.

    Parameters
    ----------
    truth : Interactions
    eff : ndarray of int64, shape (n_users,)
        Sizes, at most each user's likes.
    weight : ndarray of float64, shape (n_items,)
        Item weights (> 0 on every liked item).
    rng : Generator or seed
    n_draws : int, default 64
        R, the Monte Carlo draws of the keys.

    Returns
    -------
    mean, se : ndarray of float64, shape (truth.n_pairs,)
        The Rao-Blackwellised estimate (module docstring) and its standard
        error; rows keeping all their likes get exactly 1 (se 0), rows
        keeping none 0.

    Notes
    -----
    Cost O(R · pairs log pairs) (one argsort of the keys per draw, by
    blocks of rows). The keys sort within a row through ``row + x/(1 + x)``
    (monotone in x, rows never mix), as :class:`PopularitySampler` does;
    the n-th and (n+1)-th keys are then read from ``x`` itself.
    """
    check_int("n_draws", n_draws, low=2)
    gen = as_generator(rng)
    m = truth.matrix
    lens = truth.user_counts()
    mean = np.zeros(truth.n_pairs)
    se = np.zeros(truth.n_pairs)
    part = (eff > 0) & (eff < lens)
    full = np.repeat(eff >= lens, lens) & np.repeat(lens > 0, lens)
    mean[full] = 1.0
    for r0, r1 in pair_blocks(m.indptr, _BLOCK_PAIRS):
        rows = np.flatnonzero(part[r0:r1]) + r0
        if not len(rows):
            continue
        n_rows = len(rows)
        rl = lens[rows]
        starts = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(rl, out=starts[1:])
        # the pairs of the partial rows, in row order
        sel = np.repeat(m.indptr[rows].astype(np.int64) - starts[:-1], rl) + np.arange(starts[-1])
        w = np.take(weight, m.indices[sel])
        row = np.repeat(np.arange(n_rows), rl)
        n = eff[rows]
        kth = starts[:-1] + n - 1  # the n-th smallest of each row, in the sorted block
        acc = np.zeros(len(w))
        acc2 = np.zeros(len(w))
        for _ in range(n_draws):
            x = gen.standard_exponential(len(w))
            x /= w
            order = np.argsort(row + 0.5 * (x / (1.0 + x)))  # by row, then by key
            kn, kn1 = x[order[kth]], x[order[kth + 1]]  # each row's n-th and (n+1)-th smallest key
            t = np.where(x <= kn[row], kn1[row], kn[row])
            est = -np.expm1(-w * t)
            acc += est
            acc2 += est * est
        mu = acc / n_draws
        var = np.maximum(acc2 / n_draws - mu * mu, 0.0) * n_draws / (n_draws - 1)
        mean[sel] = mu
        se[sel] = np.sqrt(var / n_draws)
    return mean, se

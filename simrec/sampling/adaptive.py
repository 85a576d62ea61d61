"""Adaptive item sampling (Li's dissertation §2.6): the sampled ranks of Algorithm 1 and their MLE.

Each user starts with a sample set of n0 items and doubles it while the
held-out item ranks first (:func:`sample_ranks_adaptive`), so users with good
ranks get large sample sets and the estimator must use each user's own size
n_u.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_int
from simrec.sampling._checks import check_rank_array
from simrec.sampling.scheme import _check_n_items, _check_size

__all__ = ["AdaptiveRanks", "sample_ranks_adaptive"]


@dataclass(frozen=True, eq=False)
class AdaptiveRanks:
    """Result of :func:`sample_ranks_adaptive`.

    Attributes
    ----------
    ranks : ndarray of int64, shape (M,)
        Final sampled rank r_u in [1, sizes[u]].
    sizes : ndarray of int64, shape (M,)
        Final sample-set size n_u (n0, 2 n0, 4 n0, ... capped at n_max).
    n_items : int or ndarray of int64, shape (M,)
        N, or each user's candidate count N_u.
    n0, n_max : int
    replace : bool
    """

    ranks: np.ndarray
    sizes: np.ndarray
    n_items: int | np.ndarray
    n0: int
    n_max: int
    replace: bool

    @property
    def mean_size(self) -> float:
        """Average sample-set size (the sampling cost per user)."""
        return float(self.sizes.mean())


def sample_ranks_adaptive(
    ranks: object,
    n_items: int | np.ndarray,
    n0: int,
    *,
    n_max: int | None = None,
    replace: bool = True,
    rng: RNGLike = None,
) -> AdaptiveRanks:
    """Adaptive item sampling (Li's dissertation §2.6, Algorithm 1).

    Each user starts with a sample set of size n0 (n0 - 1 negatives). While its
    sampled rank is 1 and n_u < n_max, it draws n_u more negatives and doubles
    n_u (the last step is capped at n_max, so n_max need not be n0 times a
    power of 2). Because r = 1 means every earlier negative ranked below the
    held-out item, the new rank is 1 + the number of the *new* negatives
    ranked above it: ``Binomial(extra, θ_R)`` with replacement, and without
    replacement ``Hypergeometric`` over the negatives not yet drawn (R - 1
    above, N - R - (n_u - 1) below). Vectorized over users; one loop per
    doubling (log2(n_max / n0) steps). Each user may have its own candidate
    count N_u (then θ_u = (R_u - 1)/(N_u - 1)).

    Parameters
    ----------
    ranks : array-like of int, shape (M,)
        Global ranks, R_u in [1, N_u].
    n_items : int or array-like of int, shape (M,)
        N, or one N_u >= 2 per user.
    n0 : int
        Initial sample-set size, 2 <= n0 <= n_max.
    n_max : int, optional
        Terminal size; default min(3200, N) (the dissertation's 3,200, §2.6.3;
        with per-user N_u: min(3200, min N_u) without replacement, min(3200,
        max N_u) with it). Must be <= N; with per-user N_u, <= every N_u
        without replacement and <= max N_u with replacement (draws with
        replacement may outnumber a user's negatives).
    replace : bool, default True
    rng : Generator or seed

    Returns
    -------
    AdaptiveRanks
    """
    n_items = _check_n_items(n_items, np.shape(ranks))
    if n_max is None:
        n_max = min(3200, int(np.max(n_items) if replace else np.min(n_items)))
    n_max = _check_size("n_max", n_max, n_items, replace, low=2)
    n0 = check_int("n0", n0, low=2, high=n_max)
    r_global = check_rank_array("ranks", ranks, n_items)
    gen = as_generator(rng)
    theta = (r_global - 1) / (n_items - 1.0)
    if replace:
        r = 1 + gen.binomial(n0 - 1, theta)
    else:
        r = 1 + gen.hypergeometric(r_global - 1, n_items - r_global, n0 - 1)
    size = np.full(r.shape, n0, dtype=np.int64)
    active = np.flatnonzero((r == 1) & (size < n_max))
    while active.size:
        cur = size[active]
        new = np.minimum(2 * cur, n_max)
        extra = new - cur
        if replace:
            x = gen.binomial(extra, theta[active])
        else:
            g = r_global[active]
            n_act = n_items if np.ndim(n_items) == 0 else n_items[active]
            x = gen.hypergeometric(g - 1, n_act - g - (cur - 1), extra)
        r[active] = 1 + x
        size[active] = new
        active = active[(x == 0) & (new < n_max)]
    return AdaptiveRanks(r.astype(np.int64), size, n_items, n0, n_max, bool(replace))

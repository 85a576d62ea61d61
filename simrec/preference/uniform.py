"""Uniform true preferences (Tian's thesis §3.1.1; docs/design.md §1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from simrec._random import RNGLike, as_generator
from simrec._subsets import interactions_from_rows, uniform_subsets
from simrec._validation import check_in_range, check_int, check_pairs_budget
from simrec.interactions import Interactions

__all__ = ["Uniform", "truncated_poisson_pmf"]


def truncated_poisson_pmf(lam: float, n_max: int) -> tuple[np.ndarray, np.ndarray]:
    """The Poisson(``lam``) distribution conditioned on ``1 <= X <= n_max``.

    .. math:: P(X = k) = \\frac{\\lambda^k / k!}{\\sum_{j=1}^{n_{max}} \\lambda^j / j!},
              \\quad 1 \\le k \\le n_{max}

    Computed in log space over a window of ±(40 sqrt(max(lam, 1)) + 40) around the
    truncated mode (the truncated Poisson is log-concave, so the mass outside the
    window is far below float precision), so it is cheap even for huge ``n_max``.

    Parameters
    ----------
    lam : float
        Poisson mean, > 0.
    n_max : int
        Upper truncation point, >= 1.

    Returns
    -------
    support : ndarray of int64, shape (m,)
        Consecutive values ``k``.
    pmf : ndarray of float64, shape (m,)
        Their probabilities (sum to 1).
    """
    mode = int(min(max(np.floor(lam), 1), n_max))
    width = int(np.ceil(40 * np.sqrt(max(lam, 1.0)) + 40))
    k = np.arange(max(1, mode - width), min(n_max, mode + width) + 1, dtype=np.int64)
    logp = k * np.log(lam) - gammaln(k + 1.0)
    p = np.exp(logp - logp.max())
    return k, p / p.sum()


@dataclass(frozen=True)
class Uniform:
    """Uniform model: every user likes a uniformly random set of items.

    |Ĩ_u| ~ Poisson(λ) conditioned on 1 <= |Ĩ_u| <= n_items (the thesis's
    "redraw while 0 or > n_items", sampled exactly by inverse transform on the
    truncated pmf instead of a redraw loop), then |Ĩ_u| items uniformly without
    replacement (Tian's thesis §3.1.1).

    Parameters
    ----------
    n_users : int
        Number of users, >= 1.
    n_items : int
        Number of items, >= 1.
    lam : float
        Poisson mean λ of the profile size, > 0.

    Notes
    -----
    Every user has at least one like (the size is truncated at 1), so no row
    of the result is empty.
    """

    n_users: int
    n_items: int
    lam: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_int("n_users", self.n_users, low=1))
        object.__setattr__(self, "n_items", check_int("n_items", self.n_items, low=1))
        object.__setattr__(self, "lam", check_in_range("lam", self.lam, 0, None, low_open=True))

    def size_pmf(self) -> tuple[np.ndarray, np.ndarray]:
        """Distribution of one user's profile size: see :func:`truncated_poisson_pmf`."""
        return truncated_poisson_pmf(self.lam, self.n_items)

    def expected_pairs(self) -> float:
        """Exact E[pairs] = n_users · E[X | 1 <= X <= n_items], X ~ Poisson(λ)."""
        k, p = self.size_pmf()
        return float(self.n_users * (k @ p))

    def expected_items(self) -> float:
        """The number of items, ``n_items`` (columns; some may have no like)."""
        return float(self.n_items)

    def generate(self, rng: RNGLike, *, max_pairs: int | None = None) -> Interactions:
        """Draw the true preferences.

        Parameters
        ----------
        rng : Generator or seed
        max_pairs : int, optional
            Memory guard: :class:`~simrec._validation.SizeLimitError` if
            :meth:`expected_pairs` exceeds it (default ``DEFAULT_MAX_PAIRS``).

        Returns
        -------
        Interactions
            Shape (n_users, n_items).
        """
        if max_pairs is not None:
            check_int("max_pairs", max_pairs, low=0)
        check_pairs_budget(self.expected_pairs(), max_pairs, repr(self))
        gen = as_generator(rng)
        k, p = self.size_pmf()
        cdf = np.cumsum(p)
        idx = np.searchsorted(cdf, gen.random(self.n_users) * cdf[-1], side="right")
        sizes = k[np.minimum(idx, len(k) - 1)]
        pops = np.full(self.n_users, self.n_items, dtype=np.int64)
        indptr, items = uniform_subsets(sizes, pops, gen)
        return interactions_from_rows(sizes, items, (self.n_users, self.n_items))

"""Three-parameter Indian buffet process (Teh & Görür 2009; Tian's thesis §3.1.2).

The sequential ("user-wise") definition (docs/design.md §1): user 1 likes
Poisson(α) new items; user n+1, with n users before it, likes each existing item
i with probability (m_i − σ)/(n + c), m_i the users who like i so far, and
Poisson(α g(n)) new items, where

.. math:: g(n) = \\frac{\\Gamma(1+c)\\,\\Gamma(n+c+\\sigma)}{\\Gamma(n+1+c)\\,\\Gamma(c+\\sigma)},
          \\qquad g(0) = 1.

This module samples the same distribution *item-wise*, with no loop at all:

1. the number of items first liked by user n (0-based) is Poisson(α g(n)),
   independently over n, so every item's first user f is known up front;
2. for an item first liked by user f, the later likes follow a Pólya urn that
   starts with weight 1 − σ on "like" and (f + 1 + c) − (1 − σ) = f + c + σ on
   "not like" (each like adds 1 to the first weight, each non-like 1 to the
   second: exactly (m − σ)/(n + c)). A Pólya urn is a Beta mixture of i.i.d.
   draws, so the item has a weight π ~ Beta(1 − σ, f + c + σ) and each of the
   U − 1 − f later users likes it independently with probability π: its number
   of later likers is Binomial(U − 1 − f, π) and their set is a uniform subset.
   They are drawn as a Bernoulli process, the gaps between consecutive likers
   being Geometric(π) (:func:`simrec._subsets.bernoulli_subsets`): sorted and
   distinct by construction, O(pairs) with no sort. (Up to draws version 1,
   :data:`simrec._random.DRAWS_VERSION`, the count was drawn from the
   Binomial and the set by rejection with a sort,
   :func:`~simrec._subsets.uniform_subsets`: the same law, other numbers for
   a given seed, and several times slower at ML-20M size: bench/bench_scale.py,
   docs/design.md §9.)

Items are independent given their first users, so steps 1-2 vectorize over
items (tests compare with a literal user-wise implementation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from simrec._cache import use_kernel
from simrec._random import RNGLike, as_generator
from simrec._subsets import bernoulli_subsets
from simrec._validation import check_in_range, check_int, check_pairs_budget
from simrec.interactions import Interactions

__all__ = ["IBP"]


@dataclass(frozen=True)
class IBP:
    """Three-parameter (stable) Indian buffet process over ``n_users`` users.

    Parameters
    ----------
    n_users : int
        Number of users, >= 1.
    alpha : float
        Mass α > 0: each user likes Poisson(α) items marginally.
    c : float
        Concentration, c > −σ.
    sigma : float
        Stability exponent σ ∈ [0, 1); σ = 0 is the two-parameter IBP, larger σ
        gives a power-law item popularity (a fraction ≈ σ of the items is liked by
        a single user when n_users is large).

    Notes
    -----
    The number of items is random. The returned matrix has exactly the items
    that at least one user likes, as columns in order of first appearance
    (items first liked by user 0, then those first liked by user 1, ...; the
    order among the new items of one user is arbitrary — they are exchangeable).
    Users with no like are kept as empty rows.
    """

    n_users: int
    alpha: float
    c: float
    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_int("n_users", self.n_users, low=1))
        object.__setattr__(self, "alpha", check_in_range("alpha", self.alpha, 0, None, low_open=True))
        sigma = check_in_range("sigma", self.sigma, 0, 1, high_open=True)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "c", check_in_range("c", self.c, -sigma, None, low_open=True))

    def new_item_rates(self) -> np.ndarray:
        """α g(n) for n = 0..n_users−1: the Poisson mean of user n's new items, shape (n_users,)."""
        n = np.arange(self.n_users, dtype=np.float64)
        c, s = self.c, self.sigma
        logg = gammaln(1 + c) + gammaln(n + c + s) - gammaln(n + 1 + c) - gammaln(c + s)
        return self.alpha * np.exp(logg)

    def expected_items(self) -> float:
        """Exact expected number of items, the number being Poisson with mean

        .. math:: \\alpha \\sum_{n=0}^{U-1} g(n)

        (≈ α (ln U + γ) for σ = 0, c = 1; grows like U^σ for σ > 0).
        """
        return float(self.new_item_rates().sum())

    def expected_pairs(self) -> float:
        """Exact E[pairs] = α · n_users.

        Every user likes Poisson(α) items in distribution (the process is
        exchangeable, and user 1 likes Poisson(α)). Algebraically: with
        K_n items and S_n pairs after n users, user n+1 expects
        (S_n − σ K_n)/(n + c) + α g(n) likes, and E[S_n] = nα,
        E[K_n] = α Σ_{j<n} g(j) = α ((n + c) g(n) − c)/σ make this α.
        """
        return float(self.alpha * self.n_users)

    def generate(self, rng: RNGLike, *, max_pairs: int | None = None) -> Interactions:
        """Draw the true preferences (item-wise, see the module docstring).

        Parameters
        ----------
        rng : Generator or seed
        max_pairs : int, optional
            Memory guard on :meth:`expected_pairs` (default ``DEFAULT_MAX_PAIRS``).

        Returns
        -------
        Interactions
            Shape (n_users, number of items liked by someone).
        """
        if max_pairs is not None:
            check_int("max_pairs", max_pairs, low=0)
        check_pairs_budget(self.expected_pairs(), max_pairs, repr(self))
        gen = as_generator(rng)
        U = self.n_users
        first = np.repeat(np.arange(U, dtype=np.int64), gen.poisson(self.new_item_rates()))
        n_items = len(first)
        weight = gen.beta(1.0 - self.sigma, first + self.c + self.sigma) if n_items else np.zeros(0)
        # item-major: each item's first user, then every later user
        # independently with probability weight (bernoulli_subsets with
        # include_first), one column per item; stored user-major (CSR):
        # sorted indices, int8 ones, unique (an item's likers are distinct)
        col_ptr, rows = bernoulli_subsets(U - first, weight, gen, offsets=first, include_first=True)
        idx = np.int32 if max(U, n_items, len(rows)) < 2**31 else np.int64
        return Interactions(_item_major_to_csr(col_ptr, rows, U, n_items, idx))


#: Pairs from which :meth:`IBP.generate` transposes with the compiled counting sort instead of scipy's
#: ``tocsr`` (same arrays): below it, importing numba and loading the kernel (about 0.4 s) costs more than it
#: saves (about 30 ns per pair; docs/design.md §9), unless numba is loaded already.
_KERNEL_MIN_PAIRS = 1 << 23


def _item_major_to_csr(col_ptr: np.ndarray, rows: np.ndarray, n_users: int, n_items: int, idx: type) -> sp.csr_array:
    """The CSR array (int8 ones, ``idx`` indices) of the pattern given item by item (each item's users ascending).

    A counting sort by user (:func:`simrec._transpose_kernel.pattern_to_csr`, indices only) for large
    patterns; scipy's CSC -> CSR, which moves a data array too, for small ones. Both give the same arrays.
    """
    if use_kernel(len(rows), _KERNEL_MIN_PAIRS):
        from simrec._transpose_kernel import pattern_to_csr

        indptr, indices = pattern_to_csr(col_ptr, rows, n_users, idx)
        csr = sp.csr_array((np.ones(len(indices), dtype=np.int8), indices, indptr), shape=(n_users, n_items))
    else:
        csc = sp.csc_array((np.ones(len(rows), dtype=np.int8), rows, col_ptr.astype(idx)), shape=(n_users, n_items))
        csr = csc.tocsr()
    csr.has_canonical_format = True
    return csr

"""Per-user holdout of observed interactions into train and test.

Tian's thesis (shared/seeds/tian-thesis-offline-eval-error.txt, §3.5.1) holds
out 20% of each user's observed items as test data and trains recommenders on
the rest (docs/design.md §4). :func:`holdout` does that for every user at
once: one random key per observed pair, a rank of the key within its row, and
the pairs of rank below the user's test size go to test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._cache import use_kernel
from simrec._random import RNGLike, as_generator
from simrec._sampling import sample_distinct, sample_distinct_values
from simrec._validation import check_in_range
from simrec.interactions import Interactions

__all__ = ["Split", "holdout", "holdout_sizes"]


@dataclass(frozen=True)
class Split:
    """A train/test partition of observed interactions.

    Parameters
    ----------
    train : Interactions, shape (n_users, n_items)
        Observed pairs used to train recommenders.
    test : Interactions, shape (n_users, n_items)
        Held-out observed pairs: the observed relevance set of each user.

    Both have the shape and row order of the observed data they come from
    (row ``u`` is the same user in ``observed``, ``train`` and ``test``), and
    ``train + test == observed`` with no pair in both. Ids (if any) follow.
    """

    train: Interactions
    test: Interactions

    @property
    def n_users(self) -> int:
        return self.train.n_users

    @property
    def n_items(self) -> int:
        return self.train.n_items

    @property
    def evaluated(self) -> np.ndarray:
        """Boolean mask, shape (n_users,): users with at least one test item.

        Users outside the mask are *not evaluated* (docs/design.md §4); pass
        it as ``evaluated=`` to the functions of :mod:`simrec.metrics`.
        """
        return self.test.user_counts() > 0


def holdout_sizes(profile_sizes: np.ndarray, test_fraction: float = 0.2) -> np.ndarray:
    """Number of test items per user: ``test_fraction * n_u`` rounded half up.

    .. math:: n^{\\mathrm{test}}_u = \\left\\lfloor f\\, n_u + \\tfrac12 \\right\\rfloor

    Parameters
    ----------
    profile_sizes : ndarray of int, shape (n_users,)
        Observed profile sizes :math:`n_u`.
    test_fraction : float, default 0.2
        :math:`f \\in (0, 1)`; the thesis's 20% by default.

    Returns
    -------
    ndarray of int64, shape (n_users,)

    Notes
    -----
    Rounding half up (rather than LensKit's ``round``, half to even) makes the
    rule monotone in :math:`n_u`; at the default :math:`f = 0.2` no profile
    size gives an exact half, so both rules agree (n_u = 1, 2 -> 0 test items;
    3..7 -> 1; 8..12 -> 2; ...). A relative tolerance of 1e-9 absorbs
    floating-point error in :math:`f n_u` (e.g. 0.7 * 45 = 31.499999999999996
    counts as 31.5 -> 32). Users whose rounded size is 0 (at :math:`f = 0.2`,
    profiles of 1 or 2 items) get no test item: they keep every observed item
    for training and are *not evaluated* downstream. No user is ever forced to
    have a test item, and for :math:`f \\le 1/2` every user with at least two
    items keeps at least one training item.
    """
    f = check_in_range("test_fraction", test_fraction, 0, 1, low_open=True, high_open=True)
    n = np.asarray(profile_sizes)
    if n.ndim != 1 or not np.issubdtype(n.dtype, np.integer):
        raise TypeError(f"`profile_sizes` must be a 1-d integer array; got {n.dtype} with shape {n.shape}")
    if n.size and n.min() < 0:
        raise ValueError(f"`profile_sizes` must be >= 0; got minimum {n.min()}")
    n = n.astype(np.int64, copy=False)
    x = f * n
    return np.floor(x + 0.5 + 1e-9 * np.maximum(x, 1.0)).astype(np.int64)


def holdout(observed: Interactions, test_fraction: float = 0.2, rng: RNGLike = None) -> Split:
    """Hold out a random ``test_fraction`` of each user's observed items.

    For every user :math:`u` with :math:`n_u` observed items,
    :math:`n^{\\mathrm{test}}_u = \\lfloor f n_u + 1/2 \\rfloor` items (see
    :func:`holdout_sizes`) are drawn uniformly without replacement as test, the
    rest are training items (Tian's thesis §3.5.1: "we held out 20% of each
    user's observed items as testing data").

    Parameters
    ----------
    observed : Interactions, shape (n_users, n_items)
        Observed interactions.
    test_fraction : float, default 0.2
        Fraction :math:`f \\in (0, 1)` of each user's items held out.
    rng : Generator, SeedSequence, int or None
        Randomness; the same seed gives the same split.

    Returns
    -------
    Split
        ``train`` and ``test``, both of shape (n_users, n_items) with the rows
        of ``observed``; users with no test item have ``Split.evaluated`` False.

    Notes
    -----
    Vectorized, no loop per user: the test positions of all users are drawn at
    once by :func:`simrec._sampling.sample_distinct` (uniform
    k-subsets of each row; their duplicates found through a table of each
    row's positions, no sort), O(nnz + n_test).
    """
    if not isinstance(observed, Interactions):
        raise TypeError(f"`observed` must be an Interactions; got {type(observed).__name__}")
    n_test = holdout_sizes(observed.user_counts(), test_fraction)
    gen = as_generator(rng)

    m = observed.matrix
    if use_kernel(m.nnz, _KERNEL_MIN_PAIRS):  # the same parts, one pass over the rows
        from simrec._rows_kernel import rows_partition

        j = sample_distinct_values(n_test, observed.user_counts(), gen)
        train_items, test_items = rows_partition(m.indptr, m.indices, n_test, j)
    else:
        t_rows, j = sample_distinct(n_test, observed.user_counts(), gen)
        is_test = np.zeros(m.nnz, dtype=bool)
        is_test[m.indptr[:-1][t_rows] + j] = True
        train_items, test_items = m.indices[~is_test], m.indices[is_test]

    def part(items: np.ndarray, counts: np.ndarray) -> Interactions:  # counts: the pairs of each row in items
        indptr = np.zeros(observed.n_users + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return Interactions.from_csr(
            indptr,
            items,
            m.shape,
            sort=False,  # a part of sorted rows, in their order, keeps them sorted
            user_ids=observed.user_ids,
            item_ids=observed.item_ids,
        )

    return Split(train=part(train_items, observed.user_counts() - n_test), test=part(test_items, n_test))


#: Observed pairs from which :func:`holdout` splits the rows with the compiled pass
#: (:func:`simrec._rows_kernel.rows_partition`; the same parts): below it, importing numba and loading the
#: kernel (about 0.4 s) costs more than it saves, unless numba is loaded already.
_KERNEL_MIN_PAIRS = 1 << 23

"""The recommender interface, ``top_n`` and the checks every recommender shares.

A recommender (docs/design.md §4) sees the training interactions and, for
the oracles only, the true relevance of the candidates. Its candidates are
:math:`C_u = I \\setminus \\mathrm{train}_u` (all items but the user's training
items). It returns top-N lists (n_users, n) of item indices padded with -1, or
dense scores with -inf at non-candidates whose descending order is its ranking.
"""

from __future__ import annotations

from typing import Literal, Protocol, overload, runtime_checkable

import numpy as np
import scipy.sparse as sp

from simrec._blocks import user_blocks
from simrec._cache import use_kernel
from simrec._random import RNGLike
from simrec._validation import check_int
from simrec.interactions import Interactions

__all__ = ["Recommender", "top_n", "lists_of"]

#: Relevant and training pairs from which :func:`check_relevant` looks for their common pairs with the
#: compiled merge (:func:`simrec._rows_kernel.rows_overlap`): below it, importing numba and loading the
#: kernel (about 0.4 s) costs more than it saves, unless numba is loaded already.
_KERNEL_MIN_PAIRS = 1 << 23


@runtime_checkable
class Recommender(Protocol):
    """What a recommender provides.

    Attributes
    ----------
    name : str
        Label used in result tables.

    Methods
    -------
    recommend(train, relevant, n, rng=None) -> ndarray of int64, shape (n_users, n)
        Top-n lists over the candidates :math:`C_u = I \\setminus
        \\mathrm{train}_u`, best first, -1 padding when :math:`|C_u| < n`.
    score(train, relevant, rng=None, users=None) -> ndarray of float64, shape (len(users), n_items)
        Scores of every item for the given users (default all), -inf at
        training items; ties are pre-broken by the recommender's own random
        tie-break, so a descending sort gives its ranking (for the baselines
        ``top_n(score(...), n)`` is distributed exactly as
        ``recommend(..., n)``; for LensKit scorers they agree up to ties).
        Popular, Random and the LensKit adapter also take
        ``exclude_train=False``: training items are scored like any other
        item (rankings among all items, :mod:`simrec.stress.sources`).

    ``relevant`` (csr_array (n_users, n_items)) is the true relevance of the
    candidates, truth_u - train_u; only oracles read it, others accept None.

    Optional: ``score_levels(train, relevant, users=None) -> TiedLevels or
    None`` (Random, Popular, Oracle): the ranking of ``score`` as levels with
    a uniformly random tie-break (:class:`simrec.recommenders.TiedLevels`),
    or None where it has no such form; ranking metrics that need only mid-ranks
    (AUC) then need no dense block (:func:`simrec.experiment.run_replicate`).

    Optional: ``recommend_users(train, relevant, n, rng, users) -> ndarray of
    int64, shape (len(users), n)`` (the LensKit adapter, whose lists are built
    one user at a time): the given users' rows of ``recommend(train,
    relevant, n, rng)``, at the cost of theirs only (:func:`lists_of`).
    """

    name: str

    def recommend(
        self, train: Interactions, relevant: sp.csr_array | None, n: int, rng: RNGLike = None
    ) -> np.ndarray: ...

    def score(
        self,
        train: Interactions,
        relevant: sp.csr_array | None,
        rng: RNGLike = None,
        users: np.ndarray | None = None,
    ) -> np.ndarray: ...


def lists_of(
    recommender: Recommender,
    train: Interactions,
    relevant: sp.csr_array | Interactions | None,
    n: int,
    rng: RNGLike,
    users: np.ndarray,
) -> np.ndarray:
    """The top-n lists of ``users`` (rows of ``recommend(train, relevant, n, rng)``), shape (len(users), n).

    A recommender with ``recommend_users`` (see :class:`Recommender`) builds
    only those users' lists; any other builds every user's and the rows are
    taken (the baselines draw their tie-breaks over every user, so their rows
    are only the same when every user's list is drawn).
    """
    some = getattr(recommender, "recommend_users", None)
    if callable(some):
        return np.asarray(some(train, relevant, n, rng, users))
    return np.asarray(recommender.recommend(train, relevant, n, rng))[users]


def top_n(scores: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n highest scores of each row, best first.

    Parameters
    ----------
    scores : ndarray of float, shape (n_users, n_items)
        Scores, -inf at non-candidates; no NaN.
    n : int
        List length, >= 1.

    Returns
    -------
    ndarray of int64, shape (n_users, n)
        Item indices in decreasing score; -1 where a row has fewer than n
        finite-or-+inf scores (not enough candidates), and when ``n > n_items``.

    Notes
    -----
    ``np.argpartition`` then a sort of the n selected, per block of users
    (:data:`simrec._blocks.BLOCK_ELEMENTS`), so a large matrix is handled without large
    temporaries. Ties are returned in an unspecified order: recommenders break
    them in their scores.
    """
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"`scores` must be 2-d (n_users, n_items); got shape {s.shape}")
    if not np.issubdtype(s.dtype, np.floating):
        raise TypeError(f"`scores` must be a float array; got dtype {s.dtype}")
    n = check_int("n", n, low=1)
    if np.isnan(s).any():
        raise ValueError("`scores` must not contain NaN (use -inf for non-candidates)")
    n_users, n_items = s.shape
    out = np.full((n_users, n), -1, dtype=np.int64)
    m = min(n, n_items)
    if m == 0:
        return out
    for blk in user_blocks(n_users, n_items):
        neg = -np.asarray(s[blk], dtype=np.float64)
        if m < n_items:
            idx = np.argpartition(neg, m - 1, axis=1)[:, :m]
        else:
            idx = np.broadcast_to(np.arange(n_items), neg.shape)
        vals = np.take_along_axis(neg, idx, axis=1)
        o = np.argsort(vals, axis=1)
        idx = np.take_along_axis(idx, o, axis=1)
        vals = np.take_along_axis(vals, o, axis=1)
        out[blk, :m] = np.where(vals < np.inf, idx, -1)
    return out


# -- shared checks -------------------------------------------------------------


def check_train(train: object) -> Interactions:
    if not isinstance(train, Interactions):
        raise TypeError(f"`train` must be an Interactions; got {type(train).__name__}")
    return train


@overload
def check_relevant(relevant: object, train: Interactions, required: Literal[True]) -> sp.csr_array: ...
@overload
def check_relevant(relevant: object, train: Interactions, required: bool) -> sp.csr_array | None: ...
def check_relevant(relevant: object, train: Interactions, required: bool) -> sp.csr_array | None:
    """Check ``relevant`` has train's shape; return it minus the training pairs.

    Oracles must rank only candidates, so relevant training pairs (if the
    caller passed the full truth) are dropped here rather than rejected.
    """
    if relevant is None:
        if required:
            raise ValueError("`relevant` is required by this recommender (it reads the true relevance); got None")
        return None
    if isinstance(relevant, Interactions):
        relevant = relevant.matrix
    if not isinstance(relevant, (sp.csr_array, sp.csr_matrix)):  # scipy's classes of format "csr"
        raise TypeError(f"`relevant` must be a scipy.sparse CSR array; got {type(relevant).__name__}")
    if relevant.shape != train.matrix.shape:
        raise ValueError(f"`relevant` must have the shape of `train` {train.matrix.shape}; got {relevant.shape}")
    if not required:
        return None
    rel = sp.csr_array(relevant)
    if not rel.has_canonical_format or (rel.nnz and (rel.data == 0).any()):
        rel = rel.copy()
        rel.sum_duplicates()
        rel.eliminate_zeros()
    # Training pairs in the relevance (usually none: the experiment passes
    # truth - train): one sparse element-wise product, a linear merge of each
    # row's sorted indices in scipy's C++ (O(nnz), no key arrays); from
    # _KERNEL_MIN_PAIRS pairs on (or once numba is loaded) the same merge
    # compiled, which stops at the first common pair and writes nothing.
    if use_kernel(rel.nnz + train.n_pairs, _KERNEL_MIN_PAIRS):
        from simrec._rows_kernel import rows_overlap

        if not rows_overlap(rel.indptr, rel.indices, train.matrix.indptr, train.matrix.indices, train.n_items):
            return rel
    overlap = rel.multiply(train.matrix)
    if overlap.count_nonzero() == 0:
        return rel
    out = sp.csr_array(rel - overlap)
    out.eliminate_zeros()
    out.sort_indices()
    return out


def check_users(users: object, n_users: int) -> np.ndarray:
    if users is None:
        return np.arange(n_users, dtype=np.int64)
    u = np.asarray(users)
    if u.ndim != 1 or not np.issubdtype(u.dtype, np.integer):
        raise TypeError(f"`users` must be a 1-d integer array of row indices; got dtype {u.dtype}, shape {u.shape}")
    if u.size and (u.min() < 0 or u.max() >= n_users):
        raise ValueError(f"`users` must be row indices in [0, {n_users}); got range [{u.min()}, {u.max()}]")
    return u.astype(np.int64, copy=False)


def train_mask(train: Interactions, users: np.ndarray) -> np.ndarray:
    """Dense boolean (len(users), n_items): training items of the given users."""
    return train.matrix[users].toarray() != 0


def lists_from_entries(rows: np.ndarray, pos: np.ndarray, items: np.ndarray, n_users: int, n: int) -> np.ndarray:
    """Assemble a (n_users, n) int64 list array, -1 where nothing was placed."""
    out = np.full((n_users, n), -1, dtype=np.int64)
    out[rows, pos] = items
    return out

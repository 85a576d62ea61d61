"""From rating records to a binary :class:`~simrec.interactions.Interactions`.

Every loader ends here, so the rating threshold lives in one place: the
``min_rating`` option of every loader is passed to :func:`binarize`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._validation import check_real
from ..interactions import Interactions

__all__ = ["binarize", "binarize_events"]


def binarize(
    users: ArrayLike,
    items: ArrayLike,
    ratings: ArrayLike | None = None,
    *,
    min_rating: float | None = None,
) -> Interactions:
    """Binary implicit-feedback interactions from (user, item[, rating]) records.

    A pair (u, i) is kept when some record of it has ``rating >= min_rating``
    (every record when ``min_rating`` is None, the default: every observed pair
    counts as consumed, as in Tian's thesis, §3.3). Duplicated pairs are merged.

    .. math:: X_{ui} = \\mathbb{1}\\big[\\exists\\, \\text{record } (u, i, r):
              r \\ge \\text{min\\_rating}\\big]

    Parameters
    ----------
    users, items : array-like of shape (n_records,)
        External user and item ids of each record (any sortable dtype: ints or
        strings). Missing values are refused.
    ratings : array-like of shape (n_records,), optional
        Rating of each record; needed only with ``min_rating``. A NaN rating
        never passes the threshold.
    min_rating : float, optional
        Keep records whose rating is at least this value. Default None (keep
        every record).

    Returns
    -------
    Interactions
        Shape (n_users, n_items) over the users and items that keep at least
        one pair; ``user_ids`` / ``item_ids`` hold the sorted unique external
        ids (row/column order = id order). No records left gives a 0 x 0
        matrix; loaders turn that into a :class:`DatasetError`.

    Raises
    ------
    ValueError
        Unequal lengths, missing ids, or ``min_rating`` without ``ratings``.
    """
    ucode, icode, uids, iids, _ = _codes(users, items, ratings, min_rating)
    return interactions_from_codes(ucode, icode, (len(uids), len(iids)), np.asarray(uids), np.asarray(iids))


def binarize_events(
    users: ArrayLike,
    items: ArrayLike,
    timestamps: ArrayLike,
    ratings: ArrayLike | None = None,
    *,
    min_rating: float | None = None,
) -> tuple[Interactions, np.ndarray]:
    """:func:`binarize`, and the time of each pair's latest kept record.

    Parameters
    ----------
    users, items, ratings, min_rating
        As :func:`binarize`.
    timestamps : array-like of shape (n_records,)
        Time of each record (numbers).

    Returns
    -------
    Interactions
        As :func:`binarize`.
    ndarray of float64, shape (n_pairs,)
        For each stored pair, in the matrix's order (row by row, items
        ascending), the largest timestamp of its kept records: what a
        leave-last-out split (:func:`simrec.loo.leave_last_out`) needs.
    """
    t = np.asarray(timestamps, dtype=np.float64)
    if t.shape != np.shape(users):
        raise ValueError(f"`timestamps` must have the shape of `users` {np.shape(users)}; got {t.shape}")
    ucode, icode, uids, iids, keep = _codes(users, items, ratings, min_rating)
    t = t if keep is None else t[keep]
    key = ucode.astype(np.int64) * max(len(iids), 1) + icode
    order = np.lexsort((t, key))
    key, t = key[order], t[order]
    last = np.r_[key[1:] != key[:-1], True] if len(key) else np.zeros(0, dtype=bool)
    inter = interactions_from_codes(ucode, icode, (len(uids), len(iids)), np.asarray(uids), np.asarray(iids))
    return inter, t[last]  # unique keys ascending = the CSR's (row, item) order


def _codes(
    users: ArrayLike, items: ArrayLike, ratings: ArrayLike | None, min_rating: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Checked, filtered records as integer codes: (user codes, item codes, user ids, item ids, kept mask or None)."""
    u = np.asarray(users)
    i = np.asarray(items)
    if u.ndim != 1 or i.ndim != 1 or len(u) != len(i):
        raise ValueError(f"`users` and `items` must be 1-d of equal length; got shapes {u.shape} and {i.shape}")
    r = None
    if ratings is not None:
        r = np.asarray(ratings, dtype=np.float64)
        if r.shape != u.shape:
            raise ValueError(f"`ratings` must have the shape of `users` {u.shape}; got {r.shape}")
    keep = None
    if min_rating is not None:
        threshold = check_real("min_rating", min_rating)
        if r is None:
            raise ValueError("`min_rating` needs `ratings`; got ratings=None")
        keep = r >= threshold
        u, i = u[keep], i[keep]
    ucode, uids = pd.factorize(u, sort=True)
    icode, iids = pd.factorize(i, sort=True)
    if len(ucode) and (ucode.min() < 0 or icode.min() < 0):
        raise ValueError("`users` and `items` must not contain missing values (None/NaN)")
    return ucode, icode, uids, iids, keep


def interactions_from_codes(
    users: np.ndarray,
    items: np.ndarray,
    shape: tuple[int, int],
    user_ids: np.ndarray | None = None,
    item_ids: np.ndarray | None = None,
) -> Interactions:
    """Canonical :class:`Interactions` from in-range index pairs (duplicates merged).

    Same result as :meth:`Interactions.from_pairs` without its range checks,
    de-duplicating with a sort instead of ``np.unique`` (much slower in NumPy
    2.4 on millions of pairs).
    """
    n_users, n_items = shape
    key = np.asarray(users, dtype=np.int64) * n_items + np.asarray(items, dtype=np.int64)
    key.sort()
    if len(key) > 1:
        key = key[np.r_[True, key[1:] != key[:-1]]]
    u, i = np.divmod(key, max(n_items, 1))
    indptr = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n_users), out=indptr[1:])
    return Interactions.from_csr(indptr, i, (n_users, n_items), sort=False, user_ids=user_ids, item_ids=item_ids)

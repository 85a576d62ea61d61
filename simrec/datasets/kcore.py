"""Iterative k-core filtering of an interaction matrix."""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from ..interactions import Interactions
from .binarize import interactions_from_codes

__all__ = ["k_core", "k_core_pairs", "keep_pairs"]


def k_core(inter: Interactions, k: int) -> Interactions:
    """The k-core: the largest sub-matrix whose users and items all have ≥ k pairs.

    Repeatedly drops every pair whose user or item has fewer than ``k`` pairs
    (counting only pairs still kept), until nothing changes; each round is one
    vectorized pass over the pairs (``bincount``), so the cost is
    O(rounds x n_pairs). This is how the Amazon "5-core" files were made
    (McAuley et al.), with k = 5.

    .. math:: \\forall u: |I_u| \\ge k \\;\\text{or}\\; |I_u| = 0, \\qquad
              \\forall i: |U_i| \\ge k \\;\\text{or}\\; |U_i| = 0

    Parameters
    ----------
    inter : Interactions
        Shape (n_users, n_items).
    k : int
        Minimum number of pairs per user and per item, ``k >= 1``. ``k = 1``
        only removes empty rows and columns.

    Returns
    -------
    Interactions
        Shape (n_users', n_items'): only users and items with at least ``k``
        remaining pairs, in their original order, ids carried along. It may be
        0 x 0 (nothing survives); that is a result, not an error.
    """
    return keep_pairs(inter, k_core_pairs(inter, k))


def k_core_pairs(inter: Interactions, k: int) -> np.ndarray:
    """Which stored pairs the k-core keeps: a boolean mask in the matrix's order (see :func:`k_core`).

    With :func:`keep_pairs` it carries per-pair data (e.g. timestamps) through
    a k-core: ``keep_pairs(inter, mask)`` and ``values[mask]`` stay aligned.
    """
    if not isinstance(inter, Interactions):
        raise TypeError(f"`inter` must be an Interactions; got {type(inter).__name__}")
    k = check_int("k", k, low=1)
    rows = inter.row_of_pairs()
    cols = inter.matrix.indices.astype(np.int64)
    alive = np.ones(len(cols), dtype=bool)
    while True:
        ucount = np.bincount(rows[alive], minlength=inter.n_users)
        icount = np.bincount(cols[alive], minlength=inter.n_items)
        drop = alive & ((ucount[rows] < k) | (icount[cols] < k))
        if not drop.any():
            return alive
        alive &= ~drop


def keep_pairs(inter: Interactions, keep: np.ndarray) -> Interactions:
    """The sub-matrix of the stored pairs where ``keep`` is True, without the rows and columns left empty.

    Users and items stay in their original order with their ids, so the kept
    pairs keep their relative order (per-pair arrays can be filtered with ``keep``).
    """
    rows = inter.row_of_pairs()
    cols = inter.matrix.indices.astype(np.int64)
    keep = np.asarray(keep, dtype=bool)
    if keep.shape != cols.shape:
        raise ValueError(f"`keep` must have one entry per stored pair, shape {cols.shape}; got {keep.shape}")
    keep_users = np.flatnonzero(np.bincount(rows[keep], minlength=inter.n_users) > 0)
    keep_items = np.flatnonzero(np.bincount(cols[keep], minlength=inter.n_items) > 0)
    new_user = np.full(inter.n_users, -1, dtype=np.int64)
    new_user[keep_users] = np.arange(len(keep_users))
    new_item = np.full(inter.n_items, -1, dtype=np.int64)
    new_item[keep_items] = np.arange(len(keep_items))
    uid = None if inter.user_ids is None else np.asarray(inter.user_ids)[keep_users]
    iid = None if inter.item_ids is None else np.asarray(inter.item_ids)[keep_items]
    return interactions_from_codes(
        new_user[rows[keep]], new_item[cols[keep]], (len(keep_users), len(keep_items)), uid, iid
    )

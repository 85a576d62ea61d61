"""The common currency: a binary user x item interaction matrix.

Every generator returns an :class:`Interactions`, every sampler maps one to a
subset of it, every statistic reads one (docs/design.md, "The common
currency"). A truth may also carry per-pair *gains* (the LDA truth's like
counts, graded relevance for :func:`simrec.metrics.ndcg_lenskit07`); the
matrix itself stays binary, so everything that reads only the pairs is
unaffected, and an :class:`Interactions` without gains costs nothing extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Interactions"]

#: dtype of the stored ones. ``int8`` keeps a pair at 5 bytes (index + value);
#: cast before products that could overflow (:meth:`Interactions.as_float`).
DATA_DTYPE = np.int8


@dataclass(frozen=True, eq=False)
class Interactions:
    """A binary user x item matrix, optionally with external ids.

    Parameters
    ----------
    matrix : scipy.sparse.csr_array, shape (n_users, n_items)
        Rows are users, columns items; every stored value is 1, column indices
        are sorted within each row and unique. Use :meth:`from_pairs` or
        :meth:`from_csr` to build one; the constructor checks the invariants.
    user_ids : ndarray of shape (n_users,), optional
        External user ids (a real dataset's), or, for observed data derived from
        a simulated truth, whatever the producer documents.
    item_ids : ndarray of shape (n_items,), optional
        External item ids.
    gains : ndarray of shape (n_pairs,), optional
        Graded relevance of every stored pair, aligned with ``matrix.indices``
        (pair ``j`` is user ``row_of_pairs()[j]``, item ``matrix.indices[j]``);
        finite and > 0. ``None`` (default) means binary: every pair has gain 1,
        and nothing is stored. The LDA generator sets it to the number of
        draws of the pair (its like count); the Uniform and IBP truths and
        observed data have none. Only gain-aware metrics read it
        (:func:`simrec.metrics.ndcg_lenskit07`); every other metric, sampler
        and statistic reads the binary pairs.
    """

    matrix: sp.csr_array
    user_ids: np.ndarray | None = None
    item_ids: np.ndarray | None = None
    gains: np.ndarray | None = None

    def __post_init__(self) -> None:
        m = self.matrix
        if not isinstance(m, sp.csr_array):
            raise TypeError(f"`matrix` must be a scipy.sparse.csr_array; got {type(m).__name__}")
        if not m.has_canonical_format:
            raise ValueError("`matrix` must have sorted, unique column indices per row (canonical CSR)")
        if m.nnz and not (m.data.min() == 1 and m.data.max() == 1):  # no temporary of the pairs' size
            raise ValueError("`matrix` must be binary: every stored value must be 1")
        for name, ids, n in (("user_ids", self.user_ids, m.shape[0]), ("item_ids", self.item_ids, m.shape[1])):
            if ids is not None and len(ids) != n:
                raise ValueError(f"`{name}` must have length {n}; got {len(ids)}")
        if self.gains is not None:
            g = np.asarray(self.gains)
            if g.ndim != 1 or len(g) != m.nnz:
                raise ValueError(f"`gains` must be 1-d with one value per stored pair ({m.nnz}); got shape {g.shape}")
            if not (np.issubdtype(g.dtype, np.integer) or np.issubdtype(g.dtype, np.floating)) or g.dtype == np.bool_:
                raise TypeError(f"`gains` must hold integer or float values; got dtype {g.dtype}")
            if len(g) and not (np.isfinite(g).all() and g.min() > 0):
                raise ValueError(f"`gains` must be finite and > 0; got range [{g.min()}, {g.max()}]")
            object.__setattr__(self, "gains", g)

    # -- construction -------------------------------------------------------
    @classmethod
    def from_csr(
        cls,
        indptr: np.ndarray,
        indices: np.ndarray,
        shape: tuple[int, int],
        *,
        sort: bool = True,
        user_ids: np.ndarray | None = None,
        item_ids: np.ndarray | None = None,
        gains: np.ndarray | None = None,
    ) -> Interactions:
        """Build from CSR parts whose rows hold unique column indices.

        ``sort=True`` sorts each row's indices (one vectorized lexsort; the
        optional ``gains``, aligned with ``indices``, follow their pairs);
        pass ``False`` only when they are already sorted.
        """
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices)
        if sort and len(indices):
            rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr))
            order = np.lexsort((indices, rows))
            indices = indices[order]
            if gains is not None:
                gains = np.asarray(gains)[order]
        idx_dtype = np.int32 if max(shape) < 2**31 and len(indices) < 2**31 else np.int64
        mat = sp.csr_array(
            (np.ones(len(indices), dtype=DATA_DTYPE), indices.astype(idx_dtype, copy=False), indptr.astype(idx_dtype)),
            shape=shape,
        )
        mat.has_sorted_indices = True
        return cls(mat, user_ids, item_ids, gains)

    @classmethod
    def from_pairs(
        cls,
        users: np.ndarray,
        items: np.ndarray,
        shape: tuple[int, int] | None = None,
        *,
        user_ids: np.ndarray | None = None,
        item_ids: np.ndarray | None = None,
    ) -> Interactions:
        """Build from (user, item) index pairs; duplicates are merged.

        ``shape`` defaults to (max user + 1, max item + 1).
        """
        users = np.asarray(users, dtype=np.int64)
        items = np.asarray(items, dtype=np.int64)
        if users.shape != items.shape or users.ndim != 1:
            raise ValueError(f"`users` and `items` must be 1-d of equal length; got {users.shape} and {items.shape}")
        if shape is None:
            shape = (int(users.max(initial=-1)) + 1, int(items.max(initial=-1)) + 1)
        n_users, n_items = shape
        if len(users) and (users.min() < 0 or users.max() >= n_users or items.min() < 0 or items.max() >= n_items):
            raise ValueError(f"pair indices must lie inside shape {shape}")
        key = np.sort(users * n_items + items)
        if len(key) > 1:  # sort + mask: np.unique is several times slower on int64 here
            key = key[np.concatenate(([True], key[1:] != key[:-1]))]
        u, i = np.divmod(key, n_items)
        indptr = np.zeros(n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(u, minlength=n_users), out=indptr[1:])
        return cls.from_csr(indptr, i, (n_users, n_items), sort=False, user_ids=user_ids, item_ids=item_ids)

    # -- shape and margins --------------------------------------------------
    @property
    def n_users(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def n_pairs(self) -> int:
        return int(self.matrix.nnz)

    @property
    def density(self) -> float:
        cells = self.n_users * self.n_items
        return self.n_pairs / cells if cells else float("nan")

    def user_counts(self) -> np.ndarray:
        """Profile sizes, shape (n_users,)."""
        return np.diff(self.matrix.indptr).astype(np.int64)

    def item_counts(self) -> np.ndarray:
        """Item popularities (number of users per item), shape (n_items,)."""
        return np.bincount(self.matrix.indices, minlength=self.n_items).astype(np.int64)

    def row_of_pairs(self) -> np.ndarray:
        """User index of every stored pair, aligned with ``matrix.indices``."""
        return np.repeat(np.arange(self.n_users, dtype=np.int64), self.user_counts())

    def as_float(self, dtype: type = np.float32) -> sp.csr_array:
        """The matrix with a float dtype, for products."""
        return self.matrix.astype(dtype)

    @property
    def graded(self) -> bool:
        """Whether the pairs carry :attr:`gains` (else every gain is 1)."""
        return self.gains is not None

    def gain_matrix(self, dtype: type | None = None) -> sp.csr_array:
        """The matrix with each pair's gain as its value (1 where :attr:`gains` is None), shape (n_users, n_items).

        ``dtype`` defaults to that of the gains (of the binary matrix when there are none).
        """
        m = self.matrix
        if dtype is None:
            dtype = m.dtype if self.gains is None else self.gains.dtype
        data = np.ones(m.nnz, dtype=dtype) if self.gains is None else self.gains.astype(dtype, copy=False)
        out = sp.csr_array((data, m.indices, m.indptr), shape=m.shape)
        out.has_sorted_indices = True
        return out

    # -- transforms ---------------------------------------------------------
    def select_users(self, rows: np.ndarray) -> Interactions:
        """The sub-matrix of the given user rows (in that order); ids and gains follow."""
        rows = np.asarray(rows, dtype=np.int64)
        uid = None if self.user_ids is None else np.asarray(self.user_ids)[rows]
        if self.gains is None:
            return Interactions(sp.csr_array(self.matrix[rows]), uid, self.item_ids)
        sub = sp.csr_array(self.gain_matrix()[rows])
        return Interactions.from_csr(
            sub.indptr, sub.indices, sub.shape, sort=False, user_ids=uid, item_ids=self.item_ids, gains=sub.data
        )

    def to_frame(self) -> pd.DataFrame:
        """Tidy (user, item) index pairs, one row per stored pair (and their ``gain`` when graded)."""
        import pandas as pd  # only here: importing simrec stays free of pandas

        cols = {"user": self.row_of_pairs(), "item": self.matrix.indices.astype(np.int64)}
        if self.gains is not None:
            cols["gain"] = self.gains
        return pd.DataFrame(cols)

    def __repr__(self) -> str:
        graded = ", graded" if self.gains is not None else ""
        return f"Interactions(n_users={self.n_users}, n_items={self.n_items}, n_pairs={self.n_pairs}{graded})"

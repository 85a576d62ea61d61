"""The common currency: a binary user x item interaction matrix.

Every generator returns an :class:`Interactions`, every sampler maps one to a
subset of it, every statistic reads one (docs/design.md, "The common
currency"). A truth may also carry per-pair *gains* (the LDA truth's like
counts, graded relevance for :func:`simrec.metrics.ndcg_lenskit07`; observed
data the ratings of :class:`simrec.observation.Rated`) and a per-pair
*preference* in (0, 1] (:meth:`Interactions.pair_preference`, read by the
preference-driven observation and the ratings); the matrix itself stays
binary, so everything that reads only the pairs is unaffected, and an
:class:`Interactions` without them costs nothing extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from simrec._cache import use_kernel

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd

__all__ = ["Interactions"]

#: Pairs per slice of :meth:`Interactions.item_counts` (its intp copy, 16 MiB, stays below the mmap threshold).
_COUNT_BLOCK = 1 << 21
#: Pairs from which :meth:`Interactions.item_counts` counts with the compiled pass: below it, importing numba
#: and loading the kernel (about 0.4 s) costs more than it saves, unless numba is loaded already.
_COUNT_KERNEL_MIN = 1 << 24

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
    preference : ndarray of float, shape (n_pairs,), optional
        The model's graded preference of every stored pair, in (0, 1],
        aligned like ``gains``. ``None`` (default) means: derived from the
        gains when :meth:`pair_preference` is asked (each gain over its
        user's largest gain), 1 for a binary matrix; nothing is stored. Set
        by a generator whose preference is not a function of its gains
        (:class:`simrec.preference.LatentFactor`: Φ of the pair's affinity).
        Only :meth:`pair_preference` reads it (the preference-driven sampler
        and the ratings of :mod:`simrec.observation`).
    """

    matrix: sp.csr_array
    user_ids: np.ndarray | None = None
    item_ids: np.ndarray | None = None
    gains: np.ndarray | None = None
    preference: np.ndarray | None = None

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
        if self.preference is not None:
            p = np.asarray(self.preference)
            if p.ndim != 1 or len(p) != m.nnz:
                raise ValueError(
                    f"`preference` must be 1-d with one value per stored pair ({m.nnz}); got shape {p.shape}"
                )
            if not np.issubdtype(p.dtype, np.floating):
                raise TypeError(f"`preference` must hold float values; got dtype {p.dtype}")
            if len(p) and not (p.min() > 0 and p.max() <= 1):  # NaN fails both
                raise ValueError(f"`preference` must be in (0, 1]; got range [{p.min()}, {p.max()}]")
            object.__setattr__(self, "preference", p)

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
        preference: np.ndarray | None = None,
    ) -> Interactions:
        """Build from CSR parts whose rows hold unique column indices.

        ``sort=True`` sorts each row's indices (one vectorized lexsort; the
        optional ``gains`` and ``preference``, aligned with ``indices``,
        follow their pairs); pass ``False`` only when they are already sorted.
        """
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices)
        if sort and len(indices):
            rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr))
            order = np.lexsort((indices, rows))
            indices = indices[order]
            if gains is not None:
                gains = np.asarray(gains)[order]
            if preference is not None:
                preference = np.asarray(preference)[order]
        idx_dtype = np.int32 if max(shape) < 2**31 and len(indices) < 2**31 else np.int64
        mat = sp.csr_array(
            (np.ones(len(indices), dtype=DATA_DTYPE), indices.astype(idx_dtype, copy=False), indptr.astype(idx_dtype)),
            shape=shape,
        )
        mat.has_sorted_indices = True
        return cls(mat, user_ids, item_ids, gains, preference)

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
        """Item popularities (number of users per item), shape (n_items,), int64.

        Counted by slices of ``_COUNT_BLOCK`` pairs: ``np.bincount`` converts
        int32 indices to intp first, a copy of the whole index array (320 MB
        of fresh memory at ML-20M size); a slice's copy stays in cache. The
        same counts (measured on 40M pairs: 0.21 -> 0.14 s CPU). From
        ``_COUNT_KERNEL_MIN`` pairs on (or once numba is loaded), one compiled
        pass (:func:`simrec._rows_kernel.column_counts`: 0.11-0.16 -> 0.06 s).
        """
        idx = self.matrix.indices
        if use_kernel(len(idx), _COUNT_KERNEL_MIN):  # one compiled pass, the same counts
            from simrec._rows_kernel import column_counts

            return column_counts(idx, self.n_items)
        counts = np.zeros(self.n_items, dtype=np.int64)
        for s in range(0, len(idx), _COUNT_BLOCK):
            counts += np.bincount(idx[s : s + _COUNT_BLOCK], minlength=self.n_items)
        return counts

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

    def pair_preference(self, rows: slice | None = None) -> np.ndarray:
        """Graded preference in (0, 1] of the stored pairs of ``rows`` (all rows by default), float64.

        .. math:: p_{ui} = \\begin{cases} \\text{preference}_{ui} & \\text{when stored} \\\\
                  g_{ui} / \\max_{j \\in \\tilde I_u} g_{uj} & \\text{else, with gains } g \\\\
                  1 & \\text{binary} \\end{cases}

        The middle case is the graded truths whose gains are like counts (the
        LDA's draws of the pair, the HPF's Poisson count): a pair's count
        relative to the user's most-liked item, so every user's favourite
        has preference 1 (Tian's thesis §5.3 asks for a preference with
        support (0, 1]; the count models carry no other scale). A binary
        truth likes every liked item fully.

        Parameters
        ----------
        rows : slice, optional
            Consecutive user rows ``r0:r1`` (step 1); their pairs
            ``indptr[r0]:indptr[r1]`` are returned, so a caller can work in
            blocks of rows without a per-pair array of the whole matrix.

        Returns
        -------
        ndarray of float64, shape (pairs of the rows,)
        """
        indptr = self.matrix.indptr
        r0, r1, step = (0, self.n_users, 1) if rows is None else rows.indices(self.n_users)
        if step != 1:
            raise ValueError(f"`rows` must be a slice of consecutive rows (step 1); got step {step}")
        p0, p1 = int(indptr[r0]), int(indptr[max(r0, r1)])
        if self.preference is not None:
            return self.preference[p0:p1].astype(np.float64)
        if self.gains is None:
            return np.ones(p1 - p0)
        g = self.gains[p0:p1].astype(np.float64)
        counts = np.diff(indptr[r0 : max(r0, r1) + 1])
        full = counts > 0
        if len(g):
            top = np.maximum.reduceat(g, (indptr[r0:r1][full] - p0).astype(np.int64))
            g /= np.repeat(top, counts[full])
        return g

    def gain_matrix(self, dtype: npt.DTypeLike | None = None) -> sp.csr_array:
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
        """The sub-matrix of the given user rows (in that order); ids, gains and preference follow."""
        rows = np.asarray(rows, dtype=np.int64)
        uid = None if self.user_ids is None else np.asarray(self.user_ids)[rows]
        if self.gains is None and self.preference is None:
            return Interactions(sp.csr_array(self.matrix[rows]), uid, self.item_ids)
        # the positions of the selected pairs, carried as the values of a float64 matrix (exact below 2**53)
        pos = sp.csr_array(
            (np.arange(1, self.n_pairs + 1, dtype=np.float64), self.matrix.indices, self.matrix.indptr),
            shape=self.matrix.shape,
        )
        sub = sp.csr_array(pos[rows])
        at = sub.data.astype(np.int64) - 1
        return Interactions.from_csr(
            sub.indptr,
            sub.indices,
            sub.shape,
            sort=False,
            user_ids=uid,
            item_ids=self.item_ids,
            gains=None if self.gains is None else self.gains[at],
            preference=None if self.preference is None else self.preference[at],
        )

    def to_frame(self) -> pd.DataFrame:
        """Tidy (user, item) index pairs, one row per stored pair (and their ``gain`` when graded)."""
        import pandas as pd  # only here: importing simrec stays free of pandas

        cols = {"user": self.row_of_pairs(), "item": self.matrix.indices.astype(np.int64)}
        if self.gains is not None:
            cols["gain"] = self.gains
        if self.preference is not None:
            cols["preference"] = self.preference
        return pd.DataFrame(cols)

    def __repr__(self) -> str:
        graded = ", graded" if self.gains is not None or self.preference is not None else ""
        return f"Interactions(n_users={self.n_users}, n_items={self.n_items}, n_pairs={self.n_pairs}{graded})"

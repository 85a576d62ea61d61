"""Rankings given as score levels with ties: the mid-ranks of chosen pairs without dense scores.

The baselines' scores are a *level* plus a random tie-break that never
crosses a level gap: Random (one level), Popular (the item's training
popularity), Oracle (1 for relevant candidates, 0 for the rest).
:class:`TiedLevels` describes the levels of every user's candidates in
O(items + sparse pairs) memory, and :meth:`TiedLevels.mid_ranks` gives the
mid-rank of chosen (user, item) pairs (e.g. every relevant item, which is all
that AUC needs) in time proportional to the pairs and the distinct levels,
not to users x items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.sparse as sp

import simrec._blocks as _blocks
from simrec._sampling import row_ids
from simrec._validation import check_int

__all__ = ["TiedLevels"]


def _canonical(m: sp.sparray, shape: tuple[int, int], name: str) -> sp.csr_array:
    """``m`` as a canonical csr_array of ``shape`` (sorted, duplicate-free indices); ValueError on a wrong shape."""
    out = sp.csr_array(m)
    if out.shape != shape:
        raise ValueError(f"`{name}` must have shape {shape}; got {out.shape}")
    if not out.has_canonical_format:
        out = out.copy()
        out.sum_duplicates()
    return out


@dataclass(frozen=True, eq=False)
class TiedLevels:
    r"""A ranking of each row's candidates by level, ties broken uniformly at random per row.

    Row r (a user) ranks its candidates :math:`C_r = \{i : (r, i) \notin E\}`
    by the level pair :math:`(1[(r, i) \in P],\ g_i)` in decreasing
    lexicographic order (promoted pairs first, then by item level) and breaks
    ties uniformly at random, independently per row. The baselines' scores
    have this form: Random (one level), Popular (:math:`g_i` = training
    popularity, ``Popular.score`` adds a tie-break below 1), Oracle
    (:math:`P` = the relevant pairs, :math:`g = 0`).

    Parameters
    ----------
    n_rows : int
        Rows (users) ranked.
    item_level : ndarray of float, shape (n_items,)
        :math:`g`, finite.
    promoted : csr_array, shape (n_rows, n_items), optional
        :math:`P`, pairs ranked above every other candidate of their row;
        values ignored (``None``: none).
    excluded : csr_array, shape (n_rows, n_items), optional
        :math:`E`, the non-candidates (e.g. training items); values ignored.
        A pair in both is excluded.

    Raises
    ------
    ValueError
        On non-finite levels or mismatched shapes.
    """

    n_rows: int
    item_level: np.ndarray
    promoted: sp.csr_array | None = None
    excluded: sp.csr_array | None = None

    def __post_init__(self) -> None:
        n_rows = check_int("n_rows", self.n_rows, low=0)
        g = np.asarray(self.item_level, dtype=np.float64)
        if g.ndim != 1:
            raise ValueError(f"`item_level` must be one-dimensional; got shape {g.shape}")
        if not np.isfinite(g).all():
            raise ValueError("`item_level` must be finite; got NaN or infinite values")
        shape = (n_rows, len(g))
        object.__setattr__(self, "n_rows", n_rows)
        object.__setattr__(self, "item_level", g)
        for name in ("promoted", "excluded"):
            given = getattr(self, name)
            object.__setattr__(self, name, None if given is None else _canonical(given, shape, name))

    @property
    def shape(self) -> tuple[int, int]:
        """(n_rows, n_items)."""
        return (self.n_rows, len(self.item_level))

    def n_candidates(self) -> np.ndarray:
        """:math:`|C_r|` per row, shape (n_rows,), int64."""
        n_rows, n_items = self.shape
        if self.excluded is None:
            return np.full(n_rows, n_items, dtype=np.int64)
        return n_items - np.diff(self.excluded.indptr).astype(np.int64)

    def _codes(self) -> tuple[int, np.ndarray]:
        """The number of distinct item levels and every item's level code (0 = lowest)."""
        vocab, code = np.unique(self.item_level, return_inverse=True)
        return len(vocab), code.astype(np.int64).reshape(-1)

    def to_dense(self) -> np.ndarray:
        """The levels as a dense score block with its ties, shape (n_rows, n_items), -inf at non-candidates.

        A pair's score is its level code: the item level's code 0, 1, ...
        plus the number of distinct item levels if it is promoted (exact
        integers, the same order and ties), so :func:`simrec.metrics.auc` of
        this block is what :meth:`mid_ranks` gives without it.
        O(n_rows x n_items): a reference for tests and small blocks.
        """
        n_rows, n_items = self.shape
        n_g, code_g = self._codes()
        out = np.repeat(code_g.astype(np.float64)[None, :], n_rows, axis=0)
        for m, value in ((self.promoted, float(n_g)), (self.excluded, -np.inf)):
            if m is not None and m.nnz:
                out[row_ids(np.diff(m.indptr)), m.indices] += value
        return out

    def mid_ranks(self, pairs: Sequence[sp.sparray]) -> list[sp.csr_array]:
        r"""1-based mid-ranks, best first, of the stored pairs of several matrices.

        Parameters
        ----------
        pairs : sequence of csr_array, each shape (n_rows, n_items)
            The (row, item) pairs whose mid-ranks are wanted (values
            ignored), e.g. the observed and the true relevance sets.

        Returns
        -------
        list of csr_array of float64, one per matrix
            The structure of the (canonical) input; each stored value is

            .. math:: R_{ri} = A_{ri} + \frac{T_{ri} + 1}{2}

            with :math:`A_{ri}` the candidates of row r at a higher level
            and :math:`T_{ri}` those at an equal level (the pair included):
            the average of the positions (1 = first) that the tied candidates
            share, i.e. the pair's expected position under the uniformly
            random tie-break. -1 where the item is not a candidate.

        Notes
        -----
        Per block of rows, a reusable int8 cell table (the technique of
        :func:`simrec.metrics._common.membership`) marks the block's promoted
        and excluded pairs and is cleared again, so every look-up is O(1)
        and a block costs O(its pairs), never O(rows x items). Each row's
        histogram of candidate levels is the global histogram of the item
        levels, minus its excluded and promoted pairs at their item level,
        plus its promoted candidates at their promoted level. Cost
        O(pairs + promoted + excluded + rows x distinct levels).
        """
        n_rows, n_items = self.shape
        mats = [_canonical(p, (n_rows, n_items), "pairs") for p in pairs]
        values = [np.empty(m.nnz) for m in mats]
        if n_rows == 0 or n_items == 0:
            return [sp.csr_array((v, m.indices, m.indptr), shape=m.shape) for m, v in zip(mats, values)]
        n_g, code_g = self._codes()
        n_codes = 2 * n_g if self.promoted is not None else n_g  # promoted code = item code + n_g
        base = np.bincount(code_g, minlength=n_codes)
        code32 = code_g.astype(np.int32)
        # int32 offsets: a block's cells (< _CELL_BYTES) and histogram cells (<= BLOCK_ELEMENTS) fit; the size
        # read from simrec._blocks at the call (one rule, which tests may change), not copied at import
        step = max(1, min(_CELL_BYTES // n_items, _blocks.BLOCK_ELEMENTS // n_codes))
        cell = np.zeros(min(step, n_rows) * n_items, dtype=np.int8)  # 0 free, _PROMOTED, _EXCLUDED
        for r0 in range(0, n_rows, step):
            r1 = min(r0 + step, n_rows)
            width = (r1 - r0) * n_codes
            marked = {}
            for name, m, mark in (("promoted", self.promoted, _PROMOTED), ("excluded", self.excluded, _EXCLUDED)):
                if m is not None:  # excluded last: a pair in both is excluded
                    rows, items = _block_pairs(m, r0, r1)
                    cells = rows * n_items
                    cells += items
                    cell[cells] = mark
                    marked[name] = (rows, items, cells)
            # the histogram of each row's candidate levels
            hist: np.ndarray = np.zeros(width, dtype=np.int64)
            minus = []
            if "promoted" in marked:
                rows, items, cells = marked["promoted"]
                keep = cell[cells] == _PROMOTED  # promoted candidates
                at = rows[keep] * n_codes
                at += code32[items[keep]]
                minus.append(at)
                hist += np.bincount(at + n_g, minlength=width)
            if "excluded" in marked:
                rows, items, _ = marked["excluded"]
                at = rows * n_codes
                at += code32[items]
                minus.append(at)
            if minus:
                hist -= np.bincount(np.concatenate(minus), minlength=width)
            hist = hist.reshape(r1 - r0, n_codes)
            hist += base
            twice = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]  # candidates at this level or higher
            twice *= 2
            twice -= hist
            twice += 1  # 2 A + T + 1 = 2 R
            twice = twice.reshape(-1)
            for m, v in zip(mats, values):
                rows, items = _block_pairs(m, r0, r1)
                cells = rows * n_items
                cells += items
                c = cell[cells]
                if n_codes == 1:  # one level (Random): the row alone
                    at = rows
                else:
                    at = rows * n_codes
                    at += code32[items]
                    if self.promoted is not None:
                        np.add(at, n_g, out=at, where=c == _PROMOTED)
                out = v[m.indptr[r0] : m.indptr[r1]]
                np.multiply(twice[at], 0.5, out=out)
                out[c == _EXCLUDED] = -1.0
            for _, _, cells in marked.values():
                cell[cells] = 0
        return [sp.csr_array((v, m.indices, m.indptr), shape=m.shape) for m, v in zip(mats, values)]


#: Cells (bytes) of :meth:`TiedLevels.mid_ranks`' reusable table for a block of rows.
_CELL_BYTES = 2**23
_PROMOTED, _EXCLUDED = 1, 2


def _block_pairs(m: sp.csr_array, r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
    """Row (relative to r0) and item of every stored pair of rows r0:r1, int32."""
    lo, hi = m.indptr[r0], m.indptr[r1]
    return row_ids(np.diff(m.indptr[r0 : r1 + 1]), dtype=np.int32), m.indices[lo:hi].astype(np.int32, copy=False)

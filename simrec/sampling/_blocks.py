"""Row-block banded storage of a conditional probability matrix P(column | R).

P(r|R) (N x n) is numerically banded: for a global rank R the sampled rank r
concentrates within a few standard deviations of 1 + (n-1)(R-1)/(N-1), and
entries further out are below 1e-30 of the row's largest. Storing, for each
block of consecutive rows, only the contiguous column window that holds every
entry above ``rel_cutoff`` x (row max) cuts memory and every product by the
band's share (about 40% at N = 20,720, n = 501), and a row block stays in
cache for the fused EM pass (:meth:`BlockMatrix.em_pass`).

Entries inside a block's window keep their exact values (even below the
cutoff); entries outside every window are treated as 0. With ``rel_cutoff =
0`` nothing is dropped except exact zeros at the edges.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["BlockMatrix", "block_product", "build_blocks"]

#: Largest temporary (rows x columns) log grid evaluated at once.
_MAX_GRID = 1 << 21


@dataclass(frozen=True, eq=False)
class BlockMatrix:
    """An (n_rows, n_cols) non-negative matrix stored as row blocks with column windows.

    ``blocks[i] = (r0, r1, c0, c1, values)`` with ``values`` of shape
    ``(r1 - r0, c1 - c0)``: the entries of rows r0..r1-1 in columns c0..c1-1.
    """

    shape: tuple[int, int]
    blocks: tuple[tuple[int, int, int, int, np.ndarray], ...]

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return sum(b[4].size for b in self.blocks)

    def dense(self) -> np.ndarray:
        """The full matrix (zeros outside the windows)."""
        out = np.zeros(self.shape)
        for r0, r1, c0, c1, v in self.blocks:
            out[r0:r1, c0:c1] = v
        return out

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` for x of shape (n_cols,) or (n_cols, j)."""
        out = np.zeros((self.shape[0],) + x.shape[1:])
        for r0, r1, c0, c1, v in self.blocks:
            out[r0:r1] = block_product(v, x, c0, c1)
        return out

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        """``A.T @ y`` for y of shape (n_rows,) or (n_rows, j)."""
        out = np.zeros((self.shape[1],) + y.shape[1:])
        for r0, r1, c0, c1, v in self.blocks:
            out[c0:c1] += v.T @ y[r0:r1]
        return out

    def gram(self, w: np.ndarray) -> np.ndarray:
        """``A.T @ diag(w) @ A`` (n_cols x n_cols) for row weights ``w >= 0``."""
        g = np.zeros((self.shape[1], self.shape[1]))
        sw = np.sqrt(w)
        for r0, r1, c0, c1, v in self.blocks:
            s = sw[r0:r1]
            if not s.any():
                continue
            b = v * s[:, None]
            g[c0:c1, c0:c1] += b.T @ b
        return g

    def em_pass(
        self, pi: np.ndarray, ratio: np.ndarray, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One fused EM sweep: ``pi_new = pi * (A @ ratio)`` and ``q_new = A.T @ pi_new``.

        Each row block is read once for both products. ``out`` (optional, not
        ``pi``) receives ``pi_new``: only the rows of the blocks are written,
        so its other rows must be 0 (e.g. a buffer from ``np.zeros`` reused
        across iterations; the same numbers as a fresh array).
        """
        pi_new = np.zeros_like(pi) if out is None else out  # rows outside every block: 0 (A is 0 there)
        q_new = np.zeros(self.shape[1])
        for r0, r1, c0, c1, v in self.blocks:
            p = np.multiply(pi[r0:r1], block_product(v, ratio, c0, c1), out=pi_new[r0:r1])
            q_new[c0:c1] += v.T @ p
        return pi_new, q_new

    def restrict_columns(self, cols: np.ndarray) -> BlockMatrix:
        """The sub-matrix of the columns ``cols`` (sorted, distinct), shape (n_rows, len(cols)).

        Keeps only the blocks whose window meets ``cols`` (entries copied,
        exact); rows of the other blocks are 0 on ``cols``. When one dense
        block over the kept rows and every column of ``cols`` is at most twice
        as large as the kept windows (few columns), that single block is
        returned instead: a product then costs one BLAS call. One pass over
        the stored entries.
        """
        cols = np.asarray(cols, dtype=np.int64)
        blocks = []
        for r0, r1, c0, c1, v in self.blocks:
            lo, hi = np.searchsorted(cols, [c0, c1])
            if lo == hi:
                continue
            blocks.append((r0, r1, int(lo), int(hi), np.ascontiguousarray(v[:, cols[lo:hi] - c0])))
        shape = (self.shape[0], int(cols.size))
        if not blocks:
            return BlockMatrix(shape, ())
        r_lo, r_hi = blocks[0][0], blocks[-1][1]
        if (r_hi - r_lo) * cols.size <= 2 * sum(b[4].size for b in blocks):
            dense = np.zeros((r_hi - r_lo, cols.size))
            for r0, r1, lo, hi, v in blocks:
                dense[r0 - r_lo : r1 - r_lo, lo:hi] = v
            blocks = [(r_lo, r_hi, 0, int(cols.size), dense)]
        for b in blocks:
            b[4].setflags(write=False)
        return BlockMatrix(shape, tuple(blocks))


def block_product(v: np.ndarray, x: np.ndarray, c0: int, c1: int) -> np.ndarray:
    """``v @ x[c0:c1]`` for a block ``v`` of columns c0..c1-1; a one-column block times a vector as ``v[:, 0] * x[c0]``.

    The same numbers (each entry is one product, rounded once, however it is
    computed), without numpy's matmul on an inner dimension of 1: it does not
    use BLAS there and costs about 25x the multiplication (88 vs 4 µs for
    20,720 rows). Few observed columns (few users) make such blocks common:
    a repeat of the README's ranks file fits on one or two sampled ranks.
    """
    if c1 - c0 == 1 and x.ndim == 1:
        return v[:, 0] * x[c0]
    return v @ x[c0:c1]


def build_blocks(
    n_rows: int,
    n_cols: int,
    log_block: Callable[[int, int], np.ndarray],
    *,
    rel_cutoff: float,
    block_rows: int,
) -> BlockMatrix:
    """Evaluate ``log_block(r0, r1)`` (log entries of rows r0..r1-1, all columns) block by block.

    Keeps, per block, the narrowest column window holding every entry whose
    value is at least ``rel_cutoff`` times its row's maximum.
    """
    block_rows = max(1, min(block_rows, _MAX_GRID // max(n_cols, 1)))
    log_cut = math.log(rel_cutoff) if rel_cutoff > 0 else -math.inf
    blocks = []
    for r0 in range(0, n_rows, block_rows):
        r1 = min(n_rows, r0 + block_rows)
        lg = log_block(r0, r1)
        rowmax = lg.max(axis=1, keepdims=True)
        keep = (lg >= rowmax + log_cut) & (lg > -np.inf)
        cols = keep.any(axis=0)
        if not cols.any():
            continue
        c0 = int(np.argmax(cols))
        c1 = n_cols - int(np.argmax(cols[::-1]))
        vals = np.exp(lg[:, c0:c1])
        vals.setflags(write=False)
        blocks.append((r0, r1, c0, c1, vals))
    return BlockMatrix((n_rows, n_cols), tuple(blocks))

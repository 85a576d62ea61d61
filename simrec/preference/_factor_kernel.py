"""Compiled kernels of :class:`simrec.preference.LatentFactor`: per-row water-filling and Poisson thinning.

numba, deterministic and single-threaded (no ``parallel``, no fastmath, no
random numbers: every uniform comes from the caller's numpy Generator; the
one intrinsic, a cache prefetch hint, changes no value).
Compiled on first use and cached in simrec's user cache folder, never in
the package's (:func:`simrec._cache.cached_njit`); importing this module imports numba, so :mod:`simrec.preference.factor`
imports it only when a truth is drawn.

A block of users is a float32 matrix ``w`` (users x items, the items padded
to a multiple of the chunk width with zero weights). Chunks of ``chunk``
consecutive items carry their sum and largest weight, so that a row's few
large cells are found without reading every cell again, and a draw from
the row's categorical law costs a search over the chunks plus a scan of one
chunk. Every float64 sum is taken in column order, whatever the loop
shape, so the kernels' numbers are those of the plain sequential loops.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from simrec._cache import cached_njit

__all__ = ["chunk_stats", "stats_caps", "row_caps", "thin_rows", "pair_dots"]

#: Candidates between a chunk's prefetch and its scan in :func:`thin_rows`.
_AHEAD = 8


@intrinsic
def _prefetch(typingctx, arr, row, col):  # type: ignore[no-untyped-def]
    """Hint the processor to bring ``arr[row, col]`` into cache (``llvm.prefetch``: read, keep; no effect on results)."""
    sig = types.void(arr, row, col)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        idx = [context.cast(builder, a, t, types.intp) for a, t in zip(args[1:], signature.args[1:])]
        ptr = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
            context, builder, signature.args[0], ary, idx, wraparound=False
        )
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        # llvmlite mangles the name for its LLVM (llvm.prefetch.p0i8; newer LLVMs upgrade it to .p0)
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p], ir.FunctionType(ir.VoidType(), [i8p] + [i32] * 3))
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@cached_njit(nogil=True)
def chunk_stats(w: np.ndarray, chunk: int, sums: np.ndarray, tops: np.ndarray) -> None:
    """Sum (float64) and largest weight of every chunk of every row: ``sums``, ``tops`` of shape (n_rows, n_chunks).

    Each chunk's sum is the sequential float64 sum of its cells in column
    order. Eight chunks are summed side by side in eight scalar accumulators
    (the same numbers, without every addition waiting on the previous one).
    """
    n, width = w.shape
    n_chunks = width // chunk
    for r in range(n):
        c0 = 0
        while c0 + 8 <= n_chunks:
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
            m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = np.float32(0.0)
            for j in range(c0 * chunk, (c0 + 1) * chunk):
                x0, x1, x2, x3 = w[r, j], w[r, j + chunk], w[r, j + 2 * chunk], w[r, j + 3 * chunk]
                x4, x5, x6, x7 = w[r, j + 4 * chunk], w[r, j + 5 * chunk], w[r, j + 6 * chunk], w[r, j + 7 * chunk]
                a0 += x0
                a1 += x1
                a2 += x2
                a3 += x3
                a4 += x4
                a5 += x5
                a6 += x6
                a7 += x7
                m0, m1, m2, m3 = max(m0, x0), max(m1, x1), max(m2, x2), max(m3, x3)
                m4, m5, m6, m7 = max(m4, x4), max(m5, x5), max(m6, x6), max(m7, x7)
            sums[r, c0], tops[r, c0] = a0, m0
            sums[r, c0 + 1], tops[r, c0 + 1] = a1, m1
            sums[r, c0 + 2], tops[r, c0 + 2] = a2, m2
            sums[r, c0 + 3], tops[r, c0 + 3] = a3, m3
            sums[r, c0 + 4], tops[r, c0 + 4] = a4, m4
            sums[r, c0 + 5], tops[r, c0 + 5] = a5, m5
            sums[r, c0 + 6], tops[r, c0 + 6] = a6, m6
            sums[r, c0 + 7], tops[r, c0 + 7] = a7, m7
            c0 += 8
        for c in range(c0, n_chunks):
            s = 0.0
            m = np.float32(0.0)
            for j in range(c * chunk, (c + 1) * chunk):
                x = w[r, j]
                s += x
                m = max(m, x)
            sums[r, c] = s
            tops[r, c] = m


@cached_njit(nogil=True)
def stats_caps(
    w: np.ndarray,
    n_items: int,
    chunk: int,
    targets: np.ndarray,
    tau: float,
    sums: np.ndarray,
    tops: np.ndarray,
    scale_out: np.ndarray,
    rest_out: np.ndarray,
    big_ptr: np.ndarray,
    big_cols: np.ndarray,
    big_pi: np.ndarray,
    big_count: np.ndarray,
) -> None:
    """Zero the padding columns ``n_items:``; :func:`chunk_stats` and :func:`row_caps`; zero the cells it returns.

    One call per few rows, right after their weights are computed, so that
    every pass reads cells still in cache (the arguments are
    :func:`row_caps`'s, sliced to the rows; ``big_ptr`` holds absolute
    offsets into ``big_cols`` and ``big_pi``). The cells with
    :math:`\\pi > \\tau` are then set to 0 in ``w`` and their chunks'
    sums recomputed (in column order, as :func:`chunk_stats`), which is
    what :func:`thin_rows` expects: ``scale_out`` and ``rest_out`` are
    those of the weights before.
    """
    n, width = w.shape
    for r in range(n):
        for j in range(n_items, width):
            w[r, j] = 0.0
    chunk_stats(w, chunk, sums, tops)
    row_caps(w, sums, tops, chunk, targets, tau, scale_out, rest_out, big_ptr, big_cols, big_pi, big_count)
    for r in range(n):
        for t in range(big_ptr[r], big_ptr[r] + big_count[r]):
            w[r, big_cols[t]] = 0.0
        for t in range(big_ptr[r], big_ptr[r] + big_count[r]):
            ch = big_cols[t] // chunk
            s = 0.0
            for j in range(ch * chunk, (ch + 1) * chunk):
                s += w[r, j]
            sums[r, ch] = s


@cached_njit(nogil=True)
def row_caps(
    w: np.ndarray,
    sums: np.ndarray,
    tops: np.ndarray,
    chunk: int,
    targets: np.ndarray,
    tau: float,
    scale_out: np.ndarray,
    rest_out: np.ndarray,
    big_ptr: np.ndarray,
    big_cols: np.ndarray,
    big_pi: np.ndarray,
    big_count: np.ndarray,
) -> None:
    """Water-filling scale c_r and the cells with :math:`\\pi = \\min(1, c_r w) > \\tau` of every row.

    Parameters
    ----------
    w : float32 (n_rows, width); sums : float64 and tops : float32 (n_rows, n_chunks)
        Weights and their chunk statistics (:func:`chunk_stats`).
    chunk : int
    targets : float64 (n_rows,)
        :math:`n_r`, with :math:`\\sum_i \\min(1, c_r w_{ri}) = n_r` to solve.
    tau : float
        Cells above it are returned (one uniform each, drawn by the caller).
    scale_out, rest_out : float64 (n_rows,)
        :math:`c_r` (inf when every positive cell is capped, 0 for a row of
        zeros) and the row's weight outside the returned cells.
    big_ptr : int64 (n_rows + 1,)
        Row r writes its cells at ``big_ptr[r]:``; room for
        :math:`\\lfloor n_r/\\tau \\rfloor + 1` cells (each cell with
        :math:`c_r w > \\tau` adds more than τ to :math:`\\sum_i \\min(1, c_r w_i) = n_r`).
    big_cols, big_pi : int64, float64
        Their columns (ascending) and :math:`\\pi`; ``big_count`` (n_rows,) how many.

    Notes
    -----
    Per row, from :math:`c = n/W` (at most the solution): collect the cells
    above :math:`\\tau/(2c)` (only the chunks whose top passes it are read)
    and iterate

    .. math:: c \\leftarrow \\frac{n - |H(c)|}{W - \\sum_{i \\in H(c)} w_i},
              \\qquad H(c) = \\{\\text{collected } i : c\\,w_i \\ge 1\\},

    which increases monotonically to the solution of the collected cells
    (the uncollected ones counted uncapped; never above the true solution)
    and stops when H no longer grows. Every uncollected cell weighs at most
    the threshold, so the solution is exact, and every cell with
    :math:`c w > \\tau` collected, when :math:`c \\le 2 c_{\\text{start}}`;
    otherwise the row collects again from the new c (seldom). At ML-20M-like
    weights c ends within 2 c_start for most rows, about 0.6 n cells
    collected per row.

    The weight outside the capped set (the iteration's denominator) and the
    row's weight outside the returned cells (``rest_out``) are sums of the
    cells they count (the uncollected chunks' sums, the uncollected cells of
    the read chunks, the collected cells below the cap), never the row's
    total minus the rest: when a few cells carry nearly all of a row's
    weight (strong ``signal`` or ``pop_exponent``), that difference is
    rounding noise, which made c overshoot the solution, more than
    :math:`\\lfloor n/\\tau \\rfloor + 1` cells pass τ, and the kernel write
    past the row's room (issue 24: found by a calibration at s = 12, γ = 6).
    A row that would still need more room raises ValueError instead.
    """
    n_rows, width = w.shape
    n_chunks = width // chunk
    buf_w = np.empty(width, dtype=np.float64)
    buf_c = np.empty(width, dtype=np.int64)
    for r in range(n_rows):
        total = 0.0
        for ch in range(n_chunks):
            total += sums[r, ch]
        big_count[r] = 0
        if total <= 0.0:
            scale_out[r] = 0.0
            rest_out[r] = 0.0
            continue
        n = targets[r]
        c = n / total
        while True:
            start = c
            thr = tau / (2.0 * c) if math.isfinite(c) else 0.0
            k = 0
            below = 0.0  # the weight of the cells not collected, summed directly (see Notes)
            for ch in range(n_chunks):
                if tops[r, ch] > thr:
                    for j in range(ch * chunk, (ch + 1) * chunk):
                        if w[r, j] > thr:
                            buf_w[k] = w[r, j]
                            buf_c[k] = j
                            k += 1
                        else:
                            below += w[r, j]
                else:
                    below += sums[r, ch]
            n_cap = -1
            while True:  # the fixed point of the capped set
                cnt = 0
                left = below  # the weight outside the capped set
                for t in range(k):
                    if c * buf_w[t] >= 1.0:
                        cnt += 1
                    else:
                        left += buf_w[t]
                if cnt == n_cap:
                    break
                n_cap = cnt
                if left <= 0.0 or n - cnt <= 0.0:
                    c = np.inf
                    break
                c = max(c, (n - cnt) / left)
            if thr == 0.0 or not c > 2.0 * start:
                break
        scale_out[r] = c
        rest = below
        at = big_ptr[r]
        room = big_ptr[r + 1] - at
        m = 0
        for t in range(k):  # the cells with c w > tau, in column order
            if c * buf_w[t] > tau:
                if m == room:  # cannot happen when c <= the solution (Notes); never write past the row's room
                    raise ValueError("row_caps: more cells above tau than floor(n / tau) + 1 (water-filling overshot)")
                big_cols[at + m] = buf_c[t]
                big_pi[at + m] = min(1.0, c * buf_w[t])
                m += 1
            else:
                rest += buf_w[t]
        big_count[r] = m
        rest_out[r] = rest if math.isfinite(c) else 0.0


@cached_njit(nogil=True)
def thin_rows(
    w: np.ndarray,
    sums: np.ndarray,
    chunk: int,
    scale: np.ndarray,
    cand_ptr: np.ndarray,
    x: np.ndarray,
    accept: np.ndarray,
    rate_mult: float,
    out: np.ndarray,
) -> None:
    """The thinned Poisson process of every row over its cells with :math:`\\pi \\le \\tau`.

    ``w`` and ``sums`` as :func:`stats_caps` leaves them (the cells with
    :math:`\\pi > \\tau` zeroed). Row r's candidates
    ``cand_ptr[r]:cand_ptr[r+1]`` each take the cell where the running sum
    of the row's remaining weights passes ``x[q]`` times their total: the
    first chunk whose cumulative sum exceeds it (walked from a guide table
    of the row's cumulative sums: the same chunk as a binary search), then a
    scan inside the chunk. A candidate is kept when
    :math:`\\text{accept}_q \\cdot m \\pi < -\\log(1 - \\pi)`,
    :math:`\\pi = c_r w`, :math:`m` = ``rate_mult`` (decided without the
    logarithm when :math:`\\pi + \\pi^2/2 \\le -\\log(1-\\pi) \\le \\pi + \\pi^2/2 +
    \\pi^3/(3(1-\\pi))` already decides it, with a margin of 1e-12 over
    rounding: the same decisions). ``out[q]`` is the column, or -1 for a
    rejected candidate (or one that rounding put past the row's last
    positive weight, about one in 1e15).

    Two passes: every candidate's chunk and residual target first, then the
    scans, each prefetching the chunk ``_AHEAD`` candidates on (the block is
    far larger than the cache, and the scans' reads are random).
    """
    n_rows, width = w.shape
    n_chunks = width // chunk
    n_q = cand_ptr[n_rows]
    chunk_of = np.empty(n_q, dtype=np.int64)
    resid_of = np.empty(n_q, dtype=np.float64)
    cum = np.empty(n_chunks, dtype=np.float64)
    guide = np.empty(n_chunks + 1, dtype=np.int64)
    for r in range(n_rows):
        q0, q1 = cand_ptr[r], cand_ptr[r + 1]
        if q1 == q0:
            continue
        acc = 0.0
        for ch in range(n_chunks):
            acc += sums[r, ch]
            cum[ch] = acc
        # guide[g]: the number of chunks whose cumulative sum is below g / n_chunks of the total (a starting guess)
        guide[:] = 0
        inv = n_chunks / acc if acc > 0.0 else 0.0  # a row of zeros (its rest was rounding): no cell is picked
        for ch in range(n_chunks):
            guide[min(n_chunks, int(cum[ch] * inv))] += 1
        seen = 0
        for g in range(n_chunks + 1):
            seen, guide[g] = seen + guide[g], min(seen, n_chunks - 1)
        for q in range(q0, q1):
            target = x[q] * acc
            lo = guide[min(n_chunks, int(x[q] * n_chunks))]
            while lo > 0 and cum[lo - 1] > target:  # the first chunk whose cumulative sum exceeds the target
                lo -= 1
            while lo < n_chunks - 1 and cum[lo] <= target:
                lo += 1
            chunk_of[q] = lo
            resid_of[q] = target - (cum[lo - 1] if lo > 0 else 0.0)
    r = 0
    ahead_row = 0
    for q in range(n_q):
        qa = q + _AHEAD
        if qa < n_q:
            while cand_ptr[ahead_row + 1] <= qa:
                ahead_row += 1
            _prefetch(w, ahead_row, chunk_of[qa] * chunk)  # type: ignore[call-arg]
            _prefetch(w, ahead_row, chunk_of[qa] * chunk + chunk - 1)
        while cand_ptr[r + 1] <= q:
            r += 1
        start = chunk_of[q] * chunk
        resid = resid_of[q]
        run = 0.0
        pick = -1
        for j in range(start, start + chunk):
            run += w[r, j]
            if run > resid:
                pick = j
                break
        if pick >= 0:
            pi = scale[r] * w[r, pick]
            lhs = accept[q] * rate_mult * pi
            if lhs < pi * (1.0 + 0.5 * pi) * (1.0 - 1e-12):
                pass  # below the series' lower bound: kept
            elif lhs >= pi * (1.0 + 0.5 * pi + pi * pi / (3.0 * (1.0 - pi))) * (1.0 + 1e-12):
                pick = -1  # above its upper bound: rejected
            elif not lhs < -math.log1p(-pi):
                pick = -1
        out[q] = pick


@cached_njit(nogil=True)
def pair_dots(a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray, out: np.ndarray) -> None:
    """``out[j] = a[rows[j]] · b[cols[j]]`` (float64), without gathering the rows first."""
    k = a.shape[1]
    for j in range(len(rows)):
        r = rows[j]
        c = cols[j]
        acc = 0.0
        for t in range(k):
            acc += a[r, t] * b[c, t]
        out[j] = acc

"""Uniform sampled evaluation: the conditional distribution P(r | R) and drawing sampled ranks from it.

Notation (docs/design.md §5): N candidate items, one held-out relevant item
per user with **global rank** R in [1, N]. Sampled evaluation ranks it among
itself and n - 1 sampled irrelevant items: its **sampled rank** r in [1, n] is
1 + the number of sampled negatives ranked above it.

* Uniform sampling **with replacement**: ``r - 1 ~ Binomial(n - 1, θ_R)``,
  ``θ_R = (R - 1)/(N - 1)`` (Krichene & Rendle 2020, §4.3; Li's dissertation
  eq. 28): :func:`sample_ranks_binomial`.
* Uniform sampling **without replacement**: ``r - 1 ~ Hypergeometric(N - 1,
  R - 1, n - 1)`` (population N - 1, R - 1 successes, n - 1 draws; dissertation
  §2.3.2): :func:`sample_ranks_hypergeometric`.

The closed-form samplers accept one candidate count per user (``n_items`` an
int array N_u of shape (M,), e.g. all items minus the user's training items),
as leave-one-out evaluation produces; :func:`log_rank_probabilities_from_shares`
gives P(r | θ) for any per-user θ_u = (R_u - 1)/(N_u - 1).

:class:`SamplingScheme` holds (N, n, with/without replacement) and builds the
n-column matrix P(r|R) once, in log space (log-factorial tables, ``xlogy``), so
that N = 140,000 and n = 3,200 neither overflow nor underflow.

Sampled ranks from scores, weighted sampling and actual item draws are in
:mod:`.ranks`; adaptive sampling in :mod:`.adaptive`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln, xlog1py, xlogy

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int
from simrec.sampling._blocks import BlockMatrix, build_blocks
from simrec.sampling._checks import check_rank_array

__all__ = [
    "SamplingScheme",
    "conditional_rank_matrix",
    "log_conditional_rank_probabilities",
    "log_rank_probabilities_from_shares",
    "sample_ranks_binomial",
    "sample_ranks_hypergeometric",
    "rank_histogram",
]


# ---------------------------------------------------------------------------
# P(r | R) in log space
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _log_factorials(n: int) -> np.ndarray:
    """log(i!) for i = 0..n (read-only)."""
    out = gammaln(np.arange(n + 1, dtype=np.float64) + 1.0)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=16)
def _log_factorials_padded(n: int, pad: int) -> np.ndarray:
    """log(i!) at position i + pad for i = -pad..n; +inf at negative i (so -lf -> -inf)."""
    out = np.full(n + 1 + pad, np.inf)
    out[pad:] = _log_factorials(n)
    out.setflags(write=False)
    return out


def _log_pmf_grid(ranks: np.ndarray, k: np.ndarray, sizes: np.ndarray | int, n_items: int, replace: bool) -> np.ndarray:
    """log P(r = k + 1 | R) on the grid ranks (b,) x k (d,); sample-set sizes per column.

    General path (any ranks, any columns, ``sizes`` scalar or one per column,
    as adaptive sampling needs). Binomial: ``log C(m, k) + k log θ +
    (m - k) log(1 - θ)`` with ``xlogy`` at θ in {0, 1}; hypergeometric:
    ``log C(R-1, k) + log C(N-R, m-k) - log C(N-1, m)`` from a log-factorial
    table padded with +inf at negative arguments (impossible cells -> -inf).
    """
    R = np.asarray(ranks, dtype=np.int64)[:, None]
    k = np.asarray(k, dtype=np.int64)[None, :]
    m = np.asarray(sizes, dtype=np.int64) - 1  # number of sampled negatives
    m = np.broadcast_to(m, k.shape) if m.ndim else np.full(k.shape, int(m))
    N = n_items
    top = max(N, int(m.max())) + 1
    lf = _log_factorials(top)
    if replace:
        return _log_binomial_grid((R - 1) / (N - 1.0), k, m, lf)
    pad = top + 1
    lfp = _log_factorials_padded(top, pad)
    out = (lf[R - 1] + lf[N - R]) - (lf[N - 1] - lf[m] - lf[N - 1 - m])
    out = out - lf[k] - lfp[pad + R - 1 - k] - lfp[pad + np.maximum(m - k, -1)] - lfp[pad + N - R - (m - k)]
    return out


def _log_binomial_grid(theta: np.ndarray, k: np.ndarray, m: np.ndarray, lf: np.ndarray) -> np.ndarray:
    """log Bin(k; m, θ) on the grid θ (b, 1) x k (1, d), m (1, d): ``log C(m, k) + k log θ + (m - k) log(1 - θ)``.

    ``xlogy``/``xlog1py`` make θ in {0, 1} exact; cells with k > m are -inf.
    ``lf`` is a log-factorial table covering max(m).
    """
    log_comb_m = lf[m] - lf[k] - lf[np.maximum(m - k, 0)]  # log C(m, k), shape (1, d)
    out = log_comb_m + xlogy(k, theta) + xlog1py(m - k, -theta)
    out[:, (k > m)[0]] = -np.inf
    return out


def _log_pmf_rows(r0: int, r1: int, n: int, n_items: int, replace: bool) -> np.ndarray:
    """log P(r|R) for rows R = r0+1..r1 and all columns r = 1..n (fast path for the scheme).

    Binomial: ``a_k + b_R + k c_R`` with ``c_R = log θ - log(1-θ)``,
    ``b_R = (n-1) log(1-θ)``, ``a_k = log C(n-1, k)``: one outer product and
    two broadcast additions, no transcendental function on the grid (rows
    with θ in {0, 1} are set exactly). Hypergeometric: the two terms that
    depend on R - k are Toeplitz, read as sliding-window views of the padded
    log-factorial table (no gather).
    """
    N, m = n_items, n - 1
    R = np.arange(r0 + 1, r1 + 1)
    b = R.size
    k = np.arange(n)
    lf = _log_factorials(N + 1)
    if replace:
        theta = (R - 1) / (N - 1.0)
        inner = (theta > 0) & (theta < 1)
        with np.errstate(divide="ignore"):
            l1 = np.log1p(-theta)
            c = np.where(inner, np.log(np.where(inner, theta, 0.5)) - l1, 0.0)
        out = np.multiply.outer(c, k.astype(np.float64))
        out += np.where(inner, m * l1, 0.0)[:, None]
        out += (lf[m] - lf[k] - lf[m - k])[None, :]
        for i in np.flatnonzero(~inner):
            out[i] = -np.inf
            out[i, 0 if theta[i] == 0 else m] = 0.0
        return out
    pad = N + n + 2
    lfp = _log_factorials_padded(N + 1, pad)
    swv = np.lib.stride_tricks.sliding_window_view
    # lf[R-1-k] = v[i + (n-1-k)], v[j] = lf[r0 - (n-1) + j]
    base = r0 - (n - 1)
    t1 = swv(lfp[pad + base : pad + base + b + n - 1], n)[:, ::-1]
    # lf[N-R-m+k] = u[(b-1-i) + k], u[j] = lf[N - r0 - 1 - m - (b-1) + j]
    c0 = N - r0 - 1 - m - (b - 1)
    t2 = swv(lfp[pad + c0 : pad + c0 + b + n - 1], n)[::-1, :]
    row = lf[R - 1] + lf[N - R] - (lf[N - 1] - lf[m] - lf[N - 1 - m])
    col = lf[k] + lf[m - k]
    out = row[:, None] - col[None, :]
    out -= t1
    out -= t2
    return out


def log_conditional_rank_probabilities(
    n_items: int, n: int, *, replace: bool = True, ranks: object = None
) -> np.ndarray:
    """log P(r | R) for r = 1..n at the global ranks ``ranks`` (default all 1..N).

    Parameters
    ----------
    n_items : int
        N >= 2.
    n : int
        Sample-set size, 1 <= n <= N (n - 1 sampled negatives).
    replace : bool, default True
        With replacement (binomial) or without (hypergeometric).
    ranks : array-like of int in [1, N], optional
        Rows to evaluate; ``None`` for all N (an N x n array, mind the memory).

    Returns
    -------
    ndarray of shape (len(ranks), n)
        Exact log-probabilities (``-inf`` where P = 0), computed from
        log-factorial tables and ``xlogy``: no overflow or underflow at
        N = 140,000, n = 3,200. The hypergeometric's differences of large
        log-factorials cost some digits: absolute error about N x 1e-16 on
        the log (1e-11 relative on P at N = 1e5).
    """
    n_items = check_int("n_items", n_items, low=2)
    n = check_int("n", n, low=1, high=n_items)
    rows = np.arange(1, n_items + 1) if ranks is None else check_rank_array("ranks", ranks, n_items)
    return _log_pmf_grid(rows, np.arange(n), n, n_items, bool(replace))


def log_rank_probabilities_from_shares(shares: object, n: int) -> np.ndarray:
    """log P(r | s) = log Binomial(r - 1; n - 1, s) for r = 1..n, one row per share s.

    .. math:: \\log P(r \\mid s) = \\log \\binom{n-1}{r-1} + (r-1) \\log s + (n-r) \\log(1-s)

    With replacement each of the n - 1 sampled negatives ranks above the
    held-out item with probability s, so ``r - 1 ~ Binomial(n - 1, s)``
    (K&R 2020 §4.3; Li's dissertation eq. 28). Under uniform sampling
    s = (R - 1)/(N - 1) and a row is the row R of
    :func:`log_conditional_rank_probabilities` (with replacement) for any N,
    e.g. each user's own candidate count N_u; under weighted sampling s is the
    above-weight share (:func:`above_weight_share`). Exact at s in {0, 1}
    (``xlogy``), computed in log space (no overflow at n = 3,200).

    Parameters
    ----------
    shares : array-like of float in [0, 1], shape (b,)
    n : int
        Sample-set size (>= 1).

    Returns
    -------
    ndarray of shape (b, n)
        ``-inf`` where P = 0.
    """
    n = check_int("n", n, low=1)
    s = np.asarray(shares, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"`shares` must be a non-empty 1-d array; got shape {s.shape}")
    if not np.isfinite(s).all() or (s < 0).any() or (s > 1).any():
        raise ValueError("`shares` must be in [0, 1]")
    k = np.arange(n, dtype=np.int64)[None, :]
    return _log_binomial_grid(s[:, None], k, np.full(k.shape, n - 1), _log_factorials(n))


@dataclass(frozen=True)
class SamplingScheme:
    """Uniform sampled evaluation: N items, sample sets of size n, with or without replacement.

    Builds P(r | R) once and caches it (:attr:`blocks`, :attr:`matrix`); pass
    the same scheme to every estimator to share it.

    Parameters
    ----------
    n_items : int
        N, the number of candidate items (>= 2).
    n : int
        Sample-set size: the held-out item plus n - 1 sampled negatives,
        2 <= n <= N (n > N raises even with replacement, as the issue asks).
    replace : bool, default True
        Sampling with replacement (binomial, K&R §4.3) or without
        (hypergeometric).
    tail_cutoff : float, default 1e-30
        Entries of P(r|R) below ``tail_cutoff`` times their row's largest entry
        are not stored (the banded storage of :mod:`._blocks`, about 41% of
        N x n at N = 20,720, n = 501). A sum over global ranks changes only if
        it is itself of the order of 1e-30 of its terms' scale: negligible for
        every estimator here. 0 keeps everything.

    Examples
    --------
    >>> s = SamplingScheme(n_items=10_000, n=100)
    >>> s.matrix.shape
    (10000, 100)
    """

    n_items: int
    n: int
    replace: bool = True
    tail_cutoff: float = 1e-30
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        check_int("n_items", self.n_items, low=2)
        check_int("n", self.n, low=2, high=self.n_items)
        if not isinstance(self.replace, (bool, np.bool_)):
            raise TypeError(f"`replace` must be a bool; got {self.replace!r}")
        check_in_range("tail_cutoff", self.tail_cutoff, 0, 1, high_open=True)

    @classmethod
    def cached(cls, n_items: int, n: int, replace: bool = True, tail_cutoff: float = 1e-30) -> SamplingScheme:
        """A process-wide shared scheme for these parameters (at most 16 kept, least recently used dropped).

        Everything cached on it (P(r|R), the uniform-prior correction problem)
        is then built once per (N, n, replace) however many callers ask.
        """
        n_items = check_int("n_items", n_items, low=2)
        n = check_int("n", n, low=2, high=n_items)
        if not isinstance(replace, (bool, np.bool_)):
            raise TypeError(f"`replace` must be a bool; got {replace!r}")
        tail_cutoff = check_in_range("tail_cutoff", tail_cutoff, 0, 1, high_open=True)
        return _shared_scheme(n_items, n, bool(replace), tail_cutoff)

    @cached_property
    def blocks(self) -> BlockMatrix:
        """P(r|R) as an (N, n) banded row-block matrix (rows R = 1..N, columns r = 1..n)."""
        N, n = self.n_items, self.n
        block_rows = int(min(4096, max(16, 8 * (N - 1) / max(n - 1, 1))))
        return build_blocks(
            N,
            n,
            lambda r0, r1: _log_pmf_rows(r0, r1, n, N, self.replace),
            rel_cutoff=self.tail_cutoff,
            block_rows=block_rows,
        )

    @cached_property
    def matrix(self) -> np.ndarray:
        """Dense P(r|R), shape (N, n), read-only: ``matrix[R - 1, r - 1]``."""
        out = self.blocks.dense()
        out.setflags(write=False)
        return out

    def log_probabilities(self, ranks: object = None) -> np.ndarray:
        """Exact log P(r|R) rows at ``ranks`` (see :func:`log_conditional_rank_probabilities`)."""
        return log_conditional_rank_probabilities(self.n_items, self.n, replace=self.replace, ranks=ranks)

    def sample(self, ranks: object, rng: RNGLike = None) -> np.ndarray:
        """Sampled ranks for global ``ranks`` under this scheme (shape preserved)."""
        fn = sample_ranks_binomial if self.replace else sample_ranks_hypergeometric
        return fn(ranks, self.n_items, self.n, rng=rng)

    def expected(self, values: np.ndarray, ranks: object) -> float:
        """E[(1/M) Σ_u values[r_u - 1]] given global ``ranks``: exact, from P(r|R).

        ``values`` is a per-sampled-rank vector of length n (e.g. a sampled
        metric table or a corrected F̂).
        """
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n,):
            raise ValueError(f"`values` must have shape ({self.n},); got {values.shape}")
        r = check_rank_array("ranks", ranks, self.n_items)
        rows, counts = np.unique(r, return_counts=True)
        p = np.exp(self.log_probabilities(rows))
        return float(counts @ (p @ values) / r.size)


@functools.lru_cache(maxsize=16)
def _shared_scheme(n_items: int, n: int, replace: bool, tail_cutoff: float) -> SamplingScheme:
    return SamplingScheme(n_items, n, replace, tail_cutoff)


def conditional_rank_matrix(n_items: int, n: int, *, replace: bool = True) -> np.ndarray:
    """Dense P(r | R), shape (N, n), with ``[R - 1, r - 1] = P(r | R)`` (exact, no cutoff)."""
    return np.exp(log_conditional_rank_probabilities(n_items, n, replace=replace))


# ---------------------------------------------------------------------------
# sampled ranks from global ranks (closed form schemes)
# ---------------------------------------------------------------------------
def _check_n_items(n_items: object, shape: tuple[int, ...]) -> int | np.ndarray:
    """N as an int, or one candidate count N_u >= 2 per user (int64, shape ``(shape[-1],)``)."""
    if np.ndim(cast(ArrayLike, n_items)) == 0:  # anything else is refused below
        return check_int("n_items", n_items, low=2)
    arr = np.asarray(n_items)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"`n_items` must be an int or an integer array (one N_u per user); got dtype {arr.dtype}")
    if shape and arr.shape != (shape[-1],):
        raise ValueError(
            f"`n_items` must be an int or have shape ({shape[-1]},) (one N_u per user); got shape {arr.shape}"
        )
    if arr.size and arr.min() < 2:
        u = int(np.argmin(arr))
        raise ValueError(f"`n_items` must be >= 2; got {int(arr[u])} at position {u}")
    return arr.astype(np.int64, copy=False)


def _check_size(name: str, n: object, n_items: int | np.ndarray, replace: bool, low: int) -> int:
    """``n`` in [low, N]; with per-user N_u: <= every N_u without replacement, <= max N_u with it."""
    if isinstance(n_items, int):  # _check_n_items gives an int or an array of ndim 1
        return check_int(name, n, low=low, high=n_items)
    if replace:
        return check_int(name, n, low=low, high=int(n_items.max()))
    n = check_int(name, n, low=low)
    if n_items.size and n > n_items.min():
        u = int(np.argmin(n_items))
        raise ValueError(
            f"`{name}` must be <= every user's `n_items` (sampling without replacement); "
            f"the smallest is {int(n_items[u])} at position {u}; got {n}"
        )
    return n


def _check_scheme_args(
    ranks: object, n_items: object, n: object, replace: bool
) -> tuple[np.ndarray, int | np.ndarray, int]:
    n_items = _check_n_items(n_items, np.shape(cast(ArrayLike, ranks)))  # check_rank_array checks ranks
    n = _check_size("n", n, n_items, replace, low=1)
    r = check_rank_array("ranks", ranks, n_items, ndim=(1, 2))
    return r, n_items, n


def sample_ranks_binomial(ranks: object, n_items: int | np.ndarray, n: int, *, rng: RNGLike = None) -> np.ndarray:
    """Sampled ranks under uniform sampling **with** replacement.

    .. math:: r_u - 1 \\sim \\mathrm{Binomial}\\!\\left(n - 1, \\frac{R_u - 1}{N_u - 1}\\right)

    (K&R 2020 §4.3; dissertation eq. 13.) Each user may have its own
    candidate count N_u (e.g. all items minus its training items).

    Parameters
    ----------
    ranks : array-like of int, shape (M,) or (repeats, M)
        Global ranks, R_u in [1, N_u].
    n_items : int or array-like of int, shape (M,)
        N, or one N_u >= 2 per user (along the last axis of ``ranks``).
    n : int
        Sample-set size, 1 <= n <= N (with per-user N_u: n <= max N_u; a
        user's n - 1 draws with replacement may outnumber its N_u - 1
        negatives).
    rng : Generator or seed

    Returns
    -------
    ndarray of int64, same shape as ``ranks``, values in [1, n].
    """
    r, n_items, n = _check_scheme_args(ranks, n_items, n, replace=True)
    gen = as_generator(rng)
    return 1 + gen.binomial(n - 1, (r - 1) / (n_items - 1.0))


def sample_ranks_hypergeometric(ranks: object, n_items: int | np.ndarray, n: int, *, rng: RNGLike = None) -> np.ndarray:
    """Sampled ranks under uniform sampling **without** replacement.

    .. math:: r_u - 1 \\sim \\mathrm{Hypergeometric}(N_u - 1, R_u - 1, n - 1)

    (population N_u - 1 negatives, R_u - 1 of them ranked above, n - 1 draws;
    dissertation §2.3.2). Parameters as in :func:`sample_ranks_binomial`,
    except that n <= N_u for every user (ValueError otherwise: sampling
    without replacement is impossible).
    """
    r, n_items, n = _check_scheme_args(ranks, n_items, n, replace=False)
    gen = as_generator(rng)
    if n == 1:
        return np.ones_like(r)
    return 1 + gen.hypergeometric(r - 1, n_items - r, n - 1)


def rank_histogram(sampled_ranks: object, n: int) -> np.ndarray:
    """Counts of each sampled rank 1..n, shape (n,) (the sufficient statistic of P̂(r))."""
    n = check_int("n", n, low=1)
    r = check_rank_array("sampled_ranks", sampled_ranks, n)
    return np.bincount(r - 1, minlength=n)

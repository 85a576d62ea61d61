"""Global ranks, sampled ranks, and the conditional distribution P(r | R).

Notation (docs/design.md §5): N candidate items, one held-out relevant item
per user with **global rank** R in [1, N]. Sampled evaluation ranks it among
itself and n - 1 sampled irrelevant items: its **sampled rank** r in [1, n] is
1 + the number of sampled negatives ranked above it.

* Uniform sampling **with replacement**: ``r - 1 ~ Binomial(n - 1, θ_R)``,
  ``θ_R = (R - 1)/(N - 1)`` (Krichene & Rendle 2020, §4.3; Li's dissertation
  eq. 28).
* Uniform sampling **without replacement**: ``r - 1 ~ Hypergeometric(N - 1,
  R - 1, n - 1)`` (population N - 1, R - 1 successes, n - 1 draws; dissertation
  §2.3.2).
* **Actual item draws** (uniform or weighted, e.g. by popularity) from each
  user's candidate set, for schemes with no closed form
  (:func:`sample_ranks_by_draws`), and the exact shortcut for weighted draws
  with replacement (:func:`above_weight_share` + :func:`sample_ranks_from_shares`).
* **Adaptive** sampling (dissertation §2.6, Algorithm 1):
  :func:`sample_ranks_adaptive`.

The closed-form samplers accept one candidate count per user (``n_items`` an
int array N_u of shape (M,), e.g. all items minus the user's training items),
as leave-one-out evaluation produces; :func:`log_rank_probabilities_from_shares`
gives P(r | θ) for any per-user θ_u = (R_u - 1)/(N_u - 1).

:class:`SamplingScheme` holds (N, n, with/without replacement) and builds the
n-column matrix P(r|R) once, in log space (log-factorial tables, ``xlogy``), so
that N = 140,000 and n = 3,200 neither overflow nor underflow.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, overload

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, xlog1py, xlogy

from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice, check_in_range, check_int
from simrec.sampling._blocks import BlockMatrix, build_blocks
from simrec.sampling._checks import check_rank_array

__all__ = [
    "SamplingScheme",
    "conditional_rank_matrix",
    "log_conditional_rank_probabilities",
    "log_rank_probabilities_from_shares",
    "global_ranks",
    "sample_ranks_binomial",
    "sample_ranks_hypergeometric",
    "above_weight_share",
    "sample_ranks_from_shares",
    "sample_ranks_by_draws",
    "AdaptiveRanks",
    "sample_ranks_adaptive",
    "rank_histogram",
]

#: Rows x items processed at once by the score-based functions (bounds temporaries).
_CHUNK_ELEMENTS = 1 << 22

_TIES = ("random", "pessimistic", "optimistic")


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
    if np.ndim(n_items) == 0:
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
    if np.ndim(n_items) == 0:
        return check_int(name, n, low=low, high=int(n_items))
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
    n_items = _check_n_items(n_items, np.shape(ranks))
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


# ---------------------------------------------------------------------------
# score-based: global ranks, weighted shares and actual draws
# ---------------------------------------------------------------------------
def _check_scores_targets(scores: object, targets: object) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores)
    if s.ndim != 2 or not np.issubdtype(s.dtype, np.number) or s.dtype == bool:
        raise ValueError(f"`scores` must be a numeric (n_users, n_items) array; got shape {s.shape}, dtype {s.dtype}")
    if s.shape[0] == 0 or s.shape[1] < 2:
        raise ValueError(f"`scores` must have at least one user and two items; got shape {s.shape}")
    t = np.asarray(targets)
    if t.shape != (s.shape[0],) or not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"`targets` must be integer item indices of shape ({s.shape[0]},); got {t.shape}, {t.dtype}")
    if t.min() < 0 or t.max() >= s.shape[1]:
        raise ValueError(f"`targets` must be item indices in [0, {s.shape[1] - 1}]; got range [{t.min()}, {t.max()}]")
    return s, t.astype(np.int64)


@dataclass(frozen=True, eq=False)
class _SparseExclude:
    """Canonical CSR copy of a sparse exclusion matrix and its sorted (row * N + item) keys."""

    csr: sp.csr_array
    keys: np.ndarray

    def lookup(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Whether (rows[i], items[i, j]) is excluded."""
        if self.keys.size == 0:
            return np.zeros(items.shape, dtype=bool)
        q = rows[:, None].astype(np.int64) * self.csr.shape[1] + items
        pos = np.minimum(np.searchsorted(self.keys, q), self.keys.size - 1)
        return self.keys[pos] == q


def _check_exclude(exclude: object, shape: tuple[int, int], targets: np.ndarray) -> object:
    if exclude is None:
        return None
    if sp.issparse(exclude):
        ex = sp.csr_array(exclude, copy=True)
        if ex.shape != shape:
            raise ValueError(f"`exclude` must have shape {shape}; got {ex.shape}")
        ex.eliminate_zeros()
        ex.sum_duplicates()
        ex.sort_indices()
        rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(ex.indptr))
        out = _SparseExclude(ex, rows * shape[1] + ex.indices)
        hit = out.lookup(np.arange(shape[0]), targets[:, None])
    else:
        out = np.asarray(exclude)
        if out.shape != shape or out.dtype != bool:
            raise ValueError(
                f"`exclude` must be a bool array or sparse matrix of shape {shape}; got {out.shape}, {out.dtype}"
            )
        hit = out[np.arange(shape[0]), targets]
    if np.any(hit):
        u = int(np.flatnonzero(np.ravel(hit))[0])
        raise ValueError(f"`exclude` must not exclude a user's target item; user {u} has its target excluded")
    return out


def _exclude_rows(ex: object, r0: int, r1: int, n_items: int) -> np.ndarray:
    if ex is None:
        return np.zeros((r1 - r0, n_items), dtype=bool)
    if isinstance(ex, _SparseExclude):
        return ex.csr[r0:r1].toarray().astype(bool)
    return ex[r0:r1]


def _above_and_candidates(
    s: np.ndarray, t: np.ndarray, excl: np.ndarray, ties: str, gen: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """For a chunk: which items rank above the target, and which are candidate negatives."""
    rows = np.arange(s.shape[0])
    st = s[rows, t][:, None]
    if np.isnan(s).any():
        raise ValueError("`scores` must not contain NaN (use `exclude` for non-candidates)")
    cand = ~excl
    cand[rows, t] = False
    above = (s > st) & cand
    if ties != "optimistic":
        tied = (s == st) & cand
        if ties == "pessimistic":
            above |= tied
        elif tied.any():
            # a uniformly random order within the tie group: item above iff its key < the target's key
            key_t = gen.random(s.shape[0])
            ri, ci = np.nonzero(tied)
            above[ri, ci] = gen.random(ri.size) < key_t[ri]
    return above, cand


def _chunks(n_users: int, n_items: int):
    step = max(1, _CHUNK_ELEMENTS // n_items)
    for r0 in range(0, n_users, step):
        yield r0, min(n_users, r0 + step)


def _ranks_and_shares(
    scores: object,
    targets: object,
    weights: object,
    exclude: object,
    ties: str,
    rng: RNGLike,
    *,
    want_ranks: bool,
    want_shares: bool,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Ranks and/or above-weight shares of the held-out items from one above-set per user (one tie-break)."""
    s, t = _check_scores_targets(scores, targets)
    check_choice("ties", ties, _TIES)
    w = _check_item_weights(weights, s.shape[1])
    ex = _check_exclude(exclude, s.shape, t)
    gen = as_generator(rng)
    ranks = np.empty(s.shape[0], dtype=np.int64) if want_ranks else None
    shares = np.empty(s.shape[0]) if want_shares else None
    for r0, r1 in _chunks(*s.shape):
        above, cand = _above_and_candidates(s[r0:r1], t[r0:r1], _exclude_rows(ex, r0, r1, s.shape[1]), ties, gen)
        if want_ranks:
            ranks[r0:r1] = 1 + above.sum(axis=1)
        if not want_shares:
            continue
        if w is None:
            num, den = above.sum(axis=1).astype(float), cand.sum(axis=1).astype(float)
        else:
            num, den = above @ w, cand @ w
        if (den <= 0).any():
            u = r0 + int(np.flatnonzero(den <= 0)[0])
            raise ValueError(f"user {u} has no candidate negative with positive weight")
        shares[r0:r1] = num / den
    return ranks, shares


@overload
def global_ranks(
    scores: object,
    targets: object,
    *,
    exclude: object = None,
    ties: str = "random",
    rng: RNGLike = None,
    return_shares: Literal[False] = False,
    weights: object = None,
) -> np.ndarray: ...
@overload
def global_ranks(
    scores: object,
    targets: object,
    *,
    exclude: object = None,
    ties: str = "random",
    rng: RNGLike = None,
    return_shares: Literal[True],
    weights: object = None,
) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def global_ranks(
    scores: object,
    targets: object,
    *,
    exclude: object = None,
    ties: str = "random",
    rng: RNGLike = None,
    return_shares: bool = False,
    weights: object = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]: ...
def global_ranks(
    scores: object,
    targets: object,
    *,
    exclude: object = None,
    ties: str = "random",
    rng: RNGLike = None,
    return_shares: bool = False,
    weights: object = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Global rank R_u of each user's held-out item among its candidates, from scores.

    .. math:: R_u = 1 + |\\{j \\in C_u \\setminus \\{t_u\\}: s_{uj} > s_{u t_u}\\}| \\;(+\\text{ties})

    Parameters
    ----------
    scores : ndarray, shape (M, N)
        Higher is better. ``-inf`` is allowed (ranked last), NaN is not.
    targets : ndarray of int, shape (M,)
        Item index of each user's held-out item.
    exclude : bool ndarray or scipy sparse, shape (M, N), optional
        Items that are not candidates (e.g. the user's training items). They
        are not ranked; a user's rank is then in [1, N - |excluded_u|].
    ties : {"random", "pessimistic", "optimistic"}, default "random"
        Items scoring exactly as the target: ranked in a uniformly random order
        with it (needs ``rng``), all above it, or all below it.
    rng : Generator or seed
        Only used to break ties (a Generator's stream advances: one uniform
        key per user of a row chunk with a tie, then one per tied item).
    return_shares : bool, default False
        Also return the weight share of each user's candidate negatives
        ranked above the held-out item (:func:`above_weight_share`), from the
        *same* above-set, so the rank and the share agree under random ties.
    weights : ndarray of shape (N,), optional
        Item weights of the shares (uniform if omitted); only with
        ``return_shares``.

    Returns
    -------
    ranks : ndarray of int64, shape (M,)
        Processed in row chunks of about 4M entries, so temporaries stay small.
    shares : ndarray of float64, shape (M,)
        Only with ``return_shares``.
    """
    if weights is not None and not return_shares:
        raise ValueError("`weights` only weigh the shares; pass `return_shares=True` or drop `weights`")
    ranks, shares = _ranks_and_shares(
        scores, targets, weights, exclude, ties, rng, want_ranks=True, want_shares=bool(return_shares)
    )
    return (ranks, shares) if return_shares else ranks


def _check_item_weights(weights: object, n_items: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_items,):
        raise ValueError(f"`weights` must have shape ({n_items},) (one weight per item); got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("`weights` must be finite and non-negative")
    return w


def above_weight_share(
    scores: object,
    targets: object,
    *,
    weights: object = None,
    exclude: object = None,
    ties: str = "random",
    rng: RNGLike = None,
) -> np.ndarray:
    """Weight share of each user's candidate negatives that rank above the held-out item.

    .. math:: s_u = \\frac{\\sum_{j \\in C_u,\\, j \\text{ above } t_u} w_j}{\\sum_{j \\in C_u \\setminus \\{t_u\\}} w_j}

    With replacement, each draw of a negative (probability ∝ w) lands above the
    held-out item with probability s_u, so ``r - 1 ~ Binomial(n - 1, s_u)``
    exactly: compute the shares once (O(M N)) and draw many repeats cheaply
    with :func:`sample_ranks_from_shares`. Uniform weights give
    ``s_u = (R_u - 1)/(N_u - 1)``.

    Parameters
    ----------
    scores, targets, exclude, ties, rng
        As in :func:`global_ranks`.
    weights : ndarray of shape (N,), optional
        Sampling weight of each item (e.g. its popularity); uniform if omitted.

    Returns
    -------
    ndarray of float64, shape (M,)
        A user whose candidate negatives all have weight 0 raises ValueError.
        (:func:`global_ranks` with ``return_shares=True`` gives the ranks too,
        from the same tie-break.)
    """
    return _ranks_and_shares(scores, targets, weights, exclude, ties, rng, want_ranks=False, want_shares=True)[1]


def sample_ranks_from_shares(shares: object, n: int, *, rng: RNGLike = None) -> np.ndarray:
    """Sampled ranks ``1 + Binomial(n - 1, s_u)`` from above-weight shares (with replacement).

    Parameters
    ----------
    shares : array-like of float in [0, 1], shape (M,) or (repeats, M)
        From :func:`above_weight_share`.
    n : int
        Sample-set size (>= 1).
    rng : Generator or seed
    """
    n = check_int("n", n, low=1)
    p = np.asarray(shares, dtype=np.float64)
    if p.size == 0:
        raise ValueError("`shares` must not be empty")
    if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
        raise ValueError("`shares` must be in [0, 1]")
    return 1 + as_generator(rng).binomial(n - 1, p)


def _draw_items(gen: np.random.Generator, cdf: np.ndarray | None, n_items: int, size: tuple[int, int]) -> np.ndarray:
    if cdf is None:
        return gen.integers(0, n_items, size=size)
    return np.minimum(np.searchsorted(cdf, gen.random(size) * cdf[-1], side="right"), n_items - 1)


def _first_distinct(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Mask of entries that are valid and the first valid occurrence of their value in their row."""
    order = np.argsort(np.where(valid, x, -1), axis=1, kind="stable")
    xs = np.take_along_axis(np.where(valid, x, -1), order, axis=1)
    first_sorted = np.ones_like(xs, dtype=bool)
    first_sorted[:, 1:] = xs[:, 1:] != xs[:, :-1]
    first = np.empty_like(first_sorted)
    np.put_along_axis(first, order, first_sorted, axis=1)
    return first & valid


def sample_ranks_by_draws(
    scores: object,
    targets: object,
    n: int,
    *,
    weights: object = None,
    exclude: object = None,
    replace: bool = False,
    ties: str = "random",
    rng: RNGLike = None,
) -> np.ndarray:
    """Sampled ranks by actually drawing n - 1 negatives per user from its candidates.

    For schemes with no closed form, e.g. popularity-weighted sampling without
    replacement. For user u the negatives are its candidates other than the
    held-out item t_u (all items not in ``exclude``); item j is drawn with
    probability ∝ ``weights[j]`` (uniform if omitted), and

    .. math:: r_u = 1 + |\\{\\text{drawn negatives ranked above } t_u\\}|.

    Draws are i.i.d. from the item weights, rejecting non-candidates (and, when
    ``replace=False``, repeats) until n - 1 are kept. That is exactly
    successive weighted sampling without replacement (each kept item has
    probability ∝ weight among the remaining candidates) and costs O(n) per
    user instead of O(N); only the drawn items' scores are read.

    Parameters
    ----------
    scores : ndarray, shape (M, N)
        Higher is better; NaN not allowed. For very large M x N call this on
        row chunks (users are independent), passing the same Generator.
    targets : ndarray of int, shape (M,)
        Held-out item of each user.
    n : int
        Sample-set size (n - 1 negatives), >= 1; without replacement each user
        needs at least n - 1 candidate negatives of positive weight.
    weights : ndarray of shape (N,), optional
        Per-item sampling weights (e.g. popularity). Per-user weight matrices
        are not supported.
    exclude : bool ndarray or scipy sparse, shape (M, N), optional
        Non-candidates (e.g. training items).
    replace : bool, default False
    ties : {"random", "pessimistic", "optimistic"}, default "random"
        Negatives scoring exactly as the target: ordered with it uniformly at
        random (each item and the target get independent uniform keys), all
        above it, or all below it.
    rng : Generator or seed

    Returns
    -------
    ndarray of int64, shape (M,), values in [1, n].
    """
    s, t = _check_scores_targets(scores, targets)
    n_users, n_items = s.shape
    n = check_int("n", n, low=1, high=n_items)
    check_choice("ties", ties, _TIES)
    w = _check_item_weights(weights, n_items)
    ex = _check_exclude(exclude, s.shape, t)
    if not isinstance(replace, (bool, np.bool_)):
        raise TypeError(f"`replace` must be a bool; got {replace!r}")
    if np.isnan(s).any():
        raise ValueError("`scores` must not contain NaN (use `exclude` for non-candidates)")
    gen = as_generator(rng)
    need = n - 1
    if need == 0:
        return np.ones(n_users, dtype=np.int64)
    # eligible positive-weight negatives per user (checked, so the loop below terminates)
    positive = np.ones(n_items, dtype=bool) if w is None else w > 0
    if ex is None:
        n_ok = np.full(n_users, positive.sum()) - positive[t]
    elif isinstance(ex, _SparseExclude):
        n_ok = positive.sum() - positive[t] - ex.csr.astype(np.int64) @ positive.astype(np.int64)
    else:
        n_ok = positive.sum() - positive[t] - ex @ positive.astype(np.int64)
    low = n_ok < (need if not replace else 1)
    if low.any():
        u = int(np.flatnonzero(low)[0])
        raise ValueError(
            f"user {u} has {int(n_ok[u])} candidate negatives of positive weight; "
            f"`n` = {n} needs {need if not replace else 1}"
        )
    cdf = None if w is None else np.cumsum(w)
    key_t = gen.random(n_users) if ties == "random" else None
    out = np.empty(n_users, dtype=np.int64)
    step = max(1, _CHUNK_ELEMENTS // (4 * need + 64))
    for r0 in range(0, n_users, step):
        rows = np.arange(r0, min(n_users, r0 + step))
        kept = np.full((rows.size, need), -1, dtype=np.int64)
        n_kept = np.zeros(rows.size, dtype=np.int64)
        todo = np.arange(rows.size)
        while todo.size:
            u = rows[todo]
            batch = need + need // 2 + 16
            items = _draw_items(gen, cdf, n_items, (todo.size, batch))
            ok = items != t[u][:, None]
            if isinstance(ex, _SparseExclude):
                ok &= ~ex.lookup(u, items)
            elif ex is not None:
                ok &= ~ex[u[:, None], items]
            pool = np.concatenate([kept[todo], items], axis=1)
            valid = np.concatenate([kept[todo] >= 0, ok], axis=1)
            if not replace:
                valid = _first_distinct(pool, valid)
            # keep the first `need` valid entries per row, in draw order
            order = np.argsort(~valid, axis=1, kind="stable")[:, :need]
            sel = np.take_along_axis(pool, order, axis=1)
            cnt = np.minimum(valid.sum(axis=1), need)
            sel[np.arange(need)[None, :] >= cnt[:, None]] = -1
            kept[todo] = sel
            n_kept[todo] = cnt
            todo = todo[cnt < need]
        su = s[rows[:, None], kept]
        st = s[rows, t[rows]][:, None]
        above = su > st
        if ties != "optimistic":
            tied = su == st
            if ties == "pessimistic":
                above |= tied
            elif tied.any():
                above |= tied & (gen.random(tied.shape) < key_t[rows][:, None])
        out[rows] = 1 + above.sum(axis=1)
    return out


# ---------------------------------------------------------------------------
# adaptive sampling (dissertation §2.6, Algorithm 1)
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class AdaptiveRanks:
    """Result of :func:`sample_ranks_adaptive`.

    Attributes
    ----------
    ranks : ndarray of int64, shape (M,)
        Final sampled rank r_u in [1, sizes[u]].
    sizes : ndarray of int64, shape (M,)
        Final sample-set size n_u (n0, 2 n0, 4 n0, ... capped at n_max).
    n_items : int or ndarray of int64, shape (M,)
        N, or each user's candidate count N_u.
    n0, n_max : int
    replace : bool
    """

    ranks: np.ndarray
    sizes: np.ndarray
    n_items: int | np.ndarray
    n0: int
    n_max: int
    replace: bool

    @property
    def mean_size(self) -> float:
        """Average sample-set size (the sampling cost per user)."""
        return float(self.sizes.mean())


def sample_ranks_adaptive(
    ranks: object,
    n_items: int | np.ndarray,
    n0: int,
    *,
    n_max: int | None = None,
    replace: bool = True,
    rng: RNGLike = None,
) -> AdaptiveRanks:
    """Adaptive item sampling (Li's dissertation §2.6, Algorithm 1).

    Each user starts with a sample set of size n0 (n0 - 1 negatives). While its
    sampled rank is 1 and n_u < n_max, it draws n_u more negatives and doubles
    n_u (the last step is capped at n_max, so n_max need not be n0 times a
    power of 2). Because r = 1 means every earlier negative ranked below the
    held-out item, the new rank is 1 + the number of the *new* negatives
    ranked above it: ``Binomial(extra, θ_R)`` with replacement, and without
    replacement ``Hypergeometric`` over the negatives not yet drawn (R - 1
    above, N - R - (n_u - 1) below). Vectorized over users; one loop per
    doubling (log2(n_max / n0) steps). Each user may have its own candidate
    count N_u (then θ_u = (R_u - 1)/(N_u - 1)).

    Parameters
    ----------
    ranks : array-like of int, shape (M,)
        Global ranks, R_u in [1, N_u].
    n_items : int or array-like of int, shape (M,)
        N, or one N_u >= 2 per user.
    n0 : int
        Initial sample-set size, 2 <= n0 <= n_max.
    n_max : int, optional
        Terminal size; default min(3200, N) (the dissertation's 3,200, §2.6.3;
        with per-user N_u: min(3200, min N_u) without replacement, min(3200,
        max N_u) with it). Must be <= N; with per-user N_u, <= every N_u
        without replacement and <= max N_u with replacement (draws with
        replacement may outnumber a user's negatives).
    replace : bool, default True
    rng : Generator or seed

    Returns
    -------
    AdaptiveRanks
    """
    n_items = _check_n_items(n_items, np.shape(ranks))
    if n_max is None:
        n_max = min(3200, int(np.max(n_items) if replace else np.min(n_items)))
    n_max = _check_size("n_max", n_max, n_items, replace, low=2)
    n0 = check_int("n0", n0, low=2, high=n_max)
    r_global = check_rank_array("ranks", ranks, n_items)
    gen = as_generator(rng)
    theta = (r_global - 1) / (n_items - 1.0)
    if replace:
        r = 1 + gen.binomial(n0 - 1, theta)
    else:
        r = 1 + gen.hypergeometric(r_global - 1, n_items - r_global, n0 - 1)
    size = np.full(r.shape, n0, dtype=np.int64)
    active = np.flatnonzero((r == 1) & (size < n_max))
    while active.size:
        cur = size[active]
        new = np.minimum(2 * cur, n_max)
        extra = new - cur
        if replace:
            x = gen.binomial(extra, theta[active])
        else:
            g = r_global[active]
            n_act = n_items if np.ndim(n_items) == 0 else n_items[active]
            x = gen.hypergeometric(g - 1, n_act - g - (cur - 1), extra)
        r[active] = 1 + x
        size[active] = new
        active = active[(x == 0) & (new < n_max)]
    return AdaptiveRanks(r.astype(np.int64), size, n_items, n0, n_max, bool(replace))

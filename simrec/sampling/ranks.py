"""Global ranks from scores, and sampled ranks under weighted sampling or actual item draws.

Notation as in :mod:`.scheme` (docs/design.md §5): a user's held-out item has
global rank R among N candidates and sampled rank r among n sampled items.

* :func:`global_ranks`: R (and the candidates' count N_u) from a score matrix,
  with a tie rule.
* **Weighted sampling with replacement** (e.g. by popularity): the exact
  shortcut :func:`above_weight_share` + :func:`sample_ranks_from_shares`
  (``r - 1 ~ Binomial(n - 1, s_u)``, s_u the weight share of the candidates
  ranked above the held-out item).
* **Actual item draws** (uniform or weighted, with or without replacement)
  from each user's candidate set, for schemes with no closed form:
  :func:`sample_ranks_by_draws`.

Uniform sampling's closed forms (P(r|R), binomial and hypergeometric draws)
are in :mod:`.scheme`; adaptive sampling in :mod:`.adaptive`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, cast, overload

import numpy as np
import scipy.sparse as sp

from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice, check_int

__all__ = [
    "global_ranks",
    "above_weight_share",
    "sample_ranks_from_shares",
    "sample_ranks_by_draws",
]

#: Rows x items processed at once by the score-based functions (bounds temporaries).
_CHUNK_ELEMENTS = 1 << 22

_TIES = ("random", "pessimistic", "optimistic")


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


def _check_exclude(exclude: object, shape: tuple[int, int], targets: np.ndarray) -> _SparseExclude | np.ndarray | None:
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
        sparse = _SparseExclude(ex, rows * shape[1] + ex.indices)
        hit = sparse.lookup(np.arange(shape[0]), targets[:, None])
        out: _SparseExclude | np.ndarray = sparse
    else:
        dense = np.asarray(exclude)
        if dense.shape != shape or dense.dtype != bool:
            raise ValueError(
                f"`exclude` must be a bool array or sparse matrix of shape {shape}; got {dense.shape}, {dense.dtype}"
            )
        hit = dense[np.arange(shape[0]), targets]
        out = dense
    if np.any(hit):
        u = int(np.flatnonzero(np.ravel(hit))[0])
        raise ValueError(f"`exclude` must not exclude a user's target item; user {u} has its target excluded")
    return out


def _exclude_rows(ex: _SparseExclude | np.ndarray | None, r0: int, r1: int, n_items: int) -> np.ndarray:
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
            key_t = gen.random(rows.size)  # rows.size == s.shape[0]
            ri, ci = np.nonzero(tied)
            above[ri, ci] = gen.random(ri.size) < key_t[ri]
    return above, cand


def _chunks(n_users: int, n_items: int) -> Iterator[tuple[int, int]]:
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
        if ranks is not None:  # want_ranks
            ranks[r0:r1] = 1 + above.sum(axis=1)
        if shares is None:  # not want_shares
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
    ranks = cast(np.ndarray, ranks)  # want_ranks=True
    return (ranks, cast(np.ndarray, shares)) if return_shares else ranks


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
    shares = _ranks_and_shares(scores, targets, weights, exclude, ties, rng, want_ranks=False, want_shares=True)[1]
    return cast(np.ndarray, shares)  # want_shares=True


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
        bad = int(np.flatnonzero(low)[0])
        raise ValueError(
            f"user {bad} has {int(n_ok[bad])} candidate negatives of positive weight; "
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
                above |= tied & (gen.random(tied.shape) < cast(np.ndarray, key_t)[rows][:, None])  # ties == "random"
        out[rows] = 1 + above.sum(axis=1)
    return out

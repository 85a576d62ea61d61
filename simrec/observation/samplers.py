"""Observation samplers: truth -> observed subset (Tian's thesis §3.2.2-3.2.3; docs/design.md §2).

A sampler keeps, in every row u of the true preferences, exactly
``min(sizes[u], |Ĩ_u|)`` of the user's true likes, without replacement:

* :class:`UniformSampler` — uniformly (missing at random);
* :class:`PopularitySampler` — with probability ∝ |Ũ_i| (the item's number of
  likers in the truth; missing not at random).

(:class:`simrec.observation.PreferenceSampler` observes each pair
independently instead, depending on preference, and consumes disliked
items.) Every sampler exposes ``propensity(truth, sizes, rng)``: each true
pair's probability of being observed given the sizes
(:mod:`simrec.observation.propensity`).

:func:`observe` chains a profile-size model and a sampler and drops users
with no observed item (:class:`Observed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from simrec._cache import use_kernel
from simrec._random import RNGLike, as_generator
from simrec._sampling import pair_blocks, row_ids
from simrec._subsets import interactions_from_rows, uniform_subsets
from simrec._validation import check_real
from simrec.interactions import Interactions
from simrec.observation.propensity import successive_propensity, uniform_propensity

__all__ = ["UniformSampler", "PopularitySampler", "Observed", "observe"]


def _check_inputs(truth: Interactions, sizes: np.ndarray) -> np.ndarray:
    if not isinstance(truth, Interactions):
        raise TypeError(f"`truth` must be an Interactions; got {type(truth).__name__}")
    s = np.asarray(sizes)
    if s.ndim != 1 or len(s) != truth.n_users:
        raise ValueError(f"`sizes` must have shape ({truth.n_users},) (one per truth user); got {s.shape}")
    if s.dtype.kind not in "iu":
        raise TypeError(f"`sizes` must be an integer array; got dtype {s.dtype}")
    s = s.astype(np.int64, copy=False)
    if len(s) and s.min() < 0:
        raise ValueError(f"`sizes` must be >= 0; got minimum {s.min()}")
    return np.minimum(s, truth.user_counts())


def _subset(truth: Interactions, keep: np.ndarray, counts: np.ndarray) -> Interactions:
    """Rows of ``truth`` restricted to the stored pairs flagged by ``keep`` (ids follow)."""
    return _subset_of(truth, truth.matrix.indices[keep], counts)


def _subset_of(truth: Interactions, indices: np.ndarray, counts: np.ndarray) -> Interactions:
    """Rows of ``truth`` restricted to ``counts[u]`` of their pairs each, whose columns are ``indices`` (ids follow)."""
    out = interactions_from_rows(counts, indices, truth.matrix.shape)
    return Interactions(out.matrix, truth.user_ids, truth.item_ids)


@dataclass(frozen=True)
class UniformSampler:
    """Missing at random: row u keeps min(n_u, |Ĩ_u|) of its likes, uniformly without replacement.

    Thesis §3.2.2. Vectorized rejection with exact top-up over all rows
    (:func:`simrec._subsets.uniform_subsets`); O(true pairs).
    """

    #: The sampler's name in results and scenario files.
    label: ClassVar[str] = "uniform"

    def sample(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike) -> Interactions:
        """Observed subset of ``truth``.

        Parameters
        ----------
        truth : Interactions, shape (n_users, n_items)
        sizes : ndarray of int, shape (n_users,)
            Requested profile sizes (>= 0); row u gets exactly min(sizes[u], |Ĩ_u|).
        rng : Generator or seed

        Returns
        -------
        Interactions
            Same shape, ids and row order as ``truth``; a subset of it.
        """
        eff = _check_inputs(truth, sizes)
        gen = as_generator(rng)
        lens = truth.user_counts()
        _, pos = uniform_subsets(eff, lens, gen)
        keep = np.zeros(truth.n_pairs, dtype=bool)
        keep[np.repeat(truth.matrix.indptr[:-1].astype(np.int64), eff) + pos] = True
        return _subset(truth, keep, eff)

    def propensity(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike = None) -> np.ndarray:
        """Exact P(true pair observed | sizes) = min(n_u, |Ĩ_u|)/|Ĩ_u|, aligned with ``truth``'s pairs, float64.

        ``rng`` is not used (accepted for one signature across samplers).
        """
        return uniform_propensity(truth, _check_inputs(truth, sizes))


@dataclass(frozen=True)
class PopularitySampler:
    """Missing not at random: items drawn without replacement with probability ∝ |Ũ_i|^exponent.

    Thesis §3.2.3 (``exponent = 1``: proportional to the item's number of
    likers in the truth). Successive sampling without replacement (draw one
    item ∝ weight among the remaining, repeat n_u times) is sampled with
    exponential keys: key = E / w, E ~ Exp(1), and each row keeps its n_u
    smallest keys (Efraimidis & Spirakis 2006).

    Parameters
    ----------
    exponent : float, default 1.0
        Weight w_i = |Ũ_i|^exponent; 0 gives the uniform sampler's
        distribution. Not in the thesis; a researcher's knob for the strength
        of the popularity bias.

    Notes
    -----
    Only rows that keep part of their likes are ranked, and in them only the
    keys below a threshold that almost surely holds the n_u smallest (exact
    fallback otherwise, see ``_smallest_per_row``). Candidates are ranked by
    ``row + key'`` with key' = 0.5·x/(1 + x) ∈ [0, 0.5),
    x = E/w (a monotone map, so each row's order is its key order and rows
    never mix); the kept keys are those up to each row's k-th smallest, read
    from one ``np.sort`` of the keys. Keys closer than the float64 spacing at
    the row index (~1e-11 for 1e5 rows) tie and are ordered by position; a
    tie straddling a row's cut is rare (about one row in 10⁴ at ML-20M size)
    and is resolved in that row alone.
    """

    exponent: float = 1.0

    #: The sampler's name in results and scenario files.
    label: ClassVar[str] = "popularity"

    def __post_init__(self) -> None:
        object.__setattr__(self, "exponent", check_real("exponent", self.exponent))

    def sample(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike) -> Interactions:
        """Observed subset of ``truth`` (same contract as :meth:`UniformSampler.sample`).

        Rows are processed in blocks of about ``_BLOCK_PAIRS`` pairs
        (:func:`~simrec._sampling.pair_blocks`), each drawing its keys in row
        order: the same draws, keys and selection as one pass over all rows
        (the row index in a key stays global), with per-pair temporaries of a
        few MiB instead of several arrays of the truth's size (at ML-20M
        size, eight of 160-320 MB each, every one fresh memory).
        """
        eff = _check_inputs(truth, sizes)
        gen = as_generator(rng)
        lens = truth.user_counts()
        part = eff < lens  # rows that keep only part of their likes
        if not part.any():  # every row keeps every pair
            return _subset_of(truth, truth.matrix.indices.copy(), eff)
        # >= 1: every truth item has a liker
        weight = truth.item_counts().astype(np.float64)
        if self.exponent != 1.0:
            with np.errstate(divide="ignore"):  # items nobody likes (0 ** negative) have no pair to weigh
                weight **= self.exponent
        indptr, indices = truth.matrix.indptr, truth.matrix.indices
        n_before = np.concatenate(([0], np.cumsum(part)))  # part rows before each row
        if use_kernel(truth.n_pairs, _KERNEL_MIN_PAIRS):  # the same draws and pairs, compiled
            out = np.empty(int(eff.sum()) + 1, dtype=indices.dtype)  # (+1: the last write of a row is free)
            at = 0
            for r0, r1 in pair_blocks(indptr, _BLOCK_PAIRS):
                rows = part[r0:r1]
                x = gen.standard_exponential(int(lens[r0:r1][rows].sum())) if rows.any() else np.zeros(0)
                at = _keep_block(indptr, indices, r0, r1, part, eff, weight, x, int(n_before[r0]), out, at)
            return _subset_of(truth, out[:at], eff)
        keep = np.ones(truth.n_pairs, dtype=bool)  # the other rows keep every pair
        for r0, r1 in pair_blocks(indptr, _BLOCK_PAIRS):
            rows = part[r0:r1]
            if not rows.any():
                continue
            p0, p1 = int(indptr[r0]), int(indptr[r1])
            in_part = np.repeat(rows, lens[r0:r1])
            # np.take, not fancy indexing: the same values without converting the int32 indices to intp first
            w = np.take(weight, indices[p0:p1][in_part])
            x = gen.standard_exponential(len(w))
            x /= w
            chosen = np.zeros(len(w), dtype=bool)
            chosen[_smallest_per_row(x, lens[r0:r1][rows], eff[r0:r1][rows], w, first_row=int(n_before[r0]))] = True
            keep[p0:p1][in_part] = chosen
        return _subset(truth, keep, eff)

    def propensity(
        self, truth: Interactions, sizes: np.ndarray, rng: RNGLike = None, *, n_draws: int = 64
    ) -> np.ndarray:
        """P(true pair observed | sizes), estimated (no closed form): :meth:`propensity_estimate`'s mean."""
        return self.propensity_estimate(truth, sizes, rng, n_draws=n_draws)[0]

    def propensity_estimate(
        self, truth: Interactions, sizes: np.ndarray, rng: RNGLike = None, *, n_draws: int = 64
    ) -> tuple[np.ndarray, np.ndarray]:
        """Inclusion probabilities of this successive sampling and their standard errors, aligned with ``truth``'s pairs.

        Monte Carlo over ``n_draws`` draws of the sampler's own exponential
        keys, Rao-Blackwellised (:func:`simrec.observation.propensity.successive_propensity`):
        unbiased, with the returned standard error, never above the plain
        frequency's binomial SE of the same draws (at the default 64 draws
        on an ML-1M-sized IBP truth: mean 0.002, largest 0.02; cost in
        docs/design.md §9). Rows keeping all their likes get exactly 1, rows
        keeping none 0.
        """
        eff = _check_inputs(truth, sizes)
        weight = truth.item_counts().astype(np.float64)
        if self.exponent != 1.0:
            with np.errstate(divide="ignore"):  # items nobody likes carry no pair
                weight **= self.exponent
        return successive_propensity(truth, eff, weight, rng, n_draws)


#: Pairs per block of :meth:`PopularitySampler.sample`.
_BLOCK_PAIRS = 1 << 19
#: Truth pairs from which :meth:`PopularitySampler.sample` selects each block's pairs with the compiled
#: kernels (:func:`simrec.observation._popularity_kernel.candidate_keys` and ``write_kept``; the same pairs): below it,
#: importing numba and loading the kernel (about 0.4 s) costs more than it saves, unless numba is loaded.
_KERNEL_MIN_PAIRS = 1 << 23


def _keep_block(
    indptr: np.ndarray,
    indices: np.ndarray,
    r0: int,
    r1: int,
    part: np.ndarray,
    eff: np.ndarray,
    weight: np.ndarray,
    x: np.ndarray,
    first_row: int,
    out: np.ndarray,
    at: int,
) -> int:
    """:meth:`PopularitySampler.sample`'s block ``r0:r1`` with the compiled passes, from its draws ``x``.

    :func:`~simrec.observation._popularity_kernel.candidate_keys` forms the
    part rows' candidates and keys as :func:`_smallest_per_row` does, numpy
    sorts the keys (its vectorised sort), and
    :func:`~simrec.observation._popularity_kernel.write_kept` reads each
    row's cut from them and writes the block's kept columns to ``out[at:]``
    (every column of the other rows): the same pairs. Returns the new end
    (``x`` is divided by the weights in place).
    """
    from simrec.observation._popularity_kernel import candidate_keys, write_kept

    ckey = np.empty(len(x), dtype=np.float64)
    cpos = np.empty(len(x) + 1, dtype=np.int64)  # one slot past the last candidate: written, not kept
    cstart = np.empty(int(np.count_nonzero(part[r0:r1])) + 1, dtype=np.int64)
    m = candidate_keys(indptr, indices, r0, r1, part, eff, weight, x, first_row, ckey, cpos, cstart)
    return int(write_kept(indptr, indices, r0, r1, part, eff, ckey, cpos, cstart, np.sort(ckey[:m]), out, at))


def _smallest_per_row(
    x: np.ndarray, lens: np.ndarray, k: np.ndarray, rate: np.ndarray, *, prefilter: bool = True, first_row: int = 0
) -> np.ndarray:
    """Positions of the ``k[r]`` smallest ``x`` of every row r (rows laid out consecutively).

    Parameters
    ----------
    x : ndarray of float, shape (sum(lens),)
        Keys, row after row; x ~ Exp(rate) elementwise.
    lens, k : ndarray of int, shape (n_rows,)
        Row lengths and how many to keep, ``k <= lens``.
    rate : ndarray of float, shape (sum(lens),)
        The keys' exponential rates, used only to pick the pre-filter threshold.
    prefilter : bool
        Sort only candidates: in row r, keys below τ_r = t_r / Σ rate with
        t_r = k + 4 sqrt(k) + 8 (the expected number of keys below τ is at most
        t_r, so usually >= k of them are below it and the k smallest are among
        them). Rows with fewer than k candidates fall back to all their keys, so
        the result is exact either way; only the speed depends on the threshold.
    first_row : int
        Index of the first row in the keys ``r + 0.5·x/(1 + x)`` (a block of
        rows processed apart keeps the keys, hence the ties, of the whole).

    Returns
    -------
    ndarray of int64
        Positions into ``x`` of the kept keys, ascending.

    Notes
    -----
    The order is that of the float64 keys ``r + 0.5·x/(1 + x)``, ties broken
    by position (a stable sort): keys closer than the float64 spacing at r
    tie, which happens in about one row in 10⁴ at ML-20M size. The k-th
    smallest key of each row (the cut) comes from one value sort (SIMD, no
    argsort); every key up to the cut is kept, and only in rows where a tie
    at the cut keeps more than k are the tied keys thinned to the first ones
    by position. The same selection as the stable argsort of all keys, which
    this replaces (it ran at every ML-20M-sized replicate).
    """
    n_rows = len(lens)
    bounds = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lens, out=bounds[1:])
    row = row_ids(lens, np.int32 if n_rows < 2**31 else np.int64)
    target = k + 4.0 * np.sqrt(k) + 8.0
    filt = target < lens
    if prefilter and filt.any():
        total = np.bincount(row, weights=rate, minlength=n_rows)
        tau = np.where(filt, target / np.where(filt, total, 1.0), np.inf)
        cand = x < np.take(tau, row)
        c = np.flatnonzero(cand)
        short = np.diff(np.searchsorted(c, bounds)) < k  # candidates per row < k
        if short.any():
            cand |= np.repeat(short, lens)
            c = np.flatnonzero(cand)
        del cand
    else:
        c = np.arange(len(x), dtype=np.int64)
    crow = np.take(row, c)
    del row
    # keys = crow + 0.5 * (xc / (1 + xc)), computed in place (the same float64 values)
    keys = np.take(x, c)
    den = keys + 1.0
    np.divide(keys, den, out=keys)
    del den
    keys *= 0.5
    keys += crow if first_row == 0 else crow + np.int64(first_row)
    cstarts = np.searchsorted(c, bounds)  # row r's candidates: c[cstarts[r]:cstarts[r+1]]
    has = k > 0
    cut = np.full(n_rows, -np.inf)
    cut[has] = np.sort(keys)[cstarts[:-1][has] + k[has] - 1]
    kept = keys <= np.take(cut, crow)
    got = np.flatnonzero(kept)
    n_kept = np.diff(np.searchsorted(got, cstarts))  # kept keys per row
    over = n_kept != k
    if over.any():  # a tie at the cut: keep the first of the tied keys by position
        tied = np.flatnonzero(kept & (keys == np.take(cut, crow)) & np.take(over, crow))
        trow = crow[tied]
        below = n_kept - np.bincount(trow, minlength=n_rows)
        rank = np.arange(len(tied)) - np.searchsorted(trow, trow)
        kept[tied[rank >= (k - below)[trow]]] = False
        got = np.flatnonzero(kept)
    return np.take(c, got)


class ProfileModel(Protocol):
    def sample(self, capacity: np.ndarray, rng: RNGLike) -> np.ndarray: ...


class Sampler(Protocol):
    label: str

    def sample(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike) -> Interactions: ...


@dataclass(frozen=True)
class Observed:
    """Observed data and its map back to the truth.

    Attributes
    ----------
    observed : Interactions, shape (n_observed_users, n_items)
        Users with at least one observed item, in truth order. All truth
        columns are kept (items nobody observes are empty columns), so item
        indices mean the same in truth and observed data. ``user_ids`` are the
        truth's ids of the kept rows, or, when the truth has none, the truth
        row indices themselves.
    truth_rows : ndarray of int64, shape (n_observed_users,)
        Observed row i is truth row ``truth_rows[i]``.
    sizes : ndarray of int64, shape (n_truth_users,), optional
        The profile sizes drawn for every truth row (what the samplers'
        ``propensity(truth, sizes)`` is conditioned on).
    """

    observed: Interactions
    truth_rows: np.ndarray
    sizes: np.ndarray | None = None


def observe(truth: Interactions, profile: ProfileModel, sampler: Sampler, rng: RNGLike) -> Observed:
    """Observe a true-preference matrix (thesis §3.2).

    Draws n_u = ``profile.sample(|Ĩ_u|)``, keeps ``sampler``'s subset of each
    row, and drops the users left with no item.

    Parameters
    ----------
    truth : Interactions
        True preferences.
    profile : TruncatedPareto or TruncatedBetaBinomial (anything with ``sample(capacity, rng)``)
    sampler : UniformSampler or PopularitySampler (anything with ``sample(truth, sizes, rng)``)
    rng : Generator or seed
        One stream, used first for the sizes, then for the sampler.

    Returns
    -------
    Observed
        ``observed`` ⊆ truth rows ``truth_rows`` for the thesis's samplers
        (a sampler that consumes disliked items adds pairs outside the
        truth), same ``n_items``; the sampler's gains (the ratings of
        :class:`simrec.observation.Rated`) follow their pairs; ``sizes`` the
        profile sizes drawn.
    """
    if not isinstance(truth, Interactions):
        raise TypeError(f"`truth` must be an Interactions; got {type(truth).__name__}")
    if not callable(getattr(profile, "sample", None)):
        raise TypeError(f"`profile` must have a sample(capacity, rng) method; got {type(profile).__name__}")
    if not callable(getattr(sampler, "sample", None)):
        raise TypeError(f"`sampler` must have a sample(truth, sizes, rng) method; got {type(sampler).__name__}")
    gen = as_generator(rng)
    sizes = profile.sample(truth.user_counts(), gen)
    full = sampler.sample(truth, sizes, gen)
    rows = np.flatnonzero(full.user_counts() > 0).astype(np.int64)
    sub = full if len(rows) == full.n_users else full.select_users(rows)  # no copy when no user is dropped
    ids = rows if truth.user_ids is None else sub.user_ids
    return Observed(Interactions(sub.matrix, ids, truth.item_ids, sub.gains), rows, np.asarray(sizes, dtype=np.int64))

"""Observation that depends on preference: a Poisson-sampling design with consumption of disliked items.

Tian's thesis (§5.3) names its limits: observation never depends on how much
an item is liked, and nobody consumes an item they do not like. Here every
pair is observed independently (Poisson sampling, so every inclusion
probability is exact):

* a liked pair with probability

  .. math:: \\pi_{ui} = \\min\\left(1,\\; c_u\\, e_i\\, p_{ui}^{\\,b}\\right),
            \\qquad e_i = (1 + m_i)^{a},

  :math:`m_i = |\\tilde U_i|` the item's likers in the truth (its popularity,
  as the thesis's popularity sampler uses it), :math:`p_{ui} \\in (0, 1]` the
  truth's graded preference
  (:meth:`~simrec.interactions.Interactions.pair_preference`), and
  :math:`c_u` set so that :math:`\\sum_{i \\in \\tilde I_u} \\pi_{ui} = n_u`,
  the user's drawn profile size (capped at :math:`|\\tilde I_u|`): the
  selection bias of §5.3, popularity and preference together;
* a pair the user does not like with probability

  .. math:: q_{ui} = \\min(1,\\; d_u\\, e_i), \\qquad
            \\sum_{i \\notin \\tilde I_u} q_{ui} = \\rho\\, n_u,

  ρ = ``dislike_rate`` (capped at the number of items the user does not
  like): consumption of disliked items, popularity-weighted by the same
  exposure :math:`e_i` (an item nobody likes still has exposure 1), so the
  observed data are no longer a subset of the truth.

The scales by water-filling. :math:`c_u` solves
:math:`\\sum_i \\min(1, c\\,w_i) = n_u`: with :math:`H(c)` the cells whose
:math:`c\\,w_i \\ge 1` (observed surely),
:math:`c \\leftarrow (n - |H(c)|)/(W - \\sum_{H(c)} w_i)` increases from
:math:`n/W` to the solution in a few steps. When the cap binds, the capped
pairs are observed surely and the rest share the remaining
:math:`n_u - |H|` in proportion to their weights; :math:`n_u = |\\tilde I_u|`
observes every like. So the expected number of observed likes is exactly
:math:`n_u` (the realised number is Poisson-binomial around it, not exactly
:math:`n_u` as with the thesis's samplers), and the expected number of
observed dislikes :math:`\\rho n_u`.

Drawing. Likes: one uniform per true pair, O(true pairs), by blocks of
rows. Dislikes in O(dislikes + likes), never a uniform per (user, item):
the items sorted once by exposure; the items with :math:`q > 1/2` are a
prefix of that order (one uniform each, liked ones skipped), and the rest,
all with :math:`q \\le \\tau = 1/2`, a thinned Poisson process: Bernoulli(q)
is "a Poisson(−log(1 − q)) count is at least 1"; candidates come at rate
:math:`m\\,d_u e_i`, :math:`m = -\\log(1 - \\tau)/\\tau`, from the exposure
law over the remaining items (inverse CDF), a candidate the user likes is
discarded and the others kept with probability
:math:`-\\log(1 - q)/(m q)`.

Propensities: :meth:`PreferenceSampler.propensity` (every true pair's
:math:`\\pi_{ui}`) and :meth:`PreferenceSampler.dislike_propensity`
(:math:`q_{ui}` of any pairs), both exact given the sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._sampling import pair_blocks
from simrec._validation import check_in_range, check_real
from simrec.interactions import Interactions
from simrec.observation.samplers import _check_inputs

__all__ = ["PreferenceSampler"]

#: Cells with a probability above this are drawn one uniform each; the rest by the thinned Poisson process.
_TAU = 0.5
#: Candidate rate multiplier m = -log(1 - tau)/tau (>= -log(1 - q)/q for q <= tau).
_M = -math.log1p(-_TAU) / _TAU
#: True pairs per block of rows.
_BLOCK_PAIRS = 1 << 19


def _water_fill(row: np.ndarray, w: np.ndarray, totals: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Scale :math:`c_r` with :math:`\\sum_i \\min(1, c_r w_i) = n_r` over each row's given cells (all of its cells).

    ``row`` (m,) and ``w`` (m,) > 0: the cells; ``totals`` the rows' sums of
    ``w``; ``targets`` :math:`n_r` in [0, cells of the row]. Returns c (n_rows,),
    ``inf`` where every cell is capped (:math:`n_r` = the row's cells), 0 where
    :math:`n_r = 0`. The fixed point of the module docstring, vectorized over
    rows; each step only over the rows whose capped set grew.
    """
    n_rows = len(totals)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(totals > 0, targets / totals, 0.0)
    top = np.zeros(n_rows)
    if len(row):  # the rows' largest weights (rows laid out consecutively)
        starts = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1])))
        top[row[starts]] = np.maximum.reduceat(w, starts)
    on = (targets > 0) & (c * top >= 1.0)  # only rows where the cap binds iterate
    r, ww = row, w
    while True:
        keep = on[r]
        r, ww = r[keep], ww[keep]
        if not len(r):
            break
        capped = c[r] * ww >= 1.0
        n_cap = np.bincount(r[capped], minlength=n_rows)
        s_cap = np.bincount(r[capped], weights=ww[capped], minlength=n_rows)
        rest, left = totals - s_cap, targets - n_cap
        with np.errstate(divide="ignore", invalid="ignore"):
            new = np.where((rest > 0) & (left > 0), left / rest, np.inf)
        on &= new > c
        c = np.where(on, new, c)
        on &= np.isfinite(c)
    return c


@dataclass(frozen=True)
class PreferenceSampler:
    """Poisson sampling of liked pairs ∝ popularity^a · preference^b, plus popularity-weighted dislikes.

    Parameters
    ----------
    pop_exponent : float, default 1.0
        a: exposure :math:`e_i = (1 + |\\tilde U_i|)^a` (0: no popularity bias).
    pref_exponent : float, default 1.0
        b: weight :math:`p_{ui}^b` of the graded preference (0: observation
        independent of preference; on a binary truth every p is 1).
    dislike_rate : float, default 0.0
        ρ >= 0: expected observed dislikes per expected observed like.

    Notes
    -----
    Same contract as the thesis's samplers (``sample(truth, sizes, rng)``),
    with ``sizes`` the *expected* observed likes of each user (capped at
    its likes). The draws, block by block of rows: one uniform per true pair,
    then, for the dislikes, one uniform per item with q > 1/2 not liked, the
    candidate counts, the candidates' positions and acceptance uniforms.
    """

    pop_exponent: float = 1.0
    pref_exponent: float = 1.0
    dislike_rate: float = 0.0

    #: The sampler's name in results and scenario files.
    label: ClassVar[str] = "preference"

    def __post_init__(self) -> None:
        object.__setattr__(self, "pop_exponent", check_real("pop_exponent", self.pop_exponent))
        object.__setattr__(self, "pref_exponent", check_real("pref_exponent", self.pref_exponent))
        object.__setattr__(self, "dislike_rate", check_in_range("dislike_rate", self.dislike_rate, 0, None))

    # -- exposure and scales ---------------------------------------------------------
    def exposure(self, truth: Interactions) -> np.ndarray:
        """:math:`e_i = (1 + |\\tilde U_i|)^a`, shape (n_items,), float64 (kept within [1e-300, 1e300])."""
        return np.clip((1.0 + truth.item_counts()) ** self.pop_exponent, 1e-300, 1e300)

    def _like_weights(self, truth: Interactions, exposure: np.ndarray, r0: int, r1: int) -> np.ndarray:
        """:math:`e_i p_{ui}^b` of the true pairs of rows r0:r1."""
        m = truth.matrix
        w = np.take(exposure, m.indices[m.indptr[r0] : m.indptr[r1]])
        if self.pref_exponent != 0.0:
            w *= truth.pair_preference(slice(r0, r1)) ** self.pref_exponent
        return np.clip(w, 1e-300, 1e300)  # finite and positive at any exponent

    def _like_probabilities(
        self, truth: Interactions, eff: np.ndarray, exposure: np.ndarray, r0: int, r1: int
    ) -> np.ndarray:
        """:math:`\\pi_{ui}` of the true pairs of rows r0:r1 (``eff`` the capped sizes of all rows)."""
        m = truth.matrix
        w = self._like_weights(truth, exposure, r0, r1)
        lens = np.diff(m.indptr[r0 : r1 + 1]).astype(np.int64)
        row = np.repeat(np.arange(r1 - r0), lens)
        full = (eff[r0:r1] >= lens) & (lens > 0)  # every like observed: no water-filling
        targets = np.where(full, 0, eff[r0:r1]).astype(np.float64)
        c = _water_fill(row, w, np.bincount(row, weights=w, minlength=r1 - r0), targets)
        c[full] = np.inf
        with np.errstate(invalid="ignore"):  # c = inf (every like observed) times a weight
            return np.minimum(1.0, c[row] * w)

    def _dislike_scales(
        self, truth: Interactions, eff: np.ndarray, exposure: np.ndarray, cum: np.ndarray, r0: int, r1: int
    ) -> np.ndarray:
        """:math:`d_u` of rows r0:r1: :math:`\\sum_{i \\notin \\tilde I_u} \\min(1, d_u e_i) = \\rho n_u`.

        ``cum`` (n_items + 1,) the prefix sums of the exposures sorted in
        descending order. The fixed point of the
        module docstring over the items the user does not like: the capped
        ones at d are the items of exposure >= 1/d (a prefix of ``order``)
        less the user's likes among them.
        """
        m = truth.matrix
        n = r1 - r0
        I = truth.n_items
        e_desc = np.diff(cum)
        lens = np.diff(m.indptr[r0 : r1 + 1]).astype(np.int64)
        row = np.repeat(np.arange(n), lens)
        liked_e = np.take(exposure, m.indices[m.indptr[r0] : m.indptr[r1]])
        totals = cum[-1] - np.bincount(row, weights=liked_e, minlength=n)
        targets = np.minimum(self.dislike_rate * eff[r0:r1], I - lens).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(totals > 0, targets / totals, 0.0)
        d[(targets >= I - lens) & (targets > 0)] = np.inf  # every item the user does not like
        on = (targets > 0) & np.isfinite(d) & (d * e_desc[0] >= 1.0)  # rows where some item may be capped
        neg = -e_desc
        while on.any():
            thr = np.where(on, 1.0 / np.where(on, d, 1.0), np.inf)
            k = np.searchsorted(neg, -thr, side="right")  # items with e >= 1/d: a prefix of the order
            hit = on[row] & (liked_e >= thr[row])
            n_cap = k - np.bincount(row[hit], minlength=n)
            s_cap = cum[k] - np.bincount(row[hit], weights=liked_e[hit], minlength=n)
            rest, left = totals - s_cap, targets - n_cap
            with np.errstate(divide="ignore", invalid="ignore"):
                new = np.where((rest > 0) & (left > 0), left / rest, np.inf)
            moved = on & (new > d)
            d = np.where(moved, new, d)
            on = moved & np.isfinite(d)
        return d

    # -- propensities ---------------------------------------------------------------------
    def propensity(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike = None) -> np.ndarray:
        """Exact :math:`\\pi_{ui}` = P(true pair observed | truth, sizes), aligned with ``truth``'s pairs, float64.

        ``rng`` is not used (the design has a closed form); it is accepted
        so that every sampler's ``propensity`` has one signature.
        """
        eff = _check_inputs(truth, sizes)
        exposure = self.exposure(truth)
        out = np.empty(truth.n_pairs)
        ptr = truth.matrix.indptr
        for r0, r1 in pair_blocks(ptr, _BLOCK_PAIRS):
            out[ptr[r0] : ptr[r1]] = self._like_probabilities(truth, eff, exposure, r0, r1)
        return out

    def dislike_propensity(
        self, truth: Interactions, sizes: np.ndarray, users: np.ndarray, items: np.ndarray
    ) -> np.ndarray:
        """Exact :math:`q_{ui}` = P(pair observed | the user does not like it) of the given pairs, float64.

        Pairs the user likes get 0 here (their probability is
        :meth:`propensity`'s). ``users`` are truth rows.
        """
        eff = _check_inputs(truth, sizes)
        users = np.asarray(users, dtype=np.int64)
        items = np.asarray(items, dtype=np.int64)
        if users.shape != items.shape or users.ndim != 1:
            raise ValueError(f"`users` and `items` must be 1-d of equal length; got {users.shape} and {items.shape}")
        if len(users) and (
            users.min() < 0 or users.max() >= truth.n_users or items.min() < 0 or items.max() >= truth.n_items
        ):
            raise ValueError(f"pairs must lie inside the truth's shape {truth.matrix.shape}")
        exposure = self.exposure(truth)
        order = np.argsort(-exposure, kind="stable")
        cum = np.concatenate(([0.0], np.cumsum(exposure[order])))
        d = self._dislike_scales(truth, eff, exposure, cum, 0, truth.n_users)
        with np.errstate(invalid="ignore"):
            q = np.minimum(1.0, d[users] * exposure[items])
        q[np.isnan(q)] = 0.0
        return np.where(_liked(truth, users, items), 0.0, q)

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike) -> Interactions:
        """Observed pairs: the likes kept with :math:`\\pi_{ui}`, and the dislikes consumed with :math:`q_{ui}`.

        Parameters
        ----------
        truth : Interactions, shape (n_users, n_items)
        sizes : ndarray of int, shape (n_users,)
            Expected observed likes per user (capped at its likes).
        rng : Generator or seed

        Returns
        -------
        Interactions
            Same shape, ids and row order as ``truth``; with ``dislike_rate``
            > 0 it holds pairs outside the truth.
        """
        eff = _check_inputs(truth, sizes)
        gen = as_generator(rng)
        exposure = self.exposure(truth)
        m = truth.matrix
        I = truth.n_items
        dislikes = self.dislike_rate > 0
        if dislikes:
            order = np.argsort(-exposure, kind="stable")
            cum = np.concatenate(([0.0], np.cumsum(exposure[order])))
            cum_asc = np.concatenate(([0.0], np.cumsum(exposure[order[::-1]])))
        counts = np.zeros(truth.n_users, dtype=np.int64)
        parts = []
        for r0, r1 in pair_blocks(m.indptr, _BLOCK_PAIRS):
            p0, p1 = int(m.indptr[r0]), int(m.indptr[r1])
            pi = self._like_probabilities(truth, eff, exposure, r0, r1)
            keep = gen.random(len(pi)) < pi
            lens = np.diff(m.indptr[r0 : r1 + 1]).astype(np.int64)
            rows = np.repeat(np.arange(r0, r1, dtype=np.int64), lens)
            keys = rows[keep] * I + m.indices[p0:p1][keep]
            if dislikes:
                d = self._dislike_scales(truth, eff, exposure, cum, r0, r1)
                extra = _draw_dislikes(gen, truth, d, exposure, order, cum, cum_asc, r0, r1)
                keys = np.sort(np.concatenate((keys, extra)))
            counts[r0:r1] = np.bincount(keys // I - r0, minlength=r1 - r0)
            parts.append(keys % I)
        indptr = np.zeros(truth.n_users + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        items = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return Interactions.from_csr(
            indptr, items, m.shape, sort=False, user_ids=truth.user_ids, item_ids=truth.item_ids
        )


def _liked(truth: Interactions, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Whether each (user, item) is a true pair: a binary search in the user's sorted row."""
    m = truth.matrix
    if not len(users):
        return np.zeros(0, dtype=bool)
    I = truth.n_items
    keys = np.repeat(np.arange(truth.n_users, dtype=np.int64), np.diff(m.indptr)) * I + m.indices
    q = users * I + items
    at = np.minimum(np.searchsorted(keys, q), max(len(keys) - 1, 0))
    return (keys[at] == q) if len(keys) else np.zeros(len(q), dtype=bool)


def _draw_dislikes(
    gen: np.random.Generator,
    truth: Interactions,
    d: np.ndarray,
    exposure: np.ndarray,
    order: np.ndarray,
    cum: np.ndarray,
    cum_asc: np.ndarray,
    r0: int,
    r1: int,
) -> np.ndarray:
    """Keys ``user * n_items + item`` of the dislikes consumed by rows r0:r1 (scales ``d``), unsorted, unique."""
    m = truth.matrix
    n, I = r1 - r0, truth.n_items
    e_desc = np.diff(cum)
    block_keys = np.repeat(np.arange(r0, r1, dtype=np.int64), np.diff(m.indptr[r0 : r1 + 1])) * I
    block_keys += m.indices[m.indptr[r0] : m.indptr[r1]]  # sorted: the rows' true pairs

    def liked(keys: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(block_keys, keys), max(len(block_keys) - 1, 0))
        return block_keys[at] == keys if len(block_keys) else np.zeros(len(keys), dtype=bool)

    live = d > 0
    # items with q = d e > tau: a prefix of the descending order; one uniform each
    with np.errstate(divide="ignore"):
        thr = np.where(live, _TAU / np.where(live, d, 1.0), np.inf)
    k = np.searchsorted(-e_desc, -thr, side="left")  # items with e > thr
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    pos = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
    item = order[pos]
    key = (rows + r0) * I + item
    with np.errstate(invalid="ignore"):
        q = np.minimum(1.0, d[rows] * exposure[item])
    out = [key[(gen.random(len(key)) < q) & ~liked(key)]]
    # the rest (e <= thr): a prefix of the ascending order, as a thinned Poisson process at rate m d e
    small = cum_asc[I - k]  # exposure of the items with e <= thr (liked ones included)
    finite = live & np.isfinite(d)
    rate = np.zeros(n)
    rate[finite] = _M * d[finite] * small[finite]
    n_cand = gen.poisson(rate)
    rows = np.repeat(np.arange(n, dtype=np.int64), n_cand)
    x = gen.random(len(rows)) * small[rows]
    at = np.minimum(np.searchsorted(cum_asc, x, side="right") - 1, I - 1)
    item = order[::-1][at]
    qc = d[rows] * exposure[item]
    accept = gen.random(len(rows)) * (_M * qc) < -np.log1p(-np.minimum(qc, _TAU))
    key = (rows + r0) * I + item
    key = key[accept & ~liked(key)]
    out.append(key)
    keys = np.concatenate(out)
    keys.sort()
    if len(keys) > 1:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return keys

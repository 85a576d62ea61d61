"""Ratings on a dataset's scale from graded preference (Tian's thesis §5.3's next step).

The thesis (§5.3): "the observable preference can be implemented by a
continuous distribution with support of (0, 1), then the observable ratings
can be computed by multiplying this preference matrix with a rating scale
value". :class:`Ratings` does that with a shape and noise:

.. math:: r_{ui} = \\mathrm{clip}\\left(\\ell + s \\left\\lfloor
          \\frac{f(p_{ui}) + \\sigma \\epsilon_{ui} - \\ell}{s} + \\tfrac12 \\right\\rfloor,
          \\; \\ell, h\\right), \\qquad
          f(p) = \\ell - \\tfrac s2 + (h - \\ell + s)\\, p^{\\kappa},

on the levels :math:`\\ell, \\ell + s, \\dots, h` (e.g. 1..5 in steps of 1),
:math:`\\epsilon \\sim N(0, 1)`. Without noise and with κ = 1 it is the
thesis's "preference times the scale": the level :math:`\\lceil L p \\rceil`
of :math:`L` levels (up to the boundary points), so a uniform preference
gives uniform ratings; κ > 1 lowers the ratings, κ < 1 raises them, σ
blurs them. An observed item the user does not like (consumed by
:class:`~simrec.observation.PreferenceSampler` with ``dislike_rate`` > 0)
has preference 0: :math:`f(0) = \\ell - s/2`, the lowest level unless the
noise lifts it.

:class:`Rated` wraps a sampler: it rates every observed pair and can keep
only the pairs rated at least ``min_rating``, as
:func:`simrec.datasets.binarize` does to a real dataset ("relevant" =
rating >= 4 on MovieLens). The ratings travel as the observed data's
:attr:`~simrec.interactions.Interactions.gains` (one value per stored
pair; the matrix stays binary, so everything that reads only the pairs is
unaffected).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr

from simrec._random import RNGLike, as_generator
from simrec._sampling import pair_blocks
from simrec._validation import check_in_range, check_real
from simrec.interactions import Interactions

__all__ = ["Ratings", "Rated", "observed_preference"]

#: Pairs per block of :func:`observed_preference`.
_BLOCK_PAIRS = 1 << 20


@dataclass(frozen=True)
class Ratings:
    """A rating scale and the map from preference to a noisy, rounded rating (module docstring).

    Parameters
    ----------
    low, high : float, default 1.0, 5.0
        The scale's lowest and highest rating; ``low`` > 0 (ratings travel
        as gains, which are positive), ``high`` >= ``low``.
    step : float, default 1.0
        Distance between levels, > 0; ``(high - low) / step`` an integer
        (0.5 for half stars).
    shape : float, default 1.0
        κ > 0, the power applied to the preference.
    noise : float, default 0.0
        σ >= 0, the standard deviation of the Gaussian noise, in rating units.
    """

    low: float = 1.0
    high: float = 5.0
    step: float = 1.0
    shape: float = 1.0
    noise: float = 0.0

    def __post_init__(self) -> None:
        low = check_in_range("low", self.low, 0, None, low_open=True)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", check_in_range("high", self.high, low, None))
        step = check_in_range("step", self.step, 0, None, low_open=True)
        object.__setattr__(self, "step", step)
        span = (self.high - low) / step
        if abs(span - round(span)) > 1e-9 * max(1.0, span):
            raise ValueError(f"`step` must divide `high - low` = {self.high - low:g} into whole levels; got {step:g}")
        object.__setattr__(self, "shape", check_in_range("shape", self.shape, 0, None, low_open=True))
        object.__setattr__(self, "noise", check_in_range("noise", self.noise, 0, None))

    @property
    def levels(self) -> np.ndarray:
        """The ratings ``low, low + step, ..., high``, float64."""
        return self.low + self.step * np.arange(int(round((self.high - self.low) / self.step)) + 1)

    def center(self, preference: np.ndarray) -> np.ndarray:
        """:math:`f(p) = \\ell - s/2 + (h - \\ell + s) p^\\kappa`, the noise-free rating before rounding."""
        p = np.asarray(preference, dtype=np.float64)
        return self.low - self.step / 2 + (self.high - self.low + self.step) * p**self.shape

    def rate(self, preference: np.ndarray, rng: RNGLike) -> np.ndarray:
        """One rating per preference value (in [0, 1]; 0 for a disliked item), float32.

        Draws one standard normal per value when ``noise`` > 0, none otherwise.
        """
        x = self.center(preference)
        if self.noise > 0:
            x = x + self.noise * as_generator(rng).standard_normal(len(x))
        k = np.floor((x - self.low) / self.step + 0.5)
        k = np.clip(k, 0, len(self.levels) - 1)
        return (self.low + self.step * k).astype(np.float32)

    def pmf(self, preference: np.ndarray) -> np.ndarray:
        """P(rating = level j | p), shape (len(preference), n_levels): exact (normal CDF differences).

        Level j collects :math:`f(p) + \\sigma\\epsilon` in
        :math:`[\\ell + s(j - 1/2), \\ell + s(j + 1/2))`, the end levels the tails.
        """
        x = self.center(preference)[:, None]
        lv = self.levels
        edges = np.concatenate(([-np.inf], lv[:-1] + self.step / 2, [np.inf]))
        if self.noise > 0:
            cdf = ndtr((edges[None, :] - x) / self.noise)
        else:
            cdf = (x < edges[None, :]).astype(np.float64)
        return np.diff(cdf, axis=1)

    def p_at_least(self, preference: np.ndarray, threshold: float) -> np.ndarray:
        """P(rating >= ``threshold`` | p), float64 (1 when the threshold is at or below ``low``)."""
        t = check_real("threshold", threshold)
        lv = self.levels
        j = int(np.searchsorted(lv, t - 1e-9 * self.step, side="left"))  # first level >= threshold
        if j == 0:
            return np.ones(len(np.asarray(preference)))
        if j >= len(lv):
            return np.zeros(len(np.asarray(preference)))
        edge = lv[j] - self.step / 2
        x = self.center(preference)
        if self.noise > 0:
            return ndtr((x - edge) / self.noise)
        return (x >= edge).astype(np.float64)


def observed_preference(truth: Interactions, observed: Interactions) -> np.ndarray:
    """The truth's preference of every pair of ``observed`` (same shape and rows), 0 where the pair is not liked.

    Returns
    -------
    ndarray of float64, shape (observed.n_pairs,)
        :meth:`~simrec.interactions.Interactions.pair_preference` of the
        pair in the truth, or 0 for a pair outside it (a consumed dislike).

    Notes
    -----
    By blocks of rows: each pair's key ``row * n_items + item`` searched in
    the truth's keys of the same rows (both sorted), O(pairs log pairs).
    """
    if truth.matrix.shape != observed.matrix.shape:
        raise ValueError(f"`observed` must have the truth's shape {truth.matrix.shape}; got {observed.matrix.shape}")
    I = truth.n_items
    t_ptr, o_ptr = truth.matrix.indptr, observed.matrix.indptr
    out = np.zeros(observed.n_pairs)
    for r0, r1 in pair_blocks(t_ptr.astype(np.int64) + o_ptr, _BLOCK_PAIRS):
        t0, t1, q0, q1 = int(t_ptr[r0]), int(t_ptr[r1]), int(o_ptr[r0]), int(o_ptr[r1])
        if q1 == q0 or t1 == t0:
            continue
        t_keys = np.repeat(np.arange(r0, r1, dtype=np.int64), np.diff(t_ptr[r0 : r1 + 1])) * I
        t_keys += truth.matrix.indices[t0:t1]
        o_keys = np.repeat(np.arange(r0, r1, dtype=np.int64), np.diff(o_ptr[r0 : r1 + 1])) * I
        o_keys += observed.matrix.indices[q0:q1]
        at = np.minimum(np.searchsorted(t_keys, o_keys), len(t_keys) - 1)
        hit = t_keys[at] == o_keys
        pref = truth.pair_preference(slice(r0, r1))
        out[q0:q1][hit] = pref[at[hit]]
    return out


@dataclass(frozen=True)
class Rated:
    """A sampler whose observed pairs carry ratings (as gains), optionally only those rated at least ``min_rating``.

    Parameters
    ----------
    sampler : a sampler
        Anything with ``label`` and ``sample(truth, sizes, rng)`` (and,
        for :meth:`propensity`, ``propensity(truth, sizes, rng)``).
    ratings : Ratings
    min_rating : float, optional
        Keep only the observed pairs rated at least this (the analogue of
        :func:`simrec.datasets.binarize`'s ``min_rating``); default None
        keeps every observed pair.

    Notes
    -----
    Draws, after the sampler's: the ratings' noise, one normal per observed
    pair (none without noise).
    """

    sampler: Any
    ratings: Ratings
    min_rating: float | None = None

    def __post_init__(self) -> None:
        if not callable(getattr(self.sampler, "sample", None)):
            raise TypeError(
                f"`sampler` must have a sample(truth, sizes, rng) method; got {type(self.sampler).__name__}"
            )
        if not isinstance(self.ratings, Ratings):
            raise TypeError(f"`ratings` must be a Ratings; got {type(self.ratings).__name__}")
        if self.min_rating is not None:
            object.__setattr__(self, "min_rating", check_real("min_rating", self.min_rating))

    @property
    def label(self) -> str:
        """The wrapped sampler's label with ``-rated``."""
        return f"{self.sampler.label}-rated"

    def sample(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike) -> Interactions:
        """The sampler's observed pairs with their ratings in ``gains`` (float32), those below ``min_rating`` dropped."""
        gen = as_generator(rng)
        obs = self.sampler.sample(truth, sizes, gen)
        r = self.ratings.rate(observed_preference(truth, obs), gen)
        m = obs.matrix
        if self.min_rating is None:
            return Interactions.from_csr(
                m.indptr, m.indices, m.shape, sort=False, user_ids=obs.user_ids, item_ids=obs.item_ids, gains=r
            )
        keep = r >= self.min_rating - 1e-9 * self.ratings.step
        counts = np.bincount(obs.row_of_pairs()[keep], minlength=obs.n_users)
        indptr = np.zeros(obs.n_users + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return Interactions.from_csr(
            indptr, m.indices[keep], m.shape, sort=False, user_ids=obs.user_ids, item_ids=obs.item_ids, gains=r[keep]
        )

    def propensity(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike = None, **kwargs: Any) -> np.ndarray:
        """P(true pair observed and kept | sizes): the sampler's propensity times P(rating >= ``min_rating`` | p).

        Exact when the sampler's is (the rating's law given the preference
        is closed-form, :meth:`Ratings.p_at_least`).
        """
        base = self.sampler.propensity(truth, sizes, rng, **kwargs)
        if self.min_rating is None:
            return base
        return base * self.ratings.p_at_least(truth.pair_preference(), self.min_rating)

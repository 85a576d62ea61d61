"""Propensities of the observed test pairs, three ways: the world's own, fitted as Yang et al. do, misspecified.

Every estimator of :mod:`simrec.debias` weighs an observed test pair by
:math:`p_{ui} = P(i \\in S_u \\mid i \\in \\mathrm{Rel}_u)`, the chance that a
relevant pair ends up in the test set. A *propensity kind* computes them for
one replicate from an :class:`ObservationContext`, so that a harness can
cross estimators with kinds:

* :class:`WorldPropensity` — the world's own: its sampler's inclusion
  probabilities (:meth:`propensity` of :mod:`simrec.observation`'s
  samplers: exact for the uniform and preference-driven samplers, Monte
  Carlo with a standard error for the popularity sampler), turned into
  test-set propensities by :func:`holdout_propensity`;
* :class:`PopularityPowerLaw` — estimated from the observed data as Yang et
  al. (RecSys 2018) do: :math:`p_i \\propto (n^*_i)^{(\\gamma + 1)/2}` with
  :math:`n^*_i` the training count and :math:`\\gamma` fitted to the
  recommenders' presentation frequencies
  (:func:`~simrec.debias.fit_popularity_exponent`);
* :class:`MisspecifiedPropensity` — the exact propensities of another
  observation model than the world's, e.g.
  :meth:`MisspecifiedPropensity.popularity_only`: popularity-only
  propensities in a world whose observation also depends on preference.

From observation to the test set. simrec observes pair (u, i) with
probability :math:`\\pi_{ui}` and holds out a share :math:`f_u` of each
user's observed pairs as test; the true relevance set is the true likes
minus the training pairs. A relevant pair is in the test set given it is not
in training with probability

.. math:: p_{ui} = \\frac{\\pi_{ui} f_u}{1 - \\pi_{ui}(1 - f_u)}

(:func:`holdout_propensity`): exact for a per-pair Bernoulli(:math:`f_u`)
holdout, and exact in the marginals for the fixed-size samplers (uniform,
popularity: :math:`n_u` observed, :math:`t_u` of them test, :math:`f_u =
t_u / n_u`); for the Poisson-sampling preference sampler the realised share
:math:`f_u = t_u / (t_u + |\\mathrm{train}_u|)` stands in for the holdout's,
an approximation whose effect the harness measures (IPS with these
propensities in a missing-at-random world).

Consumed dislikes (:class:`~simrec.observation.PreferenceSampler` with
``dislike_rate`` > 0) are observed pairs outside the truth: their world
propensity is their own chance of observation :math:`q_{ui}`
(:meth:`~simrec.observation.PreferenceSampler.dislike_propensity`, through the
same test-set formula). Counted as relevant (implicit feedback), they bias
every estimator here, the world's propensities included: no weighting of
the observed pairs removes pairs that should not be there (labels do, see
:class:`~simrec.debias.DR`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from simrec._random import RNGLike
from simrec._sampling import row_ids
from simrec._validation import check_in_range, check_int, check_real
from simrec.debias.popularity_fit import fit_popularity_exponent
from simrec.debias.ranked import as_pairs
from simrec.interactions import Interactions

__all__ = [
    "Propensities",
    "ObservationContext",
    "holdout_propensity",
    "WorldPropensity",
    "MisspecifiedPropensity",
    "PopularityPowerLaw",
]


@dataclass(frozen=True, eq=False)
class Propensities:
    """Test-set propensities of one replicate's observed test pairs.

    Attributes
    ----------
    kind : str
        The kind's label (``"world"``, ``"fitted"``, ``"misspecified"``).
    values : ndarray of float64, shape (n_test_pairs,)
        :math:`p_{ui}` in (0, 1], aligned with the canonical test matrix's
        pairs; NaN where the kind leaves a pair out (Yang's fitted kind: an
        item without training interactions).
    se : ndarray of float64, shape (n_test_pairs,), optional
        Standard errors where the values are Monte Carlo estimates.
    info : dict
        What the kind fitted or used (e.g. ``{"gamma": 1.7, "gamma_se": 0.05}``).
    """

    kind: str
    values: np.ndarray
    se: np.ndarray | None = None
    info: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ObservationContext:
    """What a propensity kind may read about one replicate (rows: the evaluated users).

    Parameters
    ----------
    test : csr_array or Interactions, shape (n_users, n_items)
        The observed test pairs.
    train : csr_array or Interactions, shape (n_users, n_items)
        The same users' training pairs.
    truth : Interactions, optional
        The true preferences (world kinds).
    truth_rows : ndarray of int, shape (n_users,), optional
        Truth row of each user (world kinds).
    sizes : ndarray of int, shape (n_truth_users,), optional
        The profile sizes drawn for every truth row (``Observed.sizes``; world kinds).
    lists : sequence of ndarray, optional
        Top-N lists the recommenders presented (Yang's exponent fit), e.g.
        every recommender's lists of the replicate.
    """

    test: Any
    train: Any
    truth: Interactions | None = None
    truth_rows: np.ndarray | None = None
    sizes: np.ndarray | None = None
    lists: Sequence[np.ndarray] = ()

    def __post_init__(self) -> None:
        test = as_pairs(self.test, "test")
        object.__setattr__(self, "test", test)
        object.__setattr__(self, "train", as_pairs(self.train, "train", test.shape))

    @property
    def test_share(self) -> np.ndarray:
        """:math:`f_u = t_u / (t_u + |\\mathrm{train}_u|)` per user, float64."""
        t = np.diff(self.test.indptr).astype(np.float64)
        n = t + np.diff(self.train.indptr)
        return np.divide(t, n, out=np.zeros(len(t)), where=n > 0)

    def truth_inputs(self) -> tuple[Interactions, np.ndarray, np.ndarray]:
        """(truth, truth_rows, sizes), checked (the world kinds need them)."""
        if self.truth is None or self.truth_rows is None or self.sizes is None:
            raise ValueError("this propensity kind needs `truth`, `truth_rows` and `sizes` in the ObservationContext")
        rows = np.asarray(self.truth_rows, dtype=np.int64)
        if rows.shape != (self.test.shape[0],):
            raise ValueError(f"`truth_rows` must have shape ({self.test.shape[0]},); got {rows.shape}")
        if self.truth.n_items != self.test.shape[1]:
            raise ValueError(f"`truth` must have {self.test.shape[1]} items; got {self.truth.n_items}")
        return self.truth, rows, np.asarray(self.sizes)


def holdout_propensity(pi: np.ndarray, share: np.ndarray) -> np.ndarray:
    """:math:`p = \\pi f / (1 - \\pi (1 - f))`: observed-pair propensity -> test-set propensity (module docstring).

    ``pi`` and ``share`` broadcast; float64 in [0, 1] (1 where both are 1).
    """
    pi = np.asarray(pi, dtype=np.float64)
    f = np.asarray(share, dtype=np.float64)
    den = 1.0 - pi * (1.0 - f)
    p = np.divide(pi * f, den, out=np.ones(np.broadcast(pi, f).shape), where=den > 0)
    return np.minimum(p, 1.0, out=p)  # a rounding above 1 (pi = 1: f / f) is 1


def _holdout_propensity_slope(pi: np.ndarray, share: np.ndarray) -> np.ndarray:
    """:math:`dp/d\\pi = f / (1 - \\pi(1 - f))^2` (propagates a Monte Carlo standard error)."""
    den = 1.0 - pi * (1.0 - share)
    return np.divide(share, den * den, out=np.zeros(len(pi)), where=den > 0)


@dataclass(frozen=True)
class _SamplerPropensity:
    """The test-set propensities an observation model (a sampler) assigns, on the world's truth and sizes."""

    sampler: Any
    n_draws: int = 64

    label: ClassVar[str] = ""

    def __post_init__(self) -> None:
        if not callable(getattr(self.sampler, "propensity", None)):
            raise TypeError(
                f"`sampler` must be an observation sampler with propensity(truth, sizes, rng); "
                f"got {type(self.sampler).__name__}"
            )
        check_int("n_draws", self.n_draws, low=2)

    def _observed_propensity(self, truth: Interactions, sizes: np.ndarray, rng: RNGLike) -> tuple[np.ndarray, Any]:
        """:math:`\\pi` of every true pair and its standard errors (None where exact)."""
        estimate = getattr(self.sampler, "propensity_estimate", None)
        if callable(estimate):  # no closed form: Monte Carlo with a standard error
            return estimate(truth, sizes, rng, n_draws=self.n_draws)
        return self.sampler.propensity(truth, sizes, rng), None

    def propensities(self, context: ObservationContext, rng: RNGLike = None) -> Propensities:
        """The test pairs' :math:`p_{ui}` (module docstring), with standard errors where Monte Carlo.

        Parameters
        ----------
        context : ObservationContext
            Needs ``truth``, ``truth_rows`` and ``sizes``.
        rng : Generator or seed, optional
            Used only by a sampler without a closed form (the popularity sampler).
        """
        truth, rows, sizes = context.truth_inputs()
        pi_truth, se_truth = self._observed_propensity(truth, sizes, rng)
        test = context.test
        I = truth.n_items
        t_rows = rows[row_ids(np.diff(test.indptr))]
        keys = row_ids(truth.user_counts()) * I + truth.matrix.indices
        want = t_rows * I + test.indices
        at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
        liked = keys[at] == want if len(keys) else np.zeros(len(want), dtype=bool)
        pi = np.where(liked, pi_truth[at] if len(keys) else 0.0, np.nan)
        se = None if se_truth is None else np.where(liked, se_truth[at] if len(keys) else 0.0, 0.0)
        if (~liked).any():
            dislike = getattr(self.sampler, "dislike_propensity", None)
            if not callable(dislike):
                raise ValueError(
                    f"{int((~liked).sum())} test pairs are not in the truth, and {type(self.sampler).__name__} "
                    f"has no dislike_propensity"
                )
            pi[~liked] = dislike(truth, sizes, t_rows[~liked], test.indices[~liked])
        share = context.test_share[row_ids(np.diff(test.indptr))]
        values = holdout_propensity(pi, share)
        if se is not None:
            se = se * _holdout_propensity_slope(pi, share)
        if len(values) and values.min() <= 0:
            raise ValueError(
                f"{int((values <= 0).sum())} observed test pairs have propensity 0 under {type(self.sampler).__name__}: "
                f"the sampler does not describe this observation"
            )
        return Propensities(self.label, values, se)


@dataclass(frozen=True)
class WorldPropensity(_SamplerPropensity):
    """The world's own propensities: its sampler's, exact (or Monte Carlo with the stated standard error).

    Parameters
    ----------
    sampler : observation sampler
        The world's (``World.sampler``): :class:`~simrec.observation.UniformSampler`
        and :class:`~simrec.observation.PreferenceSampler` are exact,
        :class:`~simrec.observation.PopularitySampler` is estimated by
        ``n_draws`` Rao-Blackwellised Monte Carlo draws, its standard error
        carried to ``Propensities.se`` (delta method through :func:`holdout_propensity`).
    n_draws : int, default 64
    """

    label: ClassVar[str] = "world"


@dataclass(frozen=True)
class MisspecifiedPropensity(_SamplerPropensity):
    """Another observation model's exact propensities, on the world's truth and sizes: deliberately wrong.

    Parameters
    ----------
    sampler : observation sampler
        The assumed model, e.g. :meth:`popularity_only` of the world's sampler.
    n_draws : int, default 64
    """

    label: ClassVar[str] = "misspecified"

    @classmethod
    def popularity_only(cls, sampler: Any, n_draws: int = 64) -> MisspecifiedPropensity:
        """The world's preference-driven sampler with its preference exponent set to 0.

        :class:`~simrec.observation.PreferenceSampler` observes a liked pair
        with :math:`\\pi \\propto (1 + |\\tilde U_i|)^a p_{ui}^b`; this assumes
        :math:`b = 0` (the same exposure and sizes): what a researcher who
        models popularity exactly but not preference would use.
        """
        if not hasattr(sampler, "pref_exponent"):
            raise TypeError(
                f"`sampler` must observe by preference (a pref_exponent, e.g. PreferenceSampler); "
                f"got {type(sampler).__name__}"
            )
        return cls(dataclasses.replace(sampler, pref_exponent=0.0), n_draws)


@dataclass(frozen=True)
class PopularityPowerLaw:
    """Yang et al. (RecSys 2018)'s propensity: :math:`p_i = \\min(1, s\\,(n^*_i)^{(\\gamma + 1)/2})`.

    :math:`n^*_i` is the item's training count (as in the authors' code, which
    counts the training set) and :math:`\\gamma` the presentation exponent,
    fitted with :func:`~simrec.debias.fit_popularity_exponent` on the
    context's lists (pooled over the recommenders given) unless ``exponent``
    fixes it. The paper gives the propensity up to a constant (SNIPS does not
    depend on it); IPS and DR do, so the scale :math:`s` makes the most
    popular item's propensity 1 unless ``scale`` sets it. As published, no
    clipping; ``floor`` clips from below (the clipped propensity of Saito et
    al., WSDM 2020), a named variant. Items without a training interaction
    have no propensity under the formula; the authors' code leaves their test
    pairs out of the estimate, and so does this kind (NaN).

    Parameters
    ----------
    exponent : float, optional
        :math:`\\gamma`; None (default): fitted on ``context.lists``.
    scale : float, optional
        :math:`s` > 0; None: :math:`1/\\max_i (n^*_i)^{(\\gamma+1)/2}`.
    floor : float, optional
        Lower clip in (0, 1].
    """

    exponent: float | None = None
    scale: float | None = None
    floor: float | None = None

    label: ClassVar[str] = "fitted"

    def __post_init__(self) -> None:
        if self.exponent is not None:
            object.__setattr__(self, "exponent", check_real("exponent", self.exponent))
        if self.scale is not None:
            object.__setattr__(self, "scale", check_in_range("scale", self.scale, 0, None, low_open=True))
        if self.floor is not None:
            object.__setattr__(self, "floor", check_in_range("floor", self.floor, 0, 1, low_open=True))

    def item_propensities(self, counts: np.ndarray, gamma: float) -> np.ndarray:
        """:math:`p_i` of every item (NaN where :math:`n^*_i = 0`), float64 (n_items,)."""
        c = np.asarray(counts, dtype=np.float64)
        raw = np.full(len(c), np.nan)
        seen = c > 0
        raw[seen] = c[seen] ** ((gamma + 1.0) / 2.0)
        s = self.scale if self.scale is not None else (1.0 / raw[seen].max() if seen.any() else 1.0)
        p = np.minimum(1.0, s * raw)
        if self.floor is not None:
            p = np.where(np.isnan(p), p, np.maximum(p, self.floor))
        return p

    def propensities(self, context: ObservationContext, rng: RNGLike = None) -> Propensities:
        """The test pairs' propensities from the context's training counts (and lists, to fit :math:`\\gamma`)."""
        counts = np.bincount(context.train.indices, minlength=context.train.shape[1])
        info: dict[str, float] = {}
        gamma = self.exponent
        if gamma is None:
            if not len(context.lists):
                raise ValueError("fitting the popularity exponent needs `lists` in the ObservationContext")
            fit = fit_popularity_exponent(list(context.lists), counts)
            gamma = fit.exponent
            info = {"gamma_se": fit.se}
        info["gamma"] = float(gamma)
        p = self.item_propensities(counts, gamma)
        return Propensities(self.label, p[context.test.indices], None, info)

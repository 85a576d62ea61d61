"""Weighted test-set resampling so the test set looks missing at random (Carraro & Bridge 2020).

Carraro & Bridge, "Debiased offline evaluation of recommender systems: a
weighted-sampling approach", ACM SAC 2020, pp. 1435-1442 (and their journal
version, "A sampling approach to debiasing the offline evaluation of
recommender systems", J. Intell. Inf. Syst. 2022): instead of reweighting a
metric, *sample* an intervened test set from the observed (MNAR) test pairs,
each pair with probability proportional to a weight :math:`w_{ui}`, and
evaluate on it as usual (:class:`~simrec.debias.Naive`). The strategies
(their code: cdiego89phd/wtd-debiasing-RS-eval, ``Debiasing
Intervention.ipynb``; the paper's text was not available here):

* :class:`SkewWeights` — SKEW (Liang, Charlin & Blei 2016, as Carraro & Bridge
  run it): :math:`w_{ui} = 1/n^*_i`, the inverse of the item's training count;
* :class:`WTDWeights` — WTD: :math:`w_{ui} = w_u w_i`, :math:`w_u =
  P_{\\mathrm{MAR}}(u \\mid O)/P_{\\mathrm{MNAR}}(u \\mid O)` and :math:`w_i =
  P_{\\mathrm{MAR}}(i \\mid O)/P_{\\mathrm{MNAR}}(i \\mid O)`, each normalised
  to sum 1; :math:`P_{\\mathrm{MNAR}}` is the users' and items' share of the
  training pairs and :math:`P_{\\mathrm{MAR}}` their share in a small
  missing-at-random sample (in a simulation: the truth's, the limit of any
  MAR sample of it); WTD_H (no MAR data) takes :math:`P_{\\mathrm{MAR}}`
  uniform. A share of 0 is replaced by 0.0001, as in their code;
* :class:`InversePropensityWeights` — :math:`w_{ui} = 1/p_{ui}` with any
  propensity kind of :mod:`simrec.debias.propensity` (simrec's crossing of
  the sampling approach with the propensity kinds; not in the paper).

The intervened test set holds :math:`\\lfloor \\rho\\, |S| \\rfloor` test pairs
(:math:`\\rho` = ``fraction``, 0.5 in their code), drawn without replacement
one after another each with probability proportional to its weight among the
remaining (successive sampling, numpy's ``choice(..., replace=False, p=w)``
in their code), here with exponential keys :math:`E/w` (Efraimidis & Spirakis
2006: the same law) in O(pairs). Users left without a test pair are not
evaluated. The estimate is random: the harness draws it with its own seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range
from simrec.debias._checks import check_metric, check_propensity, check_ranked
from simrec.debias.estimators import naive_on
from simrec.debias.metrics import LinearMetric
from simrec.debias.ranked import RankedTest
from simrec.debias.result import Estimation

__all__ = [
    "ResamplingWeights",
    "SkewWeights",
    "WTDWeights",
    "InversePropensityWeights",
    "resample_test",
    "WeightedResampling",
]

#: The share that replaces a user's or item's share of 0 (Carraro & Bridge's code).
_SHARE_FLOOR = 0.0001


class ResamplingWeights(Protocol):
    """Per-test-pair sampling weights :math:`w_{ui} \\ge 0`."""

    @property
    def label(self) -> str:
        """The weights' name in the estimator's (``resampled_<label>``)."""

    @property
    def uses_propensity(self) -> bool:
        """Whether :meth:`weights` reads the propensities."""

    def weights(self, ranked: RankedTest, propensity: np.ndarray | None) -> np.ndarray: ...


def _train(ranked: RankedTest) -> Any:
    if ranked.train is None:
        raise ValueError("these resampling weights count the training pairs: pass `train` to rank_test")
    return ranked.train


@dataclass(frozen=True)
class SkewWeights:
    """SKEW: :math:`w_{ui} = 1/\\max(n^*_i, 1)` (training count :math:`n^*_i`).

    Decision: an item without training interactions weighs as a count of 1
    (the largest weight); Carraro & Bridge's code gives it a uniform random
    weight in [0, 1) instead.
    """

    label: ClassVar[str] = "SKEW"
    uses_propensity: ClassVar[bool] = False

    def weights(self, ranked: RankedTest, propensity: np.ndarray | None = None) -> np.ndarray:
        train = _train(ranked)
        counts = np.bincount(train.indices, minlength=ranked.n_items)
        return 1.0 / np.maximum(counts, 1)[ranked.items]


def _ratio(target: np.ndarray | None, counts: np.ndarray, name: str) -> np.ndarray:
    """:math:`P_{MAR}/P_{MNAR}` per entity, normalised to sum 1 (shares of 0 floored at 0.0001)."""
    mnar = counts / max(counts.sum(), 1)
    if target is None:
        mar = np.full(len(counts), 1.0 / max(len(counts), 1))
    else:
        t = np.asarray(target, dtype=np.float64)
        if t.shape != counts.shape or (len(t) and (not np.isfinite(t).all() or t.min() < 0)) or t.sum() <= 0:
            raise ValueError(f"`{name}` must be {len(counts)} non-negative counts or shares with a positive sum")
        mar = t / t.sum()
    w = np.maximum(mar, _SHARE_FLOOR) / np.maximum(mnar, _SHARE_FLOOR)
    return w / w.sum()


@dataclass(frozen=True, eq=False)
class WTDWeights:
    """WTD (targets given) or WTD_H (uniform targets): :math:`w_{ui} = w_u w_i` (module docstring).

    Parameters
    ----------
    target_users : ndarray, shape (n_users,), optional
        Counts (or shares) of each user in a missing-at-random sample, e.g.
        the true relevance sets' sizes; None: uniform (WTD_H).
    target_items : ndarray, shape (n_items,), optional
        The same for items, e.g. the truth's item counts; None: uniform.
    """

    target_users: np.ndarray | None = None
    target_items: np.ndarray | None = None

    uses_propensity: ClassVar[bool] = False

    @property
    def label(self) -> str:
        return "WTD_H" if self.target_users is None and self.target_items is None else "WTD"

    def weights(self, ranked: RankedTest, propensity: np.ndarray | None = None) -> np.ndarray:
        train = _train(ranked)
        w_u = _ratio(self.target_users, np.diff(train.indptr).astype(np.float64), "target_users")
        w_i = _ratio(
            self.target_items, np.bincount(train.indices, minlength=ranked.n_items).astype(float), "target_items"
        )
        return w_u[ranked.rows] * w_i[ranked.items]


@dataclass(frozen=True)
class InversePropensityWeights:
    """:math:`w_{ui} = 1/p_{ui}` (a pair without a propensity, NaN, is never drawn)."""

    label: ClassVar[str] = "IPW"
    uses_propensity: ClassVar[bool] = True

    def weights(self, ranked: RankedTest, propensity: np.ndarray | None) -> np.ndarray:
        p = check_propensity(propensity, ranked.test.nnz)
        if not len(p) or not np.isnan(p.min()):  # no pair left out (min propagates NaN): no masks
            return 1.0 / p
        return np.where(np.isnan(p), 0.0, 1.0 / np.where(np.isnan(p), 1.0, p))


def resample_test(ranked: RankedTest, weights: np.ndarray, fraction: float, rng: RNGLike) -> RankedTest:
    """The intervened test set: :math:`\\lfloor \\rho |S| \\rfloor` pairs by successive sampling ∝ ``weights``.

    Parameters
    ----------
    ranked : RankedTest
    weights : ndarray of float, shape (ranked.test.nnz,)
        :math:`w_{ui} \\ge 0`; a pair of weight 0 is never drawn.
    fraction : float
        :math:`\\rho \\in (0, 1]`.
    rng : Generator or seed

    Returns
    -------
    RankedTest
        The same lists with the drawn test pairs only.
    """
    ranked = check_ranked(ranked)
    rho = check_in_range("fraction", fraction, 0, 1, low_open=True)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (ranked.test.nnz,) or (len(w) and (not np.isfinite(w).all() or w.min() < 0)):
        raise ValueError(f"`weights` must be {ranked.test.nnz} finite non-negative values (one per test pair)")
    k = int(rho * len(w))
    positive = np.flatnonzero(w > 0)
    if k > len(positive):
        raise ValueError(f"cannot draw {k} test pairs: only {len(positive)} have a positive weight")
    every = len(positive) == len(w)  # then positive is arange(len(w)): no gathers through it
    keys = as_generator(rng).standard_exponential(len(positive)) / (w if every else w[positive])
    keep = np.zeros(len(w), dtype=bool)
    if k:
        drawn = np.argpartition(keys, k - 1)[:k]
        keep[drawn if every else positive[drawn]] = True
    return ranked.subset(keep)


@dataclass(frozen=True)
class WeightedResampling:
    """Evaluate on an intervened test set drawn ∝ weights (Carraro & Bridge 2020; module docstring).

    Parameters
    ----------
    weights : SkewWeights, WTDWeights or InversePropensityWeights
    fraction : float, default 0.5
        :math:`\\rho`, the share of the test pairs drawn (their code's ``rho_p``).

    ``estimate(ranked, metric, propensity, rng=...)`` returns the naive
    metric on the drawn pairs (``propensity`` is read only by
    :class:`InversePropensityWeights`); ``rng`` is required.
    """

    weights: ResamplingWeights
    fraction: float = 0.5

    def __post_init__(self) -> None:
        if not callable(getattr(self.weights, "weights", None)):
            raise TypeError(
                f"`weights` must be resampling weights (e.g. WTDWeights()); got {type(self.weights).__name__}"
            )
        object.__setattr__(self, "fraction", check_in_range("fraction", self.fraction, 0, 1, low_open=True))

    @property
    def name(self) -> str:
        return f"resampled_{self.weights.label}"

    @property
    def uses_propensity(self) -> bool:
        """Whether the weights read the propensities (:class:`InversePropensityWeights`)."""
        return bool(self.weights.uses_propensity)

    def estimate(
        self, ranked: RankedTest, metric: LinearMetric, propensity: np.ndarray | None = None, *, rng: RNGLike = None
    ) -> Estimation:
        ranked = check_ranked(ranked)
        metric = check_metric(metric, ranked)
        if rng is None:
            raise TypeError("`rng` must be given: the resampled test set is random")
        drawn = resample_test(ranked, self.weights.weights(ranked, propensity), self.fraction, rng)
        return naive_on(drawn, metric, self.name, evaluated=np.diff(drawn.test.indptr) > 0)

"""Metrics linear in the relevance: a gain per relevant item and a per-user normaliser.

Every estimator of :mod:`simrec.debias` corrects a sum over the user's
relevant items, so it supports exactly the metrics of the form

.. math::
    M_u = \\frac{A_u}{g_u(n_u)}, \\qquad A_u = \\sum_{i \\in \\mathrm{Rel}_u} y_{ui}\\, c_u(Z_{ui}),
    \\qquad n_u = \\sum_{i \\in \\mathrm{Rel}_u} y_{ui},

with :math:`Z_{ui}` the 1-based position of item i in user u's list (or
full ranking), :math:`c_u` a gain of that position, :math:`y_{ui} \\in [0, 1]`
the pair's relevance label (1 for implicit feedback) and :math:`g_u` a
normaliser that may depend on :math:`n_u = |\\mathrm{Rel}_u|`. This is the
form of Yang et al. (RecSys 2018, §3: :math:`R(\\hat Z) = \\frac{1}{|U|}
\\sum_u \\frac{1}{|S^*_u|} \\sum_{i \\in S^*_u} c(\\hat Z_{u,i})`, i.e.
:math:`g = n`), of Schnabel et al. (ICML 2016, §3.2: DCG@K and Precision@K,
:math:`g` constant) and of Saito (RecSys 2020, DCG@K and Recall@K).

==================  ==========================================  ===========================================
metric              gain :math:`c_u(Z)`                          normaliser :math:`g_u(n)`
==================  ==========================================  ===========================================
:class:`Hits`       :math:`1[Z \\le K]`                          1
:class:`Precision`  :math:`1[Z \\le K]`                          :math:`\\min(|L_u|, K)` (real list length)
:class:`Recall`     :math:`1[Z \\le K]`                          :math:`n`
:class:`RecallTruncated` :math:`1[Z \\le K]`                     :math:`\\min(n, K)`
:class:`DCG`        :math:`1[Z \\le K]\\, d(Z)`                   1 (Schnabel et al.'s DCG@K)
:class:`NDCG`       :math:`1[Z \\le K]\\, d(Z)`                   :math:`\\mathrm{IDCG}(\\min(n, K))`
:class:`MeanDCG`    :math:`1[Z \\le K]\\, d(Z)`                   :math:`n` (Yang's and Saito's "DCG")
:class:`AUCGain`    :math:`1 - (Z - 1)/m_u`                      :math:`n` (Yang's per-item AUC)
==================  ==========================================  ===========================================

:math:`K` is the metric's cut-off (``k``; ``None``: the lists' width N, as
:mod:`simrec.metrics` reads ``lists[:, :k]``), :math:`d` the discount
(``"log2"``: :math:`1/\\log_2(Z + 1)`; ``"lenskit07"``: :math:`1/\\max(1,
\\log_2 Z)`, the discount of Saito's public code and of LensKit 0.7), and a
pair outside the list (:math:`Z = 0` here) gains 0. With binary labels the
naive estimator of these metrics is :mod:`simrec.metrics`' value on the same
inputs (:func:`~simrec.metrics.hits`, :func:`~simrec.metrics.precision`,
:func:`~simrec.metrics.recall`, :func:`~simrec.metrics.recall_truncated`,
:func:`~simrec.metrics.ndcg`; tested).

Not supported (not linear in the relevance, so no propensity weighting of the
relevant items is unbiased for them): reciprocal rank, average precision and
the hit indicator; exact AUC (its normaliser counts the non-relevant
candidates, a second-order term); :func:`linear_metric` refuses them with the
reason. :class:`AUCGain` is Yang et al.'s per-item AUC instead: for
:math:`P` relevant items among :math:`m` candidates, with mean position
:math:`\\bar Z`, it is :math:`1 - (\\bar Z - 1)/m`, while the exact AUC is
:math:`\\big(m - \\bar Z - (P - 1)/2\\big)/(m - P)`; the two agree as
:math:`P/m \\to 0`.

Decision: the normaliser of :class:`NDCG` at a non-integer :math:`n` (the
estimated :math:`\\hat n_u` of SNIPS and DR) interpolates the ideal DCG
linearly between integers, :math:`\\mathrm{IDCG}(x) = \\mathrm{IDCG}(\\lfloor
x \\rfloor) + (x - \\lfloor x \\rfloor)\\, d(\\lfloor x \\rfloor + 1)`; at
integers it is the usual ideal DCG.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from simrec._validation import check_choice, check_int

__all__ = [
    "LinearMetric",
    "Hits",
    "Precision",
    "Recall",
    "RecallTruncated",
    "DCG",
    "NDCG",
    "MeanDCG",
    "AUCGain",
    "DISCOUNTS",
    "linear_metric",
]


def _log2_discount(z: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(z + 1.0)


def _lenskit07_discount(z: np.ndarray) -> np.ndarray:
    return 1.0 / np.maximum(1.0, np.log2(np.maximum(z, 1.0)))


#: Discount names -> :math:`d(Z)` for 1-based positions Z >= 1.
DISCOUNTS = {"log2": _log2_discount, "lenskit07": _lenskit07_discount}


@dataclass(frozen=True)
class LinearMetric:
    """A metric :math:`M_u = A_u / g_u(n_u)` linear in the relevance (module docstring).

    Parameters
    ----------
    k : int, optional
        Cut-off K >= 1; None: the lists' width N.
    """

    k: int | None = None

    #: Name in result tables.
    name: ClassVar[str] = ""
    #: Whether :math:`g_u` depends on :math:`n_u = |\\mathrm{Rel}_u|` (then IPS needs it, SNIPS and SNDR estimate it).
    needs_n: ClassVar[bool] = False
    #: Whether the metric needs every candidate's position (full rankings).
    needs_full_ranking: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.k is not None:
            check_int("k", self.k, low=1)

    @property
    def label(self) -> str:
        """``"recall@10"``, or the bare name without a cut-off."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    def cutoff(self, width: int) -> int:
        """K for lists of ``width`` columns: ``min(k, width)`` (``width`` when ``k`` is None)."""
        return width if self.k is None else min(self.k, width)

    def gain(self, position: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        """:math:`c_u(Z)` at 1-based ``position`` (0: not in the list) for rows of real list ``length``, float64."""
        return ((position >= 1) & (position <= cutoff)).astype(np.float64)

    def normaliser(self, n: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        """:math:`g_u(n)` per user (``n`` float, possibly estimated), float64; 0 makes the value undefined."""
        return np.ones(len(length))


@dataclass(frozen=True)
class Hits(LinearMetric):
    """Relevant items in the top K: :math:`c = 1[Z \\le K]`, :math:`g = 1` (:func:`simrec.metrics.hits`)."""

    name: ClassVar[str] = "hits"


@dataclass(frozen=True)
class Precision(LinearMetric):
    """Precision@K over the real list length: :math:`g = \\min(|L_u|, K)` (:func:`simrec.metrics.precision`)."""

    name: ClassVar[str] = "precision"

    def normaliser(self, n: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        return np.minimum(length, cutoff).astype(np.float64)


@dataclass(frozen=True)
class Recall(LinearMetric):
    """Recall@K: :math:`g = n` (:func:`simrec.metrics.recall`; Yang et al.'s Recall@K)."""

    name: ClassVar[str] = "recall"
    needs_n: ClassVar[bool] = True

    def normaliser(self, n: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        return np.asarray(n, dtype=np.float64)


@dataclass(frozen=True)
class RecallTruncated(LinearMetric):
    """Recall with the denominator capped at K: :math:`g = \\min(n, K)` (:func:`simrec.metrics.recall_truncated`)."""

    name: ClassVar[str] = "recall_truncated"
    needs_n: ClassVar[bool] = True

    def normaliser(self, n: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        return np.minimum(np.asarray(n, dtype=np.float64), cutoff)


@dataclass(frozen=True)
class _Discounted(LinearMetric):
    discount: str = field(default="log2", kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("discount", self.discount, tuple(DISCOUNTS))

    def gain(self, position: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        inside = (position >= 1) & (position <= cutoff)
        return np.where(inside, DISCOUNTS[self.discount](np.maximum(position, 1).astype(np.float64)), 0.0)


@dataclass(frozen=True)
class DCG(_Discounted):
    """DCG@K, not normalised: :math:`c = 1[Z \\le K]\\, d(Z)`, :math:`g = 1` (Schnabel et al. 2016, §3.2)."""

    name: ClassVar[str] = "dcg"


@dataclass(frozen=True)
class NDCG(_Discounted):
    """nDCG@K: :math:`g = \\mathrm{IDCG}(\\min(n, K))` (:func:`simrec.metrics.ndcg` with the default discount).

    The ideal DCG at a non-integer n interpolates linearly (module docstring).
    """

    name: ClassVar[str] = "ndcg"
    needs_n: ClassVar[bool] = True

    def normaliser(self, n: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        x = np.minimum(np.asarray(n, dtype=np.float64), cutoff)
        d = DISCOUNTS[self.discount](np.arange(1, cutoff + 1, dtype=np.float64))
        cum = np.concatenate(([0.0], np.cumsum(d)))
        lo = np.floor(x).astype(np.int64)
        frac = x - lo
        step = np.concatenate((d, [0.0]))[lo]  # d(lo + 1); 0 at lo = cutoff (frac is 0 there)
        return cum[lo] + frac * step


@dataclass(frozen=True)
class MeanDCG(_Discounted):
    """DCG per relevant item: :math:`g = n` (Yang et al. 2018's "DCG"; Saito 2020's "DCG@K").

    Yang's code uses the ``"log2"`` discount; Saito's public code the
    ``"lenskit07"`` one (ranks 1 and 2 both weigh 1).
    """

    name: ClassVar[str] = "mean_dcg"
    needs_n: ClassVar[bool] = True

    def normaliser(self, n: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        return np.asarray(n, dtype=np.float64)


@dataclass(frozen=True)
class AUCGain(LinearMetric):
    """Yang et al.'s per-item AUC: :math:`c_u(Z) = 1 - (Z - 1)/m_u`, :math:`g = n`.

    :math:`m_u` is the user's number of ranked candidates (the real length
    of a full ranking; Yang's code: ``1 - Z / len(items)`` with the 0-based
    :math:`Z - 1`). Needs full rankings: a test item absent from the ranking
    gains 0. ``k`` is ignored (always the whole ranking).
    """

    name: ClassVar[str] = "auc_gain"
    needs_n: ClassVar[bool] = True
    needs_full_ranking: ClassVar[bool] = True

    def gain(self, position: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        m = np.maximum(np.asarray(length, dtype=np.float64), 1.0)
        return np.where(position >= 1, 1.0 - (position - 1.0) / m, 0.0)

    def cutoff(self, width: int) -> int:
        return width

    def normaliser(self, n: np.ndarray, length: np.ndarray, cutoff: int) -> np.ndarray:
        return np.asarray(n, dtype=np.float64)


#: simrec.metrics names -> the linear metric with the same value under the naive estimator.
_FROM_METRICS = {
    "hits": Hits,
    "precision": Precision,
    "recall": Recall,
    "recall_truncated": RecallTruncated,
    "ndcg": NDCG,
}
_NONLINEAR = {
    "hit": "the hit indicator 1[h_u > 0] is not linear in the relevant items",
    "reciprocal_rank": "the reciprocal rank max_i rel_i / i is not linear in the relevant items",
    "average_precision": "average precision is quadratic in the relevant items",
    "auc": "exact AUC normalises by the non-relevant candidates (use AUCGain, Yang et al.'s per-item AUC)",
    "pap_at_k": "pAp@k is not linear in the relevant items",
    "ndcg_lenskit07": "its ideal DCG sums the gains of every relevant item (use NDCG(discount='lenskit07') for the discount)",
}


def linear_metric(metric: object, k: int | None = None) -> LinearMetric:
    """The :mod:`simrec.debias` metric of a :mod:`simrec.metrics` metric object (or name), with cut-off ``k``.

    Raises
    ------
    ValueError
        For metrics no estimator here supports, naming the reason.
    """
    name = metric if isinstance(metric, str) else getattr(metric, "name", None)
    if name in _FROM_METRICS:
        return _FROM_METRICS[name](k)
    if name in _NONLINEAR:
        raise ValueError(f"`metric` {name!r} is not supported by the MNAR estimators: {_NONLINEAR[name]}")
    raise ValueError(f"`metric` must be one of {', '.join(_FROM_METRICS)} (or a LinearMetric); got {name!r}")

"""Metrics as objects: what an experiment measures, with a ``.name`` for tables.

A list metric scores a top-N list (:mod:`simrec.metrics.lists`); a ranking
metric scores every candidate (:mod:`simrec.metrics.rankings`) and needs dense
scores (``needs_scores``). Names are produced for result tables, never parsed:
a scenario's ``metrics = ["ndcg", "pap_at_k"]`` becomes objects once, in the
config layer (:data:`METRICS` maps the scenario names to constructors).

Example
-------
>>> from simrec.metrics import NDCG, PapAtK
>>> [m.name for m in (NDCG(), PapAtK(k=10))]
['ndcg', 'pap_at_k']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from simrec._validation import check_int
from simrec.metrics.lists import list_metrics, list_metrics_many
from simrec.metrics.rankings import auc, auc_from_ranks, auc_many, pap_at_k

__all__ = [
    "Metric",
    "ListMetric",
    "RankingMetric",
    "Precision",
    "Recall",
    "RecallTruncated",
    "ReciprocalRank",
    "NDCG",
    "AveragePrecision",
    "Hits",
    "Hit",
    "AUC",
    "PapAtK",
    "METRICS",
    "measure_lists",
    "measure_lists_many",
]


@dataclass(frozen=True)
class ListMetric:
    """A metric of top-N lists (see :mod:`simrec.metrics.lists` for each formula).

    ``uses_gains`` (default False) says whether the metric reads graded
    relevance (per-pair gains of an :class:`~simrec.interactions.Interactions`);
    a pipeline builds the gains of a relevance set only when a metric does.
    """

    name: ClassVar[str]
    needs_scores: ClassVar[bool] = False
    uses_gains: ClassVar[bool] = False


@dataclass(frozen=True)
class RankingMetric:
    """A metric of full rankings: ``per_user(scores, relevant)`` (see :mod:`simrec.metrics.rankings`)."""

    name: ClassVar[str]
    needs_scores: ClassVar[bool] = True
    #: Whether :meth:`AUC.per_user_ranked` exists: the metric needs only the relevant items' mid-ranks.
    from_ranks: ClassVar[bool] = False

    def per_user(self, scores: np.ndarray, relevant: object) -> np.ndarray:
        """The metric of each user's full ranking by ``scores`` against ``relevant``, shape (n_users,)."""
        raise NotImplementedError(f"{type(self).__name__} must define per_user")

    def per_user_many(self, scores: np.ndarray, relevants: Sequence) -> list[np.ndarray]:
        """``[self.per_user(scores, r) for r in relevants]``, sharing work across relevance sets where it can."""
        return [self.per_user(scores, r) for r in relevants]

    def per_user_ranked(self, ranks: Sequence[sp.csr_array], n_candidates: np.ndarray) -> list[np.ndarray]:
        """The metric from the relevant items' mid-ranks, one array per relevance set (when :attr:`from_ranks`)."""
        raise NotImplementedError(f"{type(self).__name__} needs the scores (from_ranks is False)")


@dataclass(frozen=True)
class Precision(ListMetric):
    name: ClassVar[str] = "precision"


@dataclass(frozen=True)
class Recall(ListMetric):
    name: ClassVar[str] = "recall"


@dataclass(frozen=True)
class RecallTruncated(ListMetric):
    name: ClassVar[str] = "recall_truncated"


@dataclass(frozen=True)
class ReciprocalRank(ListMetric):
    name: ClassVar[str] = "reciprocal_rank"


@dataclass(frozen=True)
class NDCG(ListMetric):
    name: ClassVar[str] = "ndcg"


@dataclass(frozen=True)
class NDCGLensKit07(ListMetric):
    """nDCG as LensKit 0.7 computed it for the thesis (:func:`simrec.metrics.ndcg_lenskit07`); graded where the relevance has gains."""

    name: ClassVar[str] = "ndcg_lenskit07"
    uses_gains: ClassVar[bool] = True


@dataclass(frozen=True)
class AveragePrecision(ListMetric):
    name: ClassVar[str] = "average_precision"


@dataclass(frozen=True)
class Hits(ListMetric):
    name: ClassVar[str] = "hits"


@dataclass(frozen=True)
class Hit(ListMetric):
    name: ClassVar[str] = "hit"


@dataclass(frozen=True)
class AUC(RankingMetric):
    """Area under the ROC curve of each user's full ranking (:func:`simrec.metrics.auc`)."""

    name: ClassVar[str] = "auc"

    def per_user(self, scores: np.ndarray, relevant: object) -> np.ndarray:
        return auc(scores, relevant)

    def per_user_many(self, scores: np.ndarray, relevants: Sequence) -> list[np.ndarray]:
        """AUC against each relevance set, the scores sorted once (:func:`simrec.metrics.rankings.auc_many`)."""
        return auc_many(scores, relevants)

    from_ranks: ClassVar[bool] = True

    def per_user_ranked(self, ranks: Sequence[sp.csr_array], n_candidates: np.ndarray) -> list[np.ndarray]:
        """AUC against each relevance set given its items' mid-ranks (:func:`simrec.metrics.rankings.auc_from_ranks`)."""
        return [auc_from_ranks(r, n_candidates) for r in ranks]


@dataclass(frozen=True)
class PapAtK(RankingMetric):
    """pAp@k of each user's full ranking (:func:`simrec.metrics.pap_at_k`); ``k`` default 10."""

    k: int = 10
    name: ClassVar[str] = "pap_at_k"

    def __post_init__(self) -> None:
        check_int("k", self.k, low=1)

    def per_user(self, scores: np.ndarray, relevant: object) -> np.ndarray:
        return pap_at_k(scores, relevant, self.k)


Metric = ListMetric | RankingMetric

#: Scenario names -> metric constructors (``pap_at_k`` takes ``k``).
METRICS: dict[str, Callable[..., Metric]] = {
    m.name: m
    for m in (
        Hits,
        Hit,
        Precision,
        Recall,
        RecallTruncated,
        ReciprocalRank,
        NDCG,
        NDCGLensKit07,
        AveragePrecision,
        AUC,
        PapAtK,
    )
}


def measure_lists(lists: np.ndarray, relevant: object, metrics: Sequence[ListMetric]) -> dict[str, np.ndarray]:
    """Several list metrics of the same lists at once (one relevance look-up), by name."""
    return list_metrics(lists, relevant, [m.name for m in metrics])


def measure_lists_many(
    lists_seq: Sequence[np.ndarray], relevant: object, metrics: Sequence[ListMetric]
) -> list[dict[str, np.ndarray]]:
    """:func:`measure_lists` of several list arrays of the same users, one relevance look-up for all."""
    return list_metrics_many(lists_seq, relevant, [m.name for m in metrics])

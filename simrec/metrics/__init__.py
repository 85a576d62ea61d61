"""Per-user evaluation metrics, vectorized over users (docs/design.md §4).

List metrics (:mod:`simrec.metrics.lists`) take top-N ``lists`` (n_users, N)
with -1 padding; full-ranking metrics (:mod:`simrec.metrics.rankings`) take
dense ``scores`` (n_users, n_items) with -inf at non-candidates. All take a
``relevant`` csr_array (n_users, n_items), an optional boolean ``evaluated``
mask, and return float64 (n_users,) with NaN where a user is not evaluated or
the metric is undefined (one :class:`UndefinedMetricWarning` per call).
"""

from simrec.metrics._common import UndefinedMetricWarning
from simrec.metrics.lists import (
    LIST_METRICS,
    average_precision,
    hit,
    hits,
    list_metrics,
    list_metrics_many,
    ndcg,
    ndcg_lenskit07,
    precision,
    recall,
    recall_truncated,
    reciprocal_rank,
    relevant_positions,
)
from simrec.metrics.measures import (
    AUC,
    METRICS,
    NDCG,
    AveragePrecision,
    Hit,
    Hits,
    ListMetric,
    Metric,
    NDCGLensKit07,
    PapAtK,
    Precision,
    RankingMetric,
    Recall,
    RecallTruncated,
    ReciprocalRank,
    measure_lists,
    measure_lists_many,
)
from simrec.metrics.rankings import auc, auc_from_ranks, auc_many, pap_at_k

__all__ = [
    # metric objects
    "Metric",
    "ListMetric",
    "RankingMetric",
    "Precision",
    "Recall",
    "RecallTruncated",
    "ReciprocalRank",
    "NDCG",
    "NDCGLensKit07",
    "AveragePrecision",
    "Hits",
    "Hit",
    "AUC",
    "PapAtK",
    "METRICS",
    "measure_lists",
    "measure_lists_many",
    # functions
    "LIST_METRICS",
    "UndefinedMetricWarning",
    "average_precision",
    "auc",
    "auc_from_ranks",
    "auc_many",
    "hit",
    "hits",
    "list_metrics",
    "list_metrics_many",
    "ndcg",
    "ndcg_lenskit07",
    "pap_at_k",
    "precision",
    "recall",
    "recall_truncated",
    "reciprocal_rank",
    "relevant_positions",
]

"""Key statistics of interaction data and their divergences (Tian's thesis, §3.4).

The thesis text's reading is the default; :mod:`.authors_code` computes them
as the thesis authors' published code does (a named variant, for reproductions).

Item popularity, user activity, item-item and user-user cosine similarity as
normalised histograms on bins shared by a reference dataset and simulations
(:class:`StatisticBins`), KL divergence D_KL(reference ‖ simulated) with
additive smoothing, and the relative / average losses the calibration
minimises.
"""

from .authors_code import (
    AuthorsCodeStatistics,
    ValueCounts,
    authors_code_statistics,
    kl_by_statistic_authors_code,
    kl_divergence_joined,
    value_counts,
)
from .bins import StatisticBins, log_count_edges
from .counts import count_histogram, item_popularity, user_activity
from .divergence import DEFAULT_EPS, average_loss, kl_divergence, relative_loss
from .key import STATISTICS, KeyStatistics, key_statistics, kl_by_statistic
from .similarity import (
    CosineSample,
    item_cosines,
    item_similarity,
    pair_intersections,
    pair_intersections_sparse,
    sample_unique_pairs,
    similarity_histogram,
    user_cosines,
    user_similarity,
)

__all__ = [
    "StatisticBins",
    "log_count_edges",
    "count_histogram",
    "item_popularity",
    "user_activity",
    "CosineSample",
    "item_cosines",
    "user_cosines",
    "item_similarity",
    "user_similarity",
    "similarity_histogram",
    "sample_unique_pairs",
    "pair_intersections",
    "pair_intersections_sparse",
    "STATISTICS",
    "KeyStatistics",
    "key_statistics",
    "kl_by_statistic",
    "kl_divergence",
    "relative_loss",
    "average_loss",
    "DEFAULT_EPS",
    "AuthorsCodeStatistics",
    "ValueCounts",
    "authors_code_statistics",
    "kl_by_statistic_authors_code",
    "kl_divergence_joined",
    "value_counts",
]

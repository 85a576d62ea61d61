"""Reference datasets: loaders for the published layouts, k-core, summaries.

Every loader returns an :class:`~simrec.interactions.Interactions` of binary
implicit feedback (every observed pair counts, as in Tian's thesis; a rating
threshold is the ``min_rating`` option) with the external ids as
``user_ids`` / ``item_ids`` (sorted; rows and columns in id order), and raises
:class:`DatasetError` naming the file (and line) when the data is not as
expected. See docs/design.md §3 for the layouts. :func:`load_timestamped` also
returns each pair's latest timestamp (MovieLens, tables with a timestamp
column), for leave-last-out splits.
"""

from .amazon import load_amazon_5core
from .binarize import binarize, binarize_events
from .detect import DATASET_KINDS, check_dataset_files, detect_kind, load_dataset, load_timestamped
from .errors import DatasetError
from .kcore import k_core, k_core_pairs, keep_pairs
from .movielens import load_movielens, load_movielens_timestamped
from .pairs import load_pairs, load_pairs_timestamped
from .steam import load_steam
from .summary import CountSummary, DatasetSummary, describe, gini

__all__ = [
    "load_movielens",
    "load_amazon_5core",
    "load_steam",
    "load_pairs",
    "load_dataset",
    "detect_kind",
    "check_dataset_files",
    "DATASET_KINDS",
    "describe",
    "DatasetSummary",
    "CountSummary",
    "gini",
    "DatasetError",
    "k_core",
    "k_core_pairs",
    "keep_pairs",
    "binarize",
    "binarize_events",
    "load_timestamped",
    "load_movielens_timestamped",
    "load_pairs_timestamped",
]

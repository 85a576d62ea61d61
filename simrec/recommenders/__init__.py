"""Recommenders evaluated by simrec (docs/design.md §4; Tian's thesis §3.5.2).

All follow the :class:`Recommender` protocol: ``recommend(train, relevant, n,
rng)`` -> (n_users, n) int64 lists with -1 padding over the candidates
``all items - train_u``, and ``score(train, relevant, rng, users)`` -> dense
scores with -inf at training items. ``relevant`` (the true relevance of the
candidates) is read only by the oracles.

:class:`ItemCFScorer` is a LensKit scorer (Krichene & Rendle's item-based
CF, :mod:`simrec.recommenders.item_cf`), run through
:class:`LensKitRecommender`; it is imported on first use (LensKit and PyTorch
load only then). A LensKit scorer is user code: whatever it raises leaves
:class:`LensKitRecommender` as one :class:`UserCodeError` naming the
recommender (:mod:`simrec._usercode`).
"""

from typing import TYPE_CHECKING

from simrec._usercode import UserCodeError
from simrec.recommenders._base import Recommender, lists_of, top_n
from simrec.recommenders.baselines import Oracle, Popular, ProbabilisticOracle, RandomRecommender
from simrec.recommenders.import_path import (
    ImportPathError,
    check_import_path,
    import_component,
    is_component_class,
    param_problems,
)
from simrec.recommenders.lenskit_adapter import LENSKIT_SCORERS, LensKitRecommender
from simrec.recommenders.levels import TiedLevels

if TYPE_CHECKING:
    from simrec.recommenders.item_cf import ItemCFConfig, ItemCFScorer, item_cf_similarity

__all__ = [
    "ImportPathError",
    "check_import_path",
    "import_component",
    "is_component_class",
    "ItemCFConfig",
    "ItemCFScorer",
    "item_cf_similarity",
    "param_problems",
    "LENSKIT_SCORERS",
    "LensKitRecommender",
    "lists_of",
    "Oracle",
    "Popular",
    "ProbabilisticOracle",
    "RandomRecommender",
    "Recommender",
    "TiedLevels",
    "top_n",
    "UserCodeError",
]

#: Names whose module imports LensKit (and PyTorch): loaded on first use, so ``import simrec`` stays light.
_LAZY = {
    "ItemCFConfig": "simrec.recommenders.item_cf",
    "ItemCFScorer": "simrec.recommenders.item_cf",
    "item_cf_similarity": "simrec.recommenders.item_cf",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

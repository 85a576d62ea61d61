"""Recommenders evaluated by simrec (shared/DESIGN.md §4; Tian's thesis §3.5.2).

All follow the :class:`Recommender` protocol: ``recommend(train, relevant, n,
rng)`` -> (n_users, n) int64 lists with -1 padding over the candidates
``all items - train_u``, and ``score(train, relevant, rng, users)`` -> dense
scores with -inf at training items. ``relevant`` (the true relevance of the
candidates) is read only by the oracles.
"""

from simrec.recommenders._base import Recommender, top_n
from simrec.recommenders.baselines import Oracle, Popular, ProbabilisticOracle, RandomRecommender
from simrec.recommenders.import_path import ImportPathError, check_import_path, import_component, param_problems
from simrec.recommenders.lenskit_adapter import LENSKIT_SCORERS, LensKitRecommender

__all__ = [
    "ImportPathError",
    "check_import_path",
    "import_component",
    "param_problems",
    "LENSKIT_SCORERS",
    "LensKitRecommender",
    "Oracle",
    "Popular",
    "ProbabilisticOracle",
    "RandomRecommender",
    "Recommender",
    "top_n",
]

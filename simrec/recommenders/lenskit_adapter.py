"""Run LensKit algorithms as simrec recommenders (shared/DESIGN.md §4).

The training matrix becomes a ``lenskit.data.Dataset`` (``from_interactions_df``
with the full user and item vocabularies ``0..n_users-1`` / ``0..n_items-1``),
the scorer is wrapped in LensKit's own top-N pipeline
(``lenskit.pipeline.topn_pipeline``: training-history lookup, candidate
selector excluding the user's training items, scorer, ``TopNRanker``) and lists
come from ``lenskit.batch.recommend``; so a simulation evaluates exactly what a
LensKit user would run. Tested against LensKit 2025.8.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from simrec._random import RNGLike, as_generator
from simrec._validation import check_int
from simrec.interactions import Interactions
from simrec.recommenders._base import check_relevant, check_train, check_users
from simrec.recommenders.import_path import import_component

__all__ = ["LensKitRecommender", "LENSKIT_SCORERS"]

#: Short names accepted for ``scorer`` -> "module:Class".
LENSKIT_SCORERS: dict[str, str] = {
    "ItemKNNScorer": "lenskit.knn:ItemKNNScorer",
    "UserKNNScorer": "lenskit.knn:UserKNNScorer",
    "ImplicitMFScorer": "lenskit.als:ImplicitMFScorer",
    "BiasedMFScorer": "lenskit.als:BiasedMFScorer",
    "PopScorer": "lenskit.basic:PopScorer",
    "BiasScorer": "lenskit.basic:BiasScorer",
    "ItemCFScorer": "simrec.recommenders.item_cf:ItemCFScorer",
}

#: Scorers whose LensKit default ``feedback="explicit"`` needs ratings, which
#: simrec's binary data lacks; the adapter defaults them to ``"implicit"``.
_IMPLICIT_DEFAULT = {"ItemKNNScorer", "UserKNNScorer"}

#: Score given to candidates LensKit cannot score (NaN): below every scored
#: candidate, above the -inf of non-candidates.
UNSCORED = -np.finfo(np.float64).max


def _resolve(scorer: object) -> Callable[..., Any]:
    if isinstance(scorer, str):
        if scorer in LENSKIT_SCORERS:
            return import_component(LENSKIT_SCORERS[scorer])
        if ":" not in scorer:
            raise ValueError(
                f"`scorer` must be one of {', '.join(map(repr, LENSKIT_SCORERS))} or a "
                f"'package.module:Class' import path; got {scorer!r}"
            )
        return import_component(scorer)
    if callable(scorer):
        return scorer
    raise TypeError(f"`scorer` must be a name or a callable returning a LensKit component; got {type(scorer).__name__}")


class LensKitRecommender:
    """A LensKit scorer run through LensKit's top-N pipeline.

    Parameters
    ----------
    scorer : str or callable
        A LensKit scorer: a short name from :data:`LENSKIT_SCORERS`
        (``"ItemKNNScorer"``, ``"ImplicitMFScorer"``, ...), a
        ``"package.module:Class"`` import path (checked and imported by
        :func:`simrec.recommenders.import_path.import_component`; a module
        must be importable from ``sys.path``), or a callable (a LensKit
        ``Component`` class or a factory returning one).
    name : str, optional
        Label; default the scorer's name.
    n_jobs : int, default 1
        Processes for ``lenskit.batch.recommend`` (1 = in this process).
    **params
        Configuration passed to the scorer (``scorer(**params)``), e.g.
        ``k=20`` for ItemKNN, ``embedding_size=50`` for ImplicitMF.

    Notes
    -----
    Decisions:

    * ``ItemKNNScorer`` and ``UserKNNScorer`` default to
      ``feedback="implicit"`` (simrec data are binary; LensKit's explicit
      default would look for ratings).
    * The pipeline is trained once per training set: ``recommend`` and
      ``score`` reuse the last fit when called with the *same* ``train`` object
      (identity), and call :meth:`fit` otherwise. Training randomness (e.g.
      ImplicitMF's initialisation) comes from ``rng`` through
      ``TrainingOptions(rng=seed)``.
    * Lists are LensKit's own: candidates LensKit cannot score (NaN, e.g. an
      item with no neighbour) are dropped by its ranker, so a list can be
      shorter than n (padded with -1). In ``score`` they get
      :data:`UNSCORED` (below every scored candidate; ties count 1/2 in AUC).
      Ties among scored items are left as LensKit scores them.
    * ``relevant`` is ignored.
    """

    def __init__(
        self, scorer: str | Callable[..., Any], name: str | None = None, *, n_jobs: int = 1, **params: Any
    ) -> None:
        self._factory = _resolve(scorer)
        self.n_jobs = check_int("n_jobs", n_jobs, low=1)
        short = getattr(self._factory, "__name__", type(self._factory).__name__)
        if short in _IMPLICIT_DEFAULT:
            params.setdefault("feedback", "implicit")
        self.params = params
        self.name = short if name is None else str(name)
        self._fitted_on: Interactions | None = None
        self._pipeline = None
        self._component = None
        # build one component now so that a bad parameter fails here, not mid-run
        self._factory(**self.params)

    def __repr__(self) -> str:
        return f"LensKitRecommender({self.name!r}, {self.params})"

    # -- training ---------------------------------------------------------------
    @staticmethod
    def to_dataset(train: Interactions):
        """The training interactions as a ``lenskit.data.Dataset`` (ids = indices)."""
        from lenskit.data import from_interactions_df

        df = pd.DataFrame({"user_id": train.row_of_pairs(), "item_id": train.matrix.indices.astype(np.int64)})
        return from_interactions_df(df, users=np.arange(train.n_users), items=np.arange(train.n_items))

    def fit(self, train: Interactions, rng: RNGLike = None) -> LensKitRecommender:
        """Build and train the LensKit pipeline on ``train``; returns self."""
        from lenskit.pipeline import topn_pipeline
        from lenskit.training import TrainingOptions

        train = check_train(train)
        seed = int(as_generator(rng).integers(2**63))
        component = self._factory(**self.params)
        pipe = topn_pipeline(component, name=self.name)
        pipe.train(self.to_dataset(train), TrainingOptions(rng=seed))
        self._pipeline, self._fitted_on, self._component = pipe, train, component
        return self

    @property
    def pipeline(self):
        """The trained ``lenskit.pipeline.Pipeline`` (None before :meth:`fit`)."""
        return self._pipeline

    def _ensure_fit(self, train: Interactions, gen: np.random.Generator) -> None:
        if self._fitted_on is not train:
            self.fit(train, gen)

    # -- recommender interface --------------------------------------------------
    def recommend(self, train: Interactions, relevant: sp.csr_array | None, n: int, rng: RNGLike = None) -> np.ndarray:
        """LensKit's top-n lists, shape (n_users, n), -1 padding (``lenskit.batch.recommend``)."""
        from lenskit.batch import recommend

        train = check_train(train)
        check_relevant(relevant, train, required=False)
        n = check_int("n", n, low=1)
        gen = as_generator(rng)
        self._ensure_fit(train, gen)
        recs = recommend(self._pipeline, np.arange(train.n_users), n=n, n_jobs=self.n_jobs)
        df = recs.to_df()
        out = np.full((train.n_users, n), -1, dtype=np.int64)
        if len(df):
            out[df["user_id"].to_numpy(np.int64), df["rank"].to_numpy(np.int64) - 1] = df["item_id"].to_numpy(np.int64)
        return out

    def score(
        self,
        train: Interactions,
        relevant: sp.csr_array | None,
        rng: RNGLike = None,
        users: np.ndarray | None = None,
        *,
        exclude_train: bool = True,
    ) -> np.ndarray:
        """LensKit scorer output for every candidate; -inf at training items.

        ``exclude_train=False`` scores the user's training items too (the
        scorer is given every item instead of the pipeline's candidates:
        Li & Jin's global ranking of all items).

        Runs the pipeline's ``scorer`` node per user (LensKit scores one query
        at a time), or, for a scorer with a ``score_histories(history)``
        method (e.g. :class:`~simrec.recommenders.ItemCFScorer`), one call per
        block of users with their training histories as a sparse matrix (the
        same scores, no loop over users); unscored candidates get
        :data:`UNSCORED`.
        """
        train = check_train(train)
        check_relevant(relevant, train, required=False)
        users = check_users(users, train.n_users)
        gen = as_generator(rng)
        self._ensure_fit(train, gen)
        out = np.full((len(users), train.n_items), -np.inf)
        cand = np.ones((len(users), train.n_items), dtype=bool)
        if exclude_train:
            cand[train.matrix[users].nonzero()] = False
        out[cand] = UNSCORED
        batch = getattr(self._component, "score_histories", None)
        if callable(batch):
            # the component's item numbers of simrec's items 0..n_items-1 (ids = indices, see to_dataset)
            nums = np.asarray(self._component.items.numbers(np.arange(train.n_items)), dtype=np.int64)
            hist = train.matrix[users].tocoo()
            h = sp.csr_array((np.ones(hist.nnz), (hist.row, nums[hist.col])), shape=(len(users), len(nums)))
            vals = np.asarray(batch(h), dtype=np.float64)[:, nums]
            ok = np.isfinite(vals) & cand
            out[ok] = vals[ok]
            return out
        every = None
        if not exclude_train:
            from lenskit.data import ItemList

            every = ItemList(item_ids=np.arange(train.n_items))
        for row, u in enumerate(users):
            scored = (
                self._pipeline.run("scorer", query=int(u))
                if every is None
                else self._pipeline.run("scorer", query=int(u), items=every)
            )
            ids = np.asarray(scored.ids(), dtype=np.int64)
            vals = np.asarray(scored.scores(), dtype=np.float64)
            ok = np.isfinite(vals) & cand[row, ids]
            out[row, ids[ok]] = vals[ok]
        return out

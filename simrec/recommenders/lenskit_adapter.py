"""Run LensKit algorithms as simrec recommenders (docs/design.md §4).

The training matrix becomes a ``lenskit.data.Dataset`` (``from_interactions_df``
with the full user and item vocabularies ``0..n_users-1`` / ``0..n_items-1``),
the scorer is wrapped in LensKit's own top-N pipeline
(``lenskit.pipeline.topn_pipeline``: training-history lookup, candidate
selector excluding the user's training items, scorer, ``TopNRanker``) and lists
come from ``lenskit.batch.recommend``; so a simulation evaluates exactly what a
LensKit user would run. Tested against LensKit 2025.8.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from simrec._random import RNGLike, as_generator
from simrec._usercode import UserCodeError, user_code
from simrec._validation import check_int
from simrec.interactions import Interactions
from simrec.recommenders._base import check_relevant, check_train, check_users
from simrec.recommenders.import_path import (
    STDLIB_MODULES,
    ImportPathError,
    import_component,
    is_component_class,
    param_problems,
)

if TYPE_CHECKING:
    from lenskit.data import Dataset
    from lenskit.pipeline import Pipeline

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


def _resolve(scorer: object) -> type:
    """The Component class ``scorer`` names (a short name, an import path) or is; nothing is called."""
    if isinstance(scorer, str):
        if scorer in LENSKIT_SCORERS:
            return import_component(LENSKIT_SCORERS[scorer])
        if ":" not in scorer:
            raise ValueError(
                f"`scorer` must be one of {', '.join(map(repr, LENSKIT_SCORERS))} or a "
                f"'package.module:Class' import path; got {scorer!r}"
            )
        return import_component(scorer)
    if is_component_class(scorer):
        if inspect.isabstract(scorer):
            raise TypeError(f"`scorer` {scorer.__name__} is an abstract Component class; pass a concrete one")  # type: ignore[attr-defined]
        return scorer  # type: ignore[return-value]
    raise TypeError(
        "`scorer` must be a name, a 'package.module:Class' import path or a LensKit Component class (a subclass of "
        f"lenskit.pipeline.Component); got {type(scorer).__name__}. Factories (functions returning a component) "
        "are not accepted: pass the class, and its configuration as keyword arguments"
    )


def _reference(cls: type) -> tuple[str, str | None] | None:
    """``(import path, folder to append to sys.path)`` by which another process imports ``cls``; None if none works.

    The folder is the one the class's top-level package was loaded from
    (e.g. a scenario file's folder), so a worker process or a Ray worker finds
    a module that only the scenario's folder holds.
    """
    module, name = cls.__module__, cls.__qualname__
    mod = sys.modules.get(module)
    if (
        mod is None
        or module.partition(".")[0] in STDLIB_MODULES
        or "__main__" in module.split(".")
        or not name.isidentifier()  # a nested class ("Outer.Inner") or one defined in a function
        or vars(mod).get(name) is not cls
    ):
        return None
    file = getattr(mod, "__file__", None)
    if not file:
        return f"{module}:{name}", None
    root = Path(file).resolve().parent
    for _ in range(module.count(".") + (Path(file).stem == "__init__")):
        root = root.parent
    return f"{module}:{name}", str(root)


class LensKitRecommender:
    """A LensKit scorer run through LensKit's top-N pipeline.

    Parameters
    ----------
    scorer : str or type
        A LensKit scorer: a short name from :data:`LENSKIT_SCORERS`
        (``"ItemKNNScorer"``, ``"ImplicitMFScorer"``, ...), a
        ``"package.module:Class"`` import path (checked and imported by
        :func:`simrec.recommenders.import_path.import_component`; a module
        must be importable from ``sys.path``), or a LensKit ``Component``
        class. Nothing else is accepted (factories neither: issue 22).
    name : str, optional
        Label; default the scorer's name.
    n_jobs : int, default 1
        Processes for ``lenskit.batch.recommend`` (1 = in this process).
    **params
        Configuration passed to the scorer (``scorer(**params)``), e.g.
        ``max_nbrs=20`` for ItemKNN, ``embedding_size=50`` for ImplicitMF;
        checked against its config class here (unknown keys and bad values
        raise ValueError) without constructing the component.

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
    * The scorer is user code: the component is constructed, trained and run
      inside :class:`simrec._usercode.user_code`, so whatever it raises
      (``SystemExit`` and ``KeyboardInterrupt`` included, but not a real
      Ctrl-C) leaves as one :class:`~simrec._usercode.UserCodeError`
      "recommender 'name' failed: ...". A recommender sent to another process
      (a task's payload) carries its scorer's import path, not the class: the
      module is imported where it is first used, inside that guard.
    """

    def __init__(self, scorer: str | type, name: str | None = None, *, n_jobs: int = 1, **params: Any) -> None:
        cls = _resolve(scorer)
        self.n_jobs = check_int("n_jobs", n_jobs, low=1)
        short = cls.__name__
        if short in _IMPLICIT_DEFAULT:
            params.setdefault("feedback", "implicit")
        self.params = params
        self.name = short if name is None else str(name)
        self._factory: type | None = cls
        self._reference = _reference(cls)
        self._fitted_on: Interactions | None = None
        self._pipeline: Pipeline | None = None
        self._component: Any = None  # the user's Component: its trained attributes are its own
        # check the parameters now (against the config class, nothing constructed) so that a bad one fails here
        problems = param_problems(cls, params)
        if problems:
            raise ValueError(
                f"parameters of {short}: " + "; ".join(f"`{key}`: {msg}" if key else msg for key, msg in problems)
            )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if state["_reference"] is not None:  # imported by path where unpickled, when first used (inside the guard)
            state["_factory"] = None
        return state

    def _component_class(self) -> type:
        """The scorer's Component class (imported by path in a process that received this recommender pickled)."""
        if self._factory is None:
            path, root = self._reference  # type: ignore[misc]
            try:
                self._factory = import_component(path, root)
            except ImportPathError as exc:
                raise UserCodeError(f"recommender {self.name!r} failed: {exc}") from exc
        return self._factory

    @property
    def _guard(self) -> user_code:
        """The guard of the scorer's code (its construction, training and scoring)."""
        return user_code(f"recommender {self.name!r}")

    def __repr__(self) -> str:
        return f"LensKitRecommender({self.name!r}, {self.params})"

    # -- training ---------------------------------------------------------------
    @staticmethod
    def to_dataset(train: Interactions) -> Dataset:
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
        data = self.to_dataset(train)
        with self._guard:
            component = self._component_class()(**self.params)
            pipe = topn_pipeline(component, name=self.name)
            pipe.train(data, TrainingOptions(rng=seed))
        self._pipeline, self._fitted_on, self._component = pipe, train, component
        return self

    @property
    def pipeline(self) -> Pipeline | None:
        """The trained ``lenskit.pipeline.Pipeline`` (None before :meth:`fit`)."""
        return self._pipeline

    def _trained(self) -> Pipeline:
        """The trained pipeline (after :meth:`_ensure_fit`)."""
        if self._pipeline is None:
            raise RuntimeError(f"recommender {self.name!r} is used before fit()")
        return self._pipeline

    def _ensure_fit(self, train: Interactions, gen: np.random.Generator) -> None:
        if self._fitted_on is not train:
            self.fit(train, gen)

    # -- recommender interface --------------------------------------------------
    def recommend(self, train: Interactions, relevant: sp.csr_array | None, n: int, rng: RNGLike = None) -> np.ndarray:
        """LensKit's top-n lists, shape (n_users, n), -1 padding (``lenskit.batch.recommend``)."""
        return self.recommend_users(train, relevant, n, rng, np.arange(check_train(train).n_users))

    def recommend_users(
        self, train: Interactions, relevant: sp.csr_array | None, n: int, rng: RNGLike, users: np.ndarray
    ) -> np.ndarray:
        """The lists of ``users`` (distinct rows) only, shape (len(users), n): their rows of :meth:`recommend` (LensKit builds a
        list per user, so a sample of the users costs only theirs; :mod:`simrec.user_sample`)."""
        from lenskit.batch import recommend

        train = check_train(train)
        check_relevant(relevant, train, required=False)
        n = check_int("n", n, low=1)
        users = check_users(users, train.n_users)
        gen = as_generator(rng)
        self._ensure_fit(train, gen)
        out = np.full((len(users), n), -1, dtype=np.int64)
        if not len(users):  # LensKit's batch runner divides by the number of queries
            return out
        with self._guard:
            df = recommend(self._trained(), users, n=n, n_jobs=self.n_jobs).to_df()
        if len(df):
            row = np.full(train.n_users, -1, dtype=np.int64)
            row[users] = np.arange(len(users))
            out[row[df["user_id"].to_numpy(np.int64)], df["rank"].to_numpy(np.int64) - 1] = df["item_id"].to_numpy(
                np.int64
            )
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
        with self._guard:
            self._fill_scores(out, cand, train, users, exclude_train)
        return out

    def _fill_scores(
        self, out: np.ndarray, cand: np.ndarray, train: Interactions, users: np.ndarray, exclude_train: bool
    ) -> None:
        """Write the scorer's finite scores of the candidates ``cand`` into ``out`` (the scorer's code runs here)."""
        batch = getattr(self._component, "score_histories", None)
        if callable(batch):
            # the component's item numbers of simrec's items 0..n_items-1 (ids = indices, see to_dataset)
            nums = np.asarray(self._component.items.numbers(np.arange(train.n_items)), dtype=np.int64)
            hist = train.matrix[users].tocoo()
            h = sp.csr_array((np.ones(hist.nnz), (hist.row, nums[hist.col])), shape=(len(users), len(nums)))
            vals = np.asarray(batch(h), dtype=np.float64)[:, nums]
            ok = np.isfinite(vals) & cand
            out[ok] = vals[ok]
            return
        every = None
        if not exclude_train:
            from lenskit.data import ItemList

            every = ItemList(item_ids=np.arange(train.n_items))
        for row, u in enumerate(users):
            scored: Any = (  # an ItemList (the scorer's output)
                self._trained().run("scorer", query=int(u))
                if every is None
                else self._trained().run("scorer", query=int(u), items=every)
            )
            ids = np.asarray(scored.ids(), dtype=np.int64)
            vals = np.asarray(scored.scores(), dtype=np.float64)
            ok = np.isfinite(vals) & cand[row, ids]
            out[row, ids[ok]] = vals[ok]

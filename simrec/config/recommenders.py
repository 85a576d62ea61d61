"""Specs of the recommenders a scenario lists (``{ kind = "oracle" }``, ...).

Each spec validates itself, builds its :mod:`simrec.recommenders` object and
answers for its recommender what the rest of simrec asks
(:class:`BaseRecommenderSpec`): whether it reads the true preferences, its
problems and name, and its memory once trained. :data:`RECOMMENDERS` is the
registry (the union of the specs, by their ``kind`` tag);
:func:`recommender_problems` checks a list of them (parameters, names, kinds
a source cannot serve) and reports every problem with its key path.
"""

from __future__ import annotations

import tomllib
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

from pydantic import Field, PrivateAttr, TypeAdapter, ValidationError, field_validator, model_validator

from simrec._inputs import InputFileError, parse_toml
from simrec._validation import quote
from simrec.config.base import SafeName, ScenarioError, Strict, _fmt_loc
from simrec.config.budget import IMPLICIT_MF_WORKSPACE, Need
from simrec.config.cost import Work
from simrec.config.union import SpecUnion
from simrec.recommenders import (
    LENSKIT_SCORERS,
    LensKitRecommender,
    Oracle,
    Popular,
    ProbabilisticOracle,
    RandomRecommender,
    Recommender,
)
from simrec.recommenders.import_path import (
    IMPORT_PATH_RULE,
    ImportPathError,
    check_import_path,
    import_component,
    param_problems,
)

if TYPE_CHECKING:
    from simrec.calibration.response import ResponseProtocol

__all__ = [
    "BaseRecommenderSpec",
    "OracleSpec",
    "ProbabilisticOracleSpec",
    "PopularSpec",
    "RandomSpec",
    "LensKitSpec",
    "LensKitAlgorithm",
    "RECOMMENDERS",
    "RecommenderSpec",
    "recommender_problems",
    "parse_recommender_option",
    "reference_specs",
    "response_work",
]


class BaseRecommenderSpec(Strict):
    """A recommender's spec (a member of :data:`RECOMMENDERS`): ``kind`` is its tag (``kind: Literal["oracle"]``)."""

    kind: str
    #: Whether the recommender reads the true preferences (impossible on a real dataset: the oracles).
    needs_truth: ClassVar[bool] = False
    #: Whether the recommender is trained on the data (its scores cost :data:`~simrec.config.cost.SECONDS_PER_MODEL_SCORE`
    #: per user x item cell and its fit :data:`~simrec.config.cost.SECONDS_PER_TRAIN_PAIR` per training pair;
    #: otherwise :data:`~simrec.config.cost.SECONDS_PER_SCORE` per cell).
    trained: ClassVar[bool] = False

    def work(self, n_users: float, n_items: float, *, train_pairs: float = 0.0) -> Work:
        """Scoring and ranking ``n_users`` x ``n_items`` cells, and a trained recommender's fit to ``train_pairs``
        training pairs (:mod:`simrec.config.cost`)."""
        cells = float(n_users) * float(n_items)
        if not self.trained:
            return Work(scores=cells)
        return Work(model_scores=cells, train_pairs=float(train_pairs), model_fits=1.0, imports=1.0)

    @abstractmethod
    def build(self) -> Recommender:
        """The library recommender (:mod:`simrec.recommenders`); ValueError or TypeError for bad parameters."""

    def check(self, where: str, base: Path | None = None) -> tuple[list[str], str | None]:
        """Problems of the spec (``where``: its key path) and its name in results (None if it has problems);
        ``base``: the scenario file's folder, for specs that import user code."""
        try:
            return [], self.build().name
        except (ValueError, TypeError) as exc:
            return [f"{where}: {exc}"], None

    def memory_need(self, where: str, *, n_users: float, n_items: float, n_pairs: float) -> Need:
        """The memory of the trained recommender in ``simrec ranks`` (all stay trained until the file is
        written); Popular, Oracle and Random keep one value per item."""
        return Need(f"{where} ({self.kind}): one value per item", where, 8.0 * n_items)


class OracleSpec(BaseRecommenderSpec):
    """Recommends the user's true likes (needs the truth: simulations only).

    ``ties``: ``"random"`` (default, the thesis text) or ``"item_id"`` (the
    thesis authors' code: ascending item index, only items seen in training);
    see :class:`simrec.recommenders.Oracle`.
    """

    kind: Literal["oracle"]
    ties: Literal["random", "item_id"] = "random"
    needs_truth: ClassVar[bool] = True

    def build(self) -> Oracle:
        return Oracle(ties=self.ties)


class ProbabilisticOracleSpec(BaseRecommenderSpec):
    """Each slot a true like with probability ``p``, else a random item (thesis §3.3)."""

    kind: Literal["probabilistic_oracle"]
    p: float = Field(ge=0, le=1)
    needs_truth: ClassVar[bool] = True

    def build(self) -> ProbabilisticOracle:
        return ProbabilisticOracle(p=self.p)


class PopularSpec(BaseRecommenderSpec):
    """Most popular items first (among the user's candidates)."""

    kind: Literal["popular"]

    def build(self) -> Popular:
        return Popular()


class RandomSpec(BaseRecommenderSpec):
    """Random items. ``name`` (default ``"Random"``): two Random recommenders with their own names are a pair
    with no true difference by construction (the null of a ``[significance]`` study)."""

    kind: Literal["random"]
    name: SafeName | None = None

    def build(self) -> RandomRecommender:
        return RandomRecommender() if self.name is None else RandomRecommender(name=self.name)


#: A LensKit parameter value: a TOML scalar, or a list of scalars.
ParamValue = Union[float, int, str, bool, list[Union[float, int, str, bool]]]


# -- what a trained LensKit model keeps (``simrec ranks``'s memory budget) -------------------------------------------
def _item_knn_memory(where: str, params: dict[str, Any], n_users: float, n_items: float, n_pairs: float) -> Need:
    """LensKit's ItemKNN keeps every item-item similarity above ``min_sim`` unless ``save_nbrs`` is set (float32
    value + int32 index, plus the training matrix): 12 B x items x min(items, save_nbrs)."""
    keep = float(params.get("save_nbrs") or n_items)
    return Need(
        f"{where} (item_knn): up to {n_items:.3g} x {min(keep, n_items):.3g} item similarities",
        f"{where} params.save_nbrs",
        12.0 * n_items * min(keep, n_items) + 12.0 * n_pairs,
    )


def _item_cf_memory(where: str, params: dict[str, Any], n_users: float, n_items: float, n_pairs: float) -> Need:
    """simrec's ItemCF (Krichene & Rendle's item CF) keeps a sparse float64 similarity matrix of up to items²
    pairs, built from a co-occurrence product (with its temporaries: 24 B x items²)."""
    return Need(
        f"{where} (item_cf): up to {n_items:.3g} x {n_items:.3g} item similarities",
        where,
        24.0 * n_items * n_items + 12.0 * n_pairs,
    )


def _user_knn_memory(where: str, params: dict[str, Any], n_users: float, n_items: float, n_pairs: float) -> Need:
    """UserKNN keeps the normalised rating matrix (12 B per pair) and one row of user similarities per scored
    user."""
    return Need(f"{where} (user_knn): the normalised rating matrix", where, 12.0 * n_pairs + 8.0 * n_users)


def _implicit_mf_memory(where: str, params: dict[str, Any], n_users: float, n_items: float, n_pairs: float) -> Need:
    """ImplicitMF keeps float32 user and item factors (x4 for the solver's temporaries: 16 B per factor),
    PyTorch's workspace and the training matrix."""
    k = float(params.get("embedding_size") or params.get("features") or 50)
    return Need(
        f"{where} (implicit_mf): {k:.3g} factors for {n_users + n_items:.3g} users and items",
        f"{where} params.embedding_size",
        16.0 * k * (n_users + n_items) + 12.0 * n_pairs + IMPLICIT_MF_WORKSPACE,
    )


@dataclass(frozen=True)
class LensKitAlgorithm:
    """A LensKit algorithm a scenario names: its scorer class (a key of
    :data:`simrec.recommenders.LENSKIT_SCORERS`), whether simrec defaults its ``feedback`` to ``"implicit"``
    (as :class:`~simrec.recommenders.LensKitRecommender` does for the KNN scorers, whose LensKit default needs
    ratings), and what its trained model keeps (None: one value per item)."""

    scorer: str
    implicit_feedback: bool = False
    memory: Callable[[str, dict[str, Any], float, float, float], Need] | None = None


class LensKitSpec(BaseRecommenderSpec):
    """A LensKit scorer: by its scenario name (``algorithm``) or by import path (``scorer``), with parameters.

    Exactly one of ``algorithm`` (``item_knn``, ``user_knn``, ``implicit_mf``,
    ``popular``, ``item_cf``: Krichene & Rendle's item-based CF,
    :class:`simrec.recommenders.ItemCFScorer`) and ``scorer`` (``"package.module:Class"``, a LensKit
    ``Component`` class, nothing else: no factory; see
    :mod:`simrec.recommenders.import_path`) is given. ``params`` are the
    component's configuration (checked against its config class, without
    constructing the component: unknown keys and bad values are refused at
    validation). ``name`` defaults to the algorithm or the class name.

    A ``scorer`` module is imported from ``sys.path`` with the scenario file's
    folder appended (:func:`recommender_problems` ``base``), so a ``.py`` file
    next to the scenario imports; importing runs the module's top-level code
    (a module of the standard library is refused before import).
    """

    kind: Literal["lenskit"]
    trained: ClassVar[bool] = True
    algorithm: Literal["item_knn", "implicit_mf", "user_knn", "popular", "item_cf"] | None = None
    scorer: str | None = None
    name: SafeName | None = None
    params: dict[str, ParamValue] = Field(default_factory=dict)
    #: Folder appended to sys.path before importing ``scorer`` (the scenario file's; set by the loader).
    _base: Path | None = PrivateAttr(default=None)

    #: Scenario names of LensKit algorithms -> what simrec knows of them.
    ALGORITHMS: ClassVar[dict[str, LensKitAlgorithm]] = {
        "item_knn": LensKitAlgorithm("ItemKNNScorer", implicit_feedback=True, memory=_item_knn_memory),
        "user_knn": LensKitAlgorithm("UserKNNScorer", implicit_feedback=True, memory=_user_knn_memory),
        "implicit_mf": LensKitAlgorithm("ImplicitMFScorer", memory=_implicit_mf_memory),
        "popular": LensKitAlgorithm("PopScorer"),
        "item_cf": LensKitAlgorithm("ItemCFScorer", memory=_item_cf_memory),
    }

    @field_validator("scorer")
    @classmethod
    def _import_path(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                check_import_path(v)
            except ValueError:
                raise ValueError(IMPORT_PATH_RULE) from None
        return v

    @model_validator(mode="after")
    def _one_of(self) -> LensKitSpec:
        if (self.algorithm is None) == (self.scorer is None):
            raise ValueError(
                "give exactly one of `algorithm` (a shipped LensKit algorithm) and `scorer` "
                f"('package.module:Class'); got algorithm={quote(self.algorithm)}, scorer={quote(self.scorer)}"
            )
        return self

    @property
    def label(self) -> str:
        """The recommender's name: ``name``, else the algorithm, else the scorer's class name."""
        return self.name or self.algorithm or str(self.scorer).rpartition(":")[2]

    def component_class(self) -> type:
        """The LensKit Component class this spec names; ImportPathError if it is refused or cannot be imported."""
        if self.algorithm is not None:
            return import_component(LENSKIT_SCORERS[self.ALGORITHMS[self.algorithm].scorer])
        return import_component(str(self.scorer), self._base)

    def build(self) -> LensKitRecommender:
        params: dict[str, Any] = dict(self.params)
        return LensKitRecommender(self.component_class(), name=self.label, **params)

    def check(self, where: str, base: Path | None = None) -> tuple[list[str], str | None]:
        """Problems of the scorer and its parameters, each with its key path (e.g. ``...params.k``), checked
        against the component's config class without constructing it; ``base`` is recorded with the spec: it is
        appended to ``sys.path`` before a ``scorer``'s module is imported (here, and again wherever the spec is
        built, e.g. in a worker process)."""
        if base is not None:
            self._base = Path(base)
        try:
            cls = self.component_class()
        except ImportPathError as exc:
            return [f"{where}.scorer: {exc}"], None
        params = dict(self.params)
        if self.algorithm is not None and self.ALGORITHMS[self.algorithm].implicit_feedback:
            params.setdefault("feedback", "implicit")  # as LensKitRecommender does
        problems = [f"{where}.params{'.' + key if key else ''}: {msg}" for key, msg in param_problems(cls, params)]
        return problems, None if problems else self.label

    def memory_need(self, where: str, *, n_users: float, n_items: float, n_pairs: float) -> Need:
        """What the trained model keeps: the algorithm's estimate (:class:`LensKitAlgorithm`); a scorer by import
        path is counted as the training matrix only (simrec cannot know what it keeps); one value per item
        otherwise (``popular``)."""
        algorithm = self.ALGORITHMS[self.algorithm] if self.algorithm is not None else None
        if algorithm is not None and algorithm.memory is not None:
            return algorithm.memory(where, dict(self.params), n_users, n_items, n_pairs)
        if self.scorer is not None:
            return Need(
                f"{where} ({self.scorer}): the training matrix (what the scorer itself keeps is not known)",
                where,
                12.0 * n_pairs,
            )
        return Need(f"{where} ({self.label}): one value per item", where, 8.0 * n_items)


#: The recommenders a scenario may list, by their ``kind`` tag: the registry (a new one: a spec subclassing
#: :class:`BaseRecommenderSpec`, added here).
RECOMMENDERS: SpecUnion[BaseRecommenderSpec] = SpecUnion(
    "kind", OracleSpec, ProbabilisticOracleSpec, PopularSpec, RandomSpec, LensKitSpec
)
#: A recommender's table (the type of a field holding one).
RecommenderSpec = Annotated[BaseRecommenderSpec, RECOMMENDERS]


def recommender_problems(
    specs: list[BaseRecommenderSpec], where: str, *, truth: bool = True, base: Path | None = None
) -> list[str]:
    """Bad recommender parameters or scorers, repeated names, and (``truth=False``) oracles without a truth.

    ``where`` prefixes each message with the list's key path (e.g. ``evaluation.recommenders``).
    ``base`` (the scenario file's folder) is handed to each spec's
    :meth:`~BaseRecommenderSpec.check` (a LensKit spec with a ``scorer``
    imports its module from there).
    """
    problems: list[str] = []
    names: list[str] = []
    for j, r in enumerate(specs):
        if not truth and r.needs_truth:
            problems.append(
                f"{where}[{j}]: {r.kind} needs the true preferences; a dataset source has none "
                "(use a simulation source)"
            )
            continue
        more, name = r.check(f"{where}[{j}]", base)
        problems += more
        if name is not None:
            names.append(name)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        problems.append(f"{where}: recommender names must be unique; repeated: {', '.join(dup)}")
    return problems


def parse_recommender_option(value: str, option: str = "--recommender") -> RecommenderSpec:
    """A recommender named on the command line (``simrec ranks -r ...``).

    ``value`` is a TOML inline table with a scenario's recommender keys
    (``'{ kind = "lenskit", scorer = "my_scorers:ShrunkPopScorer", params = { shrinkage = 5.0 } }'``),
    or a shorthand: a shipped LensKit algorithm (``item_knn``, ``user_knn``, ``item_cf``,
    ``implicit_mf``, ``popular``: LensKit's scorer at its defaults) or a
    ``package.module:Class`` import path (no parameters).

    Raises
    ------
    ScenarioError
        Not TOML, or keys the schema refuses; the message names ``option``
        and the value.
    """
    text = value.strip()
    if text.startswith("{"):
        try:
            raw = parse_toml(f"r = {text}", option)["r"]
        except InputFileError as exc:
            raise ScenarioError(str(exc)) from None
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(f"{option}: not a TOML inline table ({exc}); got {quote(value)}") from None
    elif text in LensKitSpec.ALGORITHMS:
        raw = {"kind": "lenskit", "algorithm": text}
    elif ":" in text:
        raw = {"kind": "lenskit", "scorer": text}
    else:
        raise ScenarioError(
            f"{option}: must be a LensKit algorithm ({', '.join(LensKitSpec.ALGORITHMS)}), a "
            f"'package.module:Class' import path or a TOML inline table "
            f"'{{ kind = \"lenskit\", ... }}'; got {quote(value)}"
        )
    try:
        return TypeAdapter(RecommenderSpec).validate_python(raw)
    except ValidationError as exc:
        lines = []
        for e in exc.errors():
            msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"].removeprefix("Value error, ")
            got = (
                ""
                if e["type"] in ("extra_forbidden", "missing") or isinstance(e.get("input"), dict)
                else f"; got {quote(e.get('input'))}"
            )
            lines.append(f"{option} {quote(value)}: {_fmt_loc(tuple(e['loc']))}: {msg}{got}")
        raise ScenarioError("\n".join(lines)) from None


def reference_specs(algorithms: Sequence[str]) -> list[BaseRecommenderSpec]:
    """The specs of the algorithm-response protocol's reference algorithms, by name (their tables are
    :data:`simrec.calibration.response.REFERENCE_TABLES`): what the memory check and the time estimate of
    ``simrec sim-to-real`` and of a response calibration count."""
    from simrec.calibration.response import REFERENCE_TABLES

    adapter: TypeAdapter[BaseRecommenderSpec] = TypeAdapter(RecommenderSpec)
    return [adapter.validate_python(REFERENCE_TABLES[a]) for a in algorithms]


def response_work(protocol: ResponseProtocol, n_users: float, n_items: float, n_pairs: float) -> Work:
    """One algorithm response (:func:`simrec.calibration.response.algorithm_response`) on data of ``n_users`` x
    ``n_items`` with ``n_pairs`` observed pairs (:mod:`simrec.config.cost`): each reference algorithm of
    ``protocol`` fitted to the pairs outside its holdout and scoring up to ``protocol.max_users`` users."""
    evaluated = n_users if protocol.max_users is None else min(n_users, float(protocol.max_users))
    train = (1.0 - protocol.test_fraction) * n_pairs
    return Work.total(s.work(evaluated, n_items, train_pairs=train) for s in reference_specs(protocol.algorithms))

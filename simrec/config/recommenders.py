"""Specs of the recommenders a scenario lists (``{ kind = "oracle" }``, ...).

Each spec validates itself and builds its :mod:`simrec.recommenders` object;
:func:`recommender_problems` checks a list of them (parameters, names, kinds a
source cannot serve) and reports every problem with its key path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, PrivateAttr, field_validator, model_validator

from simrec._validation import quote
from simrec.config.base import SafeName, Strict

__all__ = [
    "OracleSpec",
    "ProbabilisticOracleSpec",
    "PopularSpec",
    "RandomSpec",
    "LensKitSpec",
    "RecommenderSpec",
    "TRUTH_KINDS",
    "recommender_problems",
    "parse_recommender_option",
]


class OracleSpec(Strict):
    """Recommends the user's true likes (needs the truth: simulations only).

    ``ties``: ``"random"`` (default, the thesis text) or ``"item_id"`` (the
    thesis authors' code: ascending item index, only items seen in training);
    see :class:`simrec.recommenders.Oracle`.
    """

    kind: Literal["oracle"]
    ties: Literal["random", "item_id"] = "random"

    def build(self):
        from simrec.recommenders import Oracle

        return Oracle(ties=self.ties)


class ProbabilisticOracleSpec(Strict):
    """Each slot a true like with probability ``p``, else a random item (thesis §3.3)."""

    kind: Literal["probabilistic_oracle"]
    p: float = Field(ge=0, le=1)

    def build(self):
        from simrec.recommenders import ProbabilisticOracle

        return ProbabilisticOracle(p=self.p)


class PopularSpec(Strict):
    kind: Literal["popular"]

    def build(self):
        from simrec.recommenders import Popular

        return Popular()


class RandomSpec(Strict):
    kind: Literal["random"]

    def build(self):
        from simrec.recommenders import RandomRecommender

        return RandomRecommender()


#: A LensKit parameter value: a TOML scalar, or a list of scalars.
ParamValue = Union[float, int, str, bool, list[Union[float, int, str, bool]]]


class LensKitSpec(Strict):
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
    algorithm: Literal["item_knn", "implicit_mf", "user_knn", "popular", "item_cf"] | None = None
    scorer: str | None = None
    name: SafeName | None = None
    params: dict[str, ParamValue] = Field(default_factory=dict)
    #: Folder appended to sys.path before importing ``scorer`` (the scenario file's; set by the loader).
    _base: Path | None = PrivateAttr(default=None)

    #: Scenario names of LensKit algorithms -> LensKit scorer classes.
    ALGORITHMS: ClassVar[dict[str, str]] = {
        "item_knn": "ItemKNNScorer",
        "user_knn": "UserKNNScorer",
        "implicit_mf": "ImplicitMFScorer",
        "popular": "PopScorer",
        "item_cf": "ItemCFScorer",
    }

    @field_validator("scorer")
    @classmethod
    def _import_path(cls, v: str | None) -> str | None:
        if v is not None:
            from simrec.recommenders.import_path import IMPORT_PATH_RULE, check_import_path

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
        from simrec.recommenders import LENSKIT_SCORERS
        from simrec.recommenders.import_path import import_component

        if self.algorithm is not None:
            return import_component(LENSKIT_SCORERS[self.ALGORITHMS[self.algorithm]])
        return import_component(str(self.scorer), self._base)

    def build(self):
        from simrec.recommenders import LensKitRecommender

        return LensKitRecommender(self.component_class(), name=self.label, **dict(self.params))


def _lenskit_problems(spec: LensKitSpec, where: str) -> list[str]:
    """Problems of a LensKit spec's scorer and parameters, each with its key path (e.g. ``...params.k``)."""
    from simrec.recommenders.import_path import ImportPathError, param_problems

    try:
        cls = spec.component_class()
    except ImportPathError as exc:
        return [f"{where}.scorer: {exc}"]
    params = dict(spec.params)
    if spec.algorithm in ("item_knn", "user_knn"):
        params.setdefault("feedback", "implicit")  # as LensKitRecommender does
    return [f"{where}.params{'.' + key if key else ''}: {msg}" for key, msg in param_problems(cls, params)]


RecommenderSpec = Annotated[
    Union[OracleSpec, ProbabilisticOracleSpec, PopularSpec, RandomSpec, LensKitSpec],
    Field(discriminator="kind"),
]

#: Kinds that read the true preferences (impossible on a real dataset).
TRUTH_KINDS: tuple[str, ...] = ("oracle", "probabilistic_oracle")


def recommender_problems(specs: list, where: str, *, truth: bool = True, base: Path | None = None) -> list[str]:
    """Bad recommender parameters or scorers, repeated names, and (``truth=False``) oracles without a truth.

    ``where`` prefixes each message with the list's key path (e.g. ``evaluation.recommenders``).
    ``base`` (the scenario file's folder) is recorded in every LensKit spec
    with a ``scorer``: it is appended to ``sys.path`` before the scorer's
    module is imported (here, and again wherever the spec is built, e.g. in a
    worker process).
    """
    problems, names = [], []
    for j, r in enumerate(specs):
        if not truth and r.kind in TRUTH_KINDS:
            problems.append(
                f"{where}[{j}]: {r.kind} needs the true preferences; a dataset source has none "
                "(use a simulation source)"
            )
            continue
        if isinstance(r, LensKitSpec):
            if base is not None:
                r._base = Path(base)
            more = _lenskit_problems(r, f"{where}[{j}]")
            problems += more
            if not more:
                names.append(r.label)
            continue
        try:
            names.append(r.build().name)
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}[{j}]: {exc}")
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
    import tomllib

    from pydantic import TypeAdapter, ValidationError

    from simrec._inputs import InputFileError, parse_toml
    from simrec.config.base import ScenarioError, _fmt_loc

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

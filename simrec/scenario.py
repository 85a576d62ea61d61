"""Scenario files: schema (pydantic), loader (TOML) and the typed objects they build.

A scenario is the one place where configuration is untyped: :func:`load_scenario`
parses a TOML file, validates it completely (schema, then the parameter rules of
every model it names), and returns a :class:`Scenario` whose ``build_*`` methods
give the typed library objects (preference models, observation models,
recommenders, metric names). Library functions never see a config dict.

Every problem is reported as a :class:`ScenarioError` whose message names the
file, the key path (e.g. ``world[2].preference.sigma``), the rule and the value
received; several problems are reported together. Nothing runs before a
scenario has been fully validated.

A scenario argument that is not an existing path names a scenario shipped in
the package (``simrec/scenarios/NAME.toml``), so ``simrec run quickstart`` works
after a plain ``pip install``.

Example
-------
.. code-block:: toml

    name = "demo"
    seed = 42
    replicates = 3

    [population]
    n_users = 943
    n_items = 1682

    [[world]]
    name = "ibp-pop"
    preference = { model = "ibp", alpha = 60.0, c = 5.0, sigma = 0.6 }
    observation = { sampler = "popularity", profile = { model = "pareto", m_low = 20, alpha = 1.0, m_high = 700 } }

    [evaluation]
    n = 50
    test_fraction = 0.2
    metrics = ["precision", "recall", "ndcg", "reciprocal_rank"]
    recommenders = [{ kind = "oracle" }, { kind = "popular" }, { kind = "random" }]
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .experiment import METRIC_NAMES as _EXPERIMENT_METRICS

__all__ = [
    "ScenarioError",
    "Scenario",
    "WorldSpec",
    "EvaluationSpec",
    "load_scenario",
    "resolve_scenario_path",
    "shipped_scenarios",
    "scenario_kind",
    "load_preset",
    "METRIC_NAMES",
]

#: Metric names a scenario may list (:data:`simrec.experiment.METRIC_NAMES`);
#: ``auc`` and ``pap_at_k`` need full rankings (scores over all candidates).
METRIC_NAMES: tuple[str, ...] = _EXPERIMENT_METRICS


_PACKAGE_DIR = Path(__file__).resolve().parent


class ScenarioError(ValueError):
    """A scenario file is malformed; the message lists every problem found."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def no_repeats(model: BaseModel, *keys: str) -> None:
    """Raise ValueError if a list field of ``model`` names a value twice (for model validators)."""
    for key in keys:
        vals = list(getattr(model, key))
        if len(set(vals)) != len(vals):
            dup = sorted({str(v) for v in vals if vals.count(v) > 1})
            raise ValueError(f"`{key}` lists {', '.join(dup)} twice; got {vals}")


# -- preference models -------------------------------------------------------
class UniformSpec(_Strict):
    model: Literal["uniform"]
    lam: float = Field(gt=0, description="mean number of true likes per user")
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")


class IBPSpec(_Strict):
    model: Literal["ibp"]
    alpha: float = Field(gt=0)
    c: float
    sigma: float = Field(ge=0, lt=1)


class LDASpec(_Strict):
    model: Literal["lda"]
    n_topics: int = Field(ge=1)
    lam: float = Field(gt=0)
    a: float = Field(gt=0)
    b: float = Field(gt=0)
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")


PreferenceSpec = Annotated[Union[UniformSpec, IBPSpec, LDASpec], Field(discriminator="model")]


# -- observation ---------------------------------------------------------------
class ParetoSpec(_Strict):
    model: Literal["pareto"]
    m_low: float = Field(gt=0)
    alpha: float = Field(gt=0)
    m_high: float = Field(gt=0)
    redraw: bool = False


class BetaBinomialSpec(_Strict):
    model: Literal["beta_binomial"]
    a: float = Field(gt=0)
    b: float = Field(gt=0)
    n_max: int = Field(ge=1)


ProfileSpec = Annotated[Union[ParetoSpec, BetaBinomialSpec], Field(discriminator="model")]


class ObservationSpec(_Strict):
    sampler: Literal["uniform", "popularity"]
    profile: ProfileSpec


class WorldSpec(_Strict):
    """One preference x observation model (a cell of the thesis's design).

    Either ``preset`` (a calibrated cell, e.g. ``"ml-100k/ibp-pop"``) or both
    ``preference`` and ``observation``; explicit tables override the preset's.
    """

    name: str | None = None
    preset: str | None = None
    preference: PreferenceSpec | None = None
    observation: ObservationSpec | None = None

    @model_validator(mode="after")
    def _complete(self) -> WorldSpec:
        if self.preset is None and (self.preference is None or self.observation is None):
            raise ValueError("a world needs `preset`, or both `preference` and `observation`")
        return self


# -- evaluation ----------------------------------------------------------------
class OracleSpec(_Strict):
    kind: Literal["oracle"]


class ProbabilisticOracleSpec(_Strict):
    kind: Literal["probabilistic_oracle"]
    p: float = Field(ge=0, le=1)


class PopularSpec(_Strict):
    kind: Literal["popular"]


class RandomSpec(_Strict):
    kind: Literal["random"]


class LensKitSpec(_Strict):
    kind: Literal["lenskit"]
    algorithm: Literal["item_knn", "implicit_mf", "user_knn", "popular"]
    name: str | None = None
    params: dict[str, float | int | str | bool] = Field(default_factory=dict)


RecommenderSpec = Annotated[
    Union[OracleSpec, ProbabilisticOracleSpec, PopularSpec, RandomSpec, LensKitSpec],
    Field(discriminator="kind"),
]


class EvaluationSpec(_Strict):
    n: int = Field(default=50, ge=1, description="recommendation list length N")
    test_fraction: float = Field(default=0.2, gt=0, lt=1)
    metrics: list[Literal[METRIC_NAMES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["precision", "recall", "ndcg", "reciprocal_rank"], min_length=1
    )
    pap_k: int = Field(default=10, ge=1, description="k of pAp@k")
    recommenders: list[RecommenderSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> EvaluationSpec:
        no_repeats(self, "metrics")
        return self


class PopulationSpec(_Strict):
    n_users: int = Field(ge=1)
    n_items: int = Field(ge=1)


class Scenario(_Strict):
    """A validated scenario (the parsed TOML)."""

    kind: Literal["run"] = "run"
    name: str
    description: str = ""
    seed: int = Field(ge=0)
    replicates: int = Field(ge=1)
    population: PopulationSpec
    world: list[WorldSpec] = Field(min_length=1)
    evaluation: EvaluationSpec

    # -- derived -----------------------------------------------------------
    def world_names(self) -> list[str]:
        return [_world_name(w) for w in self.world]

    def digest(self) -> str:
        """Stable hash of the scenario's content (resume refuses a different one)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _world_name(w: WorldSpec) -> str:
    if w.name:
        return w.name
    if w.preset:
        return w.preset.split("/")[-1]
    return f"{w.preference.model}-{'pop' if w.observation.sampler == 'popularity' else 'unif'}"  # type: ignore[union-attr]


# -- loading -------------------------------------------------------------------
def scenario_kind(path: str | Path) -> str | None:
    """The top-level ``kind`` of a scenario file: ``"run"`` (the default) or
    ``"stress"``; None when the file cannot be read as TOML."""
    try:
        with open(path, "rb") as fh:
            return str(tomllib.load(fh).get("kind", "run"))
    except (OSError, tomllib.TOMLDecodeError):
        return None


def shipped_scenarios(kind: str | None = None) -> dict[str, Path]:
    """Scenarios shipped inside the package, by name (only those of ``kind`` when given)."""
    root = _PACKAGE_DIR / "scenarios"
    files = sorted(root.glob("*.toml")) if root.is_dir() else []
    return {p.stem: p for p in files if kind is None or scenario_kind(p) == kind}


def resolve_scenario_path(scenario: str | Path, kind: str | None = None) -> Path:
    """An existing path as is; otherwise the shipped scenario of that name (and ``kind``)."""
    p = Path(scenario)
    if p.exists():
        return p
    shipped = shipped_scenarios(kind)
    name = p.stem if p.suffix == ".toml" and len(p.parts) == 1 else str(scenario)
    if name in shipped:
        return shipped[name]
    what = "shipped scenario" if kind is None else f"shipped {kind} scenario"
    raise ScenarioError(
        f"{scenario}: no such file, and no {what} of that name (shipped: {', '.join(sorted(shipped)) or 'none'})"
    )


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables; ScenarioError naming the file if it is missing, unreadable or not TOML."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None


def _presets_root() -> Path:
    return _PACKAGE_DIR / "presets"


def load_preset(name: str) -> dict[str, Any]:
    """The TOML tables of a calibrated preset shipped with the package.

    ``name`` is ``"<dataset>/<cell>"``, e.g. ``"ml-100k/ibp-pop"``; the file is
    ``simrec/presets/<dataset>/<cell>.toml`` with ``preference`` and
    ``observation`` tables (and the reference's ``n_users``/``n_items``).
    """
    root = _presets_root()
    path = root.joinpath(*name.split("/")).with_suffix(".toml") if "/" in name else None
    if path is None or not path.is_file():
        available = sorted(f"{f.parent.name}/{f.stem}" for f in root.glob("*/*.toml")) if root.is_dir() else []
        raise KeyError(f"unknown preset {name!r}; available: {', '.join(available) or 'none'}")
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in {"uniform", "ibp", "lda", "pareto", "beta_binomial", "oracle", "probabilistic_oracle",
                      "popular", "random", "lenskit"}:
            continue  # discriminator tags pydantic inserts into the path
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _format_validation(path: Path, err: ValidationError) -> str:
    lines = [f"{path}: invalid scenario ({err.error_count()} problem{'s' if err.error_count() > 1 else ''}):"]
    for e in err.errors():
        loc = _fmt_loc(tuple(e["loc"]))
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key is missing"
        got = "" if e["type"] == "missing" else f"; got {e.get('input')!r}"
        if e["type"] == "extra_forbidden" or isinstance(e.get("input"), dict):
            got = ""
        lines.append(f"  {loc}: {msg}{got}")
    return "\n".join(lines)


def _merge_preset(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """Fill worlds that name a preset with the preset's tables (explicit keys win)."""
    worlds = raw.get("world")
    if not isinstance(worlds, list):
        return raw
    merged = []
    for i, w in enumerate(worlds):
        if isinstance(w, dict) and isinstance(w.get("preset"), str):
            try:
                preset = load_preset(w["preset"])
            except KeyError as exc:
                raise ScenarioError(f"{path}: world[{i}].preset: {exc.args[0]}") from None
            w = {**w}
            for key in ("preference", "observation"):
                if key not in w and key in preset:
                    w[key] = preset[key]
        merged.append(w)
    return {**raw, "world": merged}


def load_scenario(scenario: str | Path) -> tuple[Scenario, Path]:
    """Read, validate and return a scenario and the file it came from.

    Raises
    ------
    ScenarioError
        Unreadable TOML, unknown keys, wrong types, impossible values, unknown
        presets, or model parameters that break a model's rules; the message
        names the file and every offending key.
    """
    path = resolve_scenario_path(scenario, kind="run")
    raw = read_toml(path)
    if raw.get("kind") == "stress":
        raise ScenarioError(f"{path}: a stress scenario (kind = \"stress\"); run it with `simrec stress {path}`")
    raw = _merge_preset(raw, path)
    try:
        sc = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(_format_validation(path, exc)) from None
    problems = _semantic_problems(sc)
    if problems:
        raise ScenarioError(
            f"{path}: invalid scenario ({len(problems)} problem{'s' if len(problems) > 1 else ''}):\n"
            + "\n".join(f"  {p}" for p in problems)
        )
    return sc, path


def world_problems(world: WorldSpec, population: PopulationSpec, where: str) -> list[str]:
    """Rules of a world that need more than one key: build its models once.

    ``where`` prefixes each message with the world's key path (e.g. ``world[2]``).
    """
    from .build import build_observation, build_preference

    problems = []
    for key, build in (("preference", lambda: build_preference(world, population)),
                       ("observation", lambda: build_observation(world))):
        try:
            build()
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}.{key}: {exc}")
    return problems


def recommender_problems(specs: list, where: str, forbidden: dict[str, str] | None = None) -> list[str]:
    """Bad recommender parameters, kinds ``forbidden`` here (kind -> reason) and repeated names."""
    from .build import build_recommender

    problems, names = [], []
    for j, r in enumerate(specs):
        if forbidden and r.kind in forbidden:
            problems.append(f"{where}[{j}]: {forbidden[r.kind]}")
            continue
        try:
            names.append(build_recommender(r).name)
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}[{j}]: {exc}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        problems.append(f"{where}: recommender names must be unique; repeated: {', '.join(dup)}")
    return problems


def _semantic_problems(sc: Scenario) -> list[str]:
    """Rules that need more than one key: build every typed object once."""
    problems: list[str] = []
    names = sc.world_names()
    for i, name in enumerate(names):
        if names.count(name) > 1:
            problems.append(f"world[{i}].name: world names must be unique; {name!r} repeats")
    for i, w in enumerate(sc.world):
        problems += world_problems(w, sc.population, f"world[{i}]")
    problems += recommender_problems(sc.evaluation.recommenders, "evaluation.recommenders")
    return problems

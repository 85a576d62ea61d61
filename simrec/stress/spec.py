"""Stress scenarios (TOML, ``kind = "stress"``): schema, loader, validation before any work.

A stress scenario names one source of global ranks, the sampling schemes and
sizes, the estimators and the metrics; :func:`load_stress_scenario` validates
all of it (schema, then every model and recommender it names, then the data
it needs) and reports every problem with its key path, in the format of
:mod:`simrec.scenario` (it reuses its pieces: :class:`~simrec.scenario.WorldSpec`,
``RecommenderSpec``, ``PopulationSpec``, :class:`~simrec.scenario.ScenarioError`).

Example (``scenarios/sampled-ml100k.toml``):

.. code-block:: toml

    kind = "stress"
    name = "sampled-ml100k"
    seed = 2020
    repeats = 100

    [source]
    type = "dataset"                       # or "simulation", "file"
    name = "ml-100k"
    path = "../../../shared/data/ml-100k"  # relative to this file; $SIMREC_DATA/ml-100k first
    recommenders = [{ kind = "popular" }, { kind = "lenskit", algorithm = "item_knn", name = "ItemKNN" }]

    [sampling]
    schemes = ["binomial", "hypergeometric", "popularity", "adaptive"]
    sizes = [100, 500]

Relative paths (dataset folders, ranks files) are resolved against the folder
of the scenario file *after following symlinks* (so ``scenarios/x.toml ->
../simrec/scenarios/x.toml`` resolves against ``simrec/scenarios/``). For a
dataset, ``$SIMREC_DATA/<name>`` is tried first.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from simrec.scenario import (
    PopulationSpec,
    RecommenderSpec,
    ScenarioError,
    WorldSpec,
    _format_validation,
    _merge_preset,
    no_repeats,
    read_toml,
    recommender_problems,
    world_problems,
    resolve_scenario_path,
    scenario_kind,
    shipped_scenarios,
)
from simrec.stress.harness import ESTIMATORS, METRIC_FAMILIES, SCHEMES, StressConfig

__all__ = [
    "StressScenario",
    "SimulationSource",
    "DatasetSource",
    "FileSource",
    "load_stress_scenario",
    "resolve_stress_scenario_path",
    "shipped_stress_scenarios",
    "is_stress_scenario",
]



class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SimulationSource(_Strict):
    """Truth from a world (preference × observation), leave-one-out, recommenders over all candidates."""

    type: Literal["simulation"]
    population: PopulationSpec
    world: WorldSpec
    min_items: int = Field(default=2, ge=1, description="users with fewer observed items are not evaluated")
    recommenders: list[RecommenderSpec] = Field(min_length=1)


class DatasetSource(_Strict):
    """A reference dataset (e.g. ML-100K), leave-one-out, recommenders over all candidates."""

    type: Literal["dataset"]
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    path: str
    format: Literal["movielens", "amazon", "steam", "pairs"] | None = None
    min_rating: float | None = None
    k_core: int | None = Field(default=None, ge=1)
    min_items: int = Field(default=2, ge=1)
    recommenders: list[RecommenderSpec] = Field(min_length=1)


class FileSource(_Strict):
    """A ranks file (CSV/Parquet: user, recommender, rank, n_candidates[, popularity_share])."""

    type: Literal["file"]
    path: str


SourceSpec = Annotated[Union[SimulationSource, DatasetSource, FileSource], Field(discriminator="type")]


class SamplingSpec(_Strict):
    schemes: list[Literal[SCHEMES]] = Field(default_factory=lambda: list(SCHEMES), min_length=1)  # type: ignore[valid-type]
    sizes: list[Annotated[int, Field(ge=2)]] = Field(default_factory=lambda: [100], min_length=1)
    adaptive_n_max: int = Field(default=3200, ge=2)

    @model_validator(mode="after")
    def _unique(self) -> SamplingSpec:
        no_repeats(self, "schemes", "sizes")
        return self


class EstimatorsSpec(_Strict):
    names: list[Literal[ESTIMATORS]] = Field(default_factory=lambda: list(ESTIMATORS), min_length=1)  # type: ignore[valid-type]
    bv_gammas: list[Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=lambda: [1.0, 0.1, 0.01, 0.001])
    wmle_scale: float = Field(default=10.0, gt=0)
    mes_eta: float = Field(default=0.001, gt=0)
    max_iter: int = Field(default=300, ge=1)

    @model_validator(mode="after")
    def _unique(self) -> EstimatorsSpec:
        no_repeats(self, "names")
        return self


class MetricsSpec(_Strict):
    names: list[Literal[tuple(METRIC_FAMILIES)]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(METRIC_FAMILIES), min_length=1)
    k_max: int = Field(default=50, ge=1)
    curve_k: int = Field(default=10, ge=1, description="cutoff of the expected-metric-vs-n curve")
    curve_sizes: list[Annotated[int, Field(ge=2)]] = Field(
        default_factory=lambda: [10, 20, 50, 100, 200, 500, 1000], min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> MetricsSpec:
        no_repeats(self, "names")
        return self


class StressScenario(_Strict):
    """A validated stress scenario (the parsed TOML)."""

    kind: Literal["stress"]
    name: str
    description: str = ""
    seed: int = Field(ge=0)
    repeats: int = Field(default=100, ge=1)
    source: SourceSpec
    sampling: SamplingSpec = Field(default_factory=SamplingSpec)
    estimators: EstimatorsSpec = Field(default_factory=EstimatorsSpec)
    metrics: MetricsSpec = Field(default_factory=MetricsSpec)

    def digest(self) -> str:
        """Stable hash of the content (resume refuses a folder holding another scenario's results)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def config(self) -> StressConfig:
        """The harness configuration."""
        e, m = self.estimators, self.metrics
        return StressConfig(
            repeats=self.repeats, metrics=tuple(m.names), k_max=m.k_max, estimators=tuple(e.names),
            bv_gammas=tuple(e.bv_gammas), wmle_scale=e.wmle_scale, mes_eta=e.mes_eta, max_iter=e.max_iter,
            adaptive_n_max=self.sampling.adaptive_n_max,
        )

    def data_path(self, scenario_path: str | Path) -> Path | None:
        """Where the source's data is: dataset folder/file or ranks file (None for simulations)."""
        src = self.source
        if isinstance(src, SimulationSource):
            return None
        if isinstance(src, DatasetSource):
            env = os.environ.get("SIMREC_DATA")
            if env and (Path(env) / src.name).exists():
                return Path(env) / src.name
        p = Path(src.path).expanduser()
        return p if p.is_absolute() else (Path(scenario_path).resolve().parent / p).resolve()


# -- loading -------------------------------------------------------------------
def is_stress_scenario(path: str | Path) -> bool:
    """Whether a TOML file declares ``kind = "stress"`` (False if unreadable)."""
    return scenario_kind(path) == "stress"


def shipped_stress_scenarios() -> dict[str, Path]:
    """Stress scenarios shipped inside the package, by name."""
    return shipped_scenarios(kind="stress")


def resolve_stress_scenario_path(scenario: str | Path) -> Path:
    """An existing path as is; otherwise the shipped stress scenario of that name."""
    return resolve_scenario_path(scenario, kind="stress")


_TAGS = re.compile(r"source\.(simulation|dataset|file)(?=[.:\[])")


def load_stress_scenario(scenario: str | Path, *, check_data: bool = True) -> tuple[StressScenario, Path]:
    """Read and validate a stress scenario; return it and its file.

    Parameters
    ----------
    scenario : str or Path
        A TOML file, or the name of a shipped stress scenario
        (e.g. ``"sampled-ml100k"``).
    check_data : bool, default True
        Also check that the source's data exists and, for a ranks file, read
        and validate it (rows, columns, the popularity share the
        ``popularity`` scheme needs, sizes against the candidate sets).
        False validates the file alone (e.g. a shipped scenario on a machine
        without the dataset).

    Raises
    ------
    ScenarioError
        Not a stress scenario, unreadable TOML, unknown keys, wrong types,
        impossible values, models or recommenders that break their rules,
        missing data; the message names the file and every offending key.
    """

    path = resolve_stress_scenario_path(scenario)
    raw = read_toml(path)
    if raw.get("kind") != "stress":
        raise ScenarioError(f"{path}: not a stress scenario (needs the top-level key kind = \"stress\"; "
                            f"got {raw.get('kind')!r}); run it with `simrec run`")
    src = raw.get("source")
    if isinstance(src, dict) and isinstance(src.get("world"), dict):
        merged = _merge_preset({"world": [src["world"]]}, path)
        raw = {**raw, "source": {**src, "world": merged["world"][0]}}
    try:
        sc = StressScenario.model_validate(raw)
    except ValidationError as exc:
        msg = _format_validation(path, exc).replace("invalid scenario", "invalid stress scenario")
        raise ScenarioError(_TAGS.sub("source", msg)) from None

    problems: list[str] = []
    src = sc.source
    if isinstance(src, SimulationSource):
        problems += world_problems(src.world, src.population, "source.world")
    if not isinstance(src, FileSource):
        forbidden = None
        if isinstance(src, DatasetSource):
            forbidden = {kind: f"{kind} needs the true preferences; a dataset source has none (use a simulation source)"
                         for kind in ("oracle", "probabilistic_oracle")}
        problems += recommender_problems(src.recommenders, "source.recommenders", forbidden)
    if sc.metrics.curve_k > sc.metrics.k_max:
        problems.append(f"metrics.curve_k: must be <= metrics.k_max ({sc.metrics.k_max}); got {sc.metrics.curve_k}")
    if "adaptive" in sc.sampling.schemes and min(sc.sampling.sizes) > sc.sampling.adaptive_n_max:
        problems.append(f"sampling.adaptive_n_max: must be >= the smallest size ({min(sc.sampling.sizes)}); "
                        f"got {sc.sampling.adaptive_n_max}")
    if isinstance(src, SimulationSource):
        _check_sizes(problems, sc, src.population.n_items, "population.n_items")
    if check_data and not problems:
        problems += _data_problems(sc, path)
    if problems:
        raise ScenarioError(
            f"{path}: invalid stress scenario ({len(problems)} problem{'s' if len(problems) > 1 else ''}):\n"
            + "\n".join(f"  {p}" for p in problems)
        )
    return sc, path


def _check_sizes(problems: list[str], sc: StressScenario, n_items: int, what: str) -> None:
    big = [n for n in sc.sampling.sizes if n > n_items]
    if big:
        problems.append(f"sampling.sizes: must be <= the number of items ({what} = {n_items}); got {big}")
    if sc.metrics.k_max > n_items:
        problems.append(f"metrics.k_max: must be <= the number of items ({what} = {n_items}); got {sc.metrics.k_max}")


def _data_problems(sc: StressScenario, path: Path) -> list[str]:
    src = sc.source
    data = sc.data_path(path)
    if data is None:
        return []
    if isinstance(src, DatasetSource):
        if not data.exists():
            return [f"source.path: dataset {src.name!r} not found at {data}. Download it (e.g. MovieLens 100K from "
                    f"https://grouplens.org/datasets/movielens/100k/), then set SIMREC_DATA to the folder holding "
                    f"{src.name}/ or edit source.path (relative to {path.resolve().parent})"]
        return []
    from simrec.stress.sources import RanksFileError, read_ranks_file

    if not data.exists():
        return [f"source.path: ranks file not found at {data}"]
    try:
        source = read_ranks_file(data)
    except RanksFileError as exc:
        return [f"source.path: {exc}"]
    problems: list[str] = []
    if "popularity" in sc.sampling.schemes:
        lacking = [r.name for r in source.recommenders if r.popularity_shares is None]
        if lacking:
            problems.append("sampling.schemes: 'popularity' needs the ranks file's optional `popularity_share` column; "
                            f"{data} has none")
    smallest = min(int(r.n_candidates.min()) for r in source.recommenders)
    n_est = min(int(round(r.n_candidates.mean())) for r in source.recommenders)
    _check_sizes(problems, sc, n_est, "mean n_candidates")
    if "hypergeometric" in sc.sampling.schemes and max(sc.sampling.sizes) > smallest:
        problems.append(f"sampling.sizes: sampling without replacement ('hypergeometric') needs every size <= the "
                        f"smallest n_candidates ({smallest}); got {max(sc.sampling.sizes)}")
    return problems

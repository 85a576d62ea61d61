"""Stress scenarios (``simrec stress``, TOML with ``kind = "stress"``): schema and loader.

A stress scenario names one source of global ranks (a simulated world, a
reference dataset or a user's ranks file), the sampling schemes and sizes, the
estimators and the metrics; :func:`load_stress_scenario` validates all of it
(schema, then every model and recommender it names, then the data it needs)
and reports every problem with its key path.

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

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Union

from pydantic import Field, ValidationError, field_validator, model_validator

from simrec._validation import quote
from simrec.config.base import SafeName, ScenarioError, Strict, format_validation, no_repeats, problems_error, read_toml
from simrec.config.budget import Budget, stress_needs
from simrec.config.datasets import DatasetSpec
from simrec.config.estimators import EstimatorsSpec
from simrec.config.files import merge_presets, resolve_scenario_path
from simrec.config.models import PopulationSpec, WorldSpec
from simrec.config.recommenders import RecommenderSpec, recommender_problems
from simrec.config.run import content_digest, world_problems
from simrec.stress.harness import METRIC_FAMILIES, METRIC_NAMES, SCHEMES, StressConfig
from simrec.stress.user_sampling import UserSamplingConfig

if TYPE_CHECKING:
    from simrec.stress.sources import RankSource

__all__ = [
    "StressScenario",
    "SimulationSource",
    "DatasetSource",
    "FileSource",
    "SamplingSpec",
    "MetricsSpec",
    "UserSamplingSpec",
    "load_stress_scenario",
]


#: ``candidates`` of a dataset or simulation source: what the held-out item is ranked among and negatives are
#: drawn from (:data:`simrec.stress.CANDIDATE_SETS`; see :mod:`simrec.stress.sources`).
CandidateSet = Literal["unseen", "all"]


class SimulationSource(Strict):
    """Truth from a world (preference × observation), leave-one-out, recommenders over all candidates.

    ``candidates``: as a dataset source's (:class:`DatasetSource`):
    ``"unseen"`` (default) the items the user has not trained on, ``"all"``
    every item, the user's training items scored by the recommender (which
    the oracles cannot do: they are refused with ``"all"``); the truly
    relevant candidates of the true metric are ranked among the same items.
    """

    type: Literal["simulation"]
    population: PopulationSpec
    world: WorldSpec
    candidates: CandidateSet = "unseen"
    min_items: int = Field(default=2, ge=1, description="users with fewer observed items are not evaluated")
    recommenders: list[RecommenderSpec] = Field(min_length=1)


class DatasetSource(DatasetSpec):
    """A reference dataset (e.g. ML-100K), leave-one-out, recommenders over all candidates.

    ``split``: ``"random"`` (default) holds out a uniformly random item per
    user; ``"last"`` each user's latest item by timestamp (Krichene &
    Rendle's protocol; MovieLens, or a table with a ``timestamp`` column).

    ``candidates``: what the held-out item is ranked among and negatives are
    drawn from: ``"unseen"`` (default) the items the user has not trained on
    (with ``hypergeometric``: Li & Jin's "actual" block), ``"all"`` every
    item, the user's training items scored by the recommender (Li & Jin's
    "binom" / "hyper" blocks); see :mod:`simrec.stress.sources`.
    """

    type: Literal["dataset"]
    split: Literal["random", "last"] = "random"
    candidates: CandidateSet = "unseen"
    min_items: int = Field(default=2, ge=1)
    recommenders: list[RecommenderSpec] = Field(min_length=1)


class FileSource(Strict):
    """A ranks file (CSV/Parquet: user, recommender, rank, n_candidates[, popularity_share])."""

    type: Literal["file"]
    path: str


SourceSpec = Annotated[Union[SimulationSource, DatasetSource, FileSource], Field(discriminator="type")]


class SamplingSpec(Strict):
    schemes: list[Literal[SCHEMES]] = Field(default_factory=lambda: list(SCHEMES), min_length=1)  # type: ignore[valid-type]
    sizes: list[Annotated[int, Field(ge=2)]] = Field(default_factory=lambda: [100], min_length=1)
    adaptive_n_max: int = Field(default=3200, ge=2)

    @model_validator(mode="after")
    def _unique(self) -> SamplingSpec:
        no_repeats(self, "schemes", "sizes")
        return self


class MetricsSpec(Strict):
    """``[metrics]``: ``names`` lists cutoff families (``recall``, ``ndcg``, ``average_precision``, each at
    K = 1..``k_max``; the default is all three) and metrics without a cutoff (``auc``: AUC, K&R eq. 7;
    ``average_precision_full``: untruncated AP = 1/R, K&R eq. 12), one column each with an empty ``k``.
    ``curve_k``/``curve_sizes``: K&R Figure 6's expected-metric-vs-n curve (cutoff families only);
    ``[user_sampling]`` also covers the cutoff families only."""

    names: list[Literal[METRIC_NAMES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(METRIC_FAMILIES), min_length=1
    )
    k_max: int = Field(default=50, ge=1)
    curve_k: int = Field(default=10, ge=1, description="cutoff of the expected-metric-vs-n curve")
    curve_sizes: list[Annotated[int, Field(ge=2)]] = Field(
        default_factory=lambda: [10, 20, 50, 100, 200, 500, 1000], min_length=1
    )

    @model_validator(mode="after")
    def _unique(self) -> MetricsSpec:
        no_repeats(self, "names")
        return self


class UserSamplingSpec(Strict):
    """The user-sampling experiment (dissertation §2.7, Tables 6-7; :mod:`simrec.stress.user_sampling`).

    ``sizes``: users per sample (each <= the users evaluated by every
    recommender, checked against the data); ``repeats``: samples per size
    (default: the scenario's ``repeats``); ``confidence``: level of the
    intervals and 1 - α of the tests; ``item_estimator``/``item_scheme``: the
    item-sampling estimator and scheme whose repeats fill the table's item
    columns ("" for none). ``estimators``: names of the scenario's
    estimators also run on each user sample's sampled ranks under
    ``item_scheme`` at every ``sampling.sizes`` n (simrec's extension, not in
    the dissertation; default none); ``n_boot``: bootstrap replicates over
    the sample's users for their intervals and tests (0: none, else >= 2).
    """

    sizes: list[Annotated[int, Field(ge=2)]] = Field(min_length=1)
    repeats: int | None = Field(default=None, ge=1)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    item_estimator: str = "MN_MES"
    item_scheme: Literal[tuple(s for s in SCHEMES if s != "adaptive")] = "binomial"  # type: ignore[valid-type]
    estimators: list[str] = Field(default_factory=list)
    n_boot: int = Field(default=0, ge=0)

    @field_validator("n_boot")
    @classmethod
    def _boot(cls, v: int) -> int:
        if v == 1:
            raise ValueError("must be 0 (no intervals) or >= 2")
        return v

    @model_validator(mode="after")
    def _unique(self) -> UserSamplingSpec:
        no_repeats(self, "sizes", "estimators")
        return self


class StressScenario(Strict):
    """A validated stress scenario (the parsed TOML)."""

    kind: Literal["stress"]
    name: SafeName
    description: str = ""
    seed: int = Field(ge=0)
    repeats: int = Field(default=100, ge=1)
    source: SourceSpec
    sampling: SamplingSpec = Field(default_factory=SamplingSpec)
    estimators: EstimatorsSpec = Field(default_factory=EstimatorsSpec)
    metrics: MetricsSpec = Field(default_factory=MetricsSpec)
    user_sampling: UserSamplingSpec | None = None

    def digest(self) -> str:
        return content_digest(self)

    def config(self) -> StressConfig:
        """The harness configuration (estimator names become estimator objects here, once)."""
        m = self.metrics
        return StressConfig(
            repeats=self.repeats,
            metrics=tuple(m.names),
            k_max=m.k_max,
            estimators=self.estimators.build(),
            max_iter=self.estimators.max_iter,
            adaptive_n_max=self.sampling.adaptive_n_max,
            n_boot=self.estimators.n_boot,
            confidence=self.estimators.confidence,
        )

    def cutoff_metric_names(self) -> tuple[str, ...]:
        """``metrics.names`` that are cutoff families (:data:`~simrec.stress.harness.METRIC_FAMILIES`): the metrics
        of user sampling and of the expected-metric-vs-n curve."""
        return tuple(m for m in self.metrics.names if m in METRIC_FAMILIES)

    def user_sampling_config(self) -> UserSamplingConfig | None:
        """The user-sampling experiment's configuration, or None when the scenario has no ``[user_sampling]``."""
        us = self.user_sampling
        if us is None:
            return None
        built = {e.name: e for e in self.estimators.build()} if us.estimators else {}
        return UserSamplingConfig(
            sizes=tuple(us.sizes),
            repeats=us.repeats or self.repeats,
            metrics=self.cutoff_metric_names(),
            k_max=self.metrics.k_max,
            confidence=us.confidence,
            estimators=tuple(built[n] for n in us.estimators if n in built),  # others: refused
            item_scheme=us.item_scheme,
            item_sizes=tuple(self.sampling.sizes) if us.estimators else (),
            n_boot=us.n_boot,
            max_iter=self.estimators.max_iter,
        )

    def data_path(self, scenario_path: str | Path) -> Path | None:
        """Where the source's data is: dataset folder/file or ranks file (None for simulations)."""
        src = self.source
        if isinstance(src, SimulationSource):
            return None
        if isinstance(src, DatasetSource):
            return src.resolve(scenario_path)
        p = Path(src.path).expanduser()
        return p if p.is_absolute() else (Path(scenario_path).resolve().parent / p).resolve()


_TAGS = re.compile(r"source\.(simulation|dataset|file)(?=[.:\[])")


def load_stress_scenario(
    scenario: str | Path, *, check_data: bool = True, budget: Budget | None = None
) -> tuple[StressScenario, Path]:
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
    budget : Budget, optional
        The memory the job may use (default: 75% of the machine's memory, one
        worker); a scenario whose estimated peak exceeds it is refused here
        (:mod:`simrec.config.budget`; a ranks file's largest ``n_candidates``
        counts when ``check_data``).

    Raises
    ------
    ScenarioError
        Not a stress scenario, unreadable TOML, unknown keys, wrong types,
        impossible values, models or recommenders that break their rules,
        missing data; the message names the file and every offending key.
    """
    path = resolve_scenario_path(scenario, kind="stress")
    raw = read_toml(path)
    if raw.get("kind") != "stress":
        raise ScenarioError(
            f'{path}: not a stress scenario (needs the top-level key kind = "stress"; '
            f"got {quote(raw.get('kind'))}); run it with `simrec run`"
        )
    src = raw.get("source")
    if isinstance(src, dict) and isinstance(src.get("world"), dict):
        raw = {**raw, "source": {**src, "world": merge_presets([src["world"]], path, "source.world")[0]}}
    try:
        sc = StressScenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(_TAGS.sub("source", format_validation(path, exc, "stress scenario"))) from None

    problems: list[str] = []
    src = sc.source
    if isinstance(src, SimulationSource):
        problems += world_problems(src.world, src.population, "source.world")
    if not isinstance(src, FileSource):
        more = recommender_problems(
            src.recommenders,
            "source.recommenders",
            truth=not isinstance(src, DatasetSource),
            base=path.resolve().parent,
        )
        problems += more or _candidate_problems(src)
    if sc.metrics.curve_k > sc.metrics.k_max:
        problems.append(f"metrics.curve_k: must be <= metrics.k_max ({sc.metrics.k_max}); got {sc.metrics.curve_k}")
    if "adaptive" in sc.sampling.schemes and min(sc.sampling.sizes) > sc.sampling.adaptive_n_max:
        problems.append(
            f"sampling.adaptive_n_max: must be >= the smallest size ({min(sc.sampling.sizes)}); "
            f"got {sc.sampling.adaptive_n_max}"
        )
    if isinstance(src, SimulationSource):
        _check_sizes(problems, sc, src.world.item_count(src.population), "the number of items of source.world")
    problems += _user_sampling_problems(sc)
    ranks = None
    if check_data and not problems:
        more, ranks = _data_problems(sc, path)
        problems += more
        if not more:
            problems += _user_population_problems(sc, path, ranks)
    if problems:
        raise problems_error(path, problems, "stress scenario")
    sizes = (
        {}
        if ranks is None
        else {"n_candidates": ranks.info["max_candidates"], "n_users": max(r.n_users for r in ranks.recommenders)}
    )
    (budget or Budget()).check(path, stress_needs(sc, **sizes))
    return sc, path


def _candidate_problems(src: SimulationSource | DatasetSource) -> list[str]:
    """Recommenders that cannot rank among ``source.candidates`` (with ``"all"``, those that cannot score the
    user's training items: the oracles), by the rule :func:`simrec.stress.check_candidates` applies when ranking."""
    if src.candidates == "unseen":
        return []
    from simrec.stress.sources import check_candidates

    problems = []
    for j, spec in enumerate(src.recommenders):
        try:
            check_candidates(spec.build(), src.candidates)
        except ValueError:
            problems.append(
                f'source.recommenders[{j}]: with source.candidates = "all" every recommender must '
                f"score the user's training items, which {spec.kind} cannot (set "
                f'candidates = "unseen", or remove this recommender); got kind {spec.kind!r}'
            )
    return problems


def _check_sizes(problems: list[str], sc: StressScenario, n_items: int, what: str) -> None:
    big = [n for n in sc.sampling.sizes if n > n_items]
    if big:
        problems.append(f"sampling.sizes: must be <= the number of items ({what} = {n_items}); got {quote(big)}")
    if sc.metrics.k_max > n_items:
        problems.append(f"metrics.k_max: must be <= the number of items ({what} = {n_items}); got {sc.metrics.k_max}")


def _data_problems(sc: StressScenario, path: Path) -> tuple[list[str], RankSource | None]:
    """Problems of the source's data, and the ranks file's content (file sources)."""
    src = sc.source
    data = sc.data_path(path)
    if data is None:
        return [], None
    if isinstance(src, DatasetSource):
        if data.exists():  # a FIFO, a device or a file over the size limit: refused now, not in a task
            from simrec.datasets import DatasetError, check_dataset_files

            try:
                check_dataset_files(data)
            except DatasetError as exc:
                return [f"source.path: {exc}"], None
        if data.exists() and src.split == "last":
            from simrec.datasets import DatasetError, detect_kind

            try:
                kind = src.format or detect_kind(
                    data, **{k: v for k, v in (("user_col", src.user_col), ("item_col", src.item_col)) if v}
                )
            except DatasetError as exc:
                return [f"source.path: {exc}"], None
            if kind not in ("movielens", "pairs"):
                return [
                    f"source.split: 'last' needs timestamps, which simrec reads from MovieLens and from tables "
                    f"with a timestamp column; {data} is a {kind} dataset"
                ], None
        if not data.exists():
            return [
                f"source.path: dataset {src.name!r} not found at {data}. Download it (e.g. MovieLens 100K from "
                f"https://grouplens.org/datasets/movielens/100k/), then set SIMREC_DATA to the folder holding "
                f"{src.name}/ or edit source.path (relative to {path.resolve().parent})"
            ], None
        return [], None
    from simrec.stress.sources import RanksFileError, read_ranks_file

    if not data.exists():
        return [f"source.path: ranks file not found at {data}"], None
    try:
        source = read_ranks_file(data)
    except RanksFileError as exc:
        return [f"source.path: {exc}"], None
    problems: list[str] = []
    if "popularity" in sc.sampling.schemes:
        lacking = [r.name for r in source.recommenders if r.popularity_shares is None]
        if lacking:
            problems.append(
                "sampling.schemes: 'popularity' needs the ranks file's optional `popularity_share` column; "
                f"{data} has none"
            )
    smallest = min(int(r.n_candidates.min()) for r in source.recommenders)
    n_est = min(int(round(r.n_candidates.mean())) for r in source.recommenders)
    _check_sizes(problems, sc, n_est, "mean n_candidates")
    if "hypergeometric" in sc.sampling.schemes and max(sc.sampling.sizes) > smallest:
        problems.append(
            f"sampling.sizes: sampling without replacement ('hypergeometric') needs every size <= the "
            f"smallest n_candidates ({smallest}); got {max(sc.sampling.sizes)}"
        )
    return problems, source


def _user_sampling_problems(sc: StressScenario) -> list[str]:
    """Rules of ``[user_sampling]`` that need no data: the item columns name a run estimator and scheme, and
    (simulations) the sizes fit the population."""
    us = sc.user_sampling
    if us is None:
        return []
    if not sc.cutoff_metric_names():
        return [
            f"metrics.names: [user_sampling] needs a cutoff family ({', '.join(METRIC_FAMILIES)}; it does not "
            f"cover metrics without a cutoff); got {sc.metrics.names}"
        ]
    problems = []
    try:
        sc.user_sampling_config().f_table()  # type: ignore[union-attr]
    except ValueError as exc:
        problems.append(f"metrics.names: {exc} (drop it from metrics.names to run [user_sampling])")
    names = [e.name for e in sc.estimators.build()]
    if us.item_estimator and us.item_estimator not in names:
        problems.append(
            f"user_sampling.item_estimator: must be one of the scenario's estimators "
            f'({", ".join(names)}) or "" for no item columns; got {quote(us.item_estimator)}'
        )
    unknown = [e for e in us.estimators if e not in names]
    if unknown:
        problems.append(
            f"user_sampling.estimators: must be among the scenario's estimators ({', '.join(names)}); got {quote(unknown)}"
        )
    if us.item_estimator or us.estimators:
        if us.item_scheme not in sc.sampling.schemes:
            problems.append(
                f"user_sampling.item_scheme: must be one of sampling.schemes "
                f"({', '.join(sc.sampling.schemes)}); got {quote(us.item_scheme)}"
            )
    if isinstance(sc.source, SimulationSource):
        _check_user_sizes(problems, us.sizes, sc.source.population.n_users, "population.n_users")
    return problems


def _check_user_sizes(problems: list[str], sizes: list[int], n_users: int, what: str) -> None:
    big = [m for m in sizes if m > n_users]
    if big:
        problems.append(f"user_sampling.sizes: must be <= the number of users ({what} = {n_users}); got {quote(big)}")


def _user_population_problems(sc: StressScenario, path: Path, ranks: RankSource | None) -> list[str]:
    """User-sample sizes against the users the data holds: a ranks file's users common to every recommender,
    a dataset's users with at least ``min_items`` items (those leave-one-out evaluates)."""
    if sc.user_sampling is None or isinstance(sc.source, SimulationSource):
        return []
    problems: list[str] = []
    if isinstance(sc.source, FileSource) and ranks is not None:
        from simrec.stress.user_sampling import common_users

        try:
            n_users = common_users(ranks.recommenders).shape[0]
        except ValueError as exc:
            return [f"user_sampling: {exc}"]
        _check_user_sizes(
            problems, sc.user_sampling.sizes, n_users, f"users common to every recommender of {sc.data_path(path)}"
        )
    elif isinstance(sc.source, DatasetSource):
        from simrec.datasets import DatasetError

        data = sc.data_path(path)
        try:
            inter = sc.source.read(data)  # type: ignore[arg-type]
        except (DatasetError, OSError, TypeError, ValueError) as exc:
            return [f"source.path: cannot read {data}: {exc}"]
        n_users = int((inter.user_counts() >= sc.source.min_items).sum())
        _check_user_sizes(
            problems,
            sc.user_sampling.sizes,
            n_users,
            f"users of {sc.source.name} with >= source.min_items = {sc.source.min_items} items",
        )
    return problems

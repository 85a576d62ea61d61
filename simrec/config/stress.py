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

import math
from pathlib import Path
from typing import Annotated, Literal, cast

from pydantic import Field, ValidationError, field_validator, model_validator

from simrec._validation import quote
from simrec.config.base import (
    SafeName,
    ScenarioError,
    Strict,
    content_digest,
    format_validation,
    no_repeats,
    problems_error,
    read_toml,
)
from simrec.config.budget import BYTES_PER_ROW, Budget, Need, Needs
from simrec.config.cost import (
    ASSUMED_DENSITY,
    BYTES_PER_RANKS_ROW,
    BYTES_PER_RATING,
    Work,
    file_bytes,
    sizes_from_file,
)
from simrec.config.estimators import EstimatorsSpec
from simrec.config.files import merge_presets, resolve_scenario_path
from simrec.config.sources import FileSource, SamplingPlan, SourceSpec, size_problems, user_size_problems
from simrec.stress.harness import METRIC_FAMILIES, METRIC_NAMES, SCHEMES, StressConfig
from simrec.stress.user_sampling import UserSamplingConfig

__all__ = [
    "StressScenario",
    "SamplingSpec",
    "MetricsSpec",
    "UserSamplingSpec",
    "load_stress_scenario",
]


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
            prior_per=self.estimators.prior_per,
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
        return self.source.data_path(scenario_path)

    def sampling_plan(self) -> SamplingPlan:
        """The schemes, sizes and largest cutoff the source's data is checked against."""
        return SamplingPlan(list(self.sampling.schemes), list(self.sampling.sizes), self.metrics.k_max)

    def work(
        self, *, n_candidates: float, n_users: float, n_recommenders: int | None = None, n_pairs: float | None = None
    ) -> Work:
        """The job's work (:mod:`simrec.config.cost`): the source's ranks, then per recommender, scheme and
        size one task drawing ``repeats`` x ``n_users`` x n negatives and fitting every estimator per repeat,
        with ``n_boot`` bootstrap replicates per fit for intervals; user sampling fits once per size and
        repeat.

        ``n_candidates`` / ``n_users``: the candidates and users (a simulation's are known from the spec; a
        dataset's or a ranks file's from the data; a dataset source's ``max_users`` evaluates fewer);
        ``n_recommenders``: the ranks file's (default: the source's recommenders); ``n_pairs``: the dataset's
        ratings (the recommenders' training; default :data:`~simrec.config.cost.ASSUMED_DENSITY` of
        users x candidates).
        """
        known = self.source.sizes()
        if known is not None:
            n_candidates, n_users = float(known.n_items), float(known.n_users)
        data_users = n_users
        n_users = self.source.evaluated_users(n_users)
        if n_pairs is None:
            n_pairs = ASSUMED_DENSITY * data_users * (n_candidates if math.isfinite(n_candidates) else 0.0)
        recs = n_recommenders if n_recommenders is not None else len(getattr(self.source, "recommenders", ()))
        n_est = len(self.estimators.build())
        n_boot = float(self.estimators.n_boot)
        stress = Work()
        for scheme in self.sampling.schemes:
            for size in self.sampling.sizes:
                n = min(float(size), n_candidates)
                if scheme == "adaptive":  # draws grow until the rank is resolved, up to adaptive_n_max
                    n = min(float(max(size, self.sampling.adaptive_n_max)), n_candidates) / 2.0
                fits = float(self.repeats * n_est)
                stress = stress + Work(
                    draws=self.repeats * n_users * n, fits=fits, boots=fits * n_boot, tasks=1.0
                ).times(float(recs))
        if self.user_sampling is not None:
            us = self.user_sampling
            stress = stress + Work(fits=float(len(us.sizes) * (us.repeats or self.repeats) * recs))
        return self.source.work(data_users, n_candidates, n_pairs=n_pairs) + stress

    def estimated_work(self, scenario_path: str | Path) -> Work:
        """:meth:`work` with the data's sizes estimated before reading it: a simulation's are known; a dataset's
        from its ratings file (:func:`simrec.config.cost.sizes_from_file`); a ranks file's users from its size
        (:data:`simrec.config.cost.BYTES_PER_RANKS_ROW` per row, one row per user and recommender)."""
        known = self.source.sizes()
        if known is not None:
            return self.work(n_candidates=float(known.n_items), n_users=float(known.n_users))
        data = cast(Path, self.data_path(scenario_path))  # only a simulation has no data path, and its sizes are known
        if isinstance(self.source, FileSource):
            rows = file_bytes(data) / BYTES_PER_RANKS_ROW
            return self.work(n_candidates=math.inf, n_users=rows, n_recommenders=1)
        n_users, n_items = sizes_from_file(data)
        return self.work(n_candidates=n_items, n_users=n_users, n_pairs=file_bytes(data) / BYTES_PER_RATING)

    def memory_needs(self, *, n_candidates: float | None = None, n_users: float | None = None) -> Needs:
        """Task kinds (the source's, e.g. a simulation's ranks tasks; stress tasks) and parent-side needs.

        ``n_candidates`` / ``n_users`` (largest candidate count and evaluated
        users of a ranks file) are needed for file sources; a dataset source's
        size is only known once it is loaded and is not estimated here. A
        simulation's N is its item count under either ``source.candidates``
        (``"all"``: N_u = n_items; ``"unseen"``: fewer), and its score blocks are
        dense over all items in both readings, so the key changes no estimate.
        """
        kinds = self.source.memory_kinds()
        known = self.source.sizes()
        if known is not None:
            n_candidates, n_users = float(known.n_items), float(known.n_users)
        n_est = len(self.estimators.build())
        families, k_max, repeats = len(self.metrics.names), self.metrics.k_max, float(self.repeats)
        fixed: list[Need] = []
        stress_task: list[Need] = []
        if n_candidates is not None:
            n = float(max(self.sampling.sizes))
            if "adaptive" in self.sampling.schemes:
                n = max(n, float(self.sampling.adaptive_n_max))
            n = min(n, n_candidates)
            grid = 8.0 * 4 * n_candidates * n + 8.0 * 4 * n * n + 8.0 * 8 * (n_users or 0)
            stress_task.append(
                Need(
                    f"P(r|R) and the estimators' solves for N = {n_candidates:.3g} candidates and n = {n:.3g}",
                    "sampling.sizes, sampling.adaptive_n_max (or the ranks file's n_candidates)",
                    grid,
                )
            )
        cells = repeats * n_est * families * k_max
        stress_task.append(
            Need(
                f"{self.repeats} repeats x {n_est} estimators x {families} metrics x K = 1..{k_max}",
                "repeats, estimators.names, metrics.names, metrics.k_max",
                8.0 * 3 * cells,
            )
        )
        n_tasks = float(len(self.sampling.schemes) * len(self.sampling.sizes))
        fixed.append(
            Need(
                f"the tables of {n_tasks:.3g} tasks per recommender",
                "repeats, metrics.k_max",
                BYTES_PER_ROW * n_tasks * n_est * families * k_max * 4,
            )
        )
        return [*kinds, stress_task], fixed


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
        raise ScenarioError(format_validation(path, exc, "stress scenario")) from None

    problems = sc.source.problems(path.resolve().parent)
    if sc.metrics.curve_k > sc.metrics.k_max:
        problems.append(f"metrics.curve_k: must be <= metrics.k_max ({sc.metrics.k_max}); got {sc.metrics.curve_k}")
    if "adaptive" in sc.sampling.schemes and min(sc.sampling.sizes) > sc.sampling.adaptive_n_max:
        problems.append(
            f"sampling.adaptive_n_max: must be >= the smallest size ({min(sc.sampling.sizes)}); "
            f"got {sc.sampling.adaptive_n_max}"
        )
    known = sc.source.sizes()
    if known is not None:
        problems += size_problems(sc.sampling_plan(), known.n_items, known.items_label)
    problems += _user_sampling_problems(sc)
    ranks = None
    data = sc.data_path(path)
    if check_data and not problems and data is not None:
        more, ranks = sc.source.data_problems(data, path, sc.sampling_plan())
        problems += more
        if not more and sc.user_sampling is not None:
            problems += sc.source.user_sample_problems(sc.user_sampling.sizes, path, ranks)
    if problems:
        raise problems_error(path, problems, "stress scenario")
    sizes = (
        {}
        if ranks is None
        else {"n_candidates": ranks.info["max_candidates"], "n_users": max(r.n_users for r in ranks.recommenders)}
    )
    (budget or Budget()).check(path, sc.memory_needs(**sizes))
    return sc, path


def _user_sampling_problems(sc: StressScenario) -> list[str]:
    """Rules of ``[user_sampling]`` that need no data: the item columns name a run estimator and scheme, and
    (sources that know their users, simulations) the sizes fit the population."""
    us = sc.user_sampling
    if us is None:
        return []
    if not sc.cutoff_metric_names():
        return [
            f"metrics.names: [user_sampling] needs a cutoff family ({', '.join(METRIC_FAMILIES)}; it does not "
            f"cover metrics without a cutoff); got {sc.metrics.names}"
        ]
    problems = []
    config = sc.user_sampling_config()
    try:
        if config is not None:
            config.f_table()
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
    known = sc.source.sizes()
    if known is not None:
        problems += user_size_problems(us.sizes, known.n_users, known.users_label)
    return problems

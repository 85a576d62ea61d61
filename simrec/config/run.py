"""Run scenarios (``simrec run``): the file's schema over the model, recommender and metric specs.

:func:`load_scenario` parses a TOML file, validates it completely (schema,
then every rule that needs more than one key, by building every model and
recommender once) and returns a :class:`Scenario` whose ``worlds()`` and
``evaluation()`` give the typed library objects. Every problem is reported as
a :class:`~simrec.config.ScenarioError` naming the file, the key path (e.g.
``world[2].preference.sigma``), the rule and the value received.

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

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from simrec.config.base import (
    MaxUsers,
    SafeName,
    ScenarioError,
    Strict,
    content_digest,
    format_validation,
    no_repeats,
    problems_error,
    read_toml,
)
from simrec.config.budget import BYTES_PER_ROW, BYTES_PER_TASK, Budget, Need, Needs
from simrec.config.cost import Work
from simrec.config.debias import DebiasSpec
from simrec.config.files import merge_presets, resolve_scenario_path
from simrec.config.models import PopulationSpec, WorldSpec
from simrec.config.recommenders import RecommenderSpec, recommender_problems
from simrec.config.significance import SignificanceSpec, significance_problems
from simrec.debias.propensity import WorldPropensity
from simrec.experiment import Evaluation, World
from simrec.metrics import METRICS, PapAtK

__all__ = ["Scenario", "EvaluationSpec", "METRIC_NAMES", "load_scenario", "content_digest"]

#: Metric names a scenario may list; ``auc`` and ``pap_at_k`` need full rankings (scores over all candidates).
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)


class EvaluationSpec(Strict):
    """``[evaluation]``: the recommenders, list length, metrics and split of every world's observed data.

    ``split = "holdout"`` (default) holds out ``test_fraction`` of each user's
    observed items; ``split = "last"`` holds out each user's latest item in a
    simulated consumption order, uniform per user (so the held-out item is a
    uniformly random one: :class:`simrec.experiment.Evaluation` records the
    decision). ``test_fraction`` is refused with ``split = "last"``, where it
    has no effect.
    """

    n: int = Field(default=50, ge=1, description="recommendation list length N")
    split: Literal["holdout", "last"] = "holdout"
    test_fraction: float = Field(default=0.2, gt=0, lt=1)
    metrics: list[Literal[METRIC_NAMES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["precision", "recall", "ndcg", "reciprocal_rank"], min_length=1
    )
    pap_k: int = Field(default=10, ge=1, description="k of pAp@k")
    recommenders: list[RecommenderSpec] = Field(min_length=1)
    #: Evaluate a uniform sample of at most this many users per replicate (:mod:`simrec.user_sample`); None: all.
    max_users: MaxUsers | None = None

    @model_validator(mode="after")
    def _unique(self) -> EvaluationSpec:
        no_repeats(self, "metrics")
        if self.split == "last" and "test_fraction" in self.model_fields_set:
            raise ValueError(
                f"`test_fraction` is only used with split = 'holdout'; split = 'last' holds out each user's latest "
                f"item (remove test_fraction); got test_fraction = {self.test_fraction:g}"
            )
        return self

    def build(self) -> Evaluation:
        """The typed :class:`~simrec.experiment.Evaluation` (metric names become metric objects here, once)."""
        metrics = tuple(PapAtK(k=self.pap_k) if m == "pap_at_k" else METRICS[m]() for m in self.metrics)
        return Evaluation(
            recommenders=tuple(r.build() for r in self.recommenders),
            metrics=metrics,
            n=self.n,
            test_fraction=self.test_fraction,
            split=self.split,
            max_users=self.max_users,
        )


class Scenario(Strict):
    """A validated run scenario (the parsed TOML)."""

    kind: Literal["run"] = "run"
    name: SafeName
    description: str = ""
    seed: int = Field(ge=0)
    replicates: int = Field(ge=1)
    population: PopulationSpec
    world: list[WorldSpec] = Field(min_length=1)
    evaluation: EvaluationSpec
    #: Paired tests against the truth (:mod:`simrec.config.significance`); None: no significance phase.
    significance: SignificanceSpec | None = None
    #: The MNAR-correction harness (issue 25; :mod:`simrec.config.debias`); absent: not run.
    debias: DebiasSpec | None = None

    def world_names(self) -> list[str]:
        return [w.label for w in self.world]

    def worlds(self, max_pairs: int | None = None) -> list[World]:
        """Every world's models, built for the population (``max_pairs``: their generators' guard)."""
        return [w.build(self.population, max_pairs=max_pairs) for w in self.world]

    def digest(self) -> str:
        return content_digest(self)

    def work(self) -> Work:
        """The run's work (:mod:`simrec.config.cost`): per world and replicate, its expected true pairs, every
        recommender fitted and scoring its evaluated users (at most ``evaluation.max_users``) x items, one task;
        with ``[debias]`` the harness on the same replicate (:meth:`DebiasSpec.work
        <simrec.config.debias.DebiasSpec.work>`), with ``[significance]`` one more task per replicate and world
        (:meth:`SignificanceSpec.work <simrec.config.significance.SignificanceSpec.work>`)."""
        ev = self.evaluation
        users = min(float(self.population.n_users), float(ev.max_users or self.population.n_users))
        parts = []
        for w in self.world:
            rep = w.work(self.population, ev.recommenders, max_users=ev.max_users, test_fraction=ev.test_fraction)
            parts.append(rep + Work(tasks=1.0))
            if self.debias is not None:
                parts.append(self.debias.work(replicate=rep, n_users=users, n_recommenders=len(ev.recommenders)))
            if self.significance is not None:
                loo = w.loo_work(self.population, ev.recommenders, max_users=ev.max_users)
                parts.append(
                    self.significance.work(
                        replicate=rep,
                        loo=loo,
                        n_users=users,
                        n_recommenders=len(ev.recommenders),
                        metrics=list(ev.metrics),
                    )
                    + Work(tasks=1.0)
                )
        panels = 2 * len(ev.metrics) + (len(self.debias.metrics) if self.debias is not None else 0)
        return Work.total(parts).times(float(self.replicates)) + Work(figures=float(panels * len(self.world)))

    def memory_needs(self) -> Needs:
        """Task kinds (one per world: a replicate) and parent-side needs (:mod:`simrec.config.budget`)."""
        ev = self.evaluation
        scores = any(m in ("auc", "pap_at_k") for m in ev.metrics)
        kinds = [
            [
                w.memory_need(
                    self.population,
                    f"world[{i}]",
                    n_lists=ev.n * 3 * len(ev.recommenders),
                    score_users=self.population.n_users if scores else 0,
                )
            ]
            for i, w in enumerate(self.world)
        ]
        tasks = float(self.replicates) * len(self.world)
        rows = tasks * len(ev.recommenders) * len(ev.metrics) * 2
        if self.debias is not None:  # at most every estimator with every propensity kind
            d = self.debias
            rows += tasks * len(ev.recommenders) * len(d.metrics) * len(d.estimators) * len(d.propensities)
            if d.sampled is not None:
                rows += (
                    tasks
                    * len(ev.recommenders)
                    * len(d.sampled.metrics)
                    * len(d.sampled.estimators)
                    * (1 + len(d.propensities))
                )
        fixed = [
            Need(
                f"{self.replicates} replicates x {len(self.world)} worlds: {tasks:.3g} tasks and {rows:.3g} result rows",
                "replicates",
                BYTES_PER_TASK * tasks + BYTES_PER_ROW * rows,
            )
        ]
        if self.significance is not None:  # a second phase: one task per replicate x world, its replicate regenerated
            names = [str(j) for j in range(len(ev.recommenders))]  # only their number counts
            task, parent = self.significance.memory_needs(
                n_users=self.population.n_users, recommenders=names, metrics=list(ev.metrics), tasks=tasks
            )
            kinds += [[*kind, task] for kind in kinds[: len(self.world)]]
            fixed.append(parent)
        return kinds, fixed


def _semantic_problems(sc: Scenario, path: Path) -> list[str]:
    problems: list[str] = []
    names = sc.world_names()
    for i, name in enumerate(names):
        if names.count(name) > 1:
            problems.append(f"world[{i}].name: world names must be unique; {name!r} repeats")
    for i, w in enumerate(sc.world):
        problems += w.problems(sc.population, f"world[{i}]")
    problems += recommender_problems(sc.evaluation.recommenders, "evaluation.recommenders", base=path.resolve().parent)
    if problems:
        return problems
    if sc.debias is not None:
        design = sc.debias.build()
        for i, world in enumerate(sc.worlds()):
            try:
                design.kinds_for(world)
            except TypeError as exc:
                problems.append(f"debias.propensities: {exc} (world[{i}])")
        if sc.debias.k is not None and sc.debias.k > sc.evaluation.n:
            problems.append(f"debias.k: must be <= evaluation.n ({sc.evaluation.n}); got {sc.debias.k}")
        sampled = sc.debias.sampled
        smallest = min(w.item_count(sc.population) for w in sc.world)
        if sampled is not None and sampled.n > smallest:
            problems.append(
                f"debias.sampled.n: must be <= the number of items of every world (smallest: {smallest}); "
                f"got {sampled.n}"
            )
    items = min(w.item_count(sc.population) for w in sc.world)
    ev = sc.evaluation
    if ev.n > items:
        problems.append(
            f"evaluation.n: the list length must be <= the number of items of every world "
            f"(smallest: {items}); got {ev.n}"
        )
    if "pap_at_k" in ev.metrics and ev.pap_k > items:
        problems.append(
            f"evaluation.pap_k: must be <= the number of items of every world (smallest: {items}); got {ev.pap_k}"
        )
    if sc.significance is not None:
        base = path.resolve().parent
        names = [str(r.check(f"evaluation.recommenders[{j}]", base)[1]) for j, r in enumerate(ev.recommenders)]
        problems += significance_problems(sc.significance, names, list(ev.metrics), items)
        if "full_ips" in sc.significance.protocols:
            for i, world in enumerate(sc.worlds()):
                try:
                    WorldPropensity(world.sampler)
                except TypeError as exc:
                    problems.append(
                        f"significance.protocols: 'full_ips' needs the world's propensities: {exc} (world[{i}])"
                    )
    return problems


def load_scenario(scenario: str | Path, *, budget: Budget | None = None) -> tuple[Scenario, Path]:
    """Read, validate and return a run scenario and the file it came from.

    Parameters
    ----------
    scenario : str or Path
        A TOML file, or the name of a shipped scenario.
    budget : Budget, optional
        The memory the run may use (default: 75% of the machine's memory, one
        worker); a scenario whose estimated peak exceeds it is refused here,
        before anything is created (:mod:`simrec.config.budget`).

    Raises
    ------
    ScenarioError
        Unreadable TOML, unknown keys, wrong types, impossible values, unknown
        presets, model parameters that break a model's rules, or a size over
        the budget; the message names the file and every offending key.
    """
    path = resolve_scenario_path(scenario, kind="run")
    raw = read_toml(path)
    if raw.get("kind") == "stress":
        raise ScenarioError(f'{path}: a stress scenario (kind = "stress"); run it with `simrec stress {path}`')
    if "world" in raw:
        raw = {**raw, "world": merge_presets(raw["world"], path)}
    try:
        sc = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(format_validation(path, exc)) from None
    problems = _semantic_problems(sc, path)
    if problems:
        raise problems_error(path, problems)
    (budget or Budget()).check(path, sc.memory_needs())
    return sc, path

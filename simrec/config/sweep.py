"""Sweep spec files (TOML) for ``simrec calibrate``, validated before any work.

Example (``calibration/ml-100k.toml``):

.. code-block:: toml

    name = "ml-100k"
    seed = 2019
    n_calls = 150
    n_initial = 25
    preferences = ["uniform", "ibp", "lda"]
    observations = ["uniform", "popularity"]
    objectives = ["item_popularity", "user_activity", "item_similarity", "user_similarity", "average_loss"]
                                   # (the default: the thesis's five; add "sum_kl" for the authors' code's
                                   # 'all' objective, the plain sum of the four KLs)
    denoise_top = 5                # the 5 best trials of every search ...
    denoise_seeds = 10             # ... re-evaluated with 10 fresh simulations each (0: off); presets from the
                                   # de-noised best, tables with mean ± sd
    # [response]                   # the "algorithm_response" and "response_loss" objectives' protocol (issue 24;
                                   # defaults shown):
    # algorithms = ["Popular", "ItemKNN", "ImplicitMF"]
    # metrics = ["recall", "ndcg"]
    # n = 10
    # test_fraction = 0.2          # per-user holdout, on the real and the simulated data alike
    # max_users = 500              # evaluated users (a subsample; all users train the algorithms)
    statistics = "thesis"          # or "authors_code": the thesis authors' code's statistics and KL
                                   # (simrec.stats.authors_code: exact counts, unobserved items at 0,
                                   # 'auto' similarity bins on (-1, 1), eps = min count / 10)

    [[dataset]]
    name = "ml-100k"
    path = "../../shared/data/ml-100k"   # relative to this file
    kind = "movielens"

Dataset tables are :class:`~simrec.config.datasets.DatasetSpec` (``$SIMREC_DATA``
first, then ``path``); the cells are :class:`~simrec.config.models.CellSpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError, model_validator

from simrec.calibration.objective import (
    AVERAGE_LOSS,
    DEFAULT_CALIBRATION_MAX_PAIRS,
    OBJECTIVES,
    RESPONSE_OBJECTIVES,
    THESIS_OBJECTIVES,
)
from simrec.config.base import SafeName, ScenarioError, Strict, format_validation, no_repeats, problems_error, read_toml
from simrec.config.budget import BYTES_PER_PAIR, Budget, Need, Needs
from simrec.config.cost import (
    BYTES_PER_RATING,
    STAT_PAIR_SHARE,
    TRUE_PAIRS_PER_OBSERVED,
    Work,
    file_bytes,
    gp_work,
    sizes_from_file,
)
from simrec.config.datasets import DatasetSpec
from simrec.config.models import THESIS_PREFERENCES, THESIS_SAMPLERS, CellSpec, PreferenceTag, RatingsSpec, SamplerTag
from simrec.stats.key import STATISTICS

if TYPE_CHECKING:
    from simrec.calibration.response import ResponseProtocol

__all__ = ["SweepSpec", "ResponseSpec", "load_sweep_spec"]


_Algorithm = Literal["Popular", "ItemKNN", "ImplicitMF"]
_ALGORITHMS: tuple[_Algorithm, ...] = ("Popular", "ItemKNN", "ImplicitMF")
_Metric = Literal["recall", "ndcg"]
_METRICS: tuple[_Metric, ...] = ("recall", "ndcg")


class ResponseSpec(Strict):
    """The ``[response]`` table: the algorithm-response objective's protocol
    (:class:`simrec.calibration.response.ResponseProtocol`)."""

    algorithms: list[_Algorithm] = Field(default_factory=lambda: list(_ALGORITHMS), min_length=2)
    metrics: list[_Metric] = Field(default_factory=lambda: list(_METRICS), min_length=1)
    n: int = Field(default=10, ge=1)
    test_fraction: float = Field(default=0.2, gt=0, lt=1)
    max_users: int | None = Field(default=500, ge=1)

    def build(self) -> ResponseProtocol:
        from simrec.calibration.response import ResponseProtocol

        return ResponseProtocol(tuple(self.algorithms), tuple(self.metrics), self.n, self.test_fraction, self.max_users)


class SweepSpec(Strict):
    name: SafeName
    description: str = ""
    seed: int = Field(ge=0)
    n_calls: int = Field(default=150, ge=1)
    n_initial: int = Field(default=25, ge=1)
    # the thesis's cells by default (not every registered model: one added later, e.g. the latent-factor truths
    # or the preference-driven sampler, must not change what an existing sweep file calibrates)
    preferences: list[PreferenceTag] = Field(default_factory=lambda: list(THESIS_PREFERENCES), min_length=1)
    observations: list[SamplerTag] = Field(default_factory=lambda: list(THESIS_SAMPLERS), min_length=1)
    objectives: list[Literal[OBJECTIVES]] = Field(default_factory=lambda: list(THESIS_OBJECTIVES), min_length=1)  # type: ignore[valid-type]
    statistics: Literal["thesis", "authors_code"] = Field(
        default="thesis", description="key statistics and KL as the thesis text says, or as its authors' code does"
    )
    denoise_top: int = Field(default=5, ge=1, description="best trials of each search re-evaluated")
    denoise_seeds: int = Field(default=10, ge=0, description="fresh simulations per re-evaluated trial (0: off)")
    max_pairs: int | None = Field(default=None, ge=1)
    stat_pairs: int = Field(default=1_000_000, ge=1)
    response: ResponseSpec | None = None
    ratings: RatingsSpec | None = Field(
        default=None, description="rate the observed pairs (the dataset's scale and min_rating); searched too"
    )
    dataset: list[DatasetSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _checks(self) -> SweepSpec:
        if self.n_initial > self.n_calls:
            raise ValueError(f"`n_initial` ({self.n_initial}) must not exceed `n_calls` ({self.n_calls})")
        no_repeats(self, "preferences", "observations", "objectives")
        if AVERAGE_LOSS in self.objectives:  # its relative losses divide by each statistic's family-best KL
            missing = [s for s in STATISTICS if s not in self.objectives]
            if missing:
                raise ValueError(
                    "`objectives`: 'average_loss' is the mean relative loss over the four statistics' own searches "
                    f"(each KL over its family's best), so it needs every statistic among the objectives too; "
                    f"missing {missing}; got {list(self.objectives)}"
                )
        if self.response is not None:
            no_repeats(self.response, "algorithms", "metrics")
        names = [d.name for d in self.dataset]
        if len(set(names)) != len(names):
            raise ValueError(f"dataset names must be unique; got {names}")
        if self.ratings is not None:  # one binarisation on both sides (issue 24)
            bad = [
                f"dataset[{i}].min_rating = {d.min_rating}"
                for i, d in enumerate(self.dataset)
                if d.min_rating != self.ratings.min_rating
            ]
            if bad:
                raise ValueError(
                    f"`ratings.min_rating` ({self.ratings.min_rating}) keeps the simulated pairs rated at least that, "
                    "so every dataset must be binarised the same way (the same min_rating in its table); got "
                    + ", ".join(bad)
                )
        return self

    def response_protocol(self) -> ResponseProtocol | None:
        """The algorithm-response protocol (the ``[response]`` table, or its defaults) when the objective is
        searched, else None."""
        if not set(RESPONSE_OBJECTIVES) & set(self.objectives):
            return None
        return (self.response or ResponseSpec()).build()

    def cells(self) -> list[CellSpec]:
        """The (preference, observation) cells in the spec's order."""
        return [
            CellSpec(preference=p, observation=o, ratings=self.ratings)
            for p in self.preferences
            for o in self.observations
        ]

    def work(self, spec_path: str | Path, n_calls: int | None = None) -> Work:
        """The sweep's work (:mod:`simrec.config.cost`): every search's trials (``n_calls``, default the spec's,
        and the de-noising's ``denoise_top`` x ``denoise_seeds`` re-evaluations), each one simulation of
        about :data:`~simrec.config.cost.TRUE_PAIRS_PER_OBSERVED` true pairs per rating of the dataset (its
        ratings counted from the file's size, :func:`~simrec.config.cost.sizes_from_file`; at most
        ``max_pairs``) and ``stat_pairs`` pairs per statistic (each :data:`~simrec.config.cost.STAT_PAIR_SHARE` of a
        generated pair's cost); one task per search; and the Gaussian process's
        proposals after the ``n_initial`` random trials, each a GP fitted to every trial before it
        (:func:`~simrec.config.cost.gp_work`: about 40 s of CPU in a search of 150 calls, growing as the cube of
        the calls).

        A search of a response objective (:data:`~simrec.calibration.objective.RESPONSE_OBJECTIVES`) also
        trains every algorithm of its ``[response]`` protocol on each trial's simulated data and scores its
        evaluated users: per trial, each algorithm's :meth:`~simrec.config.recommenders.BaseRecommenderSpec.work`
        with the dataset's ratings less the holdout as training pairs and ``min(users, max_users)`` x items
        scored (the simulation observes about as many pairs as the data; its users and items estimated from the
        file, :func:`~simrec.config.cost.sizes_from_file`); and once per dataset for the real data's response,
        measured in this process before the searches. Predicted / measured CPU seconds of
        ``bench/cost-response.toml`` (the factor x preference cell on ``algorithm_response``, ML-100K, 6 trials
        of 200 users; ``bench/bench_cost_model.py``, 2 December 2026, load 0.8): 16.5 / 18.7 (2.5 before the
        response was counted)."""
        calls = n_calls or self.n_calls
        trials = float(calls + self.denoise_top * self.denoise_seeds)
        searches = float(len(self.cells()) * len(self.objectives))
        limit = float(self.max_pairs or DEFAULT_CALIBRATION_MAX_PAIRS)
        gp = gp_work(calls, self.n_initial)
        protocol = self.response_protocol()
        response_searches = float(len(self.cells()) * len(set(RESPONSE_OBJECTIVES) & set(self.objectives)))
        parts = []
        for d in self.dataset:
            data = d.resolve(spec_path)
            ratings = file_bytes(data) / BYTES_PER_RATING
            pairs = min(TRUE_PAIRS_PER_OBSERVED * ratings, limit) + STAT_PAIR_SHARE * self.stat_pairs
            parts.append((Work(pairs=pairs * trials, tasks=1.0) + gp).times(searches))
            if protocol is not None:  # each trial's response, and the real data's once
                from simrec.config.recommenders import response_work

                n_users, n_items = sizes_from_file(data)
                response = response_work(protocol, n_users, n_items, ratings)
                parts.append(response.times(trials * response_searches + 1))
        return Work.total(parts)

    def memory_needs(self) -> Needs:
        """Task kinds (one GP search) and parent-side needs (:mod:`simrec.config.budget`)."""
        pairs = float(self.max_pairs or DEFAULT_CALIBRATION_MAX_PAIRS)
        calls = float(self.n_calls)
        search = [
            Need(f"one simulation of up to {pairs:.3g} pairs per trial", "max_pairs", BYTES_PER_PAIR * pairs),
            Need(f"the Gaussian process over {self.n_calls} calls", "n_calls", 8.0 * 6 * calls * calls),
            Need(f"{self.stat_pairs} sampled pairs per similarity statistic", "stat_pairs", 8.0 * 8 * self.stat_pairs),
        ]
        cells = len(self.dataset) * len(self.preferences) * len(self.observations) * len(self.objectives)
        fixed = [Need(f"{cells} searches of {self.n_calls} trials", "n_calls", 2048.0 * cells * calls)]
        return [search], fixed


def load_sweep_spec(path: str | Path, *, budget: Budget | None = None) -> SweepSpec:
    """Read and validate a sweep spec; raise ScenarioError naming file and keys.

    ``budget`` (default: 75% of the machine's memory, one worker) refuses a
    sweep whose estimated peak exceeds it (:mod:`simrec.config.budget`).
    """
    path = Path(path)
    raw = read_toml(path)
    try:
        spec = SweepSpec.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(format_validation(path, exc, "sweep spec")) from None
    from simrec.datasets import DatasetError, check_dataset_files

    missing = []
    for i, d in enumerate(spec.dataset):
        if not d.resolve(path).exists():
            missing.append(f"dataset[{i}].path: {d.resolve(path)} does not exist")
            continue
        try:  # a FIFO, a device or a file over the size limit: refused now, before any folder exists
            check_dataset_files(d.resolve(path))
        except DatasetError as exc:
            missing.append(f"dataset[{i}].path: {exc}")
    if missing:
        raise problems_error(path, missing, "sweep spec")
    (budget or Budget()).check(path, spec.memory_needs())
    return spec

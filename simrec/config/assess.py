"""Assessment files (``simrec assess``): dataset + algorithms + protocol in one TOML file.

:func:`load_assessment` parses the file, validates all of it before any work
(schema; the dataset exists and loads; the presets exist; the recommenders'
parameters; N and the sample sizes against the dataset; the memory the
calibrated worlds, the sampled evaluation and a calibration would need,
:mod:`simrec.config.budget`) and returns an :class:`Assessment`: the spec and
the typed pieces derived from it, the sub-studies' own specs
(:class:`~simrec.config.run.Scenario` for the calibrated worlds,
:class:`~simrec.config.stress.StressScenario` for the sampled evaluation on
the real data, :class:`~simrec.config.sweep.SweepSpec` when the file asks for
a calibration), so the assessment reuses those studies unchanged.

Example (``simrec/assessments/ml100k-assess.toml``, shipped: ``simrec assess ml100k-assess``):

.. code-block:: toml

    kind = "assess"
    name = "ml100k-assess"
    seed = 14

    [dataset]                              # the keys of a stress source's dataset
    name = "ml-100k"
    path = "../../../shared/data/ml-100k"  # relative to this file; $SIMREC_DATA/ml-100k first

    [calibration]
    presets = "ml-100k"       # shipped presets (simrec/presets/ml-100k/) or a folder of <cell>.toml files
    worlds = 2                # the best-fitting calibrated worlds the algorithms run in
    # cells = ["clustered-pref", "clustered-pref-wide", "lda-pop"]  # the worlds considered (default: the six)

    [protocol]
    split = "holdout"         # the real data and the worlds alike; or "last": leave-last-out (no test_fraction)
    test_fraction = 0.2
    n = 10                    # list length N (metrics at K = N)
    negatives = 100           # sampled negatives per user; 0 = full ranking
    metrics = ["recall", "ndcg", "precision"]
    recommenders = [{ kind = "lenskit", algorithm = "item_knn", name = "ItemKNN" },
                    { kind = "lenskit", algorithm = "implicit_mf", name = "ImplicitMF" },
                    { kind = "popular", name = "Popular" }]

    [simulation]
    replicates = 3

    [sampling]
    sizes = [50, 100, 500]    # sample sizes to choose among (the protocol's `negatives` is always included)
    repeats = 30

    [correction]              # optional: advice on correcting the missing-data error (issue 25)
    estimators = ["naive", "ips", "snips", "dr", "resampled_skew", "resampled_wtd_h", "stratified"]
    max_rel_bias = 0.1        # a correction is acceptable when every algorithm's bias is within 10% ...
    min_coverage = 0.85       # ... and its 95% interval covers the truth in 85% of the replicates

Decisions (recorded here, where the keys are defined):

* **Presets.** ``calibration.presets`` names shipped presets by dataset
  (``"ml-100k"`` → ``simrec/presets/ml-100k/<cell>.toml``, resolved with
  :func:`simrec.config.files.load_preset`, so presets shipped later, e.g.
  ``ml-1m``, work by name) or, when it contains a path separator or exists as
  a folder beside the file, a folder holding the six ``<cell>.toml`` files
  (e.g. a committed calibration's ``calibration/ml-100k/presets``). Without
  ``presets`` the six models are calibrated to the dataset first
  (``simrec calibrate`` with ``n_calls`` etc. from ``[calibration]``).
* **Which worlds** (issue 24). ``calibration.cells`` names the worlds
  considered instead of the thesis's six: presets of the set (any preset
  name, e.g. ``"clustered-pref-wide"``, a safe name: never a path) or, when
  calibrating, cells of registered models (``"<preference>-<sampler>"``, e.g.
  ``"clustered-pref"``; the sweep searches the product of the named
  preference models and samplers and keeps the named cells).
* **Best-fitting worlds.** Cells are ranked by the preset's
  ``fit.average_loss`` (Tian's average relative loss over the four key
  statistics, lower is better), else by the mean of its four KL divergences;
  the best ``calibration.worlds`` are used.
* **One protocol on both sides** (issue 24). The calibrated worlds are
  evaluated with the real data's split: ``split = "holdout"`` holds out
  ``test_fraction`` of each user's observed items on both sides;
  ``split = "last"`` holds out each user's latest item on both sides — by
  timestamp on the real data (:func:`simrec.loo.leave_last_out`), and in a
  simulated consumption order in the worlds, which have no time: uniform per
  user, drawn from the split's seed, so the held-out item is a uniformly
  random one (:class:`simrec.experiment.Evaluation`, ``split = "last"``).
  ``test_fraction`` is refused with ``split = "last"`` (it used to set the
  worlds' holdout: two protocols). The sim-to-real check
  (:mod:`simrec.assess.sim_to_real`) compares the user's algorithms on the
  real data and in the worlds at that split.
* **Sampled evaluation is leave-one-out.** The sampled-metric estimators
  (Krichene & Rendle 2020; Li 2020) are defined for one held-out item per
  user, so step 4 holds out one item per user (random, or the latest with
  ``split = "last"``) and covers the protocol's metrics that have a sampled
  estimator (recall, ndcg, average_precision) at K = N. With ``split =
  "holdout"`` and ``negatives > 0`` this is a second protocol that cannot be
  avoided: the sampling error describes a leave-one-out sampled evaluation,
  not the user's holdout, and the report's bottom line and the terminal say
  so (a warning; ``split = "last"`` gives one protocol throughout).
* **Correction advice is opt-in.** With ``[correction]`` the calibrated
  worlds' run also has a ``[debias]`` section (the protocol's metrics that are
  linear in the relevance, at K = N; the listed estimators; the world's own
  and Yang et al.'s fitted propensities) and the report advises which
  correction to report (:mod:`simrec.assess.correction`). Without it the
  worlds' run is unchanged, so an existing assessment folder still resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator

from simrec._validation import quote
from simrec.calibration.objective import THESIS_OBJECTIVES
from simrec.config.assess_cells import (
    CELLS,
    CalibratedCell,
    _calibrated_cell_problems,
    _known_cells,
    _preset_cells,
)
from simrec.config.assess_cost import assessment_work, calibrated_worlds_work, real_holdout_work
from simrec.config.base import (
    MaxUsers,
    SafeName,
    ScenarioError,
    Strict,
    check_safe_name,
    format_validation,
    no_repeats,
    problems_error,
    read_toml,
)
from simrec.config.budget import Budget
from simrec.config.cost import BYTES_PER_RATING, Work, file_bytes
from simrec.config.datasets import DatasetSpec
from simrec.config.debias import DebiasSpec
from simrec.config.estimators import ESTIMATOR_FAMILIES, EstimatorsSpec
from simrec.config.files import shipped_name
from simrec.config.recommenders import RecommenderSpec, recommender_problems
from simrec.config.run import METRIC_NAMES, EvaluationSpec, Scenario, content_digest
from simrec.config.significance import LOO_METRICS, SignificanceSpec, TestName
from simrec.config.sources import DatasetSource
from simrec.config.stress import MetricsSpec, SamplingSpec, StressScenario
from simrec.config.sweep import SweepSpec
from simrec.debias.harness import ESTIMATORS as DEBIAS_ESTIMATORS
from simrec.debias.harness import LINEAR_METRICS
from simrec.stress.harness import METRIC_FAMILIES, SCHEMES

__all__ = [
    "AssessmentSpec",
    "CalibrationSpec",
    "ProtocolSpec",
    "SimulationSpec",
    "AssessSamplingSpec",
    "CorrectionSpec",
    "Assessment",
    "CalibratedCell",
    "CELLS",
    "ASSESS_TESTS",
    "load_assessment",
    "QUICK_USERS",
    "QUICK_REPLICATES",
    "QUICK_REPEATS",
    "QUICK_BOOT",
    "QUICK_CALLS",
    "resolve_assessment_path",
    "shipped_assessments",
]

#: The paired tests the significance step reports (the two researchers report most).
ASSESS_TESTS: tuple[TestName, ...] = ("paired_t", "wilcoxon")

#: Metrics of the protocol that the sampled evaluation (step 4) covers.
SAMPLED_METRICS: tuple[str, ...] = tuple(METRIC_FAMILIES)


class CalibrationSpec(Strict):
    """``[calibration]``: reuse presets, or calibrate (GP search) with these settings."""

    presets: str | None = Field(default=None, min_length=1)
    #: The worlds considered (issue 24: the new worlds in an assessment): names of presets of the ``presets`` set
    #: (e.g. ``"clustered-pref-wide"``) or, when calibrating, cells ``<preference>-<sampler>`` of registered
    #: models (e.g. ``"clustered-pref"``); default the thesis's six, :data:`CELLS`.
    cells: list[str] | None = Field(default=None, min_length=1)
    worlds: int = Field(default=2, ge=1, description="best-fitting worlds used (at most the number of cells)")
    n_calls: int = Field(default=30, ge=1)
    n_initial: int = Field(default=10, ge=1)
    denoise_top: int = Field(default=3, ge=1)
    denoise_seeds: int = Field(default=3, ge=0)
    statistics: Literal["thesis", "authors_code"] = "thesis"

    @model_validator(mode="after")
    def _calls(self) -> CalibrationSpec:
        if self.n_initial > self.n_calls:
            raise ValueError(f"`n_initial` ({self.n_initial}) must not exceed `n_calls` ({self.n_calls})")
        if self.cells is not None:
            no_repeats(self, "cells")
            for c in self.cells:
                try:
                    check_safe_name(c)
                except ValueError as exc:
                    raise ValueError(f"`cells`: a cell's name {exc}; got {quote(c)}") from None
        if self.worlds > len(self.cell_names()):
            raise ValueError(
                f"`worlds` must be at most the number of cells considered ({len(self.cell_names())}); got {self.worlds}"
            )
        return self

    def cell_names(self) -> tuple[str, ...]:
        """The worlds considered: ``cells``, else the thesis's six (:data:`CELLS`)."""
        return tuple(self.cells) if self.cells else CELLS


class ProtocolSpec(Strict):
    """``[protocol]``: the user's evaluation protocol and algorithms."""

    split: Literal["holdout", "last"] = "holdout"
    test_fraction: float = Field(default=0.2, gt=0, lt=1)
    n: int = Field(default=10, ge=1, description="list length N; metrics at K = N")
    negatives: int = Field(default=0, ge=0, description="sampled negatives per user; 0 = full ranking")
    metrics: list[Literal[METRIC_NAMES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["recall", "ndcg"], min_length=1
    )
    pap_k: int = Field(default=10, ge=1)
    recommenders: list[RecommenderSpec] = Field(min_length=2)
    #: Evaluate a uniform sample of at most this many users, on the real data and in every world's replicate
    #: (:mod:`simrec.user_sample`); the algorithms train on every user. None: every user.
    max_users: MaxUsers | None = None

    @model_validator(mode="after")
    def _checks(self) -> ProtocolSpec:
        no_repeats(self, "metrics")
        if self.negatives == 1:
            raise ValueError("`negatives` must be 0 (full ranking) or >= 2; got 1")
        if self.split == "last" and "test_fraction" in self.model_fields_set:
            raise ValueError(
                "`test_fraction` is only used with split = 'holdout': with split = 'last' the real data and the "
                "calibrated worlds both hold out each user's latest item (the worlds in a uniformly random "
                f"consumption order), so remove test_fraction; got test_fraction = {self.test_fraction:g}"
            )
        return self


class SimulationSpec(Strict):
    """``[simulation]``: replicates of every calibrated world."""

    replicates: int = Field(default=5, ge=1)


class AssessSamplingSpec(Strict):
    """``[sampling]``: the sampled evaluation on the real data (step 4) and the estimator choice.

    ``max_rel_rmse`` and ``min_coverage`` are the recommendation rule's
    thresholds (:func:`simrec.assess.recommend_estimator`).
    """

    schemes: list[Literal[SCHEMES]] = Field(default_factory=lambda: ["hypergeometric"], min_length=1)  # type: ignore[valid-type]
    sizes: list[Annotated[int, Field(ge=2)]] = Field(default_factory=lambda: [50, 100, 500], min_length=1)
    repeats: int = Field(default=30, ge=2)
    estimators: list[Literal[ESTIMATOR_FAMILIES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(ESTIMATOR_FAMILIES), min_length=1
    )
    n_boot: int = Field(default=20, ge=0, description="bootstrap replicates per repeat (coverage); 0: none")
    confidence: float = Field(default=0.95, gt=0, lt=1)
    max_rel_rmse: float = Field(default=0.1, gt=0)
    min_coverage: float = Field(default=0.85, ge=0, le=1)

    @model_validator(mode="after")
    def _unique(self) -> AssessSamplingSpec:
        no_repeats(self, "schemes", "sizes", "estimators")
        return self


class CorrectionSpec(Strict):
    """``[correction]``: the MNAR corrections tried in the calibrated worlds and the advice's thresholds."""

    estimators: list[Literal[tuple(DEBIAS_ESTIMATORS)]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["naive", "ips", "snips", "dr", "resampled_skew", "resampled_wtd_h", "stratified"],
        min_length=1,
    )
    max_rel_bias: float = Field(default=0.1, gt=0)
    min_coverage: float = Field(default=0.85, ge=0, le=1)

    @model_validator(mode="after")
    def _naive(self) -> CorrectionSpec:
        no_repeats(self, "estimators")
        if "naive" not in self.estimators:
            raise ValueError("`estimators` must include 'naive' (the uncorrected number the advice compares with)")
        return self


class AssessmentSpec(Strict):
    """A validated assessment file (the parsed TOML)."""

    kind: Literal["assess"] = "assess"
    name: SafeName
    description: str = ""
    seed: int = Field(ge=0)
    dataset: DatasetSpec
    calibration: CalibrationSpec = Field(default_factory=CalibrationSpec)
    protocol: ProtocolSpec
    simulation: SimulationSpec = Field(default_factory=SimulationSpec)
    sampling: AssessSamplingSpec = Field(default_factory=AssessSamplingSpec)
    #: Advice on correcting the missing-data error (:mod:`simrec.assess.correction`); absent: not given.
    correction: CorrectionSpec | None = None

    def digest(self) -> str:
        return content_digest(self)

    def quick(self) -> AssessmentSpec:
        """The quick size of this assessment (``simrec assess --quick``): the same dataset, protocol and
        algorithms, with every size that only buys precision cut down (the users evaluated included).

        Decision (issue 28): a first look (does the file run, what the answer looks like) should take under
        2 minutes on a 2-core laptop, so ``--quick`` keeps what defines the question (the dataset, the
        algorithms, the protocol, the metrics, the seed) and shrinks the rest: the best-fitting world only
        (``calibration.worlds = 1``), :data:`QUICK_REPLICATES` replicates, :data:`QUICK_REPEATS`
        sampled-evaluation repeats at the protocol's own sample size only (the smallest of ``sampling.sizes``
        for a full-ranking protocol), at most :data:`QUICK_BOOT` bootstrap replicates, when the file calibrates
        :data:`QUICK_CALLS` calls without de-noising, and at most :data:`QUICK_USERS` evaluated users
        (``protocol.max_users``, or the file's own smaller sample).

        The user sample (:mod:`simrec.user_sample`) is applied identically on both sides: every world
        replicate and the real data's leave-one-out split evaluate a uniform sample of their users drawn from
        the data's own seed, while the algorithms train on every user (training on a sample would assess
        weaker algorithms; scoring is what costs: ItemKNN's per-user scoring was 80% of an ML-1M replicate).
        Its effect on the intervals: a mean over users stays unbiased for the full size's, its variance larger
        by about :math:`U / m` (intervals up to :math:`\\sqrt{U / m}` wider: 2.5x on ML-1M's 6,040 users, none
        on ML-100K's 943); the sampled-metric estimators and the significance tests answer for an evaluation
        of :math:`m` users (larger sampling errors, less power). Measured with ``--jobs 2``
        (``bench/bench_cost_model.py``, CPU of every process, load 2.6-3.5): ``ml1m-assess`` 135 s CPU (453 s
        serially before the user sample), predicted 74 s of wall on a quiet 2-core machine; ``ml100k-assess``
        50 s CPU, 32 s predicted. Its intervals are wide and the report says so (fewer than 30 simulated evaluations);
        its name gets ``-quick`` (its own default folder, never resumed into the full size's).
        """
        negatives = self.protocol.negatives
        sizes = [negatives] if negatives else [min(self.sampling.sizes)]
        calls = min(self.calibration.n_calls, QUICK_CALLS)
        max_users = min(self.protocol.max_users or QUICK_USERS, QUICK_USERS)
        return self.model_copy(
            update={
                "name": f"{self.name[:58]}-quick",  # still a safe name (<= 64 characters)
                "description": f"{self.description} (quick size)" if self.description else "quick size",
                "protocol": self.protocol.model_copy(update={"max_users": max_users}),
                "calibration": self.calibration.model_copy(
                    update={
                        "worlds": 1,
                        "n_calls": calls,
                        "n_initial": min(self.calibration.n_initial, calls),
                        "denoise_seeds": 0,
                    }
                ),
                "simulation": self.simulation.model_copy(
                    update={"replicates": min(self.simulation.replicates, QUICK_REPLICATES)}
                ),
                "sampling": self.sampling.model_copy(
                    update={
                        "sizes": sizes,
                        "repeats": min(self.sampling.repeats, QUICK_REPEATS),
                        "n_boot": min(self.sampling.n_boot, QUICK_BOOT),
                    }
                ),
            }
        )


#: ``--quick``'s sizes (:meth:`AssessmentSpec.quick`); QUICK_USERS: about ML-100K's users (943, all kept).
QUICK_USERS = 1000
QUICK_REPLICATES = 2
QUICK_REPEATS = 5
QUICK_BOOT = 5
QUICK_CALLS = 10


@dataclass(frozen=True)
class Assessment:
    """A validated assessment and what is derived from it (see :func:`load_assessment`).

    Attributes
    ----------
    spec : AssessmentSpec
    path : Path
        The file.
    data_path : Path
        Where the dataset is.
    n_users, n_items : int
        The dataset's sizes (as loaded, filters applied).
    cells : tuple of CalibratedCell or None
        The six calibrated cells from the named presets; None when the file
        asks for a calibration (they come from it).
    """

    spec: AssessmentSpec
    path: Path
    data_path: Path
    n_users: int
    n_items: int
    cells: tuple[CalibratedCell, ...] | None

    @property
    def sampled_metrics(self) -> list[str]:
        """The protocol's metrics with a sampled estimator (step 4), in the protocol's order."""
        return [m for m in self.spec.protocol.metrics if m in SAMPLED_METRICS]

    @property
    def sample_sizes(self) -> list[int]:
        """Sizes of the sampled evaluation: ``sampling.sizes`` and the protocol's ``negatives``, ascending."""
        neg = self.spec.protocol.negatives
        return sorted(set(self.spec.sampling.sizes) | ({neg} if neg else set()))

    @property
    def corrected_metrics(self) -> list[str]:
        """The protocol's metrics linear in the relevance (the corrections' metrics), in the protocol's order."""
        return [m for m in self.spec.protocol.metrics if m in LINEAR_METRICS]

    def best_cells(self, cells: tuple[CalibratedCell, ...] | None = None) -> tuple[CalibratedCell, ...]:
        """The ``calibration.worlds`` best-fitting cells (lowest :attr:`CalibratedCell.loss`; ties by cell order)."""
        cells = self.cells if cells is None else cells
        if cells is None:
            raise ValueError("no calibrated cells yet: the assessment calibrates first")
        order = sorted(range(len(cells)), key=lambda i: (cells[i].loss, i))
        return tuple(cells[i] for i in order[: self.spec.calibration.worlds])

    def run_scenario(self, cells: tuple[CalibratedCell, ...]) -> Scenario:
        """The run study's scenario: the user's algorithms and protocol in the given calibrated worlds."""
        sp, pr = self.spec, self.spec.protocol
        return Scenario(
            name=f"{sp.name}-worlds",
            seed=sp.seed,
            replicates=sp.simulation.replicates,
            population=cells[0].population,
            world=[c.world for c in cells],
            evaluation=EvaluationSpec(
                n=pr.n,
                # one protocol on both sides: the real data's split (module docstring)
                **({"split": "last"} if pr.split == "last" else {"test_fraction": pr.test_fraction}),
                metrics=list(pr.metrics),
                pap_k=pr.pap_k,
                recommenders=list(pr.recommenders),
                max_users=pr.max_users,
            ),
            debias=None
            if sp.correction is None
            else DebiasSpec(
                metrics=self.corrected_metrics,
                estimators=list(sp.correction.estimators),
                propensities=["world", "fitted"],
            ),
        )

    def significance_spec(self) -> SignificanceSpec | None:
        """The significance step's section at the user's protocol (:mod:`simrec.studies.assess_significance`).

        ``full`` for a full ranking, ``sampled_naive`` with the protocol's negatives otherwise (the metrics with
        a leave-one-out rank function); the paired t and Wilcoxon tests (:data:`ASSESS_TESTS`). None: fewer than
        two algorithms, or no metric the protocol can test.
        """
        pr = self.spec.protocol
        if len(pr.recommenders) < 2:
            return None
        metrics = list(pr.metrics)
        if pr.negatives:
            metrics = [m for m in metrics if m in LOO_METRICS]
            if not metrics:
                return None
            return SignificanceSpec(
                tests=list(ASSESS_TESTS), protocols=["sampled_naive"], metrics=metrics, negatives=pr.negatives
            )
        return SignificanceSpec(tests=list(ASSESS_TESTS), protocols=["full"], metrics=metrics)

    def stress_scenario(self) -> StressScenario:
        """The stress study's scenario: the protocol on the real data, exact and sampled, every estimator."""
        sp, pr, sa = self.spec, self.spec.protocol, self.spec.sampling
        ds = sp.dataset.model_dump(exclude_defaults=True)
        ds["path"] = str(self.data_path)
        curve = sorted({s for s in (10, 20, 50, 100, 200, 500, 1000, *self.sample_sizes) if 2 <= s <= self.n_items})
        return StressScenario(
            kind="stress",
            name=f"{sp.name}-sampling",
            seed=sp.seed,
            repeats=sa.repeats,
            source=DatasetSource(
                type="dataset",
                split="last" if pr.split == "last" else "random",
                recommenders=list(pr.recommenders),
                max_users=pr.max_users,
                **ds,
            ),
            sampling=SamplingSpec(
                schemes=list(sa.schemes), sizes=self.sample_sizes, adaptive_n_max=max(3200, max(self.sample_sizes))
            ),
            estimators=EstimatorsSpec(names=list(sa.estimators), n_boot=sa.n_boot, confidence=sa.confidence),
            metrics=MetricsSpec(names=self.sampled_metrics, k_max=pr.n, curve_k=pr.n, curve_sizes=curve),
        )

    def work(self) -> Work:
        """The assessment's work (:mod:`simrec.config.cost`), counted by :func:`~simrec.config.assess_cost.assessment_work`
        from the sub-studies' specs (the dataset's ratings from its file's size)."""
        pr, sp = self.spec.protocol, self.spec
        sig = self.significance_spec()
        n_users, n_items = float(self.n_users), float(self.n_items)
        n_pairs = file_bytes(self.data_path) / BYTES_PER_RATING
        real_holdout = (
            real_holdout_work(
                pr.recommenders,
                n_users=n_users,
                n_items=n_items,
                n_pairs=n_pairs,
                max_users=pr.max_users,
                test_fraction=pr.test_fraction,
            )
            if pr.split == "holdout"
            else None
        )
        if self.cells is not None:
            worlds = self.run_scenario(self.best_cells())
            return assessment_work(
                worlds=worlds,
                significance=sig,
                stress=self.stress_scenario(),
                n_users=n_users,
                n_items=n_items,
                n_pairs=n_pairs,
                real_holdout=real_holdout,
            )
        before = calibrated_worlds_work(
            pr.recommenders,
            sig,
            n_pairs=n_pairs,
            max_users=pr.max_users,
            test_fraction=pr.test_fraction,
            metrics=list(pr.metrics),
            tasks=float(sp.simulation.replicates * sp.calibration.worlds),
            n_users=n_users,
            n_items=n_items,
        )
        return assessment_work(
            worlds=None,
            significance=sig,
            stress=self.stress_scenario(),
            n_pairs=n_pairs,
            calibration=(self.sweep_spec(), str(self.path)),
            uncalibrated=before,
            n_users=n_users,
            n_items=n_items,
            real_holdout=real_holdout,
        )

    def sweep_spec(self) -> SweepSpec:
        """The calibration's sweep (when no presets are named): the cells' preference models x samplers on the
        dataset (the six by default), the thesis's objectives (the average loss chooses)."""
        sp, ca = self.spec, self.spec.calibration
        ds = sp.dataset.model_dump(exclude_defaults=True)
        ds["path"] = str(self.data_path)
        known = _known_cells()
        pairs = [known[c] for c in ca.cell_names() if c in known]
        return SweepSpec(
            preferences=list(dict.fromkeys(p for p, _ in pairs)),
            observations=list(dict.fromkeys(o for _, o in pairs)),
            name=f"{sp.name}-calibration",
            seed=sp.seed,
            n_calls=ca.n_calls,
            n_initial=ca.n_initial,
            objectives=list(THESIS_OBJECTIVES),
            denoise_top=ca.denoise_top,
            denoise_seeds=ca.denoise_seeds,
            statistics=ca.statistics,
            dataset=[DatasetSpec(**ds)],
        )


_SHIPPED = Path(__file__).resolve().parents[1] / "assessments"


def shipped_assessments() -> dict[str, Path]:
    """Assessment files shipped inside the package (``simrec/assessments/NAME.toml``), by name."""
    return {p.stem: p for p in sorted(_SHIPPED.glob("*.toml"))} if _SHIPPED.is_dir() else {}


def resolve_assessment_path(assessment: str | Path) -> Path:
    """An existing path as is; otherwise the shipped assessment of that name; ScenarioError if neither."""
    if Path(assessment).exists():
        return Path(assessment)
    shipped = shipped_assessments()
    name = shipped_name(assessment)
    if name in shipped:
        return shipped[name]
    raise ScenarioError(
        f"{assessment}: no such file, and no shipped assessment of that name (shipped: "
        f"{', '.join(sorted(shipped)) or 'none'})"
    )


def _dataset_sizes(spec: AssessmentSpec, data: Path, path: Path) -> tuple[int, int] | str:
    """The dataset's (n_users, n_items) as the assessment will load it, or the problem."""
    from simrec.datasets import DatasetError

    if not data.exists():
        return (
            f"dataset.path: dataset {spec.dataset.name!r} not found at {data}. Download it, then set "
            f"SIMREC_DATA to the folder holding {spec.dataset.name}/ or edit dataset.path (relative to "
            f"{path.resolve().parent})"
        )
    try:
        if spec.protocol.split == "last":
            inter, _ = spec.dataset.read_timestamped(data)
        else:
            inter = spec.dataset.read(data)
    except (DatasetError, TypeError, ValueError) as exc:
        return f"dataset: cannot load {data}: {exc}"
    return int(inter.n_users), int(inter.n_items)


def load_assessment(assessment: str | Path, *, budget: Budget | None = None, quick: bool = False) -> Assessment:
    """Read and validate an assessment file completely, before any work.

    Parameters
    ----------
    assessment : str or Path
        A TOML file, or the name of a shipped assessment (e.g. ``"ml100k-assess"``).
    budget : Budget, optional
        The memory the job may use (default: 75% of the machine's memory, one
        worker); the calibrated worlds, the sampled evaluation and a
        calibration are each checked against it (:mod:`simrec.config.budget`).
    quick : bool, default False
        Validate and return the file's quick size (:meth:`AssessmentSpec.quick`) instead.

    Raises
    ------
    ScenarioError
        Unreadable TOML, unknown keys, wrong types, impossible values,
        missing dataset, unknown presets, bad recommender parameters, N or
        sample sizes above the number of items, or a size over the budget;
        the message names the file and every offending key.
    """
    path = resolve_assessment_path(assessment)
    raw = read_toml(path)
    if raw.get("kind") != "assess":
        raise ScenarioError(
            f'{path}: not an assessment file (needs the top-level key kind = "assess"; got {quote(raw.get("kind"))})'
        )
    try:
        spec = AssessmentSpec.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(format_validation(path, exc, "assessment")) from None
    if quick:
        spec = spec.quick()
    problems = recommender_problems(
        spec.protocol.recommenders, "protocol.recommenders", truth=False, base=path.resolve().parent
    )
    if not any(m in SAMPLED_METRICS for m in spec.protocol.metrics):
        problems.append(
            f"protocol.metrics: the sampled evaluation needs at least one of {', '.join(SAMPLED_METRICS)}; "
            f"got {spec.protocol.metrics}"
        )
    if spec.correction is not None and not any(m in LINEAR_METRICS for m in spec.protocol.metrics):
        problems.append(
            f"correction: the corrections need a metric linear in the relevance among the protocol's "
            f"({', '.join(LINEAR_METRICS)}); got {spec.protocol.metrics}"
        )
    cells = None
    if spec.calibration.presets is not None:
        cells, more = _preset_cells(spec.calibration.presets, path, spec.calibration.cell_names())
        problems += more
    else:
        problems += _calibrated_cell_problems(spec.calibration.cell_names())
    data = spec.dataset.resolve(path)
    if problems:
        raise problems_error(path, problems, "assessment")
    sizes = _dataset_sizes(spec, data, path)
    if isinstance(sizes, str):
        raise problems_error(path, [sizes], "assessment")
    n_users, n_items = sizes
    a = Assessment(spec, path, data, n_users, n_items, cells)
    pr = spec.protocol
    if pr.n > n_items:
        problems.append(f"protocol.n: the list length must be <= the dataset's number of items ({n_items}); got {pr.n}")
    if "pap_at_k" in pr.metrics and pr.pap_k > n_items:
        problems.append(f"protocol.pap_k: must be <= the dataset's number of items ({n_items}); got {pr.pap_k}")
    big = [s for s in a.sample_sizes if s >= n_items]
    if big:
        problems.append(
            f"sampling.sizes / protocol.negatives: a sample of negatives must be smaller than the "
            f"dataset's number of items ({n_items}); got {quote(big)}"
        )
    run = None
    if cells is not None and not problems:
        run = a.run_scenario(a.best_cells())
        for i, w in enumerate(run.world):
            problems += [
                p.replace(f"world[{i}]", f"calibration.presets ({w.label})")
                for p in w.problems(run.population, f"world[{i}]")
            ]
        smallest = min(w.item_count(run.population) for w in run.world) if not problems else n_items
        if pr.n > smallest:
            problems.append(
                f"protocol.n: the list length must be <= the number of items of every calibrated world "
                f"(smallest: {smallest}); got {pr.n}"
            )
    if problems:
        raise problems_error(path, problems, "assessment")
    budget = budget or Budget()
    if run is not None:
        with_significance = run.model_copy(update={"significance": a.significance_spec()})
        budget.check(f"{path} (calibrated worlds)", with_significance.memory_needs())
    budget.check(
        f"{path} (sampled evaluation)",
        a.stress_scenario().memory_needs(n_candidates=float(n_items), n_users=float(n_users)),
    )
    if cells is None:
        budget.check(f"{path} (calibration)", a.sweep_spec().memory_needs())
    return a

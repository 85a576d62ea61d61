"""``simrec assess``: how wrong is *my* evaluation, on *my* data, for *my* algorithms?

An assessment folder (a :class:`~simrec.rundir.RunDir` of kind ``assess``)
holds the sub-runs of the studies it reuses, each resumable on its own:

1. **dataset** — :func:`simrec.datasets.describe` of the user's data
   (``dataset.csv``);
2. **calibration** — the six preference x observation models, from the named
   presets, or calibrated to the data by :func:`simrec.studies.calibrate_sweep`
   into ``calibration/``; the best-fitting ``calibration.worlds`` are used
   (``worlds.csv``);
3. **worlds** — the user's algorithms under the user's protocol in those
   worlds, against observed and true relevance: :func:`simrec.studies.run_scenario`
   into ``worlds/``;
4. **significance** — per pair of the user's algorithms, how often a
   significant paired test at the user's protocol is right in those worlds
   (``significance.csv``, warnings where "significant and wrong" is likely:
   :mod:`simrec.studies.assess_significance`);
5. **sampling** — the protocol on the real data, exact and sampled metrics,
   every estimator: :func:`simrec.studies.run_stress_scenario` into
   ``sampling/``;
6. **sim-to-real** — the user's algorithms on the real data vs in each
   calibrated world at the protocol (``sim_to_real.csv``,
   ``sim_to_real_orders.csv``; a warning where the worlds disagree with the
   data on the algorithms' order: :mod:`simrec.studies.assess_sim_to_real`,
   :mod:`simrec.assess.sim_to_real`); with a holdout it evaluates the real
   data's holdout into ``sim_to_real/``, with leave-last-out it reuses phase
   5's held-out ranks;
7. **report** — ``errors.csv`` (missing-data, sampling and total error per
   algorithm x metric, :mod:`simrec.assess.errors`), ``ranking.csv``
   (:mod:`simrec.assess.ranking`), ``estimators.csv`` and ``advice.csv``
   (:mod:`simrec.assess.advice`), with ``[correction]`` ``correction.csv`` and
   ``correction_advice.csv`` (which missing-data correction to report,
   :mod:`simrec.assess.correction`; also the report's check of it), ``headline.csv`` (values and the three
   errors side by side), ``bottom_line.json`` (the verdicts,
   :mod:`simrec.assess.bottom_line`), ``figures/*.png`` and ``report.html``
   (self-contained: the bottom line first, then the evidence;
   :mod:`simrec.assess.page`). The terminal prints the same bottom line.

Re-running the same command resumes: finished calibration searches,
replicates and stress cells are kept (each sub-run's own shards).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simrec._figures import drawing
from simrec._io import atomic_write, write_json
from simrec.assess.advice import best_estimators, recommend
from simrec.assess.bottom_line import BottomLine, ReportFacts, bottom_line
from simrec.assess.correction import correction_advice, correction_candidates, correction_finding
from simrec.assess.errors import headline_table, metric_values, missing_data_errors, sampling_errors, total_errors
from simrec.assess.figures import error_figure, estimator_figure, ranking_figure, sim_to_real_figure
from simrec.assess.page import report_page
from simrec.assess.ranking import ranking_agreement
from simrec.assess.significance import significance_finding
from simrec.assess.sim_to_real import sim_to_real_finding
from simrec.config.assess import Assessment
from simrec.config.assess_cells import CalibratedCell, cell_from_tables
from simrec.config.base import read_toml
from simrec.config.budget import Budget
from simrec.config.run import Scenario
from simrec.interactions import Interactions
from simrec.rundir import RunDir
from simrec.studies.assess_significance import assess_significance
from simrec.studies.assess_sim_to_real import AssessSimToReal, assess_sim_to_real
from simrec.studies.calibrate import DatasetLoadError, calibrate_sweep
from simrec.studies.run import RunOutcome, run_scenario
from simrec.studies.stress import StressOutcome, run_stress_scenario
from simrec.tasks import Backend, SerialBackend

__all__ = ["AssessOutcome", "run_assessment", "PHASES"]

#: The phases announced through ``on_phase`` (in order).
PHASES = ("dataset", "calibration", "worlds", "significance", "sampling", "sim-to-real", "report")

#: ``on_phase(phase, message)``.
_Say = Callable[[str, str], None]


@dataclass(frozen=True)
class AssessOutcome:
    """What an assessment produced (the tables are also in the folder as CSV)."""

    out: Path
    errors: pd.DataFrame
    ranking: pd.DataFrame
    advice: pd.DataFrame
    worlds: pd.DataFrame
    computed: int
    reused: int
    seconds: float
    warnings: tuple[str, ...] = ()
    #: Figures that could not be drawn, one line each (the tables are complete; :mod:`simrec._figures`).
    figure_failures: tuple[str, ...] = ()
    #: The report's bottom line (the page opens with it, the terminal prints it; ``bottom_line.json``).
    bottom_line: BottomLine | None = None


def _cells_from_sweep(presets: dict[str, Path], dataset: str, names: tuple[str, ...]) -> tuple[CalibratedCell, ...]:
    return tuple(
        cell_from_tables(c, read_toml(presets[f"{dataset}/{c}"]), f"calibration/{dataset}/{c}")
        for c in names
        if f"{dataset}/{c}" in presets
    )


def _worlds_table(cells: tuple[CalibratedCell, ...], chosen: tuple[CalibratedCell, ...]) -> pd.DataFrame:
    names = {c.cell for c in chosen}
    rows = []
    for c in cells:
        pref = c.world.preference.model_dump(exclude_defaults=True)
        obs = c.world.observation
        params = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in pref.items())
        prof = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in obs.profile.model_dump(exclude_defaults=True).items()
        )
        rows.append(
            {
                "cell": c.cell,
                "loss": c.loss,
                "used": c.cell in names,
                "preference": params,
                "observation": f"{obs.sampler.model_dump(exclude_defaults=True)}; {prof}",
                **{k: v for k, v in c.fit.items() if k.startswith("kl_")},
            }
        )
    return pd.DataFrame(rows).sort_values("loss", kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class _Report:
    """The report's tables (``errors.csv``, ``headline.csv``, ``ranking.csv``, ``estimators.csv``, ``advice.csv``)."""

    errors: pd.DataFrame
    headline: pd.DataFrame
    ranking: pd.DataFrame
    best: pd.DataFrame
    advice: pd.DataFrame
    bottom: BottomLine | None = None


def _dataset_phase(rd: RunDir, assessment: Assessment) -> tuple[Interactions, pd.DataFrame]:
    """Phase 1: the user's dataset, read once, and its description (``dataset.csv``)."""
    from simrec.datasets import DatasetError, describe

    spec = assessment.spec
    try:
        inter = spec.dataset.read(assessment.data_path)
    except (DatasetError, TypeError) as exc:
        raise DatasetLoadError(f"{assessment.path}: dataset ({spec.dataset.name}): {exc}") from None
    summary = describe(inter, name=spec.dataset.name).to_dict()
    flat = {k: v for k, v in summary.items() if not isinstance(v, dict)}
    for part in ("activity", "popularity"):
        flat.update({f"{part}_{k}": v for k, v in summary[part].items()})
    dataset = pd.DataFrame({"statistic": list(flat), "value": [str(v) for v in flat.values()]})
    rd.write_csv("dataset.csv", dataset)
    return inter, dataset


def _calibration_phase(
    rd: RunDir, assessment: Assessment, inter: Interactions, backend: Backend, figures: bool, say: _Say
) -> tuple[CalibratedCell, ...]:
    """Phase 2: the six calibrated models, from the named presets or calibrated to the dataset into ``calibration/``."""
    spec = assessment.spec
    if assessment.cells is not None:
        say("calibration", f"reusing presets {spec.calibration.presets!r}")
        return assessment.cells
    sweep = assessment.sweep_spec()
    say(
        "calibration",
        f"calibrating {len(sweep.cells())} cells to {spec.dataset.name} ({sweep.n_calls} calls per "
        f"search) into {rd.path('calibration')}",
    )
    result = calibrate_sweep(
        sweep,
        assessment.path,
        rd.path("calibration"),
        backend=backend,
        figures=figures,
        on_cell=lambda c: say("calibration", f"{c.cell} {c.objective}: best {c.best.value:.4g} ({c.n_trials} trials)"),
        data=[inter],
    )
    return _cells_from_sweep(result.presets, spec.dataset.name, spec.calibration.cell_names())


def _worlds_scenario(assessment: Assessment, chosen: tuple[CalibratedCell, ...], budget: Budget) -> Scenario:
    """The run study's scenario in the ``chosen`` worlds.

    Worlds from presets were validated and sized with the assessment
    (:func:`~simrec.config.assess.load_assessment`); worlds chosen by this
    run's calibration exist only now, so they are validated and sized here,
    once, before any of their tasks runs.
    """
    scenario = assessment.run_scenario(chosen)
    if assessment.cells is None:
        from simrec.config.base import problems_error

        problems = [p for i, w in enumerate(scenario.world) for p in w.problems(scenario.population, f"world[{i}]")]
        if problems:
            raise problems_error(assessment.path, problems, "assessment (calibrated worlds)")
        with_significance = scenario.model_copy(update={"significance": assessment.significance_spec()})
        budget.check(f"{assessment.path} (calibrated worlds)", with_significance.memory_needs())
    return scenario


def _worlds_phase(
    rd: RunDir, assessment: Assessment, chosen: tuple[CalibratedCell, ...], scenario: Scenario, say: _Say, sub: dict
) -> RunOutcome:
    """Phase 3: the user's algorithms and protocol in the ``chosen`` worlds (``simrec run`` into ``worlds/``)."""
    say(
        "worlds",
        f"{len(chosen)} calibrated world(s) ({', '.join(c.cell for c in chosen)}) x "
        f"{assessment.spec.simulation.replicates} replicate(s)",
    )
    return run_scenario(scenario, assessment.path, rd.path("worlds"), **sub)


def _sampling_phase(rd: RunDir, assessment: Assessment, say: _Say, sub: dict) -> StressOutcome:
    """Phase 4: the protocol on the real data, exact and sampled, every estimator (``simrec stress`` into
    ``sampling/``)."""
    sc = assessment.stress_scenario()
    say(
        "sampling",
        f"sampled metrics on {assessment.spec.dataset.name}: {len(sc.sampling.schemes)} scheme(s) x "
        f"sizes {sc.sampling.sizes} x {sc.repeats} repeats, every estimator",
    )
    return run_stress_scenario(sc, assessment.path, rd.path("sampling"), **sub)


def _report_tables(
    assessment: Assessment, run: RunOutcome, stress: StressOutcome, coverage: pd.DataFrame | None
) -> _Report:
    """Phase 5's tables: missing-data, sampling and total errors, the ranking's agreement, the estimators' advice."""
    pr, sa = assessment.spec.protocol, assessment.spec.sampling
    best = best_estimators(stress.estimates, coverage, k=pr.n, min_coverage=sa.min_coverage)
    advice = recommend(best, assessment.sampled_metrics, max_rel_rmse=sa.max_rel_rmse)
    missing = missing_data_errors(run.results, level=sa.confidence)
    sampling = sampling_errors(stress.estimates, best, k=pr.n, n=pr.negatives or None, level=sa.confidence)
    total = total_errors(missing, sampling, level=sa.confidence)
    errors = pd.concat(
        [
            missing.assign(component="missing data"),
            sampling.assign(component="sampling"),
            total.assign(component="total"),
        ],
        ignore_index=True,
    )
    errors = errors[["recommender", "metric", "component", "source", "mean", "sd", "lower", "upper", "n"]]
    ranking = ranking_agreement(run.results, level=sa.confidence)
    return _Report(errors, headline_table(errors, metric_values(run.results)), ranking, best, advice)


def _report_figures(
    rd: RunDir,
    assessment: Assessment,
    t: _Report,
    stress: StressOutcome,
    failed: list[str],
    s2r: AssessSimToReal | None = None,
) -> dict[str, bytes]:
    """The report's figures (``figures/*.png``), as PNG bytes for the page; a failure appended to ``failed``."""
    pr, sa = assessment.spec.protocol, assessment.spec.sampling
    pooled = t.errors[(t.errors["source"] == "all worlds") | (t.errors["component"] != "missing data")]
    pngs: dict[str, bytes] = {}
    draws: list[tuple[str, Callable[[], bytes]]] = [
        ("errors", lambda: error_figure(pooled, pr.n)),
        ("ranking", lambda: ranking_figure(t.ranking, pr.n)),
        ("estimators", lambda: estimator_figure(t.best, stress.estimates, k=pr.n, max_rel_rmse=sa.max_rel_rmse)),
    ]
    if s2r is not None:
        values = s2r.values
        draws.append(("sim_to_real", lambda: sim_to_real_figure(values, pr.n)))
    for name, draw in draws:
        with drawing(failed, f"report figure {name}"):
            pngs[name] = draw()
    for name, png in pngs.items():

        def write(p: Path, b: bytes = png) -> int:
            return p.write_bytes(b)

        atomic_write(rd.path(f"figures/{name}.png"), write)
    return pngs


def _correction_checks(rd: RunDir, assessment: Assessment) -> dict:
    """With ``[correction]``: ``correction.csv``, ``correction_advice.csv`` and the report's check of them."""
    spec = assessment.spec.correction
    if spec is None:
        return {}
    # the worlds' run had a [debias] section (Assessment.run_scenario)
    candidates = correction_candidates(
        pd.read_csv(rd.path("worlds") / "debias_summary.csv"), pd.read_csv(rd.path("worlds") / "debias_order.csv")
    )
    fix = correction_advice(candidates, max_rel_bias=spec.max_rel_bias, min_coverage=spec.min_coverage)
    rd.write_csv("correction.csv", candidates)
    rd.write_csv("correction_advice.csv", fix)
    return {"missing_data_correction": correction_finding(fix, candidates, assessment.spec.protocol.n)}


def _report_phase(
    rd: RunDir,
    assessment: Assessment,
    chosen: tuple[CalibratedCell, ...],
    run: RunOutcome,
    stress: StressOutcome,
    dataset: pd.DataFrame,
    worlds: pd.DataFrame,
    failed: list[str],
    significance: pd.DataFrame,
    s2r: AssessSimToReal | None = None,
) -> _Report:
    """Phase 7: the tables, the bottom line, figures and ``report.html`` (a figure's failure appended to ``failed``).

    ``significance`` is ``significance.csv`` (its finding is the bottom line's ``significance`` check); ``s2r``
    the sim-to-real check's tables (its finding the ``sim_to_real`` check; None: not made).
    """
    coverage_path = rd.path("sampling") / "coverage.csv"
    t = _report_tables(assessment, run, stress, pd.read_csv(coverage_path) if coverage_path.exists() else None)
    facts = _report_facts(assessment, chosen, tuple(dict.fromkeys(run.results["recommender"])))
    checks = {
        "sim_to_real": None
        if s2r is None
        else sim_to_real_finding(
            s2r.values,
            s2r.orders,
            n=facts.n,
            protocol=s2r.protocol.label(),
            source=s2r.source,
            not_compared=s2r.not_compared,
            real_users=s2r.real_users,
            confidence=assessment.spec.sampling.confidence,
        ),
        "significance": significance_finding(significance, facts.n),
        **_correction_checks(rd, assessment),
    }
    bottom = bottom_line(facts, t.headline, t.ranking, t.best, t.advice, checks)
    rd.write_csv("errors.csv", t.errors)
    rd.write_csv("headline.csv", t.headline)
    rd.write_csv("ranking.csv", t.ranking)
    rd.write_csv("estimators.csv", t.best)
    rd.write_csv("advice.csv", t.advice)
    write_json(rd.path("bottom_line.json"), bottom.to_dict())  # the bottom line for machines (a data hook)
    pngs = _report_figures(rd, assessment, t, stress, failed, s2r)
    page = report_page(
        bottom,
        dataset=dataset,
        worlds=worlds,
        headline=t.headline,
        errors=t.errors,
        ranking=t.ranking,
        best=t.best,
        advice=t.advice,
        pngs=pngs,
    )
    rd.write_text("report.html", page)
    return _Report(t.errors, t.headline, t.ranking, t.best, t.advice, bottom)


def run_assessment(
    assessment: Assessment,
    out: str | Path,
    *,
    backend: Backend | None = None,
    progress: bool = True,
    figures: bool = True,
    budget: Budget | None = None,
    on_phase: Callable[[str, str], None] | None = None,
) -> AssessOutcome:
    """Run every phase of an assessment into ``out``, resuming (see the module docstring).

    Parameters
    ----------
    assessment : Assessment
        Validated (:func:`simrec.config.assess.load_assessment`).
    out : folder
    backend : simrec.tasks.Backend, default SerialBackend()
    progress : bool, default True
        The sub-studies' progress bars.
    figures : bool, default True
        Also the sub-studies' own figures (the report's figures are always drawn).
    budget : Budget, optional
        Checks the calibrated worlds' run once a calibration has chosen them
        (presets are checked at validation); gives the generators' guard.
    on_phase : callable(phase, message), optional
        Called as each phase starts (:data:`PHASES`).

    Raises
    ------
    simrec.rundir.RunDirError, simrec.tasks.TaskError, simrec.config.ScenarioError
        (a calibrated world too large for ``budget``), DatasetLoadError.
    """
    t0 = time.perf_counter()
    backend = SerialBackend() if backend is None else backend
    budget = budget or Budget()
    say = on_phase or (lambda phase, message: None)
    spec = assessment.spec
    manifest = {
        "seed": spec.seed,
        "data": str(assessment.data_path),
        "assessment_content": spec.model_dump(mode="json"),
    }
    with RunDir.open(
        out, kind="assess", name=spec.name, digest=spec.digest(), source=assessment.path, manifest=manifest
    ) as rd:
        say("dataset", f"describing {assessment.data_path}")
        inter, dataset = _dataset_phase(rd, assessment)
        cells = _calibration_phase(rd, assessment, inter, backend, figures, say)
        chosen = assessment.best_cells(cells)
        worlds = _worlds_table(cells, chosen)
        rd.write_csv("worlds.csv", worlds)
        sub = {"backend": backend, "progress": progress, "figures": figures, "max_pairs": budget.max_pairs}
        scenario = _worlds_scenario(assessment, chosen, budget)
        run = _worlds_phase(rd, assessment, chosen, scenario, say, sub)
        say("significance", "paired tests between the algorithms, against the worlds' truth")
        sig = assess_significance(rd, assessment, scenario, backend, progress, budget.max_pairs)
        stress = _sampling_phase(rd, assessment, say, sub)
        say(
            "sim-to-real",
            "your algorithms on your data vs in the calibrated worlds, at your protocol"
            + (" (training them on your data's holdout)" if spec.protocol.split == "holdout" else ""),
        )
        s2r = assess_sim_to_real(rd, assessment, run, stress, backend, progress)
        say("report", f"tables and report into {rd.path('report.html')}")
        failed = [f"worlds/ {f}" for f in run.figure_failures] + [f"sampling/ {f}" for f in stress.figure_failures]
        report = _report_phase(rd, assessment, chosen, run, stress, dataset, worlds, failed, sig.table, s2r)
        computed, reused = run.computed + stress.computed, run.reused + stress.reused
        if s2r is not None:
            computed, reused = computed + s2r.computed, reused + s2r.reused
        seconds = time.perf_counter() - t0
        rd.complete(
            tasks_computed=computed,
            tasks_reused=reused,
            worlds=[c.cell for c in chosen],
            timings={"total_seconds": round(seconds, 3), "backend": backend.name, "workers": backend.n_workers},
            **({"figures_failed": failed} if failed else {}),
        )
    return AssessOutcome(
        Path(out),
        report.errors,
        report.ranking,
        report.advice,
        worlds,
        computed,
        reused,
        seconds,
        (*sig.warnings, *stress.warnings),
        tuple(failed),
        bottom_line=report.bottom,
    )


def _report_facts(a: Assessment, chosen: tuple[CalibratedCell, ...], algorithms: tuple[str, ...]) -> ReportFacts:
    """The assessment in the report's terms (:class:`simrec.assess.bottom_line.ReportFacts`)."""
    spec, pr, sa = a.spec, a.spec.protocol, a.spec.sampling
    split = (
        "leave-last-out (in the worlds: a uniformly random consumption order)"
        if pr.split == "last"
        else f"holdout of {pr.test_fraction:g} of each user's items"
    )
    ranking = "every item ranked (full ranking)" if not pr.negatives else f"{pr.negatives} sampled negatives per user"
    if pr.max_users is not None and pr.max_users < a.n_users:  # the user sample (simrec.user_sample)
        ranking += f", a uniform sample of {pr.max_users:,} of the {a.n_users:,} users evaluated"
    return ReportFacts(
        name=spec.name,
        description=spec.description,
        dataset=spec.dataset.name,
        algorithms=algorithms,
        protocol=f"{split}, lists of N = {pr.n}, {ranking}",
        n=pr.n,
        negatives=pr.negatives,
        metrics=tuple(pr.metrics),
        sampled_metrics=tuple(a.sampled_metrics),
        replicates=spec.simulation.replicates,
        worlds=tuple(c.cell for c in chosen),
        confidence=sa.confidence,
        min_coverage=sa.min_coverage,
        max_rel_rmse=sa.max_rel_rmse,
        split=pr.split,
    )

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
4. **sampling** — the protocol on the real data, exact and sampled metrics,
   every estimator: :func:`simrec.studies.run_stress_scenario` into
   ``sampling/``;
5. **report** — ``errors.csv`` (missing-data, sampling and total error per
   algorithm x metric, :mod:`simrec.assess.errors`), ``ranking.csv``
   (:mod:`simrec.assess.ranking`), ``estimators.csv`` and ``advice.csv``
   (:mod:`simrec.assess.advice`), ``figures/*.png`` and ``report.html``
   (self-contained, :mod:`simrec.assess.html`).

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
from simrec._io import atomic_write
from simrec.assess.advice import EXCLUDED_ESTIMATORS, best_estimators, recommend
from simrec.assess.cli_text import interval_fails, known_to_fail_note
from simrec.assess.errors import missing_data_errors, sampling_errors, total_errors
from simrec.assess.figures import error_figure, estimator_figure, ranking_figure
from simrec.assess.html import Section, figure_html, note_html, render_page, table_html
from simrec.assess.ranking import ranking_agreement
from simrec.config.assess import Assessment, CalibratedCell, cell_from_tables
from simrec.config.base import read_toml
from simrec.config.budget import Budget
from simrec.rundir import RunDir
from simrec.studies.calibrate import DatasetLoadError, calibrate_sweep
from simrec.studies.run import run_scenario
from simrec.studies.stress import run_stress_scenario
from simrec.tasks import Backend, SerialBackend

__all__ = ["AssessOutcome", "run_assessment", "PHASES"]

#: The phases announced through ``on_phase`` (in order).
PHASES = ("dataset", "calibration", "worlds", "sampling", "report")


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


def _cells_from_sweep(presets: dict[str, Path], dataset: str) -> tuple[CalibratedCell, ...]:
    from simrec.config.assess import CELLS

    return tuple(
        cell_from_tables(c, read_toml(presets[f"{dataset}/{c}"]), f"calibration/{dataset}/{c}")
        for c in CELLS
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
    spec, pr = assessment.spec, assessment.spec.protocol
    computed = reused = 0
    warnings: list[str] = []
    with RunDir.open(
        out,
        kind="assess",
        name=spec.name,
        digest=spec.digest(),
        source=assessment.path,
        manifest={
            "seed": spec.seed,
            "data": str(assessment.data_path),
            "assessment_content": spec.model_dump(mode="json"),
        },
    ) as rd:
        # 1. dataset
        say("dataset", f"describing {assessment.data_path}")
        from simrec.datasets import DatasetError, describe

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

        # 2. calibration
        if assessment.cells is not None:
            say("calibration", f"reusing presets {spec.calibration.presets!r}")
            cells = assessment.cells
        else:
            sweep = assessment.sweep_spec()
            say(
                "calibration",
                f"calibrating the six models to {spec.dataset.name} ({sweep.n_calls} calls per "
                f"search) into {rd.path('calibration')}",
            )
            result = calibrate_sweep(
                sweep,
                assessment.path,
                rd.path("calibration"),
                backend=backend,
                figures=figures,
                on_cell=lambda c: say(
                    "calibration", f"{c.cell} {c.objective}: best {c.best.value:.4g} ({c.n_trials} trials)"
                ),
            )
            cells = _cells_from_sweep(result.presets, spec.dataset.name)
        chosen = assessment.best_cells(cells)
        worlds = _worlds_table(cells, chosen)
        rd.write_csv("worlds.csv", worlds)
        scenario = assessment.run_scenario(chosen)
        if assessment.cells is None:  # worlds chosen by the calibration: validate and size them now
            from simrec.config.base import problems_error

            problems = [p for i, w in enumerate(scenario.world) for p in w.problems(scenario.population, f"world[{i}]")]
            if problems:
                raise problems_error(assessment.path, problems, "assessment (calibrated worlds)")
            budget.check(f"{assessment.path} (calibrated worlds)", scenario.memory_needs())

        # 3. the algorithms in the calibrated worlds
        say(
            "worlds",
            f"{len(chosen)} calibrated world(s) ({', '.join(c.cell for c in chosen)}) x "
            f"{spec.simulation.replicates} replicate(s)",
        )
        run = run_scenario(
            scenario,
            assessment.path,
            rd.path("worlds"),
            backend=backend,
            progress=progress,
            figures=figures,
            max_pairs=budget.max_pairs,
        )
        computed, reused = computed + run.computed, reused + run.reused

        # 4. the protocol on the real data, sampled and exact
        stress_sc = assessment.stress_scenario()
        say(
            "sampling",
            f"sampled metrics on {spec.dataset.name}: {len(stress_sc.sampling.schemes)} scheme(s) x "
            f"sizes {stress_sc.sampling.sizes} x {stress_sc.repeats} repeats, every estimator",
        )
        stress = run_stress_scenario(
            stress_sc,
            assessment.path,
            rd.path("sampling"),
            backend=backend,
            progress=progress,
            figures=figures,
            max_pairs=budget.max_pairs,
        )
        computed, reused = computed + stress.computed, reused + stress.reused
        warnings += list(stress.warnings)

        # 5. report
        say("report", f"tables and report into {rd.path('report.html')}")
        coverage_path = rd.path("sampling") / "coverage.csv"
        coverage = pd.read_csv(coverage_path) if coverage_path.exists() else None
        sa = spec.sampling
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
        headline = _headline(errors)
        rd.write_csv("errors.csv", errors)
        rd.write_csv("headline.csv", headline)
        rd.write_csv("ranking.csv", ranking)
        rd.write_csv("estimators.csv", best)
        rd.write_csv("advice.csv", advice)
        pooled = errors[(errors["source"] == "all worlds") | (errors["component"] != "missing data")]
        failed = [f"worlds/ {f}" for f in run.figure_failures] + [f"sampling/ {f}" for f in stress.figure_failures]
        pngs: dict[str, bytes] = {}
        for name, draw in (
            ("errors", lambda: error_figure(pooled)),
            ("ranking", lambda: ranking_figure(ranking)),
            ("estimators", lambda: estimator_figure(best, stress.estimates, k=pr.n, max_rel_rmse=sa.max_rel_rmse)),
        ):
            with drawing(failed, f"report figure {name}"):
                pngs[name] = draw()
        for name, png in pngs.items():
            atomic_write(rd.path(f"figures/{name}.png"), lambda p, b=png: p.write_bytes(b))
        page = _page(assessment, dataset, worlds, headline, errors, ranking, best, advice, pngs)
        rd.write_text("report.html", page)
        seconds = time.perf_counter() - t0
        rd.complete(
            tasks_computed=computed,
            tasks_reused=reused,
            worlds=[c.cell for c in chosen],
            timings={"total_seconds": round(seconds, 3), "backend": backend.name, "workers": backend.n_workers},
            **({"figures_failed": failed} if failed else {}),
        )
    return AssessOutcome(
        Path(out), errors, ranking, advice, worlds, computed, reused, seconds, tuple(warnings), tuple(failed)
    )


def _headline(errors: pd.DataFrame) -> pd.DataFrame:
    """One row per algorithm x metric: the three pooled errors and their intervals side by side."""
    pooled = errors[(errors["source"] == "all worlds") | (errors["component"] != "missing data")]
    wide = pooled.pivot_table(
        index=["recommender", "metric"],
        columns="component",
        values=["mean", "lower", "upper"],
        aggfunc="first",
        sort=False,
        dropna=False,
    )
    out = pd.DataFrame(index=wide.index)
    for comp, short in (("missing data", "missing"), ("sampling", "sampling"), ("total", "total")):
        for stat in ("mean", "lower", "upper"):
            out[f"{short}_{stat}"] = wide[(stat, comp)] if (stat, comp) in wide.columns else float("nan")
    return out.reset_index()


def _page(a: Assessment, dataset, worlds, headline, errors, ranking, best, advice, pngs) -> str:
    spec, pr, sa = a.spec, a.spec.protocol, a.spec.sampling
    algos = ", ".join(dict.fromkeys(headline["recommender"]))
    protocol = (
        f"{'leave-last-out' if pr.split == 'last' else f'holdout of {pr.test_fraction:g} of each user' + chr(39) + 's items'}"
        f", lists of N = {pr.n}, {'full ranking' if not pr.negatives else f'{pr.negatives} sampled negatives'}"
        f", metrics {', '.join(pr.metrics)} at K = N"
    )
    level = f"{100 * sa.confidence:g}%"
    lines = []
    for _, r in advice.iterrows():
        if r["report"] == "sampled":
            mark = " Its bootstrap interval: coverage known to fail (*)." if interval_fails(r) else ""
            lines.append(
                f"{r['metric']}@{pr.n}: sample n = {int(r['n'])} ({r['scheme']}) and report {r['estimator']} "
                f"(worst relative RMSE {r['worst_rel_rmse']:.3g}).{mark}"
            )
        else:
            lines.append(f"{r['metric']}@{pr.n}: report the full-ranking metric; {r['reason']}.")
    flagged = [str(r["estimator"]) for _, r in best.iterrows() if interval_fails(r)]
    footnote = [note_html(f"(*) {known_to_fail_note(flagged)}")] if flagged else []
    sections = [
        Section(
            "What this assesses",
            [
                f"Algorithms: {algos}. Protocol: {protocol}.",
                "Missing-data error = metric on the observed test items − metric on the users' true preferences, "
                f"from {spec.simulation.replicates} replicate(s) of each best-fitting calibrated world (Tian 2019). "
                "Sampling error = sampled estimate − exact metric on the real data, with the estimator chosen below "
                "(Krichene & Rendle 2020; Li 2020); 0 for a full-ranking protocol. Total = their sum. Intervals: "
                f"{level} prediction intervals for one evaluation, mean ± z·sd (the total adds the two variances, "
                "assuming independence).",
            ],
            [
                table_html(headline, "headline", "Pooled errors per algorithm and metric (mean, interval)"),
                figure_html(pngs.get("errors"), "Missing-data, sampling and total error per algorithm and metric"),
            ],
        ),
        Section(
            "Is the observed ranking of the algorithms the true one?",
            [
                "Share of simulated evaluations (replicates x worlds) in which the algorithms ordered by the observed "
                "metric are in the same order as by the true metric (ties must match ties), with a Wilson "
                f"{level} interval.",
            ],
            [
                table_html(ranking, "ranking"),
                figure_html(pngs.get("ranking"), "Probability that the observed ranking is the true one"),
            ],
        ),
        Section(
            "Which estimator and sample size to report",
            [
                f"Rule: at K = N = {pr.n}, leaving out LS ({', '.join(EXCLUDED_ESTIMATORS)}), an estimator's error is its "
                "worst relative RMSE over the algorithms; it is acceptable when its bootstrap interval covered the exact "
                f"metric in at least {sa.min_coverage:g} of the repeats for every algorithm (every estimator is "
                "acceptable when intervals were not computed, n_boot = 0). At each sample size the best acceptable "
                "estimator is chosen; the recommendation is the smallest size whose best estimator has worst relative "
                f"RMSE <= {sa.max_rel_rmse:g}, else the full ranking. The column coverage_known_to_fail marks "
                "estimators whose bootstrap interval is known not to cover the metric (a bias that does not shrink "
                "with the number of users, which the interval ignores).",
                *lines,
            ],
            [
                table_html(advice, "advice"),
                table_html(best, "estimators", "Best estimator per metric and sample size"),
                *footnote,
                figure_html(pngs.get("estimators"), "Worst relative RMSE vs sample size"),
            ],
        ),
        Section(
            "Calibrated worlds",
            [
                f"The six preference x observation models fitted to {spec.dataset.name}, by fit (average relative loss "
                f"over the four key statistics; lower is better); the {spec.calibration.worlds} best are used.",
            ],
            [table_html(worlds, "worlds")],
        ),
        Section("Dataset", [], [table_html(dataset, "dataset")]),
        Section("All error rows", ["Per world as well as pooled ('all worlds')."], [table_html(errors, "errors")]),
    ]
    return render_page(f"simrec assessment: {spec.name}", spec.description or f"dataset {spec.dataset.name}", sections)

"""``simrec stress``: a stress scenario's tasks into a run directory.

Same run directory (:mod:`simrec.rundir`) and sharded phases
(:mod:`simrec.studies.phases`) as ``simrec run``, over the validated scenario:

1. **ranks** — one task per recommender (dataset and simulation sources): the
   data and its leave-one-out split are rebuilt in each task from seed
   ``task_seed(seed, 0)`` (identical in every task), the recommender scores
   with ``task_seed(seed, 1, j)``; each finished task writes
   ``DIR/ranks/<j>.npz``. A ranks file is read once.
2. **stress** — one task per (recommender j, scheme s, size i) with seed
   ``task_seed(seed, 2, j, s, i)``: :func:`~simrec.stress.harness.run_stress`,
   written to ``DIR/tasks/<j>__<scheme>__n<n>.npz`` as it finishes (the bar
   counts repeats).
3. **user sampling** (with ``[user_sampling]``) — one task per user-sample
   size, ``DIR/user_sampling/m<size>.npz`` (:mod:`simrec.studies.user_sampling`).
4. **tables** — ``estimates.parquet`` (every cell), ``summary.csv`` (K in
   {1, 5, 10, 20, 50}), ``ordering.csv``, ``winners.csv``, ``hit_ratio.csv``,
   ``expected_vs_n.csv``, ``decomposition.csv`` (simulations), ``coverage.csv``
   (interval coverage and bias, with ``[estimators] n_boot > 0``),
   ``mapping_a.csv`` (beta@P's fitted a, Li & Jin Table 2), ``relative_error.csv``
   (dissertation Tables 3-4), ``mapping_errors.csv`` (Li & Jin Table 7),
   ``user_sampling*.csv`` (dissertation Tables 6-7), ``ranks.parquet`` (the
   held-out ranks, itself a valid ranks file), ``figures/*.png`` and
   ``manifest.json`` (scenario, seed, digest, versions, sizes, timings); the
   warnings are :mod:`simrec.studies.stress_notes`'.

Results depend only on the scenario: the same numbers come out on every
backend, in any completion order, and after an interruption (re-running
resumes from the finished shards; each shard records its task and a digest of
its content and is checked before it is reused, :mod:`simrec.shards`).
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simrec._figures import drawing
from simrec._random import task_seed
from simrec.config.sources import ScoredSourceSpec
from simrec.config.stress import StressScenario
from simrec.rundir import ARRAYS, RunDir
from simrec.stress.decomposition import decomposition_table
from simrec.stress.harness import StressConfig, StressResult, run_stress
from simrec.stress.sources import (
    LooData,
    RankSource,
    RecommenderRanks,
    ranks_frame,
    read_ranks_file,
    score_ranks,
)
from simrec.stress.tables import (
    SUMMARY_KS,
    coverage_table,
    estimate_table,
    expected_table,
    fitted_a_table,
    hit_ratio_table,
    mapping_error_table,
    ordering_table,
    relative_error_table,
    winner_table,
)
from simrec.studies._stress_shards import ranks_arrays, ranks_from_arrays, result_arrays, result_from_arrays
from simrec.studies.phases import KeyedTask, Phase, Phases, task_timings
from simrec.studies.stress_notes import MIN_USERS, convergence_note, few_users_note, naive_cutoff_note
from simrec.studies.user_sampling import user_sampling_phase
from simrec.tasks import Backend, SerialBackend

__all__ = [
    "StressOutcome",
    "run_stress_scenario",
    "build_source_data",
    "few_users_note",
    "convergence_note",
    "naive_cutoff_note",
    "user_sampling_phase",
    "MIN_USERS",
    "SUMMARY_KS",
]


@dataclass(frozen=True)
class StressOutcome:
    """What a stress run produced."""

    out: Path
    source: RankSource
    estimates: pd.DataFrame
    ordering: pd.DataFrame
    winners: pd.DataFrame
    decomposition: pd.DataFrame
    computed: int
    reused: int
    seconds: float
    warnings: tuple[str, ...] = ()
    #: Figures that could not be drawn, one line each (the tables are complete; :mod:`simrec._figures`).
    figure_failures: tuple[str, ...] = ()
    #: The coverage table (runs with ``n_boot``; None or empty otherwise).
    coverage: pd.DataFrame | None = None


# ---------------------------------------------------------------------------
# phase 1: ranks
# ---------------------------------------------------------------------------
def build_source_data(sc: StressScenario, data_path: Path | None, max_pairs: int | None = None) -> LooData:
    """The leave-one-out data of a dataset or simulation source (same in every task); ``max_pairs``: the
    simulation's generator guard (default the library's)."""
    return _scored(sc).loo_data(data_path, task_seed(sc.seed, 0), max_pairs)


def _scored(sc: StressScenario) -> ScoredSourceSpec:
    """The source of a scenario whose ranks are computed (not a ranks file)."""
    if not isinstance(sc.source, ScoredSourceSpec):
        raise TypeError(f"a {sc.source.type} source has no data to score; its ranks are read")
    return sc.source


def _ranks_task(task: tuple[StressScenario, Path | None, int, int | None]) -> tuple[int, RecommenderRanks, dict, float]:
    sc, data_path, j, max_pairs = task
    t0 = time.perf_counter()
    data = build_source_data(sc, data_path, max_pairs)
    src = _scored(sc)
    ranks = score_ranks(src.recommenders[j].build(), data, task_seed(sc.seed, 1, j), candidates=src.candidates)
    return j, ranks, data.info, time.perf_counter() - t0


def _rank_source(sc: StressScenario, loaded: list[tuple[RecommenderRanks, dict]]) -> RankSource:
    """The rank source of a dataset or simulation from its recommenders' shards."""
    scored = _scored(sc)
    return RankSource(scored.label, scored.type, tuple(r for r, _ in loaded), loaded[0][1])


def _ranks_phase(phases: Phases, sc: StressScenario, data_path: Path | None, max_pairs: int | None) -> RankSource:
    """The held-out ranks: a ranks file read once, or one task per recommender j (``DIR/ranks/<j>.npz``)."""
    if not isinstance(sc.source, ScoredSourceSpec):  # a ranks file
        return read_ranks_file(data_path)  # type: ignore[arg-type]
    tasks = [
        KeyedTask(str(j), f"ranks of recommender {j}", task_seed(sc.seed, 1, j), (sc, data_path, j, max_pairs))
        for j in range(len(sc.source.recommenders))
    ]
    phase = Phase(
        _ranks_task, "ranks", "ranks", ARRAYS, encode=lambda res: ranks_arrays(res[1], res[2]), decode=ranks_from_arrays
    )
    return _rank_source(sc, phases.run(phase, tasks).values)


# ---------------------------------------------------------------------------
# phase 2: stress cells
# ---------------------------------------------------------------------------
def _stress_task(task: tuple[tuple[RecommenderRanks, str, int, StressConfig, object], object]) -> StressResult:
    (ranks, scheme, n, config, seed), counter = task
    return run_stress(ranks, scheme, n, config, rng=seed, progress=counter)  # type: ignore[arg-type]


def _stress_phase(
    phases: Phases, sc: StressScenario, config: StressConfig, source: RankSource, task_seconds: list[float]
) -> list[StressResult]:
    """One task per (recommender j, scheme s, size i), seed ``task_seed(seed, 2, j, s, i)``, shard
    ``DIR/tasks/<j>__<scheme>__n<n>.npz``; the bar counts repeats. Each computed task's seconds go to ``task_seconds``."""
    tasks = []
    for j, rec in enumerate(source.recommenders):
        for s, scheme in enumerate(sc.sampling.schemes):
            for i, n in enumerate(sc.sampling.sizes):
                seed = task_seed(sc.seed, 2, j, s, i)
                label = f"recommender {rec.name!r}, scheme {scheme}, n = {n}"
                tasks.append(KeyedTask(f"{j}__{scheme}__n{n}", label, seed, (rec, scheme, n, config, seed)))
    phase = Phase(
        _stress_task,
        "stress repeats",
        "tasks",
        ARRAYS,
        encode=result_arrays,
        decode=result_from_arrays,
        steps=config.repeats,
    )
    return phases.run(phase, tasks, on_result=lambda _task, res: task_seconds.append(res.seconds)).values


# ---------------------------------------------------------------------------
# tables and figures (after the user-sampling phase, simrec.studies.user_sampling)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _StressTables:
    """The tables of a stress run (see the module docstring for the files)."""

    estimates: pd.DataFrame
    ordering: pd.DataFrame
    winners: pd.DataFrame
    hit_ratio: pd.DataFrame
    expected: pd.DataFrame
    decomposition: pd.DataFrame
    coverage: pd.DataFrame
    fitted_a: pd.DataFrame
    relative_error: pd.DataFrame
    mapping_errors: pd.DataFrame


def _stress_tables(sc: StressScenario, source: RankSource, results: list[StressResult]) -> _StressTables:
    """Every table of the stress cells ``results`` of ``sc`` on ``source``."""
    with warnings.catch_warnings():  # NaN cells (exact 0, exact ties) are expected at small K; counted in the tables
        warnings.simplefilter("ignore", RuntimeWarning)
        est = estimate_table(results)
        cut = sc.cutoff_metric_names()  # K&R Figure 6's curve is at curve_k: cutoff families only
        return _StressTables(
            estimates=est,
            ordering=ordering_table(results),
            winners=winner_table(results),
            hit_ratio=hit_ratio_table(results),
            expected=expected_table(source, cut, sc.metrics.curve_k, sc.metrics.curve_sizes) if cut else pd.DataFrame(),
            decomposition=decomposition_table(results),
            coverage=coverage_table(results),
            fitted_a=fitted_a_table(results),
            relative_error=relative_error_table(est),
            mapping_errors=mapping_error_table(results),
        )


def _write_tables(rd: RunDir, t: _StressTables, note: str | None) -> None:
    """The tables into ``rd``; ``note`` (too few users) as a ``warning`` column of the estimators' comparisons."""
    flag = (lambda f: f.assign(warning=note)) if note else (lambda f: f)
    est = t.estimates
    rd.write_parquet("estimates.parquet", est)
    rd.write_csv("summary.csv", flag(est[est["k"].isin(SUMMARY_KS) | est["k"].isna()]))  # + AUC, untruncated AP
    rd.write_csv("ordering.csv", flag(t.ordering))
    rd.write_csv("winners.csv", flag(t.winners))
    rd.write_csv("hit_ratio.csv", t.hit_ratio)
    rd.write_csv("expected_vs_n.csv", t.expected)
    for name, frame in (
        ("decomposition.csv", t.decomposition),
        ("coverage.csv", t.coverage),
        ("mapping_a.csv", t.fitted_a),
    ):
        if len(frame):
            rd.write_csv(name, frame)
    rd.write_csv("relative_error.csv", t.relative_error)
    if len(t.mapping_errors):
        rd.write_csv("mapping_errors.csv", t.mapping_errors)


def _draw(rd: RunDir, t: _StressTables, progress: bool, failed: list[str]) -> None:
    """The figures (a failure appended to ``failed``)."""
    from simrec.stress.figures import plot_stress

    if progress:  # the bar has ended; say what the last seconds are spent on (as simrec run does)
        print(f"drawing figures into {rd.path('figures')} ...", file=sys.stderr, flush=True)
    with drawing(failed, "figures"):
        plot_stress(rd.path("figures"), t.estimates, t.expected, t.hit_ratio, t.decomposition)


def _sizes(source: RankSource) -> dict:
    """The manifest's ``sizes``: the source's kind and sizes, the users each recommender was evaluated on."""
    return {
        "source_kind": source.kind,
        **source.info,
        "evaluated_users": {r.name: r.n_users for r in source.recommenders},
    }


def run_stress_scenario(
    sc: StressScenario,
    path: Path | None,
    out: str | Path,
    *,
    backend: Backend | None = None,
    progress: bool = True,
    figures: bool = True,
    max_pairs: int | None = None,
) -> StressOutcome:
    """Run every task of a stress scenario into ``out``, resuming finished ones (see module docstring).

    Parameters
    ----------
    sc : StressScenario
        Validated (:func:`~simrec.config.stress.load_stress_scenario`).
    path : Path or None
        The scenario file (copied into ``out``; relative data paths resolve against it).
    out : folder
    backend : simrec.tasks.Backend, default SerialBackend()
    progress, figures : bool, default True
    max_pairs : int, optional
        A simulation source's generator guard (default the library's); the
        command line sets it from ``--max-memory``.

    Raises
    ------
    simrec.rundir.RunDirError
        ``out`` holds another scenario's results or is locked by another job.
    simrec.tasks.TaskError
        Some tasks failed twice (every other task's shard is kept).
    ValueError
        A scheme/size impossible for the ranks found (e.g. sampling without
        replacement with n above a user's candidate count).
    """
    t_start = time.perf_counter()
    backend = SerialBackend() if backend is None else backend
    data_path = sc.data_path(path) if path is not None else None
    config = sc.config()
    manifest = {
        "data": str(data_path) if data_path else None,
        "seed": sc.seed,
        "repeats": sc.repeats,
        "scenario_content": sc.model_dump(mode="json"),
    }
    with RunDir.open(out, kind="stress", name=sc.name, digest=sc.digest(), source=path, manifest=manifest) as rd:
        phases = Phases(rd, backend, sc.name, progress)
        t_ranks = time.perf_counter()
        source = _ranks_phase(phases, sc, data_path, max_pairs)
        ranks_seconds = time.perf_counter() - t_ranks
        rd.write_parquet("ranks.parquet", ranks_frame(source).assign(user=lambda f: f["user"].astype(str)))
        task_seconds: list[float] = []
        results = _stress_phase(phases, sc, config, source, task_seconds)
        failed: list[str] = []
        user_sampling_phase(phases, sc, source, results, figures=figures, figure_failures=failed)
        tables = _stress_tables(sc, source, results)
        note = few_users_note(source)
        _write_tables(rd, tables, note)
        if figures:
            _draw(rd, tables, progress, failed)
        unscored = [n for n in (r.unscored_note() for r in source.recommenders) if n is not None]
        notes = (convergence_note(results, config), naive_cutoff_note(config, sc.sampling.sizes, sc.sampling.schemes))
        seconds = time.perf_counter() - t_start
        rd.complete(
            tasks_computed=phases.computed,
            tasks_reused=phases.reused,
            recommenders=[r.name for r in source.recommenders],
            sizes=_sizes(source),
            timings=task_timings(seconds, task_seconds, backend, ranks_seconds=ranks_seconds),
            **({"warnings": unscored} if unscored else {}),
            **({"figures_failed": failed} if failed else {}),
        )
    return StressOutcome(
        Path(out),
        source,
        tables.estimates,
        tables.ordering,
        tables.winners,
        tables.decomposition,
        phases.computed,
        phases.reused,
        seconds,
        (*unscored, *(() if note is None else (note,)), *(n for n in notes if n is not None)),
        tuple(failed),
        tables.coverage,
    )

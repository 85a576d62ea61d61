"""``simrec run``: every (replicate, world) task of a scenario into a run directory.

One phase (:mod:`simrec.studies.phases`): one task per (replicate r, world
w) with seed ``task_seed(scenario.seed, r, w)``
(:func:`simrec.experiment.run_replicate` generates its own data from it), on
any :mod:`simrec.tasks` backend. The run directory (:mod:`simrec.rundir`)
holds

* ``replicates/*.parquet`` — one shard per finished task (written as each
  task finishes, so an interrupted run keeps its work; each records its task
  and a digest of its content, checked when a re-run reuses it:
  :mod:`simrec.shards`);
* ``results.parquet`` — the tidy results (:data:`~simrec.experiment.RESULT_COLUMNS`);
* ``summary.csv`` — mean, sd and confidence interval per world x
  recommender x metric x kind (observed, true, error);
* ``table3.csv`` — the share of replicates in which Oracle beats Popular,
  with Wilson intervals (thesis Table 3), when both are in the scenario (with
  a ``warning`` column, also in :attr:`RunOutcome.warnings`, when there are
  fewer than :data:`MIN_REPLICATES_TABLE3` replicates);
* ``significance.csv`` (with a ``[significance]`` section) — paired tests
  between recommenders judged against the truth, per world x protocol
  (:mod:`simrec.studies.significance`; shards in ``significance/``);
* with a ``[debias]`` section (:mod:`simrec.config.debias`), ``debias/*.parquet``
  shards and ``debias.parquet``, ``debias_summary.csv`` (bias, RMSE and
  interval coverage per world x recommender x metric x MNAR estimator x
  propensity kind) and ``debias_order.csv`` (the probability that an
  estimator orders the recommenders as the truth does), and the figures
  ``figures/debias_<metric>.png`` (bias ± 2 se per estimator x propensity kind):
  :mod:`simrec.debias.harness` on the same replicates;
* ``figures/*.png`` and ``manifest.json`` (scenario, seed, digest,
  package versions, timings).

Results depend only on the scenario: not on the backend, the number of
workers or the completion order; re-running into the same folder resumes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simrec._figures import drawing
from simrec._random import task_seed
from simrec.config.run import Scenario
from simrec.debias.figures import plot_debias
from simrec.debias.harness import DebiasDesign, debias_replicate, order_accuracy, summarize_debias
from simrec.experiment import RESULT_COLUMNS, Evaluation, World, run_replicate
from simrec.recommenders import Oracle, Popular
from simrec.recommenders.coverage import unscored_note
from simrec.report import pairwise_wins, plot_results, summarize
from simrec.rundir import FRAMES, RunDir
from simrec.studies.phases import KeyedTask, Phase, PhaseOutcome, Phases, task_timings
from simrec.tasks import Backend, SerialBackend

__all__ = ["RunOutcome", "run_scenario"]


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced (``computed`` tasks now, ``reused`` from an earlier attempt)."""

    out: Path
    results: pd.DataFrame
    summary: pd.DataFrame
    computed: int
    reused: int
    seconds: float
    warnings: tuple[str, ...] = ()
    #: Figures that could not be drawn, one line each (the tables are complete; :mod:`simrec._figures`).
    figure_failures: tuple[str, ...] = ()


#: Below this many replicates, Table 3's shares (and their Wilson intervals) are flagged as not meaningful.
MIN_REPLICATES_TABLE3 = 10


def _shard_key(replicate: int, w: int) -> str:
    """A shard's file stem: indices only (a world's name never becomes a path)."""
    return f"rep{replicate:05d}__w{w:03d}"


def _run_task(
    task: tuple[World, Evaluation, object, int, DebiasDesign | None],
) -> tuple[pd.DataFrame, dict, float, pd.DataFrame | None]:
    """One replicate of one world: its results (with each recommender's users without a list), sizes, seconds,
    and with a ``[debias]`` design the MNAR-correction harness's rows on the same replicate."""
    world, evaluation, seed, replicate, design = task
    t0 = time.perf_counter()
    rep = run_replicate(world, evaluation, seed, replicate)  # type: ignore[arg-type]
    # the shard keeps each recommender's users without a list (not a result column; read by _unscored_notes)
    frame = rep.results.assign(n_unscored=rep.results["recommender"].map(rep.unscored).fillna(0).astype("int64"))
    # the MNAR-correction harness on the same replicate (same seed: same data and lists)
    debias = None if design is None else debias_replicate(world, evaluation, design, seed, replicate)  # type: ignore[arg-type]
    return frame, rep.info, time.perf_counter() - t0, debias


def _unscored_notes(full: pd.DataFrame, recommenders: list[str]) -> list[str]:
    """The warnings of recommenders that left many evaluated users without a list (:mod:`simrec.recommenders.coverage`),
    over every replicate and world (shards of an older simrec, without the count, are left out)."""
    if "n_unscored" not in full.columns or "info_evaluated_users" not in full.columns:
        return []
    tasks = full.dropna(subset=["n_unscored"]).drop_duplicates(["replicate", "world", "recommender"])
    sums = tasks.groupby("recommender")[["n_unscored", "info_evaluated_users"]].sum()
    notes = [
        unscored_note(
            rec,
            int(sums.at[rec, "n_unscored"]),
            int(sums.at[rec, "info_evaluated_users"]),
            "an empty list or no scored candidate (precision is NaN and recall 0 for those users)",
        )
        for rec in recommenders
        if rec in sums.index
    ]
    return [n for n in notes if n is not None]


def _in_scenario_order(
    frame: pd.DataFrame, worlds: list[str], recommenders: list[str], metrics: list[str]
) -> pd.DataFrame:
    """Rows sorted by replicate, then worlds, recommenders and metrics in the scenario's order."""
    keys = pd.DataFrame(
        {
            "replicate": frame["replicate"],
            "world": pd.Categorical(frame["world"], categories=worlds, ordered=True).codes,
            "recommender": pd.Categorical(frame["recommender"], categories=recommenders, ordered=True).codes,
            "metric": pd.Categorical(frame["metric"], categories=metrics, ordered=True).codes,
            "truth": frame["truth"],
        }
    )
    order = keys.sort_values(list(keys.columns), kind="stable").index
    return frame.loc[order].reset_index(drop=True)


def _replicate_shard(result: tuple[pd.DataFrame, dict, float, pd.DataFrame | None]) -> pd.DataFrame:
    """A task's shard: its results with the world's sizes as ``info_*`` columns."""
    frame, info, _secs, _debias = result
    return frame.assign(**{f"info_{k}": v for k, v in info.items()})


def _keys(scenario: Scenario, worlds: list[World]) -> list[str]:
    """The tasks' keys, replicate-major."""
    return [_shard_key(r, w) for r in range(scenario.replicates) for w in range(len(worlds))]


def _replicate_tasks(
    scenario: Scenario, worlds: list[World], evaluation: Evaluation, design: DebiasDesign | None
) -> list[KeyedTask]:
    """One task per (replicate r, world w), replicate-major, seed ``task_seed(scenario.seed, r, w)``."""
    tasks = []
    for r in range(scenario.replicates):
        for w, world in enumerate(worlds):
            seed = task_seed(scenario.seed, r, w)
            payload = (world, evaluation, seed, r, design)
            tasks.append(KeyedTask(_shard_key(r, w), f"replicate {r}, world {world.name}", seed, payload))
    return tasks


def _table3(results: pd.DataFrame, evaluation: Evaluation, replicates: int) -> tuple[pd.DataFrame | None, str | None]:
    """Thesis Table 3 (Oracle vs Popular, when both are evaluated) and its warning (too few replicates), or None."""
    oracle = next((r.name for r in evaluation.recommenders if isinstance(r, Oracle)), None)
    popular = next((r.name for r in evaluation.recommenders if isinstance(r, Popular)), None)
    if oracle is None or popular is None:
        return None, None
    table3 = pairwise_wins(results, oracle, popular)
    if replicates >= MIN_REPLICATES_TABLE3:
        return table3, None
    note = (
        f"only {replicates} replicate(s): a share of fewer than {MIN_REPLICATES_TABLE3} "
        "replicates says little (see the Wilson interval)"
    )
    return table3.assign(warning=note), f"table3.csv: {note}"


def _mean_sizes(full: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Each world's data sizes (the tasks' ``info_*``), averaged over replicates."""
    info_cols = [c for c in full.columns if c.startswith("info_")]
    sizes = full.drop_duplicates(["replicate", "world"])[["world", *info_cols]].groupby("world").mean()
    return {w: {k.removeprefix("info_"): float(v) for k, v in row.items()} for w, row in sizes.iterrows()}


def _draw(
    rd: RunDir, results: pd.DataFrame, n: int, backend: Backend, progress: bool, debias: pd.DataFrame | None
) -> list[str]:
    """The figures, with ``debias`` (the debias summary) its figures too (their failures, one line each)."""
    failed: list[str] = []
    if progress:  # the bar has ended; say what the last seconds are spent on
        print(
            f"drawing {2 * results['metric'].nunique()} figures into {rd.path('figures')} ...",
            file=sys.stderr,
            flush=True,
        )
    with drawing(failed, "figures"):
        plot_results(results, rd.path("figures"), n=n, n_jobs=backend.n_workers)
    if debias is not None:
        with drawing(failed, "debias figures"):
            plot_debias(debias, rd.path("figures"))
    return failed


def run_scenario(
    scenario: Scenario,
    source: Path | None,
    out: str | Path,
    *,
    backend: Backend | None = None,
    progress: bool = True,
    figures: bool = True,
    max_pairs: int | None = None,
) -> RunOutcome:
    """Run every (replicate, world) task of ``scenario`` into ``out``, resuming.

    Parameters
    ----------
    scenario : Scenario
        Validated (:func:`simrec.config.run.load_scenario`).
    source : Path or None
        The scenario file (copied into ``out``).
    out : folder
    backend : simrec.tasks.Backend, default SerialBackend()
    progress, figures : bool, default True
    max_pairs : int, optional
        The generators' memory guard (default the library's); the command line
        sets it from ``--max-memory`` (:class:`simrec.config.budget.Budget`).

    Raises
    ------
    simrec.rundir.RunDirError
        ``out`` cannot be used (another scenario's results, a lock held).
    simrec.tasks.TaskError
        Some tasks failed twice; every other task's shard is kept.
    """
    t_start = time.perf_counter()
    backend = SerialBackend() if backend is None else backend
    worlds = scenario.worlds(max_pairs)
    evaluation = scenario.evaluation.build()
    names = scenario.world_names()
    recommenders = [r.name for r in evaluation.recommenders]
    with RunDir.open(
        out,
        kind="run",
        name=scenario.name,
        digest=scenario.digest(),
        source=source,
        manifest={
            "seed": scenario.seed,
            "replicates": scenario.replicates,
            "worlds": names,
            "recommenders": recommenders,
            "scenario_content": scenario.model_dump(mode="json"),
        },
    ) as rd:
        task_seconds: list[float] = []
        phases = Phases(rd, backend, scenario.name, progress)
        design = None if scenario.debias is None else scenario.debias.build()
        replicates: PhaseOutcome[pd.DataFrame] = phases.run(
            Phase(
                _run_task,
                "replicates",
                "replicates",
                FRAMES,
                encode=_replicate_shard,
                side=None if design is None else "debias",
                side_encode=lambda res: res[3],
            ),
            _replicate_tasks(scenario, worlds, evaluation, design),
            on_result=lambda _task, res: task_seconds.append(res[2]),
        )
        if scenario.significance is not None:
            # loaded only here: `simrec run` without the section loads neither scipy.stats nor the stress sources
            from simrec.studies.significance import significance_phase

            significance_phase(
                phases, scenario.significance, worlds, evaluation, scenario.seed, scenario.replicates, rd
            )
        full = pd.concat(replicates.values, ignore_index=True)
        results = _in_scenario_order(full[RESULT_COLUMNS], names, recommenders, [m.name for m in evaluation.metrics])
        summary = summarize(results)
        table3, note = _table3(results, evaluation, scenario.replicates)
        warnings = _unscored_notes(full, recommenders) + ([] if note is None else [note])
        rd.write_parquet("results.parquet", results)
        rd.write_csv("summary.csv", summary)
        if table3 is not None:
            rd.write_csv("table3.csv", table3)
        debias_summary = None
        if design is not None:
            debias_shards = rd.shards("debias", FRAMES)
            debias_rows = pd.concat([debias_shards.read(t) for t in _keys(scenario, worlds)], ignore_index=True)
            rd.write_parquet("debias.parquet", debias_rows)
            debias_summary = summarize_debias(debias_rows)
            rd.write_csv("debias_summary.csv", debias_summary)
            rd.write_csv("debias_order.csv", order_accuracy(debias_rows))
        failed = _draw(rd, results, evaluation.n, backend, progress, debias_summary) if figures else []
        seconds = time.perf_counter() - t_start
        rd.complete(
            tasks_computed=phases.computed,
            tasks_reused=phases.reused,
            timings=task_timings(seconds, task_seconds, backend),
            mean_sizes=_mean_sizes(full),
            **({"warnings": warnings} if warnings else {}),
            **({"figures_failed": failed} if failed else {}),
        )
    return RunOutcome(
        Path(out), results, summary, phases.computed, phases.reused, seconds, tuple(warnings), tuple(failed)
    )

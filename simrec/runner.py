"""Run a scenario into an output folder: tasks, resume, atomic outputs, manifest.

This is the command-line boundary's job runner: it turns a validated
:class:`~simrec.scenario.Scenario` into typed objects once, runs one task per
(replicate, world) through :func:`simrec.parallel.run_tasks`, and writes

* ``DIR/replicates/*.parquet`` — one shard per finished task (written as each
  task finishes, so an interrupted run keeps its work);
* ``DIR/results.parquet`` — the tidy results (:data:`~simrec.experiment.RESULT_COLUMNS`);
* ``DIR/summary.csv`` — mean, sd and confidence interval per world x
  recommender x metric x kind (observed, true, error);
* ``DIR/table3.csv`` — the share of replicates in which Oracle beats Popular,
  with Wilson intervals (thesis Table 3), when both are in the scenario;
* ``DIR/figures/*.png`` and ``DIR/manifest.json`` (scenario, seed, digest,
  package versions, timings).

Re-running into the same folder resumes: finished shards are kept, missing ones
computed. A folder holding results of a *different* scenario is refused.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pandas as pd

from ._io import write_csv, write_json, write_parquet, write_text
from ._progress import progress_bar
from ._random import task_seed
from .build import build_observation, build_preference, build_recommender
from .experiment import RESULT_COLUMNS, Evaluation, World, run_replicate
from .parallel import run_tasks
from .report import pairwise_wins, plot_results, summarize
from .scenario import Scenario

__all__ = ["RunOutcome", "OutputDirError", "run_scenario", "build_worlds", "build_evaluation", "package_versions"]


class OutputDirError(RuntimeError):
    """The output folder cannot be used for this scenario."""


@dataclass(frozen=True)
class RunOutcome:
    out: Path
    results: pd.DataFrame
    summary: pd.DataFrame
    computed: int
    reused: int
    seconds: float


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("simrec", "numpy", "scipy", "pandas", "lenskit", "scikit-optimize", "torch"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def build_worlds(scenario: Scenario) -> list[World]:
    worlds = []
    for name, spec in zip(scenario.world_names(), scenario.world):
        profile, sampler = build_observation(spec)
        worlds.append(World(name, build_preference(spec, scenario.population), profile, sampler))
    return worlds


def build_evaluation(scenario: Scenario) -> Evaluation:
    ev = scenario.evaluation
    return Evaluation(
        recommenders=tuple(build_recommender(r) for r in ev.recommenders),
        metrics=tuple(ev.metrics),
        n=ev.n,
        test_fraction=ev.test_fraction,
        pap_k=ev.pap_k,
    )


def _shard_name(replicate: int, world: str) -> str:
    return f"rep{replicate:05d}__{world}.parquet"


def _run_task(task: tuple[World, Evaluation, object, int]) -> tuple[pd.DataFrame, dict, float]:
    world, evaluation, seed, replicate = task
    t0 = time.perf_counter()
    rep = run_replicate(world, evaluation, seed, replicate)  # type: ignore[arg-type]
    return rep.results, rep.info, time.perf_counter() - t0


def _in_scenario_order(frame: pd.DataFrame, worlds: list[str], recommenders: list[str], metrics: list[str]) -> pd.DataFrame:
    """Rows sorted by replicate, then worlds, recommenders and metrics in the scenario's order."""
    keys = pd.DataFrame({
        "replicate": frame["replicate"],
        "world": pd.Categorical(frame["world"], categories=worlds, ordered=True).codes,
        "recommender": pd.Categorical(frame["recommender"], categories=recommenders, ordered=True).codes,
        "metric": pd.Categorical(frame["metric"], categories=metrics, ordered=True).codes,
        "truth": frame["truth"],
    })
    order = keys.sort_values(list(keys.columns), kind="stable").index
    return frame.loc[order].reset_index(drop=True)


def _check_out_dir(out: Path, scenario: Scenario) -> None:
    manifest = out / "manifest.json"
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"--out {out}: exists and is not a folder")
    if manifest.exists():
        try:
            prev = json.loads(manifest.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise OutputDirError(f"{manifest}: unreadable manifest ({exc}); use a new --out folder") from None
        if prev.get("digest") != scenario.digest():
            raise OutputDirError(
                f"--out {out}: holds results of scenario {prev.get('scenario', '?')!r} with different content "
                f"(digest {prev.get('digest')} != {scenario.digest()}); use a new --out folder"
            )


def run_scenario(
    scenario: Scenario,
    source: Path | None,
    out: str | Path,
    *,
    n_jobs: int = 1,
    backend: str | None = None,
    progress: bool = True,
    figures: bool = True,
) -> RunOutcome:
    """Run every (replicate, world) task of ``scenario`` into ``out``, resuming.

    Task (r, w) gets seed ``task_seed(scenario.seed, r, w)``: results depend
    only on the scenario, not on ``n_jobs``, the backend or completion order.
    """
    t_start = time.perf_counter()
    out = Path(out)
    _check_out_dir(out, scenario)
    worlds = build_worlds(scenario)
    evaluation = build_evaluation(scenario)
    shards = out / "replicates"
    shards.mkdir(parents=True, exist_ok=True)
    manifest = {
        "scenario": scenario.name,
        "source": str(source) if source else None,
        "digest": scenario.digest(),
        "seed": scenario.seed,
        "replicates": scenario.replicates,
        "worlds": scenario.world_names(),
        "recommenders": [r.name for r in evaluation.recommenders],
        "versions": package_versions(),
        "status": "running",
        "scenario_content": scenario.model_dump(mode="json"),
    }
    write_json(out / "manifest.json", manifest)
    if source is not None:
        write_text(out / "scenario.toml", Path(source).read_text(encoding="utf-8"))

    todo, reused = [], 0
    for r in range(scenario.replicates):
        for w, world in enumerate(worlds):
            if (shards / _shard_name(r, world.name)).exists():
                reused += 1
            else:
                todo.append((world, evaluation, task_seed(scenario.seed, r, w), r))

    task_seconds: list[float] = []
    with progress_bar(scenario.name, len(todo), "replicates", progress) as advance:

        def record(i: int, res: tuple[pd.DataFrame, dict, float]) -> None:
            frame, info, secs = res
            _world, _evaluation, _seed, rep = todo[i]
            write_parquet(shards / _shard_name(rep, _world.name),
                          frame.assign(**{f"info_{k}": v for k, v in info.items()}))
            task_seconds.append(secs)
            advance()

        run_tasks(_run_task, todo, n_jobs=n_jobs, backend=backend, on_result=record)  # type: ignore[arg-type]

    frames = [pd.read_parquet(p) for p in sorted(shards.glob("*.parquet"))]
    expected = {_shard_name(r, w.name) for r in range(scenario.replicates) for w in worlds}
    found = {p.name for p in shards.glob("*.parquet")}
    if expected - found:  # pragma: no cover - run_tasks raises first
        raise OutputDirError(f"{shards}: missing shards {sorted(expected - found)[:5]}")
    full = pd.concat(frames, ignore_index=True)
    full = full[full["replicate"] < scenario.replicates]
    results = _in_scenario_order(full[RESULT_COLUMNS], scenario.world_names(),
                                 [r.name for r in evaluation.recommenders], list(evaluation.metrics))
    summary = summarize(results)
    write_parquet(out / "results.parquet", results)
    write_csv(out / "summary.csv", summary)
    names = {type(r).__name__: r.name for r in evaluation.recommenders}
    if "Oracle" in names and "Popular" in names:
        write_csv(out / "table3.csv", pairwise_wins(results, names["Oracle"], names["Popular"]))
    if figures:
        plot_results(results, out / "figures")
    info_cols = [c for c in full.columns if c.startswith("info_")]
    sizes = full.drop_duplicates(["replicate", "world"])[["world", *info_cols]].groupby("world").mean()
    seconds = time.perf_counter() - t_start
    manifest.update(
        status="complete",
        tasks_computed=len(todo),
        tasks_reused=reused,
        timings={
            "total_seconds": round(seconds, 3),
            "task_seconds_mean": round(sum(task_seconds) / len(task_seconds), 3) if task_seconds else None,
            "task_seconds_max": round(max(task_seconds), 3) if task_seconds else None,
            "n_jobs": n_jobs,
            "backend": backend or ("serial" if n_jobs == 1 else "processes"),
        },
        mean_sizes={w: {k.removeprefix("info_"): float(v) for k, v in row.items()} for w, row in sizes.iterrows()},
    )
    write_json(out / "manifest.json", manifest)
    return RunOutcome(out, results, summary, len(todo), reused, seconds)

"""Run a stress scenario into an output folder: tasks, resume, atomic outputs, manifest.

Follows :mod:`simrec.runner` (same folder check, manifest, progress bar,
:func:`simrec.parallel.run_tasks`, atomic writers):

1. **ranks** — one task per recommender (dataset and simulation sources): the
   data and its leave-one-out split are rebuilt in each task from seed
   ``task_seed(seed, 0)`` (identical in every task), the recommender scores
   with ``task_seed(seed, 1, j)``; each finished task writes
   ``DIR/ranks/<j>.npz``. A ranks file is read once.
2. **stress** — one task per (recommender j, scheme s, size i) with seed
   ``task_seed(seed, 2, j, s, i)``: :func:`~simrec.stress.harness.run_stress`,
   written to ``DIR/tasks/<j>__<scheme>__n<n>.npz`` as it finishes.
3. **tables** — ``estimates.parquet`` (every cell), ``summary.csv`` (K in
   {1, 5, 10, 20, 50}), ``ordering.csv``, ``winners.csv``, ``hit_ratio.csv``,
   ``expected_vs_n.csv``, ``decomposition.csv`` (simulations), ``ranks.parquet``
   (the held-out ranks, itself a valid ranks file), ``figures/*.png`` and
   ``manifest.json`` (scenario, seed, digest, versions, sizes, timings).

Results depend only on the scenario: the same numbers come out serially or on
several processes, in any completion order, and after an interruption
(re-running resumes from the finished shards).
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simrec._io import atomic_write, write_csv, write_json, write_parquet, write_text
from simrec._progress import progress_bar
from simrec._random import task_seed
from simrec.parallel import run_tasks
from simrec.runner import _check_out_dir, package_versions
from simrec.stress.decomposition import decomposition_table
from simrec.stress.harness import StressResult, run_stress
from simrec.stress.sources import RankSource, RecommenderRanks, ranks_frame, read_ranks_file
from simrec.stress.spec import DatasetSource, FileSource, SimulationSource, StressScenario
from simrec.stress.tables import estimate_table, expected_table, hit_ratio_table, ordering_table, winner_table

__all__ = ["StressOutcome", "run_stress_scenario", "build_source_data", "SUMMARY_KS"]

#: Cutoffs kept in summary.csv (the dissertation's table columns).
SUMMARY_KS = (1, 5, 10, 20, 50)


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


# ---------------------------------------------------------------------------
# serialisation of shards
# ---------------------------------------------------------------------------
def _save_npz(path: Path, **arrays) -> None:
    def writer(p: Path) -> None:
        with open(p, "wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(path, writer)


def _ranks_to_npz(path: Path, r: RecommenderRanks, info: dict) -> None:
    arrays = {"info": np.array(json.dumps(info)), "name": np.array(r.name), "ranks": r.ranks, "n_candidates": r.n_candidates,
              "users": np.asarray(r.users).astype(str)}
    for key in ("popularity_shares", "true_ranks", "true_users"):
        val = getattr(r, key)
        if val is not None:
            arrays[key] = val
    _save_npz(path, **arrays)


def _ranks_from_npz(path: Path) -> tuple[RecommenderRanks, dict]:
    with np.load(path) as z:
        get = {k: z[k] for k in z.files}
    return RecommenderRanks(str(get["name"]), get["ranks"], get["n_candidates"], get["users"],
                            popularity_shares=get.get("popularity_shares"), true_ranks=get.get("true_ranks"),
                            true_users=get.get("true_users")), json.loads(str(get["info"]))


def _result_to_npz(path: Path, r: StressResult) -> None:
    arrays = {
        "recommender": np.array(r.recommender), "scheme": np.array(r.scheme), "n": np.array(r.n),
        "n_items": np.array(r.n_items), "n_users": np.array(r.n_users), "families": np.array(r.families),
        "ks": r.ks, "estimators": np.array(r.estimators), "exact": r.exact, "estimates": r.estimates,
        "mean_sample_size": np.array(r.mean_sample_size), "seconds": np.array(r.seconds),
        "mappings": np.array(list(r.mapping_values)),
    }
    if r.true is not None:
        arrays["true"] = r.true
    if r.shr is not None:
        arrays["shr"] = r.shr
    for k, v in r.mapping_values.items():
        arrays[f"map_{k}"] = v
        arrays[f"ghr_{k}"] = r.global_hr_at_f[k]
    _save_npz(path, **arrays)


def _result_from_npz(path: Path) -> StressResult:
    with np.load(path) as z:
        g = {k: z[k] for k in z.files}
    maps = [str(m) for m in g["mappings"]]
    return StressResult(
        str(g["recommender"]), str(g["scheme"]), int(g["n"]), int(g["n_items"]), int(g["n_users"]),
        tuple(str(f) for f in g["families"]), g["ks"], tuple(str(e) for e in g["estimators"]), g["exact"],
        g["estimates"], g.get("true"), g.get("shr"), {m: g[f"map_{m}"] for m in maps},
        {m: g[f"ghr_{m}"] for m in maps}, float(g["mean_sample_size"]), float(g["seconds"]),
    )


# ---------------------------------------------------------------------------
# tasks
# ---------------------------------------------------------------------------
def build_source_data(sc: StressScenario, data_path: Path | None):
    """The leave-one-out data of a dataset or simulation source (same in every task)."""
    from simrec.build import build_observation, build_preference
    from simrec.experiment import World
    from simrec.stress.sources import loo_data, simulate_loo_data

    src = sc.source
    seed = task_seed(sc.seed, 0)
    if isinstance(src, SimulationSource):
        profile, sampler = build_observation(src.world)
        name = src.world.name or "world"
        world = World(name, build_preference(src.world, src.population), profile, sampler)
        return simulate_loo_data(world, seed, min_items=src.min_items)
    from simrec.datasets import k_core, load_dataset

    options = {} if src.min_rating is None else {"min_rating": src.min_rating}
    inter = load_dataset(data_path, kind=src.format, **options)
    if src.k_core:
        inter = k_core(inter, src.k_core)
    return loo_data(inter, seed, min_items=src.min_items)


def _ranks_task(task: tuple[StressScenario, Path | None, int]) -> tuple[int, RecommenderRanks, dict, float]:
    from simrec.build import build_recommender
    from simrec.stress.sources import score_ranks

    sc, data_path, j = task
    t0 = time.perf_counter()
    data = build_source_data(sc, data_path)
    rec = build_recommender(sc.source.recommenders[j])  # type: ignore[union-attr]
    ranks = score_ranks(rec, data, task_seed(sc.seed, 1, j))
    return j, ranks, data.info, time.perf_counter() - t0


def _stress_task(task: tuple) -> StressResult:
    ranks, scheme, n, config, seed = task
    return run_stress(ranks, scheme, n, config, rng=seed)


def _rec_names(sc: StressScenario, source: RankSource | None) -> list[str]:
    if source is not None:
        return [r.name for r in source.recommenders]
    from simrec.build import build_recommender

    return [build_recommender(r).name for r in sc.source.recommenders]  # type: ignore[union-attr]


def run_stress_scenario(
    sc: StressScenario,
    path: Path | None,
    out: str | Path,
    *,
    n_jobs: int = 1,
    backend: str | None = None,
    progress: bool = True,
    figures: bool = True,
) -> StressOutcome:
    """Run every task of a stress scenario into ``out``, resuming finished ones (see module docstring).

    Parameters
    ----------
    sc : StressScenario
        Validated (:func:`~simrec.stress.spec.load_stress_scenario`).
    path : Path or None
        The scenario file (copied into ``out``; relative data paths resolve against it).
    out : folder
    n_jobs : int, default 1
    backend : {"serial", "processes"}, optional
    progress : bool, default True
    figures : bool, default True

    Raises
    ------
    OutputDirError
        ``out`` holds another scenario's results.
    ValueError
        A scheme/size impossible for the ranks found (e.g. sampling without
        replacement with n above a user's candidate count).
    """
    t_start = time.perf_counter()
    out = Path(out)
    _check_out_dir(out, sc)  # type: ignore[arg-type]
    data_path = sc.data_path(path) if path is not None else None
    manifest = {
        "scenario": sc.name, "kind": "stress", "source": str(path) if path else None,
        "data": str(data_path) if data_path else None, "digest": sc.digest(), "seed": sc.seed,
        "repeats": sc.repeats, "versions": package_versions(), "status": "running",
        "scenario_content": sc.model_dump(mode="json"),
    }
    write_json(out / "manifest.json", manifest)
    if path is not None:
        write_text(out / "scenario.toml", Path(path).read_text(encoding="utf-8"))

    # -- phase 1: ranks ---------------------------------------------------
    computed = reused = 0
    t_ranks = time.perf_counter()
    if isinstance(sc.source, FileSource):
        source = read_ranks_file(data_path)  # type: ignore[arg-type]
    else:
        rdir = out / "ranks"
        rdir.mkdir(parents=True, exist_ok=True)
        n_rec = len(sc.source.recommenders)
        todo = [(sc, data_path, j) for j in range(n_rec) if not (rdir / f"{j}.npz").exists()]
        reused += n_rec - len(todo)
        with progress_bar(sc.name, len(todo), "ranks", progress) as advance:

            def record_ranks(_i: int, res: tuple[int, RecommenderRanks, dict, float]) -> None:
                j, ranks, inf, _secs = res
                _ranks_to_npz(rdir / f"{j}.npz", ranks, inf)
                advance()

            run_tasks(_ranks_task, todo, n_jobs=n_jobs, backend=backend, on_result=record_ranks)  # type: ignore[arg-type]
        computed += len(todo)
        kind = "simulation" if isinstance(sc.source, SimulationSource) else "dataset"
        name = sc.source.name if isinstance(sc.source, DatasetSource) else (sc.source.world.name or "simulation")
        loaded = [_ranks_from_npz(rdir / f"{j}.npz") for j in range(n_rec)]
        info = loaded[0][1]
        source = RankSource(name, kind, tuple(r for r, _ in loaded), info)
    ranks_seconds = time.perf_counter() - t_ranks
    write_parquet(out / "ranks.parquet", ranks_frame(source).assign(user=lambda f: f["user"].astype(str)))

    # -- phase 2: stress tasks ----------------------------------------------
    config = sc.config()
    schemes, sizes = sc.sampling.schemes, sc.sampling.sizes
    for rec in source.recommenders:
        if "hypergeometric" in schemes and max(sizes) > rec.n_candidates.min():
            raise ValueError(f"sampling without replacement ('hypergeometric') needs n <= every user's candidates; "
                             f"{rec.name!r} has a user with {int(rec.n_candidates.min())} < n = {max(sizes)}")
        if "popularity" in schemes and rec.popularity_shares is None:
            raise ValueError(f"scheme 'popularity' needs popularity shares; {rec.name!r} has none")
    tdir = out / "tasks"
    tdir.mkdir(parents=True, exist_ok=True)
    cells, todo2 = [], []
    for j, rec in enumerate(source.recommenders):
        for s, scheme in enumerate(schemes):
            for i, n in enumerate(sizes):
                f = tdir / f"{j}__{scheme}__n{n}.npz"
                cells.append(f)
                if f.exists():
                    reused += 1
                else:
                    todo2.append(((rec, scheme, n, config, task_seed(sc.seed, 2, j, s, i)), f))
    task_seconds: list[float] = []
    with progress_bar(sc.name, len(todo2), "stress", progress) as advance:

        def record(i: int, res: StressResult) -> None:
            _result_to_npz(todo2[i][1], res)
            task_seconds.append(res.seconds)
            advance()

        run_tasks(_stress_task, [t for t, _ in todo2], n_jobs=n_jobs, backend=backend, on_result=record)
    computed += len(todo2)
    results = [_result_from_npz(f) for f in cells]

    # -- phase 3: tables and figures ----------------------------------------
    with warnings.catch_warnings():  # NaN cells (exact 0, exact ties) are expected at small K; counted in the tables
        warnings.simplefilter("ignore", RuntimeWarning)
        est = estimate_table(results)
        ordering = ordering_table(results)
        winners = winner_table(results)
        hr = hit_ratio_table(results)
        expected = expected_table(source, sc.metrics.names, sc.metrics.curve_k, sc.metrics.curve_sizes)
        decomp = decomposition_table(results)
    write_parquet(out / "estimates.parquet", est)
    write_csv(out / "summary.csv", est[est["k"].isin(SUMMARY_KS)])
    write_csv(out / "ordering.csv", ordering)
    write_csv(out / "winners.csv", winners)
    write_csv(out / "hit_ratio.csv", hr)
    write_csv(out / "expected_vs_n.csv", expected)
    if len(decomp):
        write_csv(out / "decomposition.csv", decomp)
    if figures:
        from simrec.stress.figures import plot_stress

        plot_stress(out / "figures", est, expected, hr, decomp)
    seconds = time.perf_counter() - t_start
    manifest.update(
        status="complete", tasks_computed=computed, tasks_reused=reused,
        recommenders=[r.name for r in source.recommenders],
        sizes={"source_kind": source.kind, **source.info,
               "evaluated_users": {r.name: r.n_users for r in source.recommenders}},
        timings={
            "total_seconds": round(seconds, 3), "ranks_seconds": round(ranks_seconds, 3),
            "task_seconds_mean": round(float(np.mean(task_seconds)), 3) if task_seconds else None,
            "task_seconds_max": round(float(np.max(task_seconds)), 3) if task_seconds else None,
            "n_jobs": n_jobs, "backend": backend or ("serial" if n_jobs == 1 else "processes"),
        },
    )
    write_json(out / "manifest.json", manifest)
    return StressOutcome(out, source, est, ordering, winners, decomp, computed, reused, seconds)


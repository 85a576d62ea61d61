"""``simrec stress``: a stress scenario's tasks into a run directory.

Same run directory (:mod:`simrec.rundir`) and task layer (:mod:`simrec.tasks`)
as ``simrec run``:

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
   ``expected_vs_n.csv``, ``decomposition.csv`` (simulations), ``coverage.csv``
   (interval coverage and bias, with ``[estimators] n_boot > 0``),
   ``mapping_a.csv`` (beta@P's fitted a, Li & Jin Table 2), ``relative_error.csv``
   (dissertation Tables 3-4), ``mapping_errors.csv`` (Li & Jin Table 7), with ``[user_sampling]``
   ``user_sampling*.csv`` (dissertation Tables 6-7, see :func:`user_sampling_phase`), ``ranks.parquet``
   (the held-out ranks, itself a valid ranks file), ``figures/*.png`` and
   ``manifest.json`` (scenario, seed, digest, versions, sizes, timings).

Results depend only on the scenario: the same numbers come out on every
backend, in any completion order, and after an interruption (re-running
resumes from the finished shards; each shard records its task and a digest of
its content and is checked before it is reused, :mod:`simrec.shards`).
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simrec._figures import drawing
from simrec._io import write_text
from simrec._progress import progress_bar
from simrec._random import task_seed
from simrec.config.sources import ScoredSourceSpec
from simrec.config.stress import StressScenario
from simrec.rundir import ARRAYS, RunDir
from simrec.sampling import AdaptiveMLE, Naive, fit_limits
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
from simrec.stress.user_sampling import (
    UserSamplingResult,
    common_users,
    run_user_sampling,
    user_sampling_errors,
    user_sampling_estimator_errors,
    user_sampling_estimator_table,
    user_sampling_estimator_tests,
    user_sampling_estimator_wide,
    user_sampling_table,
    user_sampling_tests,
    user_sampling_wide,
)
from simrec.tasks import Backend, SerialBackend, Task, run_tasks

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
    warnings: tuple[str, ...] = ()
    #: Figures that could not be drawn, one line each (the tables are complete; :mod:`simrec._figures`).
    figure_failures: tuple[str, ...] = ()
    #: The coverage table (runs with ``n_boot``; None or empty otherwise).
    coverage: pd.DataFrame | None = None


#: Below this many evaluated users, estimator comparisons are flagged as resting on too few users.
MIN_USERS = 30


def few_users_note(source: RankSource) -> str | None:
    """The warning for tables that rest on fewer than :data:`MIN_USERS` users of some recommender, or None.

    Decision (issue 12): the estimators' errors, orderings and winners are
    averages over repeats of a sampling of *these* users; with a handful of
    users they describe those users' ranks, not a recommender, so the tables
    say so (a ``warning`` column) and so does the terminal.
    """
    few = {r.name: r.n_users for r in source.recommenders if r.n_users < MIN_USERS}
    if not few:
        return None
    listed = ", ".join(f"{name} ({m})" for name, m in few.items())
    return f"fewer than {MIN_USERS} evaluated users for {listed}: these numbers rest on too few users to mean much"


def convergence_note(results: list[StressResult], config: StressConfig) -> str | None:
    """The warning for estimators whose iterative fits stopped at their cap in some repeats, or None.

    The tables record it per cell (``n_iter``, ``converged``); the terminal
    says it once, per estimator over every task: how many repeats stopped at
    the cap, the fit, the cap and the tolerance (issue 22; the default cap
    is issue 27's decision and does not move here).
    """
    objects = {e.name: e for e in (*config.estimators, AdaptiveMLE())}
    bad: dict[str, list[int]] = {}
    for r in results:
        if r.converged is None:
            continue
        for j, name in enumerate(r.estimators):
            cnt = bad.setdefault(name, [0, 0])
            cnt[0] += int((~r.converged[:, j]).sum())
            cnt[1] += r.converged.shape[0]
    groups: dict[tuple[str, int, float], list[str]] = {}
    for name, (k, total) in bad.items():
        limits = fit_limits(objects[name], config.max_iter) if name in objects else None
        if k and limits is not None:
            what, cap, tol = limits
            groups.setdefault((what.split(" of ")[0], cap, tol), []).append(f"{name} {k}/{total}")
    if not groups:
        return None
    parts = [
        f"{what} at {'max_iter = ' if what == 'EM' else ''}{cap}{'' if what == 'EM' else ' iterations'}, "
        f"tolerance {tol:g}: {', '.join(names)}"
        for (what, cap, tol), names in groups.items()
    ]
    return (
        "iterative fits stopped at their cap before meeting their tolerance (repeats stopped / repeats): "
        + "; ".join(parts)
        + ". Their estimates are where the iterations stopped (columns n_iter and converged of estimates.parquet "
        "and summary.csv); raise [estimators] max_iter for the EM fits"
    )


def naive_cutoff_note(config: StressConfig, sizes: list[int] | tuple[int, ...], schemes: tuple[str, ...]) -> str | None:
    """The warning for naive estimates at cutoffs K >= a fixed sample size n, or None (decision, issue 22).

    A sampled list of n items has every rank within a cutoff K >= n, so the
    naive estimate ignores the cutoff: Recall@K is 1 for every recommender.
    The rows are kept (they are what naive computes); this says so.
    """
    if not any(isinstance(e, Naive) for e in config.estimators) or not config.rank_metrics():
        return None
    small = sorted(n for n in set(sizes) if n <= config.k_max)
    if not small or all(s == "adaptive" for s in schemes):
        return None
    return (
        f"naive at sample size(s) n = {', '.join(map(str, small))} <= k_max = {config.k_max}: a sampled list of n "
        "items has every rank within a cutoff K >= n, so the naive rows with k >= n ignore the cutoff "
        "(Recall@K = 1 for every recommender)"
    )


# ---------------------------------------------------------------------------
# serialisation of shards
# ---------------------------------------------------------------------------
def _ranks_arrays(r: RecommenderRanks, info: dict) -> dict[str, np.ndarray]:
    arrays = {
        "info": np.array(json.dumps(info)),
        "name": np.array(r.name),
        "ranks": r.ranks,
        "n_candidates": r.n_candidates,
        "users": np.asarray(r.users).astype(str),
        "n_unscored": np.array(r.n_unscored),
    }
    for key in ("popularity_shares", "true_ranks", "true_users"):
        val = getattr(r, key)
        if val is not None:
            arrays[key] = val
    return arrays


def _ranks_from_arrays(get: dict[str, np.ndarray]) -> tuple[RecommenderRanks, dict]:
    return RecommenderRanks(
        str(get["name"]),
        get["ranks"],
        get["n_candidates"],
        get["users"],
        popularity_shares=get.get("popularity_shares"),
        true_ranks=get.get("true_ranks"),
        true_users=get.get("true_users"),
        n_unscored=int(get.get("n_unscored", 0)),  # absent from shards of an older simrec
    ), json.loads(str(get["info"]))


def _result_arrays(r: StressResult) -> dict[str, np.ndarray]:
    arrays = {
        "recommender": np.array(r.recommender),
        "scheme": np.array(r.scheme),
        "n": np.array(r.n),
        "n_items": np.array(r.n_items),
        "n_users": np.array(r.n_users),
        "families": np.array(r.families),
        "ks": r.ks,
        "estimators": np.array(r.estimators),
        "exact": r.exact,
        "estimates": r.estimates,
        "mean_sample_size": np.array(r.mean_sample_size),
        "seconds": np.array(r.seconds),
        "mappings": np.array(list(r.mapping_values)),
    }
    if r.fitted_a is not None:
        arrays["fitted_a"] = r.fitted_a
    if r.n_iter is not None:
        arrays.update(n_iter=r.n_iter, converged=r.converged)
    if r.interval_kinds is not None:
        arrays["interval_kinds"] = np.array(r.interval_kinds)
    if r.lower is not None:
        arrays.update(lower=r.lower, upper=r.upper, confidence=np.array(r.confidence))
    if r.true is not None:
        arrays["true"] = r.true
    if r.shr is not None:
        arrays["shr"] = r.shr
    for k, v in r.mapping_values.items():
        arrays[f"map_{k}"] = v
        arrays[f"ghr_{k}"] = r.global_hr_at_f[k]
    return arrays


def _result_from_arrays(g: dict[str, np.ndarray]) -> StressResult:
    maps = [str(m) for m in g["mappings"]]
    return StressResult(
        str(g["recommender"]),
        str(g["scheme"]),
        int(g["n"]),
        int(g["n_items"]),
        int(g["n_users"]),
        tuple(str(f) for f in g["families"]),
        g["ks"],
        tuple(str(e) for e in g["estimators"]),
        g["exact"],
        g["estimates"],
        g.get("true"),
        g.get("shr"),
        {m: g[f"map_{m}"] for m in maps},
        {m: g[f"ghr_{m}"] for m in maps},
        float(g["mean_sample_size"]),
        float(g["seconds"]),
        g.get("lower"),
        g.get("upper"),
        float(g["confidence"]) if "confidence" in g else math.nan,
        g.get("fitted_a"),
        n_iter=g.get("n_iter"),
        converged=g.get("converged"),
        interval_kinds=tuple(str(k) for k in g["interval_kinds"]) if "interval_kinds" in g else None,
    )


# ---------------------------------------------------------------------------
# tasks
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


@dataclass(frozen=True)
class _RepeatCounter:
    """``progress(repeats_done)`` of a task: the count, written atomically to ``path`` at most every 0.2 s.

    Best effort: a folder that does not exist here (a remote Ray worker) or a
    failed write is ignored (the bar then advances when the task finishes).
    """

    path: Path
    repeats: int

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if done < self.repeats and now - _LAST_WRITE.get(self.path, -1.0) < 0.2:
            return
        _LAST_WRITE[self.path] = now
        if not self.path.parent.is_dir():
            return
        try:
            write_text(self.path, str(done))
        except OSError:
            pass


_LAST_WRITE: dict[Path, float] = {}


class _RepeatProgress:
    """Advances a progress bar of tasks x repeats from the tasks' counter files (polled by a thread)."""

    def __init__(self, folder: Path, keys: list[str], repeats: int, advance: Callable[..., None]) -> None:
        self.folder, self.keys, self.repeats, self.advance = folder, keys, repeats, advance
        self.seen = dict.fromkeys(keys, 0)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def counter(self, key: str) -> _RepeatCounter | None:
        return _RepeatCounter(self.folder / f"{key}.txt", self.repeats) if self.folder.is_dir() else None

    def _set(self, key: str, done: int) -> None:
        with self.lock:
            step = min(done, self.repeats) - self.seen[key]
            if step > 0:
                self.seen[key] += step
                self.advance(step)

    def finished(self, key: str) -> None:
        self._set(key, self.repeats)

    def _poll(self) -> None:
        while not self.stop.wait(0.5):
            for key in self.keys:
                if self.seen[key] < self.repeats:
                    try:
                        self._set(key, int((self.folder / f"{key}.txt").read_text()))
                    except (OSError, ValueError):
                        pass

    def __enter__(self) -> _RepeatProgress:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _stress_task(task: tuple) -> StressResult:
    ranks, scheme, n, config, seed, counter = task
    return run_stress(ranks, scheme, n, config, rng=seed, progress=counter)


def _user_sampling_task(task: tuple) -> UserSamplingResult:
    recommenders, size, config, seed, item_seeds = task
    return run_user_sampling(recommenders, size, config, rng=seed, item_rngs=item_seeds)


def user_sampling_phase(
    sc: StressScenario,
    source: RankSource,
    results: list[StressResult],
    rd: RunDir,
    backend: Backend,
    progress: bool,
    figures: bool = True,
    *,
    figure_failures: list[str] | None = None,
) -> tuple[int, int]:
    """Run the ``[user_sampling]`` experiment (if any) into ``rd``; (tasks computed, tasks reused).

    A figure that fails is appended to ``figure_failures`` (raised when it is None; :func:`simrec._figures.drawing`).

    One task per size i with seed ``task_seed(seed, 3, i)`` (all recommenders
    share its samples of users), written to ``DIR/user_sampling/m<size>.npz``;
    then ``user_sampling.csv`` (per K: estimates, intervals, coverage),
    ``user_sampling_tests.csv`` (pairwise tests at the summary cutoffs),
    ``user_sampling_errors.csv`` (Tables 6-7, tidy) and
    ``user_sampling_table.csv`` (Tables 6-7 as printed) and ``figures/user_sampling.png``.
    With ``user_sampling.estimators``, the item-sampling estimators on each user sample replay the stress
    tasks' draws (the seeds ``task_seed(seed, 2, j, s, i)`` of ``item_scheme`` s) and write
    ``user_sampling_estimators.csv``, ``user_sampling_estimators_tests.csv``,
    ``user_sampling_estimators_errors.csv`` and ``user_sampling_estimators_table.csv``.
    """
    config = sc.user_sampling_config()
    if config is None:
        return 0, 0
    n_users = common_users(source.recommenders).shape[0]
    big = [m for m in config.sizes if m > n_users]
    if big:  # simulations: validation knows only population.n_users, not how many users are evaluated
        raise ValueError(
            f"user_sampling.sizes: must be <= the number of users evaluated by every recommender ({n_users}); got {big}"
        )
    shards = rd.shards("user_sampling", ARRAYS)
    keys = [f"m{m}" for m in config.sizes]
    done = shards.reusable(keys)
    item_seeds = None
    if config.estimators:  # the stress tasks' seeds of item_scheme: replay their sampled ranks
        s = sc.sampling.schemes.index(sc.user_sampling.item_scheme)  # type: ignore[union-attr]
        item_seeds = [
            [task_seed(sc.seed, 2, j, s, i) for i in range(len(sc.sampling.sizes))]
            for j in range(len(source.recommenders))
        ]
    todo = [
        Task(
            f"user sampling, m = {m}",
            task_seed(sc.seed, 3, i),
            (source.recommenders, m, config, task_seed(sc.seed, 3, i), item_seeds),
        )
        for i, m in enumerate(config.sizes)
        if keys[i] not in done
    ]
    todo_keys = [k for k in keys if k not in done]
    with progress_bar(sc.name, len(todo), "users", progress) as advance:

        def record(i: int, res: UserSamplingResult) -> None:
            shards.write(todo_keys[i], res.to_arrays())
            advance()

        run_tasks(_user_sampling_task, todo, backend=backend, on_result=record)
    loaded = [UserSamplingResult.from_arrays(shards.read(k)) for k in keys]
    us = sc.user_sampling
    errors = user_sampling_errors(
        loaded,
        results,
        item_estimator=us.item_estimator or None,  # type: ignore[union-attr]
        item_scheme=us.item_scheme,
    )  # type: ignore[union-attr]
    table = user_sampling_table(loaded)
    rd.write_csv("user_sampling.csv", table)
    rd.write_csv("user_sampling_tests.csv", user_sampling_tests(loaded, ks=SUMMARY_KS))
    rd.write_csv("user_sampling_errors.csv", errors)
    rd.write_csv("user_sampling_table.csv", user_sampling_wide(errors, source.name))
    est_table = user_sampling_estimator_table(loaded)  # empty without [user_sampling] estimators
    if config.estimators:
        est_errors = user_sampling_estimator_errors(loaded, results)
        rd.write_csv("user_sampling_estimators.csv", est_table)
        rd.write_csv("user_sampling_estimators_tests.csv", user_sampling_estimator_tests(loaded, ks=SUMMARY_KS))
        rd.write_csv("user_sampling_estimators_errors.csv", est_errors)
        rd.write_csv("user_sampling_estimators_table.csv", user_sampling_estimator_wide(est_errors, source.name))
    if figures:
        from simrec.stress.figures import plot_user_sampling, plot_user_sampling_estimators

        with nullcontext() if figure_failures is None else drawing(figure_failures, "user-sampling figures"):
            plot_user_sampling(rd.path("figures"), table)
            plot_user_sampling_estimators(rd.path("figures"), est_table)  # nothing when empty
    return len(todo), len(keys) - len(todo)


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
    with RunDir.open(
        out,
        kind="stress",
        name=sc.name,
        digest=sc.digest(),
        source=path,
        manifest={
            "data": str(data_path) if data_path else None,
            "seed": sc.seed,
            "repeats": sc.repeats,
            "scenario_content": sc.model_dump(mode="json"),
        },
    ) as rd:
        # -- phase 1: ranks ---------------------------------------------------
        computed = reused = 0
        t_ranks = time.perf_counter()
        scored = sc.source
        if not isinstance(scored, ScoredSourceSpec):  # a ranks file
            source = read_ranks_file(data_path)  # type: ignore[arg-type]
        else:
            rshards = rd.shards("ranks", ARRAYS)
            n_rec = len(scored.recommenders)
            have = rshards.reusable(str(j) for j in range(n_rec))
            todo = [
                Task(f"ranks of recommender {j}", task_seed(sc.seed, 1, j), (sc, data_path, j, max_pairs))
                for j in range(n_rec)
                if str(j) not in have
            ]
            reused += n_rec - len(todo)
            with progress_bar(sc.name, len(todo), "ranks", progress) as advance:

                def record_ranks(_i: int, res: tuple[int, RecommenderRanks, dict, float]) -> None:
                    j, ranks, inf, _secs = res
                    rshards.write(str(j), _ranks_arrays(ranks, inf))
                    advance()

                run_tasks(_ranks_task, todo, backend=backend, on_result=record_ranks)
            computed += len(todo)
            loaded = [_ranks_from_arrays(rshards.read(str(j))) for j in range(n_rec)]
            source = RankSource(scored.label, scored.type, tuple(r for r, _ in loaded), loaded[0][1])
        ranks_seconds = time.perf_counter() - t_ranks
        rd.write_parquet("ranks.parquet", ranks_frame(source).assign(user=lambda f: f["user"].astype(str)))

        # -- phase 2: stress tasks ----------------------------------------------
        config = sc.config()
        schemes, sizes = sc.sampling.schemes, sc.sampling.sizes
        tshards = rd.shards("tasks", ARRAYS)
        cells, todo2, keys = [], [], []
        done = tshards.reusable(
            f"{j}__{scheme}__n{n}" for j in range(len(source.recommenders)) for scheme in schemes for n in sizes
        )
        for j, rec in enumerate(source.recommenders):
            for s, scheme in enumerate(schemes):
                for i, n in enumerate(sizes):
                    key = f"{j}__{scheme}__n{n}"
                    cells.append(key)
                    if key in done:
                        reused += 1
                    else:
                        seed = task_seed(sc.seed, 2, j, s, i)
                        todo2.append(
                            (
                                f"recommender {rec.name!r}, scheme {scheme}, n = {n}",
                                seed,
                                (rec, scheme, n, config, seed),
                            )
                        )
                        keys.append(key)
        task_seconds: list[float] = []
        # the bar counts repeats: each task writes its count to progress/<key>.txt, polled here
        counts = rd.path("progress")
        shutil.rmtree(counts, ignore_errors=True)  # stale counts of an interrupted run
        if progress and todo2:
            counts.mkdir()
        with (
            progress_bar(sc.name, len(todo2) * config.repeats, "stress repeats", progress) as advance,
            _RepeatProgress(counts, keys, config.repeats, advance) as repeats_done,
        ):
            tasks2 = [
                Task(label, seed, (*payload, repeats_done.counter(k) if progress else None))
                for (label, seed, payload), k in zip(todo2, keys)
            ]

            def record(i: int, res: StressResult) -> None:
                tshards.write(keys[i], _result_arrays(res))
                task_seconds.append(res.seconds)
                repeats_done.finished(keys[i])

            run_tasks(_stress_task, tasks2, backend=backend, on_result=record)
        shutil.rmtree(counts, ignore_errors=True)
        computed += len(todo2)
        results = [_result_from_arrays(tshards.read(k)) for k in cells]

        failed: list[str] = []
        us_computed, us_reused = user_sampling_phase(
            sc, source, results, rd, backend, progress, figures, figure_failures=failed
        )
        computed, reused = computed + us_computed, reused + us_reused

        # -- phase 3: tables and figures ----------------------------------------
        with (
            warnings.catch_warnings()
        ):  # NaN cells (exact 0, exact ties) are expected at small K; counted in the tables
            warnings.simplefilter("ignore", RuntimeWarning)
            est = estimate_table(results)
            ordering = ordering_table(results)
            winners = winner_table(results)
            hr = hit_ratio_table(results)
            cut = sc.cutoff_metric_names()  # K&R Figure 6's curve is at curve_k: cutoff families only
            expected = (
                expected_table(source, cut, sc.metrics.curve_k, sc.metrics.curve_sizes) if cut else pd.DataFrame()
            )
            decomp = decomposition_table(results)
            coverage = coverage_table(results)
            fitted_a = fitted_a_table(results)
            rel_err = relative_error_table(est)
            map_err = mapping_error_table(results)
        rd.write_parquet("estimates.parquet", est)
        unscored = [n for n in (r.unscored_note() for r in source.recommenders) if n is not None]
        notes = [
            n for n in (convergence_note(results, config), naive_cutoff_note(config, sizes, schemes)) if n is not None
        ]
        note = few_users_note(source)
        flag = (lambda f: f.assign(warning=note)) if note else (lambda f: f)
        rd.write_csv("summary.csv", flag(est[est["k"].isin(SUMMARY_KS) | est["k"].isna()]))  # + AUC, untruncated AP
        rd.write_csv("ordering.csv", flag(ordering))
        rd.write_csv("winners.csv", flag(winners))
        rd.write_csv("hit_ratio.csv", hr)
        rd.write_csv("expected_vs_n.csv", expected)
        if len(decomp):
            rd.write_csv("decomposition.csv", decomp)
        if len(coverage):
            rd.write_csv("coverage.csv", coverage)
        if len(fitted_a):
            rd.write_csv("mapping_a.csv", fitted_a)
        rd.write_csv("relative_error.csv", rel_err)
        if len(map_err):
            rd.write_csv("mapping_errors.csv", map_err)
        if figures:
            from simrec.stress.figures import plot_stress

            if progress:  # the bar has ended; say what the last seconds are spent on (as simrec run does)
                print(f"drawing figures into {rd.path('figures')} ...", file=sys.stderr, flush=True)
            with drawing(failed, "figures"):
                plot_stress(rd.path("figures"), est, expected, hr, decomp)
        seconds = time.perf_counter() - t_start
        rd.complete(
            tasks_computed=computed,
            tasks_reused=reused,
            recommenders=[r.name for r in source.recommenders],
            sizes={
                "source_kind": source.kind,
                **source.info,
                "evaluated_users": {r.name: r.n_users for r in source.recommenders},
            },
            timings={
                "total_seconds": round(seconds, 3),
                "ranks_seconds": round(ranks_seconds, 3),
                "task_seconds_mean": round(float(np.mean(task_seconds)), 3) if task_seconds else None,
                "task_seconds_max": round(float(np.max(task_seconds)), 3) if task_seconds else None,
                "backend": backend.name,
                "workers": backend.n_workers,
            },
            **({"warnings": unscored} if unscored else {}),
            **({"figures_failed": failed} if failed else {}),
        )
    return StressOutcome(
        Path(out),
        source,
        est,
        ordering,
        winners,
        decomp,
        computed,
        reused,
        seconds,
        (*unscored, *(() if note is None else (note,)), *notes),
        tuple(failed),
        coverage,
    )

"""Benchmark: the time estimate of :mod:`simrec.config.cost` against measured jobs (issue 28).

Two sections, both printing the load (``os.getloadavg``) before and after.

**Units** (``--units``): the per-unit costs that no whole job isolates,
measured on their primitives in this process (CPU seconds, ``process_time``)
beside the module's constants: the Gaussian process of a calibration
(``gp_propose`` on 20-200 points, fitted as ``c_step + c_cube n^3``); a
LensKit fit and the evaluated users' lists (ItemKNN and ImplicitMF at
ML-100K size: ``train_pairs`` and ``model_scores``); a leave-one-out ranking
with its truth (``ranked``); the paired tests (``test_draws``).

**Jobs** (the default): each job runs as ``simrec <job> NAME --out <fresh
folder> -q --jobs J [--quick]`` in a fresh subprocess; per job its predicted
CPU seconds (:meth:`Work.seconds` plus the job's start) and wall seconds on
``J`` workers of a quiet machine (:func:`wall_seconds`, or the announced
line's), beside the measured wall seconds and CPU seconds of the process and
every descendant (polled from ``/proc`` with psutil every 0.2 s, so the
workers of ``--jobs 2`` count: ``RUSAGE_CHILDREN`` misses them, the guide's
``/usr/bin/time`` trap; at most 0.2 s per process is lost), and the ratio
measured / predicted CPU (the target: within [0.67, 1.5]). On a loaded
machine the measured wall exceeds the prediction by about the load / cores:
compare the CPU columns; the quiet wall is about (CPU - serial part) /
workers + serial part.

Rows: ``run:quickstart`` (pairs, untrained scores), ``run:lenskit-cf``
(LensKit fits and lists), ``stress:sampled-sim-ibp-pop`` (draws, fits,
truth rankings), ``run:debias-pop`` (``[debias]``: estimates) beside
``run:debias-pop:plain`` (the same without its ``[debias]`` section),
``run:bench/cost-significance.toml`` (``[significance]``),
``calibrate:bench/cost-calibrate.toml`` (a short calibration: 60 calls, 50
GP proposals), ``calibrate:bench/cost-response.toml`` (a response objective:
LensKit fits on every trial), ``sim-to-real:ml-100k/ibp-pop`` and
``sim-to-real:ml-1m/lda-pop`` (``simrec sim-to-real`` of the preset on its
dataset, 3 replicates of 200 evaluated users), ``assess:ml100k-assess:quick``
and ``assess:ml1m-assess:quick`` (``--jobs 2``: the quick sizes' 2-minute
target).

Seen on the build machine (2 cores shared with other jobs, load 2.4-3.5, 1 Dec 2026), predicted / measured
CPU s (ratio): quickstart 9.8 / 8.2 (0.83), lenskit-cf 54.8 / 43.8 (0.80), sampled-sim-ibp-pop 220 / 207 (0.94),
debias-pop 13.1 / 11.9 (0.91), its plain copy 4.4 / 3.5 (0.79), cost-significance 41.0 / 36.0 (0.88),
cost-calibrate 17.7 / 18.1 (1.02), ml100k-assess --quick --jobs 2 57.6 / 50.4 (0.88; wall 51 s, predicted 32 s
quiet), ml1m-assess --quick --jobs 2 141.5 / 135.3 (0.96; wall 137 s, predicted 74 s quiet). Quiet (load
0.8-1.2, 2 Dec 2026): cost-response 16.5 / 18.7 (1.14), sim-to-real ml-100k/ibp-pop 20.4 / 12.0 (0.59),
sim-to-real ml-1m/lda-pop 47.2 / 35.0 (0.74).

Run: ``python bench/bench_cost_model.py [--units] [--jobs 1] [NAME ...]``
(names ``job:name[:quick|:plain]``; ``--all`` adds the full ml100k-assess).
Needs ``../shared/data`` (or ``SIMREC_DATA``) for the dataset-based jobs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

DEFAULT = [
    "run:quickstart",
    "run:lenskit-cf",
    "stress:sampled-sim-ibp-pop",
    "run:debias-pop:plain",
    "run:debias-pop",
    "run:bench/cost-significance.toml",
    "calibrate:bench/cost-calibrate.toml",
    "calibrate:bench/cost-response.toml",
    "sim-to-real:ml-100k/ibp-pop",
    "sim-to-real:ml-1m/lda-pop",
    "assess:ml100k-assess:quick",
    "assess:ml1m-assess:quick",
]
LARGE = ["assess:ml100k-assess"]
#: Jobs measured with two workers whatever ``--jobs`` says (the quick sizes' target is on 2 cores).
TWO_WORKERS = {"assess:ml100k-assess:quick", "assess:ml1m-assess:quick"}


#: Replicates and evaluated users of the rows ``sim-to-real:<dataset>/<cell>`` (the preset on its dataset).
SIM_TO_REAL_REPLICATES, SIM_TO_REAL_USERS = 3, 200


def _dataset(preset: str) -> Path:
    """The dataset folder of a shipped preset ``<dataset>/<cell>`` (``SIMREC_DATA`` or ``../shared/data``)."""
    base = Path(os.environ.get("SIMREC_DATA") or ROOT.parent / "shared" / "data")
    return base / preset.split("/")[0]


def _name_path(name: str) -> str:
    return str(ROOT / name) if name.endswith(".toml") else name


def _plain_copy(name: str, folder: Path) -> str:
    """A run scenario without its ``[debias]`` / ``[significance]`` sections (the row it is compared with)."""
    from simrec.config.files import resolve_scenario_path

    text = resolve_scenario_path(name, kind="run").read_text()
    for section in ("[debias]", "[significance]"):
        if section in text:
            text = text[: text.index(section)]
    path = folder / f"{Path(name).stem}-plain.toml"
    path.write_text(text)
    return str(path)


def predicted(job: str, name: str, quick: bool = False):
    """The job's counted work, as the CLI counts it during validation (:mod:`simrec.cli`)."""
    if job == "run":
        from simrec.config.run import load_scenario

        return load_scenario(name)[0].work()
    if job == "stress":
        from simrec.config.stress import load_stress_scenario

        sc, path = load_stress_scenario(name)
        return sc.estimated_work(path)
    if job == "assess":
        from simrec.config.assess import load_assessment

        return load_assessment(name, quick=quick).work()
    if job == "calibrate":
        from simrec.config.sweep import load_sweep_spec

        return load_sweep_spec(name).work(name)
    if job == "sim-to-real":
        from simrec.calibration import ResponseProtocol
        from simrec.config.models import WorldSpec
        from simrec.datasets import load_movielens
        from simrec.studies.sim_to_real import sim_to_real_work

        world = WorldSpec.from_preset(name, ROOT)
        protocol = ResponseProtocol(max_users=SIM_TO_REAL_USERS)
        observed = load_movielens(_dataset(name))
        return sim_to_real_work(observed, [world], protocol, replicates=SIM_TO_REAL_REPLICATES)
    raise SystemExit(f"unknown job {job!r} (run, stress, assess, calibrate, sim-to-real)")


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``cmd`` and every descendant (psutil polls), and its stderr."""
    import psutil

    seen: dict[int, float] = {}
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    top = psutil.Process(proc.pid)
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            try:
                procs = [top, *top.children(recursive=True)]
            except psutil.Error:
                procs = []
            for p in procs:
                try:
                    t = p.cpu_times()
                    seen[p.pid] = t.user + t.system
                except psutil.Error:
                    pass
            done.wait(0.2)

    thread = threading.Thread(target=poll, daemon=True)
    t0 = time.perf_counter()
    thread.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    thread.join()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    return wall, sum(seen.values()), err


def jobs_section(names: list[str], jobs: int) -> None:
    from simrec.config.cost import MEASURED_ON, cores, cpu_seconds, wall_seconds

    print(f"cost constants measured on: {MEASURED_ON}")
    print(
        f"{'job':40s} {'J':>2s} {'pred CPU s':>10s} {'pred wall s':>11s} {'meas wall s':>11s} {'meas CPU s':>10s} "
        f"{'CPU ratio':>9s}  load"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for item in names:
            job, name, *size = item.split(":")
            quick, plain = size == ["quick"], size == ["plain"]
            target = _plain_copy(name, Path(tmp)) if plain else _name_path(name)
            work = predicted(job, target, quick)
            j = 2 if item in TWO_WORKERS else jobs
            cpu_pred = cpu_seconds(work, j, max(cores(), j))
            wall_pred = wall_seconds(work, j, max(cores(), j))
            cmd = [sys.executable, "-c", "from simrec.cli import main; main()", job]
            if job == "sim-to-real":  # one process (no --jobs); its tables printed, no folder
                cmd += [str(_dataset(name)), "-p", name, "-r", str(SIM_TO_REAL_REPLICATES)]
                cmd += ["--max-users", str(SIM_TO_REAL_USERS), "-q"]
            else:
                cmd += [target, "--out", str(Path(tmp) / f"out{len(rows)}"), "-q", "--jobs", str(j)]
                cmd += ["--quick"] if quick else []
            load = os.getloadavg()[0]
            wall, cpu, _ = measure(cmd)
            rows.append((item, work))
            print(
                f"{item:40s} {j:2d} {cpu_pred:10.1f} {wall_pred:11.1f} {wall:11.1f} {cpu:10.1f} {cpu / cpu_pred:9.2f}"
                f"  {load:.1f}-{os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print("work counted:")
    for item, work in rows:
        print(f"  {item}: " + ", ".join(f"{k}={v:.3g}" for k, v in vars(work).items() if v))


def _cpu(fn, repeat: int = 1) -> float:
    t0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t0) / repeat


def units_section() -> None:
    import warnings

    import numpy as np

    import simrec.config.cost as cost

    print(f"{'unit':34s} {'measured s/unit':>15s} {'constant':>10s}  detail")

    def row(unit: str, measured: float, const: str, detail: str) -> None:
        print(f"{unit:34s} {measured:15.3g} {getattr(cost, const):10.3g}  {detail}", flush=True)

    # the Gaussian process: one proposal on n points, fitted as c_step + c_cube n^3 (least squares)
    from simrec.calibration._skopt import gp_propose  # noqa: PLC2701 - the step the search times, on its own
    from simrec.calibration.space import Dim

    dims = [
        Dim("a", 1.0, 500.0, log=True),
        Dim("c", 0.1, 10.0),
        Dim("s", 0.0, 0.9),
        Dim("m", 1, 50, integer=True),
        Dim("al", 0.1, 3.0, log=True),
    ]  # an IBP x Pareto cell's five dimensions
    rng = np.random.default_rng(0)
    gp_propose(dims, [[1.0, 1.0, 0.1, 2, 1.0]], [1.0], random_state=0)  # imports
    ns, ts = [], []
    for n in (20, 50, 80, 110, 140, 170, 200):
        xs = [
            [
                float(np.exp(rng.uniform(0, 6.2))),
                rng.uniform(0.1, 10),
                rng.uniform(0, 0.9),
                int(rng.integers(1, 50)),
                float(np.exp(rng.uniform(-2.3, 1.1))),
            ]
            for _ in range(n)
        ]
        ys = [float(x[1] + 3 * x[2] + rng.normal(scale=0.3)) for x in xs]
        t = _cpu(lambda: gp_propose(dims, xs, ys, random_state=int(rng.integers(1000))), repeat=3)
        ns.append(n)
        ts.append(t)
        print(f"  gp_propose on {n:3d} points: {t:.3f} s CPU", flush=True)
    a = np.column_stack([np.ones(len(ns)), np.asarray(ns, float) ** 3])
    (step, cube), *_ = np.linalg.lstsq(a, np.asarray(ts), rcond=None)
    row("gp_steps", step, "SECONDS_PER_GP_STEP", "intercept of the fit")
    row("gp_cubes", cube, "SECONDS_PER_GP_CUBE", "slope in n^3")

    # LensKit: a fit and every evaluated user's lists, at ML-100K size (quickstart's ibp-pop world)
    from simrec.config.assess import load_assessment
    from simrec.config.run import load_scenario
    from simrec.experiment import Evaluation, replicate_data
    from simrec.recommenders import LensKitRecommender, Popular, lists_of

    sc, _ = load_scenario("quickstart")
    world = sc.worlds()[3]
    worlds = [("ML-100K", world, None)]
    try:  # ML-1M size: ml1m-assess's best world (its LensKit costs dominate the quick size), lists of 500 users
        a = load_assessment("ml1m-assess", quick=True)
        worlds.append(("ML-1M", a.run_scenario(a.best_cells()).worlds()[0], 500))
    except Exception as exc:  # noqa: BLE001 - the dataset is needed to validate the assessment
        print(f"  (no ML-1M row: {exc})")
    for size, w, max_users in worlds:
        data = replicate_data(w, Evaluation(recommenders=(Popular(),), n=10, max_users=max_users), 1)
        train, users = data.split.train, data.evaluated
        for name, params in (("ItemKNNScorer", {"max_nbrs": 20}), ("ImplicitMFScorer", {"embedding_size": 50})):
            rec = LensKitRecommender(name, **params)
            fit = _cpu(lambda: rec.fit(train, 1))
            lists = _cpu(lambda: lists_of(rec, train, None, 10, 1, users))
            what = f"{name}, {size}"
            row(
                f"train_pairs ({what})",
                fit / train.n_pairs,
                "SECONDS_PER_TRAIN_PAIR",
                f"{train.n_pairs} pairs: {fit:.2f} s",
            )
            cells = users.size * train.n_items
            row(f"model_scores ({what})", lists / cells, "SECONDS_PER_MODEL_SCORE", f"{cells:.3g} cells: {lists:.2f} s")

    # a leave-one-out ranking with its truth: Popular on the same world (its scores: cheap)
    from simrec.stress.sources import score_ranks, simulate_loo_data

    loo = simulate_loo_data(world, 2)
    relevant = float(loo.relevant[loo.users].sum()) / loo.users.size
    t = _cpu(lambda: score_ranks(Popular(), loo, 3))
    ranked = loo.users.size * loo.train.n_items * (1 + relevant)
    row("ranked", t / ranked, "SECONDS_PER_RANKED", f"{ranked:.3g} (1 + {relevant:.0f} relevant per user): {t:.2f} s")

    # the paired tests on 943 users: a permutation and a bootstrap of 1,000 resamples, per user x resample
    from simrec.significance import BootstrapPercentile, Permutation

    gen = np.random.default_rng(4)
    a_vals, b_vals = gen.random(943), gen.random(943)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for test in (Permutation(1000), BootstrapPercentile(1000)):
            t = _cpu(lambda: test(a_vals, b_vals, rng=gen), repeat=20)
            row(f"test_draws ({test.name})", t / (943 * 1000), "SECONDS_PER_TEST_DRAW", f"{t * 1e3:.1f} ms per test")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="job:name[:quick|:plain] (default: the rows of the docstring)")
    parser.add_argument("--jobs", type=int, default=1, help="workers of the jobs not measured with 2")
    parser.add_argument("--units", action="store_true", help="only the per-unit section")
    parser.add_argument("--all", action="store_true", help="also the full ml100k-assess")
    args = parser.parse_args()
    from simrec.config.cost import cores

    print(f"load before: {os.getloadavg()}  cores: {cores()}")
    if args.units:
        units_section()
    else:
        jobs_section(args.names or DEFAULT + (LARGE if args.all else []), args.jobs)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

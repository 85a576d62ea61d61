"""Benchmark the stress harness (simrec issue 6); prints a plain table.

Two studies, each run through ``run_stress_scenario`` (the code path of
``simrec stress``) on ``--jobs`` processes:

* ``ml100k`` — the shipped ``sampled-ml100k`` scenario in full (ML-100K,
  leave-one-out, Popular/Random/ItemKNN/ImplicitMF, 4 schemes, n = 100 and
  500, 100 repeats, every estimator). Needs ML-100K (SIMREC_DATA or
  ../shared/data/ml-100k).
* ``ml20m`` — a synthetic ranks file of ML-20M size (N = 20,720 items,
  M = 136,677 users, 5 recommenders with geometric rank distributions of
  different scales), binomial sampling, n = 100, 100 repeats, every estimator.
  Target: within 15 minutes on 2 cores.

Wall time is measured around the run; peak memory is the largest resident
set of this process (``ru_maxrss``) and the largest summed resident set of
its worker processes (polled from /proc twice a second).

Usage::

    python bench/bench_stress.py --study ml20m --jobs 2
    python bench/bench_stress.py --study ml100k --jobs 2
    python bench/bench_stress.py --study ml20m --repeats 10     # quicker, scaled
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from simrec.config.stress import load_stress_scenario
from simrec.studies import run_stress_scenario
from simrec.tasks import make_backend

ML20M = {"n_items": 20_720, "n_users": 136_677, "recommenders": {"A": 30, "B": 150, "C": 600, "D": 2500, "E": 8000}}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _WorkerMemory:
    """Polls /proc twice a second: the largest summed RSS of this process's descendants (the workers)."""

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _descendants(self) -> list[int]:
        parent: dict[int, int] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as fh:
                        parent[int(d)] = int(fh.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    continue
        out, frontier = [], [os.getpid()]
        while frontier:
            kids = [p for p, pp in parent.items() if pp in frontier]
            out += kids
            frontier = kids
        return out

    def _rss_mb(self, pid: int) -> float:
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak_mb = max(self.peak_mb, sum(self._rss_mb(p) for p in self._descendants()))

    def __enter__(self) -> "_WorkerMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def synthetic_ranks_file(path: Path, seed: int = 0) -> Path:
    """Write the ML-20M-sized synthetic ranks file (Parquet)."""
    rng = np.random.default_rng(seed)
    N, M = ML20M["n_items"], ML20M["n_users"]
    frames = []
    for name, scale in ML20M["recommenders"].items():
        ranks = np.minimum(rng.geometric(1 / scale, M), N)
        frames.append(pd.DataFrame({"user": np.arange(M), "recommender": name, "rank": ranks, "n_candidates": N}))
    pd.concat(frames, ignore_index=True).to_parquet(path, index=False)
    return path


def ml20m_scenario(folder: Path, repeats: int) -> Path:
    ranks = synthetic_ranks_file(folder / "ml20m_ranks.parquet")
    text = f"""
kind = "stress"
name = "bench-ml20m"
seed = 1
repeats = {repeats}
[source]
type = "file"
path = "{ranks}"
[sampling]
schemes = ["binomial"]
sizes = [100]
[metrics]
curve_sizes = [100]
"""
    p = folder / "ml20m.toml"
    p.write_text(text)
    return p


def run(study: str, jobs: int, repeats: int | None, out: Path | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if study == "ml20m":
            scenario = ml20m_scenario(folder, repeats or 100)
        else:
            scenario = "sampled-ml100k"
        sc, path = load_stress_scenario(scenario)
        if repeats is not None and study == "ml100k":
            sc = sc.model_copy(update={"repeats": repeats})
        target = out or folder / "out"
        t0 = time.perf_counter()
        with _WorkerMemory() as mem, make_backend(None, jobs) as backend:
            outcome = run_stress_scenario(sc, path, target, backend=backend, progress=False, figures=True)
        secs = time.perf_counter() - t0
        self_mb, child_mb = _peak_mb(), mem.peak_mb
        n_tasks = outcome.computed
        rows = len(outcome.estimates)
        return {
            "study": study,
            "repeats": sc.repeats,
            "jobs": jobs,
            "tasks": n_tasks,
            "rows": rows,
            "wall_s": secs,
            "peak_parent_mb": self_mb,
            "peak_worker_mb": child_mb,
            "estimates": outcome.estimates,
            "winners": outcome.winners,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", choices=["ml20m", "ml100k", "both"], default="both")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=None, help="override the repeats (default: 100)")
    ap.add_argument("--out", type=Path, default=None, help="keep the outputs here (a folder per study)")
    args = ap.parse_args()
    studies = ["ml20m", "ml100k"] if args.study == "both" else [args.study]
    print(
        f"{'study':8s} {'repeats':>7s} {'jobs':>4s} {'tasks':>5s} {'rows':>8s} {'wall s':>8s} "
        f"{'parent MB':>9s} {'workers MB':>10s}"
    )
    for s in studies:
        r = run(s, args.jobs, args.repeats, None if args.out is None else args.out / s)
        print(
            f"{r['study']:8s} {r['repeats']:7d} {r['jobs']:4d} {r['tasks']:5d} {r['rows']:8d} {r['wall_s']:8.1f} "
            f"{r['peak_parent_mb']:9.0f} {r['peak_worker_mb']:10.0f}",
            flush=True,
        )
        est = r["estimates"]
        k10 = est[est["k"] == 10].assign(abs_rel=lambda f: f["rel_error"].abs())
        tab = k10.pivot_table(
            index=["scheme", "n", "estimator"], columns="metric", values="abs_rel", aggfunc="mean", sort=False
        )
        print(f"  mean |relative error| at K = 10 over recommenders ({s}):")
        print("  " + tab.round(3).to_string().replace("\n", "\n  "))


if __name__ == "__main__":
    main()

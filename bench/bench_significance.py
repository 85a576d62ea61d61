"""Benchmark: the paired tests of simrec.significance at ML-1M size, 6,040 users x 100 replicates, wall and CPU.

Data: per-user values of two systems (NDCG-like: Beta(0.6, 2) per user, two
correlated systems, values rounded to 3 decimals so that ties and zero
differences occur as in top-N metrics), shape (100, 6040), seeded.

Rows, each the median of ``--repeat`` runs of wall time (``perf_counter``)
and CPU time of this process (``process_time``, which includes BLAS
threads):

* ``simrec`` — each test of :data:`simrec.significance.PAIRED_TESTS` (default
  resamples: 2,000 bootstrap, 9,999 permutation) on the whole batch, one call;
* ``simrec, ragged`` — the random tests with 10% of the values NaN at random
  (paired deletion leaves every replicate a different number of users: the
  bootstrap then shares one stream of uniforms, each replicate resampling its
  own users in one compiled pass; the permutation test shares its signs);
* ``scipy loop`` — the reference: scipy's function on one replicate at a
  time (``ttest_rel``, ``wilcoxon``, ``binomtest``, ``bootstrap`` percentile
  and BCa with 2,000 resamples, ``permutation_test`` with 9,999), timed on
  ``--scipy-replicates`` replicates and scaled to 100 (the slow ones);
* ``numpy floor`` — mean and sd of the differences (what any test must read);
* ``tukey_hsd`` — k = 4 systems, 10 replicates, beside scipy's one-way
  ``tukey_hsd`` per replicate.

The machine load (``uptime``) is printed before and after. Target (issue 26):
< 2 s CPU per test per pair for 6,040 users x 100 replicates.

Run: ``python bench/bench_significance.py`` (about a minute on a quiet
machine; ``--quick`` for 1,000 users x 20 replicates).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
import warnings

import numpy as np
from scipy import stats

from simrec.significance import PAIRED_TESTS, UndefinedStatisticWarning, tukey_hsd, tukey_hsd_independent


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - no uptime binary
        return "uptime unavailable"


def _data(seed: int, n_replicates: int, n_users: int, k: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.beta(0.6, 2.0, (n_replicates, n_users))
    out = []
    for j in range(k):
        noise = rng.normal(0, 0.08, base.shape) * (rng.random(base.shape) < 0.6)
        out.append(np.round(np.clip(base + noise - 0.002 * j, 0, 1), 3))
    return out


def _time(fn, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def _scipy_reference(name: str, a: np.ndarray, b: np.ndarray, seed: int):
    """scipy's test on one replicate (a, b of shape (n_users,))."""
    d = a - b
    rng = np.random.default_rng(seed)
    if name == "paired_t":
        return lambda: stats.ttest_rel(a, b)
    if name == "wilcoxon":
        return lambda: stats.wilcoxon(a, b)
    if name == "sign":
        return lambda: stats.binomtest(int((d > 0).sum()), int((d != 0).sum())).proportion_ci()
    if name.startswith("bootstrap"):
        method = "BCa" if name.endswith("bca") else "percentile"
        return lambda: stats.bootstrap((d,), np.mean, method=method, n_resamples=2000, rng=rng)
    return lambda: stats.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=9999, vectorized=True, rng=rng
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=6040)
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scipy-replicates", type=int, default=1, help="replicates timed for the slow scipy loops")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.users, args.replicates, args.repeat = 1000, 20, 1
    warnings.simplefilter("ignore", UndefinedStatisticWarning)
    print(f"start: {_uptime()}")
    R, n = args.replicates, args.users
    a, b = _data(args.seed, R, n)
    ragged_a = np.where(np.random.default_rng(args.seed + 1).random(a.shape) < 0.1, np.nan, a)
    print(f"\n{R} replicates x {n} users; median of {args.repeat} runs; seconds\n")
    print(f"{'test':22s} {'line':34s} {'wall':>8s} {'CPU':>8s}")
    wall, cpu = _time(lambda: ((a - b).mean(axis=1), (a - b).std(axis=1, ddof=1)), args.repeat)
    print(f"{'(all)':22s} {'numpy floor: mean and sd of d':34s} {wall:8.3f} {cpu:8.3f}")
    for test in PAIRED_TESTS:
        wall, cpu = _time(lambda: test(a, b, rng=args.seed), args.repeat)
        print(f"{test.name:22s} {'simrec, one call':34s} {wall:8.3f} {cpu:8.3f}")
        if test.random:
            wall, cpu = _time(lambda: test(ragged_a, b, rng=args.seed), args.repeat)
            print(f"{'':22s} {'simrec, ragged (10% NaN)':34s} {wall:8.3f} {cpu:8.3f}")
        slow = test.random
        k = min(R, args.scipy_replicates) if slow else R
        calls = [_scipy_reference(test.name, a[r], b[r], args.seed + r) for r in range(k)]

        def loop(calls=calls):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for call in calls:
                    call()

        wall, cpu = _time(loop, 1 if slow else args.repeat)
        label = f"scipy loop ({k} replicates x {R / k:g})" if k < R else "scipy loop, one replicate at a time"
        print(f"{'':22s} {label:34s} {wall * R / k:8.3f} {cpu * R / k:8.3f}")
    k_sys, reps = 4, min(10, R)
    values = np.stack(_data(args.seed + 2, reps, n, k=k_sys), axis=1)  # (reps, k, n)
    wall, cpu = _time(lambda: tukey_hsd(values), 1)
    print(f"\n{'tukey_hsd':22s} {f'simrec, k = {k_sys}, {reps} replicates':34s} {wall:8.3f} {cpu:8.3f}")
    wall, cpu = _time(lambda: tukey_hsd_independent(values), 1)
    print(f"{'':22s} {'scipy tukey_hsd loop (one-way)':34s} {wall:8.3f} {cpu:8.3f}")
    print(f"\nend:   {_uptime()}")


if __name__ == "__main__":
    main()

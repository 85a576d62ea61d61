"""Benchmark: one IBP-Pop replicate per step, from ML-100K to ML-20M size.

Each size runs ``--repeats`` times (default 3), each time in a fresh
subprocess (so its peak RSS, ``ru_maxrss``, is its own), the sizes
interleaved (ML-100K, ML-1M, ..., then again) so that a drift of the
machine's load touches every size alike. Every run times, in CPU seconds
(user + system), every step of :func:`simrec.experiment.run_replicate`, in
its order and with its seeds: truth (``IBP.generate``), observe (popularity
sampler, truncated Pareto), split, true relevance, then per recommender
(Oracle, Popular, Random) its ``recommend``, and the measurement of the three
recommenders' lists (precision, recall, nDCG, reciprocal rank) against
observed and true relevance — 24 measurements, each relevance set looked up
once for all lists (:func:`simrec.metrics.measure_lists_many`, as
``run_replicate``). The tables give the median over the repeats, the first
of CPU seconds, the second and third of their user and system parts (each
the median of its own). A line checks that the
steps reproduce ``run_replicate``'s results, and a last table gives a SHA-256
digest (first 12 hex digits) of every step's output (sparse structure or
list array, raw bytes and dtype; not timed; identical in every repeat, or
the script says so), so a speed change can show that it moved no number and
no random draw.

Sizes (users x items, observed pairs): ML-100K 943 x 1,682 (100K), ML-1M
6,040 x 3,706 (1M), Steam 70,912 x 10,978 (5M), ML-20M 138,493 x 26,744
(20M). IBP's c is solved so that E[items] = the size's items; the Pareto
shape so that E[observed pairs] = the target (as in bench_generators.py).

A further table gives the peak RSS reached by the end of each step (where
the memory goes). The exponent column is the growth exponent of each step from ML-1M to ML-20M
size, log(t_20M / t_1M) / log(pairs_20M / pairs_1M), with pairs the
observed pairs (the truth step: the true pairs). The reference line is numpy
drawing and sorting as many random int64 keys as the size's true pairs
(``np.sort(rng.integers(...))``, the least a generator of that many pairs does).

The machine. On a VM that hands freed memory back to its host (this one: a
Firecracker guest booted with ``page_reporting.page_reporting_order=11``,
see /proc/cmdline), memory the guest frees is reported to the host within
seconds and discarded; touching it again costs the host's first touch:
about 2 ms of system time per MiB (measured here: a fresh 160 MB array
costs 0.2 ms/MiB within 5 s of a warm-up and 2.2 ms/MiB 20 s later),
10-20 times the guest's own page fault. Arrays below glibc's mmap threshold
(32 MiB at most) stay in the process's heap and never pay it, so it falls on
the largest sizes only and inflates their growth exponents with a cost that
is the host's. The second table shows how much of each step is system time.
simrec's hot paths work in blocks of rows whose temporaries stay below that
threshold; what remains is mostly the outputs themselves, which are fresh
memory at any size.

The new worlds (issue 24): the same sizes, truth + observation only, each
model in its own fresh process (so the peak RSS is that of its truth and
observation together): ``HPF`` (K = 20, a = c = 0.3, a' = c' = 1, b' = d'
solved so that E[true pairs] = 2 x the observed target) and
``LatentFactor`` (K = 10, s = γ = 1.75, activity log-sd 1, λ solved for
E[true pairs] = 1.5 x the target), both observed by ``PreferenceSampler``
(a = b = 1, dislike rate 0.1) with the truncated-Pareto shape solved for
E[observed pairs] = the target; and ``factor-preset``, the latent-factor
world of the shipped preset ``ml-1m/factor-pref`` (its K = 26, s, γ = 4,
activity log-sd and sampler exponents, no dislikes), λ and the Pareto shape
solved in the same way; and ``clustered``, the factor row's world with item
clusters (``ClusteredFactor``, K = 10, G = 20, s = t = γ = 1.75, activity
log-sd 1, λ and the observation as the factor row's). Their table gives CPU seconds per step, the
peak RSS, the pairs, the same reference line measured in that process and
the digests of the truth and the observation (as above).
The factor model is dense by design (O(U I K) flops for its weights, 3.7e9
cells at ML-20M size; the clustered one O(U I (K + G))); the HPF draws in
O(pairs + (U + I) K).

Compilation. simrec's compiled kernels (numba) are compiled at their first
use on a machine and cached (simrec._cache); a run in a fresh checkout or
cache would otherwise count several seconds of compilation in its first
process's steps. Before the timed runs, one untimed replicate at the
smallest size is run with numba loaded first, so that every compiled path
runs (a kernel runs from a size threshold on, or once numba is loaded) and
its kernels are compiled for the timed runs; the script prints how many
that warm-up compiled and how many the timed runs still compiled (0: the
times hold no compilation). Each timed process still pays for importing
numba and loading the cached kernels (about 0.3 s, in the truth step, whose
first kernel loads numba), as any fresh process does. ``--no-warmup`` skips it.

Usage: python bench/bench_scale.py [--sizes ML-100K,ML-1M,Steam,ML-20M] [--repeats 3]
[--worlds ibp,hpf,factor,factor-preset,clustered]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIZES = {
    # name: users, items, observed target, Pareto bounds, IBP alpha and sigma
    "ML-100K": dict(n_users=943, n_items=1682, target=100_000, m_low=20.0, m_high=737.0, alpha=300.0, sigma=0.1),
    "ML-1M": dict(n_users=6040, n_items=3706, target=1_000_000, m_low=20.0, m_high=2314.0, alpha=400.0, sigma=0.1),
    "Steam": dict(n_users=70912, n_items=10978, target=5_000_000, m_low=1.0, m_high=7000.0, alpha=150.0, sigma=0.3),
    "ML-20M": dict(n_users=138493, n_items=26744, target=20_000_000, m_low=20.0, m_high=9254.0, alpha=300.0, sigma=0.3),
}
STEPS = [
    "truth",
    "observe",
    "split",
    "true relevance",
    "Oracle recommend",
    "Popular recommend",
    "Random recommend",
    "measure (3 recs)",
]


def _digest(out) -> str:
    """SHA-256 of a step's output: its arrays' raw bytes and dtypes, in a fixed order (no copies)."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()

    def add(a):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(memoryview(a).cast("B"))

    def walk(o):
        if isinstance(o, np.ndarray):
            add(o)
        elif hasattr(o, "indptr"):  # a CSR array
            add(o.indptr)
            add(o.indices)
        elif hasattr(o, "matrix"):  # Interactions (a graded one's preference too)
            walk(o.matrix)
            if getattr(o, "preference", None) is not None:
                add(o.preference)
        elif hasattr(o, "observed"):  # Observed
            walk(o.observed)
            add(o.truth_rows)
        elif hasattr(o, "train"):  # Split
            walk(o.train)
            walk(o.test)
        elif isinstance(o, (list, tuple)):
            for x in o:
                walk(x)
        elif isinstance(o, dict):  # metric -> values
            for key in sorted(o):
                h.update(str(key).encode())
                walk(np.asarray(o[key]))
        else:
            raise TypeError(f"cannot digest {type(o).__name__}")

    walk(out)
    return h.hexdigest()[:12]


def _child(name: str) -> dict:
    """One replicate at one size, step by step, in this (fresh) process."""
    import warnings

    import numpy as np
    import scipy.sparse as sp
    from scipy.optimize import brentq

    from simrec import as_generator, metrics, spawn_seeds
    from simrec.experiment import Evaluation, World, run_replicate, true_relevance
    from simrec.observation import PopularitySampler, TruncatedPareto, observe
    from simrec.preference import IBP
    from simrec.recommenders import Oracle, Popular, RandomRecommender
    from simrec.split import holdout

    p = SIZES[name]
    c = brentq(
        lambda c: IBP(p["n_users"], p["alpha"], c, p["sigma"]).expected_items() - p["n_items"],
        -p["sigma"] + 1e-9,
        1e4,
        xtol=1e-10,
    )
    model = IBP(p["n_users"], p["alpha"], c, p["sigma"])
    seed = 20240613
    children = spawn_seeds(seed, 6)
    cpu: dict[str, float] = {}
    system: dict[str, float] = {}
    rss: dict[str, float] = {}

    digest: dict[str, str] = {}

    def step(label, fn, *args):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        out = fn(*args)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu[label] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        system[label] = r1.ru_stime - r0.ru_stime
        rss[label] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
        digest[label] = _digest(out)
        return out

    truth = step("truth", model.generate, as_generator(children[0]))
    # Pareto shape for the target (setup, not timed): E[sum_u min(S_u, |truth_u|)] = target
    caps = truth.user_counts()
    k = np.arange(2, int(caps.max()) + 1)

    def expected(a):
        d = TruncatedPareto(p["m_low"], a, p["m_high"])
        return float(np.concatenate(([0.0, 1.0], 1.0 + np.cumsum(1.0 - d.cdf(k))))[caps].sum())

    profile = TruncatedPareto(
        p["m_low"], brentq(lambda a: expected(a) - p["target"], 0.01, 50.0, xtol=1e-6), p["m_high"]
    )
    sampler = PopularitySampler()
    recs = (Oracle(), Popular(), RandomRecommender())
    ev = Evaluation(recommenders=recs)
    obs = step("observe", observe, truth, profile, sampler, as_generator(children[1]))
    split = step("split", holdout, obs.observed, ev.test_fraction, as_generator(children[2]))
    true_rel = step("true relevance", true_relevance, truth, obs.truth_rows, split.train)
    evaluated = np.flatnonzero(split.test.user_counts() > 0)
    rels = [sp.csr_array(split.test.matrix[evaluated]), sp.csr_array(true_rel[evaluated])]
    means = {}
    all_lists = [
        step(f"{rec.name} recommend", rec.recommend, split.train, true_rel, ev.n, as_generator(children[3 + j]))[
            evaluated
        ]
        for j, rec in enumerate(recs)
    ]

    def measure():
        # as run_replicate: each relevance set looked up once for every recommender's lists
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", metrics.UndefinedMetricWarning)
            return [metrics.measure_lists_many(all_lists, rel, ev.metrics) for rel in rels]

    for kind, per_rec in zip(("observed", "true"), step("measure (3 recs)", measure)):
        for rec, vals in zip(recs, per_rec):
            for m, v in vals.items():
                means[rec.name, m, kind] = float(np.nanmean(v))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    # the reference line: draw and sort as many random keys as there are true pairs
    t0 = time.process_time()
    np.sort(np.random.default_rng(0).integers(0, p["n_users"] * truth.n_items, truth.n_pairs))
    ref = time.process_time() - t0
    check = ""
    if name != "ML-20M":  # the same replicate through run_replicate (not at ML-20M: it would double the time)
        res = run_replicate(World(name, model, profile, sampler), ev, seed).results
        got = {(r.recommender, r.metric, r.truth): r.value for r in res.itertuples()}
        check = "identical" if all(math.isclose(got[k], v, rel_tol=1e-12) for k, v in means.items()) else "DIFFERENT"
    return dict(
        cpu=cpu,
        sys=system,
        rss=rss,
        digest=digest,
        peak_gib=peak,
        truth_pairs=int(truth.n_pairs),
        observed_pairs=int(obs.observed.n_pairs),
        ref=ref,
        check=check,
    )


NEW_STEPS = ["truth", "observe"]
#: The preset whose parameters the ``factor-preset`` world takes (lam and the profile solved for each size).
FACTOR_PRESET = "ml-1m/factor-pref"


def _child_world(name: str, model: str) -> dict:
    """Truth + observation of one new world (``hpf``, ``factor``, ``factor-preset``, ``clustered``) at one size, in
    this (fresh) process."""
    import numpy as np
    from scipy.optimize import brentq

    from simrec import as_generator, spawn_seeds
    from simrec.observation import PreferenceSampler, TruncatedPareto, observe
    from simrec.preference import HPF, ClusteredFactor, LatentFactor

    p = SIZES[name]
    U, I, target = p["n_users"], p["n_items"], p["target"]
    if model == "hpf":

        def make(x):
            return HPF(U, I, 20, a=0.3, a_prime=1.0, b_prime=x, c=0.3, c_prime=1.0, d_prime=x)

        x = brentq(lambda x: np.log(make(x).expected_pairs() / (2 * target)), 0.01, 1e5, xtol=1e-8)
    else:
        pref, obs_sampler = {}, {}
        if model == "factor-preset":  # the shipped preset's parameters; its lam and profile rescaled below
            from simrec.config.files import load_preset

            tables = load_preset(FACTOR_PRESET)
            pref, obs_sampler = tables["preference"], dict(tables["observation"]["sampler"])
            obs_sampler.pop("model")
        defaults = {"n_factors": 10, "signal": 1.75, "pop_exponent": 1.75, "activity_sd": 1.0}  # the factor row's
        k, s, g, sd = (pref.get(key, d) for key, d in defaults.items())

        def make(x):
            if model == "clustered":  # the factor row's world with 20 item clusters, t = s
                return ClusteredFactor(U, I, k, 20, s, s, g, x, sd)
            return LatentFactor(U, I, k, s, g, x, sd)

        x = brentq(lambda x: make(x).expected_pairs() - 1.5 * target, 1.0, float(I), xtol=1e-8)
    world = make(x)
    sampler = PreferenceSampler(**obs_sampler) if model == "factor-preset" else PreferenceSampler(1.0, 1.0, 0.1)
    children = spawn_seeds(20240613, 2)
    cpu, rss, digest = {}, {}, {}

    def step(label, fn, *args):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        out = fn(*args)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu[label] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        rss[label] = r1.ru_maxrss / 2**20
        digest[label] = _digest(out)
        return out

    if model != "hpf":  # the compiled kernels' one-off start-up (about a second) is not the truth's
        LatentFactor(3, 5, 2, 1.0, 1.0, 2.0).generate(0)
    truth = step("truth", world.generate, as_generator(children[0]))
    caps = truth.user_counts()
    k = np.arange(2, int(caps.max()) + 1)

    def expected(a):  # E[sum_u min(S_u, |truth_u|)] (setup, not timed)
        d = TruncatedPareto(p["m_low"], a, p["m_high"])
        return float(np.concatenate(([0.0, 1.0], 1.0 + np.cumsum(1.0 - d.cdf(k))))[caps].sum())

    # the shape for the target (observed likes = target / (1 + dislike rate), the dislikes the rest); the heaviest
    # tail if even that falls short (a heavy-tailed truth whose small users cap their sizes)
    f = lambda a: expected(a) - target / (1 + sampler.dislike_rate)  # noqa: E731
    alpha = brentq(f, 0.01, 50.0, xtol=1e-6) if f(0.01) > 0 else 0.01
    obs = step(
        "observe", observe, truth, TruncatedPareto(p["m_low"], alpha, p["m_high"]), sampler, as_generator(children[1])
    )
    t0 = time.process_time()
    np.sort(np.random.default_rng(0).integers(0, U * I, truth.n_pairs))
    ref = time.process_time() - t0
    return dict(
        cpu=cpu,
        rss=rss,
        peak_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        truth_pairs=int(truth.n_pairs),
        observed_pairs=int(obs.observed.n_pairs),
        ref=ref,
        param=float(x),
        digest=digest,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per size (medians are printed)")
    ap.add_argument(
        "--worlds",
        default="ibp,hpf,factor",
        help="ibp (the thesis replicate) and/or the new worlds (hpf, factor, factor-preset, clustered)",
    )
    ap.add_argument("--no-warmup", action="store_true", help="no untimed run compiling the kernels first")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--model", default="ibp", help=argparse.SUPPRESS)
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.warm:  # numba first: every compiled path runs at this size, so its kernels are compiled and cached
            import numba  # noqa: F401
        print(json.dumps(_child(args.child) if args.model == "ibp" else _child_world(args.child, args.model)))
        return
    print(
        f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min), "
        f"{os.cpu_count()} CPUs"
    )
    worlds = args.worlds.split(",")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    new = [w for w in worlds if w != "ibp"]
    if new:
        _new_worlds(args.sizes.split(","), new, args.repeats, env)
    if "ibp" not in worlds:
        return
    runs: dict[str, list[dict]] = {name: [] for name in args.sizes.split(",")}
    kernels = _cached_kernels()
    if not args.no_warmup:  # compilation is not a replicate's cost: the numba cache is made warm first
        t0 = time.perf_counter()
        small = min(runs, key=lambda n: SIZES[n]["target"])
        res = subprocess.run([sys.executable, __file__, "--child", small, "--warm"], capture_output=True, env=env)
        if res.returncode:
            sys.exit(res.stderr.decode())
        print(
            f"warm-up: one untimed {small} replicate with numba loaded first ({time.perf_counter() - t0:.1f} s wall); "
            f"kernels compiled by it: {_compiled_since(kernels)}"
        )
        kernels = _cached_kernels()
    for _ in range(args.repeats):
        for name in runs:
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, env=env)
            if res.returncode:
                sys.exit(res.stderr)
            runs[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
            runs[name][-1]["wall"] = time.perf_counter() - t0
    out = {name: _median_run(r) for name, r in runs.items()}
    names = list(out)
    w = 9
    print(f"median of {args.repeats} runs per size\n")
    for title, key in (("step (CPU s)", "cpu"), ("of which user s", "user"), ("of which system s", "sys")):
        print(f"{title:<20}" + "".join(f"{n:>{w}}" for n in names) + f"{'exponent':>{w + 1}}")
        for s in STEPS + ["total"]:
            row = [out[n][key + "_total"] if s == "total" else out[n][key][s] for n in names]
            line = f"{s:<20}" + "".join(f"{v:>{w}.2f}" for v in row)
            if "ML-1M" in out and "ML-20M" in out:
                a, b = out["ML-1M"], out["ML-20M"]
                size = "truth_pairs" if s == "truth" else "observed_pairs"
                ta, tb = (x[key + "_total"] if s == "total" else x[key][s] for x in (a, b))
                line += f"{math.log(tb / ta) / math.log(b[size] / a[size]):>{w + 1}.2f}" if ta > 0 and tb > 0 else ""
            print(line)
        print()
    for label, f in (
        ("wall s (process)", lambda r: r["wall"]),
        ("peak RSS GiB", lambda r: r["peak_gib"]),
        ("ref: sort true keys", lambda r: r["ref"]),
        ("true pairs (M)", lambda r: r["truth_pairs"] / 1e6),
        ("observed pairs (M)", lambda r: r["observed_pairs"] / 1e6),
    ):
        line = f"{label:<20}" + "".join(f"{f(out[n]):>{w}.2f}" for n in names)
        if label.startswith("ref") and "ML-1M" in out and "ML-20M" in out:  # its growth, over the true pairs
            a, b = out["ML-1M"], out["ML-20M"]
            line += f"{math.log(b['ref'] / a['ref']) / math.log(b['truth_pairs'] / a['truth_pairs']):>{w + 1}.2f}"
        print(line)
    print(
        "\nCPU s of every run (total; the median is the table's): "
        + "; ".join(f"{n} " + ", ".join(f"{sum(r['cpu'].values()):.2f}" for r in runs[n]) for n in names)
    )
    print("\npeak RSS (GiB) reached by the end of each step:")
    print(f"{'step':<20}" + "".join(f"{n:>{w}}" for n in names))
    for s in STEPS:
        print(f"{s:<20}" + "".join(f"{out[n]['rss'][s]:>{w}.2f}" for n in names))
    print("\nSHA-256 of each step's output (first 12 hex digits):")
    print(f"{'step':<20}" + "".join(f"{n:>{w + 5}}" for n in names))
    for s in STEPS:
        print(f"{s:<20}" + "".join(f"{out[n]['digest'][s]:>{w + 5}}" for n in names))
    unstable = [n for n in names if any(r["digest"] != runs[n][0]["digest"] for r in runs[n])]
    print("digests identical in every repeat" if not unstable else f"DIGESTS DIFFER between repeats: {unstable}")
    print("steps reproduce run_replicate: " + ", ".join(f"{n} {out[n]['check'] or 'not checked'}" for n in names))
    compiled = _compiled_since(kernels)
    print(
        f"kernels compiled during the timed runs: {compiled}"
        + (" (their compilation is in the times)" * bool(compiled))
    )
    print(f"load after: {os.getloadavg()[0]:.2f}")


def _new_worlds(sizes: list[str], models: list[str], repeats: int, env: dict) -> None:
    """Truth + observation of the new worlds, ``repeats`` fresh processes per (size, model), interleaved; medians."""
    med = statistics.median
    runs: dict[tuple[str, str], list[dict]] = {(n, m): [] for m in models for n in sizes}
    for _ in range(repeats):
        for n, m in runs:
            t0 = time.perf_counter()
            cmd = [sys.executable, __file__, "--child", n, "--model", m]
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if res.returncode:
                sys.exit(res.stderr)
            runs[n, m].append(json.loads(res.stdout.strip().splitlines()[-1]))
            runs[n, m][-1]["wall"] = time.perf_counter() - t0
    w = 9
    print(f"new worlds (issue 24): truth + observation, median of {repeats} runs per size\n")
    for m in models:
        print(f"{m:<20}" + "".join(f"{n:>{w}}" for n in sizes))
        rows = [(f"{s_} (CPU s)", lambda r, s_=s_: r["cpu"][s_]) for s_ in NEW_STEPS]
        rows += [
            ("total (CPU s)", lambda r: sum(r["cpu"].values())),
            ("wall s (process)", lambda r: r["wall"]),
            ("peak RSS GiB", lambda r: r["peak_gib"]),
            ("ref: sort true keys", lambda r: r["ref"]),
            ("true pairs (M)", lambda r: r["truth_pairs"] / 1e6),
            ("observed pairs (M)", lambda r: r["observed_pairs"] / 1e6),
        ]
        for label, f in rows:
            print(f"{label:<20}" + "".join(f"{med(f(r) for r in runs[n, m]):>{w}.2f}" for n in sizes))
        print(
            "  every run's total CPU s: "
            + "; ".join(f"{n} " + ", ".join(f"{sum(r['cpu'].values()):.2f}" for r in runs[n, m]) for n in sizes)
        )
        print(
            "  SHA-256 of truth / observation (first 12 hex digits): "
            + "; ".join(f"{n} {runs[n, m][0]['digest']['truth']} / {runs[n, m][0]['digest']['observe']}" for n in sizes)
            + ("" if all(r["digest"] == runs[n, m][0]["digest"] for n in sizes for r in runs[n, m]) else " DIFFER")
        )
        print()


def _cached_kernels() -> dict[str, int]:
    """This checkout's compiled kernels in simrec's numba cache: ``.nbc`` file -> its modification time (ns).

    The cache folder is the user's, shared by every checkout on the machine; numba files a module's kernels
    under ``<folder name>_<sha1 of the folder's path>``, so only this checkout's folders are read. A kernel
    compiled again (its source changed) rewrites its file: a new time.
    """
    import hashlib

    from simrec._cache import numba_cache_dir  # noqa: PLC2701 (the cache folder: no public name)

    folder = numba_cache_dir()
    if folder is None:
        return {}
    package = Path(__file__).resolve().parents[1] / "simrec"
    mine = {
        f"{d.name}_{hashlib.sha1(str(d).encode()).hexdigest()}" for d in [package, *package.rglob("*")] if d.is_dir()
    }
    return {str(f): f.stat().st_mtime_ns for sub in mine for f in (folder / sub).glob("*.nbc")}


def _compiled_since(before: dict[str, int]) -> int:
    """Kernel files written since ``before`` (:func:`_cached_kernels`): new or rewritten."""
    return sum(1 for f, t in _cached_kernels().items() if before.get(f) != t)


def _median_run(runs: list[dict]) -> dict:
    """Per step and measure, the median over the runs (digests, sizes and check from the first run)."""
    med = statistics.median
    out = dict(runs[0])
    for r in runs:
        r["user"] = {s: r["cpu"][s] - r["sys"][s] for s in r["cpu"]}
    for key in ("cpu", "user", "sys", "rss"):
        out[key] = {s: med(r[key][s] for r in runs) for s in runs[0][key]}
    for key in ("cpu", "user", "sys"):
        out[key + "_total"] = med(sum(r[key].values()) for r in runs)
    for key in ("wall", "peak_gib", "ref"):
        out[key] = med(r[key] for r in runs)
    return out


if __name__ == "__main__":
    main()

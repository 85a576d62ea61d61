"""Benchmark: sampled-metric estimators at ml-20m scale (simrec.sampling), wall and CPU time.

Synthetic global ranks for M = 136,677 users among N = 20,720 items (ml-20m's
sizes), drawn from a top-heavy Beta(0.3, 1) shape, P(R <= x) = (x/N)^0.3, the
shape Li & Jin fit to real recommenders (their Table 2: a = 0.24-0.41);
P(R <= 10) ≈ 0.10. Sampled ranks with replacement, n = 501 (default).

Every timing is the median of ``--repeat`` runs (default 3) of wall time
(``perf_counter``) and CPU time of this process (``process_time``; BLAS runs
single-threaded, so CPU ≈ wall on an idle machine and CPU < wall when other
processes compete for the cores). The load average (``os.getloadavg``) is
printed before and after.

Sections:

1. **estimators** — each point estimate, the scheme's banded P(r|R) built
   once (its build is its own row; "P(r|R) + BV" is the fresh total).
2. **bootstrap intervals** — each estimator object's ``fit(ranks, scheme,
   n_boot=200).estimate(ndcg(10))`` (point estimate and 200 replicates
   resampling the rank histogram, not the users) against the point estimate
   alone on the same warm P(r|R), with the ratio (target < 2x). The fitted
   estimators (MLE, WMLE, MES, MN_MLE, BV_MLE, MN_MES) use the linearised
   bootstrap (:func:`simrec.sampling.bootstrap_estimates`: the exact
   gradient through the fit, one backward pass of the EM in single
   precision, or the implicit-function gradient of MES); the reference
   lines below them refit every replicate (``refit=True``) and cost about
   n_boot + 1 times the point estimate (measured with ``--fitted-boot``
   replicates: stated, not hidden).
3. ``--full``: n = 100 and 1,000, the straightforward implementations
   (dense N x N D with a matrix inverse, ~4 GB; per-user EM) and the scaling
   in N, as in the previous version of this script.

Measured (``--bootstrap-only --repeat 3 --fitted-boot 5``, 2026-11-24, 2-core
AMD EPYC shared with a calibration job and five workers: load average 4.2 at
the start, 8-14 during the run, so wall times are 10-25x CPU; the ratio is of
CPU times measured in the same run), N = 20,720, M = 136,677, n = 501,
NDCG@10, 200 replicates::

    estimator            point CPU s   + 200 linearised replicates   ratio
    MLE (300 EM it)          1.684          2.927                     x1.74
    WMLE                     1.640          2.825                     x1.72
    MES                      0.437          0.537                     x1.23
    MN_MLE                   1.676          2.837                     x1.69
    BV_MLE(gamma=0.1)        1.587          2.843                     x1.79
    MN_MES                   0.519          0.671                     x1.29
    CLS / BV / MN (uniform)  0.119 / 0.094 / 0.120                   x1.10 / x1.13 / x1.36

(the run stopped at its 20-minute limit before the MN_MES line, measured
alone with the same functions at load 8.5, and the refitted references; at
``--quick`` size, same day, refitting 20 replicates cost x18-x27 the point
estimate, i.e. about n_boot + 1 fits.) Before this change MLE was x2.14 and WMLE x2.01, and MES,
MN_MLE and BV_MLE refitted every replicate.

Run: ``python bench/bench_estimators.py`` (a few minutes), ``--quick`` for
small sizes (seconds), ``--bootstrap-only`` for section 2 alone.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from simrec.sampling import (
    MES,
    MLE,
    BiasVariance,
    ConstrainedLeastSquares,
    CorrectionProblem,
    Estimator,
    MappingEstimator,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    RankEstimate,
    SamplingScheme,
    WeightedMLE,
    beta_mapping,
    bias_variance,
    bound_mapping,
    constrained_least_squares,
    decay_weights,
    estimate_histograms,
    fit_beta_mapping,
    least_squares,
    linear_mapping,
    mes,
    mle,
    mle_adaptive,
    mse_optimal,
    naive,
    ndcg,
    rank_estimate,
    recall,
    sample_ranks_adaptive,
    weighted_mle,
)

ROWS: list[tuple] = []
REPEAT = 3
#: The estimators whose bootstrap cost is measured (every family).
BOOT_ESTIMATORS = (
    Naive(),
    RankEstimate(),
    ConstrainedLeastSquares(),
    BiasVariance(0.1),
    MSEOptimal(),
    MappingEstimator("beta@P"),
    MLE(),
    WeightedMLE(10.0),
    MES(),
    MSEOptimal(MLEPrior()),
    BiasVariance(0.1, MLEPrior()),
    MSEOptimal(MESPrior()),
)


def linearised(e: Estimator) -> bool:
    """Estimators with the linearised bootstrap (``refit=True`` is the refitted one)."""
    return isinstance(e, (MLE, WeightedMLE, MES)) or getattr(e, "prior", None) is not None


def measure(fn: Callable[[], object]) -> tuple[object, float, float]:
    """(result, median wall seconds, median CPU seconds) over ``REPEAT`` runs."""
    walls, cpus = [], []
    out = None
    for _ in range(REPEAT):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return out, statistics.median(walls), statistics.median(cpus)


def row(setting: str, what: str, wall: float, cpu: float, value: float | str = "", note: str = "") -> None:
    ROWS.append((setting, what, wall, cpu, value, note))
    v = f"{value:.4f}" if isinstance(value, float) else value
    print(f"{setting:<16} {what:<40} {wall:>9.3f} {cpu:>9.3f} {v:>9} {note}", flush=True)


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def top_heavy_ranks(n_items: int, n_users: int, rng: np.random.Generator, a: float = 0.3) -> np.ndarray:
    return np.minimum(1 + np.floor(n_items * rng.random(n_users) ** (1 / a)).astype(np.int64), n_items)


def naive_bv(scheme: SamplingScheme, prior: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    """BV as in the published notebooks: explicit N x N D and a matrix inverse."""
    a = scheme.matrix
    d = np.diag(prior)
    atd = a.T @ d
    c = a.T @ prior
    lhs = (1 - gamma) * atd @ a + gamma * np.diag(c)
    return np.linalg.inv(lhs) @ (atd @ b)


def naive_em_iteration(scheme: SamplingScheme, r: np.ndarray, pi: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """One EM iteration of dissertation eq. 32 with a per-user posterior over all N ranks."""
    a = scheme.matrix
    acc = np.zeros_like(pi)
    for s in range(0, r.size, chunk):
        post = a[:, r[s : s + chunk] - 1].T * pi  # (chunk, N): π_R P(r_u | R)
        post /= post.sum(axis=1, keepdims=True)
        acc += post.sum(axis=0)
    return acc / r.size


def run_n(N: int, M: int, n: int, R: np.ndarray, exact: dict[str, float], rng: np.random.Generator) -> None:
    setting = f"N={N} n={n}"
    m10 = ndcg(10)
    s, wall_b, cpu_b = measure(lambda: _built(N, n))
    row(setting, "P(r|R) build (banded)", wall_b, cpu_b, note=f"{s.blocks.nnz / (N * n):.0%} of N x n stored")
    r = s.sample(R, rng=rng)

    def fresh_ls():
        return least_squares(m10, CorrectionProblem(s)).mean(r)

    v, wall_ls, cpu_ls = measure(fresh_ls)
    row(setting, "LS (AᵀDA + eig + solve)", wall_ls, cpu_ls, v)
    prob = CorrectionProblem(s)
    prob._eig  # noqa: B018 - warm the cache for the per-metric solves below
    v, wall, cpu = measure(lambda: naive(m10, s).mean(r))
    row(setting, "naive sampled metric", wall, cpu, v)
    v, wall, cpu = measure(lambda: rank_estimate(m10, s).mean(r))
    row(setting, "rank estimate", wall, cpu, v)
    v, wall, cpu = measure(lambda: bias_variance(m10, prob, 0.1).mean(r))
    row(setting, "BV γ=0.1 (cached eig)", wall, cpu, v)
    v, wall, cpu = measure(lambda: bias_variance(m10, CorrectionProblem(s), 0.1).mean(r))
    row(setting, "BV γ=0.1 (fresh AᵀDA + eig)", wall, cpu, v)
    row(setting, "P(r|R) + BV γ=0.1 total (fresh)", wall_b + wall, cpu_b + cpu, note="the audit: 0.20 s CPU")
    v, wall, cpu = measure(lambda: constrained_least_squares(m10, prob).mean(r))
    row(setting, "CLS (BVLS on n-dim problem)", wall, cpu, v)
    d_mle, wall, cpu = measure(lambda: mle(r, s, max_iter=100, tol=0.0))
    row(setting, "MLE (100 EM iterations)", wall, cpu, d_mle.expectation(m10), "the audit: 0.51 s CPU")
    d_def, wall, cpu = measure(lambda: mle(r, s))
    row(setting, f"MLE (defaults: {d_def.n_iter} it)", wall, cpu, d_def.expectation(m10))
    v, wall, cpu = measure(lambda: mse_optimal(m10, CorrectionProblem.from_prior(s, d_mle), sampled_ranks=r).mean(r))
    row(setting, "MN_MLE eq. 45 (given MLE prior)", wall, cpu, v)
    v, wall, cpu = measure(lambda: bias_variance(m10, CorrectionProblem.from_prior(s, d_mle), 0.1).mean(r))
    row(setting, "BV_MLE γ=0.1 (given MLE prior)", wall, cpu, v)
    w = decay_weights(ndcg(), n, 10.0)
    d, wall, cpu = measure(lambda: weighted_mle(r, s, w, max_iter=100, tol=0.0))
    row(setting, "weighted MLE (100 it, NDCG(r/10))", wall, cpu, d.expectation(m10), "tilted to the top by design")
    d, wall, cpu = measure(lambda: mes(r, s))
    row(setting, f"MES (η=0.001, {d.n_iter} L-BFGS it)", wall, cpu, d.expectation(m10))
    ad = sample_ranks_adaptive(R, N, n, n_max=min(3200, N), rng=rng)
    d, wall, cpu = measure(lambda: mle_adaptive(ad.ranks, ad.sizes, N, max_iter=100, tol=0.0))
    row(setting, "adaptive MLE (100 it, n_max 3200)", wall, cpu, d.expectation(m10), f"mean n_u {ad.mean_size:.0f}")
    _, wall, cpu = measure(lambda: (linear_mapping(N, n), bound_mapping(N, n), beta_mapping(N, n, 0.5)))
    row(setting, "mappings linear+bound+beta@0.5", wall, cpu)
    fit, wall, cpu = measure(lambda: fit_beta_mapping(r, N, n))
    row(setting, "beta@P fit", wall, cpu, fit.hit_ratio(r, 10), f"a={fit.a:.3f}, {fit.n_iter} it; HR@10")
    print(f"{'':<16} exact: NDCG@10 = {exact['ndcg10']:.4f}, HR@10 = {exact['hr10']:.4f}", flush=True)


def run_naive(N: int, M: int, n: int, R: np.ndarray, rng: np.random.Generator, dense_bv: bool) -> None:
    setting = f"N={N} n={n}"
    s = SamplingScheme(N, n)
    r = s.sample(R, rng=rng)
    b = ndcg(10).table(N)
    prior = np.full(N, 1.0 / N)
    s.matrix  # noqa: B018 - the dense matrix both naive versions use
    if dense_bv:
        v, wall, cpu = measure(lambda: naive_bv(s, prior, b, 0.1)[r - 1].mean())
        row(setting, "naive BV (dense N x N D, inv)", wall, cpu, v, f"D alone {N * N * 8 / 2**30:.1f} GiB")
        ours, wall2, cpu2 = measure(lambda: bias_variance(ndcg(10), CorrectionProblem(s), 0.1).mean(r))
        row(setting, "ours BV (same prior, fresh)", wall2, cpu2, ours, f"CPU speed-up x{cpu / cpu2:.0f}")
    pi = np.full(N, 1.0 / N)
    _, wall, cpu = measure(lambda: naive_em_iteration(s, r, pi))
    row(setting, "naive per-user EM, 1 iteration", wall, cpu, note=f"x100 = {100 * cpu:.0f} s CPU (extrapolated)")
    _, wall2, cpu2 = measure(lambda: mle(r, s, max_iter=100, tol=0.0))
    row(setting, "ours EM, 100 iterations", wall2, cpu2, note=f"CPU speed-up x{100 * cpu / cpu2:.0f}")
    # same iterate check (a cheap sanity check that both implement eq. 32/33)
    a1 = naive_em_iteration(s, r[:5000], pi)
    a2 = mle(r[:5000], s, max_iter=1, tol=0.0).probabilities
    assert np.allclose(a1, a2, rtol=1e-6, atol=1e-15), "naive and fast EM disagree"


def run_bootstrap(
    N: int,
    n: int,
    R: np.ndarray,
    rng: np.random.Generator,
    n_boot: int,
    estimators: tuple[Estimator, ...],
    refit: bool = False,
) -> None:
    """Point estimate alone vs ``fit(..., n_boot).estimate(metric)``, each on a warm P(r|R) and a cold cache."""
    setting = f"N={N} n={n}"
    s = _built(N, n)
    r = s.sample(R, rng=rng)
    h = np.bincount(r - 1, minlength=n)[None, :]
    m10 = ndcg(10)
    for est in estimators:
        metric = recall(10) if isinstance(est, MappingEstimator) else m10

        def point() -> float:
            s._cache.clear()  # the uniform problem's eigendecomposition is recomputed: a fresh estimate
            return float(estimate_histograms([est], h, s, [metric])[0, 0, 0])

        def interval() -> object:
            s._cache.clear()
            return est.fit(r, s, n_boot=n_boot, rng=0, refit=refit).estimate(metric)

        v, wall, cpu = measure(point)
        e, wall_b, cpu_b = measure(interval)
        kind = ("refitted " if refit else "linearised ") if linearised(est) else ""
        row(setting, f"{est.name}: point estimate", wall, cpu, v)
        row(
            setting,
            f"{est.name}: + {n_boot} {kind}bootstrap",
            wall_b,
            cpu_b,
            e.estimate,
            f"x{cpu_b / cpu:.2f} CPU; 95% [{e.lower:.4f}, {e.upper:.4f}]",
        )


def _built(N: int, n: int) -> SamplingScheme:
    s = SamplingScheme(N, n)
    s.blocks  # noqa: B018 - builds and caches P(r|R)
    return s


def run_scaling(Ns: list[int], n: int, M: int, rng: np.random.Generator) -> None:
    m10 = ndcg(10)
    for N in Ns:
        setting = f"N={N} n={n}"
        R = top_heavy_ranks(N, M, rng)
        s, wall_b, cpu_b = measure(lambda: _built(N, n))
        row(setting, "scaling: P(r|R) build", wall_b, cpu_b)
        r = s.sample(R, rng=rng)
        _, wall, cpu = measure(lambda: bias_variance(m10, CorrectionProblem(s), 0.1).mean(r))
        row(setting, "scaling: BV (AᵀDA + eig + solve)", wall, cpu)
        _, wall, cpu = measure(lambda: mle(r, s, max_iter=100, tol=0.0))
        row(setting, "scaling: MLE 100 it", wall, cpu)
        d, wall, cpu = measure(lambda: mes(r, s))
        row(setting, f"scaling: MES ({d.n_iter} it)", wall, cpu)


def main() -> None:
    global REPEAT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument(
        "--full",
        action="store_true",
        help="also n = 100 and 1,000, the straightforward implementations (dense N x N D: ~4 GB) and the scaling in N",
    )
    ap.add_argument("--n-boot", type=int, default=200, help="bootstrap replicates (default 200)")
    ap.add_argument(
        "--fitted-boot",
        type=int,
        default=20,
        help="replicates of the refitted reference lines (refit=True; default 20: their cost is linear in it)",
    )
    ap.add_argument(
        "--refit-repeat", type=int, default=1, help="runs per timing of the refitted references (default 1)"
    )
    ap.add_argument("--bootstrap-only", action="store_true", help="section 2 only (bootstrap intervals)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing (median; default 3)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    REPEAT = args.repeat
    rng = np.random.default_rng(args.seed)
    if args.quick:
        N, M, n, full_ns, scale_ns = 2000, 10_000, 101, (50,), [1000, 2000, 4000]
    else:
        N, M, n, full_ns, scale_ns = 20_720, 136_677, 501, (100, 1000), [5000, 20_720, 40_000]
    R = top_heavy_ranks(N, M, rng)
    exact = {"ndcg10": float(ndcg(10)(R, N).mean()), "hr10": float(recall(10)(R, N).mean())}
    print(f"simrec.sampling estimators: N = {N}, M = {M}, Beta(0.3, 1)-shaped global ranks, with replacement")
    print(f"{load()} (start); median of {REPEAT} runs; CPU = this process's CPU time; BLAS single-threaded")
    print(f"{'setting':<16} {'estimator':<40} {'wall s':>9} {'CPU s':>9} {'value':>9} note")
    if not args.bootstrap_only:
        print("-- estimators (point estimates; value NDCG@10 unless noted) --")
        run_n(N, M, n, R, exact, rng)
    print(f"-- bootstrap intervals: {args.n_boot} replicates ({args.fitted_boot} for the refitted references) --")
    print(f"{'':<16} exact: NDCG@10 = {exact['ndcg10']:.4f}, HR@10 = {exact['hr10']:.4f}", flush=True)
    run_bootstrap(N, n, R, rng, args.n_boot, BOOT_ESTIMATORS)
    REPEAT = args.refit_repeat  # the references cost n_boot + 1 fits: one run each unless asked
    print(f"-- refitted references (refit=True): {args.fitted_boot} replicates, {REPEAT} run(s) per timing --")
    run_bootstrap(N, n, R, rng, args.fitted_boot, tuple(e for e in BOOT_ESTIMATORS if linearised(e)), refit=True)
    REPEAT = args.repeat
    if args.full and not args.bootstrap_only:
        for nn in full_ns:
            run_n(N, M, nn, R, exact, rng)
        print("-- straightforward implementations (same data) --")
        run_naive(N, M, n, R, rng, dense_bv=True)
        print("-- scaling in N (M users, n fixed) --")
        run_scaling(scale_ns, n, M, rng)
    print(f"{load()} (end)")


if __name__ == "__main__":
    main()

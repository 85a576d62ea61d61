"""Benchmark: sampled-metric estimators at ml-20m scale (simrec.sampling).

Synthetic global ranks for M = 136,677 users among N = 20,720 items (ml-20m's
sizes), drawn from a top-heavy Beta(0.3, 1) shape, P(R <= x) = (x/N)^0.3, the
shape Li & Jin fit to real recommenders (their Table 2: a = 0.24-0.41);
P(R <= 10) ≈ 0.10. Sampled ranks with replacement, n = 100, 501, 1,000.

For each n: wall time and peak memory (tracemalloc, numpy allocations) of
every estimator, computed on the cached banded P(r|R). Then, at n = 501, the
straightforward implementations the issue names:

* BV with an explicit N x N prior matrix D and a matrix inverse, as the
  dissertation's published notebooks do (F = inv((1-γ) AᵀDA + γ diag(c)) AᵀD b);
* EM with per-user posteriors (dissertation eq. 32): each iteration gathers
  P(r_u | R) for every user (an M x N posterior, in chunks of users). One
  iteration is timed and multiplied by 100 (stated in the table).

Finally the scaling in N at n = 501 (N = 5,000, 20,720, 40,000).

Run: ``python bench/bench_estimators.py`` (a few minutes, ~4 GB for the dense
D), or ``--quick`` for a small run. Timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from simrec.sampling import (
    CorrectionProblem,
    SamplingScheme,
    beta_mapping,
    bias_variance,
    bound_mapping,
    constrained_least_squares,
    decay_weights,
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


def measure(fn: Callable[[], object], *, memory: bool = True) -> tuple[object, float, float]:
    """(result, seconds, peak MiB): one timed run, then one run under tracemalloc for memory."""
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    sec = time.perf_counter() - t0
    peak = float("nan")
    if memory:
        gc.collect()
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out, sec, peak


def row(setting: str, what: str, sec: float, mib: float, value: float | str = "", note: str = "") -> None:
    ROWS.append((setting, what, sec, mib, value, note))
    v = f"{value:.4f}" if isinstance(value, float) else value
    print(f"{setting:<16} {what:<36} {sec:>9.3f} {mib:>9.1f} {v:>9} {note}", flush=True)


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
    s, sec, mib = measure(lambda: _built(N, n))
    row(setting, "P(r|R) build (banded)", sec, mib, note=f"{s.blocks.nnz / (N * n):.0%} of N x n stored")
    r = s.sample(R, rng=rng)

    def fresh_ls():
        return least_squares(m10, CorrectionProblem(s)).mean(r)

    v, sec_ls, mib = measure(fresh_ls)
    row(setting, "LS (AᵀDA + eig + solve)", sec_ls, mib, v)
    row(setting, "P(r|R) + LS total", sec + sec_ls, float("nan"), note="target < 0.5 s at n = 501")
    prob = CorrectionProblem(s)
    prob._eig  # noqa: B018 - warm the cache for the per-metric solves below
    v, sec, mib = measure(lambda: naive(m10, s).mean(r))
    row(setting, "naive sampled metric", sec, mib, v)
    v, sec, mib = measure(lambda: rank_estimate(m10, s).mean(r))
    row(setting, "rank estimate", sec, mib, v)
    v, sec, mib = measure(lambda: bias_variance(m10, prob, 0.1).mean(r))
    row(setting, "BV γ=0.1 (cached eig)", sec, mib, v)
    v, sec, mib = measure(lambda: bias_variance(m10, CorrectionProblem(s), 0.1).mean(r))
    row(setting, "BV γ=0.1 (fresh AᵀDA + eig)", sec, mib, v)
    v, sec, mib = measure(lambda: constrained_least_squares(m10, prob).mean(r))
    row(setting, "CLS (BVLS on n-dim problem)", sec, mib, v)
    d_mle, sec, mib = measure(lambda: mle(r, s, max_iter=100, tol=0.0))
    row(setting, "MLE (100 EM iterations)", sec, mib, d_mle.expectation(m10))
    d_def, sec, mib = measure(lambda: mle(r, s))
    row(setting, f"MLE (defaults: {d_def.n_iter} it)", sec, mib, d_def.expectation(m10))
    v, sec, mib = measure(lambda: mse_optimal(m10, CorrectionProblem.from_prior(s, d_mle), M).mean(r))
    row(setting, "MN_MLE (given MLE prior)", sec, mib, v)
    v, sec, mib = measure(lambda: bias_variance(m10, CorrectionProblem.from_prior(s, d_mle), 0.1).mean(r))
    row(setting, "BV_MLE γ=0.1 (given MLE prior)", sec, mib, v)
    w = decay_weights(ndcg(), n, 10.0)
    d, sec, mib = measure(lambda: weighted_mle(r, s, w, max_iter=100, tol=0.0))
    row(setting, "weighted MLE (100 it, NDCG(r/10))", sec, mib, d.expectation(m10), "tilted to the top by design")
    d, sec, mib = measure(lambda: mes(r, s))
    row(setting, f"MES (η=0.001, {d.n_iter} L-BFGS it)", sec, mib, d.expectation(m10))
    ad = sample_ranks_adaptive(R, N, n, n_max=min(3200, N), rng=rng)
    d, sec, mib = measure(lambda: mle_adaptive(ad.ranks, ad.sizes, N, max_iter=100, tol=0.0))
    row(setting, "adaptive MLE (100 it, n_max 3200)", sec, mib, d.expectation(m10), f"mean n_u {ad.mean_size:.0f}")
    _, sec, mib = measure(lambda: (linear_mapping(N, n), bound_mapping(N, n), beta_mapping(N, n, 0.5)))
    row(setting, "mappings linear+bound+beta@0.5", sec, mib)
    fit, sec, mib = measure(lambda: fit_beta_mapping(r, N, n))
    row(setting, "beta@P fit", sec, mib, fit.hit_ratio(r, 10).estimate, f"a={fit.a:.3f}, {fit.n_iter} it; HR@10")
    print(f"{'':<16} exact: NDCG@10 = {exact['ndcg10']:.4f}, HR@10 = {exact['hr10']:.4f}", flush=True)


def run_naive(N: int, M: int, n: int, R: np.ndarray, rng: np.random.Generator, dense_bv: bool) -> None:
    setting = f"N={N} n={n}"
    s = SamplingScheme(N, n)
    r = s.sample(R, rng=rng)
    b = ndcg(10).table(N)
    prior = np.full(N, 1.0 / N)
    s.matrix  # noqa: B018 - the dense matrix both naive versions use
    if dense_bv:
        v, sec, mib = measure(lambda: naive_bv(s, prior, b, 0.1)[r - 1].mean(), memory=False)
        row(setting, "naive BV (dense N x N D, inv)", sec, float("nan"), v, f"D alone {N * N * 8 / 2**30:.1f} GiB")
        ours, sec2, _ = measure(lambda: bias_variance(ndcg(10), CorrectionProblem(s), 0.1).mean(r), memory=False)
        row(setting, "ours BV (same prior, fresh)", sec2, float("nan"), ours, f"speed-up x{sec / sec2:.0f}")
    pi = np.full(N, 1.0 / N)
    _, sec, _ = measure(lambda: naive_em_iteration(s, r, pi), memory=False)
    row(setting, "naive per-user EM, 1 iteration", sec, float("nan"), note=f"x100 = {100 * sec:.0f} s (extrapolated)")
    _, sec2, _ = measure(lambda: mle(r, s, max_iter=100, tol=0.0), memory=False)
    row(setting, "ours EM, 100 iterations", sec2, float("nan"), note=f"speed-up x{100 * sec / sec2:.0f}")
    # same iterate check (a cheap sanity check that both implement eq. 32/33)
    a1 = naive_em_iteration(s, r[:5000], pi)
    a2 = mle(r[:5000], s, max_iter=1, tol=0.0).probabilities
    assert np.allclose(a1, a2, rtol=1e-6, atol=1e-15), "naive and fast EM disagree"


def _built(N: int, n: int) -> SamplingScheme:
    s = SamplingScheme(N, n)
    s.blocks  # noqa: B018 - builds and caches P(r|R)
    return s


def run_scaling(Ns: list[int], n: int, M: int, rng: np.random.Generator) -> None:
    m10 = ndcg(10)
    for N in Ns:
        setting = f"N={N} n={n}"
        R = top_heavy_ranks(N, M, rng)
        s, sec_b, mib_b = measure(lambda: _built(N, n))
        row(setting, "scaling: P(r|R) build", sec_b, mib_b)
        r = s.sample(R, rng=rng)
        _, sec, mib = measure(lambda: bias_variance(m10, CorrectionProblem(s), 0.1).mean(r))
        row(setting, "scaling: BV (AᵀDA + eig + solve)", sec, mib)
        _, sec, mib = measure(lambda: mle(r, s, max_iter=100, tol=0.0))
        row(setting, "scaling: MLE 100 it", sec, mib)
        d, sec, mib = measure(lambda: mes(r, s))
        row(setting, f"scaling: MES ({d.n_iter} it)", sec, mib)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--no-dense-bv", action="store_true", help="skip the N x N dense-D baseline (needs ~4 GB)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.quick:
        N, M, ns, naive_n, scale_ns = 2000, 10_000, (50, 101), 101, [1000, 2000, 4000]
    else:
        N, M, ns, naive_n, scale_ns = 20_720, 136_677, (100, 501, 1000), 501, [5000, 20_720, 40_000]
    R = top_heavy_ranks(N, M, rng)
    exact = {"ndcg10": float(ndcg(10)(R, N).mean()), "hr10": float(recall(10)(R, N).mean())}
    print(f"simrec.sampling estimators: N = {N}, M = {M}, Beta(0.3, 1)-shaped global ranks, with replacement")
    print(f"{'setting':<16} {'estimator':<36} {'seconds':>9} {'peak MiB':>9} {'NDCG@10':>9} note")
    for n in ns:
        run_n(N, M, n, R, exact, rng)
    print("-- straightforward implementations (same data) --")
    run_naive(N, M, naive_n, R, rng, dense_bv=not args.no_dense_bv)
    print("-- scaling in N (M users, n fixed) --")
    run_scaling(scale_ns, naive_n, M, rng)


if __name__ == "__main__":
    main()

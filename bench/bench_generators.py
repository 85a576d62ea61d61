"""Benchmark: generate true preferences + observe them, at ML-1M and Steam scale.

For each preference model (Uniform, IBP, LDA) x observation sampler (uniform,
popularity) with a truncated-Pareto profile size, times ``generate`` +
``observe`` (best of 3) and measures the peak memory of one run with
tracemalloc (numpy reports its buffers to tracemalloc; the peak is over the
whole generate + observe call, excluding what existed before). Reference lines:
drawing the same number of uniform random (user, item) pairs with numpy and
building the CSR with ``Interactions.from_pairs`` (the brief's reference), and
with a plain ``np.sort`` + CSR (``from_pairs`` uses ``np.unique``, which is
~15x slower than ``sort`` on numpy 2.4).

Parameters: IBP's c is solved so E[items] = the dataset's items (α, σ fixed);
the Pareto shape is solved, given the generated truth, so that
E[observed pairs] = the target (1M for ML-1M, 5M for Steam).

Usage: python bench/bench_generators.py [--quick]   (--quick: ML-1M scale only)
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np
from scipy.optimize import brentq

from simrec.interactions import Interactions
from simrec.observation import PopularitySampler, TruncatedPareto, UniformSampler, observe
from simrec.preference import IBP, LDA, Uniform

SCALES = {
    # name: (n_users, n_items, observed target, Pareto m_low, m_high, model params)
    "ML-1M": dict(
        n_users=6040,
        n_items=3706,
        target=1_000_000,
        m_low=20.0,
        m_high=2314.0,
        uniform_lam=600.0,
        ibp_alpha=400.0,
        ibp_sigma=0.1,
        lda=dict(n_topics=100, lam=600.0, a=0.1, b=0.1),
    ),
    "Steam": dict(
        n_users=70912,
        n_items=10978,
        target=5_000_000,
        m_low=1.0,
        m_high=7000.0,
        uniform_lam=150.0,
        ibp_alpha=150.0,
        ibp_sigma=0.3,
        lda=dict(n_topics=100, lam=150.0, a=0.1, b=0.1),
    ),
}


def ibp_for(n_users: int, n_items: int, alpha: float, sigma: float) -> IBP:
    """IBP with c solved so that expected_items() == n_items."""
    f = lambda c: IBP(n_users, alpha, c, sigma).expected_items() - n_items  # noqa: E731
    c = brentq(f, -sigma + 1e-9, 1e4, xtol=1e-10)
    return IBP(n_users, alpha, c, sigma)


def pareto_for(truth: Interactions, target: float, m_low: float, m_high: float) -> TruncatedPareto:
    """Pareto shape solved so that E[sum_u min(size_u, |truth_u|)] == target (clamp policy)."""
    caps = truth.user_counts()
    kmax = int(caps.max())

    def expected(alpha: float) -> float:
        d = TruncatedPareto(m_low, alpha, m_high)
        k = np.arange(2, kmax + 1)
        # E[min(S, c)] = sum_{k=1}^{c} P(S >= k); P(S >= 1) = 1, P(S >= k) = 1 - F(k) for k >= 2
        cum = np.concatenate(([0.0, 1.0], 1.0 + np.cumsum(1.0 - d.cdf(k))))
        return float(cum[caps].sum())

    alpha = brentq(lambda a: expected(a) - target, 0.01, 50.0, xtol=1e-6)
    return TruncatedPareto(m_low, alpha, m_high)


def run_once(model, profile, sampler, seed):
    truth = model.generate(seed)
    obs = observe(truth, profile, sampler, seed + 1)
    return truth, obs


def best_of(fn, repeats=3):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def peak_mib(fn) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def reference(n_users, n_items, n_pairs, seed, how):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n_users, n_pairs)
    i = rng.integers(0, n_items, n_pairs)
    if how == "from_pairs":
        return Interactions.from_pairs(u, i, (n_users, n_items))
    key = np.sort(u * n_items + i)
    keep = np.empty(len(key), dtype=bool)
    keep[0] = True
    np.not_equal(key[1:], key[:-1], out=keep[1:])
    key = key[keep]
    uu, ii = np.divmod(key, n_items)
    indptr = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(uu, minlength=n_users), out=indptr[1:])
    return Interactions.from_csr(indptr, ii, (n_users, n_items), sort=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="ML-1M scale only")
    args = ap.parse_args()
    scales = ["ML-1M"] if args.quick else ["ML-1M", "Steam"]
    print("load: {:.2f} {:.2f} {:.2f} (1/5/15 min)".format(*os.getloadavg()))
    rows = []
    for scale in scales:
        p = SCALES[scale]
        U, I = p["n_users"], p["n_items"]
        models = {
            "Uniform": Uniform(U, I, p["uniform_lam"]),
            "IBP": ibp_for(U, I, p["ibp_alpha"], p["ibp_sigma"]),
            "LDA": LDA(U, I, **p["lda"]),
        }
        scale_rows = []
        for mname, model in models.items():
            pilot = model.generate(12345)
            profile = pareto_for(pilot, p["target"], p["m_low"], p["m_high"])
            del pilot
            for sname, sampler in (("Unif", UniformSampler()), ("Pop", PopularitySampler())):
                gen_s, truth = best_of(lambda: model.generate(1))
                obs_s, obs = best_of(lambda t=truth: observe(t, profile, sampler, 2))
                tot_s, _ = best_of(lambda: run_once(model, profile, sampler, 1))
                mem = peak_mib(lambda: run_once(model, profile, sampler, 1))
                scale_rows.append(
                    dict(
                        model=f"{mname}-{sname}",
                        scale=scale,
                        seconds=tot_s,
                        gen_s=gen_s,
                        obs_s=obs_s,
                        true_pairs=truth.n_pairs,
                        observed_pairs=obs.observed.n_pairs,
                        pairs_per_s=truth.n_pairs / tot_s,
                        peak_mib=mem,
                    )
                )
                del truth, obs
        n_ref = max(r["true_pairs"] for r in scale_rows)
        for how in ("from_pairs", "sort+CSR"):
            s, x = best_of(lambda: reference(U, I, n_ref, 3, how))
            mem = peak_mib(lambda: reference(U, I, n_ref, 3, how))
            scale_rows.append(
                dict(
                    model=f"ref: {how}",
                    scale=scale,
                    seconds=s,
                    gen_s=s,
                    obs_s=0.0,
                    true_pairs=x.n_pairs,
                    observed_pairs=0,
                    pairs_per_s=n_ref / s,
                    peak_mib=mem,
                )
            )
        ref_rate = {r["model"]: r["pairs_per_s"] for r in scale_rows if r["model"].startswith("ref")}
        for r in scale_rows:
            r["vs_from_pairs"] = ref_rate["ref: from_pairs"] / r["pairs_per_s"]
            r["vs_sort"] = ref_rate["ref: sort+CSR"] / r["pairs_per_s"]
        rows.extend(scale_rows)
        if scale == "ML-1M":
            print(f"# ML-1M IBP: c = {models['IBP'].c:.4f}, E[items] = {models['IBP'].expected_items():.0f}")
        else:
            print(f"# Steam IBP: c = {models['IBP'].c:.4f}, E[items] = {models['IBP'].expected_items():.0f}")

    head = (
        f"{'model':<16}{'scale':<7}{'seconds':>9}{'gen s':>8}{'obs s':>8}{'true pairs':>12}{'obs pairs':>11}"
        f"{'true pairs/s':>14}{'peak MiB':>10}{'x ref(fp)':>10}{'x ref(sort)':>12}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['model']:<16}{r['scale']:<7}{r['seconds']:>9.3f}{r['gen_s']:>8.3f}{r['obs_s']:>8.3f}"
            f"{r['true_pairs']:>12,}{r['observed_pairs']:>11,}{r['pairs_per_s']:>14,.0f}{r['peak_mib']:>10.0f}"
            f"{r['vs_from_pairs']:>10.2f}{r['vs_sort']:>12.2f}"
        )
    print("seconds = best of 3 of generate + observe; gen s / obs s = best of 3 of each step alone;")
    print(
        "peak MiB = tracemalloc peak of one generate + observe; x ref = slowdown in true pairs/s vs the reference line."
    )
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

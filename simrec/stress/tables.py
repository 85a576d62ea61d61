"""Tidy tables from stress results (one row per cell; CSV/Parquet ready).

* :func:`estimate_table` — per recommender × scheme × n × estimator × metric × K:
  the exact metric, the estimate's mean and sd over repeats, bias, relative
  error (mean − exact)/exact and relative RMSE (Li's dissertation Tables 3-4
  format);
* :func:`coverage_table` — per recommender × scheme × n × estimator × metric
  × K (with ``StressConfig.n_boot > 0``): the share of repeats whose
  bootstrap interval contains the exact metric, beside the bias and the
  mean interval width (which intervals can be trusted);
* :func:`fitted_a_table` — beta@P's fitted a per recommender × scheme × n
  (mean, sd over repeats; Li & Jin Table 2);
* :func:`ordering_table` — per pair of recommenders: the share of repeats in
  which the estimates order the pair as the exact metric does (Krichene &
  Rendle Table 4);
* :func:`winner_table` — the share of repeats in which the estimator picks the
  exact winner among all recommenders (dissertation Table 5);
* :func:`relative_error_table` — per recommender × scheme × n × estimator ×
  metric family: the relative error |mean − exact|/exact averaged over
  K = 1..k_max, ± its sd over K (the dissertation's Tables 3-4, in %);
* :func:`mapping_error_table` — per mapping: Li & Jin's Table 7 summary of
  |HR@f(k) − SHR@k| (absolute and relative, averaged over k = 1..n, at k = 1
  and averaged over k = 2..10);
* :func:`hit_ratio_table` — sampled HR@k vs global HR@f(k) per mapping (Li &
  Jin Figure 7);
* :func:`expected_table` — E[sampled metric] as a function of n (K&R Figure 6).

Decisions: a tie between two estimates counts as *not* ordered correctly (the
paper's reader cannot tell them apart); a pair tied in the exact metric, or an
exact winner tied with another recommender, has no correct answer: its share
is NaN, with one warning per table. Relative errors where the exact metric is
0 are NaN, with one warning per table. Repeats where an estimator is NaN (a
failed fit) are left out of that cell (``n_repeats`` counts the rest).

Reading the columns (issue 14): ``rel_error`` is (mean estimate − exact) /
exact, so it is unbounded above and can be huge where the exact metric is
small (small K): ``naive`` (the sampled rank read as the global rank) and
``LS`` (Krichene & Rendle's unconstrained least squares, eqs. 21-23, which
bounds no per-rank value; ``CLS`` is its constrained form) reach relative
errors in the hundreds or thousands there. Li & Jin's mappings
(``mapping:*``) estimate recall / hit ratio only: they have no NDCG or AP
rows in :func:`estimate_table`, and the tables that put metric families side
by side show NaN for them. Metrics without a cutoff (``auc``,
``average_precision_full``; :data:`~simrec.stress.harness.UNTRUNCATED_METRICS`)
have one row per cell with a missing ``k`` (pandas ``<NA>``, an empty CSV
cell; :func:`k_column`); in :func:`relative_error_table` their "mean over K"
is that one cell's error (``n_k`` = 1, sd NaN), and :func:`expected_table`
covers the cutoff families only. CSV tables are written with floating-point noise
(|x| < 1e-12) as 0 (:func:`simrec.rundir.snap_noise`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from simrec.sampling import BiasVariance, IntervalKind, RankEstimate, metric_table
from simrec.stress.harness import METRIC_FAMILIES, StressResult, expected_sampled_metrics, metric_values
from simrec.stress.sources import RankSource
from simrec.stress.values import _nan_mean_sd

__all__ = [
    "SUMMARY_KS",
    "k_column",
    "ESTIMATE_COLUMNS",
    "estimate_table",
    "COVERAGE_COLUMNS",
    "coverage_table",
    "fitted_a_table",
    "ordering_table",
    "winner_table",
    "hit_ratio_table",
    "relative_error_table",
    "mapping_error_table",
    "expected_table",
]

#: Cutoffs of the summary tables (``summary.csv``, the user-sampling tests): the dissertation's table columns.
SUMMARY_KS = (1, 5, 10, 20, 50)

ESTIMATE_COLUMNS = [
    "recommender",
    "scheme",
    "n",
    "estimator",
    "metric",
    "k",
    "exact",
    "mean",
    "sd",
    "bias",
    "rel_error",
    "rel_rmse",
    "n_repeats",
    "mean_sample_size",
    "n_iter",
    "converged",
    "interval",
]


def k_column(ks: np.ndarray, reps: int) -> pd.arrays.IntegerArray:
    """The ``k`` column of ``reps`` copies of a result's cutoffs: nullable integers, missing (an empty CSV cell)
    for metrics without a cutoff (``StressResult.ks`` = 0: AUC, untruncated AP)."""
    k = np.tile(np.asarray(ks, dtype=np.int64), reps)
    return pd.arrays.IntegerArray(k, k == 0)


def _cell_keys(res: StressResult, n_estimators: int, n_columns: int) -> dict[str, object]:
    """The key columns of one stress cell's (estimator x family-and-K) rows, estimator-major."""
    return {
        "recommender": res.recommender,
        "scheme": res.scheme,
        "n": res.n,
        "estimator": np.repeat(res.estimators, n_columns),
        "metric": np.tile(res.families, n_estimators),
        "k": k_column(res.ks, n_estimators),
    }


def estimate_table(results: Sequence[StressResult]) -> pd.DataFrame:
    """Mean ± sd, bias and relative error of every estimator, one row per cell (see module docstring).

    .. math:: \\mathrm{rel\\_error} = \\frac{\\bar T̂ - T}{T}, \\qquad
              \\mathrm{rel\\_rmse} = \\frac{\\sqrt{\\overline{(T̂ - T)^2}}}{T}

    The last columns say how the estimates were made: ``n_iter`` (the mean
    over repeats of the iterations its fit ran: EM for MLE, WMLE, the MLE
    prior and adaptive MLE, capped at ``max_iter``; MES's L-BFGS; beta@P's
    fixed point; 0 for the closed forms), ``converged`` (the share of
    repeats whose fit met its tolerance before the cap; 1 for the closed
    forms) and ``interval`` (the estimator's
    :class:`~simrec.sampling.IntervalKind`: ``"sampling_biased"`` marks the
    estimators whose bootstrap interval is known not to cover the metric,
    see :func:`coverage_table`). Results without these records (shards
    written before they existed) give NaN / an empty string.
    """
    frames = []
    zero = 0
    for res in results:
        mean, sd, cnt = _nan_mean_sd(res.estimates)  # (E, J)
        sq = (res.estimates - res.exact) ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            mse = np.where(np.isnan(sq), 0, sq).sum(axis=0) / cnt
        E, J = mean.shape
        exact = np.broadcast_to(res.exact, (E, J))
        bad = exact == 0
        zero += int((bad & (cnt > 0)).sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(bad, np.nan, (mean - exact) / np.where(bad, 1, exact))
            rel_rmse = np.where(bad, np.nan, np.sqrt(mse) / np.where(bad, 1, exact))
        frame = pd.DataFrame(
            {
                **_cell_keys(res, E, J),
                "exact": exact.ravel(),
                "mean": mean.ravel(),
                "sd": sd.ravel(),
                "bias": (mean - exact).ravel(),
                "rel_error": rel.ravel(),
                "rel_rmse": rel_rmse.ravel(),
                "n_repeats": cnt.ravel(),
                "mean_sample_size": res.mean_sample_size,
                **_fit_columns(res, J),
            }
        )
        frames.append(frame[frame["n_repeats"] > 0])  # estimators that do not apply (mappings for NDCG/AP)
    if zero:
        warnings.warn(
            f"{zero} cell(s) have an exact metric of 0: relative errors there are NaN", RuntimeWarning, stacklevel=2
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ESTIMATE_COLUMNS)


def _fit_columns(res: StressResult, n_columns: int) -> dict[str, np.ndarray]:
    """``n_iter``, ``converged`` and ``interval`` of every (estimator, metric column) row, estimator-major."""
    E = len(res.estimators)
    if res.n_iter is None or res.converged is None:
        n_iter, conv = np.full(E, np.nan), np.full(E, np.nan)
    else:
        n_iter, conv = res.n_iter.mean(axis=0), res.converged.mean(axis=0)
    kinds = res.interval_kinds if res.interval_kinds is not None else ("",) * E
    return {
        "n_iter": np.repeat(n_iter, n_columns),
        "converged": np.repeat(conv, n_columns),
        "interval": np.repeat(np.asarray(kinds, dtype=object), n_columns),
    }


COVERAGE_COLUMNS = [
    "recommender",
    "scheme",
    "n",
    "estimator",
    "metric",
    "k",
    "exact",
    "bias",
    "coverage",
    "nominal",
    "mean_width",
    "n_repeats",
    "interval",
    "coverage_known_to_fail",
]


def coverage_table(results: Sequence[StressResult]) -> pd.DataFrame:
    r"""Interval coverage of the exact metric and bias of every estimator, one row per cell.

    .. math:: \mathrm{coverage} = \frac{1}{\#\{i\}} \#\{i : L_i \le T \le U_i\},
              \qquad \mathrm{bias} = \bar{T̂} - T

    over the repeats i with a finite interval [L_i, U_i] (``n_repeats``);
    ``nominal`` is the intervals' level. A coverage far below ``nominal``
    means the interval cannot be trusted (usually because of the bias: the
    bootstrap interval is centred on the estimator's expectation). Results
    without intervals (``n_boot = 0``) are skipped.

    ``interval`` is the estimator's :class:`~simrec.sampling.IntervalKind`
    and ``coverage_known_to_fail`` marks the estimators whose bias is known to
    make their intervals miss the metric (``"sampling_biased"``: naive, rank
    estimate, CLS, BV with the uniform prior at γ >= 0.01, WMLE, every Li &
    Jin mapping; :mod:`simrec.sampling.estimators` has the evidence): a reader sees
    which low coverages are a property of the estimator rather than of this
    data. Unknown (results without the record): empty / NA.
    """
    frames = []
    for res in results:
        if res.lower is None or res.upper is None:
            continue
        ok = np.isfinite(res.lower) & np.isfinite(res.upper)
        cnt = ok.sum(axis=0)  # (E, J)
        inside = ok & (res.lower <= res.exact) & (res.exact <= res.upper)
        mean, _, _ = _nan_mean_sd(res.estimates)
        with np.errstate(invalid="ignore", divide="ignore"):
            coverage = inside.sum(axis=0) / cnt
            width = np.where(ok, res.upper - res.lower, 0).sum(axis=0) / cnt
        E, J = mean.shape
        frame = pd.DataFrame(
            {
                **_cell_keys(res, E, J),
                "exact": np.broadcast_to(res.exact, (E, J)).ravel(),
                "bias": (mean - res.exact).ravel(),
                "coverage": coverage.ravel(),
                "nominal": res.confidence,
                "mean_width": width.ravel(),
                "n_repeats": cnt.ravel(),
                "interval": _fit_columns(res, J)["interval"],
            }
        )
        frame["coverage_known_to_fail"] = pd.array(
            [None if k == "" else IntervalKind(k).coverage_known_to_fail for k in frame["interval"]], dtype="boolean"
        )
        frames.append(frame[frame["n_repeats"] > 0])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COVERAGE_COLUMNS)


def fitted_a_table(results: Sequence[StressResult]) -> pd.DataFrame:
    """beta@P's fitted a (Li & Jin §4.1, eq. 19), one row per recommender × scheme × n (their Table 2).

    Columns: recommender, scheme, n, a_mean, a_sd (over repeats, ddof=1),
    n_repeats (repeats where a was defined). Results without beta@P are skipped.
    """
    rows = [
        {
            "recommender": r.recommender,
            "scheme": r.scheme,
            "n": r.n,
            "a_mean": float(np.mean(r.fitted_a)) if r.fitted_a.size else np.nan,
            "a_sd": float(np.std(r.fitted_a, ddof=1)) if r.fitted_a.size > 1 else np.nan,
            "n_repeats": int(r.fitted_a.size),
        }
        for r in results
        if r.fitted_a is not None
    ]
    return pd.DataFrame(rows, columns=["recommender", "scheme", "n", "a_mean", "a_sd", "n_repeats"])


def _groups(results: Sequence[StressResult]) -> dict[tuple[str, int], list[StressResult]]:
    out: dict[tuple[str, int], list[StressResult]] = {}
    for r in results:
        out.setdefault((r.scheme, r.n), []).append(r)
    return out


def ordering_table(results: Sequence[StressResult]) -> pd.DataFrame:
    """Share of repeats in which each pair of recommenders is ordered as the exact metric orders it.

    .. math:: \\frac{1}{\\#\\text{repeats}} \\sum_t 1\\big[\\mathrm{sign}(T̂_a^{(t)} - T̂_b^{(t)}) = \\mathrm{sign}(T_a - T_b)\\big]

    Pairs (a, b) follow the order of ``results``; repeats t are paired by index.
    """
    frames = []
    ties = 0
    for (scheme, n), group in _groups(results).items():
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                a, b = group[i], group[j]
                names = [e for e in a.estimators if e in b.estimators]
                ia = [a.estimators.index(e) for e in names]
                ib = [b.estimators.index(e) for e in names]
                reps = min(a.estimates.shape[0], b.estimates.shape[0])
                d = np.sign(a.exact - b.exact)  # (J,)
                diff = a.estimates[:reps, ia] - b.estimates[:reps, ib]  # (R, E, J)
                ok = ~np.isnan(diff)
                correct = (np.sign(np.where(ok, diff, 0)) == d) & ok
                cnt = ok.sum(axis=0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    share = correct.sum(axis=0) / cnt
                share = np.where(d == 0, np.nan, share)
                ties += int(((d == 0) & (cnt > 0)).sum())
                E, J = share.shape
                frame = pd.DataFrame(
                    {
                        "scheme": scheme,
                        "n": n,
                        "estimator": np.repeat(names, J),
                        "metric": np.tile(a.families, E),
                        "k": k_column(a.ks, E),
                        "recommender_a": a.recommender,
                        "recommender_b": b.recommender,
                        "exact_a": np.tile(a.exact, E),
                        "exact_b": np.tile(b.exact, E),
                        "share_correct": share.ravel(),
                        "n_repeats": cnt.ravel(),
                    }
                )
                frames.append(frame[frame["n_repeats"] > 0])
    if ties:
        warnings.warn(
            f"{ties} cell(s) compare recommenders tied in the exact metric: their share is NaN",
            RuntimeWarning,
            stacklevel=2,
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def winner_table(results: Sequence[StressResult]) -> pd.DataFrame:
    """Share of repeats in which an estimator's best recommender is the exact best (dissertation Table 5).

    A repeat's pick is the recommender with the largest estimate (a tie for
    the largest counts as a wrong pick); groups with one recommender are skipped.
    """
    frames = []
    ties = 0
    for (scheme, n), group in _groups(results).items():
        if len(group) < 2:
            continue
        names = [e for e in group[0].estimators if all(e in g.estimators for g in group)]
        reps = min(g.estimates.shape[0] for g in group)
        exact = np.stack([g.exact for g in group])  # (A, J)
        est = np.stack([g.estimates[:reps, [g.estimators.index(e) for e in names]] for g in group])  # (A, R, E, J)
        top = exact.max(axis=0)
        n_top = (exact == top).sum(axis=0)
        winner = exact.argmax(axis=0)  # (J,)
        ok = ~np.isnan(est).any(axis=0)  # (R, E, J)
        filled = np.where(np.isnan(est), -np.inf, est)
        best = filled.max(axis=0)
        unique_best = (filled == best).sum(axis=0) == 1
        pick = filled.argmax(axis=0)
        correct = (pick == winner) & unique_best & ok
        cnt = ok.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = correct.sum(axis=0) / cnt
        share = np.where(n_top > 1, np.nan, share)
        ties += int(((n_top > 1) & (cnt > 0)).sum())
        E, J = share.shape
        labels = np.array([g.recommender for g in group])
        frame = pd.DataFrame(
            {
                "scheme": scheme,
                "n": n,
                "estimator": np.repeat(names, J),
                "metric": np.tile(group[0].families, E),
                "k": k_column(group[0].ks, E),
                "exact_winner": np.tile(np.where(n_top > 1, "(tie)", labels[winner]), E),
                "share_correct": share.ravel(),
                "n_repeats": cnt.ravel(),
            }
        )
        frames.append(frame[frame["n_repeats"] > 0])
    if ties:
        warnings.warn(
            f"{ties} cell(s) have recommenders tied for the exact best: their share is NaN",
            RuntimeWarning,
            stacklevel=2,
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def hit_ratio_table(results: Sequence[StressResult]) -> pd.DataFrame:
    """Sampled HR@k (mean over repeats) beside the global HR@⌊f(k)⌋ of each mapping, k = 1..n."""
    frames = []
    for res in results:
        if res.shr is None:
            continue
        k = np.arange(1, res.n + 1)
        for name, f in res.mapping_values.items():
            frames.append(
                pd.DataFrame(
                    {
                        "recommender": res.recommender,
                        "scheme": res.scheme,
                        "n": res.n,
                        "mapping": name,
                        "k": k,
                        "f_k": f,
                        "sampled_hr": res.shr,
                        "global_hr_at_f": res.global_hr_at_f[name],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def relative_error_table(estimates: pd.DataFrame) -> pd.DataFrame:
    r"""The dissertation's Tables 3-4: |relative error| averaged over K, ± its sd over K, in %.

    .. math:: \overline{e} = \frac{1}{|K|} \sum_K \frac{|\bar T̂_K - T_K|}{T_K} \times 100

    over the cutoffs in ``estimates`` (K = 1..k_max; cells whose exact metric
    is 0 are left out, as their relative error is undefined). A metric
    without a cutoff (AUC, untruncated AP) has one cell: its row is that
    cell's |relative error| with ``n_k`` = 1 and no sd (NaN).

    Parameters
    ----------
    estimates : DataFrame
        :func:`estimate_table`'s output.

    Returns
    -------
    DataFrame with columns recommender, scheme, n, estimator, metric,
    rel_error_pct (mean over K), rel_error_pct_sd (sd over K, ddof=1), n_k.
    """
    keys = ["recommender", "scheme", "n", "estimator", "metric"]
    ok = estimates.dropna(subset=["rel_error"])
    pct = ok.assign(abs_rel=ok["rel_error"].abs() * 100)
    out = pct.groupby(keys, sort=False)["abs_rel"].agg(["mean", "std", "size"]).reset_index()
    return out.rename(columns={"mean": "rel_error_pct", "std": "rel_error_pct_sd", "size": "n_k"})


def mapping_error_table(results: Sequence[StressResult]) -> pd.DataFrame:
    """Li & Jin's Table 7: how well each mapping aligns the sampled and global hit-ratio curves.

    With e_k = |HR@f(k) − SHR@k| (SHR@k averaged over repeats, HR@⌊f(k)⌋ exact):
    ``abs_error`` = Σ_k e_k / n, ``rel_error`` = Σ_k (e_k / SHR@k) / n (k with
    SHR@k = 0 left out), ``abs_at_1``/``rel_at_1`` at k = 1 and
    ``abs_2_10``/``rel_2_10`` averaged over k = 2..10 (Li & Jin §5, Table 7).
    beta@P uses the mean fitted a over repeats.
    """
    rows = []
    for res in results:
        if res.shr is None:
            continue
        shr = res.shr
        for name, ghr in res.global_hr_at_f.items():
            e = np.abs(ghr - shr)
            with np.errstate(invalid="ignore", divide="ignore"):
                rel = np.where(shr > 0, e / np.where(shr > 0, shr, 1), np.nan)
            top = slice(1, min(10, res.n))
            rows.append(
                {
                    "recommender": res.recommender,
                    "scheme": res.scheme,
                    "n": res.n,
                    "mapping": name,
                    "abs_error": float(e.mean()),
                    "rel_error": float(np.nanmean(rel)),
                    "abs_at_1": float(e[0]),
                    "rel_at_1": float(rel[0]),
                    "abs_2_10": float(e[top].mean()),
                    "rel_2_10": float(np.nanmean(rel[top])),
                }
            )
    return pd.DataFrame(rows)


#: K&R Figure 6's corrected curves: column -> data-independent correction.
_CORRECTED_CURVES = {"expected_rank_estimate": RankEstimate(), "expected_bv": BiasVariance(0.1)}


def expected_table(source: RankSource, families: Sequence[str], k: int, sizes: Sequence[int]) -> pd.DataFrame:
    """E[sampled metric] at cutoff ``k`` vs sample size n, naive and corrected, beside the exact metric (K&R Figure 6).

    Columns ``expected_sampled`` (naive), ``expected_rank_estimate`` and
    ``expected_bv`` (BV γ = 0.1, uniform prior): K&R's corrected curves.
    ``families`` are names of :data:`~simrec.stress.harness.METRIC_FAMILIES`;
    sizes above a recommender's smallest candidate set are skipped.
    """
    metrics = [METRIC_FAMILIES[f](k) for f in families]
    frames = []
    for rec in source.recommenders:
        ok = tuple(int(s) for s in sizes if 2 <= int(s) <= int(rec.n_candidates.min()))
        if not ok:
            continue
        vals = expected_sampled_metrics(rec, metrics, ok)
        corrected = {col: expected_sampled_metrics(rec, metrics, ok, est) for col, est in _CORRECTED_CURVES.items()}
        exact = metric_values(rec.ranks, metric_table(metrics, k)).mean(axis=0)
        for i, n in enumerate(ok):
            frames.append(
                pd.DataFrame(
                    {
                        "recommender": rec.name,
                        "n": n,
                        "metric": list(families),
                        "k": k,
                        "expected_sampled": vals[i],
                        **{col: v[i] for col, v in corrected.items()},
                        "exact": exact,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

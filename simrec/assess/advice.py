"""Which estimator and sample size to report: the rule, applied to the stress study's tables.

The rule (decision, stated in the report):

1. Only cells at the protocol's cutoff K = N count; least squares (``LS``)
   is left out (unusable as an estimator; Krichene & Rendle 2020, §5).
2. An estimator's error at (metric, scheme, n) is its **worst relative RMSE
   over the user's algorithms**, :math:`\\max_a \\sqrt{\\overline{(\\hat T_a - T_a)^2}} / T_a`
   (every algorithm's number must be right, not the average one).
3. It is **acceptable** when its bootstrap interval covered the exact metric
   in at least ``min_coverage`` of the repeats for every algorithm (the
   smallest coverage over algorithms); without intervals (``n_boot = 0``)
   coverage is not measured and every estimator counts as acceptable.
4. At each sample size n the **best estimator** is the acceptable one with the
   lowest worst relative RMSE (if none is acceptable, the lowest of all,
   flagged ``acceptable = False``).
5. The **recommendation** per metric is the smallest sample size whose best
   estimator's worst relative RMSE is at most ``max_rel_rmse`` (and
   acceptable); if no size qualifies, **full ranking** (exact metrics).

Both tables mark the estimators whose bootstrap interval is known not to
cover the metric (issue 22): ``coverage_known_to_fail`` is True for the
estimators whose :class:`~simrec.sampling.IntervalKind` is
``"sampling_biased"`` (naive, rank estimate, CLS, BV with the uniform prior
at γ >= 0.01, WMLE, every Li & Jin mapping; the stress table's ``interval``
column). The rule itself is unchanged: such an estimator can still be the
best by relative RMSE (its point estimate may be close at this K); the mark
says not to report its interval as a confidence interval. NA where the
stress tables do not say (results written before the column existed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from simrec.sampling import IntervalKind

__all__ = [
    "EXCLUDED_ESTIMATORS",
    "best_estimators",
    "recommend",
    "known_to_fail",
    "interval_fails",
    "known_to_fail_note",
]

#: Estimators never recommended (LS: unusable; its relative errors run into the thousands).
EXCLUDED_ESTIMATORS: tuple[str, ...] = ("LS",)


def best_estimators(
    estimates: pd.DataFrame, coverage: pd.DataFrame | None, *, k: int, min_coverage: float = 0.85
) -> pd.DataFrame:
    """The best estimator per metric x sample size (rules 1-4 of the module docstring).

    Parameters
    ----------
    estimates : DataFrame
        The stress study's estimates (:data:`simrec.stress.ESTIMATE_COLUMNS`).
    coverage : DataFrame or None
        Its coverage table (:data:`simrec.stress.COVERAGE_COLUMNS`), None or
        empty without intervals.
    k : int
        The protocol's cutoff N.
    min_coverage : float in [0, 1], default 0.85

    Returns
    -------
    DataFrame
        Columns ``metric, n, scheme, estimator, worst_rel_rmse,
        mean_abs_rel_error, min_coverage, acceptable, coverage_known_to_fail``,
        one row per metric x n (ascending n).
    """
    if not 0 <= min_coverage <= 1:
        raise ValueError(f"`min_coverage` must be in [0, 1]; got {min_coverage}")
    est = estimates[(estimates["k"] == k) & ~estimates["estimator"].isin(EXCLUDED_ESTIMATORS)]
    keys = ["metric", "scheme", "n", "estimator"]
    agg = est.groupby(keys, sort=False).agg(
        worst_rel_rmse=("rel_rmse", "max"), mean_abs_rel_error=("rel_error", lambda s: float(np.abs(s).mean()))
    )
    agg = agg.reset_index()
    if coverage is not None and len(coverage):
        cov = coverage[coverage["k"] == k].groupby(keys, sort=False)["coverage"].min().rename("min_coverage")
        agg = agg.merge(cov.reset_index(), on=keys, how="left")
        agg["acceptable"] = agg["min_coverage"] >= min_coverage
    else:
        agg["min_coverage"] = np.nan
        agg["acceptable"] = True
    rows = []
    for (metric, n), g in agg.groupby(["metric", "n"], sort=False):
        g = g[np.isfinite(g["worst_rel_rmse"])]
        if g.empty:
            continue
        pool = g[g["acceptable"]] if g["acceptable"].any() else g
        rows.append(pool.loc[pool["worst_rel_rmse"].idxmin()])
    cols = ["metric", "n", "scheme", "estimator", "worst_rel_rmse", "mean_abs_rel_error", "min_coverage", "acceptable"]
    if not rows:
        return pd.DataFrame(columns=[*cols, "coverage_known_to_fail"])
    out = pd.DataFrame(rows)[cols].reset_index(drop=True)
    out["acceptable"] = out["acceptable"].astype(bool)
    out["coverage_known_to_fail"] = known_to_fail(estimates, out["estimator"])
    return out.sort_values(["metric", "n"], kind="stable").reset_index(drop=True)


def known_to_fail(estimates: pd.DataFrame, estimators: pd.Series) -> pd.arrays.BooleanArray:
    """Per estimator name: is its interval known not to cover the metric? (the stress table's ``interval``).

    NA for names the table does not describe (no ``interval`` column, or an
    empty one).
    """
    kinds = {}
    if "interval" in estimates:
        kinds = dict(zip(estimates["estimator"], estimates["interval"].fillna("")))
    known = {k.value: k.coverage_known_to_fail for k in IntervalKind}
    return pd.array([known.get(kinds.get(e, "")) for e in estimators], dtype="boolean")


def recommend(best: pd.DataFrame, metrics: list[str], *, max_rel_rmse: float = 0.1) -> pd.DataFrame:
    """The estimator and sample size to report per metric (rule 5 of the module docstring).

    Returns
    -------
    DataFrame
        Columns ``metric, report, n, scheme, estimator, worst_rel_rmse,
        min_coverage, reason, coverage_known_to_fail``; ``report`` is
        ``"sampled"`` or ``"full ranking"`` (then ``n``/``scheme``/``estimator``
        are the closest sampled option, for reference); the last column is
        that of ``best`` for the estimator named (NA without one).
    """
    if not max_rel_rmse > 0:
        raise ValueError(f"`max_rel_rmse` must be > 0; got {max_rel_rmse}")
    rows = []
    for metric in metrics:
        g = best[best["metric"] == metric].sort_values("n")
        if g.empty:
            rows.append((metric, "full ranking", np.nan, "", "", np.nan, np.nan, "no sampled estimate", None))
            continue
        ok = g[(g["worst_rel_rmse"] <= max_rel_rmse) & g["acceptable"]]
        if len(ok):
            r = ok.iloc[0]
            rows.append(
                (
                    metric,
                    "sampled",
                    int(r["n"]),
                    r["scheme"],
                    r["estimator"],
                    r["worst_rel_rmse"],
                    r["min_coverage"],
                    f"smallest n with worst relative RMSE <= {max_rel_rmse:g} and acceptable coverage",
                    r.get("coverage_known_to_fail"),
                )
            )
        else:
            r = g.loc[g["worst_rel_rmse"].idxmin()]
            rows.append(
                (
                    metric,
                    "full ranking",
                    int(r["n"]),
                    r["scheme"],
                    r["estimator"],
                    r["worst_rel_rmse"],
                    r["min_coverage"],
                    f"no sample size reaches worst relative RMSE <= {max_rel_rmse:g} with "
                    "acceptable coverage; the closest is listed",
                    r.get("coverage_known_to_fail"),
                )
            )
    cols = ["metric", "report", "n", "scheme", "estimator", "worst_rel_rmse", "min_coverage", "reason"]
    out = pd.DataFrame([r[:-1] for r in rows], columns=cols)
    out["coverage_known_to_fail"] = pd.array([None if pd.isna(r[-1]) else bool(r[-1]) for r in rows], dtype="boolean")
    return out


def interval_fails(row: Mapping[str, Any]) -> bool:
    """True when an advice or estimators row marks its estimator's interval as known to fail (NA: False)."""
    v = row.get("coverage_known_to_fail")
    return False if v is None or pd.isna(v) else bool(v)


def known_to_fail_note(estimators: list[str]) -> str:
    """The footnote for estimators whose bootstrap interval is known not to cover the metric."""
    names = ", ".join(dict.fromkeys(estimators))
    return (
        f"{names}: the bootstrap interval measures sampling variability only, and this estimator's bias does not "
        "shrink with the number of users, so its coverage of the metric is known to fail; report its point "
        "estimate with the sampling error above, not its interval as a confidence interval "
        "(coverage_known_to_fail in estimators.csv and advice.csv)."
    )

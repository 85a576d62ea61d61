"""Which correction of the missing-data error to report: the rule, applied to the worlds' debias tables (issue 25).

With a ``[correction]`` section, the assessment's calibrated worlds also run
the MNAR-correction harness (:mod:`simrec.debias.harness`) on the user's
algorithms and protocol, and this module turns its summary into advice.

The rule (decision, stated in the report):

1. **Only corrections the user can compute on real data are candidates**:
   estimators that read no propensity (propensity ``"none"``: naive, the
   SKEW and WTD_H resampling, ...) and those with Yang et al.'s popularity
   power law fitted on the lists (``"fitted"``), except IPS and DR of a
   metric normalised by the user's number of relevant items (recall, nDCG:
   unknown on real data; :attr:`simrec.debias.LinearMetric.needs_n`). The
   world's own propensities (``"world"``) are run as the reference — what
   exact propensities would achieve — and shown, never recommended.
2. A candidate's error per metric is its **worst relative bias over the
   algorithms and worlds**, :math:`\\max_{a,w} |\\overline{\\hat M - M}| / M`
   (every algorithm's number must be right), beside its worst relative RMSE,
   its smallest interval coverage and the smallest probability over the
   worlds that it orders the algorithms as the truth does.
3. It is **acceptable** when its worst relative bias is at most
   ``max_rel_bias`` and its interval covered the truth in at least
   ``min_coverage`` of the replicates for every algorithm and world
   (estimators without an interval, the stratified ones: on bias alone).
4. The **advice** per metric: the acceptable candidate with the lowest worst
   relative RMSE (``"naive"`` among them: no correction needed); if none is
   acceptable, **none can be trusted** in these worlds: report the naive
   number with its missing-data error. "What it does to the total error": the
   worst relative RMSE of the naive number beside the advised one's (the
   missing-data part of the total error; the sampling part is unchanged).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from simrec.assess.bottom_line import Finding
from simrec.debias import DR, IPS, LINEAR_METRICS
from simrec.labels import metric_label

__all__ = [
    "REAL_DATA_PROPENSITIES",
    "usable_on_real_data",
    "correction_candidates",
    "correction_advice",
    "correction_finding",
]

#: Propensity kinds a user can compute on real data ("none": the estimator reads none).
REAL_DATA_PROPENSITIES: tuple[str, ...] = ("none", "fitted")

#: Estimators whose normaliser is the true |Rel_u| for metrics that need it (unknown on real data).
_NEED_TRUE_N = {IPS.name, DR.name}


def _metric_needs_n(label: str) -> bool:
    cls = LINEAR_METRICS.get(label.split("@")[0])
    return bool(cls is not None and cls.needs_n)


def usable_on_real_data(estimator: str, propensity: str, metric: str) -> bool:
    """Can a user compute this estimate on real data (rule 1 of the module docstring)?"""
    if propensity not in REAL_DATA_PROPENSITIES:
        return False
    return not (estimator in _NEED_TRUE_N and _metric_needs_n(metric))


def correction_candidates(summary: pd.DataFrame, order: pd.DataFrame) -> pd.DataFrame:
    """Per metric x estimator x propensity: the worst errors over algorithms and worlds (rule 2).

    Parameters
    ----------
    summary : DataFrame
        :func:`simrec.debias.summarize_debias` of the worlds' rows.
    order : DataFrame
        :func:`simrec.debias.order_accuracy` of the same rows.

    Returns
    -------
    DataFrame
        Columns metric, estimator, propensity, ``usable`` (rule 1),
        ``worst_rel_bias``, ``worst_rel_rmse``, ``min_coverage`` (NaN without
        intervals), ``p_true_order`` (smallest over worlds; NaN with one
        algorithm), ``n_replicates`` (smallest).
    """
    d = summary.assign(
        rel_bias=(summary["bias"].abs() / summary["truth"]).where(summary["truth"] > 0),
        rel_rmse=(summary["rmse"] / summary["truth"]).where(summary["truth"] > 0),
    )
    key = ["metric", "estimator", "propensity"]
    out = (
        d.groupby(key, sort=False)
        .agg(
            worst_rel_bias=("rel_bias", "max"),
            worst_rel_rmse=("rel_rmse", "max"),
            min_coverage=("coverage", "min"),
            n_replicates=("n_replicates", "min"),
        )
        .reset_index()
    )
    if len(order):
        p = order.groupby(key, sort=False)["p_true_order"].min().rename("p_true_order").reset_index()
        out = out.merge(p, on=key, how="left")
    else:
        out["p_true_order"] = np.nan
    out.insert(
        3,
        "usable",
        [usable_on_real_data(e, p, m) for m, e, p in zip(out["metric"], out["estimator"], out["propensity"])],
    )
    return out[[*key, "usable", "worst_rel_bias", "worst_rel_rmse", "min_coverage", "p_true_order", "n_replicates"]]


def _pct(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{100 * x:.0f}%"


def _name(row: pd.Series) -> str:
    return (
        row["estimator"] if row["propensity"] == "none" else f"{row['estimator']} with {row['propensity']} propensities"
    )


def correction_advice(
    candidates: pd.DataFrame, *, max_rel_bias: float = 0.1, min_coverage: float = 0.85
) -> pd.DataFrame:
    """The advice per metric (rules 3-4 of the module docstring).

    Returns
    -------
    DataFrame
        One row per metric: ``report`` (``"naive"``, ``"corrected"`` or
        ``"none trusted"``), ``estimator``, ``propensity`` (the advised
        candidate, or the least biased usable one when none is trusted),
        ``worst_rel_bias``, ``worst_rel_rmse``, ``naive_rel_bias``,
        ``naive_rel_rmse``, ``reference`` (the best with the world's own
        propensities, for comparison) and ``text`` (the sentence for the report).
    """
    if not 0 < max_rel_bias:
        raise ValueError(f"`max_rel_bias` must be > 0; got {max_rel_bias}")
    if not 0 <= min_coverage <= 1:
        raise ValueError(f"`min_coverage` must be in [0, 1]; got {min_coverage}")
    rows = []
    for metric, c in candidates.groupby("metric", sort=False):
        usable = c[c["usable"] & c["worst_rel_bias"].notna()]
        naive = c[c["estimator"] == "naive"]
        nb = float(naive["worst_rel_bias"].iloc[0]) if len(naive) else np.nan
        nr = float(naive["worst_rel_rmse"].iloc[0]) if len(naive) else np.nan
        ok = usable[
            (usable["worst_rel_bias"] <= max_rel_bias)
            & (usable["min_coverage"].isna() | (usable["min_coverage"] >= min_coverage))
        ]
        world = c[c["propensity"] == "world"].sort_values("worst_rel_rmse", kind="stable")
        ref = f"{world.iloc[0]['estimator']} ({_pct(world.iloc[0]['worst_rel_bias'])})" if len(world) else ""
        if len(ok):
            best = ok.sort_values(["worst_rel_rmse", "worst_rel_bias"], kind="stable").iloc[0]
            report = "naive" if best["estimator"] == "naive" else "corrected"
        else:
            best = usable.sort_values("worst_rel_bias", kind="stable").iloc[0] if len(usable) else None
            report = "none trusted"
        if best is None:
            text = "no correction could be measured (no usable estimator had a defined value)."
        elif report == "naive":
            text = (
                f"report the uncorrected number: off by at most {_pct(nb)} in these worlds (tolerance "
                f"{_pct(max_rel_bias)}); no correction is needed."
            )
        elif report == "corrected":
            text = (
                f"report {_name(best)}: off by at most {_pct(best['worst_rel_bias'])} where the uncorrected number "
                f"is off by up to {_pct(nb)}; the missing-data part of the error (worst relative RMSE) goes from "
                f"{_pct(nr)} to {_pct(best['worst_rel_rmse'])}."
            )
        else:
            text = (
                f"no correction can be trusted here: the least biased one you can compute ({_name(best)}) is still "
                f"off by up to {_pct(best['worst_rel_bias'])} (uncorrected: {_pct(nb)}; tolerance "
                f"{_pct(max_rel_bias)}); report the uncorrected number with its missing-data error."
            )
        rows.append(
            {
                "metric": metric,
                "report": report,
                "estimator": None if best is None else best["estimator"],
                "propensity": None if best is None else best["propensity"],
                "worst_rel_bias": np.nan if best is None else float(best["worst_rel_bias"]),
                "worst_rel_rmse": np.nan if best is None else float(best["worst_rel_rmse"]),
                "naive_rel_bias": nb,
                "naive_rel_rmse": nr,
                "reference": ref,
                "text": text,
            }
        )
    return pd.DataFrame(rows)


def correction_finding(advice: pd.DataFrame, candidates: pd.DataFrame, n: int) -> Finding:
    """The report's ``missing_data_correction`` check (:data:`simrec.assess.bottom_line.CHECKS`) from the advice.

    A warning where some metric has no trustworthy correction; the summary
    names the advised correction per metric; the table lists the usable
    candidates and the world's-propensity reference, least biased first.
    """
    parts = []
    for r in advice.itertuples():
        label = metric_label(r.metric, n)
        if r.report == "corrected":
            parts.append(f"{label}: report {r.estimator}" + ("" if r.propensity == "none" else f" ({r.propensity})"))
        elif r.report == "naive":
            parts.append(f"{label}: no correction needed")
        else:
            parts.append(f"{label}: none can be trusted")
    verdict: Literal["ok", "warning"] = "warning" if (advice["report"] == "none trusted").any() else "ok"
    summary = "Correcting the missing-data error, measured in the calibrated worlds: " + "; ".join(parts) + "."
    paragraphs = tuple(f"{metric_label(r.metric, n)}: {r.text}" for r in advice.itertuples())
    shown = candidates[candidates["usable"] | (candidates["propensity"] == "world")]
    table = shown.sort_values(["metric", "worst_rel_bias"], kind="stable").reset_index(drop=True)
    return Finding(verdict, summary, paragraphs, table)

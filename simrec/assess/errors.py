"""The assessment's error table: missing-data error, sampling error after the chosen estimator, and their sum.

Per algorithm and metric:

* **missing-data error** (Tian 2019, §4): :math:`e_{md} = M_{obs} - M_{true}`
  of one evaluation in a calibrated world, from the run study's replicates
  (pooled over the best-fitting worlds);
* **sampling error** (Krichene & Rendle 2020; Li 2020):
  :math:`e_{s} = \\hat T - T_{exact}` of one sampled evaluation on the real
  data, corrected by the chosen estimator (:mod:`simrec.assess.advice`), from
  the stress study's repeats; exactly 0 for a full-ranking protocol;
* **total**: :math:`e = e_{md} + e_{s}`, the error of the number the user
  would publish (the two terms of :mod:`simrec.stress.decomposition`).

Decision (intervals): each interval is a *prediction* interval for the error
of one evaluation, :math:`\\bar e \\pm z_{(1+\\ell)/2}\\, s`, with
:math:`s` the sd over replicates (missing data) or repeats (sampling), the
spread a researcher's single number can have, not the precision of the mean.
The total treats the two errors as independent (they come from different
randomness: which items were observed, which negatives were sampled):
:math:`\\bar e_{md} + \\bar e_{s} \\pm z \\sqrt{s_{md}^2 + s_s^2}`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as _st

from simrec.report import errors as _run_errors

__all__ = [
    "ERROR_COLUMNS",
    "missing_data_errors",
    "sampling_errors",
    "total_errors",
    "metric_values",
    "headline_table",
    "HEADLINE_COLUMNS",
]

#: Columns of the three error tables.
ERROR_COLUMNS = ["recommender", "metric", "source", "mean", "sd", "lower", "upper", "n"]


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"`level` must be in (0, 1); got {level}")
    return float(_st.norm.ppf(0.5 + level / 2))


def _with_interval(frame: pd.DataFrame, level: float) -> pd.DataFrame:
    z = _z(level)
    half = z * frame["sd"].fillna(0.0)
    return frame.assign(lower=frame["mean"] - half, upper=frame["mean"] + half)[ERROR_COLUMNS]


def missing_data_errors(results: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Missing-data error per recommender x metric, pooled over the worlds in ``results``, and per world.

    Parameters
    ----------
    results : DataFrame
        The run study's tidy results (:data:`simrec.experiment.RESULT_COLUMNS`).
    level : float, default 0.95
        Level of the prediction interval (module docstring).

    Returns
    -------
    DataFrame
        :data:`ERROR_COLUMNS`; ``source`` is ``"all worlds"`` for the pooled
        rows, else the world's name; ``n`` counts (replicate, world) pairs
        with a defined error. Rows follow the recommenders' and metrics'
        order in ``results``.
    """
    err = _run_errors(results).dropna(subset=["error"])
    recs = list(dict.fromkeys(results["recommender"]))
    metrics = list(dict.fromkeys(results["metric"]))
    rows = []
    for rec in recs:
        for metric in metrics:
            sub = err[(err["recommender"] == rec) & (err["metric"] == metric)]
            groups = [("all worlds", sub)] + [(w, g) for w, g in sub.groupby("world", sort=False)]
            for source, g in groups:
                e = g["error"].to_numpy(dtype=float)
                rows.append(
                    (
                        rec,
                        metric,
                        source,
                        float(e.mean()) if len(e) else np.nan,
                        float(e.std(ddof=1)) if len(e) > 1 else np.nan,
                        len(e),
                    )
                )
    frame = pd.DataFrame(rows, columns=["recommender", "metric", "source", "mean", "sd", "n"])
    return _with_interval(frame, level)


def sampling_errors(
    estimates: pd.DataFrame, choice: pd.DataFrame, *, k: int, n: int | None, level: float = 0.95
) -> pd.DataFrame:
    """Sampling error of the chosen estimator at sample size ``n`` per recommender x metric.

    Parameters
    ----------
    estimates : DataFrame
        The stress study's ``estimates.parquet`` (:data:`simrec.stress.ESTIMATE_COLUMNS`).
    choice : DataFrame
        :func:`simrec.assess.best_estimators`: per metric and size, the chosen
        scheme and estimator.
    k : int
        The cutoff (the protocol's N).
    n : int or None
        The protocol's number of sampled negatives; None for a full-ranking
        protocol (the error is exactly 0: nothing is sampled).
    level : float, default 0.95

    Returns
    -------
    DataFrame
        :data:`ERROR_COLUMNS` with ``source`` naming the scheme, n and
        estimator (``"full ranking (exact)"`` for ``n=None``); ``n`` counts
        the repeats.
    """
    recs = list(dict.fromkeys(estimates["recommender"]))
    rows = []
    for metric in dict.fromkeys(choice["metric"]):
        for rec in recs:
            if n is None:
                rows.append((rec, metric, "full ranking (exact)", 0.0, 0.0, 0))
                continue
            pick = choice[(choice["metric"] == metric) & (choice["n"] == n)]
            if pick.empty or pd.isna(pick["estimator"].iloc[0]):
                rows.append((rec, metric, f"n = {n}: no estimator", np.nan, np.nan, 0))
                continue
            scheme, est = pick["scheme"].iloc[0], pick["estimator"].iloc[0]
            cell = estimates[
                (estimates["recommender"] == rec)
                & (estimates["metric"] == metric)
                & (estimates["k"] == k)
                & (estimates["n"] == n)
                & (estimates["scheme"] == scheme)
                & (estimates["estimator"] == est)
            ]
            if cell.empty:
                rows.append((rec, metric, f"{scheme}, n = {n}, {est}", np.nan, np.nan, 0))
                continue
            c = cell.iloc[0]
            rows.append(
                (rec, metric, f"{scheme}, n = {n}, {est}", float(c["bias"]), float(c["sd"]), int(c["n_repeats"]))
            )
    frame = pd.DataFrame(rows, columns=["recommender", "metric", "source", "mean", "sd", "n"])
    return _with_interval(frame, level)


def total_errors(missing: pd.DataFrame, sampling: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Missing-data plus sampling error per recommender x metric (pooled rows of both; module docstring).

    Metrics without a sampling row (no sampled estimator, e.g. precision)
    get NaN: their sampling error is not measured, so neither is the total.
    """
    md = missing[missing["source"] == "all worlds"].set_index(["recommender", "metric"])
    sa = sampling.set_index(["recommender", "metric"])
    rows = []
    for (rec, metric), m in md.iterrows():
        if (rec, metric) in sa.index:
            s = sa.loc[(rec, metric)]
            rows.append(
                (
                    rec,
                    metric,
                    "missing data + sampling",
                    m["mean"] + s["mean"],
                    float(np.hypot(m["sd"], s["sd"])),
                    int(min(m["n"], s["n"]) if s["n"] else m["n"]),
                )
            )
        else:
            rows.append((rec, metric, "sampling not measured", np.nan, np.nan, 0))
    frame = pd.DataFrame(rows, columns=["recommender", "metric", "source", "mean", "sd", "n"])
    return _with_interval(frame, level)


def metric_values(results: pd.DataFrame) -> pd.DataFrame:
    """The mean metric per recommender x metric against the observed test items and the true preferences.

    Pooled over the worlds and replicates of ``results`` (the run study's tidy
    results), like the pooled missing-data error; the scale that
    :mod:`simrec.assess.bottom_line` measures the errors against.

    Returns
    -------
    DataFrame
        Columns ``recommender, metric, observed_mean, true_mean``, in the
        order of ``results``.
    """
    means = results.pivot_table(
        index=["recommender", "metric"], columns="truth", values="value", aggfunc="mean", sort=False, dropna=False
    ).reindex(columns=["observed", "true"])
    out = pd.DataFrame(
        {"observed_mean": means["observed"].to_numpy(dtype=float), "true_mean": means["true"].to_numpy(dtype=float)},
        index=means.index,
    )
    return out.reset_index()


#: Columns of :func:`headline_table` (``headline.csv``).
HEADLINE_COLUMNS = [
    "recommender",
    "metric",
    "observed_mean",
    "true_mean",
    *[f"{c}_{s}" for c in ("missing", "sampling", "total") for s in ("mean", "lower", "upper")],
]


def headline_table(errors: pd.DataFrame, values: pd.DataFrame) -> pd.DataFrame:
    """One row per algorithm x metric: its mean values and the three pooled errors with their intervals.

    Parameters
    ----------
    errors : DataFrame
        The three error tables stacked with a ``component`` column
        (``"missing data"``, ``"sampling"``, ``"total"``; ``errors.csv``).
    values : DataFrame
        :func:`metric_values`.

    Returns
    -------
    DataFrame
        :data:`HEADLINE_COLUMNS`, in the order of ``errors``.
    """
    pooled = errors[(errors["source"] == "all worlds") | (errors["component"] != "missing data")]
    wide = pooled.pivot_table(
        index=["recommender", "metric"],
        columns="component",
        values=["mean", "lower", "upper"],
        aggfunc="first",
        sort=False,
        dropna=False,
    )
    out = pd.DataFrame(index=wide.index)
    v = values.set_index(["recommender", "metric"]).reindex(wide.index)
    out["observed_mean"] = v["observed_mean"].to_numpy(dtype=float)
    out["true_mean"] = v["true_mean"].to_numpy(dtype=float)
    for comp, short in (("missing data", "missing"), ("sampling", "sampling"), ("total", "total")):
        for stat in ("mean", "lower", "upper"):
            out[f"{short}_{stat}"] = wide[(stat, comp)] if (stat, comp) in wide.columns else np.nan
    return out.reset_index()[HEADLINE_COLUMNS]

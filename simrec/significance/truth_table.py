"""Tests' verdicts over replicates against a known truth, as a table (one row per group).

A study that knows the truth (:mod:`simrec.studies.significance`) records one
*outcome* per replicate x group x test (:data:`OUTCOME_COLUMNS`): the test's
p-value and direction, the observed and the true difference of A - B.
:func:`truth_table` turns them into the rates of :func:`truth_rates` per group.

Decision: the truth of a group is its world's, not a replicate's. A test on a
replicate's users asks whether A beats B *in the population the users are
drawn from*; that population's difference is estimated by the mean over
replicates of the replicates' true differences, Δ̄, with standard error
s/√R. The group is *null* (``truth`` "no difference") when |Δ̄| <= ``tolerance`` or when Δ̄'s ``confidence``
interval contains 0 (no difference the study can detect: e.g. two Random
recommenders, equal by construction); otherwise every replicate's
truth has Δ̄'s sign. So a row has either a type I rate (null) or correct /
type II / type III rates (non-null), never both.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from simrec._validation import check_in_range
from simrec.significance.rates import Rate, truth_rates

__all__ = ["OUTCOME_COLUMNS", "RATE_NAMES", "truth_table"]

#: Columns of an outcome frame: the group columns are every column not listed here but ``replicate``.
OUTCOME_COLUMNS: tuple[str, ...] = ("replicate", "test", "p_value", "sign", "mean_difference", "true_difference")

#: The rates of a row, each with ``_low`` / ``_high`` (Wilson) and ``_count`` / ``_n`` columns.
RATE_NAMES: tuple[str, ...] = ("significant", "correct", "type_i", "type_ii", "type_iii", "right_given_significant")


def _rate_columns(name: str, r: Rate) -> dict[str, float]:
    return {
        name: r.rate,
        f"{name}_low": r.ci_low,
        f"{name}_high": r.ci_high,
        f"{name}_count": r.count,
        f"{name}_n": r.n,
    }


def truth_table(
    outcomes: pd.DataFrame,
    *,
    alpha: float = 0.05,
    tolerance: float = 0.0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Rates of correct, false and wrong-direction significance per group, with Wilson intervals.

    .. math:: \\bar\\Delta = \\frac1R \\sum_r \\Delta_r, \\qquad
              \\text{null} \\iff |\\bar\\Delta| \\le \\tau \\ \\lor\\ |\\bar\\Delta| \\le z_{(1+c)/2}\\, s_\\Delta/\\sqrt R

    then :func:`~simrec.significance.truth_rates` of the replicates' p-values and
    signs against Δ̄ (module docstring; Urbano et al., SIGIR 2019).

    Parameters
    ----------
    outcomes : DataFrame
        :data:`OUTCOME_COLUMNS` plus the group columns (e.g. world, protocol,
        metric, a, b), one row per replicate x group x test.
    alpha : float in (0, 1), default 0.05
    tolerance : float >= 0, default 0.0
    confidence : float in (0, 1), default 0.95
        Of the Wilson intervals and of Δ̄'s interval.

    Returns
    -------
    DataFrame
        One row per group x test, in first-appearance order: the group
        columns, ``test``, ``n_replicates``, ``true_difference`` (Δ̄),
        ``true_difference_se``, ``truth`` (``"no difference"``, ``"A > B"`` or
        ``"A < B"``; not ``"null"``, which CSV readers take for a missing value),
        ``mean_observed_difference``, then for each of :data:`RATE_NAMES` the
        rate, its Wilson ``_low``/``_high`` and its ``_count``/``_n``
        (``significant`` is the share of replicates with p <= alpha), and
        ``n_undefined`` (replicates whose test was undefined).
    """
    alpha = check_in_range("alpha", alpha, 0, 1, low_open=True, high_open=True)
    tolerance = check_in_range("tolerance", tolerance, 0, None)
    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    missing = [c for c in OUTCOME_COLUMNS if c not in outcomes.columns]
    if missing:
        raise ValueError(f"`outcomes` must have the columns {list(OUTCOME_COLUMNS)}; missing {missing}")
    groups = [c for c in outcomes.columns if c not in OUTCOME_COLUMNS]
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    rows = []
    for key, g in outcomes.groupby([*groups, "test"], sort=False, dropna=False):
        truth_r = g["true_difference"].to_numpy(dtype=np.float64)
        ok = ~np.isnan(truth_r)
        mean = float(truth_r[ok].mean()) if ok.any() else float("nan")
        se = float(truth_r[ok].std(ddof=1) / np.sqrt(ok.sum())) if ok.sum() > 1 else float("nan")
        null = abs(mean) <= tolerance or (np.isfinite(se) and abs(mean) <= z * se)
        truth = np.full(len(g), 0.0 if null else mean)
        p = g["p_value"].to_numpy(dtype=np.float64)
        rates = truth_rates(
            p, g["sign"].to_numpy(dtype=np.float64), truth, alpha=alpha, tolerance=0.0, confidence=confidence
        )
        defined = ~np.isnan(p)
        significant = truth_rates(
            p, np.ones(len(g)), np.ones(len(g)), alpha=alpha, confidence=confidence
        ).correct  # p <= alpha among the defined tests
        row = dict(zip([*groups, "test"], key if isinstance(key, tuple) else (key,)))
        row |= {
            "n_replicates": len(g),
            "true_difference": mean,
            "true_difference_se": se,
            "truth": "no difference" if null else ("A > B" if mean > 0 else "A < B"),
            "mean_observed_difference": float(np.nanmean(g["mean_difference"])) if defined.any() else float("nan"),
        }
        for name, r in zip(
            RATE_NAMES,
            (significant, rates.correct, rates.type_i, rates.type_ii, rates.type_iii, rates.right_given_significant),
        ):
            row |= _rate_columns(name, r)
        row["n_undefined"] = rates.n_undefined
        rows.append(row)
    return pd.DataFrame(rows)

"""Input checks shared by the estimators of :mod:`simrec.debias`."""

from __future__ import annotations

import numpy as np

from simrec.debias.metrics import LinearMetric
from simrec.debias.ranked import RankedTest


def check_ranked(ranked: object) -> RankedTest:
    if not isinstance(ranked, RankedTest):
        raise TypeError(f"`ranked` must be a RankedTest (see simrec.debias.rank_test); got {type(ranked).__name__}")
    return ranked


def check_metric(metric: object, ranked: RankedTest) -> LinearMetric:
    if not isinstance(metric, LinearMetric):
        raise TypeError(
            f"`metric` must be a simrec.debias LinearMetric (e.g. Recall(10); simrec.debias.linear_metric converts "
            f"simrec.metrics objects); got {type(metric).__name__}"
        )
    if metric.needs_full_ranking and not ranked.is_full_ranking():
        raise ValueError(f"`metric` {metric.label} needs full rankings (every candidate ranked); got top-N lists")
    return metric


def check_propensity(propensity: object, n_pairs: int) -> np.ndarray:
    """Per-test-pair propensities in (0, 1], NaN for a pair to leave out (float64, shape (n_pairs,))."""
    if propensity is None:
        raise TypeError("`propensity` must be given (one per test pair); got None")
    p = np.asarray(getattr(propensity, "values", propensity), dtype=np.float64)
    if p.shape != (n_pairs,):
        raise ValueError(f"`propensity` must have shape ({n_pairs},) (one per test pair); got {p.shape}")
    if not len(p):
        return p
    lo, hi = float(p.min()), float(p.max())  # NaN if some pair is left out: then the slower NaN-aware range
    if np.isnan(lo) or np.isnan(hi):
        given = p[~np.isnan(p)]
        lo, hi = (float(given.min()), float(given.max())) if len(given) else (0.5, 0.5)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo > 0 and hi <= 1):
        raise ValueError(f"`propensity` must be in (0, 1] (NaN: pair left out); got range [{lo}, {hi}]")
    return p


def inverse_weights(p: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """:math:`y_{ui}/p_{ui}` per test pair, 0 where the propensity is NaN (the pair is left out)."""
    if len(p) and not np.isnan(p.min()):  # no pair left out (min propagates NaN): a plain division, no mask
        return np.divide(labels, p)
    return np.divide(labels, p, out=np.zeros(len(p)), where=~np.isnan(p))


def checked_inputs(ranked: object, metric: object, propensity: object) -> tuple[RankedTest, LinearMetric, np.ndarray]:
    """The three inputs of a propensity-weighted estimate, checked (one place for every estimator)."""
    ranked = check_ranked(ranked)
    return ranked, check_metric(metric, ranked), check_propensity(propensity, ranked.test.nnz)

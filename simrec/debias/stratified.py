"""Propensity-stratified evaluation (Jadidinejad, Macdonald & Ounis, ACM TOIS 2021).

Jadidinejad, Macdonald & Ounis, "The Simpson's paradox in the offline
evaluation of recommendation systems", ACM Transactions on Information
Systems 40(1), 2021 (doi:10.1145/3458509; arXiv:2104.08912), as implemented
in the authors' code (terrierteam/stratified_recsys_eval,
``eval_methods/stratified_evaluation.py`` and ``experiment/result.py``) and
in Cornac's ``PropensityStratifiedEvaluation``: split the observed test
pairs into strata of equal-width propensity bins, evaluate the naive metric
on each stratum's pairs (each stratum a test set of its own, averaged over
the users with a pair in it), and combine

.. math:: \\hat M = \\sum_s w_s \\hat M_s .

* ``weighting="size"`` (default: the authors' "Unbiased" row,
  ``np.average(values, weights=sizes / total) * sum(weights)``):
  :math:`w_s = |S^{(s)}| / |S|`, the stratum's share of the test pairs;
* ``weighting="inverse_propensity"`` (simrec's named variant):
  :math:`w_s \\propto \\sum_{(u,i) \\in S^{(s)}} 1/p_{ui}`, the stratum's
  estimated share of the *relevant* pairs, which is what standardising the
  strata to the relevant population means in causal inference.

Strata: :math:`n` bins of equal width over the range of the test pairs'
propensities, right-closed, the first including the minimum (``pandas.cut``
with ``bins=n``, the authors' code; Cornac's ``np.digitize`` over
``np.arange(min, max + width, width)`` puts the maximum in an extra stratum of
its own, not reproduced). The authors use 5 strata (Cornac's default is 2)
and estimate the propensities with a power law of item popularity; here any
propensity kind of :mod:`simrec.debias.propensity` stratifies. Pairs without
a propensity (NaN) are left out. The result is a population value
(``Estimation.per_user`` is None) with the per-stratum values in
``Estimation.strata``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simrec._validation import check_choice, check_int
from simrec.debias._checks import checked_inputs
from simrec.debias.estimators import stratum_values as _stratum_values
from simrec.debias.metrics import LinearMetric
from simrec.debias.ranked import RankedTest
from simrec.debias.result import Estimation, Strata

__all__ = ["Stratified", "propensity_strata"]

#: weighting -> (the strata's mass from their pair counts and inverse-propensity sums, the estimator's name)
_WEIGHTINGS = {
    "size": (lambda sizes, inverse: sizes.astype(np.float64), "stratified"),
    "inverse_propensity": (lambda sizes, inverse: inverse, "stratified_ipw"),
}


def propensity_strata(propensity: np.ndarray, n_strata: int) -> tuple[np.ndarray, np.ndarray]:
    """Equal-width right-closed propensity bins (``pandas.cut(p, n_strata)``): stratum of each pair, and edges.

    Returns
    -------
    stratum : ndarray of int64, shape (len(propensity),)
        0-based stratum, -1 for a NaN propensity.
    edges : ndarray of float64, shape (n_strata + 1,)
    """
    n_strata = check_int("n_strata", n_strata, low=1)
    p = np.asarray(propensity, dtype=np.float64)
    lo, hi = (float(p.min()), float(p.max())) if len(p) else (np.nan, np.nan)
    nan = None
    if np.isnan(lo) or np.isnan(hi):  # NaN present (or no pair): the slower NaN-aware path
        nan = np.isnan(p)
        if nan.all():
            return np.full(len(p), -1, dtype=np.int64), np.full(n_strata + 1, np.nan)
        lo, hi = float(p[~nan].min()), float(p[~nan].max())
    edges = np.linspace(lo, hi, n_strata + 1)
    # searchsorted puts NaN after every edge: stratum n_strata - 1 until the NaN pairs are marked -1
    stratum = np.minimum(np.searchsorted(edges[1:-1], p, side="left"), n_strata - 1).astype(np.int64, copy=False)
    if nan is not None:
        stratum[nan] = -1
    return stratum, edges


@dataclass(frozen=True)
class Stratified:
    """Propensity-stratified evaluation: the naive metric per propensity stratum, combined (module docstring).

    Parameters
    ----------
    n_strata : int, default 5
        Strata (the authors' code uses 5; Cornac's default is 2).
    weighting : {"size", "inverse_propensity"}, default "size"
        The strata's weights: their share of the test pairs (the authors'),
        or of the estimated relevant pairs (simrec's variant).
    """

    n_strata: int = 5
    weighting: str = "size"

    uses_propensity: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_int("n_strata", self.n_strata, low=1)
        check_choice("weighting", self.weighting, tuple(_WEIGHTINGS))

    @property
    def name(self) -> str:
        """``"stratified"`` (size weights) or ``"stratified_ipw"``."""
        return _WEIGHTINGS[self.weighting][1]

    def estimate(
        self, ranked: RankedTest, metric: LinearMetric, propensity: np.ndarray | None = None, *, rng: object = None
    ) -> Estimation:
        ranked, metric, p = checked_inputs(ranked, metric, propensity)
        stratum, edges = propensity_strata(p, self.n_strata)
        on = stratum >= 0
        s_on, p_on = (stratum, p) if on.all() else (stratum[on], p[on])
        sizes = np.bincount(s_on, minlength=self.n_strata)
        inv = np.bincount(s_on, weights=1.0 / p_on, minlength=self.n_strata)
        mass_of, name = _WEIGHTINGS[self.weighting]
        mass = mass_of(sizes, inv)
        values = _stratum_values(ranked, metric, stratum, self.n_strata)
        defined = ~np.isnan(values)
        weights = np.where(defined, mass, 0.0)
        total = weights.sum()
        weights = weights / total if total > 0 else weights
        value = float(weights[defined] @ values[defined]) if total > 0 else float("nan")
        if on.all():  # every pair counted: the users with a test pair
            n_users = int(np.count_nonzero(np.diff(ranked.test.indptr)))
        else:
            n_users = int(np.count_nonzero(np.bincount(ranked.rows[on], minlength=ranked.n_users)))
        return Estimation(name, metric.label, value, None, n_users, 0, Strata(edges, sizes, values, weights))

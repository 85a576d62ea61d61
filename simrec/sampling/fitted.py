"""Fitting an estimator to sampled ranks, with a bootstrap interval over users.

One call shape for every estimator family (issue 10)::

    fitted = BiasVariance(0.1).fit(sampled_ranks, scheme, rng=0)   # or fit(estimator, ...)
    fitted.estimate(ndcg(10))     # -> Estimate with a 95% percentile interval
    fitted.estimates([recall(k) for k in range(1, 51)])

M (``n_users``) is the number of sampled ranks; the ranks are checked
against the scheme (integers in [1, n]).

**Bootstrap over users, on the rank histogram.** Every estimator here depends
on the sampled ranks only through their histogram h (n counts summing to M).
Resampling M users with replacement is the same as drawing
h* ~ Multinomial(M, h/M), so a replicate costs O(n) to draw, not O(M), and
the estimators whose F̂ does not depend on the data (naive, rank estimate, LS,
CLS, BV with the uniform prior, MN with the uniform prior) evaluate all B
replicates in one (B, n) x (n, J) product.

**Fitted estimators: linearised replicates** (default). MLE, WMLE, MES and
the linear estimators with an estimated prior (BV_MLE, BV_MES with γ > 0,
BV at 1/M and MN with a prior) are smooth functions of the histogram; each
replicate is the first-order expansion of the estimate around the sample,
T*_b = T̂ + ∇_h T̂ · (h*_b − h), with the exact gradient of the estimate as
computed (:func:`bootstrap_estimates`, :mod:`._linearize`): reverse mode
through the EM iterations actually run (one backward pass in single
precision, about 0.7 of a forward fit), the implicit-function theorem at
MES's dual optimum, and the chain rule through the fitted prior for the
linear estimators. An interval then costs under 2 fits instead of B + 1
(bench/bench_estimators.py). This is the delta-method ("linear") bootstrap
of Davison & Hinkley 1997 §2.7.4 for the estimator as implemented: the gap
to refitting is of order 1/M against replicate spreads of order 1/sqrt(M)
(tests/sampling/test_linearize.py: under a tenth of a standard error at
M = 3,000). With very few users the expansion is poor; ``refit=True``
refits every replicate from the same start with the same settings (the
plain percentile bootstrap), as does BV with γ = 0 and a prior (not
differentiable in the prior). Mappings with a fitted a (beta@P) are refitted
per replicate (a cheap fit over n). The stress harness's intervals
(``n_boot``) are these replicates, computed by the same function.

The interval is the percentile interval [q_{α/2}, q_{1-α/2}] of the B
replicate estimates (Efron & Tibshirani 1993, §13.3). It measures the
estimator's variability over the sampling of users *and* of items (each
user's sampled rank is one draw); it does **not** correct for bias: a biased
estimator's interval is centred on its expectation, not on the metric. The
stress harness (:func:`simrec.stress.run_stress` with ``n_boot > 0``) reports
each estimator's interval coverage of the exact metric, so users can see
which intervals can be trusted.

Decisions
---------
* Estimates outside the metric's range [min F, max F] over ranks 1..N warn
  (:class:`OutOfRangeWarning`); least squares warns at fit time that it is
  unusable (its F̂ solves an ill-conditioned system; estimates far outside
  [0, 1] are typical).
* The mapping estimators are defined for Recall/HR@K only; other metrics
  give NaN with a warning.
* :class:`~.estimators.AdaptiveMLE` fits :class:`~.ranks.AdaptiveRanks`
  (each user's own n_u); its bootstrap resamples the distinct (n_u, r_u)
  pairs multinomially (again equal to resampling users). :func:`fit_adaptive`
  takes N and with/without replacement from the ranks and refuses other
  values (issue 22: ranks drawn without replacement were fitted as binomial
  unless ``replace=`` was repeated).
* Every :class:`~._results.Estimate` says what it is (issue 22): its
  estimator's :class:`~._results.IntervalKind` (whether the interval's
  coverage is known to fail because of a bias it ignores), whether the
  iterative fits behind it converged and how many iterations the point fit
  ran. A fit stopped at its cap gives one :class:`ConvergenceWarning` per
  ``estimates`` / :func:`fit_adaptive` call naming the estimator, the cap
  and the tolerance; the cap itself (``max_iter = 300``) is unchanged
  (issue 27 decides it).
* A cutoff K > N is refused (it truncates nothing); K >= n warns for the
  naive estimator only (it ignores the cutoff: Recall@K = 1); with M < 2
  users the interval and standard error are NaN with a warning, never of
  zero width.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int
from simrec.sampling._checks import check_rank_array
from simrec.sampling._linearize import em_gradient, em_jvp, mes_gradient, mes_jvp
from simrec.sampling._results import Estimate
from simrec.sampling._threads import single_threaded_blas
from simrec.sampling.adaptive import AdaptiveRanks
from simrec.sampling.corrections import CorrectionProblem, constrained_least_squares, rank_estimate
from simrec.sampling.distribution import (
    RankDistribution,
    _em,
    decay_weights,
    mes,
    mle,
    mle_adaptive,
    weighted_mle,
)
from simrec.sampling.estimators import (
    MES,
    MLE,
    AdaptiveMLE,
    BiasVariance,
    BiasVarianceInverseUsers,
    ConstrainedLeastSquares,
    Estimator,
    LeastSquares,
    MappingEstimator,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    RankEstimate,
    WeightedMLE,
)
from simrec.sampling.functions import RankMetric, metric_table, ndcg
from simrec.sampling.mapping import _fit_beta_counts, beta_mapping, bound_mapping, linear_mapping
from simrec.sampling.scheme import SamplingScheme

__all__ = [
    "FittedEstimator",
    "FitStatus",
    "OutOfRangeWarning",
    "ConvergenceWarning",
    "fit_limits",
    "fit",
    "fit_adaptive",
    "estimate_histograms",
    "fixed_corrections",
    "bootstrap_histograms",
    "bootstrap_estimates",
    "percentile_interval",
]

#: Metric names the mappings estimate (Li & Jin: hit ratio = recall with one held-out item).
_MAPPABLE = ("Recall", "HR")


class OutOfRangeWarning(RuntimeWarning):
    """An estimate lies outside the range of its metric."""


class ConvergenceWarning(RuntimeWarning):
    """An iterative fit (EM, MES's L-BFGS, beta@P's fixed point) stopped at its iteration cap before its tolerance."""


#: Tolerance of the EM fits (MLE, WMLE, the MLE prior, adaptive MLE): change of the mean log-likelihood per user.
_EM_TOL = 1e-9
#: MES's L-BFGS cap and gradient tolerance (the defaults of :func:`~.distribution.mes`, used by MES and its prior).
_MES_MAX_ITER, _MES_TOL = 2000, 1e-12
#: beta@P's fixed-point cap and relative tolerance on a (:func:`~.mapping.fit_beta_mapping`'s defaults).
_BETA_MAX_ITER, _BETA_TOL = 100, 1e-6


@dataclass(frozen=True, eq=False)
class FitStatus:
    """Iterations and convergence of the iterative fit behind each estimate, one entry per (row, estimator).

    Filled by :func:`estimate_histograms` and :func:`bootstrap_estimates` when
    passed as ``status=``: the row of a histogram that was fitted gets the
    iterations its fit ran and whether it met its tolerance; rows and
    estimators without an iterative fit (closed forms, or replicates that were
    linearised rather than refitted) keep 0 and True.

    Attributes
    ----------
    n_iter : ndarray of int64, shape (B, E)
    converged : ndarray of bool, shape (B, E)
    """

    n_iter: np.ndarray
    converged: np.ndarray

    @classmethod
    def new(cls, n_rows: int, n_estimators: int) -> FitStatus:
        """No fit recorded yet: 0 iterations, converged, shape (n_rows, n_estimators)."""
        return cls(np.zeros((n_rows, n_estimators), dtype=np.int64), np.ones((n_rows, n_estimators), dtype=bool))

    def _record(self, row: int | slice, col: int, fit: _Fit) -> None:
        self.n_iter[row, col] = fit.n_iter
        self.converged[row, col] = fit.converged


class _Fit(NamedTuple):
    """One iterative fit: its result (π̂, or a mapping's values), iterations run, tolerance met."""

    value: object
    n_iter: int
    converged: bool


def _record(status: FitStatus | None, row: int | slice, col: int, fit: _Fit) -> None:
    if status is not None:
        status._record(row, col, fit)


def fit_limits(estimator: Estimator, max_iter: int) -> tuple[str, int, float] | None:
    """The iterative fit behind ``estimator``: (what it is, its iteration cap, its tolerance), or None.

    EM (MLE, WMLE, the MLE prior of BV_MLE / MN_MLE, adaptive MLE) runs at
    most ``max_iter`` iterations with tolerance 1e-9 on the mean
    log-likelihood per user; MES and the MES prior solve their dual by L-BFGS
    (at most 2000 iterations, gradient tolerance 1e-12; ``max_iter`` does not
    apply); beta@P iterates its fixed point at most 100 times (relative
    tolerance 1e-6 on a). The closed-form estimators give None.
    """
    if isinstance(estimator, (WeightedMLE, AdaptiveMLE)):
        return "EM", max_iter, _EM_TOL
    if isinstance(estimator, MappingEstimator):
        return ("beta@P fixed-point iteration", _BETA_MAX_ITER, _BETA_TOL) if estimator.kind == "beta@P" else None
    prior = _prior_of(estimator)
    if isinstance(prior, MLEPrior):
        return ("EM" if isinstance(estimator, MLE) else "EM of its MLE prior"), max_iter, _EM_TOL
    if isinstance(prior, MESPrior):
        return ("L-BFGS" if isinstance(estimator, MES) else "L-BFGS of its MES prior"), _MES_MAX_ITER, _MES_TOL
    return None


def _warn_not_converged(name: str, limits: tuple[str, int, float] | None, bad: int, total: int) -> None:
    """One :class:`ConvergenceWarning` for an estimate whose fit(s) stopped at the cap (``bad`` of ``total``)."""
    what, cap, tol = limits if limits is not None else ("fit", 0, math.nan)
    em = what.startswith("EM")
    where = f"max_iter = {cap}" if em else f"its cap of {cap} iterations"
    warnings.warn(
        f"{name} did not converge: its {what} stopped at {where} before meeting its tolerance "
        f"{tol:g} ({bad} of {total} fit(s)); the estimate is where the iterations stopped "
        f"(Estimate.converged = False){'; raise `max_iter`' if em else ''}",
        ConvergenceWarning,
        stacklevel=4,
    )


_LS_WARNING = (
    "LS (least squares, γ → 0) is unusable as an estimator: P(r|R) is a Bernstein basis, so the normal "
    "equations are severely ill-conditioned and the minimal-bias F̂ oscillates with values far outside the "
    "metric's range; its estimates have a huge variance (e.g. 612.7 ± 496.6 for a Recall@10 of 0.188). "
    "Use BV with γ >= 0.01, MN or CLS instead (Krichene & Rendle 2020 §5.2 make the same point)."
)


# ---------------------------------------------------------------------------
# the engine: estimates of J metrics from B histograms, for several estimators
# ---------------------------------------------------------------------------
@dataclass(eq=False)
class _Metrics:
    """The metrics' tables on ranks 1..N (and 1..n), with the rows where they can be non-zero."""

    scheme: SamplingScheme
    metrics: tuple[RankMetric, ...]
    table: np.ndarray = field(init=False)  # (N, J)
    k_max: int = field(init=False)
    _a_top: np.ndarray | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.table = metric_table(self.metrics, self.scheme.n_items)
        nz = np.flatnonzero(np.any(self.table != 0, axis=1))
        self.k_max = int(nz[-1]) + 1 if nz.size else 1

    @property
    def f_top(self) -> np.ndarray:
        return self.table[: self.k_max]

    @property
    def a_top(self) -> np.ndarray:
        if self._a_top is None:
            self._a_top = np.exp(self.scheme.log_probabilities(np.arange(1, self.k_max + 1)))
        return self._a_top

    def rhs(self, problem: CorrectionProblem) -> np.ndarray:
        """A^T D F for every metric, (n, J): through the first k_max rows when that is cheaper."""
        if self.k_max <= 4 * self.scheme.n:
            return problem.rhs_top(self.f_top, self.a_top)
        return self.scheme.blocks.rmatvec(problem.prior[:, None] * self.table)


def _gamma_of(e: Estimator, n_users: int) -> float | None:
    """γ of a linear estimator's family (K&R eq. 25): 0 for LS, 1/M for BV at 1/M; None for MN (eq. 45)."""
    if isinstance(e, MSEOptimal):
        return None
    if isinstance(e, LeastSquares):
        return 0.0
    return 1.0 / n_users if isinstance(e, BiasVarianceInverseUsers) else e.gamma


def _linear_corrections(
    estimators: Sequence[Estimator], problem: CorrectionProblem, ms: _Metrics, n_users: int
) -> dict[Estimator, np.ndarray]:
    """F̂ (n, J) of the linear estimators (LS, BV, BV at 1/M, MN) on one problem (one eigendecomposition)."""
    out: dict[Estimator, np.ndarray] = {}
    gammas: dict[Estimator, float] = {}
    rhs = None
    for e in estimators:
        if isinstance(e, MSEOptimal):
            rhs = ms.rhs(problem) if rhs is None else rhs
            out[e] = problem.solve_eq45(rhs, n_users)
        else:
            gammas[e] = _gamma_of(e, n_users)
    if gammas:
        if ms.k_max <= 4 * ms.scheme.n:
            sol = problem.solve_many(ms.f_top, tuple(set(gammas.values())), ms.a_top)
            out.update({e: sol[g] for e, g in gammas.items()})
        else:  # untruncated metrics (AUC): per metric, through the banded P(r|R)
            for e, g in gammas.items():
                out[e] = np.column_stack([problem.solve(m, g) for m in ms.metrics])
    return out


def _fixed_correction(e: Estimator, ms: _Metrics) -> np.ndarray:
    sch = ms.scheme
    if isinstance(e, Naive):
        return metric_table(ms.metrics, sch.n)
    if isinstance(e, RankEstimate):
        return np.column_stack([rank_estimate(m, sch).values for m in ms.metrics])
    return np.column_stack([constrained_least_squares(m, sch).values for m in ms.metrics])


def fixed_corrections(estimator: Estimator, scheme: SamplingScheme, metrics: Sequence[RankMetric]) -> np.ndarray:
    """F̂ (n, J) of an estimator whose per-rank correction does not depend on the data.

    Naive, rank estimate, CLS, and LS and BV with the uniform prior
    (:class:`~.estimators.MSEOptimal` and
    :class:`~.estimators.BiasVarianceInverseUsers` depend on M and are not
    accepted). Used for exact expectations such as K&R's corrected curve.
    """
    ms = _Metrics(scheme, tuple(metrics))
    if isinstance(estimator, (Naive, RankEstimate, ConstrainedLeastSquares)):
        return _fixed_correction(estimator, ms)
    if isinstance(estimator, (LeastSquares, BiasVariance)) and _prior_of(estimator) is None:
        uniform = CorrectionProblem.from_prior(scheme, None)
        return _linear_corrections([estimator], uniform, ms, 1)[estimator]
    raise TypeError(
        f"`estimator` must have a data-independent correction (naive, rank estimate, CLS, LS, BV with "
        f"the uniform prior); got {estimator.name}"
    )


def _prior_of(e: Estimator) -> MLEPrior | MESPrior | None:
    if isinstance(e, (MLE, MES)):
        return e.prior
    return getattr(e, "prior", None)


def _fit_prior(prior: MLEPrior | MESPrior, r: np.ndarray, scheme: SamplingScheme, max_iter: int) -> _Fit:
    if isinstance(prior, MLEPrior):
        d = mle(r, scheme, max_iter=max_iter, tol=_EM_TOL)
    else:
        d = mes(r, scheme, eta=prior.eta, max_iter=_MES_MAX_ITER, tol=_MES_TOL)
    return _distribution_fit(d)


def _distribution_fit(d: RankDistribution) -> _Fit:
    return _Fit(d.probabilities, d.n_iter, d.converged)


def _ranks_of(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(1, counts.size + 1), counts)


def _mapping_row(e: MappingEstimator, counts: np.ndarray, ms: _Metrics, n_users: int) -> _Fit:
    """The mapping's estimates of the metrics (NaN where it does not apply), with beta@P's fit status."""
    sch = ms.scheme
    N, n = sch.n_items, sch.n
    out = np.full(len(ms.metrics), np.nan)
    cols = [j for j, m in enumerate(ms.metrics) if m.name in _MAPPABLE and m.k is not None]
    if not cols:
        return _Fit(out, 0, True)
    n_iter, converged = 0, True
    if e.kind == "linear":
        f = linear_mapping(N, n).values
    elif e.kind == "bound":
        f = bound_mapping(N, n).values
    elif e.kind == "beta":
        f = beta_mapping(N, n, e.a).values
    else:
        try:
            m = _fit_beta_counts(counts, N, n, 1.0, _BETA_TOL, _BETA_MAX_ITER)  # fit_beta_mapping's defaults
        except ValueError:  # every sampled rank is n: a diverges, the estimate is undefined
            return _Fit(out, 0, True)
        f, n_iter, converged = m.values, m.n_iter, m.converged
    shr = np.cumsum(counts) / n_users
    ks = np.array([ms.metrics[j].k for j in cols], dtype=np.float64)
    out[cols] = np.interp(ks, np.r_[0.0, f], np.r_[0.0, shr])
    return _Fit(out, n_iter, converged)


def _metrics_of(cache: dict, scheme: SamplingScheme, metrics: Sequence[RankMetric]) -> _Metrics:
    ms = cache.get("metrics")
    if ms is None or ms.metrics != tuple(metrics) or ms.scheme is not scheme:
        cache.clear()
        ms = cache["metrics"] = _Metrics(scheme, tuple(metrics))
    return ms


def estimate_histograms(
    estimators: Sequence[Estimator],
    counts: np.ndarray,
    scheme: SamplingScheme,
    metrics: Sequence[RankMetric],
    *,
    max_iter: int = 300,
    cache: dict | None = None,
    fits: dict | None = None,
    status: FitStatus | None = None,
) -> np.ndarray:
    """Every estimator's estimate of every metric from each of B sampled-rank histograms.

    The engine behind :meth:`FittedEstimator.estimates` and the stress harness:
    one fit of each distinct prior (MLE, MES) per histogram serves every
    estimator using it; F̂ of the data-independent corrections is computed
    once (kept in ``cache`` across calls) and applied to all histograms in
    one product.

    Parameters
    ----------
    estimators : sequence of Estimator
        Any of :mod:`.estimators` except :class:`~.estimators.AdaptiveMLE`.
    counts : ndarray of int, shape (B, n)
        Histograms of the sampled ranks (row b: how many users have r = 1..n),
        every row with the same total M.
    scheme : SamplingScheme
    metrics : sequence of RankMetric
    max_iter : int, default 300
        EM iterations (MLE, WMLE and the MLE prior).
    cache : dict, optional
        Reused across calls with the same scheme, metrics and M (the caller's
        responsibility).
    fits : dict, optional
        Memo of the rank-distribution fits (MLE, MES, WMLE: the EM runs),
        keyed by the fit and the histogram row: calls on the same histograms
        with other metrics (the stress harness's cutoff and untruncated
        columns, or a fitted estimator asked for one metric after another)
        fit each distribution once. Holds one length-N vector per fit and row.
    status : FitStatus of shape (B, len(estimators)), optional
        Receives the iterations and convergence of each row's fit (EM, MES's
        L-BFGS, beta@P); the estimates do not depend on it.

    Returns
    -------
    ndarray, shape (B, len(estimators), len(metrics))
    """
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != scheme.n:
        raise ValueError(f"`counts` must have shape (B, n = {scheme.n}); got {counts.shape}")
    totals = counts.sum(axis=1)
    if (counts < 0).any() or totals.min() < 1 or (totals != totals[0]).any():
        raise ValueError("`counts` must be non-negative histograms with one common positive total M")
    n_users = int(totals[0])
    cache = {} if cache is None else cache
    ms = _metrics_of(cache, scheme, metrics)
    out = np.full((counts.shape[0], len(estimators), len(ms.metrics)), np.nan)
    p = counts / n_users
    fixed = cache.setdefault("fixed", {})
    uniform_linear = [
        e
        for e in estimators
        if isinstance(e, (LeastSquares, BiasVariance, BiasVarianceInverseUsers, MSEOptimal))
        and _prior_of(e) is None
        and (e, n_users) not in fixed
    ]
    if uniform_linear:
        sol = _linear_corrections(uniform_linear, CorrectionProblem.from_prior(scheme, None), ms, n_users)
        fixed.update({(e, n_users): v for e, v in sol.items()})
    by_prior: dict[MLEPrior | MESPrior, list[int]] = {}
    for i, e in enumerate(estimators):
        if isinstance(e, AdaptiveMLE):
            raise TypeError(
                "`estimators` must not hold AdaptiveMLE(): it needs each user's sample size (fit it on AdaptiveRanks)"
            )
        if isinstance(e, (Naive, RankEstimate, ConstrainedLeastSquares)):
            if (e, None) not in fixed:
                fixed[(e, None)] = _fixed_correction(e, ms)
            out[:, i] = p @ fixed[(e, None)]
        elif (e, n_users) in fixed:
            out[:, i] = p @ fixed[(e, n_users)]
        elif isinstance(e, WeightedMLE):
            w = decay_weights(ndcg(), scheme.n, e.scale)
            for b in range(counts.shape[0]):
                fit = _memo(
                    fits,
                    (e, max_iter, counts[b].tobytes()),
                    lambda b=b: _distribution_fit(
                        weighted_mle(_ranks_of(counts[b]), scheme, w, max_iter=max_iter, tol=_EM_TOL)
                    ),
                )
                out[b, i] = fit.value @ ms.table
                _record(status, b, i, fit)
        elif isinstance(e, MappingEstimator):
            for b in range(counts.shape[0]):
                fit = _mapping_row(e, counts[b], ms, n_users)
                out[b, i] = fit.value
                _record(status, b, i, fit)
        else:
            by_prior.setdefault(_prior_of(e), []).append(i)
    for prior, idx in by_prior.items():
        linear = [estimators[i] for i in idx if not isinstance(estimators[i], (MLE, MES))]
        for b in range(counts.shape[0]):
            fit = _memo(
                fits,
                (prior, max_iter, counts[b].tobytes()),
                lambda b=b: _fit_prior(prior, _ranks_of(counts[b]), scheme, max_iter),
            )
            pi = fit.value
            sol = (
                _linear_corrections(linear, CorrectionProblem(scheme, pi, prior_name=prior.name), ms, n_users)
                if linear
                else {}
            )
            for i in idx:
                e = estimators[i]
                out[b, i] = pi @ ms.table if e not in sol else p[b] @ sol[e]
                _record(status, b, i, fit)
    return out


def _memo(fits: dict | None, key: tuple, fit: Callable[[], _Fit]) -> _Fit:
    """``fit()``, or its value memoised in ``fits`` under ``key`` (no memo when ``fits`` is None)."""
    if fits is None:
        return fit()
    if key not in fits:
        fits[key] = fit()
    return fits[key]


def _linearisable(e: Estimator) -> bool:
    """MLE, WMLE, MES and the linear estimators with an estimated prior (not BV at γ = 0 with a prior)."""
    if isinstance(e, (MLE, WeightedMLE, MES)):
        return True
    if isinstance(e, (MSEOptimal, BiasVarianceInverseUsers)):
        return e.prior is not None
    return isinstance(e, BiasVariance) and e.prior is not None and e.gamma > 0


#: Columns to pull back (reverse mode) from which the rank of the stacked gradients is computed first.
_REDUCE_FROM = 8


def _pull_back(
    vjp: Callable[[np.ndarray], np.ndarray], jvp: Callable[[np.ndarray], np.ndarray], g: np.ndarray, dp: np.ndarray
) -> np.ndarray:
    """g^T (∂π/∂p) dp_b for every direction b, shape (B, K): reverse or forward mode, whichever is cheaper.

    Reverse mode (``vjp``) costs about one pass per column of ``g`` (N, K),
    after reducing g to its column space (g = U S V^T, rank r: the metric
    tables of truncated metrics at K = 1..k_max have rank <= k_max);
    forward mode (``jvp``) one per direction (``dp``, (B, n)). Both are the
    same linear map, so they agree up to rounding.
    """
    n_dir, k = dp.shape[0], g.shape[1]
    if 8 * n_dir < k:  # forward mode unless the rank were below an eighth of the columns: skip the SVD
        return jvp(dp.T).T @ g
    if k > n_dir or k >= _REDUCE_FROM:
        u, sv, vt = np.linalg.svd(g, full_matrices=False)
        r = int(np.sum(sv > 1e-13 * sv[0])) if sv.size and sv[0] > 0 else 0
        if r == 0:
            return np.zeros((n_dir, k))
        if r > n_dir:
            return jvp(dp.T).T @ g
        return (dp @ vjp(u[:, :r] * sv[:r])) @ vt[:r]
    return dp @ vjp(g)


def bootstrap_estimates(
    estimators: Sequence[Estimator],
    counts: np.ndarray,
    boot_counts: np.ndarray,
    scheme: SamplingScheme,
    metrics: Sequence[RankMetric],
    *,
    max_iter: int = 300,
    refit: bool = False,
    cache: dict | None = None,
    fits: dict | None = None,
    status: FitStatus | None = None,
) -> np.ndarray:
    """Point estimates and bootstrap replicates of every estimator and metric, shape (1 + B, E, J).

    Row 0 holds the estimates from the histogram ``counts`` (those of
    :func:`estimate_histograms`), rows 1..B the replicates from
    ``boot_counts`` (e.g. :func:`bootstrap_histograms`): computed exactly for
    the estimators whose replicates are cheap (fixed F̂, the uniform-prior
    linear estimators, mappings) and, by default, **linearised** for the
    estimators that fit a distribution:

    .. math:: T^*_b = \\hat T + \\nabla_h \\hat T \\cdot (h^*_b - h)

    with the exact gradient of the estimate as computed (the delta-method,
    "linear" bootstrap of Davison & Hinkley 1997 §2.7.4):

    * MLE, WMLE: T̂ = F^T π_T, π_T the EM iterate; reverse mode through the
      iterations run (:func:`~._linearize.em_gradient`), or forward mode
      (:func:`~._linearize.em_jvp`) when there are fewer replicates than
      gradient columns;
    * MES: the implicit-function theorem at the dual optimum
      (:func:`~._linearize.mes_gradient`);
    * BV_MLE, BV_MES (γ > 0), BV at 1/M and MN with a prior: the chain rule
      through the fitted prior, ∇_p T̂ = F̂ + (∂π̂/∂p)^T ∂T̂/∂π
      (:meth:`~.corrections.CorrectionProblem.prior_gradient`); one fit, and
      one pull-back of all their gradients stacked, serves every estimator of
      a prior.

    With p = h/M, ∇_h = ∇_p / M; WMLE's frequencies p_w = (w ⊙ h)/(w^T h)
    give ∇_h = w ⊙ (∇_{p_w} - p_w^T ∇_{p_w}) / (w^T h). BV at γ = 0 with a
    prior (no derivative in π) and ``refit=True`` refit every replicate.

    Parameters
    ----------
    estimators : sequence of Estimator
        As for :func:`estimate_histograms`.
    counts : ndarray of int, shape (n,)
        The sampled-rank histogram h (total M).
    boot_counts : ndarray of int, shape (B, n)
        Replicate histograms, each of total M.
    scheme : SamplingScheme
    metrics : sequence of RankMetric
    max_iter : int, default 300
        EM iterations.
    refit : bool, default False
        Refit every estimator on every replicate instead (the plain percentile
        bootstrap; B + 1 fits).
    cache, fits : dict, optional
        As for :func:`estimate_histograms`; ``fits`` also memoises the EM
        runs with their recorded iterates (T x N floats each).
    status : FitStatus of shape (1 + B, len(estimators)), optional
        Receives each fit's iterations and convergence: row 0 the point
        estimate's, rows 1..B those of refitted replicates (linearised
        replicates are not fitted and keep 0 iterations, converged).

    Returns
    -------
    ndarray, shape (1 + B, len(estimators), len(metrics))
    """
    counts = np.asarray(counts)
    boot = np.asarray(boot_counts)
    if counts.ndim != 1 or boot.ndim != 2 or boot.shape[1] != counts.size:
        raise ValueError(f"`counts` must have shape (n,) and `boot_counts` (B, n); got {counts.shape} and {boot.shape}")
    rows = np.vstack([counts[None, :], boot])
    if refit:
        return estimate_histograms(
            estimators, rows, scheme, metrics, max_iter=max_iter, cache=cache, fits=fits, status=status
        )
    cache = {} if cache is None else cache
    lin = [i for i, e in enumerate(estimators) if _linearisable(e)]
    rest = [i for i in range(len(estimators)) if i not in lin]
    out = np.full((rows.shape[0], len(estimators), len(metrics)), np.nan)
    if rest:
        sub = None if status is None else FitStatus.new(rows.shape[0], len(rest))
        out[:, rest] = estimate_histograms(
            [estimators[i] for i in rest], rows, scheme, metrics, max_iter=max_iter, cache=cache, fits=fits, status=sub
        )
        if sub is not None:
            status.n_iter[:, rest], status.converged[:, rest] = sub.n_iter, sub.converged
    if not lin:
        return out
    estimate_histograms([], counts[None, :], scheme, metrics, cache=cache)  # checks the histogram
    ms = _metrics_of(cache, scheme, metrics)
    n_users = int(counts.sum())
    if (boot.sum(axis=1) != n_users).any() or (boot < 0).any():
        raise ValueError(f"`boot_counts` must be non-negative histograms of total M = {n_users}")
    p = counts / n_users
    dh = boot - counts[None, :]
    groups: dict[object, list[int]] = {}
    for i in lin:
        e = estimators[i]
        groups.setdefault(e if isinstance(e, WeightedMLE) else _prior_of(e), []).append(i)
    with single_threaded_blas():
        for key, idx in groups.items():
            fit = _linearised_group(key, [estimators[i] for i in idx], idx, counts, p, dh, ms, max_iter, fits, out)
            for i in idx:
                _record(status, 0, i, fit)
    return out


def _linearised_group(
    key: object,
    ests: list[Estimator],
    idx: list[int],
    counts: np.ndarray,
    p: np.ndarray,
    dh: np.ndarray,
    ms: _Metrics,
    max_iter: int,
    fits: dict | None,
    out: np.ndarray,
) -> _Fit:
    """Fill ``out[:, idx]`` for the estimators of one fit (a WMLE, or the MLE / MES prior and its users).

    Returns the fit (its π̂, iterations and convergence)."""
    scheme, table = ms.scheme, ms.table
    n_users = int(counts.sum())
    if isinstance(key, MESPrior):
        fit = _memo(
            fits, (key, max_iter, counts.tobytes()), lambda: _fit_prior(key, _ranks_of(counts), scheme, max_iter)
        )
        pi = fit.value

        def vjp(g: np.ndarray) -> np.ndarray:
            return mes_gradient(scheme.blocks, pi, key.eta, g)

        def jvp(d: np.ndarray) -> np.ndarray:
            return mes_jvp(scheme.blocks, pi, key.eta, d)

        dp = dh / n_users
    else:
        if isinstance(key, WeightedMLE):
            w = decay_weights(ndcg(), scheme.n, key.scale)
            wh = counts * w
            p_fit = wh / wh.sum()
            dp = (dh * w) / wh.sum() - np.outer(dh @ w / wh.sum(), p_fit)
        else:
            p_fit = p
            dp = dh / n_users
        fit, hist = _memo(
            fits, ("em-history", key, max_iter, counts.tobytes()), lambda: _em_history(scheme, p_fit, max_iter)
        )
        pi = fit.value

        def vjp(g: np.ndarray) -> np.ndarray:
            return em_gradient(hist, pi, g, scheme.n)

        def jvp(d: np.ndarray) -> np.ndarray:
            return em_jvp(hist, pi, d)

    linear = [e for e in ests if not isinstance(e, (MLE, MES, WeightedMLE))]
    sol: dict[Estimator, np.ndarray] = {}
    problem = None
    if linear:
        problem = CorrectionProblem(scheme, pi, prior_name=key.name)
        sol = _linear_corrections(linear, problem, ms, n_users)
    points, grads, direct = [], [], []
    for e in ests:
        if e in sol:
            points.append(p @ sol[e])
            grads.append(problem.prior_gradient(sol[e], p, table, _gamma_of(e, n_users), n_users))
            direct.append(sol[e])
        else:
            points.append(pi @ table)
            grads.append(table)
            direct.append(None)
    delta = _pull_back(vjp, jvp, np.hstack(grads), dp)
    j = table.shape[1]
    for k, (i, point, d) in enumerate(zip(idx, points, direct)):
        rep = delta[:, k * j : (k + 1) * j]
        if d is not None:
            rep = rep + (dh / n_users) @ d
        out[0, i] = point
        out[1:, i] = point + rep
    return fit


def _em_history(scheme: SamplingScheme, p: np.ndarray, max_iter: int) -> tuple[_Fit, list]:
    """The EM fit of :func:`~.distribution.mle` / :func:`~.distribution.weighted_mle` (tol 1e-9) with its iterates."""
    hist: list = []
    pi, it, converged, _ = _em(scheme.blocks, p, max_iter, _EM_TOL, history=hist)
    return _Fit(pi, it, converged), hist


# ---------------------------------------------------------------------------
# the user-facing result
# ---------------------------------------------------------------------------
def bootstrap_histograms(counts: np.ndarray, n_boot: int, rng: RNGLike = None) -> np.ndarray:
    """B bootstrap histograms h* ~ Multinomial(M, h/M), shape (n_boot, n): resampling the M users.

    Parameters
    ----------
    counts : ndarray of int, shape (n,)
        The histogram h of the sampled ranks.
    n_boot : int >= 1
    rng : Generator or seed
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_boot = check_int("n_boot", n_boot, low=1)
    m = int(counts.sum())
    return as_generator(rng).multinomial(m, counts / m, size=n_boot)


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval [q_{α/2}, q_{1-α/2}] of bootstrap replicates along axis 0 (NaN replicates dropped)."""
    alpha = 1.0 - confidence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        lo, hi = np.nanquantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    return lo, hi


@dataclass(frozen=True, eq=False)
class FittedEstimator:
    """An estimator fitted to one set of sampled ranks, with its bootstrap replicates' histograms.

    Build with :meth:`Estimator.fit <.estimators.Estimator.fit>` or :func:`fit`.

    Attributes
    ----------
    estimator : Estimator
    scheme : SamplingScheme
    counts : ndarray of int, shape (n,)
        The sampled-rank histogram.
    n_users : int
        M (the number of sampled ranks).
    boot_counts : ndarray of int, shape (n_boot, n)
        The bootstrap histograms (resampled users).
    confidence : float
    max_iter : int
    refit : bool
        True: every replicate refitted (see :func:`fit`).
    """

    estimator: Estimator
    scheme: SamplingScheme
    counts: np.ndarray
    n_users: int
    boot_counts: np.ndarray
    confidence: float
    max_iter: int
    refit: bool = False
    _cache: dict = field(default_factory=dict, init=False, repr=False)
    _fits: dict = field(default_factory=dict, init=False, repr=False)  # EM fits of the rows, across .estimate calls

    def estimates(self, metrics: Sequence[RankMetric]) -> list[Estimate]:
        """Every metric at once (one fit per bootstrap replicate serves all metrics).

        Warns (:class:`ConvergenceWarning`, once per call) when the
        estimator's iterative fit stopped at its cap; with M < 2 the
        intervals and standard errors are NaN, with a warning. A cutoff
        K > N is refused; the naive estimator warns for K >= n (see
        :func:`_check_cutoffs`).
        """
        metrics = _check_metrics(metrics)
        _check_cutoffs(metrics, self.scheme.n_items)
        if isinstance(self.estimator, Naive):
            _warn_naive_cutoffs(metrics, self.scheme.n)
        status = FitStatus.new(1 + self.boot_counts.shape[0], 1)
        with single_threaded_blas():
            vals = bootstrap_estimates(
                [self.estimator],
                self.counts,
                self.boot_counts,
                self.scheme,
                metrics,
                max_iter=self.max_iter,
                refit=self.refit,
                cache=self._cache,
                fits=self._fits if self.refit else None,
                status=status,
            )[:, 0, :]
        lo, hi = percentile_interval(vals[1:], self.confidence)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sd = np.nanstd(vals[1:], axis=0, ddof=1) if vals.shape[0] > 2 else np.full(len(metrics), np.nan)
        lo, hi, sd = _no_interval_below_two(self.estimator.name, self.n_users, lo, hi, sd)
        converged, n_iter = _converged(status, 0, self.estimator, self.max_iter)
        kind = self.estimator.interval_kind
        out = []
        table = self._cache["metrics"].table
        for j, m in enumerate(metrics):
            est = float(vals[0, j])
            if math.isnan(est):
                warnings.warn(
                    f"{self.estimator.name} does not estimate {m.label}; returning NaN", RuntimeWarning, stacklevel=2
                )
            else:
                _warn_out_of_range(
                    self.estimator.name, m.label, est, float(table[:, j].min()), float(table[:, j].max())
                )
            out.append(
                Estimate(
                    self.estimator.name,
                    m.label,
                    m.k,
                    est,
                    float(sd[j]),
                    self.n_users,
                    float(lo[j]),
                    float(hi[j]),
                    self.confidence,
                    int(self.boot_counts.shape[0]),
                    kind,
                    converged,
                    n_iter,
                )
            )
        return out

    def estimate(self, metric: RankMetric) -> Estimate:
        """The estimate of one metric with its bootstrap percentile interval."""
        return self.estimates([metric])[0]


def _check_metrics(metrics: Sequence[RankMetric]) -> list[RankMetric]:
    metrics = list(metrics)
    if not metrics:
        raise ValueError("`metrics` must hold at least one RankMetric; got none")
    for m in metrics:
        if not isinstance(m, RankMetric):
            raise TypeError(f"`metrics` must hold RankMetric objects (e.g. ndcg(10)); got {type(m).__name__}")
    return metrics


def _check_cutoffs(metrics: Sequence[RankMetric], n_items: int) -> None:
    """Refuse a cutoff above the number of items N (decision, issue 22).

    Every global rank is at most N, so a cutoff K > N truncates nothing:
    Recall@K would be 1 for every recommender and every estimator, and a
    top-K list cannot hold K items. It is a mistaken argument, not a metric
    to estimate (the stress harness refuses ``k_max > N`` the same way). A
    cutoff above the sample size n (n < K <= N) is what the estimators are
    for and is accepted; only the naive estimator cannot honour it
    (:func:`_warn_naive_cutoffs`).
    """
    for m in metrics:
        if m.k is not None and m.k > n_items:
            raise ValueError(
                f"`metrics`: the cutoff of {m.label} must be <= the number of items N = {n_items} (a larger K "
                f"truncates nothing); got K = {m.k}"
            )


def _warn_naive_cutoffs(metrics: Sequence[RankMetric], n: int) -> None:
    """Warn once when the naive estimator is asked for a cutoff K >= the sample size n (decision, issue 22).

    The naive estimate applies F to the sampled rank r <= n; with K >= n no
    sampled rank is cut off, so the estimate is that of K = n whatever K is:
    Recall/HR@K is 1 and Precision@K is 1/K for every recommender, NDCG@K
    and AP@K are the untruncated sampled metrics. The value is what naive
    computes (the sampled metric), so it is returned, with this warning
    rather than silently.
    """
    wide = [m for m in metrics if m.k is not None and m.k >= n]
    if not wide:
        return
    table = metric_table(wide, n)
    const = [m.label for j, m in enumerate(wide) if np.ptp(table[:, j]) == 0]
    same = f"; {', '.join(const)} take(s) the same value for every set of ranks (e.g. Recall = 1)" if const else ""
    warnings.warn(
        f"naive: the cutoff of {', '.join(m.label for m in wide)} is >= the sample size n = {n}: a sampled list "
        f"of n items has every rank within it, so the naive estimate ignores the cutoff{same}; use a corrected "
        "estimator (e.g. MLE, BV_MLE) for cutoffs this large",
        RuntimeWarning,
        stacklevel=3,
    )


def _no_interval_below_two(
    name: str, n_users: int, lo: np.ndarray, hi: np.ndarray, sd: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NaN intervals and standard errors, with a warning, when M < 2 (decision, issue 22).

    Resampling one user gives that user back in every replicate: the
    interval would have zero width, a claim of certainty from a single rank.
    The point estimate is kept (it is defined); its spread is not.
    """
    if n_users >= 2:
        return lo, hi, sd
    warnings.warn(
        f"{name}: a bootstrap interval needs at least 2 users; got M = {n_users}: the interval and the "
        "standard error are NaN",
        RuntimeWarning,
        stacklevel=3,
    )
    nan = np.full_like(np.asarray(lo, dtype=np.float64), np.nan)
    return nan, nan.copy(), nan.copy()


def _converged(status: FitStatus, col: int, estimator: Estimator, max_iter: int) -> tuple[bool, int]:
    """(converged, the point fit's iterations) of one estimator's column of ``status``; warns when not converged."""
    fitted = status.n_iter[:, col] > 0
    bad = int((~status.converged[:, col]).sum())
    if bad:
        _warn_not_converged(estimator.name, fit_limits(estimator, max_iter), bad, max(1, int(fitted.sum())))
    return bad == 0, int(status.n_iter[0, col])


def _warn_out_of_range(name: str, label: str, value: float, low: float, high: float) -> None:
    tol = 1e-9 * max(1.0, abs(high - low))
    if value < low - tol or value > high + tol:
        warnings.warn(
            f"{name} estimate of {label} is {value:.4g}, outside the metric's range [{low:g}, {high:g}]",
            OutOfRangeWarning,
            stacklevel=3,
        )


def fit(
    estimator: Estimator,
    sampled_ranks: object,
    scheme: SamplingScheme,
    *,
    n_boot: int = 200,
    confidence: float = 0.95,
    max_iter: int = 300,
    rng: RNGLike = None,
    refit: bool = False,
) -> FittedEstimator:
    """Fit ``estimator`` to the sampled ranks of M users (see :meth:`Estimator.fit <.estimators.Estimator.fit>`).

    ``refit`` (default False) applies to the fitted estimators (MLE, WMLE,
    MES, the linear estimators with an estimated prior): False gives the
    linearised bootstrap (each replicate T̂ + ∇_h T̂ · (h* − h), the exact
    gradient of the estimate as computed; under 2x the cost of the estimate
    instead of n_boot + 1 fits, see :func:`bootstrap_estimates`), True refits
    every replicate (the plain percentile bootstrap). The two agree to first
    order in 1/sqrt(M) (tested); with very few users prefer ``refit=True``.
    The other estimators ignore it (their replicates are exact and cheap).
    Each ``estimates`` call of a linearised estimator fits once: ask for
    all metrics in one call.
    """
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must be an Estimator (e.g. BiasVariance(0.1)); got {type(estimator).__name__}")
    if isinstance(estimator, AdaptiveMLE):
        raise TypeError(
            "AdaptiveMLE() is fitted with fit_adaptive(adaptive_ranks, metrics=...): each user has its own n_u"
        )
    if not isinstance(scheme, SamplingScheme):
        raise TypeError(f"`scheme` must be a SamplingScheme; got {type(scheme).__name__}")
    r = check_rank_array("sampled_ranks", sampled_ranks, scheme.n)
    n_boot = check_int("n_boot", n_boot, low=2)
    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    if isinstance(estimator, LeastSquares):
        warnings.warn(_LS_WARNING, RuntimeWarning, stacklevel=3)
    if not isinstance(refit, bool):
        raise TypeError(f"`refit` must be True or False; got {refit!r}")
    counts = np.bincount(r - 1, minlength=scheme.n)
    boot = bootstrap_histograms(counts, n_boot, rng)
    return FittedEstimator(estimator, scheme, counts, int(r.size), boot, confidence, max_iter, refit)


def fit_adaptive(
    ranks: AdaptiveRanks,
    n_items: int | None = None,
    metrics: Sequence[RankMetric] | None = None,
    *,
    replace: bool | None = None,
    n_boot: int = 200,
    confidence: float = 0.95,
    max_iter: int = 300,
    rng: RNGLike = None,
) -> list[Estimate]:
    """Adaptive MLE (dissertation §2.6.2) of each metric with a bootstrap interval over users.

    ``fit_adaptive(ranks, metrics=[recall(10), ndcg(10)])``: the catalogue
    size N and with/without replacement are those the ranks were drawn with,
    as stored in ``ranks`` (:class:`~.ranks.AdaptiveRanks`).

    The bootstrap resamples the users' (n_u, r_u) pairs with replacement
    (multinomially over the distinct pairs) and refits the EM on each
    replicate.

    Parameters
    ----------
    ranks : AdaptiveRanks
        From :func:`~.ranks.sample_ranks_adaptive`.
    n_items : int, optional
        N. Default: the N stored in ``ranks``; a different value is refused
        (the likelihood P(r | R; n_u) depends on N, so ranks drawn at one N
        and fitted at another give a number for neither). Ranks drawn with
        per-user candidate counts N_u store an array: the estimator assumes
        one N, which must then be given and lie in [min N_u, max N_u] (the
        stress harness gives round(mean N_u)).
    metrics : sequence of RankMetric
        Required; cutoffs must be <= N.
    replace : bool, optional
        Default: the ``replace`` stored in ``ranks``; the other value is
        refused (without replacement the likelihood is hypergeometric, with
        it binomial: fitting one as the other moves the estimate).
    n_boot : int >= 2, default 200
    confidence : float in (0, 1), default 0.95
    max_iter : int, default 300
        EM iterations per fit; a fit stopped at the cap warns
        (:class:`ConvergenceWarning`, once per call) and gives
        ``Estimate.converged = False``.
    rng : Generator or seed
        Draws the bootstrap replicates.

    Returns
    -------
    list of Estimate
        One per metric (NaN intervals, with a warning, when M < 2).
    """
    if not isinstance(ranks, AdaptiveRanks):
        raise TypeError(f"`ranks` must be AdaptiveRanks (from sample_ranks_adaptive); got {type(ranks).__name__}")
    if metrics is None:
        raise TypeError("`metrics` must be given: a sequence of RankMetric, e.g. [recall(10), ndcg(10)]")
    n_items = _adaptive_items(ranks, n_items)
    replace = _adaptive_replace(ranks, replace)
    n_boot = check_int("n_boot", n_boot, low=2)
    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    metrics = _check_metrics(metrics)
    _check_cutoffs(metrics, n_items)
    table = metric_table(metrics, n_items)
    key = np.asarray(ranks.sizes, dtype=np.int64) * (n_items + 1) + np.asarray(ranks.ranks, dtype=np.int64)
    uniq, counts = np.unique(key, return_counts=True)
    sizes, rr = uniq // (n_items + 1), uniq % (n_items + 1)
    m = int(counts.sum())
    boot = as_generator(rng).multinomial(m, counts / m, size=n_boot)
    status = FitStatus.new(1 + n_boot, 1)

    def one(row: int, c: np.ndarray) -> np.ndarray:
        keep = c > 0
        d = mle_adaptive(
            np.repeat(rr[keep], c[keep]),
            np.repeat(sizes[keep], c[keep]),
            n_items,
            replace=replace,
            max_iter=max_iter,
            tol=_EM_TOL,
        )
        status._record(row, 0, _distribution_fit(d))
        return d.probabilities @ table

    point = one(0, counts)
    reps = np.array([one(b + 1, c) for b, c in enumerate(boot)])
    lo, hi = percentile_interval(reps, confidence)
    sd = reps.std(axis=0, ddof=1)
    estimator = AdaptiveMLE()
    lo, hi, sd = _no_interval_below_two(estimator.name, m, lo, hi, sd)
    converged, n_iter = _converged(status, 0, estimator, max_iter)
    return [
        Estimate(
            estimator.name,
            mt.label,
            mt.k,
            float(point[j]),
            float(sd[j]),
            m,
            float(lo[j]),
            float(hi[j]),
            confidence,
            n_boot,
            estimator.interval_kind,
            converged,
            n_iter,
        )
        for j, mt in enumerate(metrics)
    ]


def _adaptive_items(ranks: AdaptiveRanks, n_items: object) -> int:
    """N for :func:`fit_adaptive`: the stored N, or the given one if it agrees with what is stored."""
    stored = np.asarray(ranks.n_items)
    if stored.ndim == 0:
        if n_items is None:
            return int(stored)
        n_items = check_int("n_items", n_items, low=2)
        if n_items != int(stored):
            raise ValueError(
                f"`n_items` must be the N the ranks were drawn at (N = {int(stored)}, stored in the AdaptiveRanks; "
                f"leave `n_items` out to use it); got {n_items}"
            )
        return n_items
    low, high = int(stored.min()), int(stored.max())
    if n_items is None:
        raise ValueError(
            f"`n_items` must be given: these ranks were drawn with per-user candidate counts N_u in [{low}, {high}] "
            f"and the estimator assumes one N (e.g. round(mean N_u) = {int(np.rint(stored.mean()))}, as the stress "
            "harness uses); got None"
        )
    n_items = check_int("n_items", n_items, low=2)
    if not low <= n_items <= high:
        raise ValueError(
            f"`n_items` must lie in [{low}, {high}], the range of the candidate counts N_u the ranks were drawn "
            f"with (stored in the AdaptiveRanks); got {n_items}"
        )
    return n_items


def _adaptive_replace(ranks: AdaptiveRanks, replace: object) -> bool:
    """with/without replacement for :func:`fit_adaptive`: the stored value, or the given one if it agrees."""
    if replace is None:
        return bool(ranks.replace)
    if not isinstance(replace, (bool, np.bool_)):
        raise TypeError(f"`replace` must be True, False or None (the stored value); got {replace!r}")
    if bool(replace) != bool(ranks.replace):
        raise ValueError(
            f"`replace` must be how the ranks were drawn (replace = {bool(ranks.replace)}, stored in the "
            f"AdaptiveRanks; leave `replace` out to use it); got {bool(replace)}"
        )
    return bool(replace)

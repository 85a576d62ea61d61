"""What the fitting engine hands an estimator: histograms of sampled ranks, metric tables and fitted distributions.

Every estimator of :mod:`simrec.sampling` depends on the sampled ranks of M
users only through their histogram h (n counts summing to M), so the engine
(:func:`~.fitted.estimate_histograms`, :func:`~.fitted.bootstrap_estimates`)
evaluates B histograms at once (the sample and its bootstrap replicates) and
gives each estimator:

* :class:`Histograms`: the B histograms, their frequencies p = h/M, the
  metric tables and caches shared by every estimator of the call;
* :class:`MetricTables`: the metrics' values F_j(R) on ranks 1..N, and the
  rows k_max beyond which the truncated ones vanish;
* :class:`FittedDistribution`: one histogram's fit of a :class:`RankFit` (a
  distribution π̂ over global ranks: the MLE, MES or weighted EM), fitted once
  per histogram for every estimator using it, with its correction problem.

A fit's derivative in the frequencies (:class:`Linearisation`) gives the
linearised bootstrap replicates of every estimator built on it at once
(:func:`_pull_back`). An estimator records the iterative fits behind its estimates as
:class:`FitRecord` values, collected in a :class:`FitStatus`; a fit stopped
at its cap warns once per estimate (:class:`ConvergenceWarning`).
"""

from __future__ import annotations

import abc
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np

from simrec.sampling.functions import RankMetric, metric_table
from simrec.sampling.problem import CorrectionProblem
from simrec.sampling.scheme import SamplingScheme

__all__ = [
    "ConvergenceWarning",
    "FitRecord",
    "FitLimits",
    "FitStatus",
    "MetricTables",
    "RankFit",
    "Linearisation",
    "FittedDistribution",
    "Histograms",
]


class ConvergenceWarning(RuntimeWarning):
    """An iterative fit (EM, MES's L-BFGS, beta@P's fixed point) stopped at its iteration cap before its tolerance."""


class FitRecord(NamedTuple):
    """One iterative fit: its result (π̂, or a mapping's values), iterations run, tolerance met."""

    value: Any
    n_iter: int
    converged: bool


#: An iterative fit's (what it is, iteration cap, tolerance), e.g. ``("EM", 300, 1e-9)``.
FitLimits = tuple[str, int, float]


@dataclass(frozen=True, eq=False)
class FitStatus:
    """Iterations and convergence of the iterative fit behind each estimate, one entry per (row, estimator).

    Filled by :func:`~.fitted.estimate_histograms` and
    :func:`~.fitted.bootstrap_estimates` when passed as ``status=``: the row
    of a histogram that was fitted gets the iterations its fit ran and whether
    it met its tolerance; rows and estimators without an iterative fit (closed
    forms, or replicates that were linearised rather than refitted) keep 0 and
    True.

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

    def record(self, row: int | slice, col: int, fit: FitRecord) -> None:
        """Record ``fit`` at (row, col)."""
        self.n_iter[row, col] = fit.n_iter
        self.converged[row, col] = fit.converged

    def summary(self, col: int, name: str, limits: FitLimits | None) -> tuple[bool, int]:
        """(converged, the point fit's iterations) of one estimator's column; warns when it did not converge."""
        fitted = self.n_iter[:, col] > 0
        bad = int((~self.converged[:, col]).sum())
        if bad:
            warn_not_converged(name, limits, bad, max(1, int(fitted.sum())))
        return bad == 0, int(self.n_iter[0, col])


#: (estimator, fit, cap, tolerance) of the EM fits already warned about in this process.
_EM_WARNED: set[tuple[str, str, int, float]] = set()


def warn_not_converged(name: str, limits: FitLimits | None, bad: int, total: int) -> None:
    """One :class:`ConvergenceWarning` for an estimate whose fit(s) stopped at the cap (``bad`` of ``total``).

    Decision (issue 27): an EM fit stopped at its cap warns **once per process
    for each estimator and cap** (:data:`_EM_WARNED`), not once per estimate
    (Python's own once-per-location filter does not hold here: any
    ``catch_warnings`` block resets it): EM on a mixture that is
    not identified (N > n) practically never meets its tolerance (the
    log-likelihood gains decay like 1/t), so every MLE at its default cap
    would warn. The cap is then part of the estimator (:class:`~.estimators.priors.MLEPrior`),
    and each :class:`~._results.Estimate` records ``converged`` and
    ``n_iter``. Other fits (MES's L-BFGS, beta@P) are expected to converge:
    their message counts the fits that did not.
    """
    what, cap, tol = limits if limits is not None else ("fit", 0, math.nan)
    if what.startswith("EM"):
        if (name, what, cap, tol) in _EM_WARNED:
            return
        _EM_WARNED.add((name, what, cap, tol))
        message = (
            f"{name} did not converge: its {what} stopped at max_iter = {cap} before meeting its tolerance "
            f"{tol:g}; the estimate is the iterate there and depends on max_iter (EM on a mixture that is not "
            f"identified moves for thousands of iterations: simrec.sampling.MLEPrior); Estimate.converged = "
            f"False and Estimate.n_iter record it. Raise `max_iter`, or run MLE(epochs=...) for a fixed number "
            f"of iterations (said once per estimator and max_iter)"
        )
    else:
        message = (
            f"{name} did not converge: its {what} stopped at its cap of {cap} iterations before meeting its "
            f"tolerance {tol:g} ({bad} of {total} fit(s)); the estimate is where the iterations stopped "
            f"(Estimate.converged = False)"
        )
    warnings.warn(message, ConvergenceWarning, stacklevel=5)


@dataclass(eq=False)
class MetricTables:
    """The metrics' tables on ranks 1..N (and 1..n), with the rows where they can be non-zero.

    Attributes
    ----------
    scheme : SamplingScheme
    metrics : tuple of RankMetric
    table : ndarray, shape (N, J)
        F_j(R) for R = 1..N.
    k_max : int
        The last rank at which some metric is non-zero (N for untruncated metrics).
    f_top, a_top : ndarray, shapes (k_max, J) and (k_max, n)
        The table's first k_max rows, and P(r | R <= k_max).
    """

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

    @property
    def truncated(self) -> bool:
        """Whether every metric vanishes beyond k_max <= 4n (then sums over ranks run over the first k_max rows)."""
        return self.k_max <= 4 * self.scheme.n

    def rhs(self, problem: CorrectionProblem) -> np.ndarray:
        """A^T D F for every metric, (n, J): through the first k_max rows when that is cheaper."""
        if self.truncated:
            return problem.rhs_top(self.f_top, self.a_top)
        return self.scheme.blocks.rmatvec(cast(np.ndarray, problem.prior)[:, None] * self.table)  # set by __post_init__


def metric_tables(cache: dict, scheme: SamplingScheme, metrics: Sequence[RankMetric]) -> MetricTables:
    """The :class:`MetricTables` kept in ``cache`` (the cache is cleared when the scheme or metrics differ)."""
    ms = cache.get("metrics")
    if ms is None or ms.metrics != tuple(metrics) or ms.scheme is not scheme:
        cache.clear()
        ms = cache["metrics"] = MetricTables(scheme, tuple(metrics))
    return ms


T = TypeVar("T")


def memo(fits: dict | None, key: tuple, fit: Callable[[], T]) -> T:
    """``fit()``, or its value memoised in ``fits`` under ``key`` (no memo when ``fits`` is None)."""
    if fits is None:
        return fit()
    if key not in fits:
        fits[key] = fit()
    return fits[key]


class Linearisation(NamedTuple):
    """A fit of π̂ on the histogram h with its derivative in h, for the linearised bootstrap.

    Attributes
    ----------
    record : FitRecord
        The fit (``value`` is π̂, shape (N,)).
    vjp : callable
        g (N, K) -> (∂π̂/∂p)^T g, shape (n, K) (reverse mode).
    jvp : callable
        d (n, B) -> (∂π̂/∂p) d, shape (N, B) (forward mode).
    dp : ndarray, shape (B, n)
        The replicates' directions in the frequencies p the fit is a function of.
    """

    record: FitRecord
    vjp: Callable[[np.ndarray], np.ndarray]
    jvp: Callable[[np.ndarray], np.ndarray]
    dp: np.ndarray


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


class RankFit(abc.ABC):
    """A distribution π̂ over global ranks fitted to a histogram of sampled ranks: its objective and stopping rule.

    The plug-in estimators (MLE, WMLE, MES) estimate π̂^T F with it; the
    linear estimators with an estimated prior (BV_MLE, MN_MES, ...) use it as
    their prior. Estimators with equal fits share one fit per histogram.
    Subclasses are frozen dataclasses (equal when their parameters are).
    """

    __slots__ = ()

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The tag of estimators using it as a prior (``"MLE"`` in ``"BV_MLE(gamma=0.1)"``)."""

    @abc.abstractmethod
    def limits(self, max_iter: int) -> FitLimits:
        """(what the fit is, its iteration cap, its tolerance) given the caller's ``max_iter`` (EM's cap)."""

    @abc.abstractmethod
    def fit(self, counts: np.ndarray, scheme: SamplingScheme, max_iter: int) -> FitRecord:
        """π̂ fitted to one histogram ``counts`` (n,) of sampled ranks."""

    @abc.abstractmethod
    def linearise(
        self, counts: np.ndarray, dh: np.ndarray, scheme: SamplingScheme, max_iter: int, fits: dict | None
    ) -> Linearisation:
        """π̂ fitted to ``counts`` (n,) with its derivative, for replicates ``counts + dh`` (dh: (B, n))."""


@dataclass(eq=False)
class FittedDistribution:
    """One histogram's fit of a :class:`RankFit`, shared by every estimator using it.

    Attributes
    ----------
    rank_fit : RankFit
    record : FitRecord
        ``record.value`` is π̂, shape (N,).
    scheme : SamplingScheme
    """

    rank_fit: RankFit
    record: FitRecord
    scheme: SamplingScheme

    @property
    def pi(self) -> np.ndarray:
        """π̂, shape (N,)."""
        return self.record.value

    @cached_property
    def problem(self) -> CorrectionProblem:
        """The linear family's problem with π̂ as its prior (built on first use, then shared)."""
        return CorrectionProblem(self.scheme, self.pi, prior_name=self.rank_fit.name)


@dataclass(eq=False)
class Histograms:
    """B histograms of the sampled ranks of M users each, as the engine gives them to the estimators.

    Attributes
    ----------
    counts : ndarray of int, shape (B, n)
    scheme : SamplingScheme
    tables : MetricTables
    n_users : int
        M, every row's total.
    max_iter : int
        EM's iteration cap.
    cache : dict
        Kept across calls with the same scheme and metrics (data-independent F̂).
    fits : dict or None
        Memo of the distribution fits across calls on the same histograms.
    """

    counts: np.ndarray
    scheme: SamplingScheme
    tables: MetricTables
    n_users: int
    max_iter: int
    cache: dict
    fits: dict | None

    @cached_property
    def p(self) -> np.ndarray:
        """The sampled-rank frequencies h/M, shape (B, n)."""
        return self.counts / self.n_users

    @property
    def uniform_problem(self) -> CorrectionProblem:
        """The uniform-prior problem of the scheme (K&R's π = 1/N; cached on the scheme)."""
        return CorrectionProblem.from_prior(self.scheme, None)

    def fixed(self, key: object, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """A data-independent F̂ (n, J), computed once per ``key`` and kept in :attr:`cache`."""
        fixed = self.cache.setdefault("fixed", {})
        if key not in fixed:
            fixed[key] = compute()
        return fixed[key]

    def fitted(self, rank_fit: RankFit, row: int) -> FittedDistribution:
        """``rank_fit`` fitted to row ``row`` (memoised in :attr:`fits`)."""
        counts = self.counts[row]
        record = memo(
            self.fits,
            (rank_fit, self.max_iter, counts.tobytes()),
            lambda: rank_fit.fit(counts, self.scheme, self.max_iter),
        )
        return FittedDistribution(rank_fit, record, self.scheme)

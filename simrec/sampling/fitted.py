"""Estimators and how they are fitted: the :class:`Estimator` protocol, its one call shape, and the engine.

One call shape for every estimator family (issue 10)::

    fitted = BiasVariance(0.1).fit(sampled_ranks, scheme, rng=0)   # or fit(estimator, ...)
    fitted.estimate(ndcg(10))     # -> Estimate with a 95% percentile interval
    fitted.estimates([recall(k) for k in range(1, 51)])

M (``n_users``) is the number of sampled ranks; the ranks are checked
against the scheme (integers in [1, n]). The interval is a bootstrap over
users on the rank histogram (:mod:`.bootstrap`).

**Each estimator drives its own fitting** (issue 23). The engine
(:func:`estimate_histograms`, :func:`bootstrap_estimates`) knows no estimator
by name or type: it asks each for its :attr:`Estimator.rank_fit` (the
distribution over global ranks its estimate uses, if any), fits each distinct
one once per histogram, and lets the estimator compute its estimates
(:meth:`Estimator.estimate_counts`, :meth:`Estimator.estimate_fitted`) and
linearise them (:meth:`Estimator.linearise`). The estimators whose F̂ does not
depend on the data (naive, rank estimate, LS, CLS, BV and MN with the uniform
prior) evaluate all B histograms in one (B, n) x (n, J) product.

**Fitted estimators: linearised replicates** (default). MLE, WMLE, MES and
the linear estimators with an estimated prior (BV_MLE, BV_MES with γ > 0,
BV at 1/M and MN with a prior) are smooth functions of the histogram; each
replicate is the first-order expansion of the estimate around the sample,
T*_b = T̂ + ∇_h T̂ · (h*_b − h), with the exact gradient of the estimate as
computed (:func:`bootstrap_estimates`): reverse mode through the EM
iterations actually run (:mod:`._em`: one backward pass in single
precision, about 0.7 of a forward fit at N = 20,720, n = 501), the
implicit-function theorem at MES's dual optimum (:mod:`._mes`), and the chain
rule through the fitted prior for the linear estimators. An interval then
costs under 2 fits instead of B + 1 (bench/bench_bootstrap.py). This is the delta-method ("linear")
bootstrap of Davison & Hinkley 1997 §2.7.4 for the estimator as implemented:
the gap to refitting is of order 1/M against replicate spreads of order
1/sqrt(M) (tests/sampling/test_linearize.py: under a tenth of a standard
error at M = 3,000). With very few users the expansion is poor;
``refit=True`` refits every replicate from the same start with the same
settings (the plain percentile bootstrap), as does BV with γ = 0 and a prior
(not differentiable in the prior). Mappings with a fitted a (beta@P) are
refitted per replicate (a cheap fit over n). The stress harness's intervals
(``n_boot``) are these replicates, computed by the same function, and it
reports each estimator's interval coverage of the exact metric.

The adaptive MLE fits :class:`~.adaptive.AdaptiveRanks` (each user's own n_u),
not one scheme's sampled ranks: it is its own type,
:class:`~.adaptive.AdaptiveMLE`, not an :class:`Estimator`.
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from simrec._random import RNGLike
from simrec._validation import check_in_range, check_int
from simrec.sampling._checks import check_rank_array
from simrec.sampling._results import Estimate, IntervalKind
from simrec.sampling._threads import single_threaded_blas
from simrec.sampling.adaptive import AdaptiveMLE
from simrec.sampling.bootstrap import _check_cutoffs, _check_metrics, _replicate_estimates, bootstrap_histograms
from simrec.sampling.functions import RankMetric
from simrec.sampling.histograms import (
    FitLimits,
    FitRecord,
    FitStatus,
    FittedDistribution,
    Histograms,
    MetricTables,
    RankFit,
    _pull_back,
    metric_tables,
)
from simrec.sampling.scheme import SamplingScheme

__all__ = [
    "Estimator",
    "FittedEstimator",
    "fit",
    "fit_limits",
    "estimate_histograms",
    "bootstrap_estimates",
]


class Estimator(abc.ABC):
    """An estimator of a global metric from sampled ranks; :attr:`Estimator.name` labels it in tables.

    Fitted with :meth:`fit` (the one call shape). Its subclasses carry their
    own fitting behaviour, which the engine (:func:`estimate_histograms`,
    :func:`bootstrap_estimates`) calls without knowing them:

    * :attr:`rank_fit`: the distribution over global ranks
      (:class:`~.histograms.RankFit`) fitted to each histogram whose π̂ the
      estimate uses, or None;
    * :meth:`estimate_counts` (estimators without a ``rank_fit``): the
      estimates from B histograms at once;
    * :meth:`estimate_fitted` (estimators with one): a histogram's estimate
      given its fit, shared with every estimator of an equal fit;
    * :attr:`linearisable` and :meth:`linearise`: the linearised bootstrap;
    * :meth:`fit_limits`, :attr:`fit_warnings` and :meth:`check_metrics`:
      what it reports.

    Most estimators take one of two shapes (:mod:`.estimators.base`), a
    per-rank correction or a fitted distribution's plug-in (docs/design.md,
    "Adding an estimator").
    """

    __slots__ = ()

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The estimator's label in output tables (never parsed)."""

    @property
    @abc.abstractmethod
    def interval_kind(self) -> IntervalKind:
        """What this estimator's bootstrap interval accounts for (:class:`~._results.IntervalKind`).

        ``SAMPLING_BIASED`` where the estimator's bias does not shrink with
        the number of users, so its interval's coverage is known to fail;
        each estimator's docstring gives the evidence (the papers and the
        stress harness's measured coverage). Carried by every
        :class:`~._results.Estimate` and shown in the stress and assess tables.
        """

    def __str__(self) -> str:
        return self.name

    # -- the fitting protocol -------------------------------------------------------------------------------------
    @property
    def rank_fit(self) -> RankFit | None:
        """The distribution fitted to each histogram that the estimate uses (None: computed from the histograms)."""
        return None

    def estimate_counts(self, rows: Histograms, record: Callable[[int, FitRecord], None]) -> np.ndarray:
        """The estimates of ``rows.tables``' J metrics from each of the B histograms, shape (B, J).

        Called for estimators without a :attr:`rank_fit`; ``record(b, fit)``
        reports an iterative fit behind row b (e.g. beta@P's).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `estimate_counts` (it has no rank_fit)")

    def estimate_fitted(self, fitted: FittedDistribution, rows: Histograms, row: int) -> np.ndarray:
        """The estimates of row ``row`` given its fit of :attr:`rank_fit`, shape (J,)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `estimate_fitted` (it has a rank_fit)")

    @property
    def linearisable(self) -> bool:
        """Whether the bootstrap replicates are linearised (smooth in the histogram through :attr:`rank_fit`)."""
        return False

    def linearise(
        self, fitted: FittedDistribution, p: np.ndarray, tables: MetricTables, n_users: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(point estimate (J,), gradient in π̂ (N, J), direct F̂ (n, J) or None) at the sample's frequencies p.

        A replicate with frequencies p* is then point + g^T (∂π̂/∂p)(p* - p) +
        (p* - p)^T F̂ (the second term only where the estimate also averages an
        F̂ over users).
        """
        raise NotImplementedError(f"{type(self).__name__} is not linearisable")

    def fit_limits(self, max_iter: int) -> FitLimits | None:
        """The iterative fit behind the estimate: (what it is, its cap, its tolerance), or None (closed form)."""
        return None if self.rank_fit is None else self.rank_fit.limits(max_iter)

    @property
    def fit_warnings(self) -> tuple[str, ...]:
        """Warnings given when the estimator is fitted (least squares: it is unusable)."""
        return ()

    def check_metrics(self, metrics: Sequence[RankMetric], scheme: SamplingScheme) -> None:
        """Warn about metrics this estimator cannot honour (the naive estimator: cutoffs K >= n)."""

    @property
    def estimated_prior(self) -> RankFit | None:
        """The prior fitted to the sampled ranks that this estimator's correction is built on (BV_MLE, MN_MES), or None."""
        return None

    def with_priors(self, priors: Mapping[RankFit, RankFit]) -> Estimator:
        """This estimator with its estimated prior replaced by ``priors[prior]`` (itself when it has none there).

        Used for the per-dataset prior of the stress harness (``StressConfig.prior_per``).
        """
        return self

    # -- the one call shape ---------------------------------------------------------------------------------------
    def fit(
        self,
        sampled_ranks: object,
        scheme: SamplingScheme,
        *,
        n_boot: int = 200,
        confidence: float = 0.95,
        max_iter: int = 300,
        rng: RNGLike = None,
        refit: bool = False,
    ) -> FittedEstimator:
        """Fit to the sampled ranks of M users; ``.estimate(metric)`` then gives an estimate with an interval.

        The one call shape of every estimator family (corrections,
        distribution estimators, mappings)::

            BiasVariance(0.1).fit(sampled_ranks, scheme, rng=0).estimate(ndcg(10))

        Parameters
        ----------
        sampled_ranks : array-like of int, shape (M,)
            Sampled ranks r_u in [1, n] (checked against ``scheme``); M, the
            number of users, is their count (MN uses it).
        scheme : SamplingScheme
            N, n and with/without replacement of the sampling that produced them.
        n_boot : int, 0 or >= 2, default 200
            Bootstrap replicates (users resampled with replacement); 0 for the
            point estimate alone (interval and standard error NaN), with no
            bootstrap and no gradient work (issue 29).
        confidence : float in (0, 1), default 0.95
            Level of the percentile interval.
        max_iter : int, default 300
            EM iterations (MLE, WMLE and the MLE prior).
        rng : Generator or seed
            Draws the bootstrap replicates.
        refit : bool, default False
            The linearisable estimators (MLE, WMLE, MES and the linear
            estimators with an estimated prior): refit every replicate (the
            plain percentile bootstrap) instead of the linearised bootstrap
            (each replicate T̂ + ∇_h T̂ · (h* − h), the exact gradient of the
            estimate as computed; under 2x the cost of the estimate instead of
            n_boot + 1 fits, see :func:`bootstrap_estimates`). The two agree
            to first order in 1/sqrt(M) (tested); with very few users prefer
            ``refit=True``. The other estimators ignore it (their replicates
            are exact and cheap). Each ``estimates`` call of a linearised
            estimator fits once: ask for all metrics in one call.

        Returns
        -------
        FittedEstimator
        """
        if not isinstance(scheme, SamplingScheme):
            raise TypeError(f"`scheme` must be a SamplingScheme; got {type(scheme).__name__}")
        r = check_rank_array("sampled_ranks", sampled_ranks, scheme.n)
        n_boot = check_int("n_boot", n_boot, low=0)
        if n_boot == 1:
            raise ValueError("`n_boot` must be 0 (no interval) or >= 2; got 1")
        confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
        max_iter = check_int("max_iter", max_iter, low=1)
        for message in self.fit_warnings:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        if not isinstance(refit, bool):
            raise TypeError(f"`refit` must be True or False; got {refit!r}")
        counts = np.bincount(r - 1, minlength=scheme.n)
        boot = bootstrap_histograms(counts, n_boot, rng) if n_boot else np.zeros((0, scheme.n), dtype=np.int64)
        return FittedEstimator(self, scheme, counts, int(r.size), boot, confidence, max_iter, refit)


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
    """``estimator.fit(sampled_ranks, scheme, ...)`` (see :meth:`Estimator.fit`)."""
    _check_estimator("estimator", estimator)
    return estimator.fit(
        sampled_ranks, scheme, n_boot=n_boot, confidence=confidence, max_iter=max_iter, rng=rng, refit=refit
    )


def _check_estimator(name: str, e: object) -> None:
    if not isinstance(e, Estimator):
        extra = " (AdaptiveMLE fits AdaptiveRanks: AdaptiveMLE().fit(ranks) or fit_adaptive)"
        raise TypeError(
            f"`{name}` must be an Estimator (e.g. BiasVariance(0.1)); got {type(e).__name__}"
            + (extra if isinstance(e, AdaptiveMLE) else "")
        )


def fit_limits(estimator: Estimator | AdaptiveMLE, max_iter: int) -> FitLimits | None:
    """The iterative fit behind ``estimator``: (what it is, its iteration cap, its tolerance), or None.

    EM (MLE, WMLE, the MLE prior of BV_MLE / MN_MLE, adaptive MLE) runs at
    most ``max_iter`` iterations with tolerance 1e-9 on the mean
    log-likelihood per user; MES and the MES prior solve their dual by L-BFGS
    (at most 2000 iterations, gradient tolerance 1e-12; ``max_iter`` does not
    apply); beta@P iterates its fixed point at most 100 times (relative
    tolerance 1e-6 on a). The closed-form estimators give None. Each
    estimator answers for itself (:meth:`Estimator.fit_limits`).
    """
    return estimator.fit_limits(max_iter)


@dataclass(frozen=True, eq=False)
class FittedEstimator:
    """An estimator fitted to one set of sampled ranks, with its bootstrap replicates' histograms.

    Build with :meth:`Estimator.fit` or :func:`fit`.

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
        True: every replicate refitted (see :meth:`Estimator.fit`).
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

        Warns (:class:`~.histograms.ConvergenceWarning`, once per call) when
        the estimator's iterative fit stopped at its cap; with M < 2 the
        intervals and standard errors are NaN, with a warning. A cutoff
        K > N is refused; the naive estimator warns for K >= n.
        """
        metrics = _check_metrics(metrics)
        _check_cutoffs(metrics, self.scheme.n_items)
        self.estimator.check_metrics(metrics, self.scheme)
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
        table = self._cache["metrics"].table
        return _replicate_estimates(
            self.estimator, metrics, vals, table, status, self.max_iter, self.n_users, self.confidence
        )

    def estimate(self, metric: RankMetric) -> Estimate:
        """The estimate of one metric with its bootstrap percentile interval."""
        return self.estimates([metric])[0]


# ---------------------------------------------------------------------------
# the engine: estimates of J metrics from B histograms, for several estimators
# ---------------------------------------------------------------------------
def _record(status: FitStatus | None, col: int) -> Callable[[int | slice, FitRecord], None]:
    """Records fits into column ``col`` of ``status`` (nothing when it is None)."""
    if status is None:
        return lambda row, fit: None
    return lambda row, fit: status.record(row, col, fit)


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
    one fit of each distinct :attr:`~Estimator.rank_fit` (MLE, MES, WMLE's)
    per histogram serves every estimator using it; F̂ of the data-independent
    corrections is computed once (kept in ``cache`` across calls) and applied
    to all histograms in one product.

    Parameters
    ----------
    estimators : sequence of Estimator
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
    cache = {} if cache is None else cache
    tables = metric_tables(cache, scheme, metrics)
    rows = Histograms(counts, scheme, tables, int(totals[0]), max_iter, cache, fits)
    out = np.full((counts.shape[0], len(estimators), len(tables.metrics)), np.nan)
    by_fit: dict[RankFit, list[int]] = {}
    for i, e in enumerate(estimators):
        _check_estimator("estimators", e)
        if e.rank_fit is None:
            out[:, i] = e.estimate_counts(rows, _record(status, i))
        else:
            by_fit.setdefault(e.rank_fit, []).append(i)
    for rank_fit, idx in by_fit.items():  # one fit per (distribution, row), shared by its estimators
        for b in range(counts.shape[0]):
            fitted = rows.fitted(rank_fit, b)
            for i in idx:
                out[b, i] = estimators[i].estimate_fitted(fitted, rows, b)
                _record(status, i)(b, fitted.record)
    return out


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
    ``boot_counts`` (e.g. :func:`~.bootstrap.bootstrap_histograms`): computed
    exactly for the estimators whose replicates are cheap (fixed F̂, the
    uniform-prior linear estimators, mappings) and, by default,
    **linearised** for the :attr:`~Estimator.linearisable` estimators, those
    built on a fitted distribution:

    .. math:: T^*_b = \\hat T + \\nabla_h \\hat T \\cdot (h^*_b - h)

    with the exact gradient of the estimate as computed (the delta-method,
    "linear" bootstrap of Davison & Hinkley 1997 §2.7.4):

    * MLE, WMLE: T̂ = F^T π_T, π_T the EM iterate; reverse mode through the
      iterations run (:func:`~._em.em_gradient`), or forward mode
      (:func:`~._em.em_jvp`) when there are fewer replicates than
      gradient columns;
    * MES: the implicit-function theorem at the dual optimum
      (:func:`~._mes.mes_gradient`);
    * BV_MLE, BV_MES (γ > 0), BV at 1/M and MN with a prior: the chain rule
      through the fitted prior, ∇_p T̂ = F̂ + (∂π̂/∂p)^T ∂T̂/∂π
      (:meth:`~.problem.CorrectionProblem.prior_gradient`); one fit, and
      one pull-back of all their gradients stacked, serves every estimator of
      a prior.

    With p = h/M, ∇_h = ∇_p / M; WMLE's frequencies p_w = (w ⊙ h)/(w^T h)
    give ∇_h = w ⊙ (∇_{p_w} - p_w^T ∇_{p_w}) / (w^T h). BV at γ = 0 with a
    prior (no derivative in π) and ``refit=True`` refit every replicate.

    Parameters
    ----------
    estimators : sequence of Estimator
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
        bootstrap; B + 1 fits). With B = 0 the point estimates alone are
        computed, without linearisation.
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
    if refit or not boot.shape[0]:  # refitted replicates, or no replicate: no gradient work
        return estimate_histograms(
            estimators, rows, scheme, metrics, max_iter=max_iter, cache=cache, fits=fits, status=status
        )
    cache = {} if cache is None else cache
    for e in estimators:
        _check_estimator("estimators", e)
    lin = [i for i, e in enumerate(estimators) if e.linearisable]
    rest = [i for i in range(len(estimators)) if i not in lin]
    out = np.full((rows.shape[0], len(estimators), len(metrics)), np.nan)
    if rest:
        sub = None if status is None else FitStatus.new(rows.shape[0], len(rest))
        out[:, rest] = estimate_histograms(
            [estimators[i] for i in rest], rows, scheme, metrics, max_iter=max_iter, cache=cache, fits=fits, status=sub
        )
        if status is not None and sub is not None:
            status.n_iter[:, rest], status.converged[:, rest] = sub.n_iter, sub.converged
    if not lin:
        return out
    estimate_histograms([], counts[None, :], scheme, metrics, cache=cache)  # checks the histogram
    tables = metric_tables(cache, scheme, metrics)
    n_users = int(counts.sum())
    if (boot.sum(axis=1) != n_users).any() or (boot < 0).any():
        raise ValueError(f"`boot_counts` must be non-negative histograms of total M = {n_users}")
    p = counts / n_users
    dh = boot - counts[None, :]
    groups: dict[RankFit, list[int]] = {}
    for i in lin:
        # a linearisable estimator is linearised through its rank_fit (never None then)
        groups.setdefault(cast(RankFit, estimators[i].rank_fit), []).append(i)
    with single_threaded_blas():
        for rank_fit, idx in groups.items():
            record = _linearised_group(rank_fit, estimators, idx, counts, p, dh, tables, max_iter, fits, out)
            for i in idx:
                _record(status, i)(0, record)
    return out


def _linearised_group(
    rank_fit: RankFit,
    estimators: Sequence[Estimator],
    idx: list[int],
    counts: np.ndarray,
    p: np.ndarray,
    dh: np.ndarray,
    tables: MetricTables,
    max_iter: int,
    fits: dict | None,
    out: np.ndarray,
) -> FitRecord:
    """Fill ``out[:, idx]`` for the estimators of one fit; returns the fit (its π̂, iterations, convergence).

    One fit and one pull-back of the estimators' stacked gradients in π̂
    (:func:`_pull_back`) serve the whole group.
    """
    n_users = int(counts.sum())
    lin = rank_fit.linearise(counts, dh, tables.scheme, max_iter, fits)
    fitted = FittedDistribution(rank_fit, lin.record, tables.scheme)
    parts = [estimators[i].linearise(fitted, p, tables, n_users) for i in idx]
    delta = _pull_back(lin.vjp, lin.jvp, np.hstack([grad for _, grad, _ in parts]), lin.dp)
    j = tables.table.shape[1]
    for k, (i, (point, _, direct)) in enumerate(zip(idx, parts)):
        rep = delta[:, k * j : (k + 1) * j]
        if direct is not None:
            rep = rep + (dh / n_users) @ direct
        out[0, i] = point
        out[1:, i] = point + rep
    return lin.record

"""Rank-distribution estimators: estimate P(R) from sampled ranks, then any metric.

The sampled rank is a mixture of binomials (hypergeometrics without
replacement) over the users' global ranks (Li's dissertation §2.4.2, eq. 30):

.. math:: P(r) = \\sum_{R=1}^N π_R\\, P(r|R).

Estimating π once gives every metric and every K at once,
T̂ = Σ_R π̂_R F(R) (eq. 26): :meth:`RankDistribution.expectation`, or
``π̂ @ metric_table(metrics, N)``.

* :func:`mle`: maximum likelihood by EM (eqs. 31-33) on the sufficient
  statistic P̂(r) (the empirical sampled-rank distribution), so an iteration
  costs O(N x band) whatever M is:

  .. math:: π_R \\leftarrow \\sum_r \\hat P(r) \\frac{π_R P(r|R)}{\\sum_j π_j P(r|j)}.

  Each iteration reads the banded P(r|R) once (a fused pass computes the
  update and the next iteration's mixture). EM never decreases the
  likelihood; the trace is kept in :attr:`RankDistribution.objective`.
* :func:`weighted_mle`: the same with P̂(r) reweighted by a decaying w(r) and
  renormalised (eqs. 34-35), to focus on the top ranks (:func:`decay_weights`).
* :func:`mes`: maximal entropy with minimal distribution bias (§2.4.4, eqs.
  37-38), max_π η H(π) - Σ_r w_r (Σ_R P(r|R) π_R - P̂(r))² over the simplex,
  w_r = M P̂(r) as published (eq. 37 sums over users) or a named variant
  (:mod:`._mes`: the authors' notebook, unweighted).
* :func:`mle_adaptive`: the EM with each user's own sample-set size n_u, for
  adaptive item sampling (§2.6.2, eqs. 46-47; appendix A.10).

Dense kernels run with single-threaded BLAS (see :mod:`._threads`). Each fit's
objective, solver, stopping rule and derivative live in one private module:
:mod:`._em` (the EM of the three MLEs) and :mod:`._mes` (MES).

Decisions: EM starts from the uniform π (all ranks possible) and stops when
the mean log-likelihood per user changes by less than ``tol`` (absolute) or
after ``max_iter`` iterations (``converged`` tells which). With N > n the
mixture is not identifiable; EM from the uniform start returns one maximiser,
as in the dissertation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from simrec._validation import check_in_range, check_int
from simrec.sampling._blocks import build_blocks
from simrec.sampling._checks import check_rank_array, check_weights
from simrec.sampling._em import EM_TOL, em
from simrec.sampling._mes import MES_MAX_ITER, MES_PUBLISHED, MES_TOL, MESObjective, mes_dual
from simrec.sampling.functions import RankMetric, metric_table
from simrec.sampling.scheme import SamplingScheme, _log_pmf_grid

__all__ = [
    "RankDistribution",
    "mle",
    "weighted_mle",
    "decay_weights",
    "mes",
    "mle_adaptive",
]


@dataclass(frozen=True, eq=False)
class RankDistribution:
    """An estimated global rank distribution π̂ over R = 1..N.

    Attributes
    ----------
    estimator : str
        ``"MLE"``, ``"WMLE"``, ``"MES"`` or ``"adaptive_MLE"``.
    probabilities : ndarray of shape (N,), read-only
        π̂_R, summing to 1.
    n_users : int
        M, the number of sampled ranks used.
    n_iter : int
        Iterations run (EM iterations, or L-BFGS iterations for MES).
    converged : bool
        Whether the stopping tolerance was met before the iteration limit.
    objective : ndarray
        Per-iteration trace: the (weighted) mean log-likelihood per user for
        the EM estimators (entry 0 at the start, non-decreasing), the primal
        objective η H(π) - Σ_r w_r (P(r|π) - P̂(r))² for MES.
    """

    estimator: str
    probabilities: np.ndarray
    n_users: int
    n_iter: int
    converged: bool
    objective: np.ndarray
    _cache: dict = field(default_factory=dict, init=False, repr=False)

    @property
    def n_items(self) -> int:
        """N."""
        return int(self.probabilities.size)

    @property
    def estimate(self) -> NoReturn:
        """Not defined here (raises AttributeError naming what to call instead).

        A distribution is applied to a metric with :meth:`expectation`; an
        :class:`~._results.Estimate` with an interval comes from the estimator
        objects (``MLE().fit(sampled_ranks, scheme).estimate(metric)``).
        """
        raise AttributeError(
            f"{self.estimator} distribution has no `.estimate`: use `.expectation(metric)` for the "
            f"point estimate, or e.g. `MLE().fit(sampled_ranks, scheme).estimate(metric)` for an "
            f"Estimate with an interval"
        )

    def cdf(self) -> np.ndarray:
        """Σ_{R' <= R} π̂_R', i.e. the estimated global Recall@K curve for K = 1..N."""
        return np.cumsum(self.probabilities)

    def expectation(self, metric: RankMetric) -> float:
        """T̂ = Σ_R π̂_R F(R) for one metric."""
        if not isinstance(metric, RankMetric):
            raise TypeError(f"`metric` must be a RankMetric; got {type(metric).__name__}")
        return float(self.probabilities @ metric.table(self.n_items))

    def expectations(self, metrics: Sequence[RankMetric]) -> np.ndarray:
        """T̂ for every metric at once (one product with the (N, len(metrics)) metric table), shape (J,).

        Point estimates only; for :class:`~._results.Estimate` objects with a
        bootstrap interval use the estimator objects (``MLE().fit(sampled_ranks, scheme)``).
        """
        return self.probabilities @ metric_table(metrics, self.n_items)


def _readonly(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float64)
    x.setflags(write=False)
    return x


def _check_scheme(scheme: object) -> SamplingScheme:
    if not isinstance(scheme, SamplingScheme):
        raise TypeError(f"`scheme` must be a SamplingScheme; got {type(scheme).__name__}")
    return scheme


def _check_iter(max_iter: int, tol: float) -> tuple[int, float]:
    return check_int("max_iter", max_iter, low=1), check_in_range("tol", tol, 0, None)


def mle(sampled_ranks: object, scheme: SamplingScheme, *, max_iter: int = 300, tol: float = EM_TOL) -> RankDistribution:
    """Maximum-likelihood P(R) by EM (dissertation §2.4.3, eqs. 31-33).

    .. math:: π_R \\leftarrow \\sum_{r=1}^n \\hat P(r)\\, \\frac{π_R P(r|R)}{\\sum_{j=1}^N π_j P(r|j)}

    Parameters
    ----------
    sampled_ranks : array-like of int, shape (M,)
        Sampled ranks in [1, n].
    scheme : SamplingScheme
        N, n and with/without replacement (its cached P(r|R) is used).
    max_iter : int, default 300
        EM for a mixture converges sublinearly: at N = 20,720, n = 501 the
        log-likelihood still gains ~1e-7 per iteration after 300 iterations
        (about 1.4 s) and the mass on the very top ranks keeps moving slowly.
        300 is a compromise for repeated use; raise it for a single careful
        estimate.
    tol : float, default 1e-9
        Stop when the mean log-likelihood per user changes by at most ``tol``.

    Returns
    -------
    RankDistribution
        ``objective`` is the mean log-likelihood trace (non-decreasing).
    """
    scheme = _check_scheme(scheme)
    r = check_rank_array("sampled_ranks", sampled_ranks, scheme.n)
    max_iter, tol = _check_iter(max_iter, tol)
    p = np.bincount(r - 1, minlength=scheme.n) / r.size
    pi, it, conv, trace = em(scheme.blocks, p, max_iter, tol)
    return RankDistribution("MLE", _readonly(pi), int(r.size), it, conv, trace)


def decay_weights(metric: RankMetric, n: int, scale: float = 1.0) -> np.ndarray:
    """Decaying weights w(r) = F(r / C) for r = 1..n (dissertation §2.4.3, weighted MLE).

    The dissertation found w(r) = F_AP(r/C) and F_NDCG(r/C), C > 1, to work well;
    e.g. ``decay_weights(ndcg(), n, 10)``. Untruncated metrics give positive
    weights everywhere; truncated ones drop ranks beyond K·C.

    Parameters
    ----------
    metric : RankMetric
    n : int
        Sample-set size.
    scale : float, default 1.0
        C > 0 (larger C decays more slowly).
    """
    if not isinstance(metric, RankMetric):
        raise TypeError(f"`metric` must be a RankMetric; got {type(metric).__name__}")
    n = check_int("n", n, low=1)
    scale = check_in_range("scale", scale, 0, None, low_open=True)
    return np.asarray(metric.fn(np.arange(1, n + 1, dtype=np.float64) / scale, n), dtype=np.float64)


def weighted_mle(
    sampled_ranks: object,
    scheme: SamplingScheme,
    weights: object,
    *,
    max_iter: int = 300,
    tol: float = EM_TOL,
) -> RankDistribution:
    """Weighted MLE (dissertation eqs. 34-35): EM on w(r) P̂(r), renormalised.

    .. math:: π_R \\leftarrow \\frac{\\sum_r w(r) \\hat P(r)\\, π_R P(r|R) / \\sum_j π_j P(r|j)}{\\sum_r w(r) \\hat P(r)}

    The fitted mixture reproduces the *reweighted* sampled-rank distribution,
    so π̂ is tilted toward the top ranks relative to the MLE (the trade-off the
    dissertation makes to resolve small K); constant weights give the MLE.

    Parameters
    ----------
    sampled_ranks : array-like of int, shape (M,)
    scheme : SamplingScheme
    weights : array-like of shape (n,)
        w(r) >= 0 for r = 1..n, e.g. :func:`decay_weights`; at least one
        observed rank needs a positive weight.
    max_iter, tol
        As in :func:`mle` (``objective`` is the weighted mean log-likelihood).
    """
    scheme = _check_scheme(scheme)
    r = check_rank_array("sampled_ranks", sampled_ranks, scheme.n)
    w = check_weights("weights", weights, scheme.n)
    max_iter, tol = _check_iter(max_iter, tol)
    p = np.bincount(r - 1, minlength=scheme.n) * w
    if p.sum() <= 0:
        raise ValueError("`weights` must be positive at one observed sampled rank at least")
    pi, it, conv, trace = em(scheme.blocks, p / p.sum(), max_iter, tol)
    return RankDistribution("WMLE", _readonly(pi), int(r.size), it, conv, trace)


def mes(
    sampled_ranks: object,
    scheme: SamplingScheme,
    *,
    eta: float | None = None,
    objective: MESObjective = MES_PUBLISHED,
    max_iter: int = MES_MAX_ITER,
    tol: float = MES_TOL,
) -> RankDistribution:
    """Maximal entropy with minimal distribution bias, MES (dissertation §2.4.4, eqs. 37-38).

    .. math::

        \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n w_r \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2,
        \\qquad H(π) = -\\sum_R π_R \\log π_R.

    The weights w_r are the ``objective``'s (:mod:`._mes`): by default the
    published eq. 37, whose squared error is summed over the M users, so
    w_r = M P̂(r) (:data:`~._mes.MES_PUBLISHED`); the authors' notebook's
    w_r = n P̂(r) with η = 0.01 (:data:`~._mes.MES_AUTHORS_NOTEBOOK`); or w_r = 1
    (:data:`~._mes.MES_UNWEIGHTED`, simrec's objective before issue 27).

    The problem is strictly concave. It is solved through its dual, an
    unconstrained smooth strongly convex problem in n variables (not N):

    .. math::

        \\min_{λ \\in R^n}\\; η \\log \\sum_R e^{-(Aλ)_R/η} + λ^\\top \\hat P + \\sum_r \\frac{λ_r^2}{4 w_r},
        \\qquad π(λ) = \\mathrm{softmax}(-Aλ/η),

    with gradient ``λ/(2w) + P̂ - A^T π(λ)`` (so λ* = 2 w ⊙ (A^T π* - P̂), the
    KKT condition of the primal; ranks with w_r = 0 drop out), by L-BFGS; each evaluation is two passes over
    the banded P(r|R). Strong duality holds (Slater), and π(λ*) is the primal
    optimum.

    Parameters
    ----------
    sampled_ranks : array-like of int, shape (M,)
    scheme : SamplingScheme
    eta : float > 0, optional
        Entropy weight η; default the objective's (0.001, the dissertation's
        value, for the published and unweighted objectives; 0.01 for the
        authors' notebook).
    objective : MESObjective, default MES_PUBLISHED
        The squared errors' weights (:mod:`._mes`).
    max_iter : int, default 2000
        L-BFGS iteration limit.
    tol : float, default 1e-12
        Gradient tolerance (max norm) of the dual.
    """
    scheme = _check_scheme(scheme)
    r = check_rank_array("sampled_ranks", sampled_ranks, scheme.n)
    if not isinstance(objective, MESObjective):
        raise TypeError(f"`objective` must be an MESObjective (e.g. MES_PUBLISHED); got {objective!r}")
    eta = objective.eta if eta is None else check_in_range("eta", eta, 0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    tol = check_in_range("tol", tol, 0, None, low_open=True)
    p = np.bincount(r - 1, minlength=scheme.n) / r.size
    w = objective.weights(p, int(r.size), scheme.n)
    pi, nit, converged, trace = mes_dual(scheme.blocks, p, eta, max_iter, tol, w)
    return RankDistribution("MES", _readonly(pi), int(r.size), nit, converged, trace)


def mle_adaptive(
    sampled_ranks: object,
    sizes: object,
    n_items: int,
    *,
    replace: bool = True,
    max_iter: int = 300,
    tol: float = EM_TOL,
    tail_cutoff: float = 1e-30,
) -> RankDistribution:
    """MLE of P(R) from adaptive sampling, each user with its own sample-set size n_u.

    EM of dissertation §2.6.2 (eqs. 46-47, appendix A.10) with the likelihood

    .. math:: P(r_u | R; n_u) = \\mathrm{Binomial}(r_u - 1;\\, n_u - 1,\\, θ_R)

    (hypergeometric without replacement). This is the exact likelihood of the
    whole adaptive process up to a factor free of R: the probability of the
    path (rank 1 at every earlier size, then r_u at n_u) is ∝ θ_R^{r_u - 1}
    (1 - θ_R)^{n_u - r_u}, so the stopping rule does not bias the MLE.

    The EM runs on the distinct (n_u, r_u) pairs, weighted by their frequency:
    each iteration costs O(N x distinct pairs), whatever M is.

    Parameters
    ----------
    sampled_ranks : array-like of int, shape (M,)
        r_u in [1, n_u].
    sizes : array-like of int, shape (M,)
        n_u in [2, N] (e.g. :attr:`AdaptiveRanks.sizes`).
    n_items : int
        N.
    replace : bool, default True
    max_iter, tol
        As in :func:`mle`.
    tail_cutoff : float, default 1e-30
        As in :class:`SamplingScheme`.
    """
    n_items = check_int("n_items", n_items, low=2)
    s = check_rank_array("sizes", sizes, n_items)
    if (s < 2).any():
        raise ValueError(f"`sizes` must be integers in [2, {n_items}]; got {int(s.min())}")
    r = check_rank_array("sampled_ranks", sampled_ranks, int(s.max()))
    if r.shape != s.shape:
        raise ValueError(f"`sampled_ranks` and `sizes` must have the same shape; got {r.shape} and {s.shape}")
    if (r > s).any():
        u = int(np.flatnonzero(r > s)[0])
        raise ValueError(f"`sampled_ranks` must be <= `sizes`; got r = {r[u]} > n_u = {s[u]} at position {u}")
    max_iter, tol = _check_iter(max_iter, tol)
    check_in_range("tail_cutoff", tail_cutoff, 0, 1, high_open=True)
    key = s * (n_items + 1) + r
    uniq, counts = np.unique(key, return_counts=True)
    us, ur = uniq // (n_items + 1), uniq % (n_items + 1)
    order = np.argsort((ur - 1) / (us - 1.0), kind="stable")  # by expected position: narrow windows
    us, ur, counts = us[order], ur[order], counts[order]
    d = us.size
    a = build_blocks(
        n_items,
        d,
        lambda r0, r1: _log_pmf_grid(np.arange(r0 + 1, r1 + 1), ur - 1, us, n_items, bool(replace)),
        rel_cutoff=tail_cutoff,
        block_rows=4096,
    )
    pi, it, conv, trace = em(a, counts / r.size, max_iter, tol)
    return RankDistribution("adaptive_MLE", _readonly(pi), int(r.size), it, conv, trace)

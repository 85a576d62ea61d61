"""Li & Jin's mapping functions: the sampled hit ratio at k measures the global one at f(k).

Li & Jin (KDD 2020, §3-4; Li's dissertation §2.3) observe SHR@k ≈ HR@f(k)
for a mapping f: {1..n} -> [1, N] shared by algorithms on a dataset:

* **linear** baseline (their eq. 9; dissertation eq. 16):
  f(k) = (k - 1)(N - 1)/(n - 1) + 1, from E[r] = 1 + (n - 1)(R - 1)/(N - 1) <= k;
* **bound** (eq. 13; dissertation eq. 20): f(k) = ⌊(k - ½)(N - 1)/(n - 1) + ½⌋,
  the midpoint of the Hoeffding lower and upper bounds;
* **beta@a** (eqs. 16-17; dissertation eqs. 23-24): with P(R) ~ Beta(a, 1) on
  (R - 1)/(N - 1),

  .. math::

      f(1) = (N-1)\\,[a B(a, n)]^{1/a} + 1,\\qquad
      f(k+1) = \\Big[a (N-1)^a \\tbinom{n-1}{k} B(a+k, n-k) + (f(k)-1)^a\\Big]^{1/a} + 1;

* **beta@P** (eq. 19): a fitted to the data by iterating
  a ← -M / Σ_u ln((f(r_u; a) - 1)/(N - 1)).

The recurrence is evaluated in closed form in log space: with
t_j = a C(n-1, j) B(a+j, n-j) = a Γ(n)Γ(j+a) / (Γ(n+a)Γ(j+1)) (gammaln),
((f(k) - 1)/(N - 1))^a = Σ_{j<k} t_j, a cumulative log-sum-exp, so neither
C(n-1, k) nor B overflows and f(n) = N (Σ_j t_j = 1, their Lemma 3.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln

from simrec._validation import check_in_range, check_int
from simrec.sampling._checks import check_rank_array

__all__ = [
    "Mapping",
    "linear_mapping",
    "bound_mapping",
    "beta_mapping",
    "fit_beta_mapping",
    "sampled_hit_ratio_curve",
]


#: beta@P's stopping rule: at most this many fixed-point iterations (:func:`fit_beta_mapping`'s default) ...
_BETA_MAX_ITER = 100
#: ... until the relative change of a is at most this.
_BETA_TOL = 1e-6


def _sizes(n_items: int, n: int) -> tuple[int, int]:
    n_items = check_int("n_items", n_items, low=2)
    n = check_int("n", n, low=2, high=n_items)
    return n_items, n


@dataclass(frozen=True)
class Mapping:
    """A mapping f(k), k = 1..n, from sampled to global cutoffs.

    Attributes
    ----------
    name : str
        ``"linear"``, ``"bound"``, ``"beta@0.5"`` or ``"beta@P"``.
    n_items, n : int
        N and the sample-set size n.
    values : ndarray of shape (n,), read-only
        f(1), ..., f(n), non-decreasing, in [1, N] (real-valued for beta maps).
    a : float or None
        The Beta parameter (beta maps).
    n_iter : int
        Iterations of the beta@P fit (0 otherwise).
    converged : bool
        Whether the beta@P fit met its tolerance.
    a_trace : tuple of float
        Successive a of the beta@P fit, starting value first.
    """

    name: str
    n_items: int
    n: int
    values: np.ndarray = field(repr=False)
    a: float | None = None
    n_iter: int = 0
    converged: bool = True
    a_trace: tuple[float, ...] = ()

    def hit_ratio(self, sampled_ranks: object, k: int) -> float:
        """Estimate the global HR@K from sampled ranks via SHR@k ≈ HR@f(k) (the point estimate).

        For an :class:`~._results.Estimate` with a bootstrap interval use
        ``MappingEstimator(kind).fit(sampled_ranks, scheme).estimate(recall(K))``.

        Linear interpolation of the points (f(k), SHR@k), k = 1..n, anchored
        at (0, 0) (HR@0 = 0). This is a decision: Li & Jin compare curves at
        the points f(k); between them we interpolate.

        Parameters
        ----------
        sampled_ranks : array-like of int, shape (M,), values in [1, n]
        k : int
            Global cutoff K in [1, N].
        """
        k = check_int("k", k, low=1, high=self.n_items)
        shr = sampled_hit_ratio_curve(sampled_ranks, self.n)
        return float(np.interp(k, np.r_[0.0, self.values], np.r_[0.0, shr]))


def _readonly(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float64)
    x.setflags(write=False)
    return x


def sampled_hit_ratio_curve(sampled_ranks: object, n: int) -> np.ndarray:
    """SHR@k = (1/M) #{u: r_u <= k} for k = 1..n, shape (n,)."""
    n = check_int("n", n, low=1)
    r = check_rank_array("sampled_ranks", sampled_ranks, n)
    return np.cumsum(np.bincount(r - 1, minlength=n)) / r.size


def linear_mapping(n_items: int, n: int) -> Mapping:
    """Linear baseline f(k) = (k - 1)(N - 1)/(n - 1) + 1 (Li & Jin eq. 9)."""
    N, n = _sizes(n_items, n)
    k = np.arange(1, n + 1, dtype=np.float64)
    return Mapping("linear", N, n, _readonly((k - 1) * (N - 1) / (n - 1) + 1))


def bound_mapping(n_items: int, n: int) -> Mapping:
    """Bound mapping f(k) = ⌊(k - ½)(N - 1)/(n - 1) + ½⌋ (Li & Jin eq. 13), clipped to [1, N].

    Only f(n) can exceed N (by about (N - 1)/(2(n - 1))); HR@K = 1 for K >= N,
    so clipping it changes nothing.
    """
    N, n = _sizes(n_items, n)
    k = np.arange(1, n + 1, dtype=np.float64)
    f = np.floor((k - 0.5) * (N - 1) / (n - 1) + 0.5)
    return Mapping("bound", N, n, _readonly(np.clip(f, 1, N)))


def _beta_log_u(n: int, a: float) -> np.ndarray:
    """log(((f(k) - 1)/(N - 1))^a) = log Σ_{j<k} t_j for k = 1..n."""
    j = np.arange(n, dtype=np.float64)
    log_t = math.log(a) + gammaln(n) - gammaln(n + a) + gammaln(j + a) - gammaln(j + 1.0)
    log_u = np.logaddexp.accumulate(log_t)
    # Σ_{j<n} t_j = 1 exactly (Li & Jin, Lemma 3.1): normalise by the computed total, so rounding in the sum
    # (amplified by the power 1/a in f, e.g. 20 for a = 0.05) cannot move f(n) off N
    return np.minimum(log_u - log_u[-1], 0.0)


def beta_mapping(n_items: int, n: int, a: float) -> Mapping:
    """beta@a: the recurrence of Li & Jin eqs. 16-17 for P(R) ~ Beta(a, 1), in log space.

    .. math:: f(k) = (N - 1) \\Big(\\sum_{j=0}^{k-1} t_j\\Big)^{1/a} + 1,\\quad
              t_j = \\frac{a\\,Γ(n)\\,Γ(j+a)}{Γ(n+a)\\,Γ(j+1)}

    which is their recurrence summed (t_0 = a B(a, n) gives f(1)). a = 1 gives
    f(k) = k (N - 1)/n + 1 (their eq. 18); f(n) = N for every a.

    Parameters
    ----------
    n_items, n : int
    a : float > 0
    """
    N, n = _sizes(n_items, n)
    a = check_in_range("a", a, 0, None, low_open=True)
    f = (N - 1) * np.exp(_beta_log_u(n, a) / a) + 1
    return Mapping(f"beta@{a:g}", N, n, _readonly(f), a=a)


def fit_beta_mapping(
    sampled_ranks: object,
    n_items: int,
    n: int,
    *,
    a0: float = 1.0,
    tol: float = _BETA_TOL,
    max_iter: int = _BETA_MAX_ITER,
) -> Mapping:
    """beta@P: fit a to the sampled ranks (Li & Jin §4.1, eq. 19), then beta@a.

    .. math:: a^{(i+1)} = \\frac{-M}{\\sum_u \\ln\\big((f(r_u; a^{(i)}) - 1)/(N - 1)\\big)}

    the maximum-likelihood a of Beta(a, 1) for the mapped ranks f(r_u); Li &
    Jin report convergence in two or three iterations.

    Parameters
    ----------
    sampled_ranks : array-like of int, shape (M,), values in [1, n]
    n_items, n : int
    a0 : float, default 1.0
        Starting value.
    tol : float, default 1e-6
        Stop when |a_new - a| <= tol * a.
    max_iter : int, default 100

    Raises
    ------
    ValueError
        If every sampled rank is n (f = N, ln 1 = 0: a is unbounded).
    """
    N, n = _sizes(n_items, n)
    r = check_rank_array("sampled_ranks", sampled_ranks, n)
    a = check_in_range("a0", a0, 0, None, low_open=True)
    tol = check_in_range("tol", tol, 0, None, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    return _fit_beta_counts(np.bincount(r - 1, minlength=n), N, n, a, tol, max_iter)


def _fit_beta_counts(counts: np.ndarray, N: int, n: int, a: float, tol: float, max_iter: int) -> Mapping:
    """beta@P's fixed-point iteration on the sampled-rank histogram (checked arguments)."""
    m_users = int(counts.sum())
    trace = [a]
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        s = counts @ _beta_log_u(n, a)  # = a Σ_u ln((f(r_u) - 1)/(N - 1))
        if s >= 0:
            raise ValueError("beta@P is undefined when every sampled rank equals n (a diverges)")
        a_new = -m_users * a / s
        trace.append(a_new)
        if abs(a_new - a) <= tol * a:
            a = a_new
            converged = True
            break
        a = a_new
    m = beta_mapping(N, n, a)
    return Mapping("beta@P", N, n, m.values, a=a, n_iter=it, converged=converged, a_trace=tuple(trace))

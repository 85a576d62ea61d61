"""The linear family's quadratic pieces for one sampling scheme and prior: :class:`CorrectionProblem`.

Every linear estimator of :mod:`.corrections` (LS, BV γ, BV at 1/M, MN, CLS)
solves a small system built from the banded P(r|R) and a prior π over global
ranks (docs/design.md §5):

.. math::

    \\hat F = \\big((1-γ) A^\\top D A + γ\\,\\mathrm{diag}(c)\\big)^{-1} A^\\top D b,
    \\quad A_{R r} = P(r|R),\\; D = \\mathrm{diag}(π),\\; b_R = F(R),\\;
    c_r = \\textstyle\\sum_R π_R P(r|R).

Computation (never an N x N matrix): A^T D A and c are n x n and n, built from
the banded P(r|R) in O(N x band²). Writing C = diag(c), the symmetric matrix
S = C^{-1/2} A^T D A C^{-1/2} has eigenvalues λ in [0, 1] (Jensen:
E[F̂|R]² <= E[F̂²|R]); one eigendecomposition S = Q Λ Q^T (O(n³), cached per
scheme and prior) gives every γ at the cost of two n x n products:

.. math:: \\hat F = C^{-1/2} Q\\,\\mathrm{diag}\\big(1/((1-γ)λ + γ)\\big)\\, Q^\\top C^{-1/2} A^\\top D b.

At γ = 0 the system is singular in practice (the Bernstein basis P(r|·) is
severely ill-conditioned): :meth:`CorrectionProblem.solve` returns the
minimum-norm solution in the C-metric, dropping eigenvalues below ``rcond``
(default n x machine epsilon), i.e. the limit γ → 0 of the regularised solution.

Decision: sampled ranks the prior makes impossible (c_r = 0 up to 1e-200 of
max c) do not enter the objective; F̂ there is set to the value at the nearest
possible rank (so monotone solutions stay monotone).

Dense kernels run with single-threaded BLAS (see :mod:`._threads`). Build a
problem once per (scheme, prior) to reuse its eigendecomposition across
metrics and γ (:meth:`CorrectionProblem.solve_many` solves many metrics and γ
in one call); a bare :class:`~.scheme.SamplingScheme` has a uniform-prior
problem cached on it (K&R's choice, π = 1/N: :meth:`CorrectionProblem.from_prior`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np
import scipy.linalg
from scipy.optimize import lsq_linear

from simrec._validation import check_in_range, check_int
from simrec.sampling._checks import check_probability_vector
from simrec.sampling._threads import blas_single_thread
from simrec.sampling.distribution import RankDistribution
from simrec.sampling.functions import RankMetric
from simrec.sampling.scheme import SamplingScheme

__all__ = ["CorrectionProblem", "Prior"]

#: A prior over global ranks: None (uniform), an array of shape (N,), or an estimate.
Prior = np.ndarray | RankDistribution | None


def _readonly(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float64)
    x.setflags(write=False)
    return x


@dataclass(frozen=True, eq=False)
class CorrectionProblem:
    """The quadratic pieces of the linear family for one sampling scheme and prior.

    Parameters
    ----------
    scheme : SamplingScheme
    prior : ndarray of shape (N,), optional
        π over global ranks (non-negative, rescaled to sum 1). Uniform if
        omitted. Use :meth:`from_prior` to pass a :class:`RankDistribution`.
    prior_name : str, default "uniform"
        Tag used in estimator names (``"MLE"`` gives ``"BV_MLE(gamma=...)"``).
    rcond : float, optional
        Relative eigenvalue cutoff for γ = 0 (least squares, CLS). Default
        n x machine epsilon.
    """

    scheme: SamplingScheme
    prior: np.ndarray | None = None
    prior_name: str = "uniform"
    rcond: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scheme, SamplingScheme):
            raise TypeError(f"`scheme` must be a SamplingScheme; got {type(self.scheme).__name__}")
        N = self.scheme.n_items
        pi = np.full(N, 1.0 / N) if self.prior is None else check_probability_vector("prior", self.prior, N)
        object.__setattr__(self, "prior", _readonly(pi))
        if self.rcond is not None:
            check_in_range("rcond", self.rcond, 0, 1, low_open=True, high_open=True)

    @classmethod
    def from_prior(cls, scheme: SamplingScheme, prior: Prior = None) -> CorrectionProblem:
        """Problem for ``prior``: None (uniform), an array, or a :class:`RankDistribution`."""
        if prior is None:
            return _uniform_problem(scheme)
        if isinstance(prior, RankDistribution):
            return cls(scheme, prior.probabilities, prior_name=prior.estimator)
        return cls(scheme, np.asarray(prior), prior_name="prior")

    @property
    def _pi(self) -> np.ndarray:
        """:attr:`prior` as set by ``__post_init__`` (never None there)."""
        return cast(np.ndarray, self.prior)

    # -- cached pieces ---------------------------------------------------
    @cached_property
    @blas_single_thread
    def c(self) -> np.ndarray:
        """c_r = Σ_R π_R P(r|R), the prior's sampled-rank distribution, shape (n,)."""
        return _readonly(self.scheme.blocks.rmatvec(self._pi))

    @cached_property
    @blas_single_thread
    def gram(self) -> np.ndarray:
        """A^T D A, shape (n, n)."""
        return _readonly(self.scheme.blocks.gram(self._pi))

    @cached_property
    @blas_single_thread
    def _eig(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        c = self.c
        support = np.flatnonzero(c > 1e-200 * c.max())
        sc = np.sqrt(c[support])
        s = self.gram[np.ix_(support, support)] / np.outer(sc, sc)
        lam, q = np.linalg.eigh((s + s.T) / 2)
        return support, sc, np.clip(lam, 0.0, None), q

    @property
    def _cutoff(self) -> float:
        rcond = self.scheme.n * np.finfo(float).eps if self.rcond is None else self.rcond
        return rcond * max(float(self._eig[2].max()), 1e-300)

    def rhs(self, metric: RankMetric) -> np.ndarray:
        """A^T D b for b = F(1..N), shape (n,)."""
        return self.scheme.blocks.rmatvec(self.prior * metric.table(self.scheme.n_items))

    def _fill(self, x_support: np.ndarray) -> np.ndarray:
        support = self._eig[0]
        n = self.scheme.n
        if support.size == n:
            return x_support
        nearest = np.clip(np.searchsorted(support, np.arange(n)), 0, support.size - 1)
        left = np.clip(nearest - 1, 0, support.size - 1)
        use_left = np.abs(support[left] - np.arange(n)) <= np.abs(support[nearest] - np.arange(n))
        return x_support[np.where(use_left, left, nearest)]

    @blas_single_thread
    def solve(self, metric: RankMetric, gamma: float) -> np.ndarray:
        """F̂ of the linear family at ``gamma`` in [0, 1] (0: minimum-norm least squares)."""
        gamma = check_in_range("gamma", gamma, 0, 1)
        support, sc, lam, q = self._eig
        y = q.T @ (self.rhs(metric)[support] / sc)
        if gamma == 0:
            keep = lam > self._cutoff
            phi = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
        else:
            phi = 1.0 / ((1.0 - gamma) * lam + gamma)
        return self._fill((q @ (phi * y)) / sc)

    def rhs_top(self, f_top: np.ndarray, a_top: np.ndarray | None = None) -> np.ndarray:
        """A^T D B for J metrics vanishing beyond rank k_max: A_top^T (π_top ⊙ F_top), shape (n, J).

        ``f_top`` (k_max, J) holds F_j(1..k_max); ``a_top`` (k_max, n) is
        P(r | R <= k_max) (computed if omitted).
        """
        f_top = np.asarray(f_top, dtype=np.float64)
        scheme = self.scheme
        if f_top.ndim != 2 or not 1 <= f_top.shape[0] <= scheme.n_items or f_top.shape[1] == 0:
            raise ValueError(
                f"`f_top` must have shape (k_max, J) with 1 <= k_max <= N = {scheme.n_items} and "
                f"J >= 1; got {f_top.shape}"
            )
        k_max = f_top.shape[0]
        if a_top is None:
            a_top = np.exp(scheme.log_probabilities(np.arange(1, k_max + 1)))
        elif np.shape(a_top) != (k_max, scheme.n):
            raise ValueError(
                f"`a_top` must have shape ({k_max}, {scheme.n}) (P(r|R) for R = 1..k_max); got {np.shape(a_top)}"
            )
        return a_top.T @ (self._pi[:k_max, None] * f_top)

    @blas_single_thread
    def solve_many(
        self, f_top: np.ndarray, gammas: Sequence[float], a_top: np.ndarray | None = None
    ) -> dict[float, np.ndarray]:
        """F̂ of the linear family for J metrics and several γ from one eigendecomposition.

        .. math:: \\hat F = C^{-1/2} Q\\,\\mathrm{diag}\\big(1/((1-γ)λ + γ)\\big) Q^\\top C^{-1/2} A^\\top D B

        The solution of :meth:`solve` (same eigendecomposition of
        S = C^{-1/2} A^T D A C^{-1/2}, γ = 0 cutoff and nearest-rank fill), with
        the right-hand sides of all J metrics in one product: the metrics
        vanish beyond rank k_max (truncated at K <= k_max, e.g. Recall, NDCG,
        AP at K), so A^T D B = A_top^T (π_top ⊙ F_top) with A_top = P(r | R <= k_max)
        (K&R 2020 eqs. 21-26; γ = 1/M is :func:`bias_variance_inverse_users`).
        Equal to :meth:`solve` up to rounding (the right-hand side is summed
        over k_max rows instead of the banded P(r|R)).

        Parameters
        ----------
        f_top : ndarray, shape (k_max, J), 1 <= k_max <= N
            F_j(R) for R = 1..k_max (e.g. :func:`~.functions.metric_table`);
            F_j must be 0 beyond k_max.
        gammas : sequence of float in [0, 1]
            γ = 0 is minimum-norm least squares.
        a_top : ndarray, shape (k_max, n), optional
            P(r|R) for R = 1..k_max (computed from the scheme if omitted;
            pass it to share it between problems of one scheme).

        Returns
        -------
        dict of float -> ndarray of shape (n, J)
            F̂ per γ (keyed by ``float(γ)``), column j for metric j.
        """
        gammas = [check_in_range("gammas", g, 0, 1) for g in gammas]
        support, sc, lam, q = self._eig
        rhs = self.rhs_top(f_top, a_top)
        y = q.T @ (rhs[support] / sc[:, None])
        out: dict[float, np.ndarray] = {}
        for g in gammas:
            if g == 0:
                keep = lam > self._cutoff
                phi = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
            else:
                phi = 1.0 / ((1.0 - g) * lam + g)
            out[g] = self._fill((q @ (phi[:, None] * y)) / sc[:, None])
        return out

    @property
    @blas_single_thread
    def gram_unweighted(self) -> np.ndarray:
        """A^T A (no prior weights), shape (n, n): the variance term of eq. 44 as printed.

        Independent of the prior: computed once per scheme (cached on it) and
        shared by every problem of that scheme.
        """
        g = self.scheme._cache.get("gram_unweighted")
        if g is None:
            g = self.scheme._cache["gram_unweighted"] = _readonly(self.scheme.blocks.gram(np.ones(self.scheme.n_items)))
        return g

    @property
    @blas_single_thread
    def column_sums(self) -> np.ndarray:
        """Λ₁'s diagonal Σ_R P(r|R) (no prior weights), shape (n,); cached on the scheme."""
        c = self.scheme._cache.get("column_sums")
        if c is None:
            c = self.scheme._cache["column_sums"] = _readonly(self.scheme.blocks.rmatvec(np.ones(self.scheme.n_items)))
        return c

    @blas_single_thread
    def solve_eq45(self, rhs: np.ndarray, n_users: int) -> np.ndarray:
        """MN of Li's dissertation eq. 45 for right-hand sides A^T D B, shape (n,) or (n, J).

        .. math:: \\hat F = \\Big(A^\\top D A - \\tfrac1M A^\\top A + \\tfrac1M Λ_1\\Big)^{-1} A^\\top D b,
                  \\quad Λ_1 = \\mathrm{diag}\\Big(\\sum_R P(r|R)\\Big)

        The matrix is positive definite: Λ₁ - A^T A = Σ_R (diag(a_R) - a_R a_R^T)
        is a sum of multinomial covariances (a_R = P(·|R)), so no support
        restriction is needed (unlike the γ family). Solved by Cholesky.
        """
        n_users = check_int("n_users", n_users, low=1)
        mat = self.gram - self.gram_unweighted / n_users + np.diag(self.column_sums) / n_users
        return scipy.linalg.solve((mat + mat.T) / 2, rhs, assume_a="pos")

    @blas_single_thread
    def prior_gradient(
        self,
        values: np.ndarray,
        frequencies: np.ndarray,
        table: np.ndarray,
        gamma: float | None,
        n_users: int | None = None,
    ) -> np.ndarray:
        """∂(p^T F̂_j)/∂π_R of a linear estimate with this problem's prior π, shape (N, J).

        The chain rule of the linearised bootstrap of BV_MLE, MN_MLE, ... (the
        estimate p^T F̂ depends on the histogram directly, through p, and
        through the fitted prior π; :mod:`.fitted`). With F̂ = K^{-1} A^T D b
        and y = K^{-1} p (K symmetric),

        .. math::

            \\frac{∂\\, p^\\top \\hat F}{∂π} = (A y) ⊙ \\big(b - (1-γ) A \\hat F\\big) - γ\\, A (y ⊙ \\hat F)

        for the γ family, K = (1-γ) A^T D A + γ diag(A^T π) (K&R eq. 25;
        γ = 1/M for BV at 1/M), on the support of c = A^T π (p's mass on
        the other ranks moved to the nearest supported rank, as F̂ is filled
        there, so the support is held fixed: it changes only where c crosses
        1e-200 of its maximum); and for MN (``gamma=None``, Li's dissertation
        eq. 45, K = A^T D A - A^T A / M + Λ₁ / M, only A^T D A depends on π)

        .. math:: \\frac{∂\\, p^\\top \\hat F}{∂π} = (A y) ⊙ (b - A \\hat F).

        Parameters
        ----------
        values : ndarray, shape (n, J)
            F̂ as solved by this problem (:meth:`solve_many` at ``gamma``, or :meth:`solve_eq45`).
        frequencies : ndarray, shape (n,)
            p, the sampled-rank frequencies the estimate averages F̂ over.
        table : ndarray, shape (N, J)
            b = F_j(R) of the metrics.
        gamma : float in (0, 1], or None
            γ of the family; None for MN (eq. 45). γ = 0 (the minimum-norm
            least-squares limit) is not differentiable in π and is refused.
        n_users : int, optional
            M, required for MN.
        """
        a = self.scheme.blocks
        p = np.asarray(frequencies, dtype=np.float64)
        x = np.asarray(values, dtype=np.float64)
        b = np.asarray(table, dtype=np.float64)
        if gamma is None:
            y = self.solve_eq45(p, check_int("n_users", n_users, low=1))  # K^{-1} p, K of eq. 45
            return a.matvec(y)[:, None] * (b - a.matvec(x))
        gamma = check_in_range("gamma", gamma, 0, 1, low_open=True)
        support, sc, lam, q = self._eig
        where = self._fill(np.arange(support.size))
        p_support = np.bincount(where, weights=p, minlength=support.size)
        phi = 1.0 / ((1.0 - gamma) * lam + gamma)
        y = np.zeros(self.scheme.n)
        y[support] = (q @ (phi * (q.T @ (p_support / sc)))) / sc
        xz = np.zeros_like(x)
        xz[support] = x[support]
        return a.matvec(y)[:, None] * (b - (1.0 - gamma) * a.matvec(xz)) - gamma * a.matvec(y[:, None] * xz)

    @blas_single_thread
    def rank_distribution(self, sampled_counts: np.ndarray, gamma: float) -> np.ndarray:
        """P̂(R) = p̂^T (F̂_{Recall@R} - F̂_{Recall@R-1}) of the linear family at ``gamma`` (dissertation eq. 27).

        Since Recall@R - Recall@(R-1) is the indicator e_R, P̂(R) = p̂^T W e_R
        with W = ((1-γ) A^T D A + γ C)^{-1} A^T D, i.e. P̂ = π ⊙ (A v),
        v = ((1-γ) A^T D A + γ C)^{-1} p̂: one solve and one pass over P(r|R).
        ``sampled_counts`` (n,) is the histogram of the sampled ranks.
        """
        gamma = check_in_range("gamma", gamma, 0, 1)
        support, sc, lam, q = self._eig
        n = self.scheme.n
        p = np.asarray(sampled_counts, dtype=np.float64)
        p = p / p.sum()
        # ranks outside the support take F̂ of their nearest supported rank (see _fill): move their mass there
        where = self._fill(np.arange(support.size))
        p_support = np.bincount(where, weights=p, minlength=support.size)
        if gamma == 0:
            keep = lam > self._cutoff
            phi = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
        else:
            phi = 1.0 / ((1.0 - gamma) * lam + gamma)
        v = np.zeros(n)
        v[support] = (q @ (phi * (q.T @ (p_support / sc)))) / sc
        return self.prior * self.scheme.blocks.matvec(v)

    @blas_single_thread
    def solve_monotone(self, metric: RankMetric) -> np.ndarray:
        """F̂ minimising the prior-weighted squared bias subject to F̂(1) >= ... >= F̂(n) (CLS).

        With S's eigenpairs above the cutoff the objective is
        ``||Ã x - b̃||²`` with ``Ã = Λ^{1/2} Q^T C^{1/2}`` (n x n, not N x n);
        writing ``x = T z`` (``x_j = Σ_{i >= j} z_i``) turns monotonicity into
        ``z_i >= 0`` for i < n (``z_n`` free), a bounded least-squares problem
        solved by :func:`scipy.optimize.lsq_linear` (BVLS).
        """
        return self.solve_monotone_many(self.rhs(metric)[:, None])[:, 0]

    @blas_single_thread
    def solve_monotone_many(self, rhs: np.ndarray) -> np.ndarray:
        """CLS (:meth:`solve_monotone`) for J right-hand sides A^T D b at once, shape (n, J) -> (n, J).

        The design matrix is built once; each column is its own BVLS problem.
        Pass :meth:`rhs_top` (or :class:`~.histograms.MetricTables.rhs`) to
        get every metric's right-hand side in one product (issue 29: 150
        metric columns of the stress harness in one product instead of 150
        sweeps over P(r|R); equal to :meth:`rhs` up to the order of the sums).
        """
        support, sc, lam, q = self._eig
        keep = lam > self._cutoff
        lk, qk = lam[keep], q[:, keep]
        a = (np.sqrt(lk)[:, None] * qk.T) * sc[None, :]
        design = np.cumsum(a, axis=1)
        m = support.size
        lower = np.zeros(m)
        lower[-1] = -np.inf
        upper = np.full(m, np.inf)
        out = np.empty((self.scheme.n, rhs.shape[1]))
        for j in range(rhs.shape[1]):
            b = (qk.T @ (rhs[support, j] / sc)) / np.sqrt(lk)
            z = lsq_linear(design, b, bounds=(lower, upper), method="bvls", tol=1e-12).x
            z[:-1] = np.maximum(z[:-1], 0.0)  # BVLS may return -1e-17 at an active bound
            out[:, j] = self._fill(np.cumsum(z[::-1])[::-1])
        return out


def _uniform_problem(scheme: SamplingScheme) -> CorrectionProblem:
    prob = scheme._cache.get("uniform_problem")
    if prob is None:
        prob = CorrectionProblem(scheme)
        scheme._cache["uniform_problem"] = prob
    return prob

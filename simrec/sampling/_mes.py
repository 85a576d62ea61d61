"""MES's objectives, their solver and their exact derivative (Li's dissertation §2.4.4, eqs. 37-38).

Everything that depends on MES's objective is here, so a change of objective
is a change of this module. The objectives are one family,

.. math::

    \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n w_r \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2,
    \\qquad H(π) = -\\sum_R π_R \\log π_R,

told apart by the weights w_r and the entropy weight η (an
:class:`MESObjective`; issue 27):

* :data:`MES_PUBLISHED` (the default, :class:`ObservationWeighted`): the
  dissertation's eq. 37 sums the squared error over the M *users*,
  ξ = Σ_u (P(r_u | Π) − P̂(r_u))² = Σ_r M P̂(r) (Σ_R P(r|R) π_R − P̂(r))², so
  w_r = M P̂(r); η = 0.001 (the experiments of §2.8: "where η = 0.001").
* :data:`MES_AUTHORS_NOTEBOOK` (:class:`SampleSizeWeighted`): the authors' code
  (dli12/AAAI23-Towards-Reliable-Item-Sampling-for-Recommendation-Evaluation,
  ``estimator/MES.ipynb``: ``cp.sum(cp.square(AT@x - pr)@pr*n) - gamma *
  cp.sum(cp.entr(x))`` with ``n = 500`` the sample size + 1 and ``gamma =
  0.01``), w_r = n P̂(r) with n the scheme's n, η = 0.01.
* :data:`MES_UNWEIGHTED` (:class:`Unweighted`): w_r = 1, η = 0.001, simrec's
  objective before issue 27 (every rank's error counts the same, observed or
  not).

With w_r = c P̂(r) the ranks nobody was observed at carry no weight: they do
not constrain π at all (the entropy alone decides there).

**The dual** (:func:`mes_dual`; the public wrapper is
:func:`~.distribution.mes`). The problem is strictly concave; on the columns
with w_r > 0 (o) its dual is an unconstrained, smooth, strongly convex problem
in |o| <= n variables (not N):

.. math::

    \\min_{λ \\in R^{|o|}}\\; η \\log \\sum_R e^{-(A_oλ)_R/η} + λ^\\top \\hat P_o
    + \\sum_{r \\in o} \\frac{λ_r^2}{4 w_r},
    \\qquad π(λ) = \\mathrm{softmax}(-A_oλ/η),

with gradient ``λ/(2w) + P̂ - A^T π(λ)`` (so λ* = 2 w ⊙ (A^T π* - P̂), the
KKT condition of the primal; a column with w_r = 0 forces λ_r = 0 and drops
out), solved by L-BFGS; each evaluation is two passes over the banded
P(r|R). Strong duality holds (Slater), and π(λ*) is the primal optimum.
The **stopping rule**: at most :data:`MES_MAX_ITER` L-BFGS iterations, dual
gradient tolerance :data:`MES_TOL` (max norm); the MES estimator and the MES
prior use these defaults.

**The derivative: the implicit-function theorem at the optimum** (for the
linearised bootstrap of :mod:`.fitted`: :func:`mes_gradient`,
:func:`mes_jvp`). π̂ = softmax(-A_oλ*/η) with λ* the zero of
∇g(λ; p) = λ/(2w(p)) + p - A_o^T π(λ). With the dual Hessian

.. math:: H = \\mathrm{diag}\\Big(\\frac1{2w}\\Big) + \\tfrac1η A_o^\\top (D - π π^\\top) A_o,
          \\qquad D = \\mathrm{diag}(π̂),

and ∂∇g/∂p = diag(d), d_r = 1 − (q_r − p_r) w'_r / w_r (q = A^T π̂; d = 1
unweighted, d_r = (2 p_r − q_r)/p_r for w_r = c p_r; the constant c, M or n,
is the same in every bootstrap replicate), dλ*/dp = -H^{-1} diag(d) and
dπ̂/dλ = -(1/η)(D - π̂π̂^T) A_o, so

.. math:: \\Big(\\frac{∂π̂}{∂p}\\Big)^{\\!\\top} g = \\tfrac1η\\, d ⊙ H^{-1} A_o^\\top \\big(π̂ ⊙ (g - 1 π̂^\\top g)\\big)

on the columns o (0 elsewhere: a bootstrap replicate never observes a rank
the sample did not). The solver stops at a dual gradient of :data:`MES_TOL`,
so this is the gradient of the estimate as computed up to that tolerance;
one |o| x |o| Cholesky and one pass over P(r|R) serve any number of columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
import scipy.linalg
from scipy.optimize import minimize
from scipy.special import logsumexp

from simrec.sampling._blocks import BlockMatrix
from simrec.sampling._threads import blas_single_thread, single_threaded_blas

__all__ = [
    "MES_MAX_ITER",
    "MES_TOL",
    "MESObjective",
    "ObservationWeighted",
    "SampleSizeWeighted",
    "Unweighted",
    "MES_PUBLISHED",
    "MES_AUTHORS_NOTEBOOK",
    "MES_UNWEIGHTED",
    "MES_OBJECTIVES",
    "mes_dual",
    "mes_gradient",
    "mes_jvp",
]

#: L-BFGS's iteration cap for MES's dual.
MES_MAX_ITER = 2000
#: Tolerance on the dual gradient's max norm.
MES_TOL = 1e-12


@dataclass(frozen=True)
class MESObjective:
    """One MES objective: the weights w_r of the squared errors and its entropy weight η (module docstring).

    Subclasses give :meth:`weights` and :meth:`log_weight_slope`; instances
    are equal when their class is (they have no parameters).

    Attributes
    ----------
    key : str
        Its name in scenario files (``[estimators] mes_objective``).
    tag : str
        What it adds to the estimators' table labels (``""`` for the default).
    eta : float
        Its entropy weight η.
    """

    key = ""
    tag = ""
    eta = 0.001

    def weights(self, p: np.ndarray, n_users: int, n: int) -> np.ndarray:
        """w_r >= 0 for the frequencies p (n,) of M = ``n_users`` sampled ranks among n."""
        raise NotImplementedError

    def log_weight_slope(self, p: np.ndarray) -> np.ndarray:
        """w'_r / w_r (the weight's relative derivative in p_r) where w_r > 0, shape (n,)."""
        raise NotImplementedError


@dataclass(frozen=True)
class ObservationWeighted(MESObjective):
    """The dissertation's eq. 37: the squared error summed over the M users, w_r = M P̂(r); η = 0.001."""

    key = "published"
    tag = ""
    eta = 0.001

    def weights(self, p: np.ndarray, n_users: int, n: int) -> np.ndarray:
        return n_users * p

    def log_weight_slope(self, p: np.ndarray) -> np.ndarray:
        return np.divide(1.0, p, out=np.zeros_like(p, dtype=np.float64), where=p > 0)


@dataclass(frozen=True)
class SampleSizeWeighted(ObservationWeighted):
    """The authors' ``MES.ipynb``: w_r = n P̂(r) (n = the scheme's sample size, 500 in their code); η = 0.01."""

    key = "authors_notebook"
    tag = "[notebook]"
    eta = 0.01

    def weights(self, p: np.ndarray, n_users: int, n: int) -> np.ndarray:
        return n * p


@dataclass(frozen=True)
class Unweighted(MESObjective):
    """w_r = 1 for every sampled rank, observed or not; η = 0.001 (simrec's objective before issue 27)."""

    key = "unweighted"
    tag = "[unweighted]"
    eta = 0.001

    def weights(self, p: np.ndarray, n_users: int, n: int) -> np.ndarray:
        return np.ones_like(p, dtype=np.float64)

    def log_weight_slope(self, p: np.ndarray) -> np.ndarray:
        return np.zeros_like(p, dtype=np.float64)


#: The published objective (eq. 37), the default.
MES_PUBLISHED = ObservationWeighted()
#: The authors' notebook objective.
MES_AUTHORS_NOTEBOOK = SampleSizeWeighted()
#: simrec's objective before issue 27.
MES_UNWEIGHTED = Unweighted()
#: The objectives by their ``key``.
MES_OBJECTIVES: dict[str, MESObjective] = {o.key: o for o in (MES_PUBLISHED, MES_AUTHORS_NOTEBOOK, MES_UNWEIGHTED)}


def _support(a: BlockMatrix, w: np.ndarray) -> tuple[BlockMatrix, np.ndarray]:
    """A on the columns with w_r > 0 (A itself when all are), and those columns' indices."""
    cols = np.flatnonzero(w > 0)
    if cols.size == w.size:
        return a, cols
    return a.restrict_columns(cols), cols


def mes_dual(
    a: BlockMatrix,
    p: np.ndarray,
    eta: float,
    max_iter: int,
    tol: float,
    w: np.ndarray | None = None,
) -> tuple[np.ndarray, int, bool, np.ndarray]:
    """The MES dual solve of :func:`~.distribution.mes` on frequencies ``p`` (sum 1): (π̂, iterations, converged, primal trace).

    ``w`` (n,), the squared errors' weights (None: all 1, the unweighted
    objective); columns with w_r = 0 drop out of the dual.
    """
    w = np.ones(a.shape[1]) if w is None else np.asarray(w, dtype=np.float64)
    a_o, cols = _support(a, w)
    p_o, half_inv_w = p[cols], 0.5 / w[cols]
    last: dict[str, np.ndarray] = {}

    def fun(lam: np.ndarray) -> tuple[float, np.ndarray]:
        z = -a_o.matvec(lam) / eta
        lse = logsumexp(z)
        pi = np.exp(z - lse)
        q = a_o.rmatvec(pi)
        last.update(lam=lam.copy(), pi=pi, q=q)
        return eta * lse + lam @ p_o + 0.5 * (lam * half_inv_w) @ lam, lam * half_inv_w + p_o - q

    trace: list[float] = []

    w_o = w[cols]

    def primal(pi: np.ndarray, q: np.ndarray) -> float:  # the columns with w_r = 0 add nothing
        nz = pi > 0
        return float(-eta * (pi[nz] @ np.log(pi[nz])) - w_o @ (q - p_o) ** 2)

    def callback(xk: np.ndarray) -> None:
        if "lam" not in last or not np.array_equal(xk, last["lam"]):
            fun(xk)
        trace.append(primal(last["pi"], last["q"]))

    with single_threaded_blas():
        res = minimize(
            fun,
            np.zeros(cols.size),
            jac=True,
            method="L-BFGS-B",
            callback=callback,
            options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15, "maxcor": 20},
        )
        lam, n_newton, grad_max = _newton_polish(fun, last, a_o, eta, half_inv_w, res.x, tol)
        if "lam" not in last or not np.array_equal(lam, last["lam"]):
            fun(lam)
    pi = last["pi"] / last["pi"].sum()
    trace.append(primal(last["pi"], last["q"]))
    converged = grad_max <= max(tol, 1e-10)
    return pi, int(res.nit) + n_newton, converged, np.asarray(trace)


#: Newton steps at most after L-BFGS (each one Gram pass over P(r|R), about 7 evaluations of the dual).
_NEWTON_STEPS = 8


def _newton_polish(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    last: dict[str, np.ndarray],
    a_o: BlockMatrix,
    eta: float,
    half_inv_w: np.ndarray,
    lam: np.ndarray,
    tol: float,
) -> tuple[np.ndarray, int, float]:
    """Newton steps on the dual from L-BFGS's end until its gradient's max norm is at most ``tol``: (λ, steps, max|∇|).

    L-BFGS stops when the dual's value stops decreasing in floating point
    (relative 1e-15), which leaves a gradient of about 1e-8 and, for the
    weighted objectives (whose dual is worse conditioned: 1/(2w) is small), a
    KKT residual of up to 1% in π̂ (measured, tests/sampling/test_mes_objectives.py).
    Newton's method with the exact Hessian (:func:`_hessian_on_support`'s
    matrix) converges quadratically from there; a step is halved until the
    gradient's max norm decreases, and the polish ends when it cannot.
    """
    _, g = fun(lam)
    g_max = float(np.max(np.abs(g))) if g.size else 0.0
    steps = 0
    while steps < _NEWTON_STEPS and g_max > tol:
        step = scipy.linalg.solve(_dual_hessian(a_o, last["pi"], eta, half_inv_w), g, assume_a="pos")
        t = 1.0
        while t >= 1.0 / 64:
            _, g_new = fun(lam - t * step)
            if np.max(np.abs(g_new)) < g_max:
                break
            t /= 2
        else:
            fun(lam)  # no decrease: keep λ (and its π, q in ``last``)
            break
        lam, g, g_max = lam - t * step, g_new, float(np.max(np.abs(g_new)))
        steps += 1
    return lam, steps, g_max


def _slope(a: BlockMatrix, pi: np.ndarray, p: np.ndarray, w: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """d = ∂∇g/∂p on the support: 1 − (q − p) w'/w, shape (|o|,)."""
    cols = np.flatnonzero(w > 0)
    q = a.rmatvec(pi)[cols]
    return 1.0 - (q - p[cols]) * slope[cols]


@blas_single_thread
def mes_gradient(
    a: BlockMatrix,
    pi: np.ndarray,
    eta: float,
    g: np.ndarray,
    p: np.ndarray | None = None,
    w: np.ndarray | None = None,
    slope: np.ndarray | None = None,
) -> np.ndarray:
    """(∂π̂/∂p)^T g for the MES fit π̂ (implicit-function theorem at the dual optimum), shape (n, J).

    .. math:: \\Big(\\frac{∂π̂}{∂p}\\Big)^{\\!\\top} g = \\tfrac1η\\, d ⊙ H^{-1} A_o^\\top \\big(π̂ ⊙ (g - 1 π̂^\\top g)\\big),
              \\quad H = \\mathrm{diag}\\Big(\\frac1{2w}\\Big) + \\tfrac1η A_o^\\top (\\mathrm{diag}(π̂) - π̂ π̂^\\top) A_o

    Parameters
    ----------
    a : BlockMatrix, shape (N, n)
        P(r|R) as used by :func:`~.distribution.mes`.
    pi : ndarray, shape (N,)
        The fitted π̂.
    eta : float
        η of the fit.
    g : ndarray, shape (N, J)
        The vectors to pull back (e.g. a metric table: then the result is ∂(F_j^T π̂)/∂p).
    p, w, slope : ndarray, shape (n,), optional
        The frequencies fitted, the objective's weights w and w'/w
        (:class:`MESObjective`); None: the unweighted objective (w = 1, d = 1).
    """
    g = np.asarray(g, dtype=np.float64)
    h, a_o, cols, d = _hessian_on_support(a, pi, eta, p, w, slope)
    rhs = a_o.rmatvec(pi[:, None] * (g - pi @ g)) / eta
    out = np.zeros((a.shape[1], g.shape[1]))
    out[cols] = d[:, None] * scipy.linalg.solve(h, rhs, assume_a="pos")
    return out


def mes_jvp(
    a: BlockMatrix,
    pi: np.ndarray,
    eta: float,
    dp: np.ndarray,
    p: np.ndarray | None = None,
    w: np.ndarray | None = None,
    slope: np.ndarray | None = None,
) -> np.ndarray:
    """(∂π̂/∂p) dp for the MES fit, shape (N, B): dλ = -H^{-1} diag(d) dp, dπ̂ = -(1/η)(D - π̂π̂^T) A_o dλ (see :func:`mes_gradient`)."""
    h, a_o, cols, d = _hessian_on_support(a, pi, eta, p, w, slope)
    dp = np.asarray(dp, dtype=np.float64)[cols]
    dlam = -scipy.linalg.solve(h, d[:, None] * dp, assume_a="pos")
    z = a_o.matvec(dlam)
    return -(pi[:, None] * (z - pi @ z)) / eta


def _hessian_on_support(
    a: BlockMatrix,
    pi: np.ndarray,
    eta: float,
    p: np.ndarray | None,
    w: np.ndarray | None,
    slope: np.ndarray | None,
) -> tuple[np.ndarray, BlockMatrix, np.ndarray, np.ndarray]:
    """(H on the support o, A_o, o, d): H = diag(1/(2w_o)) + (1/η) A_o^T (diag(π) - π π^T) A_o, symmetrised."""
    if w is None:
        w = np.ones(a.shape[1])
        slope = np.zeros(a.shape[1])
        p = np.zeros(a.shape[1])
    a_o, cols = _support(a, w)
    # p, w and slope come together (mes_gradient, mes_jvp): all None or all arrays
    d = _slope(a, pi, cast(np.ndarray, p), w, cast(np.ndarray, slope))
    return _dual_hessian(a_o, pi, eta, 0.5 / w[cols]), a_o, cols, d


def _dual_hessian(a_o: BlockMatrix, pi: np.ndarray, eta: float, half_inv_w: np.ndarray) -> np.ndarray:
    """H = diag(1/(2w)) + (1/η) A_o^T (diag(π) - π π^T) A_o, the dual's Hessian at π (|o| x |o|, symmetrised)."""
    c = a_o.rmatvec(pi)
    h = (a_o.gram(pi) - np.outer(c, c)) / eta
    h[np.diag_indices_from(h)] += half_inv_w
    return (h + h.T) / 2

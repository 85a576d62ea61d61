"""MES's objective, its solver and its exact derivative (Li's dissertation §2.4.4, eqs. 37-38).

Everything that depends on MES's objective is here, so a change of objective
is a change of this module: the objective

.. math::

    \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2,
    \\qquad H(π) = -\\sum_R π_R \\log π_R,

its dual and the primal trace (:func:`mes_dual`; the public wrapper is
:func:`~.distribution.mes`), the **stopping rule** (L-BFGS at most
:data:`MES_MAX_ITER` iterations, dual gradient tolerance :data:`MES_TOL`: the
defaults of :func:`~.distribution.mes`, used by the MES estimator and the MES
prior), and the derivative of π̂ in the frequencies for the linearised
bootstrap of :mod:`.fitted` (:func:`mes_gradient`, :func:`mes_jvp`).

**The dual.** The problem is strictly concave; its dual is an unconstrained,
smooth, strongly convex problem in n variables (not N):

.. math::

    \\min_{λ \\in R^n}\\; η \\log \\sum_R e^{-(Aλ)_R/η} + λ^\\top \\hat P + \\tfrac14 \\|λ\\|^2,
    \\qquad π(λ) = \\mathrm{softmax}(-Aλ/η),

with gradient ``λ/2 + P̂ - A^T π(λ)`` (so λ* = 2 (A^T π* - P̂), the KKT
condition of the primal), solved by L-BFGS; each evaluation is two passes
over the banded P(r|R). Strong duality holds (Slater), and π(λ*) is the
primal optimum.

**The derivative: the implicit-function theorem at the optimum.** π̂ =
softmax(-Aλ*/η) with λ* the minimiser of the dual, whose gradient is
∇g(λ; p) = λ/2 + p - A^T π(λ) = 0 at λ*. With the dual Hessian

.. math:: H = \\tfrac12 I + \\tfrac1η A^\\top (D - π π^\\top) A,\\qquad D = \\mathrm{diag}(π̂),

dλ*/dp = -H^{-1} and dπ̂/dλ = -(1/η)(D - π̂π̂^T) A, so

.. math:: \\Big(\\frac{∂π̂}{∂p}\\Big)^{\\!\\top} g = \\tfrac1η H^{-1} A^\\top \\big(π̂ ⊙ (g - 1 π̂^\\top g)\\big).

The solver stops at a dual gradient of :data:`MES_TOL` (max norm), so this is
the gradient of the estimate as computed up to that tolerance; one n x n
Cholesky and one pass over P(r|R) serve any number of columns.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.optimize import minimize
from scipy.special import logsumexp

from simrec.sampling._blocks import BlockMatrix
from simrec.sampling._threads import blas_single_thread, single_threaded_blas

__all__ = ["MES_MAX_ITER", "MES_TOL", "mes_dual", "mes_gradient", "mes_jvp"]

#: L-BFGS's iteration cap for MES's dual.
MES_MAX_ITER = 2000
#: Tolerance on the dual gradient's max norm.
MES_TOL = 1e-12


def mes_dual(
    a: BlockMatrix, p: np.ndarray, eta: float, max_iter: int, tol: float
) -> tuple[np.ndarray, int, bool, np.ndarray]:
    """The MES dual solve of :func:`~.distribution.mes` on frequencies ``p`` (sum 1): (π̂, iterations, converged, primal trace)."""
    last: dict[str, np.ndarray] = {}

    def fun(lam: np.ndarray) -> tuple[float, np.ndarray]:
        z = -a.matvec(lam) / eta
        lse = logsumexp(z)
        pi = np.exp(z - lse)
        q = a.rmatvec(pi)
        last.update(lam=lam.copy(), pi=pi, q=q)
        return eta * lse + lam @ p + 0.25 * lam @ lam, lam / 2 + p - q

    trace: list[float] = []

    def primal(pi: np.ndarray, q: np.ndarray) -> float:
        nz = pi > 0
        return float(-eta * (pi[nz] @ np.log(pi[nz])) - np.sum((q - p) ** 2))

    def callback(xk: np.ndarray) -> None:
        if "lam" not in last or not np.array_equal(xk, last["lam"]):
            fun(xk)
        trace.append(primal(last["pi"], last["q"]))

    with single_threaded_blas():
        res = minimize(
            fun,
            np.zeros(a.shape[1]),
            jac=True,
            method="L-BFGS-B",
            callback=callback,
            options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15, "maxcor": 20},
        )
        if not np.array_equal(res.x, last.get("lam")):
            fun(res.x)
    pi = last["pi"] / last["pi"].sum()
    grad_ok = bool(np.max(np.abs(res.jac)) <= max(tol, 1e-10))
    if not trace:
        trace.append(primal(last["pi"], last["q"]))
    converged = bool(res.success) or grad_ok
    return pi, int(res.nit), converged, np.asarray(trace)


@blas_single_thread
def mes_gradient(a: BlockMatrix, pi: np.ndarray, eta: float, g: np.ndarray) -> np.ndarray:
    """(∂π̂/∂p)^T g for the MES fit π̂ (implicit-function theorem at the dual optimum), shape (n, J).

    .. math:: \\Big(\\frac{∂π̂}{∂p}\\Big)^{\\!\\top} g = \\tfrac1η H^{-1} A^\\top \\big(π̂ ⊙ (g - 1 π̂^\\top g)\\big),
              \\quad H = \\tfrac12 I + \\tfrac1η A^\\top (\\mathrm{diag}(π̂) - π̂ π̂^\\top) A

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
    """
    g = np.asarray(g, dtype=np.float64)
    rhs = a.rmatvec(pi[:, None] * (g - pi @ g)) / eta
    return scipy.linalg.solve(_mes_hessian(a, pi, eta), rhs, assume_a="pos")


def mes_jvp(a: BlockMatrix, pi: np.ndarray, eta: float, dp: np.ndarray) -> np.ndarray:
    """(∂π̂/∂p) dp for the MES fit, shape (N, B): dλ = -H^{-1} dp, dπ̂ = -(1/η)(D - π̂π̂^T) A dλ (see :func:`mes_gradient`)."""
    h = _mes_hessian(a, pi, eta)
    dlam = -scipy.linalg.solve(h, np.asarray(dp, dtype=np.float64), assume_a="pos")
    z = a.matvec(dlam)
    return -(pi[:, None] * (z - pi @ z)) / eta


def _mes_hessian(a: BlockMatrix, pi: np.ndarray, eta: float) -> np.ndarray:
    """H = I/2 + (1/η) A^T (diag(π) - π π^T) A, the Hessian of MES's dual at π (n x n, symmetrised)."""
    c = a.rmatvec(pi)
    h = (a.gram(pi) - np.outer(c, c)) / eta
    h[np.diag_indices_from(h)] += 0.5
    return (h + h.T) / 2

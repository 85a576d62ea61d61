"""Exact gradients of the fitted rank distributions with respect to the sampled-rank frequencies.

Vector-Jacobian products g ↦ (∂π̂/∂p)^T g for the two distribution fits, so
that the plug-in estimate f^T π̂ and every estimator built on π̂ as a prior
can be linearised in the histogram (the linearised bootstrap of
:mod:`.fitted`).

**EM (MLE, weighted MLE): reverse mode through the iterations run.** π̂ =
π_T is the iterate after T EM steps from the uniform start on the
frequencies p (:func:`~.distribution._em`). One step, with A = P(r|R),
q_t = A^T π_t and the observed columns o (p_r > 0):

.. math::

    ρ_t = p / q_t,\\quad u_t = A ρ_t,\\quad \\tilde π = π_t ⊙ u_t,\\quad
    π_{t+1} = \\tilde π / s_t,\\quad s_t = \\textstyle\\sum_R \\tilde π_R

so, with λ = ∂T/∂π_{t+1} (N x J),

.. math::

    \\tilde λ = (λ - 1 π_{t+1}^\\top λ) / s_t,\\quad
    λ_ρ = A^\\top (\\tilde λ ⊙ π_t),\\quad
    \\frac{∂T}{∂p} \\mathrel{+}= λ_ρ / q_t,\\quad
    \\frac{∂T}{∂π_t} = \\tilde λ ⊙ u_t - A (λ_ρ ⊙ p / q_t^2).

The gradient of the estimate *as implemented* (T steps, not the limit):
EM for a non-identifiable mixture (N > n) is still moving after 300
iterations, and the adjoint does not decay along the slow directions
(measured at N = 20,720, n = 501: keeping only the last 200 of 300 backward
steps leaves a 20% error), so the backward pass is not truncated, and the
implicit-function gradient at a fixed point would describe another
estimator.

Decision: the two products with A of a backward step run in **single
precision** (a float32 copy of the banded P(r|R), cached per matrix; vectors
rescaled to a maximum of 1 with entries below 1e-30 of it set to 0, so no
subnormal number enters BLAS) and are accumulated in double precision. This
halves the memory the backward pass streams (17 MB instead of 34 MB at
N = 20,720, n = 501: within the L3 cache) and makes it about 0.7 of a
forward EM fit, so an interval costs under 2 fits. Rounding does not
compound along the steps: the single-precision gradient agrees with the
double-precision one to a relative 1e-5 (tested, ``dtype=np.float64`` is
the reference) and with central differences of the EM to 1e-5; the
bootstrap replicates move by about 1e-8 of their spread.

**MES: the implicit-function theorem at the optimum.** π̂ = softmax(-Aλ*/η)
with λ* the minimiser of the strongly convex dual of
:func:`~.distribution.mes`, whose gradient is
∇g(λ; p) = λ/2 + p - A^T π(λ) = 0 at λ*. With the dual Hessian

.. math:: H = \\tfrac12 I + \\tfrac1η A^\\top (D - π π^\\top) A,\\qquad D = \\mathrm{diag}(π̂),

dλ*/dp = -H^{-1} and dπ̂/dλ = -(1/η)(D - π̂π̂^T) A, so

.. math:: \\Big(\\frac{∂π̂}{∂p}\\Big)^{\\!\\top} g = \\tfrac1η H^{-1} A^\\top \\big(π̂ ⊙ (g - 1 π̂^\\top g)\\big).

The solver stops at a dual gradient of 1e-12 (max norm), so this is the
gradient of the estimate as computed up to that tolerance; one n x n
Cholesky and one pass over P(r|R) serve any number of columns.
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.linalg

from simrec.sampling._blocks import BlockMatrix
from simrec.sampling._threads import blas_single_thread

__all__ = ["em_gradient", "em_jvp", "mes_gradient", "mes_jvp"]

#: Entries below this share of a vector's largest are set to 0 before the cast to single precision
#: (no subnormal floats in BLAS; their contribution is far below float32 rounding).
_SINGLE_FLOOR = 1e-30

_SINGLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _single_matrix(a: BlockMatrix) -> BlockMatrix:
    """A float32 copy of ``a`` (cached while ``a`` lives)."""
    out = _SINGLE.get(a)
    if out is None:
        out = BlockMatrix(a.shape, tuple((r0, r1, c0, c1, v.astype(np.float32)) for r0, r1, c0, c1, v in a.blocks))
        _SINGLE[a] = out
    return out


def _cast(y: np.ndarray, dtype: type) -> tuple[np.ndarray, np.ndarray | float]:
    """``y`` in ``dtype`` and the scale it was divided by (single precision: max 1, entries < 1e-30 set to 0)."""
    if dtype is np.float64:
        return y, 1.0
    scale = np.abs(y).max(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    y = y / scale
    y[np.abs(y) < _SINGLE_FLOOR] = 0.0
    return y.astype(np.float32), scale


def _backward_step(
    a: BlockMatrix, w: np.ndarray, x: np.ndarray, pi_prev: np.ndarray, dtype: type
) -> tuple[np.ndarray, np.ndarray]:
    """λ_t = w - A x and A^T (λ_t ⊙ π_{t-1}), one fused sweep over the row blocks of ``a`` (products in ``dtype``).

    In single precision x and π_{t-1} are rescaled to a maximum of 1 (so
    λ_t ⊙ π_{t-1} cannot overflow float32) and the scales are applied to the
    float64 results.
    """
    x, sx = _cast(x, dtype)
    pm = float(pi_prev.max()) if dtype is np.float32 else 1.0
    pis = pi_prev / pm if dtype is np.float32 else pi_prev
    if w.ndim == 2:
        pis = pis[:, None]
    ws = w / sx
    lam = np.empty_like(w)
    y: np.ndarray = np.empty(w.shape, dtype=dtype)
    s = np.zeros((a.shape[1],) + w.shape[1:])
    for r0, r1, c0, c1, v in a.blocks:  # each block read once for both products
        np.subtract(ws[r0:r1], v @ x[c0:c1], out=lam[r0:r1])
        np.multiply(lam[r0:r1], pis[r0:r1], out=y[r0:r1], casting="unsafe")
        s[c0:c1] += v.T @ y[r0:r1]
    return lam * sx, s * (sx * pm)


@blas_single_thread
def em_gradient(
    history: list, pi_final: np.ndarray, f: np.ndarray, n_cols: int, *, dtype: type = np.float32
) -> np.ndarray:
    """∂(f_j^T π_T)/∂p_r for an EM run recorded by ``_em(..., history=[])``, shape (n_cols, J).

    Reverse mode through every iteration run (see the module docstring):
    two sweeps over P(r|R) per iteration, like a forward EM step.

    Parameters
    ----------
    history : list
        As filled by :func:`~.distribution._em`.
    pi_final : ndarray, shape (N,)
        The returned π_T.
    f : ndarray, shape (N, J)
        The metrics' values F_j(R) (or any J vectors: the result is linear in f).
    n_cols : int
        n, the number of sampled ranks (columns of the unrestricted P(r|R)).
    dtype : {np.float32, np.float64}, default np.float32
        Precision of the products with P(r|R) (accumulated in float64);
        float64 is the reference (about 1.5x slower at N = 20,720, n = 501).

    Returns
    -------
    ndarray, shape (n_cols, J)
        Zero on the unobserved columns (a histogram resampled from p has none there).
    """
    a, columns, p = history[0]
    steps = history[1:]
    f = np.asarray(f, dtype=np.float64)
    n_out = f.shape[1]
    lam = f[:, 0] if n_out == 1 else f  # one metric: vectors (BLAS gemv), not one-column matrices
    grad = np.zeros((p.size,) + lam.shape[1:])
    if steps:
        mat = _single_matrix(a) if dtype is np.float32 else a
        obs = p > 0
        inv_q = np.zeros_like(p)

        def col(v: np.ndarray) -> np.ndarray:
            return v[:, None] if lam.ndim == 2 else v

        c = pi_final @ lam
        y, sy = _cast(lam * col(steps[-1][0]), dtype)
        s_t = mat.rmatvec(y) * sy
        nxt = pi_final
        for t in range(len(steps) - 1, -1, -1):
            pi_t, q_t, total = steps[t]
            rho = (s_t - (np.outer(q_t, c) if lam.ndim == 2 else q_t * c)) / total
            inv_q[obs] = 1.0 / q_t[obs]
            grad += rho * col(inv_q)
            if t == 0:
                break
            u = np.divide(nxt, pi_t, out=np.zeros_like(pi_t), where=pi_t > 0)
            lam, s_t = _backward_step(mat, (lam - c) * col(u), rho * col(p * inv_q**2), steps[t - 1][0], dtype)
            c = pi_t @ lam
            nxt = pi_t
    out = np.zeros((n_cols, n_out))
    out[columns] = grad.reshape(grad.shape[0], n_out)
    return out


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


@blas_single_thread
def em_jvp(history: list, pi_final: np.ndarray, dp: np.ndarray, *, dtype: type = np.float64) -> np.ndarray:
    """(∂π_T/∂p) dp for B directions: forward mode through the recorded EM iterations, shape (N, B).

    The tangent of one step (notation of the module docstring):

    .. math::

        dq = A^\\top dπ_t,\\quad dρ = dp / q_t - p ⊙ dq / q_t^2,\\quad
        d\\tilde π = dπ_t ⊙ u_t + π_t ⊙ A\\, dρ,\\quad
        dπ_{t+1} = (d\\tilde π - π_{t+1} 1^\\top d\\tilde π) / s_t

    from dπ_0 = 0 (the uniform start). Costs two products of P(r|R) with B
    columns per iteration, whatever the number of metrics and estimators
    using π: the cheaper mode when the directions (bootstrap replicates)
    are fewer than the columns to pull back (:func:`em_gradient`, the
    reverse mode, gives the same numbers up to rounding).

    Parameters
    ----------
    history : list
        As filled by :func:`~.distribution._em`.
    pi_final : ndarray, shape (N,)
    dp : ndarray, shape (n_cols, B)
        Directions in the frequencies p (of the unrestricted columns).
    dtype : {np.float32, np.float64}, default np.float64
        Precision of the products with P(r|R), as in :func:`em_gradient`.
        Double by default: with B columns the products are matrix-matrix
        (compute-bound), and the rescaling and casts of B columns per step
        cost more than single precision saves.
    """
    a, columns, p = history[0]
    steps = history[1:]
    dp = np.asarray(dp, dtype=np.float64)[columns]
    n_dir = dp.shape[1]
    dpi = np.zeros((pi_final.size, n_dir))
    if not steps:
        return dpi
    mat = _single_matrix(a) if dtype is np.float32 else a
    obs = p > 0
    inv_q = np.zeros_like(p)
    for t, (pi_t, q_t, total) in enumerate(steps):
        nxt = steps[t + 1][0] if t + 1 < len(steps) else pi_final
        inv_q[obs] = 1.0 / q_t[obs]
        u = np.divide(nxt, pi_t, out=np.zeros_like(pi_t), where=pi_t > 0)  # u_t / s_t
        if t == 0:
            drho = dp * inv_q[:, None]
        else:
            y, sy = _cast(dpi, dtype)
            drho = dp * inv_q[:, None] - (mat.rmatvec(y) * sy) * (p * inv_q**2)[:, None]
        y, sy = _cast(drho, dtype)
        dpi *= u[:, None]
        dpi += (pi_t / total)[:, None] * (mat.matvec(y) * sy)  # dπ̃ / s_t
        dpi -= np.outer(nxt, dpi.sum(axis=0))
    return dpi


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

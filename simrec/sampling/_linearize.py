"""Exact gradients of the EM estimates with respect to the sampled-rank histogram (reverse mode).

The plug-in estimate of an EM fit, T = f^T π_T with π_T the iterate after T
EM steps from the uniform start on the sampled-rank frequencies p
(:func:`~.distribution._em`), is a smooth function of p. Its gradient
∂T/∂p is computed by differentiating the recorded iterations backwards
(reverse mode, "adjoint" EM). One step, with A = P(r|R), q_t = A^T π_t and
the observed columns o (p_r > 0):

.. math::

    ρ_t = p / q_t,\\quad u_t = A ρ_t,\\quad \\tilde π = π_t ⊙ u_t,\\quad
    π_{t+1} = \\tilde π / s_t,\\quad s_t = \\textstyle\\sum_R \\tilde π_R

so, with λ = ∂T/∂π_{t+1} (N x J),

.. math::

    \\tilde λ = (λ - 1 π_{t+1}^\\top λ) / s_t,\\quad
    λ_ρ = A^\\top (\\tilde λ ⊙ π_t),\\quad
    \\frac{∂T}{∂p} \\mathrel{+}= λ_ρ / q_t,\\quad
    \\frac{∂T}{∂π_t} = \\tilde λ ⊙ u_t - A (λ_ρ ⊙ p / q_t^2).

Each backward step is one fused pass over the banded P(r|R), like a forward
EM step (u_t is recovered from the stored iterates, u_t = s_t π_{t+1} / π_t;
the iterates are kept, T x N floats, about 50 MB at N = 20,720 and 300
iterations). Used by the linearised bootstrap of :mod:`.fitted` for MLE and
weighted MLE.
"""

from __future__ import annotations

import numpy as np

from simrec.sampling._blocks import BlockMatrix
from simrec.sampling._threads import blas_single_thread

__all__ = ["em_gradient"]


def _adjoint_pass(
    a: BlockMatrix, lam: np.ndarray, c: np.ndarray, u: np.ndarray, x: np.ndarray, pi_t: np.ndarray,
    pi_prev: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One fused backward sweep over the row blocks of ``a``.

    Computes λ_t = (λ_{t+1} - c_t) ⊙ π_{t+1}/π_t - A x_t (``u`` = π_{t+1}/π_t,
    i.e. u_t/s_t) block by block and, while
    each block is in cache, the next step's c_{t-1} = π_t^T λ_t and
    A^T (λ_t ⊙ π_{t-1}).
    """
    out = np.empty_like(lam)
    c_next = np.zeros(lam.shape[1])
    s_next = np.zeros((a.shape[1], lam.shape[1]))
    for r0, r1, c0, c1, v in a.blocks:
        blk = (lam[r0:r1] - c) * u[r0:r1, None] - v @ x[c0:c1]
        out[r0:r1] = blk
        c_next += pi_t[r0:r1] @ blk
        s_next[c0:c1] += v.T @ (blk * pi_prev[r0:r1, None])
    return out, c_next, s_next


@blas_single_thread
def em_gradient(history: list, pi_final: np.ndarray, f: np.ndarray, n_cols: int) -> np.ndarray:
    """∂(f_j^T π_T)/∂p_r for an EM run recorded by ``_em(..., history=[])``, shape (n_cols, J).

    One fused pass over P(r|R) per iteration (:func:`_adjoint_pass`): the
    shift by c_t = π_{t+1}^T λ commutes with A^T, A^T((λ - c) ⊙ π_t) =
    A^T(λ ⊙ π_t) - c q_t, so both products of a step read each block once.

    Parameters
    ----------
    history : list
        As filled by :func:`~.distribution._em`.
    pi_final : ndarray, shape (N,)
        The returned π_T.
    f : ndarray, shape (N, J)
        The metrics' values F_j(R).
    n_cols : int
        n, the number of sampled ranks (columns of the unrestricted P(r|R)).

    Returns
    -------
    ndarray, shape (n_cols, J)
        Zero on the unobserved columns (a histogram resampled from p has none there).
    """
    a, columns, p = history[0]
    steps = history[1:]
    f = np.asarray(f, dtype=np.float64)
    grad = np.zeros((p.size, f.shape[1]))
    if steps:
        obs = p > 0
        inv_q = np.zeros_like(p)
        lam = f
        pi_t = steps[-1][0]
        c = pi_final @ lam
        s_t = a.rmatvec(lam * pi_t[:, None])
        nxt = pi_final
        for t in range(len(steps) - 1, -1, -1):
            pi_t, q_t, total = steps[t]
            rho = (s_t - np.outer(q_t, c)) / total
            inv_q[obs] = 1.0 / q_t[obs]
            grad += rho * inv_q[:, None]
            if t == 0:
                break
            x = rho * (p * inv_q**2)[:, None]
            u = np.divide(nxt, pi_t, out=np.zeros_like(pi_t), where=pi_t > 0)
            lam, c, s_t = _adjoint_pass(a, lam, c, u, x, pi_t, steps[t - 1][0])
            nxt = pi_t
    out = np.zeros((n_cols, f.shape[1]))
    out[columns] = grad
    return out

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

Each backward step costs two passes over the banded P(r|R) (u_t is
recovered from the stored iterates, u_t = s_t π_{t+1} / π_t). Used by the
linearised bootstrap of :mod:`.fitted` for MLE and weighted MLE.
"""

from __future__ import annotations

import numpy as np

from simrec.sampling._threads import blas_single_thread

__all__ = ["em_gradient"]


@blas_single_thread
def em_gradient(history: list, pi_final: np.ndarray, f: np.ndarray, n_cols: int) -> np.ndarray:
    """∂(f_j^T π_T)/∂p_r for an EM run recorded by ``_em(..., history=[])``, shape (n_cols, J).

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
    obs = p > 0
    inv_q = np.zeros_like(p)
    lam = np.array(f, dtype=np.float64, copy=True)
    grad = np.zeros((p.size, lam.shape[1]))
    nxt = pi_final
    for pi_t, q_t, total in reversed(history[1:]):
        lam_t = (lam - nxt @ lam) / total
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(pi_t > 0, total * nxt / pi_t, 0.0)
        inv_q[obs] = 1.0 / q_t[obs]
        lam_rho = a.rmatvec(lam_t * pi_t[:, None])
        grad += lam_rho * inv_q[:, None]
        lam = lam_t * u[:, None] - a.matvec(lam_rho * (p * inv_q**2)[:, None])
        nxt = pi_t
    out = np.zeros((n_cols, lam.shape[1]))
    out[columns] = grad
    return out

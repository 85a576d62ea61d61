"""EM for a mixture over global ranks: the iteration (MLE, weighted MLE, adaptive MLE) and its exact derivative.

The sampled rank is a mixture over the users' global ranks (Li's
dissertation §2.4.2, eq. 30), P(r) = Σ_R π_R P(r|R); EM fits π to the
sampled-rank frequencies p (eqs. 31-33):

.. math:: π_R \\leftarrow \\sum_r p_r \\frac{π_R P(r|R)}{\\sum_j π_j P(r|j)}.

**Stopping rule** (one place for every EM of :mod:`simrec.sampling`): from the
uniform π, until the mean log-likelihood per user changes by at most
:data:`EM_TOL` (absolute) or after ``max_iter`` iterations (the caller's cap,
300 by default everywhere); ``converged`` tells which.

The derivative of the estimate as implemented (for the linearised bootstrap
of :mod:`.fitted`): vector-Jacobian products g ↦ (∂π̂/∂p)^T g
(:func:`em_gradient`) and Jacobian-vector products (:func:`em_jvp`).

**EM (MLE, weighted MLE): reverse mode through the iterations run.** π̂ =
π_T is the iterate after T EM steps from the uniform start on the
frequencies p (:func:`em`). One step, with A = P(r|R),
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
estimator. It does not even exist there in practice (issue 29, measured at
N = 3,000, n = 101, M = 20,000, capped at 300): the adjoint iterated at the
capped π̂ (the Neumann series of the implicit-function system) grows without
settling, differing from the as-run gradient by 64%, 157% and 352% of its
largest entry after 1,000, 3,000 and 10,000 steps, with an NDCG@10 interval
1.4, 1.8 and 2.7 times as wide; the as-run derivative is the default and
no implicit-function variant is offered.

Decision: the two products with A of a backward step run in **single
precision** on a float32 copy of the banded P(r|R) (cached per matrix) and
are accumulated in double precision. The copy keeps the entries of at least
:data:`_SINGLE_CUTOFF` = 1e-12 of their row's largest (each block's column
window narrowed to them: 66% of the stored entries at N = 20,720, n = 501),
and the vectors are rescaled to a maximum of 1 with entries below
:data:`_SINGLE_FLOOR` = 1e-20 of it set to 0, so that no product of a stored
entry and a vector entry is a subnormal float32 (issue 29: with the double
copy's 1e-30 tail, columns summing only tail terms ran BLAS's subnormal
path, and a backward step cost 2.5 times its cost on normal numbers). A
dropped entry is below 1e-12 of its row's largest term, five orders of
magnitude under the float32 rounding (6e-8) the products already carry.
Rounding does not compound along the steps: the single-precision gradient
agrees with the double-precision one to a relative 1e-5 (tested,
``dtype=np.float64`` is the reference; 6e-8 measured at N = 20,720,
n = 501, M = 136,677, as before the cut) and with central differences of
the EM to 1e-5; the bootstrap replicates move by about 1e-8 of their
spread. The backward pass then costs about 0.7 of a forward EM fit at
N = 20,720, n = 501 (0.46 against 0.68 s CPU, load 7; its elementwise steps
on the (N, J) adjoint run column by column, issue 29), so an interval costs
under 2 fits (bench/bench_bootstrap.py).
"""

from __future__ import annotations

import weakref

import numpy as np

from simrec.sampling._blocks import BlockMatrix
from simrec.sampling._threads import blas_single_thread

__all__ = ["EM_TOL", "em", "em_gradient", "em_jvp"]

#: EM's tolerance on the change of the mean log-likelihood per user (MLE, WMLE, the MLE prior, adaptive MLE).
EM_TOL = 1e-9


@blas_single_thread
def em(
    a: BlockMatrix, p: np.ndarray, max_iter: int, tol: float, history: list | None = None
) -> tuple[np.ndarray, int, bool, np.ndarray]:
    """EM for mixture weights π over the rows of ``a`` given column frequencies ``p`` (sum 1).

    ``history`` (a list, optional) receives what differentiating the iterates
    needs (:func:`em_gradient`, :func:`em_jvp`): first ``(matrix, columns, p)`` as used (the
    restricted matrix and the original indices of its columns), then
    ``(π_t, q_t, total_t)`` for every iteration t (π and q = A^T π before
    the update, the normaliser after it).

    Only the observed columns (p > 0) enter the update and the likelihood, so
    when they are few (at most half the columns: few users, or many more
    sample ranks than users) the EM runs on the sub-matrix of those columns
    (:meth:`BlockMatrix.restrict_columns`, built once): an iteration then
    costs O(rows x observed columns in the band) instead of O(rows x band),
    with the same iterates up to the order of floating-point sums.
    """
    n_rows = a.shape[0]
    pi = np.full(n_rows, 1.0 / n_rows)
    obs = np.flatnonzero(p > 0)
    columns = np.arange(a.shape[1])
    if 2 * obs.size <= a.shape[1]:
        a = a.restrict_columns(obs)
        p, columns = p[obs], obs
        obs = np.arange(obs.size)
    if history is not None:
        history.append((a, columns, p))
    q = a.rmatvec(pi)
    po = p[obs]
    ll = float(po @ np.log(q[obs]))
    trace = [ll]
    ratio = np.zeros(a.shape[1])
    # without a history the iterates alternate between two buffers (rows outside every block stay 0)
    spare = [np.zeros(n_rows), np.zeros(n_rows)] if history is None else None
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        ratio[obs] = po / q[obs]
        prev, q_prev = pi, q
        pi, q = a.em_pass(pi, ratio, None if spare is None else spare[it % 2])
        total = pi.sum()
        if history is not None:
            history.append((prev, q_prev, total))
        pi /= total
        q /= total
        new = float(po @ np.log(q[obs]))
        trace.append(new)
        if abs(new - ll) <= tol:
            converged = True
            ll = new
            break
        ll = new
    return pi, it, converged, np.asarray(trace)


#: Entries below this share of a vector's largest are set to 0 before the cast to single precision
#: (with :data:`_SINGLE_CUTOFF`: no product in BLAS is a subnormal float32; their contribution is far
#: below float32 rounding).
_SINGLE_FLOOR = 1e-20

#: The single-precision copy of P(r|R) keeps the entries of at least this share of their row's largest.
_SINGLE_CUTOFF = 1e-12

_SINGLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _single_matrix(a: BlockMatrix) -> BlockMatrix:
    """A float32 copy of ``a`` without its entries below :data:`_SINGLE_CUTOFF` of their row's largest (cached while ``a`` lives).

    Each block's column window is narrowed to the columns holding a kept
    entry; dropped entries inside it are 0. Only the backward (and forward)
    passes of the derivative use it; the EM itself runs on ``a``.
    """
    out = _SINGLE.get(a)
    if out is None:
        blocks = []
        for r0, r1, c0, c1, v in a.blocks:
            keep = v >= _SINGLE_CUTOFF * v.max(axis=1, keepdims=True)
            keep &= v > 0
            cols = np.flatnonzero(keep.any(axis=0))
            if not cols.size:
                continue
            lo, hi = int(cols[0]), int(cols[-1]) + 1
            vals = np.where(keep[:, lo:hi], v[:, lo:hi], 0.0).astype(np.float32)
            blocks.append((r0, r1, c0 + lo, c0 + hi, vals))
        out = BlockMatrix(a.shape, tuple(blocks))
        _SINGLE[a] = out
    return out


def _cast(y: np.ndarray, dtype: type) -> tuple[np.ndarray, np.ndarray | float]:
    """``y`` in ``dtype`` and the scale it was divided by (single precision: max 1, entries below :data:`_SINGLE_FLOOR` set to 0)."""
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
    float64 results. Rows outside every block (A is 0 there: rows of a
    column-restricted matrix, or of the single copy, without an entry) get
    λ_t = w.
    """
    x, sx = _cast(x, dtype)
    pm = float(pi_prev.max()) if dtype is np.float32 else 1.0
    pis = pi_prev / pm if dtype is np.float32 else pi_prev
    if w.ndim == 2:
        pis = pis[:, None]
    lam = _columnwise(np.divide, w, sx)  # w / sx, then λ in place block by block (the same numbers as a copy)
    y: np.ndarray = np.empty(w.shape, dtype=dtype)
    s = np.zeros((a.shape[1],) + w.shape[1:])
    for r0, r1, c0, c1, v in a.blocks:  # each block read once for both products
        np.subtract(lam[r0:r1], v @ x[c0:c1], out=lam[r0:r1])
        np.multiply(lam[r0:r1], pis[r0:r1], out=y[r0:r1], casting="unsafe")
        s[c0:c1] += v.T @ y[r0:r1]
    return _columnwise(np.multiply, lam, sx, out=lam), s * (sx * pm)


def _columnwise(op: np.ufunc, a: np.ndarray, b: np.ndarray | float, out: np.ndarray | None = None) -> np.ndarray:
    """``op(a, b)`` for ``a`` of shape (N,) or (N, J) and ``b`` a scalar or of shape (J,) (one value per column).

    Column by column for (N, J): the same numbers as numpy's broadcast,
    whose inner loop would run over the J entries of a row (issue 29: the
    broadcast ops were 20% of :func:`em_gradient` at N = 20,720, J = 2).
    """
    out = np.empty(a.shape) if out is None else out
    if a.ndim == 1 or not isinstance(b, np.ndarray) or b.ndim == 0:
        return op(a, b, out=out)
    for j in range(a.shape[1]):
        op(a[:, j], b[j], out=out[:, j])
    return out


def _times_rows(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``a *= u[:, None]`` (``a *= u`` for a vector), column by column (see :func:`_columnwise`); returns ``a``."""
    if a.ndim == 1:
        a *= u
    else:
        for j in range(a.shape[1]):
            np.multiply(a[:, j], u, out=a[:, j])
    return a


@blas_single_thread
def em_gradient(
    history: list, pi_final: np.ndarray, f: np.ndarray, n_cols: int, *, dtype: type = np.float32
) -> np.ndarray:
    """∂(f_j^T π_T)/∂p_r for an EM run recorded by ``em(..., history=[])``, shape (n_cols, J).

    Reverse mode through every iteration run (see the module docstring):
    two sweeps over P(r|R) per iteration, like a forward EM step.

    Parameters
    ----------
    history : list
        As filled by :func:`em`.
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

        w = np.empty(lam.shape)
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
            w = _times_rows(_columnwise(np.subtract, lam, c, out=w), u)  # (λ - c) ⊙ u
            lam, s_t = _backward_step(mat, w, rho * col(p * inv_q**2), steps[t - 1][0], dtype)
            c = pi_t @ lam
            nxt = pi_t
    out = np.zeros((n_cols, n_out))
    out[columns] = grad.reshape(grad.shape[0], n_out)
    return out


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
        As filled by :func:`em`.
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

"""Thin adapter in front of scikit-optimize (unmaintained upstream).

Only this module imports ``skopt``. It turns simrec's :class:`~.space.Dim`
into skopt dimensions and asks a freshly built ``skopt.Optimizer`` (the same
Gaussian-process machinery ``skopt.gp_minimize`` drives) for the next point,
given every trial so far. Rebuilding the optimizer at every step from the trial
log and a per-step seed makes the search stateless: an interrupted calibration
resumes to exactly the trials of an uninterrupted one.

Known incompatibilities handled here: skopt 0.10.2 returns numpy scalar types
(``np.int64``) and emits deprecation warnings under numpy 2 / scikit-learn
1.9; values are converted to Python ``int``/``float`` and the warnings are
silenced locally.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .space import Dim

__all__ = ["gp_propose"]


def _to_skopt(dims: Sequence[Dim]) -> list[Any]:
    from skopt.space import Integer, Real

    out = []
    for d in dims:
        cls = Integer if d.integer else Real
        out.append(cls(d.low, d.high, prior="log-uniform" if d.log else "uniform", name=d.name))
    return out


def gp_propose(
    dims: Sequence[Dim],
    xs: Sequence[Sequence[float]],
    ys: Sequence[float],
    *,
    random_state: int,
    acq_func: str = "EI",
    n_candidates: int = 2_000,
) -> list[float]:
    """Next point of a GP-EI search given the evaluated points ``xs`` and values ``ys``.

    Parameters
    ----------
    dims : sequence of Dim
    xs : sequence of points (each a sequence in ``dims`` order), at least one
    ys : sequence of float, objective values (minimised)
    random_state : int
        Seeds the GP fit and the acquisition optimiser.
    acq_func : str, default "EI"
        skopt acquisition function; "EI" is deterministic for a given state
        (``gp_minimize``'s default "gp_hedge" keeps gains across steps, which a
        stateless search cannot).
    n_candidates : int, default 2000
        Random points at which the acquisition is evaluated before L-BFGS
        polishing from the best 2 (skopt's ``n_points``,
        ``n_restarts_optimizer``).

    Notes
    -----
    BLAS is limited to one thread here: the GP is small (at most a few hundred
    points), so threads only contend with the parallel sweep cells and
    slowed a step down many times when two sweep workers oversubscribed the
    cores (measured: docs/design.md §9).
    """
    from skopt import Optimizer
    from threadpoolctl import threadpool_limits

    if not xs:
        raise ValueError("`xs` must hold at least one evaluated point; got none")
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        opt = Optimizer(
            _to_skopt(dims),
            base_estimator="GP",
            acq_func=acq_func,
            acq_optimizer="lbfgs",
            n_initial_points=0,
            random_state=int(random_state),
            acq_optimizer_kwargs={"n_points": n_candidates, "n_restarts_optimizer": 2, "n_jobs": 1},
        )
        clipped = [[min(max(float(v), d.low), d.high) for v, d in zip(x, dims)] for x in xs]
        clipped = [[int(round(v)) if d.integer else v for v, d in zip(x, dims)] for x in clipped]
        opt.tell(clipped, [float(y) for y in ys])
        nxt = opt.ask()
    return [int(v) if d.integer else float(v) for v, d in zip(nxt, dims)]

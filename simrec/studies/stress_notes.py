"""The warnings of ``simrec stress``: what its tables rest on, said once in the terminal (and in the tables).

* :func:`few_users_note` — fewer than :data:`MIN_USERS` evaluated users;
* :func:`convergence_note` — iterative fits stopped at their cap;
* :func:`naive_cutoff_note` — naive estimates at cutoffs K >= a fixed sample size n.
"""

from __future__ import annotations

from simrec.sampling import AdaptiveMLE, Estimator, Naive, fit_limits
from simrec.stress.harness import StressConfig, StressResult
from simrec.stress.sources import RankSource

__all__ = ["MIN_USERS", "convergence_note", "few_users_note", "naive_cutoff_note"]


#: Below this many evaluated users, estimator comparisons are flagged as resting on too few users.
MIN_USERS = 30


def few_users_note(source: RankSource) -> str | None:
    """The warning for tables that rest on fewer than :data:`MIN_USERS` users of some recommender, or None.

    Decision (issue 12): the estimators' errors, orderings and winners are
    averages over repeats of a sampling of *these* users; with a handful of
    users they describe those users' ranks, not a recommender, so the tables
    say so (a ``warning`` column) and so does the terminal.
    """
    few = {r.name: r.n_users for r in source.recommenders if r.n_users < MIN_USERS}
    if not few:
        return None
    listed = ", ".join(f"{name} ({m})" for name, m in few.items())
    return f"fewer than {MIN_USERS} evaluated users for {listed}: these numbers rest on too few users to mean much"


def convergence_note(results: list[StressResult], config: StressConfig) -> str | None:
    """The warning for estimators whose iterative fits stopped at their cap in some repeats, or None.

    The tables record it per cell (``n_iter``, ``converged``); the terminal
    says it once, per estimator over every task: how many repeats stopped at
    the cap, the fit, the cap and the tolerance (issue 22; the default cap
    is issue 27's decision and does not move here).
    """
    every: list[Estimator | AdaptiveMLE] = [*config.estimators, AdaptiveMLE()]
    objects = {e.name: e for e in every}
    bad: dict[str, list[int]] = {}
    for r in results:
        if r.converged is None:
            continue
        for j, name in enumerate(r.estimators):
            cnt = bad.setdefault(name, [0, 0])
            cnt[0] += int((~r.converged[:, j]).sum())
            cnt[1] += r.converged.shape[0]
    groups: dict[tuple[str, int, float], list[str]] = {}
    for name, (k, total) in bad.items():
        limits = fit_limits(objects[name], config.max_iter) if name in objects else None
        if k and limits is not None:
            what, cap, tol = limits
            groups.setdefault((what.split(" of ")[0], cap, tol), []).append(f"{name} {k}/{total}")
    if not groups:
        return None
    parts = [
        f"{what} at {'max_iter = ' if what == 'EM' else ''}{cap}{'' if what == 'EM' else ' iterations'}, "
        f"tolerance {tol:g}: {', '.join(names)}"
        for (what, cap, tol), names in groups.items()
    ]
    return (
        "iterative fits stopped at their cap before meeting their tolerance (repeats stopped / repeats): "
        + "; ".join(parts)
        + ". Their estimates are where the iterations stopped (columns n_iter and converged of estimates.parquet "
        "and summary.csv); raise [estimators] max_iter for the EM fits"
    )


def naive_cutoff_note(
    config: StressConfig, sizes: list[int] | tuple[int, ...], schemes: list[str] | tuple[str, ...]
) -> str | None:
    """The warning for naive estimates at cutoffs K >= a fixed sample size n, or None (decision, issue 22).

    A sampled list of n items has every rank within a cutoff K >= n, so the
    naive estimate ignores the cutoff: Recall@K is 1 for every recommender.
    The rows are kept (they are what naive computes); this says so.
    """
    if not any(isinstance(e, Naive) for e in config.estimators) or not config.rank_metrics():
        return None
    small = sorted(n for n in set(sizes) if n <= config.k_max)
    if not small or all(s == "adaptive" for s in schemes):
        return None
    return (
        f"naive at sample size(s) n = {', '.join(map(str, small))} <= k_max = {config.k_max}: a sampled list of n "
        "items has every rank within a cutoff K >= n, so the naive rows with k >= n ignore the cutoff "
        "(Recall@K = 1 for every recommender)"
    )

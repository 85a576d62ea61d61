"""``simrec stress SCENARIO --out DIR``: the command-line boundary of the stress harness.

Validates the scenario (nothing runs on an invalid one), runs it
(:func:`~simrec.stress.runner.run_stress_scenario`) and prints a short
summary: per scheme and size, the mean absolute relative error at K = 10 of
each estimator (averaged over recommenders) and how often it picks the exact
winner. User errors (scenario, data, ranks file, output folder) go to ``fail``
(prints and exits 2).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

__all__ = ["stress_command", "summary_frame"]


def summary_frame(outcome):
    """Mean |relative error| at K = 10 per (scheme, n, estimator, metric), with the winner share."""
    import pandas as pd

    est = outcome.estimates
    k = 10 if (est["k"] == 10).any() else int(est["k"].max())
    e = est[est["k"] == k].assign(abs_rel=lambda f: f["rel_error"].abs())
    table = e.pivot_table(index=["scheme", "n", "estimator"], columns="metric", values="abs_rel", aggfunc="mean",
                          sort=False)
    if len(outcome.winners):
        w = outcome.winners[outcome.winners["k"] == k]
        win = w.groupby(["scheme", "n", "estimator"], sort=False)["share_correct"].mean().rename("winner_share")
        table = table.join(win)
    return pd.DataFrame(table), k


def stress_command(
    scenario: str,
    out: Path,
    *,
    jobs: int = 1,
    backend: str | None = None,
    quiet: bool = False,
    figures: bool = True,
    fail: Callable[[str], None],
) -> None:
    """Validate, run and summarise a stress scenario (see the module docstring)."""
    from simrec.parallel import BACKENDS
    from simrec.runner import OutputDirError
    from simrec.scenario import ScenarioError
    from simrec.stress.runner import run_stress_scenario
    from simrec.stress.sources import RanksFileError
    from simrec.stress.spec import load_stress_scenario

    if backend is not None and backend not in BACKENDS:
        fail(f"`--backend` must be one of {', '.join(BACKENDS)}; got {backend!r}")
        return
    try:
        sc, path = load_stress_scenario(scenario)
    except ScenarioError as exc:
        fail(str(exc))
        return
    try:
        outcome = run_stress_scenario(sc, path, out, n_jobs=jobs, backend=backend, progress=not quiet,
                                      figures=figures)
    except (OutputDirError, RanksFileError) as exc:
        fail(str(exc))
        return
    except ValueError as exc:  # e.g. a size impossible for the candidate sets found
        fail(f"{path}: {exc}")
        return
    if quiet:
        return
    from rich.console import Console
    from rich.table import Table

    frame, k = summary_frame(outcome)
    console = Console(width=max(110, Console().width))
    table = Table(title=f"Mean |relative error| at K = {k} over recommenders, and share of repeats picking the "
                        "exact winner", title_justify="left")
    for col in ("scheme", "n", "estimator", *frame.columns):
        table.add_column(str(col), justify="left" if col in ("scheme", "estimator") else "right")
    for (scheme, n, est), row in frame.iterrows():
        table.add_row(str(scheme), str(n), str(est), *[f"{v:.3f}" for v in row.to_numpy(dtype=float)])
    console.print(table)
    console.print(f"{outcome.computed} task(s) computed, {outcome.reused} reused, {outcome.seconds:.1f} s -> "
                  f"{outcome.out}")

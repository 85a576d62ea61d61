"""The summaries the ``simrec`` commands print after a job (:mod:`simrec.cli`; split from it, issue 23).

The mean-error table of ``simrec run``, the estimator table and its notes of
``simrec stress`` (coverage of the intervals included) and the note on a
calibrated cell's search. Each table goes to stdout and to ``run.log``. Part
of the CLI layer: the library never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from .calibration.sweep import CellResult
    from .studies.run import RunOutcome
    from .studies.stress import StressOutcome

from ._cli_support import _LOG


def _print_run_summary(outcome: RunOutcome, n: int) -> None:
    """The mean error table; ``n`` is the list length N (headers say Precision@50, as the figures do).

    Metrics and worlds are named by :mod:`simrec.labels`, as in the figures and the assessment report.
    """
    from rich.console import Console
    from rich.table import Table

    from .labels import column_label, metric_label, world_label

    console = Console(width=max(100, Console().width), record=True)
    s = outcome.summary
    err = s[s["kind"] == "error"]
    metrics = list(dict.fromkeys(outcome.results["metric"]))
    table = Table(
        title=f"Mean missing-data error (observed − true) over replicates; @N: top-N lists, N = {n}",
        title_justify="left",
    )
    table.add_column(column_label("world"))
    table.add_column(column_label("recommender"))
    for m in metrics:
        table.add_column(metric_label(m, n), justify="right")
    means = err.set_index(["world", "recommender", "metric"])["mean"]
    for world in dict.fromkeys(outcome.results["world"]):
        for rec in dict.fromkeys(outcome.results["recommender"]):
            table.add_row(
                world_label(world), rec, *[f"{means.get((world, rec, m), float('nan')):+.3f}" for m in metrics]
            )
    console.print(table)
    console.print(
        f"{outcome.computed} task(s) computed, {outcome.reused} reused, {outcome.seconds:.1f} s -> {outcome.out}"
    )
    _LOG["lines"].append(console.export_text().rstrip("\n"))


def _stress_summary_frame(outcome: StressOutcome) -> tuple[pd.DataFrame, int]:
    """Mean |relative error| at K = 10 per (scheme, n, estimator, metric), with the winner share."""
    import pandas as pd

    est = outcome.estimates
    k = 10 if (est["k"] == 10).any() else int(est["k"].max())
    e = est[(est["k"] == k) | est["k"].isna()].assign(abs_rel=lambda f: f["rel_error"].abs())  # + AUC, full AP
    table = e.pivot_table(
        index=["scheme", "n", "estimator"], columns="metric", values="abs_rel", aggfunc="mean", sort=False
    )
    if len(outcome.winners):
        w = outcome.winners[outcome.winners["k"] == k]
        win = w.groupby(["scheme", "n", "estimator"], sort=False)["share_correct"].mean().rename("winner_share")
        table = table.join(win)
    return pd.DataFrame(table), k


def _stress_summary_notes(frame: pd.DataFrame) -> list[str]:
    """Footnotes for what a reader of the stress summary would otherwise stumble on (—, huge errors)."""
    import numpy as np

    notes = []
    metric_cols = [c for c in frame.columns if c != "winner_share"]
    values = frame[metric_cols].to_numpy(dtype=float)
    if np.isnan(values).any():
        notes.append(
            "—: not defined. Li & Jin's mappings (mapping:*) map a sampled cutoff k to a global one and "
            "estimate recall / hit ratio only, not NDCG or AP; a relative error is also undefined where "
            "the exact metric is 0."
        )
    huge = sorted({str(est) for (_, _, est), row in zip(frame.index, values) if np.nanmax(row, initial=0) > 10})
    if huge:
        why = {
            "naive": "naive applies the metric to the sampled rank as if it were the global rank",
            "LS": "LS (Krichene & Rendle's unconstrained least squares, eqs. 21-23) puts no bound on its per-rank "
            "values; CLS is LS with the ordering constraint",
        }
        notes.append(
            f"{', '.join(huge)}: mean |relative error| above 10 (1000%) in a column: relative errors divide "
            "by the exact metric, which is small at small K. " + " ".join(f"{v}." for k, v in why.items() if k in huge)
        )
    return notes


def _interval_notes(coverage: pd.DataFrame | None) -> list[str]:
    """The footnote naming the estimators whose bootstrap intervals are known not to cover (runs with n_boot)."""
    if coverage is None or not len(coverage) or "coverage_known_to_fail" not in coverage:
        return []
    flagged = coverage.loc[coverage["coverage_known_to_fail"].fillna(False).astype(bool), "estimator"]
    if flagged.empty:
        return []
    return [
        f"Intervals (coverage.csv): {', '.join(dict.fromkeys(map(str, flagged)))}: coverage known to fail - the "
        "bootstrap interval measures sampling variability only and these estimators' bias does not shrink with "
        "the number of users (column coverage_known_to_fail)."
    ]


def _print_stress_summary(outcome: StressOutcome) -> None:
    from rich.console import Console
    from rich.table import Table

    frame, k = _stress_summary_frame(outcome)
    console = Console(width=max(110, Console().width), record=True)
    table = Table(
        title=f"Mean |relative error| at K = {k} over recommenders, and share of repeats picking the exact winner",
        title_justify="left",
    )
    for col in ("scheme", "n", "estimator", *frame.columns):
        table.add_column(str(col), justify="left" if col in ("scheme", "estimator") else "right")
    for (scheme, n, est), row in frame.iterrows():
        table.add_row(
            str(scheme), str(n), str(est), *["—" if v != v else f"{v:.3f}" for v in row.to_numpy(dtype=float)]
        )
    console.print(table)
    for note in _stress_summary_notes(frame) + _interval_notes(outcome.coverage):
        console.print(note, soft_wrap=True)
    console.print(
        f"{outcome.computed} task(s) computed, {outcome.reused} reused, {outcome.seconds:.1f} s -> {outcome.out}"
    )
    _LOG["lines"].append(console.export_text().rstrip("\n"))


def _search_note(cell: CellResult) -> str:
    """Where a calibrated cell's best trial is, what "refused" trials are, and what was resumed, in words."""
    n = cell.n_trials
    note = f"at trial {cell.best.index} (0-based, as in trials.jsonl) of {n}"
    if cell.n_refused:
        note += (
            f"; {cell.n_refused} of the {n} trials were refused, i.e. not simulated: their parameters would "
            "exceed the size guard (max_pairs, items) or gave an undefined statistic (reasons in trials.jsonl); "
            "the search scores them as worse than the worst evaluated trial"
        )
    if cell.resumed_from >= n:
        note += f"; all {n} trials were read from the trial log of an earlier run (nothing recomputed)"
    elif cell.resumed_from:
        note += (
            f"; resumed: trials 0-{cell.resumed_from - 1} were read from the trial log of an earlier run, "
            f"{cell.resumed_from}-{n - 1} computed now"
        )
    return note

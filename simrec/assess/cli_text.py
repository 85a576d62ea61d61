"""The closing text of ``simrec assess`` (plain lines; the command line prints them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from simrec.studies.assess import AssessOutcome

__all__ = ["assessment_lines", "print_assessment", "interval_fails", "known_to_fail_note"]


def interval_fails(row: Mapping[str, Any]) -> bool:
    """True when an advice or estimators row marks its estimator's interval as known to fail (NA: False)."""
    v = row.get("coverage_known_to_fail")
    return False if pd.isna(v) else bool(v)


def known_to_fail_note(estimators: list[str]) -> str:
    """The footnote for estimators whose bootstrap interval is known not to cover the metric."""
    names = ", ".join(dict.fromkeys(estimators))
    return (
        f"{names}: the bootstrap interval measures sampling variability only, and this estimator's bias does not "
        "shrink with the number of users, so its coverage of the metric is known to fail; report its point "
        "estimate with the sampling error above, not its interval as a confidence interval "
        "(coverage_known_to_fail in estimators.csv and advice.csv)."
    )


def assessment_lines(outcome: AssessOutcome) -> list[str]:
    """What the assessment says, in a few lines: errors per algorithm x metric, ranking, advice, where the report is."""
    lines = ["Expected error of one evaluation (mean [interval]): missing data | sampling | total"]
    e = outcome.errors
    pooled = e[(e["source"] == "all worlds") | (e["component"] != "missing data")]
    for (rec, metric), g in pooled.groupby(["recommender", "metric"], sort=False):
        parts = []
        for comp in ("missing data", "sampling", "total"):
            r = g[g["component"] == comp]
            parts.append(
                "n/a"
                if r.empty or r["mean"].isna().all()
                else f"{r['mean'].iloc[0]:+.4f} [{r['lower'].iloc[0]:+.4f}, {r['upper'].iloc[0]:+.4f}]"
            )
        lines.append(f"  {rec:>12} {metric:>18}: " + " | ".join(parts))
    lines.append("P(observed ranking of the algorithms = true ranking), all worlds:")
    for _, r in outcome.ranking[outcome.ranking["source"] == "all worlds"].iterrows():
        lines.append(
            f"  {r['metric']:>18}: {r['probability']:.2f} [{r['lower']:.2f}, {r['upper']:.2f}] "
            f"({r['agree']}/{r['n']}; true order mostly {r['true_order']})"
        )
    lines.append("Report:")
    flagged = []
    for _, r in outcome.advice.iterrows():
        what = (
            f"n = {int(r['n'])} sampled ({r['scheme']}), estimator {r['estimator']}"
            if r["report"] == "sampled"
            else "the full-ranking metric"
        )
        if r["report"] == "sampled" and interval_fails(r):
            what += " (its interval: coverage known to fail *)"
            flagged.append(str(r["estimator"]))
        lines.append(f"  {r['metric']:>18}: {what}")
    if flagged:
        lines.append(f"  * {known_to_fail_note(flagged)}")
    lines.append(
        f"{outcome.computed} task(s) computed, {outcome.reused} reused, {outcome.seconds:.1f} s -> "
        f"{outcome.out / 'report.html'}"
    )
    return lines


def print_assessment(outcome: AssessOutcome, echo: Callable[[str], None]) -> None:
    """Print :func:`assessment_lines` with ``echo``."""
    for line in assessment_lines(outcome):
        echo(line)

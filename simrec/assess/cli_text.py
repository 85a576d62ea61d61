"""The closing text of ``simrec assess`` (plain lines; the command line prints them).

It is the report page's bottom line, sentence for sentence
(:meth:`simrec.assess.bottom_line.BottomLine.lines`), then where the page is:
the terminal and the page cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simrec.assess.advice import interval_fails, known_to_fail_note

__all__ = ["assessment_lines", "print_assessment", "interval_fails", "known_to_fail_note"]


def assessment_lines(outcome: Any) -> list[str]:  # a simrec.studies.AssessOutcome (library code never imports studies)
    """The bottom line of an :class:`~simrec.studies.AssessOutcome`, then the work done and the report's path."""
    lines = [] if outcome.bottom_line is None else outcome.bottom_line.lines()
    lines.append(
        f"{outcome.computed} task(s) computed, {outcome.reused} reused, {outcome.seconds:.1f} s. "
        f"The evidence: {outcome.out / 'report.html'}"
    )
    return lines


def print_assessment(outcome: Any, echo: Callable[[str], None]) -> None:
    """Print :func:`assessment_lines` with ``echo``."""
    for line in assessment_lines(outcome):
        echo(line)

"""``simrec assess``'s significance step: is "A is significantly better than B" right at my protocol?

For every pair of the user's algorithms, every metric of the protocol, and the
paired t and Wilcoxon tests (the two researchers report most), the
significance phase (:mod:`simrec.studies.significance`) runs in the
calibrated worlds at the user's protocol: ``full`` for a full-ranking
protocol, ``sampled_naive`` with the protocol's negatives otherwise (the
metrics with a leave-one-out rank function). ``significance.csv`` gives the
per-world rows of :func:`simrec.significance.truth_table` and an
``all worlds`` row per pair x metric x test pooling the counts:

.. math:: P(\\text{right} \\mid \\text{significant}) =
          \\frac{\\sum_w \\#\\{p \\le \\alpha,\\ \\text{sign right}\\}_w}{\\sum_w \\#\\{p \\le \\alpha\\}_w}

with a Wilson interval. Decision: a warning ("significant and wrong is
likely") is raised where the pooled P(right | significant) is below
:data:`~simrec.assess.significance.LIKELY_WRONG` = 0.5 with at least one significant replicate, e.g. the
thesis's worlds where Popular looks significantly better than Oracle on the
observed data while Oracle is truly better.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simrec.assess.significance import LIKELY_WRONG, likely_wrong
from simrec.config.assess import ASSESS_TESTS, Assessment
from simrec.config.run import Scenario
from simrec.report import wilson_interval
from simrec.rundir import RunDir
from simrec.studies.phases import Phases
from simrec.studies.significance import significance_phase
from simrec.tasks import Backend

__all__ = ["AssessSignificance", "assess_significance", "likely_wrong_notes", "LIKELY_WRONG", "ASSESS_TESTS"]


@dataclass(frozen=True)
class AssessSignificance:
    """The step's table (``significance.csv``) and its warnings."""

    table: pd.DataFrame
    warnings: tuple[str, ...]


def _pooled(table: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """One ``all worlds`` row per protocol x metric x pair x test: the counts summed over worlds."""
    keys = ["protocol", "metric", "a", "b", "test"]
    sums = table.groupby(keys, sort=False)[["right_given_significant_count", "right_given_significant_n"]].sum()
    sums = sums.reset_index()
    right, n = sums["right_given_significant_count"].to_numpy(), sums["right_given_significant_n"].to_numpy()
    low, high = wilson_interval(right, np.maximum(n, 1), confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, right / np.maximum(n, 1), np.nan)
    return sums.assign(
        world="all worlds",
        right_given_significant=rate,
        right_given_significant_low=np.where(n > 0, low, np.nan),
        right_given_significant_high=np.where(n > 0, high, np.nan),
    )


def assess_significance(
    rd: RunDir, assessment: Assessment, scenario: Scenario, backend: Backend, progress: bool, max_pairs: int | None
) -> AssessSignificance:
    """Run the step in the assessment folder ``rd`` (shards in ``significance/``); write ``significance.csv``.

    Parameters
    ----------
    rd : RunDir
        The assessment's folder.
    assessment : Assessment
    scenario : Scenario
        The worlds' run scenario (validated and sized: ``_worlds_scenario``).
    backend, progress, max_pairs
        As for the worlds' run.
    """
    spec = assessment.significance_spec()
    if spec is None:
        return AssessSignificance(pd.DataFrame(), ())
    phases = Phases(rd, backend, f"{assessment.spec.name} significance", progress)
    evaluation = scenario.evaluation.build()
    per_world = significance_phase(
        phases, spec, scenario.worlds(max_pairs), evaluation, scenario.seed, scenario.replicates, rd
    )
    pooled = _pooled(per_world, spec.confidence)
    table = pd.concat([per_world, pooled], ignore_index=True)
    rd.write_csv("significance.csv", table)
    return AssessSignificance(table, likely_wrong_notes(pooled))


def likely_wrong_notes(pooled: pd.DataFrame) -> tuple[str, ...]:
    """One warning per pooled row whose P(right | significant) < LIKELY_WRONG (with a significant replicate)."""
    notes = []
    for _, r in pooled.iterrows():
        if likely_wrong(r):
            notes.append(
                f"significance: {r['a']} vs {r['b']} on {r['metric']} ({r['test']}, {r['protocol']} protocol): "
                f"a significant result is right only {r['right_given_significant']:.0%} of the time "
                f"({r['right_given_significant_low']:.0%}-{r['right_given_significant_high']:.0%}) in the calibrated "
                "worlds; 'significant and wrong' is likely"
            )
    return tuple(notes)

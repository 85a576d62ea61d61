"""The report's significance check: per pair of algorithms, is a significant paired test at the protocol right?

Reads ``significance.csv`` (:func:`simrec.studies.assess_significance.assess_significance`:
per-world rows of :func:`simrec.significance.truth_table` and one ``all
worlds`` row per protocol x metric x pair x test pooling their counts) and
gives the :class:`~simrec.assess.bottom_line.Finding` of the ``significance``
check of :data:`~simrec.assess.bottom_line.CHECKS`: one table per pair of the
user's algorithms (a section of the page each), a row per metric x test with

.. math:: P(\\text{right} \\mid \\text{significant}) =
          \\frac{\\#\\{p \\le \\alpha,\\ \\text{sign} = \\text{true sign}\\}}{\\#\\{p \\le \\alpha\\}}

pooled over the calibrated worlds, with its Wilson interval, how often the
test was significant at all, the true order in each world, and the warning
"significant and wrong is likely" where the pooled rate is below
:data:`LIKELY_WRONG` with at least one significant replicate (:func:`likely_wrong`,
also the rule of the terminal's notes,
:func:`~simrec.studies.assess_significance.likely_wrong_notes`).

Decision (verdict): ``"warning"`` when any row warns (the bottom line then
repeats the summary among its warnings), else ``"ok"``; an empty table (fewer
than two algorithms, or no metric the protocol can test) gives no finding:
the check is "not checked".
"""

from __future__ import annotations

import pandas as pd

from simrec.assess.bottom_line import Finding
from simrec.assess.formatting import format_share
from simrec.labels import metric_label

__all__ = ["significance_finding", "likely_wrong", "LIKELY_WRONG", "TEST_LABELS"]

#: Below this pooled P(right | significant), "significant and wrong" is likely (with a significant replicate).
LIKELY_WRONG = 0.5

#: The tests by the name a reader knows.
TEST_LABELS: dict[str, str] = {
    "paired_t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank",
    "sign": "sign test",
    "bootstrap_percentile": "bootstrap (percentile)",
    "bootstrap_bca": "bootstrap (BCa)",
    "permutation": "permutation test",
}

_WARN = "significant and wrong is likely"


def likely_wrong(row: pd.Series) -> bool:
    """Whether a pooled row of ``significance.csv`` warns: significant at least once, and right < LIKELY_WRONG."""
    return bool(row["right_given_significant_n"] > 0 and row["right_given_significant"] < LIKELY_WRONG)


def _truths(per_world: pd.DataFrame, r: pd.Series) -> str:
    """The true order of A and B in each world (``"A > B"`` written with the algorithms' names)."""
    rows = per_world[
        (per_world["protocol"] == r["protocol"])
        & (per_world["metric"] == r["metric"])
        & (per_world["a"] == r["a"])
        & (per_world["b"] == r["b"])
        & (per_world["test"] == r["test"])
    ]
    names = {"A > B": f"{r['a']} better", "A < B": f"{r['b']} better", "no difference": "no difference"}
    return "; ".join(f"{w}: {names.get(t, t)}" for w, t in zip(rows["world"], rows["truth"]))


def _pair_table(pooled: pd.DataFrame, per_world: pd.DataFrame, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Metric": [metric_label(m, n) for m in pooled["metric"]],
            "Test": [TEST_LABELS.get(t, t) for t in pooled["test"]],
            "Significant in": [
                f"{int(r['right_given_significant_n'])} of {int(r['significant_n'])}" for _, r in pooled.iterrows()
            ],
            "P(right | significant)": [
                format_share(
                    int(r["right_given_significant_count"]),
                    int(r["right_given_significant_n"]),
                    r["right_given_significant_low"],
                    r["right_given_significant_high"],
                )
                for _, r in pooled.iterrows()
            ],
            "True order": [_truths(per_world, r) for _, r in pooled.iterrows()],
            "Warning": [_WARN if likely_wrong(r) else "" for _, r in pooled.iterrows()],
        }
    )


def significance_finding(table: pd.DataFrame, n: int, confidence: float = 0.95) -> Finding | None:
    """The ``significance`` check's finding from ``significance.csv`` (module docstring); None when it is empty.

    Parameters
    ----------
    table : DataFrame
        ``significance.csv`` of an assessment (per-world and ``all worlds`` rows).
    n : int
        The protocol's list length (for the metrics' labels).
    confidence : float, default 0.95
        The level of the Wilson intervals in ``table`` (for the text).
    """
    if table.empty:
        return None
    pooled = table[table["world"] == "all worlds"].copy()
    per_world = table[table["world"] != "all worlds"]
    # how many simulated evaluations each pooled row rests on (significant or not)
    keys = ["protocol", "metric", "a", "b", "test"]
    counts = per_world.groupby(keys, sort=False)["n_replicates"].sum().rename("significant_n").reset_index()
    pooled = pooled.drop(columns=["significant_n"], errors="ignore").merge(counts, on=keys, how="left")
    tables = tuple(
        (f"{a} vs {b}", _pair_table(rows, per_world, n)) for (a, b), rows in pooled.groupby(["a", "b"], sort=False)
    )
    wrong = [r for _, r in pooled.iterrows() if likely_wrong(r)]
    protocol = ", ".join(dict.fromkeys(pooled["protocol"]))
    level = f"{confidence:.0%}"
    paragraphs = (
        f"Per pair of your algorithms, the paired tests run on each simulated evaluation at your protocol "
        f"({protocol}) and judged against the calibrated worlds' true difference: how often the test was "
        f"significant (p <= alpha), and among those how often it named the truly better algorithm, "
        f"P(right | significant), pooled over the worlds with a Wilson {level} interval. Below "
        f"{LIKELY_WRONG:.0%}, a significant result on your data is more likely wrong than right.",
    )
    if wrong:
        r = min(wrong, key=lambda r: r["right_given_significant"])
        summary = (
            f"Significance: {len(wrong)} of {len(pooled)} pair x metric x test combinations are likely "
            f"'significant and wrong'; worst: {r['a']} vs {r['b']} on {metric_label(r['metric'], n)} "
            f"({TEST_LABELS.get(r['test'], r['test'])}), a significant result is right only "
            f"{r['right_given_significant']:.0%} [{r['right_given_significant_low']:.0%}, "
            f"{r['right_given_significant_high']:.0%}] of the time in the calibrated worlds."
        )
        return Finding("warning", summary, paragraphs, tables=tables)
    sig = pooled[pooled["right_given_significant_n"] > 0]
    if sig.empty:
        summary = (
            "Significance: no paired test was significant in any simulated evaluation; the differences between "
            "your algorithms are too small to detect at this size."
        )
    else:
        low = sig.loc[sig["right_given_significant"].idxmin()]
        share = format_share(
            int(low["right_given_significant_count"]),
            int(low["right_given_significant_n"]),
            low["right_given_significant_low"],
            low["right_given_significant_high"],
        )
        summary = (
            f"Significance: where a paired test between your algorithms was significant in the calibrated "
            f"worlds, it named the truly better one in {share} of those simulated evaluations in the worst "
            f"case ({low['a']} vs {low['b']} on {metric_label(low['metric'], n)}, "
            f"{TEST_LABELS.get(low['test'], low['test'])})."
        )
    return Finding("ok", summary, paragraphs, tables=tables)

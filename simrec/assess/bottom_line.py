"""The assessment's bottom line: which numbers to trust, how sure the ranking is, what to report instead.

The report page opens with it and the terminal prints it (the same sentences,
from :meth:`BottomLine.lines`); ``bottom_line.json`` holds it for machines
(:meth:`BottomLine.to_dict`). It reads the report's tables only:

* **values** — per algorithm x metric, the expected error of the number the
  user would publish (the total of :mod:`simrec.assess.errors`, or the
  missing-data error alone where the sampling error is not measured), with its
  interval, and relative to the metric's true value (its mean against the
  users' true preferences in the calibrated worlds);
* **ranking** — per metric, the probability that the observed order of the
  algorithms is the true one (:mod:`simrec.assess.ranking`), with a warning
  when fewer than :data:`MIN_EVALUATIONS` simulated evaluations back it;
* **report** — per metric, what to report (:mod:`simrec.assess.advice`), said
  against the protocol's own sample size;
* **checks** made elsewhere (:data:`CHECKS`): whether the worlds order the
  algorithms as the data does, whether the differences are significant, and
  whether a missing-data correction helps. Each is a :class:`Finding` given
  by its study, or is said to be not checked; none is computed here.

Decisions (the verdict rules; the tolerance is the assessment's
``max_rel_rmse``, the one the estimator rule uses, default 0.1):

* a value is **within tolerance** when its error's whole interval lies within
  ± tolerance x |true value|; otherwise **too high** or **too low** when the
  interval excludes 0, else **uncertain** (the interval straddles 0 but is
  wider than the tolerance). Without a value (NaN or 0) only the sign rules
  apply. Where only the missing-data error is measured, "within tolerance" is
  downgraded to uncertain (the sampling error could still be large).
* a ranking is **likely right** when the lower end of its Wilson interval is
  at least :data:`LIKELY` (0.8), **likely wrong** when the upper end is below
  0.5, else **uncertain**; 30/30 agreeing evaluations give a lower end of 0.89,
  16/16 of 0.81, 6/6 of 0.61 (so 6 agreeing evaluations are not enough).
* one protocol (issue 24): the worlds use the data's split, but the sampled
  evaluation is always leave-one-out (the estimators need one held-out item),
  so a holdout protocol with sampled negatives gets a warning that its
  sampling error describes a leave-one-out sampled evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from simrec.assess.advice import interval_fails, known_to_fail_note
from simrec.assess.formatting import format_interval, format_number, format_percent, format_share
from simrec.labels import estimator_label, metric_label

__all__ = [
    "ReportFacts",
    "Finding",
    "CHECKS",
    "ValueVerdict",
    "RankingVerdict",
    "BottomLine",
    "bottom_line",
    "MIN_EVALUATIONS",
    "LIKELY",
]

#: Fewer simulated evaluations than this behind a probability get a warning.
MIN_EVALUATIONS = 30
#: A ranking is "likely right" when its interval's lower end is at least this.
LIKELY = 0.8

#: The checks other studies make, by key: (question, what the page says while it is not checked).
CHECKS: dict[str, tuple[str, str]] = {
    "sim_to_real": (
        "Do the calibrated worlds order your algorithms as your data does?",
        "Not checked in this report: whether the calibrated worlds order your algorithms as your data does. If they "
        "do not, the errors above describe the worlds more than your data.",
    ),
    "significance": (
        "Are the differences between your algorithms significant?",
        "Not checked in this report: whether the differences between your algorithms are statistically "
        "significant, and how often a significance test on one evaluation would be wrong.",
    ),
    "missing_data_correction": (
        "Can the missing-data error be corrected?",
        "Not checked in this report: whether a missing-data correction would bring the absolute values closer to "
        "the users' true preferences.",
    ),
}


@dataclass(frozen=True)
class ReportFacts:
    """What the assessment was, in the terms the page and the terminal use (built from the assessment file).

    Attributes
    ----------
    name, description, dataset : str
        The assessment's name and description, the dataset's name.
    algorithms : tuple of str
        The user's algorithms, in the file's order.
    protocol : str
        The protocol in words ("holdout of 0.2 of each user's items, lists of N = 10, 100 sampled negatives").
    n : int
        The list length N (metrics are at K = N).
    negatives : int
        The protocol's sampled negatives per user; 0 for a full ranking.
    metrics : tuple of str
        The protocol's metrics.
    sampled_metrics : tuple of str
        Those the sampled evaluation covers (the others have no sampling error measured).
    replicates : int
        Replicates per calibrated world.
    worlds : tuple of str
        The calibrated worlds used.
    confidence, min_coverage, max_rel_rmse : float
        The assessment's interval level and the estimator rule's thresholds.
    split : {"holdout", "last"}, default "holdout"
        The protocol's split (the real data's and the worlds'); the sampled evaluation is leave-one-out
        whatever it is (a warning with ``"holdout"`` and sampled negatives).
    """

    name: str
    description: str
    dataset: str
    algorithms: tuple[str, ...]
    protocol: str
    n: int
    negatives: int
    metrics: tuple[str, ...]
    sampled_metrics: tuple[str, ...]
    replicates: int
    worlds: tuple[str, ...]
    confidence: float = 0.95
    min_coverage: float = 0.85
    max_rel_rmse: float = 0.1
    split: str = "holdout"

    @property
    def level(self) -> str:
        """The interval level as a percentage (``"95%"``)."""
        return f"{100 * self.confidence:g}%"


@dataclass(frozen=True)
class Finding:
    """The result of a check of :data:`CHECKS`, given by the study that makes it (not computed here).

    Attributes
    ----------
    verdict : {"ok", "warning"}
        A warning is repeated among the bottom line's warnings.
    summary : str
        One sentence for the bottom line.
    paragraphs : tuple of str
        The check's section on the page.
    table : DataFrame, optional
        Its evidence, shown under the paragraphs.
    tables : tuple of (str, DataFrame), default ()
        Further evidence as titled tables (e.g. one per pair of algorithms), shown after ``table``.
    lines : tuple of str, default ()
        Plain-text evidence the terminal prints under the summary (the page shows the tables instead).
    records : mapping of str to list of dict, optional
        JSON-ready evidence for ``bottom_line.json`` (no NaN: None), under the check's key.
    caution : str, default ""
        With a warning: one sentence the bottom line puts under its ranking question (the ranking
        probabilities are measured in the worlds the check questions).
    """

    verdict: Literal["ok", "warning"]
    summary: str
    paragraphs: tuple[str, ...] = ()
    table: pd.DataFrame | None = None
    tables: tuple[tuple[str, pd.DataFrame], ...] = ()
    lines: tuple[str, ...] = ()
    records: Mapping[str, list[dict]] = field(default_factory=dict)
    caution: str = ""


Verdict = Literal["within tolerance", "too high", "too low", "uncertain", "not measured"]


@dataclass(frozen=True)
class ValueVerdict:
    """How far off one algorithm's number for one metric is expected to be."""

    recommender: str
    metric: str
    value: float
    error: float
    lower: float
    upper: float
    sampling_measured: bool
    verdict: Verdict

    @property
    def relative(self) -> float:
        """The error relative to the value (NaN without a value)."""
        return self.error / self.value if self.value and math.isfinite(self.value) else math.nan


RankingCall = Literal["likely right", "likely wrong", "uncertain", "not measured"]


@dataclass(frozen=True)
class RankingVerdict:
    """How sure the observed order of the algorithms is, for one metric."""

    metric: str
    agree: int
    n: int
    lower: float
    upper: float
    true_order: str
    verdict: RankingCall
    #: Replicates per world that would give :data:`MIN_EVALUATIONS` evaluations (None when there are enough).
    replicates_needed: int | None

    @property
    def probability(self) -> float:
        return self.agree / self.n if self.n else math.nan


@dataclass(frozen=True)
class BottomLine:
    """The bottom line of an assessment (module docstring); :meth:`BottomLine.lines` is its text."""

    facts: ReportFacts
    values: tuple[ValueVerdict, ...]
    estimator_note: str
    ranking: tuple[RankingVerdict, ...]
    report: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    checks: Mapping[str, Finding | None] = field(default_factory=dict)

    def value_summary(self) -> str:
        """One sentence: how many of the numbers are within tolerance, off, uncertain."""
        tol = f"±{100 * self.facts.max_rel_rmse:g}%"
        counts = {v: sum(x.verdict == v for x in self.values) for v in ("within tolerance", "too high", "too low")}
        off = counts["too high"] + counts["too low"]
        parts = [f"{counts['within tolerance']} of {len(self.values)} numbers are within {tol} of the truth"]
        if off:
            parts.append(f"{off} are off ({counts['too low']} too low, {counts['too high']} too high)")
        rest = len(self.values) - counts["within tolerance"] - off
        if rest:
            parts.append(f"{rest} cannot be placed within {tol}")
        text = "; ".join(parts) + "."
        if off:
            text += (
                " Numbers that are off measure the observed test items, not what users prefer: do not read them as "
                "how good an algorithm is"
            )
            measured = [r for r in self.ranking if r.n]
            if measured and all(r.verdict == "likely right" for r in measured):
                text += "; the comparison of your algorithms is likely right (below)."
            else:
                text += "; whether their comparison holds is below."
        return text

    def ranking_sentence(self, r: RankingVerdict) -> str:
        """One metric's ranking verdict in words."""
        label = metric_label(r.metric, self.facts.n)
        if not r.n:
            return f"{label}: not measured (no simulated evaluation has every algorithm's metric defined)."
        return (
            f"{label}: {r.verdict}. The observed order matches the true one in "
            f"{format_share(r.agree, r.n, r.lower, r.upper)} simulated evaluations; the true order is mostly "
            f"{r.true_order}."
        )

    def lines(self) -> list[str]:
        """The bottom line as plain text lines (the page shows the same sentences)."""
        f = self.facts
        out = ["Bottom line", f"How far off each number is ({f.level} interval of the error of one evaluation):"]
        out.append(f"  {self.value_summary()}")
        width = max((len(metric_label(v.metric, f.n)) for v in self.values), default=0)
        rec_width = max((len(v.recommender) for v in self.values), default=0)
        for v in self.values:
            rel = "" if math.isnan(v.relative) else f" ({format_percent(v.relative)})"
            note = "" if v.sampling_measured else ", missing-data error only"
            out.append(
                f"  {metric_label(v.metric, f.n):<{width}}  {v.recommender:<{rec_width}}  "
                f"{format_interval(v.error, v.lower, v.upper)}{rel}: {v.verdict}{note}"
            )
        if self.estimator_note:
            out.append(f"  {self.estimator_note}")
        out.append("Is the observed ranking of your algorithms the true one?")
        out += [f"  {self.ranking_sentence(r)}" for r in self.ranking]
        out += [f"  ! {c}" for c in self.cautions()]
        out.append("What to report:")
        out += [f"  {metric_label(m, f.n)}: {text}" for m, text in self.report]
        if self.warnings:
            out.append("Warnings:")
            out += [f"  ! {w}" for w in self.warnings]
        out.append("Checks:")
        for key, (_, not_checked) in CHECKS.items():
            finding = self.checks.get(key)
            out.append(f"  {not_checked if finding is None else finding.summary}")
            if finding is not None:
                out += [f"    {line}" for line in finding.lines]
        return out

    def cautions(self) -> list[str]:
        """The checks' cautions about the ranking probabilities (warnings' :attr:`Finding.caution`)."""
        return [f.caution for f in self.checks.values() if f is not None and f.verdict == "warning" and f.caution]

    def to_dict(self) -> dict:
        """A JSON-ready record (``bottom_line.json``): the verdicts, the sentences and the checks (null: not made)."""

        def num(x: float) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "values": [
                {
                    "recommender": v.recommender,
                    "metric": v.metric,
                    "value": num(v.value),
                    "error": num(v.error),
                    "lower": num(v.lower),
                    "upper": num(v.upper),
                    "relative": num(v.relative),
                    "sampling_measured": v.sampling_measured,
                    "verdict": v.verdict,
                }
                for v in self.values
            ],
            "ranking": [
                {
                    "metric": r.metric,
                    "agree": r.agree,
                    "n": r.n,
                    "probability": num(r.probability),
                    "lower": num(r.lower),
                    "upper": num(r.upper),
                    "true_order": r.true_order,
                    "verdict": r.verdict,
                    "replicates_needed": r.replicates_needed,
                }
                for r in self.ranking
            ],
            "report": [{"metric": m, "advice": text} for m, text in self.report],
            "warnings": list(self.warnings),
            "checks": {key: _check_record(self.checks.get(key)) for key in CHECKS},
            "lines": self.lines(),
        }


def _check_record(finding: Finding | None) -> dict | None:
    """A check in ``bottom_line.json``: its verdict and summary, and its records when it has any (None: not made)."""
    if finding is None:
        return None
    return {"verdict": finding.verdict, "summary": finding.summary, **dict(finding.records)}


def _value_verdict(error: float, lower: float, upper: float, value: float, tol: float, sampling: bool) -> Verdict:
    if not (math.isfinite(error) and math.isfinite(lower) and math.isfinite(upper)):
        return "not measured"
    band = tol * abs(value) if math.isfinite(value) else 0.0
    if band > 0 and -band <= lower and upper <= band:
        return "within tolerance" if sampling else "uncertain"
    if lower > 0:
        return "too high"
    if upper < 0:
        return "too low"
    return "uncertain"


def _values(facts: ReportFacts, headline: pd.DataFrame) -> tuple[ValueVerdict, ...]:
    out = []
    order = {m: i for i, m in enumerate(facts.metrics)}
    rows = headline.assign(_o=headline["metric"].map(order)).sort_values("_o", kind="stable")
    for _, r in rows.iterrows():
        sampled = bool(facts.negatives) and r["metric"] in facts.sampled_metrics
        measured = not facts.negatives or (sampled and math.isfinite(r["total_mean"]))
        key = "total" if measured else "missing"
        e, lo, hi = (float(r[f"{key}_{s}"]) for s in ("mean", "lower", "upper"))
        value = float(r["true_mean"])
        verdict = _value_verdict(e, lo, hi, value, facts.max_rel_rmse, measured)
        out.append(ValueVerdict(str(r["recommender"]), str(r["metric"]), value, e, lo, hi, measured, verdict))
    return tuple(out)


def _rankings(ranking: pd.DataFrame, n_worlds: int) -> tuple[RankingVerdict, ...]:
    out = []
    for _, r in ranking[ranking["source"] == "all worlds"].iterrows():
        n, a = int(r["n"]), int(r["agree"])
        lo, hi = float(r["lower"]), float(r["upper"])
        if not n:
            call: RankingCall = "not measured"
        elif lo >= LIKELY:
            call = "likely right"
        elif hi < 0.5:
            call = "likely wrong"
        else:
            call = "uncertain"
        needed = -(-MIN_EVALUATIONS // max(1, n_worlds)) if n < MIN_EVALUATIONS else None
        out.append(RankingVerdict(str(r["metric"]), a, n, lo, hi, str(r["true_order"]), call, needed))
    return tuple(out)


def _estimator_note(facts: ReportFacts, best: pd.DataFrame) -> tuple[str, list[str]]:
    """What the sampling error shown is, in words, and warnings about its estimator."""
    if not facts.negatives:
        return "The sampling error is 0: your protocol ranks all items (nothing is sampled).", []
    at = best[best["n"] == facts.negatives]
    picks, weak = [], []
    for metric in facts.sampled_metrics:
        row = at[at["metric"] == metric]
        label = metric_label(metric, facts.n)
        if row.empty:
            picks.append(f"{label}: none")
            continue
        r = row.iloc[0]
        est = estimator_label(r["estimator"])
        picks.append(f"{label}: {est}")
        if not bool(r["acceptable"]) or float(r["worst_rel_rmse"]) > facts.max_rel_rmse:
            weak.append(f"{label} ({est}, worst relative RMSE {format_number(r['worst_rel_rmse'], 2)})")
    note = (
        f"The sampling error shown is that at your protocol's n = {facts.negatives} sampled negatives, after the "
        f"best estimator at that size ({'; '.join(picks)})."
    )
    warnings = []
    if facts.split == "holdout":
        warnings.append(
            "The sampling error was measured leave-one-out (one random held-out item per user: the sampled-metric "
            "estimators are defined for one), not at your holdout: it describes a leave-one-out sampled evaluation "
            'of your data. With split = "last" (your data\'s timestamps) it is one protocol throughout.'
        )
    if weak:
        warnings.append(
            f"At your n = {facts.negatives}, no estimator meets the rule (worst relative RMSE <= "
            f"{facts.max_rel_rmse:g} with interval coverage >= {facts.min_coverage:g}) for "
            f"{', '.join(weak)}: the sampling error above is that of the best one available; see What to report."
        )
    unmeasured = [metric_label(m, facts.n) for m in facts.metrics if m not in facts.sampled_metrics]
    if unmeasured:
        warnings.append(
            f"{', '.join(unmeasured)}: sampling error not measured (simrec's sampled-metric estimators cover recall, "
            "nDCG and AP); the error shown is the missing-data error alone."
        )
    return note, warnings


def _report(facts: ReportFacts, advice: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    out = []
    for metric in facts.metrics:
        row = advice[advice["metric"] == metric]
        label = metric_label(metric, facts.n)
        if not facts.negatives:
            text = "keep ranking all items (no sampling error)."
        elif row.empty:
            text = (
                f"rank all items: simrec has no sampled-metric estimator for {label}, so sampling it is not assessed."
            )
        else:
            r = row.iloc[0]
            est = estimator_label(r["estimator"])
            if r["report"] == "sampled":
                n = int(r["n"])
                how = (
                    f"keep n = {n}"
                    if n == facts.negatives
                    else f"sample n = {n} negatives instead of {facts.negatives}"
                )
                text = (
                    f"{how} ({r['scheme']}) and report the {est} estimate (worst relative RMSE "
                    f"{format_number(r['worst_rel_rmse'], 2)} over your algorithms)."
                )
                if interval_fails(r):
                    text += f" Do not report {est}'s bootstrap interval as a confidence interval (coverage known to fail *)."
            else:
                closest = (
                    ""
                    if pd.isna(r["n"])
                    else f" (closest: {est} at n = {int(r['n'])}, worst relative RMSE {format_number(r['worst_rel_rmse'], 2)})"
                )
                text = (
                    f"rank all items instead of sampling: no sample size tried reaches worst relative RMSE <= "
                    f"{facts.max_rel_rmse:g} with acceptable interval coverage{closest}."
                )
        out.append((metric, text))
    return tuple(out)


def bottom_line(
    facts: ReportFacts,
    headline: pd.DataFrame,
    ranking: pd.DataFrame,
    best: pd.DataFrame,
    advice: pd.DataFrame,
    checks: Mapping[str, Finding | None] | None = None,
) -> BottomLine:
    """The bottom line from the report's tables (module docstring).

    Parameters
    ----------
    facts : ReportFacts
    headline : DataFrame
        :func:`simrec.assess.errors.headline_table`.
    ranking : DataFrame
        :func:`simrec.assess.ranking_agreement`.
    best, advice : DataFrame
        :func:`simrec.assess.best_estimators`, :func:`simrec.assess.recommend`.
    checks : mapping of str to Finding or None, optional
        The findings of the checks of :data:`CHECKS` that were made (others: not checked).

    Raises
    ------
    ValueError
        A key of ``checks`` that is not one of :data:`CHECKS`.
    """
    checks = dict(checks or {})
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        raise ValueError(f"`checks` keys must be among {sorted(CHECKS)}; got {unknown}")
    values = _values(facts, headline)
    ranks = _rankings(ranking, len(facts.worlds))
    note, warnings = _estimator_note(facts, best)
    few = [r for r in ranks if r.replicates_needed is not None and r.n]
    if few:
        counts = sorted({r.n for r in few})
        many = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
        warnings.append(
            f"The ranking probabilities of {', '.join(metric_label(r.metric, facts.n) for r in few)} rest on "
            f"{many} simulated evaluations, fewer than "
            f"{MIN_EVALUATIONS}: their intervals are wide (e.g. {few[0].lower:.2f} to {few[0].upper:.2f}). Set "
            f"replicates = {max(r.replicates_needed for r in few)} in [simulation] ({len(facts.worlds)} world(s)) "  # type: ignore[type-var]
            f"for at least {MIN_EVALUATIONS}."
        )
    flagged = [
        estimator_label(r["estimator"]) for _, r in advice.iterrows() if r["report"] == "sampled" and interval_fails(r)
    ]
    if flagged:
        warnings.append(f"* {known_to_fail_note(flagged)}")
    warnings += [f.summary for f in checks.values() if f is not None and f.verdict == "warning"]
    return BottomLine(facts, values, note, ranks, _report(facts, advice), tuple(warnings), checks)

"""The assessment report page: the bottom line first, then the evidence, then the slots of checks made elsewhere.

Order (issue 28):

1. **Bottom line** (``#bottom-line``) — :class:`~simrec.assess.bottom_line.BottomLine`:
   how far off each number is and which to trust, whether the ranking is
   right and how sure, what to report instead, warnings, and which checks
   were not made;
2. **evidence** — the errors per algorithm and metric (``#values``), the
   ranking (``#ranking``), the estimator and sample size (``#estimators``);
3. **checks made elsewhere** — one section per key of
   :data:`~simrec.assess.bottom_line.CHECKS` (``#sim-to-real``,
   ``#significance``, ``#missing-data-correction``; ``data-check`` names the
   key): the finding's text and table when a study gave one, else a line
   saying the check was not made;
4. **background** — the calibrated worlds, the dataset, the method, every
   error row.

Tables show human labels (:mod:`simrec.labels`) and numbers to 2-3
significant digits with their intervals (:mod:`simrec.assess.formatting`);
each is a view of a tidy CSV of the folder, which keeps full precision and
machine names.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import pandas as pd

from simrec.assess.advice import EXCLUDED_ESTIMATORS, interval_fails, known_to_fail_note
from simrec.assess.bottom_line import CHECKS, BottomLine, ReportFacts
from simrec.assess.formatting import NOT_AVAILABLE, format_interval, format_number, format_percent, format_share
from simrec.assess.html import Section, figure_html, list_html, note_html, render_page, table_html
from simrec.labels import estimator_label, metric_label, world_label

__all__ = ["report_page", "check_key"]


def check_key(check: str) -> str:
    """The HTML id of a check's section (``sim_to_real`` -> ``sim-to-real``)."""
    return check.replace("_", "-")


def _yes_no(v: object) -> str:
    return NOT_AVAILABLE if v is None or pd.isna(v) else ("yes" if bool(v) else "no")


def _world(name: object) -> str:
    return "all worlds" if name == "all worlds" else world_label(str(name))


def _bottom_line_section(b: BottomLine) -> Section:
    f = b.facts
    rows = [
        {
            "Metric": metric_label(v.metric, f.n),
            "Algorithm": v.recommender,
            f"Error of the reported number ({f.level} interval)": format_interval(v.error, v.lower, v.upper)
            + ("" if v.sampling_measured else " (missing data only)"),
            "Relative to its value": format_percent(v.relative),
            "Verdict": v.verdict,
        }
        for v in b.values
    ]
    parts = [
        "<h3>How far off each number is</h3>",
        f"<p>{html.escape(b.value_summary())}</p>",
        table_html(pd.DataFrame(rows), "bottom-line-values", verdict_columns=("Verdict",)),
    ]
    if b.estimator_note:
        parts.append(note_html(b.estimator_note))
    parts.append(list_html([b.ranking_sentence(r) for r in b.ranking], title="Is the observed ranking the true one?"))
    if b.cautions():
        parts.append(list_html(b.cautions(), css="warnings"))
    parts.append(list_html([f"{metric_label(m, f.n)}: {t}" for m, t in b.report], title="What to report"))
    if b.warnings:
        parts.append(list_html(list(b.warnings), css="warnings", title="Warnings"))
    checks = [CHECKS[k][1] if b.checks.get(k) is None else b.checks[k].summary for k in CHECKS]  # type: ignore[union-attr]
    parts.append(list_html(checks, title="Checks"))
    return Section("Bottom line", (), parts, key="bottom-line", css="bottom-line")


def _values_view(headline: pd.DataFrame, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Algorithm": headline["recommender"],
            "Metric": [metric_label(m, n) for m in headline["metric"]],
            "Observed value": headline["observed_mean"].astype(float),
            "True value": headline["true_mean"].astype(float),
            **{
                title: [
                    format_interval(r[f"{key}_mean"], r[f"{key}_lower"], r[f"{key}_upper"])
                    for _, r in headline.iterrows()
                ]
                for title, key in (
                    ("Missing-data error", "missing"),
                    ("Sampling error", "sampling"),
                    ("Total error", "total"),
                )
            },
        }
    )


def _ranking_view(ranking: pd.DataFrame, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Metric": [metric_label(m, n) for m in ranking["metric"]],
            "Worlds": [_world(s) for s in ranking["source"]],
            "P(observed order = true order)": [
                format_share(int(r["agree"]), int(r["n"]), r["lower"], r["upper"]) for _, r in ranking.iterrows()
            ],
            "Most frequent true order": ranking["true_order"].fillna(""),
        }
    )


def _advice_view(advice: pd.DataFrame, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Metric": [metric_label(m, n) for m in advice["metric"]],
            "Report": advice["report"],
            "Sample size n": [NOT_AVAILABLE if pd.isna(v) else str(int(v)) for v in advice["n"]],
            "Scheme": advice["scheme"].fillna(""),
            "Estimator": [estimator_label(e) if isinstance(e, str) else NOT_AVAILABLE for e in advice["estimator"]],
            "Worst relative RMSE": advice["worst_rel_rmse"].astype(float),
            "Lowest interval coverage": advice["min_coverage"].astype(float),
            "Interval known to fail": [_yes_no(v) for v in advice["coverage_known_to_fail"]],
            "Why": advice["reason"],
        }
    )


def _estimators_view(best: pd.DataFrame, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Metric": [metric_label(m, n) for m in best["metric"]],
            "Sample size n": best["n"].astype(int),
            "Scheme": best["scheme"],
            "Best estimator": [estimator_label(e) for e in best["estimator"]],
            "Worst relative RMSE": best["worst_rel_rmse"].astype(float),
            "Mean |relative error|": best["mean_abs_rel_error"].astype(float),
            "Lowest interval coverage": best["min_coverage"].astype(float),
            "Acceptable coverage": [_yes_no(v) for v in best["acceptable"]],
            "Interval known to fail": [_yes_no(v) for v in best["coverage_known_to_fail"]],
        }
    )


def _worlds_view(worlds: pd.DataFrame) -> pd.DataFrame:
    view = pd.DataFrame(
        {
            "World": [f"{world_label(c)} ({c})" if world_label(c) != c else c for c in worlds["cell"]],
            "Fit loss": worlds["loss"].astype(float),
            "Used": [_yes_no(v) for v in worlds["used"]],
            "Preference model": worlds["preference"],
            "Observation model": worlds["observation"],
        }
    )
    for c in worlds.columns:
        if c.startswith("kl_"):
            view[f"KL {c[3:].replace('_', ' ')}"] = worlds[c].astype(float)
    return view


def _dataset_view(dataset: pd.DataFrame) -> pd.DataFrame:
    def value(v: object) -> str:
        try:
            x = float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return str(v)
        return str(int(x)) if x.is_integer() and abs(x) < 1e15 else format_number(x)

    return pd.DataFrame(
        {"Statistic": [str(s).replace("_", " ") for s in dataset["statistic"]], "Value": dataset["value"].map(value)}
    )


def _errors_view(errors: pd.DataFrame, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Algorithm": errors["recommender"],
            "Metric": [metric_label(m, n) for m in errors["metric"]],
            "Error": errors["component"],
            "From": [_world(s) for s in errors["source"]],
            "Mean [interval]": [format_interval(r["mean"], r["lower"], r["upper"]) for _, r in errors.iterrows()],
            "SD": errors["sd"].astype(float),
            "n": errors["n"].astype(int),
        }
    )


def _check_section(key: str, b: BottomLine, figures: Mapping[str, bytes | None] | None = None) -> Section:
    question, not_checked = CHECKS[key]
    figures = figures or {}
    finding = b.checks.get(key)
    slot = html.escape(key)
    if finding is None:
        return Section(
            question,
            (),
            [f'<p class="status" data-check="{slot}" data-status="not checked">{html.escape(not_checked)}</p>'],
            key=check_key(key),
            css="slot",
        )
    parts = [
        f'<p class="status" data-check="{slot}" data-status="{html.escape(finding.verdict)}">'
        f"{html.escape(finding.summary)}</p>"
    ]
    parts += [f"<p>{html.escape(p)}</p>" for p in finding.paragraphs]
    if finding.table is not None:
        parts.append(table_html(finding.table, f"{check_key(key)}-table"))
    for i, (title, table) in enumerate(finding.tables):
        parts.append(f"<h3>{html.escape(title)}</h3>")
        parts.append(table_html(table, f"{check_key(key)}-table-{i + 1}"))
    if key in figures:
        parts.append(figure_html(figures[key], "Observed values on your data and in each calibrated world"))
    return Section(question, (), parts, key=check_key(key), css="slot")


def report_page(
    b: BottomLine,
    *,
    dataset: pd.DataFrame,
    worlds: pd.DataFrame,
    headline: pd.DataFrame,
    errors: pd.DataFrame,
    ranking: pd.DataFrame,
    best: pd.DataFrame,
    advice: pd.DataFrame,
    pngs: Mapping[str, bytes],
) -> str:
    """The report page (HTML text) from the bottom line, the report's tables and figures (module docstring).

    Parameters
    ----------
    b : BottomLine
        :func:`simrec.assess.bottom_line.bottom_line` (its checks fill the check sections).
    dataset, worlds, headline, errors, ranking, best, advice : DataFrame
        The folder's ``dataset.csv``, ``worlds.csv``, ``headline.csv``,
        ``errors.csv``, ``ranking.csv``, ``estimators.csv``, ``advice.csv``.
    pngs : mapping of str to bytes
        The figures ``errors``, ``ranking``, ``estimators`` (a missing one is a note) and, with the
        sim-to-real check, ``sim_to_real`` (under its section).
    """
    f: ReportFacts = b.facts
    n = f.n
    flagged = [estimator_label(r["estimator"]) for _, r in best.iterrows() if interval_fails(r)]
    footnote = [note_html(f"(*) {known_to_fail_note(flagged)}")] if flagged else []
    used = ", ".join(world_label(w) for w in f.worlds)
    sections = [
        _bottom_line_section(b),
        Section(
            "How far off each number is: the errors",
            [
                f"Per algorithm and metric: its mean value against the observed test items and against the users' "
                f"true preferences in the calibrated worlds ({used}; {f.replicates} replicate(s) each), and the "
                f"errors of one evaluation with {f.level} prediction intervals. Missing-data error = observed − true "
                "value (Tian 2019). Sampling error = sampled estimate − exact metric on your data (Krichene & Rendle "
                f"2020; Li 2020). {b.estimator_note} "
                "Total = their sum (the two are independent: their variances add). All panels of the figure share "
                "one scale.",
            ],
            [
                table_html(_values_view(headline, n), "headline"),
                figure_html(pngs.get("errors"), "Missing-data, sampling and total error per algorithm and metric"),
            ],
            key="values",
        ),
        Section(
            "Is the observed ranking the true one: the evidence",
            [
                "Share of simulated evaluations (replicates × worlds) in which the algorithms ordered by the "
                "observed metric are in the same order as by the true metric (ties must match ties), with a "
                f"Wilson {f.level} interval and the number of evaluations it rests on.",
            ],
            [
                table_html(_ranking_view(ranking, n), "ranking"),
                figure_html(pngs.get("ranking"), "Probability that the observed ranking is the true one"),
            ],
            key="ranking",
        ),
        Section(
            "Which estimator and sample size to report",
            [
                f"Rule: at K = N = {n}, leaving out {', '.join(EXCLUDED_ESTIMATORS)} (unusable), an estimator's error "
                "is its worst relative RMSE over your algorithms; it has acceptable coverage when its bootstrap "
                f"interval covered the exact metric in at least {f.min_coverage:g} of the repeats for every "
                "algorithm (every estimator counts as acceptable when no intervals were computed). At each sample "
                "size the best acceptable estimator is chosen; the advice is the smallest size whose best estimator "
                f"has worst relative RMSE ≤ {f.max_rel_rmse:g}, else ranking all items. 'Interval known to fail' "
                "marks estimators whose bootstrap interval ignores a bias that does not shrink with the number of "
                "users.",
            ],
            [
                table_html(_advice_view(advice, n), "advice", "What to report per metric"),
                table_html(_estimators_view(best, n), "estimators", "Best estimator per metric and sample size"),
                *footnote,
                figure_html(pngs.get("estimators"), "Worst relative RMSE vs sample size"),
            ],
            key="estimators",
        ),
        *[_check_section(k, b, {"sim_to_real": pngs.get("sim_to_real")}) for k in CHECKS],
        Section(
            "Calibrated worlds",
            [
                f"The six preference × observation models fitted to {f.dataset}, by fit (average relative loss over "
                f"the four key statistics; lower is better); the {len(f.worlds)} best are used.",
            ],
            [table_html(_worlds_view(worlds), "worlds")],
            key="worlds",
        ),
        Section("Dataset", [], [table_html(_dataset_view(dataset), "dataset")], key="dataset"),
        Section(
            "Every error row",
            ["Per calibrated world as well as pooled over the worlds."],
            [table_html(_errors_view(errors, n), "errors")],
            key="all-errors",
        ),
    ]
    intro = [
        f"Dataset {f.dataset}. Algorithms: {', '.join(f.algorithms)}. Protocol: {f.protocol}. "
        f"Metrics: {', '.join(metric_label(m, n) for m in f.metrics)}.",
    ]
    return render_page(
        f"How wrong is this evaluation? {f.name}", f.description or f"dataset {f.dataset}", sections, intro
    )

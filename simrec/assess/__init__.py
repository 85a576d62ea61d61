"""``simrec assess``: the expected error of *my* evaluation, on *my* data, for *my* algorithms.

One concept per module:

* :mod:`.errors` — missing-data error, sampling error after the chosen estimator, their sum (with intervals);
* :mod:`.ranking` — the probability that the observed ranking of the algorithms is the true one;
* :mod:`.advice` — which estimator and sample size to report (the rule);
* :mod:`.bottom_line` — the verdicts the page opens with (which numbers to trust, how sure the ranking is);
* :mod:`.formatting` — numbers as a reader sees them (2-3 significant digits with their intervals);
* :mod:`.figures`, :mod:`.html`, :mod:`.page` — the self-contained report page;
* :mod:`.significance` — the page's significance check: per pair of algorithms, P(right | significant);
* :mod:`.sim_to_real` — the page's sim-to-real check: do the worlds order the algorithms as the data does?

The phases themselves (over the run, stress and calibrate studies, in one resumable folder) are
:mod:`simrec.studies.assess`: this package is library code and knows nothing of the config layer.
"""

from simrec.assess.advice import EXCLUDED_ESTIMATORS, best_estimators, recommend
from simrec.assess.bottom_line import BottomLine, Finding, ReportFacts, bottom_line
from simrec.assess.correction import correction_advice, correction_candidates, correction_finding
from simrec.assess.errors import (
    ERROR_COLUMNS,
    HEADLINE_COLUMNS,
    headline_table,
    metric_values,
    missing_data_errors,
    sampling_errors,
    total_errors,
)
from simrec.assess.formatting import format_interval, format_number, format_percent, format_share
from simrec.assess.html import Section, figure_html, format_value, render_page, table_html
from simrec.assess.page import report_page
from simrec.assess.ranking import RANKING_COLUMNS, ranking_agreement
from simrec.assess.significance import LIKELY_WRONG, likely_wrong, significance_finding
from simrec.assess.sim_to_real import sim_to_real_finding, worlds_disagree

__all__ = [
    "EXCLUDED_ESTIMATORS",
    "best_estimators",
    "recommend",
    "correction_candidates",
    "correction_advice",
    "correction_finding",
    "ERROR_COLUMNS",
    "missing_data_errors",
    "sampling_errors",
    "total_errors",
    "HEADLINE_COLUMNS",
    "headline_table",
    "metric_values",
    "BottomLine",
    "Finding",
    "ReportFacts",
    "bottom_line",
    "format_interval",
    "format_number",
    "format_percent",
    "format_share",
    "report_page",
    "Section",
    "figure_html",
    "format_value",
    "render_page",
    "table_html",
    "RANKING_COLUMNS",
    "ranking_agreement",
    "LIKELY_WRONG",
    "likely_wrong",
    "significance_finding",
    "sim_to_real_finding",
    "worlds_disagree",
]

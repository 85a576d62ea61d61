"""The bottom line's verdict rules (simrec.assess.bottom_line), on hand-made tables whose verdicts are known.

Reference values: the Wilson 95% interval of 30/30 has lower end 0.886 and of 6/6 0.610 (Wilson 1927; the
module docstring's examples), so 30 agreeing evaluations are "likely right" and 6 are "uncertain".
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pandas as pd
import pytest

import simrec.assess.formatting
import simrec.labels
from simrec.assess.bottom_line import MIN_EVALUATIONS, ReportFacts, bottom_line
from simrec.assess.errors import HEADLINE_COLUMNS
from simrec.assess.formatting import format_interval, format_percent, format_share
from simrec.report.summaries import wilson_interval as _wilson


def wilson_interval(agree: int, n: int) -> tuple[float, float]:
    lo, hi = _wilson(np.array([agree]), np.array([n]))
    return float(lo[0]), float(hi[0])


FACTS = ReportFacts(
    name="t",
    description="",
    dataset="d",
    algorithms=("A", "B"),
    protocol="p",
    n=10,
    negatives=100,
    metrics=("ndcg", "recall", "precision"),
    sampled_metrics=("ndcg", "recall"),
    replicates=3,
    worlds=("ibp-pop", "lda-pop"),
)


def _headline(rows):
    """rows: (rec, metric, true_mean, (missing), (sampling), (total)) with (mean, lower, upper) triples."""
    out = []
    for rec, metric, true, miss, samp, tot in rows:
        out.append([rec, metric, true + miss[0], true, *miss, *samp, *tot])
    return pd.DataFrame(out, columns=HEADLINE_COLUMNS)


NA = (math.nan, math.nan, math.nan)


def _tables(agree_n=((30, 30), (3, 6), (0, 30))):
    headline = _headline(
        [
            ("A", "ndcg", 0.5, (0.01, 0.0, 0.02), (0.0, -0.01, 0.01), (0.01, -0.02, 0.04)),  # within +-0.05
            ("B", "ndcg", 0.5, (0.2, 0.15, 0.25), (0.0, -0.01, 0.01), (0.2, 0.14, 0.26)),  # too high
            ("A", "recall", 0.2, (-0.1, -0.12, -0.08), (0.0, -0.01, 0.01), (-0.1, -0.13, -0.07)),  # too low
            ("B", "recall", 0.2, (0.0, -0.1, 0.1), (0.0, -0.01, 0.01), (0.0, -0.11, 0.11)),  # uncertain (wide)
            ("A", "precision", 0.4, (0.001, -0.002, 0.004), NA, NA),  # small, but sampling not measured
            ("B", "precision", 0.4, NA, NA, NA),  # nothing measured
        ]
    )
    rows = []
    for metric, (a, n) in zip(FACTS.metrics, agree_n):
        lo, hi = wilson_interval(a, n) if n else (math.nan, math.nan)
        rows.append((metric, "all worlds", a / n if n else math.nan, lo, hi, a, n, "A > B"))
    ranking = pd.DataFrame(
        rows, columns=["metric", "source", "probability", "lower", "upper", "agree", "n", "true_order"]
    )
    best = pd.DataFrame(
        [
            ("ndcg", 100, "hypergeometric", "BV(gamma=0.01)", 0.05, 0.03, 0.9, True, False),
            ("ndcg", 200, "hypergeometric", "CLS", 0.04, 0.02, 0.9, True, False),
            ("recall", 100, "hypergeometric", "CLS", 0.3, 0.2, 0.9, True, True),
            ("recall", 200, "hypergeometric", "CLS", 0.08, 0.05, 0.9, True, True),
        ],
        columns=[
            "metric", "n", "scheme", "estimator", "worst_rel_rmse", "mean_abs_rel_error", "min_coverage",
            "acceptable", "coverage_known_to_fail",
        ],
    )  # fmt: skip
    advice = pd.DataFrame(
        [
            ("ndcg", "sampled", 100, "hypergeometric", "BV(gamma=0.01)", 0.05, 0.9, False, "ok"),
            ("recall", "sampled", 200, "hypergeometric", "CLS", 0.08, 0.9, True, "ok"),
        ],
        columns=[
            "metric", "report", "n", "scheme", "estimator", "worst_rel_rmse", "min_coverage",
            "coverage_known_to_fail", "reason",
        ],
    )  # fmt: skip
    advice["coverage_known_to_fail"] = advice["coverage_known_to_fail"].astype("boolean")
    return headline, ranking, best, advice


def test_value_verdicts_follow_the_rule():
    b = bottom_line(FACTS, *_tables())
    got = {(v.recommender, v.metric): (v.verdict, v.sampling_measured) for v in b.values}
    assert got == {
        ("A", "ndcg"): ("within tolerance", True),
        ("B", "ndcg"): ("too high", True),
        ("A", "recall"): ("too low", True),
        ("B", "recall"): ("uncertain", True),
        ("A", "precision"): ("uncertain", False),  # within +-10% but the sampling error is not measured
        ("B", "precision"): ("not measured", False),
    }
    a_ndcg = next(v for v in b.values if (v.recommender, v.metric) == ("A", "ndcg"))
    assert (a_ndcg.error, a_ndcg.lower, a_ndcg.upper) == (0.01, -0.02, 0.04)  # the total, not the missing-data error
    assert a_ndcg.relative == pytest.approx(0.02)
    assert [v.metric for v in b.values][:2] == ["ndcg", "ndcg"]  # the protocol's metric order
    assert b.value_summary().startswith(
        "1 of 6 numbers are within ±10% of the truth; 2 are off (1 too low, 1 too high)"
    )


def test_ranking_verdicts_and_the_warning_under_30_evaluations():
    b = bottom_line(FACTS, *_tables())
    calls = {r.metric: (r.verdict, r.replicates_needed) for r in b.ranking}
    assert wilson_interval(30, 30)[0] == pytest.approx(0.886, abs=1e-3)  # the docstring's reference values
    assert wilson_interval(6, 6)[0] == pytest.approx(0.610, abs=1e-3)
    assert calls == {
        "ndcg": ("likely right", None),
        "recall": ("uncertain", MIN_EVALUATIONS // 2),  # 6 < 30 evaluations over 2 worlds: 15 replicates each
        "precision": ("likely wrong", None),
    }
    warning = next(w for w in b.warnings if "simulated evaluations" in w)
    assert "Recall@10 rest on 6 simulated evaluations, fewer than 30" in warning
    assert "Set replicates = 15 in [simulation] (2 world(s))" in warning
    assert "0.50 [0.19, 0.81] (3 of 6)" in b.ranking_sentence(b.ranking[1])


def test_the_estimator_note_and_the_advice_speak_of_the_protocols_n():
    b = bottom_line(FACTS, *_tables())
    assert "n = 100 sampled negatives" in b.estimator_note
    assert "nDCG@10: BV (γ = 0.01)" in b.estimator_note and "Recall@10: CLS" in b.estimator_note
    weak = next(w for w in b.warnings if w.startswith("At your n = 100"))
    assert "Recall@10 (CLS, worst relative RMSE 0.3)" in weak and "nDCG" not in weak
    report = dict(b.report)
    assert report["ndcg"].startswith("keep n = 100 (hypergeometric) and report the BV (γ = 0.01) estimate")
    assert report["recall"].startswith("sample n = 200 negatives instead of 100")
    assert "coverage known to fail *" in report["recall"] and "coverage known to fail" not in report["ndcg"]
    assert report["precision"].startswith("rank all items: simrec has no sampled-metric estimator for Precision@10")
    assert any(w.startswith("* CLS: the bootstrap interval") for w in b.warnings)


def test_a_full_ranking_protocol_has_no_sampling_error_and_keeps_ranking_all_items():
    facts = ReportFacts(**{**FACTS.__dict__, "negatives": 0})
    b = bottom_line(facts, *_tables())
    assert "The sampling error is 0" in b.estimator_note
    assert all(text == "keep ranking all items (no sampling error)." for _, text in b.report)
    assert {v.sampling_measured for v in b.values} == {True}


@pytest.mark.parametrize(
    "split, negatives, warned",
    [("holdout", 100, True), ("last", 100, False), ("holdout", 0, False)],
)
def test_a_holdout_with_sampled_negatives_is_warned_that_the_sampling_error_is_leave_one_out(split, negatives, warned):
    """One protocol (issue 24): the sampled evaluation is always leave-one-out, so with a holdout and sampled
    negatives the sampling error describes another protocol; the bottom line (and so the terminal) says so."""
    facts = ReportFacts(**{**FACTS.__dict__, "split": split, "negatives": negatives})
    b = bottom_line(facts, *_tables())
    said = [w for w in b.warnings if w.startswith("The sampling error was measured leave-one-out")]
    assert len(said) == int(warned)
    assert (
        any(line.strip("! ").startswith("The sampling error was measured leave-one-out") for line in b.lines())
        == warned
    )


def test_checks_are_not_made_here_and_unknown_ones_are_refused():
    b = bottom_line(FACTS, *_tables())
    assert sum(line.startswith("  Not checked in this report") for line in b.lines()) == 3
    assert b.to_dict()["checks"] == {"sim_to_real": None, "significance": None, "missing_data_correction": None}
    with pytest.raises(ValueError, match=r"`checks` keys must be among .*; got \['typo'\]"):
        bottom_line(FACTS, *_tables(), checks={"typo": None})


def test_no_nan_reaches_the_bottom_line_text():
    b = bottom_line(FACTS, *_tables())
    assert not any("nan" in line.lower() for line in b.lines())


@pytest.mark.parametrize(
    "mean, lower, upper, text",
    [
        (0.27134, 0.2309, 0.3118, "+0.271 [+0.231, +0.312]"),
        (0.2713, 0.2709, 0.2717, "+0.271 [+0.271, +0.272]"),  # half-width 0.0004: still 3 significant digits
        (0.0012, -0.0488, 0.0512, "+0.001 [-0.049, +0.051]"),
        (-0.0001, -0.002, 0.002, "-0.0001 [-0.0020, +0.0020]"),
        (math.nan, 0.0, 1.0, "n/a"),
        (0.5, math.nan, math.nan, "+0.5"),
    ],
)
def test_format_interval(mean, lower, upper, text):
    assert format_interval(mean, lower, upper) == text


def test_format_share_and_percent():
    assert format_share(3, 6, 0.19, 0.81) == "0.50 [0.19, 0.81] (3 of 6)"
    assert format_share(0, 0, np.nan, np.nan) == "n/a (no evaluation)"
    assert [format_percent(v) for v in (-0.853, 0.0412, 1.674, np.nan)] == ["-85%", "+4.1%", "+167%", "n/a"]


@pytest.mark.parametrize("module", [simrec.labels, simrec.assess.formatting])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0

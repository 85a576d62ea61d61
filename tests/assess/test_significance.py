"""``simrec assess``'s significance step: per pair, P(right | significant) at the user's protocol, and warnings."""

from __future__ import annotations

import html
import json

import pandas as pd
import pytest

from simrec.assess.bottom_line import bottom_line
from simrec.assess.page import _check_section
from simrec.assess.significance import significance_finding
from simrec.report import wilson_interval
from simrec.studies.assess_significance import LIKELY_WRONG, likely_wrong_notes
from tests.assess.conftest import assessment_toml
from tests.assess.test_bottom_line import FACTS, _tables
from tests.cli_helpers import invoke


@pytest.mark.slow
def test_assess_writes_the_probability_a_significant_result_is_right(tmp_path, tiny_data):
    spec = tmp_path / "a.toml"
    spec.write_text(assessment_toml(tiny_data, sizes="sizes = [20]", n_boot="n_boot = 0"))
    out = tmp_path / "out"
    code, _, err = invoke(["assess", str(spec), "--out", str(out), "--no-figures"])
    assert code == 0, err
    assert "[4/7] significance" in err
    t = pd.read_csv(out / "significance.csv")
    # the user's protocol has 20 sampled negatives: the sampled-naive protocol, both tests, every metric
    assert set(t["protocol"]) == {"sampled_naive"} and set(t["test"]) == {"paired_t", "wilcoxon"}
    pooled = t[t["world"] == "all worlds"]
    assert len(pooled) == 3 * 2  # metrics x tests, one pair (Popular, Random)
    assert set(zip(pooled["a"], pooled["b"])) == {("Popular", "Random")}
    ok = pooled["right_given_significant_n"] > 0
    assert ok.any()
    r = pooled[ok]
    assert (
        (r["right_given_significant_low"] <= r["right_given_significant"])
        & (r["right_given_significant"] <= r["right_given_significant_high"])
    ).all()
    assert (out / "significance").is_dir()
    # the page's significance section: a titled table per pair; the bottom line's check (and warning) says it
    page = (out / "report.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="significance"') :]
    section = section[: section.index("</section>")]
    assert "<h3>Popular vs Random</h3>" in section and "P(right | significant)" in section
    assert "Not checked in this report" not in section
    record = json.loads((out / "bottom_line.json").read_text())
    check = record["checks"]["significance"]
    assert check is not None and check["summary"].startswith("Significance: ")
    assert (check["verdict"] == "warning") == (check["summary"] in record["warnings"])


def _pooled(right: int, n: int) -> pd.DataFrame:
    rate = right / n if n else float("nan")
    return pd.DataFrame(
        [
            {
                "protocol": "full",
                "metric": "ndcg",
                "a": "Popular",
                "b": "Oracle",
                "test": "paired_t",
                "right_given_significant": rate,
                "right_given_significant_low": 0.0,
                "right_given_significant_high": 0.2,
                "right_given_significant_count": right,
                "right_given_significant_n": n,
            }
        ]
    )


def test_warning_where_significant_and_wrong_is_likely():
    (note,) = likely_wrong_notes(_pooled(1, 10))
    assert "Popular vs Oracle on ndcg" in note and "right only 10%" in note and "likely" in note
    assert likely_wrong_notes(_pooled(9, 10)) == ()
    assert likely_wrong_notes(_pooled(0, 0)) == ()  # never significant: no claim to be wrong about
    assert LIKELY_WRONG == 0.5


def _table(pairs: dict[tuple[str, str], tuple[int, int]], worlds=("ibp-pop", "lda-pop"), reps: int = 10):
    """significance.csv of hand-made counts: per pair (right, significant) in each world, and the pooled row."""
    rows = []
    for (a, b), (right, sig) in pairs.items():
        for w in worlds:
            rows.append(
                {"world": w, "protocol": "full", "metric": "ndcg", "a": a, "b": b, "test": "paired_t"}
                | {"n_replicates": reps, "truth": "A < B"}
                | {"right_given_significant_count": right, "right_given_significant_n": sig}
            )
        n, k = sig * len(worlds), right * len(worlds)
        lo, hi = wilson_interval(pd.Series([k]).to_numpy(), pd.Series([max(n, 1)]).to_numpy())
        rows.append(
            {"world": "all worlds", "protocol": "full", "metric": "ndcg", "a": a, "b": b, "test": "paired_t"}
            | {"right_given_significant_count": k, "right_given_significant_n": n}
            | {
                "right_given_significant": k / n if n else float("nan"),
                "right_given_significant_low": float(lo[0]) if n else float("nan"),
                "right_given_significant_high": float(hi[0]) if n else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def test_the_finding_has_a_table_per_pair_and_warns_where_significant_and_wrong_is_likely():
    t = _table({("Popular", "Oracle"): (1, 8), ("Oracle", "Random"): (10, 10)})
    f = significance_finding(t, n=10)
    assert f is not None and f.verdict == "warning"
    assert [title for title, _ in f.tables] == ["Popular vs Oracle", "Oracle vs Random"]
    wrong, right = (table.iloc[0] for _, table in f.tables)
    lo, hi = wilson_interval(pd.Series([2]).to_numpy(), pd.Series([16]).to_numpy())
    assert wrong["P(right | significant)"] == f"0.12 [{lo[0]:.2f}, {hi[0]:.2f}] (2 of 16)"
    assert wrong["Significant in"] == "16 of 20" and wrong["Warning"] == "significant and wrong is likely"
    assert wrong["True order"] == "ibp-pop: Oracle better; lda-pop: Oracle better"
    assert right["P(right | significant)"].startswith("1.00 [") and right["Warning"] == ""
    assert "1 of 2" in f.summary and "Popular vs Oracle on nDCG@10 (paired t-test)" in f.summary
    assert "right only 12%" in f.summary
    # the bottom line repeats it among its warnings, and its check line is the summary
    b = bottom_line(FACTS, *_tables(), checks={"significance": f})
    assert f.summary in b.warnings and f"  {f.summary}" in b.lines()
    assert b.to_dict()["checks"]["significance"] == {"verdict": "warning", "summary": f.summary}
    # the page: one titled table per pair in the significance section
    page = "".join(_check_section("significance", b).parts)
    assert 'data-check="significance" data-status="warning"' in page
    assert "<h3>Popular vs Oracle</h3>" in page and "<h3>Oracle vs Random</h3>" in page
    assert 'id="significance-table-1"' in page and 'id="significance-table-2"' in page
    assert html.escape("significant and wrong is likely") in page


def test_no_warning_when_significant_results_are_right_and_none_without_a_table():
    f = significance_finding(_table({("Oracle", "Random"): (9, 10)}), n=10)
    assert f is not None and f.verdict == "ok" and "named the truly better one in 0.90 [" in f.summary
    assert "(18 of 20) of those simulated evaluations" in f.summary and "at least" not in f.summary
    b = bottom_line(FACTS, *_tables(), checks={"significance": f})
    assert f.summary not in b.warnings and f"  {f.summary}" in b.lines()
    never = significance_finding(_table({("Random", "random_b"): (0, 0)}), n=10)
    assert never is not None and never.verdict == "ok" and "no paired test was significant" in never.summary
    assert significance_finding(pd.DataFrame(), n=10) is None


def test_the_assessments_memory_check_counts_the_significance_step(tmp_path, tiny_data):
    """The calibrated worlds' check includes the significance step (its tests' resampling chunks, 32 MiB): a
    limit the worlds' run alone fits is refused, through simrec.cli.main, naming the step, before any folder."""
    from simrec.config.assess import load_assessment
    from simrec.config.budget import SIGNIFICANCE_TEST_BYTES, WORKER_BASE, Budget, check_memory

    spec = tmp_path / "a.toml"
    spec.write_text(assessment_toml(tiny_data))
    a = load_assessment(spec, budget=Budget(max_memory=2**40))
    s = a.significance_spec()
    assert s is not None and s.protocols == ["sampled_naive"] and s.tests == ["paired_t", "wilcoxon"]
    run = a.run_scenario(a.best_cells())
    alone = check_memory(spec, run.memory_needs(), workers=1, max_memory=2**40)
    limit = int(alone + SIGNIFICANCE_TEST_BYTES / 2)
    assert limit > WORKER_BASE
    out = tmp_path / "out"
    code, _, err = invoke(["assess", str(spec), "--out", str(out), "--max-memory", str(limit)])
    assert code == 2 and not out.exists(), err
    assert "(calibrated worlds): too large for the memory limit" in err and "significance: " in err

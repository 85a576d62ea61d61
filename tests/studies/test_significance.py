"""``simrec run`` with a ``[significance]`` section: paired tests judged against the truth (issue 26).

Through :func:`simrec.cli.main` (tests/cli_helpers.py): the table's rows and
rates, a null pair (two Random recommenders: no true difference by
construction), resume, identical tables serially and on 2 processes, and
refusals before anything is created.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.cli_helpers import invoke

SCENARIO = """
name = "significance-test"
seed = 11
replicates = 6

[population]
n_users = 200
n_items = 150

[[world]]
name = "ibp-pop"
preference = {{ model = "ibp", alpha = 12.0, c = 2.0, sigma = 0.4 }}
observation = {{ sampler = "popularity", profile = {{ model = "pareto", m_low = 4, alpha = 1.2, m_high = 40 }} }}

[evaluation]
n = 10
metrics = ["precision", "ndcg"]
recommenders = [{{ kind = "oracle" }}, {{ kind = "random" }}, {{ kind = "random", name = "random_b" }}]

[significance]
{section}
"""

SECTION = """
tests = ["paired_t", "wilcoxon", "sign", "permutation"]
metrics = ["ndcg"]
users = 60
negatives = 40
resamples = 200
"""


def _scenario(tmp_path: Path, section: str = SECTION) -> Path:
    p = tmp_path / "sc.toml"
    p.write_text(textwrap.dedent(SCENARIO.format(section=section)))
    return p


def _run(sc: Path, out: Path, *more: str) -> tuple[int, str, str]:
    return invoke(["run", str(sc), "--out", str(out), "--quiet", "--no-figures", *more])


@pytest.mark.slow
def test_significance_table_against_the_truth(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    code, _, err = _run(sc, out)
    assert code == 0, err
    t = pd.read_csv(out / "significance.csv")
    assert len(list((out / "significance").glob("*.parquet"))) == 6
    # 4 protocols x 1 metric x 3 pairs x 4 tests
    assert len(t) == 4 * 3 * 4
    assert set(t["protocol"]) == {"full", "users", "sampled_naive", "sampled_corrected"}
    assert (t["n_replicates"] == 6).all()
    for name in ("significant", "correct", "type_i", "type_ii", "type_iii", "right_given_significant"):
        ok = t[name].notna()
        assert ((t.loc[ok, name] >= 0) & (t.loc[ok, name] <= 1)).all()
        assert (t.loc[ok, f"{name}_low"] <= t.loc[ok, name] + 1e-12).all()
        assert (t.loc[ok, name] <= t.loc[ok, f"{name}_high"] + 1e-12).all()
    # Oracle is truly better than Random, and every test on every user says so, in the right direction
    full = t[(t["protocol"] == "full") & (t["a"] == "Oracle") & (t["b"] == "Random")]
    assert (full["truth"] == "A > B").all() and (full["correct"] == 1).all() and (full["type_iii"] == 0).all()
    # two Random recommenders: no true difference; a type I rate, no correct rate
    null = t[(t["a"] == "Random") & (t["b"] == "random_b")]
    assert (null["truth"] == "no difference").all()
    assert null["type_i"].notna().all() and null["correct"].isna().all()
    # correct + type II + type III = 1 over the non-null rows
    nn = t[t["truth"] != "no difference"]
    np.testing.assert_allclose(nn["correct"] + nn["type_ii"] + nn["type_iii"], 1.0)
    # resume: every task reused, the same table
    code, _, err = _run(sc, out)
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_csv(out / "significance.csv"), t)


@pytest.mark.slow
def test_significance_identical_on_two_processes(tmp_path):
    sc = _scenario(tmp_path, SECTION.replace('["paired_t", "wilcoxon", "sign", "permutation"]', '["permutation"]'))
    assert _run(sc, tmp_path / "serial")[0] == 0
    code, _, err = _run(sc, tmp_path / "procs", "--jobs", "2")
    assert code == 0, err
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "serial" / "significance.csv"), pd.read_csv(tmp_path / "procs" / "significance.csv")
    )


@pytest.mark.parametrize(
    "section, needles",
    [
        ('pairs = [["Oracle", "nobody"]]', ["significance.pairs[0]", "'nobody'"]),
        ('tests = ["t_test"]', ["significance.tests", "t_test"]),
        ('metrics = ["auc"]', ["significance.metrics", "'auc'"]),
        ("negatives = 100000", ["significance.negatives", "100000"]),
        ('protocols = ["full"]\nusers = 5', ["significance.users", "5"]),
        ('pairs = [["Oracle", "Oracle"]]', ["pairs[0]", "two different recommenders"]),
    ],
)
def test_significance_section_refused_before_work(tmp_path, section, needles):
    out = tmp_path / "out"
    code, _, err = _run(_scenario(tmp_path, section), out)
    assert code == 2, err
    assert "Traceback" not in err and str(tmp_path / "sc.toml") in err
    for needle in needles:
        assert needle in err, err
    assert not out.exists()


IPS_SCENARIO = """
name = "significance-ips"
seed = 5
replicates = 10

[population]
n_users = 1500
n_items = 200

[[world]]
name = "ibp-pop"
preference = { model = "ibp", alpha = 80.0, c = 1.0, sigma = 0.5 }
observation = { sampler = "popularity", profile = { model = "pareto", m_low = 3, alpha = 1.5, m_high = 20 } }

[evaluation]
n = 10
metrics = ["precision"]
recommenders = [{ kind = "oracle" }, { kind = "popular" }]

[significance]
tests = ["paired_t"]
protocols = ["full", "full_ips"]
"""


@pytest.mark.slow
def test_ips_corrected_significance_is_right_where_observed_significance_is_wrong(tmp_path):
    """A popularity world where every user likes many items: on the observed test items Popular looks better
    than Oracle (its popular items are the ones observed), while Oracle is truly better by 0.30 precision. The
    observed protocol is significant in the wrong direction in 10 of 10 replicates; the IPS-corrected one (the
    world's propensities) is never significant the wrong way, and whenever significant it is right: the Wilson
    95% intervals of type III and of P(right | significant) do not overlap (fixed seed)."""
    sc = tmp_path / "ips.toml"
    sc.write_text(IPS_SCENARIO)
    code, _, err = _run(sc, tmp_path / "out")
    assert code == 0, err
    t = pd.read_csv(tmp_path / "out" / "significance.csv").set_index("protocol")
    full, ips = t.loc["full"], t.loc["full_ips"]
    assert full["truth"] == ips["truth"] == "A > B"  # the same truth: Oracle better
    assert full["true_difference"] == ips["true_difference"]
    assert full["mean_observed_difference"] < 0 < ips["mean_observed_difference"]
    assert full["type_iii_count"] == 10 and ips["type_iii_count"] == 0
    assert full["type_iii_low"] > ips["type_iii_high"]
    assert ips["right_given_significant_n"] > 0 and ips["right_given_significant"] == 1.0
    assert ips["right_given_significant_low"] > full["right_given_significant_high"]


def test_full_ips_needs_metrics_linear_in_the_relevance(tmp_path):
    sc = tmp_path / "sc.toml"
    sc.write_text(
        textwrap.dedent(SCENARIO.format(section='protocols = ["full_ips"]')).replace(
            'metrics = ["precision", "ndcg"]', 'metrics = ["precision", "reciprocal_rank"]'
        )
    )
    out = tmp_path / "out"
    code, _, err = _run(sc, out)
    assert code == 2, err
    assert "significance.protocols: 'full_ips' needs metrics linear in the relevance" in err
    assert "['reciprocal_rank']" in err and "Traceback" not in err and not out.exists()


def test_the_memory_estimate_counts_the_significance_phase(tmp_path):
    """The phase's task (its replicate regenerated, the per-user arrays, the tests' 32 MiB of resampling chunks)
    is a kind of task of its own: a limit the run alone fits is refused with the section, naming it."""
    from simrec.config.budget import SIGNIFICANCE_TEST_BYTES, WORKER_BASE, Budget
    from simrec.config.run import load_scenario

    with_section = _scenario(tmp_path)
    plain = tmp_path / "plain.toml"
    plain.write_text(with_section.read_text().split("[significance]")[0])
    big = Budget(max_memory=2**40)
    sc, _ = load_scenario(with_section, budget=big)
    kinds, fixed = sc.memory_needs()
    world, task = kinds[1]
    assert world == kinds[0][0]  # the replicate, regenerated
    # run: 3 recommenders x 2 metrics x 2 truths; the cases: 4 protocols x 1 metric x 3 pairs x 2 recommenders
    assert task.bytes == 8.0 * 200 * (3 * 2 * 2 + 4 * 1 * 3 * 2) + SIGNIFICANCE_TEST_BYTES
    assert fixed[1].bytes == 200 * 6 * 4 * 1 * 3 * 4  # BYTES_PER_ROW x tasks x protocols x metrics x pairs x tests
    limit = WORKER_BASE + 16 * 2**20
    Budget(max_memory=limit).check(plain, load_scenario(plain, budget=big)[0].memory_needs())  # fits without
    out = tmp_path / "out"
    code, _, err = _run(with_section, out, "--max-memory", str(limit))
    assert code == 2 and not out.exists()
    assert "too large for the memory limit" in err and "significance: 36 per-user arrays of 200 users" in err
    assert "change population.n_users, significance.pairs, significance.metrics, significance.protocols" in err

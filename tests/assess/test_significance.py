"""``simrec assess``'s significance step: per pair, P(right | significant) at the user's protocol, and warnings."""

from __future__ import annotations

import pandas as pd
import pytest

from simrec.studies.assess_significance import LIKELY_WRONG, likely_wrong_notes
from tests.assess.conftest import assessment_toml
from tests.cli_helpers import invoke


@pytest.mark.slow
def test_assess_writes_the_probability_a_significant_result_is_right(tmp_path, tiny_data):
    spec = tmp_path / "a.toml"
    spec.write_text(assessment_toml(tiny_data, sizes="sizes = [20]", n_boot="n_boot = 0"))
    out = tmp_path / "out"
    code, _, err = invoke(["assess", str(spec), "--out", str(out), "--no-figures"])
    assert code == 0, err
    assert "[4/6] significance" in err
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

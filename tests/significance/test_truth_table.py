"""truth_table: rates per group against the world's truth (exact counts on hand-made outcomes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simrec.significance import OUTCOME_COLUMNS, truth_table


def _outcomes(p, sign, truth, group="g"):
    n = len(p)
    return pd.DataFrame(
        {
            "pair": group,
            "replicate": np.arange(n),
            "test": "paired_t",
            "p_value": p,
            "sign": sign,
            "mean_difference": sign,
            "true_difference": truth,
        }
    )


def test_nonnull_group_counts():
    # truth +1 every replicate; 3 significant right, 1 significant wrong, 1 not significant, 1 undefined
    t = truth_table(
        _outcomes([0.01, 0.02, 0.001, 0.03, 0.5, np.nan], [1, 1, 1, -1, 1, 1], [1.0, 1.1, 0.9, 1.0, 1.0, 1.0])
    )
    row = t.iloc[0]
    assert row["truth"] == "A > B" and row["n_replicates"] == 6 and row["n_undefined"] == 1
    assert (row["correct_count"], row["correct_n"]) == (3, 5)
    assert (row["type_iii_count"], row["type_ii_count"]) == (1, 1)
    assert row["right_given_significant"] == pytest.approx(3 / 4)
    assert row["significant"] == pytest.approx(4 / 5)
    assert np.isnan(row["type_i"])


def test_null_group_by_interval_and_by_tolerance():
    truth = [0.01, -0.01, 0.02, -0.02, 0.0, 0.0]  # mean 0: within its own interval
    t = truth_table(_outcomes([0.01, 0.5, 0.5, 0.5, 0.5, 0.5], [1, 1, -1, 1, 1, 1], truth))
    row = t.iloc[0]
    assert row["truth"] == "no difference" and row["type_i"] == pytest.approx(1 / 6) and np.isnan(row["correct"])
    # a clear but tiny difference is null only under a tolerance
    tiny = [0.001] * 6
    assert truth_table(_outcomes([0.5] * 6, [1] * 6, tiny)).iloc[0]["truth"] == "A > B"
    assert truth_table(_outcomes([0.5] * 6, [1] * 6, tiny), tolerance=0.01).iloc[0]["truth"] == "no difference"


def test_groups_kept_apart_and_columns_checked():
    both = pd.concat([_outcomes([0.01] * 3, [1] * 3, [1.0] * 3, "x"), _outcomes([0.01] * 3, [-1] * 3, [1.0] * 3, "y")])
    t = truth_table(both)
    assert list(t["pair"]) == ["x", "y"]
    assert list(t["correct"]) == [1.0, 0.0] and list(t["type_iii"]) == [0.0, 1.0]
    with pytest.raises(ValueError, match="p_value"):
        truth_table(both.drop(columns="p_value"))
    assert "p_value" in OUTCOME_COLUMNS

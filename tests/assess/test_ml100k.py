"""``simrec assess`` end to end on MovieLens 100K, from the command line (skips without the data).

Small: the shipped ML-100K presets (no calibration run), the best-fitting
world only, one replicate, LensKit ItemKNN vs Popular, 5 sampling repeats.
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.cli_helpers import invoke


@pytest.mark.slow
def test_assess_ml100k_from_the_command_line(tmp_path, ml100k_path):
    spec = tmp_path / "ml100k.toml"
    spec.write_text(f"""
kind = "assess"
name = "ml100k-small"
seed = 5
[dataset]
name = "ml-100k"
path = "{ml100k_path}"
format = "movielens"
[calibration]
presets = "ml-100k"
worlds = 1
[protocol]
n = 10
negatives = 100
metrics = ["recall", "ndcg"]
recommenders = [{{ kind = "lenskit", algorithm = "item_knn", name = "ItemKNN", params = {{ max_nbrs = 20 }} }},
                {{ kind = "popular" }}]
[simulation]
replicates = 1
[sampling]
sizes = [100]
repeats = 5
estimators = ["naive", "CLS", "BV"]
n_boot = 0
""")
    out = tmp_path / "out"
    code, stdout, stderr = invoke(["assess", str(spec), "--out", str(out), "--no-figures"])
    assert code == 0, stderr
    for phase in (
        "[1/6] dataset",
        "[2/6] calibration: reusing presets 'ml-100k'",
        "[3/6] worlds",
        "[4/6] significance",
        "[5/6] sampling",
        "[6/6] report",
    ):
        assert phase in stderr
    assert "Bottom line" in stdout and "Is the observed ranking of your algorithms the true one?" in stdout
    assert str(out / "report.html") in stdout
    errors = pd.read_csv(out / "errors.csv")
    pooled = errors[errors["source"].isin(["all worlds"]) | (errors["component"] != "missing data")]
    assert len(pooled) == 2 * 2 * 3 and pooled["mean"].notna().all()
    worlds = pd.read_csv(out / "worlds.csv")
    assert worlds["used"].sum() == 1 and worlds.loc[worlds["used"], "cell"].item() == "lda-pop"
    dataset = pd.read_csv(out / "dataset.csv").set_index("statistic")["value"]
    assert (int(dataset["n_users"]), int(dataset["n_items"]), int(dataset["n_pairs"])) == (943, 1682, 100000)

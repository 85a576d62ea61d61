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
        "[1/7] dataset",
        "[2/7] calibration: reusing presets 'ml-100k'",
        "[3/7] worlds",
        "[4/7] significance",
        "[5/7] sampling",
        "[6/7] sim-to-real",
        "[7/7] report",
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


def test_the_quick_size_keeps_the_question_and_cuts_what_buys_precision(ml100k_path, monkeypatch):
    from simrec.config.assess import QUICK_BOOT, QUICK_REPEATS, QUICK_REPLICATES, QUICK_USERS, load_assessment

    monkeypatch.setenv("SIMREC_DATA", str(ml100k_path.parent))
    full, quick = load_assessment("ml100k-assess"), load_assessment("ml100k-assess", quick=True)
    f, q = full.spec, quick.spec
    assert q.name == "ml100k-assess-quick" and q.description.endswith("(quick size)")
    assert q.dataset == f.dataset and q.seed == f.seed
    # the protocol is the file's, with at most QUICK_USERS users evaluated (ML-100K's 943: all of them)
    assert q.protocol == f.protocol.model_copy(update={"max_users": QUICK_USERS}) and quick.n_users < QUICK_USERS
    assert q.calibration.worlds == 1 and q.calibration.presets == f.calibration.presets
    assert q.simulation.replicates == QUICK_REPLICATES < f.simulation.replicates
    assert q.sampling.sizes == [f.protocol.negatives] and quick.sample_sizes == [100]
    assert q.sampling.repeats == QUICK_REPEATS and q.sampling.n_boot == min(f.sampling.n_boot, QUICK_BOOT)
    assert q.sampling.estimators == f.sampling.estimators
    assert quick.work().seconds() < full.work().seconds() / 4


@pytest.mark.slow
def test_the_quick_size_of_the_smallest_shipped_assessment_completes(tmp_path, ml100k_path, monkeypatch):
    # the smallest shipped assessment (ml100k-assess) at its quick size, as the README says to run it
    monkeypatch.setenv("SIMREC_DATA", str(ml100k_path.parent))
    out = tmp_path / "out"
    code, stdout, stderr = invoke(["assess", "ml100k-assess", "--quick", "--jobs", "2", "--out", str(out)])
    assert code == 0, stderr
    assert "Bottom line" in stdout and (out / "report.html").is_file()
    worlds = pd.read_csv(out / "worlds.csv")
    assert worlds["used"].sum() == 1

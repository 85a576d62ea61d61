"""``simrec ranks``: a ranks file from a dataset and trained recommenders (simrec.studies.ranks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simrec.config.stress import load_stress_scenario
from simrec.datasets import load_timestamped
from simrec.stress import read_ranks_file
from tests.cli_helpers import invoke

BYO = Path(__file__).parents[1] / "fixtures" / "byo"
SHRUNK = (
    '{ kind = "lenskit", scorer = "simrec_test_scorers:ShrunkPopScorer", name = "Shrunk", '
    "params = { shrinkage = 3.0, id_weight = 0.01 } }"
)


@pytest.fixture()
def timestamped(tmp_path) -> Path:
    """30 users x 25 items, ~30% dense, distinct timestamps (so the latest item is unique)."""
    rng = np.random.default_rng(11)
    u, i = np.nonzero(rng.random((30, 25)) < np.linspace(0.6, 0.05, 25))
    ts = rng.permutation(u.size) + 1000
    path = tmp_path / "data.csv"
    pd.DataFrame({"user": [f"u{x}" for x in u], "item": [f"i{x}" for x in i], "timestamp": ts}).to_csv(
        path, index=False
    )
    return path


def brute_force(path: Path, shrinkage: float, id_weight: float, candidates: str = "unseen") -> pd.DataFrame:
    """Leave-last-out ranks of ShrunkPopScorer by counting, user by user (independent of simrec's split and ranks);
    ``candidates="all"``: among every item, the user's training items included."""
    inter, _ = load_timestamped(path, kind="pairs")
    col = {label: j for j, label in enumerate(inter.item_ids)}  # LensKit sees simrec's item indices
    df = pd.read_csv(path)
    df["col"] = df["item"].map(col)
    last = df.loc[df.groupby("user")["timestamp"].idxmax()]
    last = last[df.groupby("user").size().loc[last["user"]].to_numpy() >= 2]
    train = df.drop(last.index)
    count = np.bincount(train["col"], minlength=inter.n_items).astype(float)
    score = (count + id_weight * np.arange(inter.n_items)) / (count + shrinkage)
    rows = []
    for _, t in last.iterrows():
        seen = set(train.loc[train["user"] == t["user"], "col"])
        cand = np.array([j for j in range(inter.n_items) if candidates == "all" or j not in seen])
        above = cand[score[cand] > score[t["col"]]]
        others = cand[cand != t["col"]]
        rows.append(
            {
                "user": t["user"],
                "rank": 1 + above.size,
                "n_candidates": cand.size,
                "popularity_share": count[above].sum() / count[others].sum(),
            }
        )
    return pd.DataFrame(rows).set_index("user").sort_index()


def test_ranks_equal_a_brute_force_count_and_stress_reads_them(timestamped, tmp_path, monkeypatch):
    monkeypatch.chdir(BYO)  # the scorer's module is imported from the current folder
    out = tmp_path / "ranks.csv"
    code, stdout, err = invoke(
        ["ranks", str(timestamped), "-r", SHRUNK, "-r", "popular", "--split", "last", "--out", str(out), "--seed", "4"]
    )
    assert code == 0, err
    assert f"-> {out}" in stdout
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["user", "recommender", "rank", "n_candidates", "popularity_share"]
    source = read_ranks_file(out)  # the stress harness's file source
    assert [r.name for r in source.recommenders] == ["Shrunk", "popular"]
    got = frame[frame["recommender"] == "Shrunk"].set_index("user").sort_index()
    want = brute_force(timestamped, 3.0, 0.01)
    assert list(got.index) == list(want.index)
    np.testing.assert_array_equal(got["rank"], want["rank"])
    np.testing.assert_array_equal(got["n_candidates"], want["n_candidates"])
    np.testing.assert_allclose(got["popularity_share"], want["popularity_share"], rtol=1e-12)
    scenario = tmp_path / "stress.toml"
    scenario.write_text(
        'kind = "stress"\nname = "mine"\nseed = 1\nrepeats = 2\n[source]\ntype = "file"\n'
        'path = "ranks.csv"\n[sampling]\nschemes = ["binomial", "popularity"]\nsizes = [5]\n'
        "[metrics]\nk_max = 3\ncurve_k = 3\ncurve_sizes = [5]\n"
    )
    load_stress_scenario(scenario)  # validates the file's rows and columns for the popularity scheme


def test_candidates_all_ranks_among_every_item_and_unseen_is_the_default(timestamped, tmp_path, monkeypatch):
    """``--candidates all``: the brute-force count among all items (training items scored by the recommender,
    N_u = n_items); ``--candidates unseen`` writes the default's file byte for byte."""
    monkeypatch.chdir(BYO)
    outs = {}
    for name, extra in (("default", []), ("unseen", ["--candidates", "unseen"]), ("all", ["--candidates", "all"])):
        outs[name] = tmp_path / f"{name}.csv"
        code, _, err = invoke(
            [
                "ranks",
                str(timestamped),
                "-r",
                SHRUNK,
                "-r",
                "popular",
                "--split",
                "last",
                "-q",
                "--out",
                str(outs[name]),
                "--seed",
                "4",
                *extra,
            ]
        )
        assert code == 0, err
    assert outs["default"].read_bytes() == outs["unseen"].read_bytes()
    frame = pd.read_csv(outs["all"])
    got = frame[frame["recommender"] == "Shrunk"].set_index("user").sort_index()
    want = brute_force(timestamped, 3.0, 0.01, candidates="all")
    unseen = brute_force(timestamped, 3.0, 0.01)
    inter, _ = load_timestamped(timestamped, kind="pairs")
    assert list(got.index) == list(want.index)
    np.testing.assert_array_equal(got["rank"], want["rank"])
    np.testing.assert_array_equal(got["n_candidates"], np.full(len(got), inter.n_items))
    np.testing.assert_allclose(got["popularity_share"], want["popularity_share"], rtol=1e-12)
    assert (want["rank"] >= unseen["rank"]).all() and (want["rank"] > unseen["rank"]).any()
    pop = frame[frame["recommender"] == "popular"]
    assert (pop["n_candidates"] == inter.n_items).all() and (pop["rank"] <= inter.n_items).all()
    # a stress scenario reads it; sampling without replacement may draw up to n_items - 1 negatives
    scenario = tmp_path / "stress.toml"
    scenario.write_text(
        'kind = "stress"\nname = "all"\nseed = 1\nrepeats = 2\n[source]\ntype = "file"\n'
        'path = "all.csv"\n[sampling]\nschemes = ["hypergeometric"]\n'
        f"sizes = [{inter.n_items}]\n[metrics]\nk_max = 3\ncurve_k = 3\ncurve_sizes = [5]\n"
    )
    load_stress_scenario(scenario)


@pytest.mark.slow
def test_ties_are_broken_at_random_within_their_bounds(timestamped, tmp_path, monkeypatch):
    """Without the item-index term scores tie (equal counts): G + 1 <= rank <= G + T, shares of the same set."""
    monkeypatch.chdir(BYO)
    tied = SHRUNK.replace("id_weight = 0.01", "id_weight = 0.0")
    ranks = []
    for seed in range(8):
        out = tmp_path / f"r{seed}.parquet"
        code, _, err = invoke(
            ["ranks", str(timestamped), "-r", tied, "--split", "last", "-o", str(out), "-q", "--seed", str(seed)]
        )
        assert code == 0, err
        ranks.append(pd.read_parquet(out).set_index("user").sort_index()["rank"].to_numpy())
    inter, _ = load_timestamped(timestamped, kind="pairs")
    strict = brute_force(timestamped, 3.0, 0.0)["rank"].to_numpy()  # 1 + #strictly above
    ranks = np.array(ranks)
    assert (ranks >= strict).all()
    assert (ranks != ranks[0]).any()  # the seed breaks the ties differently
    assert (ranks <= inter.n_items).all()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["-r", "popular", "--split", "first"], "--split: must be 'last' or 'random'; got 'first'"),
        (["-r", "popular", "--candidates", "every"], "--candidates: must be 'unseen' or 'all'; got 'every'"),
        (["-r", "popular", "-o", "OUT/r.txt"], "--out: must end in .csv, .parquet, .pq"),
        (["-r", "knn"], "--recommender: must be a LensKit algorithm"),
        (["-r", "{ kind = oracle }"], "--recommender: not a TOML inline table"),
        (["-r", '{ kind = "oracle" }'], "--recommender[0]: oracle needs the true preferences"),
        (
            ["-r", '{ kind = "lenskit", algorithm = "item_knn", params = { k = 3 } }'],
            "--recommender[0].params.k: unknown parameter of ItemKNNScorer",
        ),
        (["-r", "../evil:C"], "scorer: must be an import path"),
        (["-r", "simrec_test_scorers_absent:C"], "no module named 'simrec_test_scorers_absent'"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(timestamped, tmp_path, args, needle):
    out = tmp_path / "r.csv"
    args = [a.replace("OUT", str(tmp_path)) for a in args]
    if "-o" not in args:
        args += ["-o", str(out)]
    code, _, err = invoke(["ranks", str(timestamped), *args])
    assert code == 2 and err.startswith("simrec: error: ") and "Traceback" not in err, err
    assert needle in err, err
    assert not out.exists()


def test_existing_output_and_missing_data(timestamped, tmp_path):
    out = tmp_path / "r.csv"
    out.write_text("keep me")
    code, _, err = invoke(["ranks", str(timestamped), "-r", "popular", "-o", str(out)])
    assert code == 2 and "exists; use --overwrite" in err and out.read_text() == "keep me"
    code, _, err = invoke(["ranks", str(tmp_path / "nope.csv"), "-r", "popular", "-o", str(tmp_path / "x.csv")])
    assert code == 2 and "Traceback" not in err and "nope.csv" in err, err
    code, _, err = invoke(
        ["ranks", str(timestamped), "-r", "popular", "-o", str(out), "--overwrite", "--min-items", "99", "-q"]
    )
    assert code == 2 and "no user has at least `min_items` = 99" in err, err
    code, _, err = invoke(["ranks", str(timestamped), "-r", "popular", "-o", str(out), "--overwrite", "-q"])
    assert code == 0 and read_ranks_file(out).recommenders[0].name == "popular"


def test_a_failing_scorer_is_named_in_one_line_and_nothing_is_written(timestamped, tmp_path, monkeypatch):
    monkeypatch.chdir(BYO)
    out = tmp_path / "r.csv"
    code, _, err = invoke(
        ["ranks", str(timestamped), "-r", "popular", "-r", "simrec_test_scorers:FailingScorer", "-o", str(out), "-q"]
    )
    assert code == 1 and "Traceback" not in err, err
    assert "recommender 'FailingScorer' failed: ValueError: boom while training (nothing was written" in err
    assert not out.exists()


def test_max_memory_refuses_before_reading_or_training(timestamped, tmp_path):
    """``--max-memory``: the files' size is checked before reading, the models' and blocks' estimate before training."""
    out = tmp_path / "r.csv"
    garbage = tmp_path / "garbage.csv"  # unreadable: refused for memory, so the check came before reading
    garbage.write_bytes(b"\x00\x01 not a dataset")
    code, _, err = invoke(["ranks", str(garbage), "-r", "popular", "-o", str(out), "--max-memory", "100M"])
    assert code == 2 and "too large for the memory limit of 100.0 MiB (--max-memory)" in err, err
    assert "--jobs" not in err and "Traceback" not in err and not out.exists(), err
    code, _, err = invoke(["ranks", str(timestamped), "-r", "item_knn", "-o", str(out), "--max-memory", "300M"])
    assert code == 2 and "too large for the memory limit of 300.0 MiB" in err and "one block of scores" in err, err
    assert "change --max-memory" not in err, err  # the fixed parts name no option to change
    assert not out.exists()
    code, _, err = invoke(["ranks", str(timestamped), "-r", "popular", "-o", str(out), "--max-memory", "lots"])
    assert code == 2 and "`--max-memory` must be a size such as 8G" in err and not out.exists()
    code, _, _ = invoke(["ranks", str(timestamped), "-r", "popular", "-o", str(out), "--max-memory", "2G", "-q"])
    assert code == 0 and out.exists()


def test_ranks_needs_count_what_each_model_keeps():
    """The estimate of :func:`simrec.config.budget.ranks_needs`: its formulas at ML-20M size, part by part."""
    from simrec.config.budget import BYTES_PER_PAIR, ranks_needs
    from simrec.config.recommenders import parse_recommender_option

    size = {"n_users": 138_493, "n_items": 26_744, "n_pairs": 20_000_263}
    specs = [
        parse_recommender_option(s)
        for s in (
            "item_knn",
            '{ kind = "lenskit", algorithm = "item_knn", params = { save_nbrs = 100 } }',
            "implicit_mf",
            "popular",
        )
    ]
    (kind,), fixed = ranks_needs(specs, **size)
    data, block, knn, knn100, mf, pop = (n.bytes for n in kind)
    assert fixed == [] and data >= BYTES_PER_PAIR * size["n_pairs"]
    assert knn == pytest.approx(12.0 * 26_744**2 + 12.0 * size["n_pairs"])  # all similarities: 8.6 GB
    assert knn100 == pytest.approx(12.0 * 26_744 * 100 + 12.0 * size["n_pairs"])
    assert mf == pytest.approx(16.0 * 50 * (138_493 + 26_744) + 12.0 * size["n_pairs"] + 160 * 2**20)
    assert block == 40 * 2**21 and pop > 0
    ((*_, cf),), _ = ranks_needs([parse_recommender_option("item_cf")], **size)
    assert cf.bytes == pytest.approx(24.0 * 26_744**2 + 12.0 * size["n_pairs"])  # K&R's item CF: 17 GB

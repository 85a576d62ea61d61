"""Leave-last-out split (simrec.loo.leave_last_out) and timestamped loading (simrec.datasets.load_timestamped).

Reference: a brute-force per-user maximum over the raw records (Krichene &
Rendle 2020, §2: each user's last event is held out).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simrec.datasets import DatasetError, binarize_events, load_timestamped
from simrec.loo import leave_last_out

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _events(rng: np.random.Generator, n_users=80, n_items=50, n_records=900, ties=False) -> pd.DataFrame:
    t = rng.integers(0, 40, n_records) if ties else rng.permutation(n_records) * 10.0
    return pd.DataFrame(
        {
            "user": rng.integers(0, n_users, n_records),
            "item": rng.integers(0, n_items, n_records),
            "time": t.astype(float),
        }
    )


def _brute_latest(df: pd.DataFrame) -> dict[int, set[int]]:
    """Per user, the items whose latest record is the user's latest record."""
    last = df.groupby(["user", "item"])["time"].max().reset_index()
    out = {}
    for u, g in last.groupby("user"):
        out[u] = set(g.loc[g["time"] == g["time"].max(), "item"])
    return out


def test_binarize_events_keeps_each_pairs_latest_time():
    inter, times = binarize_events(["a", "a", "b", "a"], [2, 1, 1, 2], [5.0, 7.0, 1.0, 9.0])
    assert inter.n_pairs == 3
    # stored pairs, row by row and items ascending: (a, 1), (a, 2), (b, 1)
    np.testing.assert_array_equal(inter.matrix.indices, [0, 1, 0])
    np.testing.assert_array_equal(times, [7.0, 9.0, 1.0])
    inter, times = binarize_events(["a", "a"], [1, 1], [3.0, 8.0], [5.0, 1.0], min_rating=4)
    np.testing.assert_array_equal(times, [3.0])  # the record below the threshold does not count


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_holds_out_each_users_latest_item(seed):
    rng = np.random.default_rng(seed)
    df = _events(rng)
    inter, times = binarize_events(df["user"].to_numpy(), df["item"].to_numpy(), df["time"].to_numpy())
    split = leave_last_out(inter, times, rng=seed, min_items=2)
    latest = _brute_latest(df)
    counts = inter.user_counts()
    for row, u in enumerate(inter.user_ids):
        test = set(inter.item_ids[split.test.matrix[[row]].indices])
        if counts[row] >= 2:
            assert test == latest[u]  # distinct times: exactly the one latest item
        else:
            assert test == set()
    assert split.train.n_pairs + split.test.n_pairs == inter.n_pairs


def test_ties_at_the_latest_time_are_broken_at_random():
    rng = np.random.default_rng(5)
    df = _events(rng, ties=True)
    inter, times = binarize_events(df["user"].to_numpy(), df["item"].to_numpy(), df["time"].to_numpy())
    latest = _brute_latest(df)
    picks = []
    for seed in range(30):
        split = leave_last_out(inter, times, rng=seed, min_items=1)
        held = {}
        for row, u in enumerate(inter.user_ids):
            items = set(inter.item_ids[split.test.matrix[[row]].indices])
            assert len(items) == 1 and items <= latest[u]
            held[u] = items.pop()
        picks.append(held)
    tied = [u for u, s in latest.items() if len(s) > 1]
    assert tied  # the data has ties
    assert all(len({p[u] for p in picks}) > 1 for u in tied)  # every tie is resolved differently across seeds
    again = leave_last_out(inter, times, rng=3, min_items=1)
    assert (again.test.matrix != leave_last_out(inter, times, rng=3, min_items=1).test.matrix).nnz == 0


def test_validation():
    inter, times = binarize_events([1, 2], [1, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match="one entry per stored pair"):
        leave_last_out(inter, times[:1])
    with pytest.raises(ValueError, match="finite numbers"):
        leave_last_out(inter, np.array([1.0, np.nan]))


def test_load_timestamped_movielens_fixture_matches_its_file():
    inter, times = load_timestamped(FIXTURES / "ml-100k")
    raw = pd.read_csv(FIXTURES / "ml-100k" / "u.data", sep="\t", header=None, names=["u", "i", "r", "t"])
    expect = raw.groupby(["u", "i"])["t"].max().sort_index()
    np.testing.assert_array_equal(times, expect.to_numpy(float))
    assert inter.n_pairs == len(expect)


def test_load_timestamped_tables(tmp_path):
    table = tmp_path / "ratings.csv"
    table.write_text("user,item,rating,timestamp\nu1,a,5,100\nu1,b,4,300\nu1,a,3,200\nu2,a,1,50\n")
    inter, times = load_timestamped(table)
    np.testing.assert_array_equal(times, [200.0, 300.0, 50.0])
    table.write_text("user,item,rating,timestamp\nu1,a,5,100\nu1,b,4,soon\n")
    with pytest.raises(DatasetError, match=r"timestamp 'soon' in column 'timestamp' \(line 3\)"):
        load_timestamped(table)
    with pytest.raises(DatasetError, match="has no timestamps"):
        load_timestamped(FIXTURES / "amazon" / next(p.name for p in (FIXTURES / "amazon").iterdir()), kind="amazon")


def test_a_stress_dataset_source_can_hold_out_each_users_latest_item(tmp_path):
    from simrec.config.stress import load_stress_scenario
    from simrec.studies.stress import build_source_data

    rng = np.random.default_rng(11)
    df = _events(rng, n_users=40, n_items=60, n_records=800)
    df.rename(columns={"time": "timestamp"}).to_csv(tmp_path / "events.csv", index=False)
    spec = tmp_path / "s.toml"
    spec.write_text("""
kind = "stress"
name = "last"
seed = 4
[source]
type = "dataset"
name = "events"
path = "events.csv"
format = "pairs"
split = "last"
recommenders = [{ kind = "popular" }]
[sampling]
sizes = [20]
""")
    sc, path = load_stress_scenario(spec)
    data = build_source_data(sc, sc.data_path(path))
    inter, _ = load_timestamped(tmp_path / "events.csv")
    latest = _brute_latest(df)
    for u, target in zip(data.users, data.targets):
        assert inter.item_ids[target] in latest[inter.user_ids[u]]
    assert len(data.users) == int((inter.user_counts() >= 2).sum())

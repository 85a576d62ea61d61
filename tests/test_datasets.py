"""Reference-dataset loaders, binarize, k_core and describe (simrec.datasets).

Fixtures in tests/fixtures/ are tiny hand-written files in each published
layout; expected matrices below are read off those files by hand.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.datasets import (
    DatasetError,
    DatasetSummary,
    binarize,
    describe,
    detect_kind,
    gini,
    k_core,
    load_amazon_5core,
    load_dataset,
    load_movielens,
    load_pairs,
    load_steam,
)
from simrec.datasets.steam import parse_steam_line
from simrec.interactions import Interactions

FIX = Path(__file__).resolve().parent / "fixtures"
ML100K_REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ml-100k"


def dense(inter: Interactions) -> list[list[int]]:
    return inter.matrix.toarray().tolist()


def ids(a) -> list:
    return [x.item() if hasattr(x, "item") else x for x in a]


# -- MovieLens ----------------------------------------------------------------
ML_CASES = [
    # (fixture, user ids, item ids, dense matrix) read off the files by hand
    ("ml-100k", [1, 2, 3], [10, 20, 30], [[1, 1, 0], [1, 0, 1], [1, 0, 1]]),
    # ratings.dat repeats (1, 1193): merged, 5 pairs
    ("ml-1m", [1, 2, 3], [661, 1193, 3408], [[1, 1, 0], [0, 1, 1], [1, 0, 0]]),
    # user ids sort numerically (10 after 2)
    ("ml-latest-small", [1, 2, 10], [1, 3], [[1, 1], [1, 0], [0, 1]]),
]


@pytest.mark.parametrize(("name", "users", "items", "mat"), ML_CASES)
def test_movielens_layouts(name, users, items, mat):
    inter = load_movielens(FIX / name)
    assert ids(inter.user_ids) == users
    assert ids(inter.item_ids) == items
    assert dense(inter) == mat
    assert load_dataset(FIX / name).n_pairs == inter.n_pairs


def test_movielens_zip_and_file_path(tmp_path):
    zpath = tmp_path / "ml-1m.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("ml-1m/", "")
        zf.write(FIX / "ml-1m" / "ratings.dat", "ml-1m/ratings.dat")
    assert dense(load_movielens(zpath)) == ML_CASES[1][3]
    assert detect_kind(zpath) == "movielens"
    # the ratings file itself reads its folder
    assert dense(load_dataset(FIX / "ml-100k" / "u.data")) == ML_CASES[0][3]


def test_movielens_min_rating():
    # u.data ratings >= 4: (1,10,5), (2,10,4), (2,30,5)
    inter = load_movielens(FIX / "ml-100k", min_rating=4)
    assert ids(inter.user_ids) == [1, 2] and ids(inter.item_ids) == [10, 30]
    assert dense(inter) == [[1, 0], [1, 1]]


def test_movielens_errors(tmp_path):
    with pytest.raises(DatasetError, match="no such file or folder.*u.data") as e:
        load_movielens(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(e.value)
    empty = tmp_path / "ml-empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="folder has none of u.data, ratings.dat, ratings.csv"):
        load_movielens(empty)
    bad = tmp_path / "ml-100k"
    bad.mkdir()
    (bad / "u.data").write_text("1\t10\t5\t881250949\n2\t20\t4\t881250949\nthis is garbage\n")
    with pytest.raises(DatasetError, match=r"u\.data, line 3: .*expected user<TAB>item") as e:
        load_movielens(bad)
    assert e.value.line == 3
    with pytest.raises(DatasetError, match=r"Digital_Music\.csv: not a folder or zip archive; expected a MovieLens"):
        load_movielens(FIX / "amazon" / "Digital_Music.csv")
    with pytest.raises(DatasetError, match="no rating >= min_rating=6"):
        load_movielens(FIX / "ml-100k", min_rating=6)


def _lenskit_and_ours(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    from lenskit.data import load_movielens_df

    from simrec.datasets.movielens import _frame

    theirs = load_movielens_df(path)
    theirs["timestamp"] = (theirs["timestamp"] - pd.Timestamp(0)) // pd.Timedelta(seconds=1)
    return theirs, _frame(path)[1]


@pytest.mark.parametrize("name", ["ml-100k", "ml-1m", "ml-latest-small", "ml-1m.zip", "unnamed-1m", "ML-1M"])
def test_movielens_frames_are_lenskits(name, tmp_path):
    """simrec parses MovieLens itself (no LensKit import, issue 29): the frame LensKit's loader gives,
    column for column and dtype for dtype (timestamps as integer seconds), for every layout, a zip,
    and folders whose name gives no generation (detected by their files, as LensKit does)."""
    if name.endswith(".zip"):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("ml-1m/", "")
            zf.write(FIX / "ml-1m" / "ratings.dat", "ml-1m/ratings.dat")
    elif name in ("unnamed-1m", "ML-1M"):
        path = tmp_path / name
        shutil.copytree(FIX / "ml-1m", path)
    else:
        path = FIX / name
    theirs, ours = _lenskit_and_ours(path)
    assert list(ours.columns) == list(theirs.columns)
    for col in ("user_id", "item_id", "rating"):
        assert ours[col].dtype == theirs[col].dtype
        np.testing.assert_array_equal(ours[col].to_numpy(), theirs[col].to_numpy())
    np.testing.assert_array_equal(ours["timestamp"].to_numpy(np.int64), theirs["timestamp"].to_numpy(np.int64))


@pytest.mark.parametrize("name", ["ml-100k", "ml-1m"])
def test_real_movielens_frames_are_lenskits(name):
    path = ML100K_REAL.parent / name
    if not path.exists():
        pytest.skip(f"shared/data/{name} not present")
    theirs, ours = _lenskit_and_ours(path)
    for col in ("user_id", "item_id", "rating", "timestamp"):
        np.testing.assert_array_equal(ours[col].to_numpy(), theirs[col].to_numpy())


@pytest.mark.slow
def test_loading_movielens_and_a_baseline_evaluation_import_neither_torch_nor_lenskit():
    """Cold paths (issue 29): importing simrec, loading MovieLens, splitting it, the baselines' lists
    and list metrics, and a replicate of the quickstart's baselines load neither PyTorch nor LensKit
    (about 1.4 s of CPU; they load when a LensKit model is trained)."""
    code = f"""
import sys
import numpy as np
import simrec
from simrec.datasets import load_movielens
from simrec.split import holdout
from simrec.recommenders import Oracle, Popular, RandomRecommender
from simrec.metrics import list_metrics
from simrec.config.run import load_scenario
from simrec.experiment import run_replicate
data = load_movielens({str(FIX / "ml-1m")!r})
split = holdout(data, 0.5, np.random.default_rng(0))
for rec in (Popular(), RandomRecommender(), Oracle()):
    lists = rec.recommend(split.train, split.test.matrix, 2, np.random.default_rng(1))
    list_metrics(lists, split.test.matrix)
sc = load_scenario("quickstart")[0]
run_replicate(sc.worlds()[0], sc.evaluation.build(), 0)
print(",".join(m for m in ("torch", "lenskit") if m in sys.modules))
"""
    env = {**os.environ, "PYTHONPATH": str(FIX.parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == ""


def test_movielens_generation_named_but_absent(tmp_path):
    """A folder named after one generation is read as that generation only, as LensKit reads it."""
    folder = tmp_path / "ml-1m"
    folder.mkdir()
    shutil.copy(FIX / "ml-latest-small" / "ratings.csv", folder / "ratings.csv")
    with pytest.raises(DatasetError, match="no ratings file of the MovieLens generation its name gives"):
        load_movielens(folder)


@pytest.mark.skipif(not ML100K_REAL.exists(), reason="shared/data/ml-100k not present")
def test_real_ml100k():
    inter = load_movielens(ML100K_REAL)
    # GroupLens README: 100,000 ratings by 943 users on 1,682 movies, >= 20 each
    assert (inter.n_users, inter.n_items, inter.n_pairs) == (943, 1682, 100_000)
    assert inter.user_counts().min() == 20
    s = describe(inter)
    assert s.density == pytest.approx(100_000 / (943 * 1682))


# -- Amazon -------------------------------------------------------------------
AZ14_USERS = ["A38IRL0X2T4DPF", "A3EBHHCZO6V2A4", "AZPWAXJG9OJXV"]


def test_amazon_2014_json():
    inter = load_amazon_5core(FIX / "amazon" / "reviews_Digital_Music_5.json")
    assert list(inter.user_ids) == AZ14_USERS
    assert list(inter.item_ids) == ["5555991584", "B00000016W"]
    # AZPWAXJG9OJXV reviewed B00000016W three times: merged
    assert dense(inter) == [[0, 1], [1, 1], [1, 1]]
    hi = load_amazon_5core(FIX / "amazon" / "reviews_Digital_Music_5.json", min_rating=4)
    assert list(hi.user_ids) == ["A3EBHHCZO6V2A4", "AZPWAXJG9OJXV"]
    assert dense(hi) == [[1, 1], [0, 1]]


def test_amazon_2018_json_and_gzip(tmp_path):
    src = FIX / "amazon" / "Digital_Music_5.json"
    expected = [[1, 1], [1, 0]]  # A2TYZ821XXK2YZ: both; A3OFSREZADFUDY: 3426958910
    inter = load_amazon_5core(src)
    assert list(inter.user_ids) == ["A2TYZ821XXK2YZ", "A3OFSREZADFUDY"]
    assert list(inter.item_ids) == ["3426958910", "5557706259"]
    assert dense(inter) == expected
    gz = tmp_path / "Digital_Music_5.json.gz"
    with open(src, "rb") as fi, gzip.open(gz, "wb") as fo:
        shutil.copyfileobj(fi, fo)
    assert dense(load_amazon_5core(gz)) == expected
    assert detect_kind(gz) == "amazon"
    assert dense(load_amazon_5core(src, min_rating=3)) == [[1], [1]]


def test_amazon_python_literal_lines(tmp_path):
    # some 2014 McAuley files are Python literals rather than JSON
    p = tmp_path / "reviews.json"
    p.write_text(
        "{'reviewerID': 'A1', 'asin': 'X', 'overall': 5.0}\n{'reviewerID': 'A2', 'asin': 'X', 'overall': 1.0}\n"
    )
    inter = load_dataset(p)
    assert list(inter.user_ids) == ["A1", "A2"] and dense(inter) == [[1], [1]]


def test_amazon_ratings_csv_matches_lenskit(tmp_path):
    from lenskit.data.amazon import load_amazon_ratings

    csv14 = FIX / "amazon" / "ratings_Digital_Music.csv"
    inter = load_amazon_5core(csv14)
    assert list(inter.user_ids) == ["A1WR23ER5HMAA9", "A2EFCYXHNK06IS", "A2IR4Q0GPAFJKW"]
    assert dense(inter) == [[1, 0], [1, 1], [0, 1]]
    # 2018 ratings-only files are item,user,rating,timestamp
    csv18 = FIX / "amazon" / "Digital_Music.csv"
    inter18 = load_amazon_5core(csv18)
    assert list(inter18.user_ids) == ["A1ZCPG3D3HGRSS", "AC2PL52NKPL29"]
    assert list(inter18.item_ids) == ["0001388703", "B00000016W"]
    assert dense(inter18) == [[1, 1], [1, 0]]
    assert load_dataset(csv18).n_pairs == 3
    # same pairs as LensKit's own loader (it refuses repeats: drop the duplicate line)
    nodup = tmp_path / "Digital_Music.csv"
    nodup.write_text("".join(csv18.read_text().splitlines(keepends=True)[:3]))
    for path in (csv14, nodup):
        ours = load_amazon_5core(path)
        lk = load_amazon_ratings(path).interaction_table(format="pandas", original_ids=True)
        theirs = set(zip(lk["user_id"], lk["item_id"]))
        r, c = ours.matrix.nonzero()
        assert set(zip(ours.user_ids[r], ours.item_ids[c])) == theirs
    # forcing the order swaps the roles
    swapped = load_amazon_5core(csv18, csv_order="user-item")
    assert list(swapped.user_ids) == ["0001388703", "B00000016W"]


def test_amazon_errors(tmp_path):
    with pytest.raises(DatasetError, match="no such file; expected Amazon review JSON"):
        load_amazon_5core(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"reviewerID": "A1", "asin": "X", "overall": 5.0}\n{"reviewerID": "A2", "asin": \n')
    with pytest.raises(DatasetError, match=r"bad\.json, line 2: cannot parse") as e:
        load_amazon_5core(bad)
    assert e.value.line == 2
    nokey = tmp_path / "nokey.json"
    nokey.write_text('{"reviewerID": "A1", "asin": "X", "overall": 5.0}\n{"user": "A2", "asin": "Y"}\n')
    with pytest.raises(DatasetError, match=r"line 2: no 'reviewerID' key; expected Amazon review JSON"):
        load_amazon_5core(nokey)
    csv = tmp_path / "r.csv"
    csv.write_text("A1,X,5.0,100\nA2,Y,high,100\n")
    with pytest.raises(DatasetError, match=r"r\.csv, line 2: malformed record"):
        load_amazon_5core(csv)
    wide = tmp_path / "wide.csv"
    wide.write_text("A1,X,5.0,100,extra\nA2,Y,4.0,100,extra\n")
    with pytest.raises(DatasetError, match=r"wide\.csv, line 1: 5 fields; expected 4"):
        load_amazon_5core(wide)
    with pytest.raises(DatasetError, match="no review with overall >= min_rating=6"):
        load_amazon_5core(FIX / "amazon" / "Digital_Music_5.json", min_rating=6)
    with pytest.raises(ValueError, match="`csv_order` must be one of"):
        load_amazon_5core(csv, csv_order="rows")


# -- Steam --------------------------------------------------------------------
STEAM = FIX / "steam" / "australian_users_items.json"


def test_steam_literal_lines():
    inter = load_steam(STEAM)
    # 'evcentric' owns nothing: dropped; item ids stay strings in string order
    assert list(inter.user_ids) == ["76561197970982479", "js41637", "keyorder"]
    assert list(inter.item_ids) == ["10", "20", "300", "70"]
    assert dense(inter) == [[1, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 0]]
    assert detect_kind(STEAM) == "steam"
    played = load_steam(STEAM, min_playtime=1)
    assert list(played.item_ids) == ["10", "20", "70"]
    assert dense(played) == [[1, 0, 1], [1, 0, 0], [0, 1, 0]]


def test_steam_fast_parser_equals_literal_eval():
    import ast

    for line in STEAM.read_text().splitlines():
        rec = ast.literal_eval(line)
        want = (
            rec["user_id"],
            [i["item_id"] for i in rec["items"]],
            [float(i["playtime_forever"]) for i in rec["items"]],
        )
        assert parse_steam_line(line) == want


_names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    user=_names,
    items=st.lists(st.tuples(_names, _names, st.integers(0, 10**6)), max_size=4),
)
def test_steam_fast_parser_property(user, items):
    """Names with quotes, backslashes, braces, newlines, unicode: regex path == literal_eval."""
    rec = {
        "user_id": user,
        "items_count": len(items),
        "steam_id": "1",
        "user_url": "u",
        "items": [{"item_id": i, "item_name": n, "playtime_forever": t, "playtime_2weeks": 0} for i, n, t in items],
    }
    assert parse_steam_line(repr(rec)) == (user, [i for i, _, _ in items], [float(t) for _, _, t in items])


def test_steam_errors(tmp_path):
    with pytest.raises(DatasetError, match="no such file; expected Steam"):
        load_steam(tmp_path / "x.json")
    bad = tmp_path / "steam.json"
    lines = STEAM.read_text().splitlines()
    bad.write_text(lines[0] + "\n{'user_id': 'x', 'items': [\n")
    with pytest.raises(DatasetError, match=r"steam\.json, line 2: cannot parse"):
        load_steam(bad)
    only_empty = tmp_path / "empty_users.json"
    only_empty.write_text(lines[2] + "\n")
    with pytest.raises(DatasetError, match="no user owns an item"):
        load_steam(only_empty)
    with pytest.raises(DatasetError, match="no item with playtime_forever >= 1000"):
        load_steam(STEAM, min_playtime=1000)
    data = gzip.compress(STEAM.read_bytes() * 20)
    trunc = tmp_path / "steam.json.gz"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"steam\.json\.gz: cannot be read \(Compressed file ended"):
        load_steam(trunc)


# -- generic pairs ------------------------------------------------------------
def test_pairs_csv_tsv_parquet(tmp_path):
    inter = load_pairs(FIX / "pairs" / "pairs.csv")
    assert list(inter.user_ids) == ["u1", "u10", "u2"]
    assert list(inter.item_ids) == ["i1", "i2", "i3"]
    assert dense(inter) == [[1, 1, 0], [0, 0, 1], [1, 0, 0]]
    hi = load_pairs(FIX / "pairs" / "pairs.csv", rating_col="rating", min_rating=3)
    assert list(hi.user_ids) == ["u1", "u2"] and dense(hi) == [[1], [1]]
    tsv = load_pairs(FIX / "pairs" / "pairs.tsv", rating_col="score", min_rating=0.5)
    assert ids(tsv.user_ids) == [7] and ids(tsv.item_ids) == [100, 200]
    pq = tmp_path / "pairs.parquet"
    pd.read_csv(FIX / "pairs" / "pairs.csv").rename(columns={"user": "uid", "item": "iid"}).to_parquet(pq)
    inter_pq = load_dataset(pq, user_col="uid", item_col="iid")
    assert list(inter_pq.user_ids) == ["u1", "u10", "u2"] and dense(inter_pq) == dense(inter)
    semi = tmp_path / "data.txt"
    semi.write_text("user;item\na;b\n")
    assert dense(load_pairs(semi)) == [[1]]


def test_pairs_errors(tmp_path):
    with pytest.raises(DatasetError, match="no such file; expected a CSV/TSV"):
        load_pairs(tmp_path / "none.csv")
    with pytest.raises(
        DatasetError, match=r"pairs\.csv: no column 'movie'; found columns \['user', 'item', 'rating'\]"
    ):
        load_pairs(FIX / "pairs" / "pairs.csv", item_col="movie")
    garbage = tmp_path / "g.csv"
    garbage.write_text("user,item,rating\na,b,1\nc,d,1,extra,fields\n")
    with pytest.raises(DatasetError, match=r"g\.csv: .*line 3"):
        load_pairs(garbage)
    badr = tmp_path / "r.csv"
    badr.write_text("user,item,rating\na,b,1\nc,d,five\n")
    with pytest.raises(DatasetError, match=r"r\.csv, line 3: rating 'five'"):
        load_pairs(badr, rating_col="rating")
    miss = tmp_path / "m.csv"
    miss.write_text("user,item\na,b\n,d\n")
    with pytest.raises(DatasetError, match=r"m\.csv, line 3: missing value in column 'user'"):
        load_pairs(miss)
    with pytest.raises(DatasetError, match=r"no record with rating >= min_rating=10"):
        load_pairs(FIX / "pairs" / "pairs.csv", rating_col="rating", min_rating=10)
    with pytest.raises(ValueError, match="`min_rating` needs `rating_col`"):
        load_pairs(FIX / "pairs" / "pairs.csv", min_rating=3)
    notpq = tmp_path / "x.parquet"
    notpq.write_text("user,item\n")
    with pytest.raises(DatasetError, match=r"x\.parquet: not a Parquet file"):
        load_pairs(notpq)


# -- detection ----------------------------------------------------------------
def test_load_dataset_detection_and_errors(tmp_path):
    assert detect_kind(FIX / "ml-1m") == "movielens"
    assert detect_kind(FIX / "amazon" / "reviews_Digital_Music_5.json") == "amazon"
    assert detect_kind(FIX / "amazon" / "ratings_Digital_Music.csv") == "amazon"
    assert detect_kind(FIX / "pairs" / "pairs.tsv") == "pairs"
    # kind= forces a loader; here the wrong one fails naming the file and the layout
    with pytest.raises(DatasetError, match=r"reviews_Digital_Music_5\.json, line 1: cannot parse.*Steam"):
        load_dataset(FIX / "amazon" / "reviews_Digital_Music_5.json", kind="steam")
    with pytest.raises(DatasetError, match="no such file or folder"):
        load_dataset(tmp_path / "nothing")
    other = tmp_path / "other.json"
    other.write_text('{"name": "x"}\n')
    with pytest.raises(DatasetError, match=r"other\.json: line 1 is an object without 'reviewerID'"):
        load_dataset(other)
    txt = tmp_path / "notes.txt"
    txt.write_text("hello world\n")
    with pytest.raises(DatasetError, match=r"notes\.txt: unknown layout"):
        load_dataset(txt)
    with pytest.raises(ValueError, match="`kind` must be one of"):
        load_dataset(txt, kind="netflix")
    with pytest.raises(TypeError, match="'min_playtime' not accepted by the 'movielens' loader"):
        load_dataset(FIX / "ml-1m", min_playtime=3)


# -- binarize -----------------------------------------------------------------
def test_binarize():
    inter = binarize(["b", "a", "b", "b"], [2, 1, 2, 3], [1.0, 5.0, 4.0, np.nan], min_rating=4)
    # (b,2) passes through its second record; (b,3) has a NaN rating: dropped
    assert list(inter.user_ids) == ["a", "b"] and ids(inter.item_ids) == [1, 2]
    assert dense(inter) == [[1, 0], [0, 1]]
    assert binarize([], []).matrix.shape == (0, 0)
    with pytest.raises(ValueError, match="`min_rating` needs `ratings`"):
        binarize([1], [1], min_rating=3)
    with pytest.raises(ValueError, match="missing values"):
        binarize([1, None], [1, 2])
    with pytest.raises(ValueError, match="equal length"):
        binarize([1, 2], [1])


# -- k-core -------------------------------------------------------------------
def _inter(rows: list[list[int]], n_items: int) -> Interactions:
    u = [r for r, items in enumerate(rows) for _ in items]
    i = [c for items in rows for c in items]
    return Interactions.from_pairs(
        np.array(u, dtype=np.int64),
        np.array(i, dtype=np.int64),
        (len(rows), n_items),
        user_ids=np.array([f"u{r}" for r in range(len(rows))]),
        item_ids=np.array([f"i{c}" for c in range(n_items)]),
    )


def test_k_core_hand_case():
    x = _inter([[0, 1, 2], [0, 1], [0, 2], [3], [1, 3]], 4)
    # k=2: drop u3 -> i3 has 1 -> drop (u4,i3) -> u4 has 1 -> drop (u4,i1): stable
    c2 = k_core(x, 2)
    assert list(c2.user_ids) == ["u0", "u1", "u2"] and list(c2.item_ids) == ["i0", "i1", "i2"]
    assert dense(c2) == [[1, 1, 1], [1, 1, 0], [1, 0, 1]]
    # k=3: only u0 has 3 items, then each item has 1 user: nothing survives
    assert k_core(x, 3).matrix.shape == (0, 0)
    assert k_core(x, 1).n_pairs == x.n_pairs
    with pytest.raises(ValueError, match=r"`k` must be an integer in \[1, inf\]; got 0"):
        k_core(x, 0)


def _naive_k_core(m: np.ndarray, k: int) -> np.ndarray:
    m = m.copy()
    while True:
        bad_r = (m.sum(1) < k) & (m.sum(1) > 0)
        bad_c = (m.sum(0) < k) & (m.sum(0) > 0)
        if not bad_r.any() and not bad_c.any():
            return m
        m[bad_r] = 0
        m[:, bad_c] = 0


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=12),
    k=st.integers(1, 4),
)
def test_k_core_property(data, k):
    m = np.array(data, dtype=np.int8)
    u, i = np.nonzero(m)
    x = Interactions.from_pairs(u, i, m.shape, user_ids=np.arange(m.shape[0]), item_ids=np.arange(m.shape[1]))
    core = k_core(x, k)
    if core.n_pairs:
        assert core.user_counts().min() >= k and core.item_counts().min() >= k
    # same pairs as a naive dense fixed point (the maximal k-core), and idempotent
    ref = _naive_k_core(m, k)
    r, c = core.matrix.nonzero()
    assert set(zip(core.user_ids[r].tolist(), core.item_ids[c].tolist())) == set(zip(*map(list, np.nonzero(ref))))
    assert k_core(core, k).n_pairs == core.n_pairs


# -- describe -----------------------------------------------------------------
def test_describe_and_gini():
    x = _inter([[0, 1], [0], [0, 1, 2]], 4)  # item 3 never observed
    s = describe(x, name="toy")
    assert isinstance(s, DatasetSummary)
    assert (s.n_users, s.n_items, s.n_pairs) == (3, 4, 6)
    assert s.density == pytest.approx(6 / 12)
    a, p = s.activity, s.popularity
    assert (a.min, a.median, a.mean, a.max, a.n_empty) == (1, 2, 2, 3, 0)
    assert (p.min, p.median, p.mean, p.max, p.n_empty) == (0, 1.5, 1.5, 3, 1)
    # activity 1,2,3: sum (2i-n-1)x = -2*1 + 0*2 + 2*3 = 4 -> 4 / (3*6) = 2/9
    assert a.gini == pytest.approx(2 / 9)
    # popularity 0,1,2,3: -3*0 - 1*1 + 1*2 + 3*3 = 10 -> 10 / (4*6) = 5/12
    assert p.gini == pytest.approx(5 / 12)
    assert gini(np.array([1, 1, 2])) == pytest.approx(1 / 6)
    assert gini(np.array([0, 0, 0, 4])) == pytest.approx(0.75)  # (n-1)/n: one item holds all
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert np.isnan(gini(np.zeros(3)))
    text = s.to_text()
    assert "toy" in text and "user activity" in text and "item popularity" in text and "50.0000%" in text
    assert str(s) == text and s.to_dict()["popularity"]["n_empty"] == 1

"""A sweep with ratings end to end (issue 24): ``simrec calibrate`` on a tiny rated table through to a preset.

Before the fix, a rated cell searched its profile sizes within the dataset's sizes *after* its ``min_rating``
binarisation, while a rated world draws consumed (rated) items and keeps those rated at least ``min_rating``: it
could not be as dense as the data (on this fixture every trial was refused, their similarity statistics
undefined on the too-sparse simulated data). The profile is now searched within the sizes before the
binarisation (``ReferenceShape.consumed_profile``), and the sweep refuses a ``ratings.min_rating`` that differs
from the datasets' (one binarisation on both sides).
"""

from __future__ import annotations

import json
import textwrap
import tomllib

import numpy as np
import pytest

from simrec.config.models import WorldSpec
from tests.cli_helpers import invoke


def _rated(folder, n_users: int = 120, n_items: int = 90, seed: int = 0):
    """A user,item,rating,timestamp table, ratings 1-5 uniformly at random (about 40% kept at min_rating 4)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_items + 1) ** 0.8
    p /= p.sum()
    rows = []
    for u in range(n_users):
        for i in rng.choice(n_items, size=int(rng.integers(8, 30)), replace=False, p=p):
            rows.append(f"u{u},i{i},{int(rng.integers(1, 6))},{1_000_000 + len(rows)}")
    path = folder / "ratings.csv"
    path.write_text("user,item,rating,timestamp\n" + "\n".join(rows) + "\n")
    return path


def _sweep(folder, data, dataset_min: str = "min_rating = 4") -> str:
    spec = folder / "sweep.toml"
    spec.write_text(
        textwrap.dedent(f"""
        name = "tiny-rated"
        seed = 5
        n_calls = 3
        n_initial = 3
        preferences = ["factor"]
        observations = ["preference"]
        objectives = ["sum_kl"]
        denoise_seeds = 0

        [ratings]
        min_rating = 4

        [[dataset]]
        name = "tiny"
        path = "{data}"
        rating_col = "rating"
        {dataset_min}
        """)
    )
    return str(spec)


def test_a_rated_sweep_calibrates_through_to_a_preset_that_runs(tmp_path):
    spec = _sweep(tmp_path, _rated(tmp_path))
    out = tmp_path / "out"
    code, stdout, err = invoke(["calibrate", spec, "--out", str(out), "--quiet", "--no-figures"])
    assert code == 0, err
    log = (out / "tiny" / "cells" / "factor-pref-rated" / "sum_kl" / "trials.jsonl").read_text().splitlines()
    header, trials = json.loads(log[0]), [json.loads(line) for line in log[1:]]
    # the profile searched around the users' sizes before min_rating 4 (8 to 29 items; after it: 1 to 14)
    dims = {d["name"]: d for d in header["dims"]}
    assert (dims["m_low"]["low"], dims["m_low"]["high"]) == pytest.approx((0.8 * 8, 1.2 * 8))
    assert (dims["m_high"]["low"], dims["m_high"]["high"]) == pytest.approx((0.8 * 29, 1.2 * 29))
    assert [t["status"] for t in trials] == ["ok"] * 3  # a rated world as dense as the data (all 3 refused before)
    preset = out / "tiny" / "presets" / "factor-pref-rated.toml"
    tables = tomllib.loads(preset.read_text())
    assert tables["observation"]["ratings"]["min_rating"] == 4
    world = WorldSpec.model_validate({k: tables[k] for k in ("preference", "observation")})
    scenario = tmp_path / "run.toml"
    scenario.write_text(
        textwrap.dedent(f"""
        name = "rated-run"
        seed = 1
        replicates = 1
        [population]
        n_users = {tables["reference"]["n_users"]}
        n_items = {tables["reference"]["n_items"]}
        [[world]]
        name = "rated"
        preset = "{preset}"
        [evaluation]
        n = 5
        metrics = ["recall"]
        recommenders = [{{ kind = "popular" }}, {{ kind = "random" }}]
        """)
    )
    code, _, err = invoke(["run", str(scenario), "--out", str(tmp_path / "run"), "--quiet", "--no-figures"])
    assert code == 0, err
    assert world.observation.ratings is not None and world.observation.ratings.min_rating == 4


@pytest.mark.parametrize("dataset_min", ["", "min_rating = 3"])
def test_a_ratings_min_rating_other_than_the_datasets_is_refused(tmp_path, dataset_min):
    spec = _sweep(tmp_path, _rated(tmp_path), dataset_min)
    code, _, err = invoke(["calibrate", spec, "--out", str(tmp_path / "out")])
    assert code == 2 and "Traceback" not in err
    assert "`ratings.min_rating` (4.0) keeps the simulated pairs rated at least that" in err
    assert f"dataset[0].min_rating = {3.0 if dataset_min else None}" in err
    assert not (tmp_path / "out").exists()


def test_the_consumed_profile_is_the_same_users_sizes_before_the_filter():
    from simrec.calibration import ReferenceShape
    from simrec.interactions import Interactions

    # users a, b, c with 3, 2, 1 consumed items; after the filter a and b keep one each, c none (not a user)
    unfiltered = Interactions.from_pairs(
        np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 0, 1, 2]), user_ids=np.array(["a", "b", "c"])
    )
    filtered = Interactions.from_pairs(np.array([0, 1]), np.array([0, 0]), (2, 3), user_ids=np.array(["a", "b"]))
    shape = ReferenceShape.of(filtered).with_consumed(filtered, unfiltered)
    assert shape.consumed_profile == (2, 3) and (shape.min_profile, shape.max_profile) == (1, 1)
    assert (shape.consumed().min_profile, shape.consumed().max_profile) == (2, 3)
    assert "consumed_profile" not in ReferenceShape.of(filtered).key() and "consumed_profile" in shape.key()

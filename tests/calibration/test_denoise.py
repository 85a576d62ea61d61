"""De-noised best points of a calibration search (simrec.calibration.denoise)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from simrec._random import task_seed
from simrec.calibration import DENOISE_KEY, CalibrationLogError, SearchResult, Trial, TrialOutcome, denoise


def noisy(params, seed):
    """A toy objective: x plus standard normal noise drawn from the seed; refuses x > 100."""
    if params["x"] > 100:
        return TrialOutcome(math.nan, refused="too large")
    v = params["x"] + float(np.random.default_rng(seed).normal())
    return TrialOutcome(v, {"kl_a": 2 * v})


def _search(values):
    trials = tuple(
        Trial(i, {"x": x}, v, {}, "ok" if v is not None else "refused", None, 0.0) for i, (x, v) in enumerate(values)
    )
    return SearchResult(trials, 0)


def test_means_are_the_evaluations_at_the_documented_seeds():
    res = _search([(5.0, 5.2), (1.0, 3.0), (0.0, 0.1), (3.0, 2.0), (9.0, None)])
    points = denoise(noisy, res, seed=7, top=3, seeds=4)
    assert {p.trial for p in points} == {2, 3, 1}  # the three best logged values: 0.1, 2.0, 3.0
    for p in points:
        x = res.trials[p.trial].params["x"]
        vals = [x + float(np.random.default_rng(task_seed(7, DENOISE_KEY, p.trial, r)).normal()) for r in range(4)]
        assert p.n == 4
        assert p.mean == pytest.approx(np.mean(vals), rel=1e-12)
        assert p.sd == pytest.approx(np.std(vals, ddof=1), rel=1e-12)
        assert p.details_mean["kl_a"] == pytest.approx(2 * np.mean(vals), rel=1e-12)
    assert [p.mean for p in points] == sorted(p.mean for p in points)
    assert points[0].trial == 2  # x = 0 has the lowest true value


def test_the_seeds_never_repeat_a_search_step():
    search_steps = {task_seed(7, i).spawn_key for i in range(1000)}
    assert task_seed(7, DENOISE_KEY, 0, 0).spawn_key not in search_steps


def test_resume_after_a_torn_line_gives_the_same_points(tmp_path):
    res = _search([(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)])
    log = tmp_path / "denoise.jsonl"
    full = denoise(noisy, res, seed=3, top=3, seeds=5, log_path=log, digest="d1")
    lines = log.read_text().splitlines()
    assert len(lines) == 1 + 15
    log.write_text("\n".join(lines[:9]) + "\n" + lines[9][:10])  # 8 evaluations kept, then a torn line
    again = denoise(noisy, res, seed=3, top=3, seeds=5, log_path=log, digest="d1")
    assert again == full
    recs = [json.loads(line) for line in log.read_text().splitlines()[1:] if line.startswith('{"')]
    assert sorted((r["trial"], r["rep"]) for r in recs if "trial" in r) == [(t, r) for t in range(3) for r in range(5)]


def test_a_log_of_another_search_is_refused(tmp_path):
    res = _search([(1.0, 1.0)])
    log = tmp_path / "denoise.jsonl"
    denoise(noisy, res, seed=3, top=1, seeds=2, log_path=log, digest="d1")
    with pytest.raises(CalibrationLogError, match="de-noising log of another search"):
        denoise(noisy, res, seed=3, top=1, seeds=2, log_path=log, digest="d2")


def test_refused_evaluations_are_left_out():
    res = _search([(150.0, 0.5), (1.0, 1.0)])  # the logged value of x = 150 was lucky; re-evaluation refuses it
    points = denoise(noisy, res, seed=1, top=2, seeds=3)
    assert points[0].trial == 1 and points[-1].trial == 0 and points[-1].n == 0 and math.isnan(points[-1].mean)


@pytest.mark.parametrize("bad", [{"top": 0}, {"seeds": 0}])
def test_validation(bad):
    with pytest.raises(ValueError, match=f"`{next(iter(bad))}` must be an integer in"):
        denoise(noisy, _search([(1.0, 1.0)]), seed=1, **bad)


def test_a_sweep_reports_and_presets_the_denoised_best(tmp_path):
    import tomllib
    from pathlib import Path

    import pandas as pd
    from cli_helpers import invoke

    pairs = Path(__file__).resolve().parents[1] / "golden" / "pairs.csv"
    spec = tmp_path / "s.toml"
    spec.write_text(f'''
name = "dn"
seed = 9
n_calls = 4
n_initial = 4
preferences = ["ibp"]
observations = ["popularity"]
stat_pairs = 2000
max_pairs = 200000
denoise_top = 3
denoise_seeds = 3
[[dataset]]
name = "pairs"
path = "{pairs}"
kind = "pairs"
''')
    code, _, err = invoke(["calibrate", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"])
    assert code == 0, err
    table = pd.read_csv(tmp_path / "out" / "pairs" / "table.csv")
    assert (table["n_denoise"] == 3).all()
    assert {f"sd_kl_{s}" for s in ("item_popularity", "user_activity")} <= set(table.columns)
    row = table[table["objective"] == "average_loss"].iloc[0]
    preset = tomllib.loads((tmp_path / "out" / "pairs" / "presets" / "ibp-pop.toml").read_text())
    assert preset["preference"]["alpha"] == pytest.approx(row["param_alpha"], rel=1e-12)
    assert preset["fit"]["kl_item_popularity"] == pytest.approx(row["kl_item_popularity"], rel=1e-12)
    assert (
        "de-noised: mean of 3 fresh simulations"
        in (tmp_path / "out" / "pairs" / "presets" / "ibp-pop.toml").read_text()
    )

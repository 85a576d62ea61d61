"""GP search: finds a known minimum, resumes exactly after a crash, handles refused points and torn logs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simrec.calibration.search import CalibrationLogError, TrialOutcome, gp_search, read_log
from simrec.calibration.space import Dim, ReferenceShape, sample_points
from simrec.config.models import CellSpec

DIMS = [Dim("x", -2.0, 3.0), Dim("scale", 0.01, 100.0, log=True), Dim("k", 1, 9, integer=True)]


def noisy_bowl(params, seed):
    """Minimum at x = 1, scale = 1, k = 4, plus seeded noise (sd 0.01)."""
    noise = np.random.default_rng(seed).normal(0, 0.01)
    v = (params["x"] - 1) ** 2 + np.log(params["scale"]) ** 2 + 0.1 * (params["k"] - 4) ** 2 + noise
    return TrialOutcome(float(v), {"noise": float(noise)})


def _key(trials):
    return [(t.index, t.params, t.value, t.details, t.status, t.reason) for t in trials]


@pytest.mark.slow
def test_search_finds_the_minimum():
    res = gp_search(noisy_bowl, DIMS, seed=3, n_calls=40, n_initial=10)
    best = res.best
    # Random search alone with 40 draws rarely gets below 0.3 on this bowl;
    # the GP phase must do far better.
    assert best.value < 0.1
    assert abs(best.params["x"] - 1) < 0.3 and best.params["k"] in (3, 4, 5)
    assert all(isinstance(t.params["k"], int) for t in res.trials)


@pytest.mark.slow
def test_interrupted_search_resumes_to_identical_trials(tmp_path):
    full = gp_search(
        noisy_bowl, DIMS, seed=11, n_calls=22, n_initial=8, log_path=tmp_path / "a.jsonl", header={"digest": "d1"}
    )

    calls = {"n": 0}

    def crashing(params, seed):
        calls["n"] += 1
        if calls["n"] == 14:
            raise KeyboardInterrupt
        return noisy_bowl(params, seed)

    log = tmp_path / "b.jsonl"
    with pytest.raises(KeyboardInterrupt):
        gp_search(crashing, DIMS, seed=11, n_calls=22, n_initial=8, log_path=log, header={"digest": "d1"})
    assert len(read_log(log)) == 13
    resumed = gp_search(noisy_bowl, DIMS, seed=11, n_calls=22, n_initial=8, log_path=log, header={"digest": "d1"})
    assert resumed.resumed_from == 13
    assert _key(resumed.trials) == _key(full.trials)
    assert _key(read_log(log)) == _key(full.trials)


def test_torn_last_line_is_dropped_and_search_continues(tmp_path):
    log = tmp_path / "c.jsonl"
    gp_search(noisy_bowl, DIMS, seed=2, n_calls=5, n_initial=5, log_path=log, header={"digest": "x"})
    with open(log, "a") as fh:
        fh.write('{"index": 5, "params": {"x": 0.')  # crash mid-write
    assert len(read_log(log)) == 5
    res = gp_search(noisy_bowl, DIMS, seed=2, n_calls=7, n_initial=5, log_path=log, header={"digest": "x"})
    assert res.resumed_from == 5 and len(res.trials) == 7
    lines = log.read_text().splitlines()
    assert len(lines) == 8 and all(json.loads(line) for line in lines)


def test_log_of_another_search_is_refused(tmp_path):
    log = tmp_path / "d.jsonl"
    gp_search(noisy_bowl, DIMS, seed=2, n_calls=2, n_initial=2, log_path=log, header={"digest": "one"})
    with pytest.raises(CalibrationLogError, match="different calibration"):
        gp_search(noisy_bowl, DIMS, seed=2, n_calls=3, n_initial=2, log_path=log, header={"digest": "two"})


@pytest.mark.slow
def test_refused_points_are_recorded_and_avoided():
    def guarded(params, seed):
        if params["x"] > 2.0:
            return TrialOutcome(float("nan"), refused=f"x = {params['x']:.2f} > 2 would not fit in memory")
        return noisy_bowl(params, seed)

    res = gp_search(guarded, DIMS, seed=5, n_calls=30, n_initial=10)
    refused = [t for t in res.trials if t.status == "refused"]
    assert refused and all("would not fit" in t.reason and t.value is None for t in refused)
    assert res.best.status == "ok" and res.best.params["x"] <= 2.0
    # after the random phase the GP proposes few refused points
    late = [t for t in res.trials[10:] if t.status == "refused"]
    assert len(late) <= 5


def test_sample_points_respect_bounds_and_types():
    pts = sample_points(DIMS, 500, np.random.default_rng(0))
    arr = np.array(pts, dtype=float)
    assert (arr[:, 0] >= -2).all() and (arr[:, 0] <= 3).all()
    assert (arr[:, 1] >= 0.01).all() and (arr[:, 1] <= 100).all()
    # log-uniform: the median of scale is near the geometric centre 1
    assert 0.5 < np.median(arr[:, 1]) < 2.0
    assert set(arr[:, 2].astype(int)) <= set(range(1, 10)) and all(isinstance(p[2], int) for p in pts)


def test_sample_points_on_an_integer_log_dimension_have_the_stated_law():
    # k in [2, 100] with probability log((k + 1)/k) / log(101/2) (issue 24's n_clusters): chi-square against it
    from scipy import stats

    pts = sample_points([Dim("g", 2, 100, log=True, integer=True)], 20_000, np.random.default_rng(1))
    assert all(isinstance(p[0], int) for p in pts)
    k = np.arange(2, 101)
    obs = np.bincount([p[0] for p in pts], minlength=101)[2:]
    exp = np.log((k + 1) / k) / np.log(101 / 2) * len(pts)
    assert obs.sum() == len(pts) and stats.chisquare(obs, exp).pvalue > 1e-4
    assert obs[:9].sum() > 0.4 * len(pts)  # 2-10 hold log(11/2)/log(101/2) = 44% (uniform: 9%)


def test_search_space_follows_the_reference():
    ref = ReferenceShape(n_users=943, n_items=1682, min_profile=20, mean_profile=106.0, max_profile=737)
    dims = {d.name: d for d in CellSpec(preference="ibp", observation="popularity").search_space(ref)}
    assert dims["m_low"].low == pytest.approx(16) and dims["m_low"].high == pytest.approx(24)
    assert dims["m_high"].low == pytest.approx(589.6) and dims["m_high"].high == pytest.approx(884.4)
    assert dims["sigma"].low == 0 and dims["sigma"].high == 0.99
    lda = {d.name: d for d in CellSpec(preference="lda", observation="uniform").search_space(ref)}
    assert lda["n_topics"].integer and (lda["n_topics"].low, lda["n_topics"].high) == (5, 200)
    assert lda["lam"].low == pytest.approx(53) and lda["lam"].high == pytest.approx(1682)
    with pytest.raises(ValueError, match="preference"):
        CellSpec(preference="gauss", observation="uniform")

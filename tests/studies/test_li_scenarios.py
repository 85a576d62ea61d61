"""The two shipped scenarios of Li's dissertation on ML-1M rank the same held-out items.

``sampled-li-ml1m`` (Tables 3-5: every estimator at n = 100, the adaptive
scheme) and ``sampled-li-ml1m-n500`` (Table 4's fixed side: n = 500) are
compared user for user in notebook 05, so they must share the source, the
recommenders and the seed. Checked twice: on the parsed scenarios, and by
running both (repeats cut to 1) on a small synthetic MovieLens-1M-format
dataset and comparing their ``ranks.parquet`` (a third run with another seed
must differ, so the comparison can fail).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simrec.config.files import shipped_scenarios
from simrec.config.stress import load_stress_scenario
from simrec.studies import run_stress_scenario

MAIN, N500 = "sampled-li-ml1m", "sampled-li-ml1m-n500"


def test_n500_scenario_shares_source_and_seed_and_runs_table4_only():
    main, _ = load_stress_scenario(MAIN, check_data=False)
    n500, path = load_stress_scenario(N500, check_data=False)
    assert path.resolve() == (Path(__file__).resolve().parents[2] / "scenarios" / f"{N500}.toml").resolve()
    assert n500.seed == main.seed and n500.source == main.source
    assert n500.repeats == main.repeats == 100  # the dissertation's repeats (its Table 5 counts out of 100)
    # dissertation Table 4: BV_MES, BV_MLE, MN_MES, MN_MLE at a fixed n = 500, Recall
    assert n500.sampling.schemes == ["binomial"] and n500.sampling.sizes == [500]
    assert n500.estimators.names == ["BV_MES", "BV_MLE", "MN_MES", "MN_MLE"]
    assert n500.estimators.bv_gammas == main.estimators.bv_gammas == [0.1]
    assert n500.metrics.names == ["recall"] and n500.metrics.k_max == main.metrics.k_max == 50


def _synthetic_ml1m(folder: Path, n_users: int = 120, n_items: int = 700, seed: int = 0) -> Path:
    """A ratings.dat (user::item::rating::time) with popularity-skewed items, 8-40 per user."""
    gen = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_items + 1) ** 0.8
    rows = []
    for u in range(1, n_users + 1):
        items = gen.choice(n_items, size=gen.integers(8, 41), replace=False, p=weights / weights.sum()) + 1
        rows += [f"{u}::{i}::{gen.integers(1, 6)}::{978300000 + k}" for k, i in enumerate(items)]
    folder.mkdir()
    (folder / "ratings.dat").write_text("\n".join(rows) + "\n")
    return folder


def _tiny(name: str, data: Path, tmp_path: Path, seed: int | None = None) -> pd.DataFrame:
    text = shipped_scenarios("stress")[name].read_text()
    text = text.replace('path = "../../../shared/data/ml-1m"', f'path = "{data.as_posix()}"')
    text = text.replace("repeats = 100", "repeats = 1").replace("adaptive_n_max = 3200", "adaptive_n_max = 600")
    if seed is not None:
        text = re.sub(r"(?m)^seed = \d+$", f"seed = {seed}", text)
    toml = tmp_path / f"{name}-{seed}.toml"
    toml.write_text(text)
    sc, path = load_stress_scenario(toml)
    out = tmp_path / f"run-{name}-{seed}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_stress_scenario(sc, path, out, progress=False, figures=False)
    return pd.read_parquet(out / "ranks.parquet")


@pytest.mark.slow
def test_same_seed_same_ranks(tmp_path):
    data = _synthetic_ml1m(tmp_path / "ml-1m")
    main = _tiny(MAIN, data, tmp_path)
    n500 = _tiny(N500, data, tmp_path)
    assert set(main["recommender"]) == {"ItemKNN", "ALS", "Popular"} and len(main) == 3 * 120
    pd.testing.assert_frame_equal(main, n500)
    other = _tiny(N500, data, tmp_path, seed=7)
    assert not other["rank"].equals(main["rank"])

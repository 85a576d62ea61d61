"""``simrec sim-to-real`` through :func:`simrec.cli.main` (issue 24)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

from simrec.preference import LatentFactor
from tests.cli_helpers import invoke

PRESET = textwrap.dedent("""
    [preference]
    model = "factor"
    n_factors = 4
    signal = 2.0
    pop_exponent = 1.0
    lam = 25.0

    [observation]
    sampler = { model = "preference", pop_exponent = 0.5, pref_exponent = 1.0 }
    profile = { model = "pareto", m_low = 8, alpha = 1.0, m_high = 40 }
""")


def _dataset(tmp_path):
    """A small implicit dataset (pairs CSV) drawn from a latent-factor truth."""
    truth = LatentFactor(n_users=80, n_items=60, n_factors=4, signal=2.0, pop_exponent=1.0, lam=15.0).generate(
        np.random.default_rng(0)
    )
    coo = truth.matrix.tocoo()
    path = tmp_path / "data.csv"
    pd.DataFrame({"user": coo.row, "item": coo.col}).to_csv(path, index=False)
    return path


def test_an_unknown_preset_is_one_line_before_any_work(tmp_path):
    code, out, err = invoke(
        ["sim-to-real", str(tmp_path / "missing.csv"), "-p", "ml-1m/nope", "-o", str(tmp_path / "o")]
    )
    assert code == 2 and out == ""
    assert err.startswith("simrec: error: --preset[0]: unknown preset 'ml-1m/nope'; available:")
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_preset_file_that_is_not_a_world_is_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(PRESET.replace("n_factors = 4", "n_factors = 0"))
    code, _, err = invoke(["sim-to-real", str(_dataset(tmp_path)), "-p", str(bad)])
    assert code == 2 and "--preset[0]:" in err and "n_factors" in err and "Traceback" not in err


@pytest.mark.slow  # LensKit's ItemKNN and ImplicitMF on every replicate
def test_sim_to_real_prints_and_writes_the_check(tmp_path):
    preset = tmp_path / "factor.toml"
    preset.write_text(PRESET)
    out = tmp_path / "check"
    args = ["sim-to-real", str(_dataset(tmp_path)), "-p", str(preset), "-r", "2", "--max-users", "40", "-o", str(out)]
    code, text, err = invoke([*args, "--seed", "3", "-q"])
    assert code == 0, err
    assert "protocol: 20% per-user holdout, @10, up to 40 users" in text and "factor (2 replicates)" in text
    metrics = pd.read_csv(out / "metrics.csv")
    assert set(metrics["algorithm"]) == {"Popular", "ItemKNN", "ImplicitMF"}
    assert set(metrics["metric"]) == {"recall", "ndcg"} and (metrics["replicates"] == 2).all()
    assert ((metrics["real_low"] <= metrics["real"]) & (metrics["real"] <= metrics["real_high"])).all()
    orders = pd.read_csv(out / "orders.csv")
    assert len(orders) == 6 and orders["full_order_agreement"].between(0, 1).all()
    again = invoke([*args, "--seed", "3", "-q"])
    assert again[1] == text  # the same seed, the same numbers

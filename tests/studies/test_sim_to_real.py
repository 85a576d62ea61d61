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


@pytest.mark.parametrize(
    "limit, part",
    [
        ("1M", "the interpreter with simrec"),  # before reading: the files' size and the interpreter
        ("300M", "reference algorithm[2] (implicit_mf)"),  # the models, scores and worlds, once read
    ],
)
def test_max_memory_refuses_before_anything_is_trained_or_written(tmp_path, limit, part):
    """``--max-memory`` as ``simrec ranks`` has it: exit 2, the budget's message naming the largest parts and the
    option, no traceback, no --out folder."""
    preset = tmp_path / "factor.toml"
    preset.write_text(PRESET)
    out = tmp_path / "check"
    args = ["sim-to-real", str(_dataset(tmp_path)), "-p", str(preset), "-r", "2", "-o", str(out)]
    code, stdout, err = invoke([*args, "--max-memory", limit])
    assert code == 2 and stdout == "" and "Traceback" not in err, err
    assert err.startswith(f"simrec: error: {tmp_path / 'data.csv'}: too large for the memory limit of ")
    assert part in err and "raise --max-memory" in err and "(or --jobs)" not in err
    assert not out.exists()
    code, _, err = invoke([*args, "--max-memory", "lots"])
    assert code == 2 and "`--max-memory` must be a size such as 8G" in err and not out.exists()


def test_the_memory_estimate_counts_the_largest_world_and_the_evaluated_users():
    import tomllib

    from simrec.calibration import ResponseProtocol
    from simrec.config.budget import BYTES_PER_SCORE
    from simrec.config.models import WorldSpec
    from simrec.interactions import Interactions
    from simrec.studies.sim_to_real import sim_to_real_needs

    tables = tomllib.loads(PRESET)
    small = WorldSpec.model_validate({"name": "small", **tables})
    tables["preference"]["lam"] = 2500.0
    big = WorldSpec.model_validate({"name": "big", **tables})
    data = Interactions.from_pairs(np.arange(2000) % 1000, np.arange(2000) % 500, (1000, 500))
    protocol = ResponseProtocol(max_users=200)
    (kind,), fixed = sim_to_real_needs(data, [small, big], protocol)
    world = [n for n in kind if n.what.startswith("--preset[")]
    assert len(world) == 1 and world[0].what.startswith("--preset[1] (big)") and "the dataset" in world[0].keys
    assert world[0].bytes > sim_to_real_needs(data, [small], protocol)[0][0][-1].bytes
    scores = next(n for n in kind if n.keys == "--max-users")
    assert scores.bytes == BYTES_PER_SCORE * 200 * 500
    assert sum("reference algorithm[" in n.what for n in kind) == 3 and fixed == []


def test_the_reference_tables_build_the_reference_algorithms():
    """REFERENCE_TABLES (what the memory check counts) are the algorithms the protocol trains."""
    from pydantic import TypeAdapter

    from simrec.calibration.response import REFERENCE_ALGORITHMS, REFERENCE_TABLES
    from simrec.config.recommenders import RecommenderSpec

    assert set(REFERENCE_TABLES) == set(REFERENCE_ALGORITHMS)
    for name, table in REFERENCE_TABLES.items():
        built = TypeAdapter(RecommenderSpec).validate_python(table).build()
        want = REFERENCE_ALGORITHMS[name]()
        assert type(built) is type(want) and built.name == want.name == name
        assert getattr(built, "params", None) == getattr(want, "params", None)
        assert getattr(built, "_reference", None) == getattr(want, "_reference", None)


def test_the_time_estimate_counts_the_real_response_and_every_replicates(tmp_path, monkeypatch):
    """The work of a check: the real data's response once and, per world and replicate, its truth and the same
    response; two of the three reference algorithms are trained (ItemKNN, ImplicitMF), each scoring the
    evaluated users x items and fitted to the pairs outside the holdout. A check expected over a minute says
    so before it starts."""
    import tomllib

    from simrec.calibration import ResponseProtocol
    from simrec.config import cost
    from simrec.config.models import WorldSpec
    from simrec.interactions import Interactions
    from simrec.studies.sim_to_real import sim_to_real_work

    world = WorldSpec.model_validate({"name": "w", **tomllib.loads(PRESET)})
    data = Interactions.from_pairs(np.arange(2000) % 1000, np.arange(2000) % 500, (1000, 500))
    protocol = ResponseProtocol(max_users=200, test_fraction=0.25)
    one, three = (sim_to_real_work(data, [world], protocol, replicates=r) for r in (1, 3))
    replicate = world.work(data)
    assert one.model_fits == 2 * 2 and three.model_fits == 2 * 4  # (1 real + r simulated responses) x 2 fits
    assert three.pairs == pytest.approx(3 * replicate.pairs)
    assert one.train_pairs > 2 * 0.75 * 2000  # the real data's holdout leaves 1,500 pairs per algorithm
    assert one.model_scores == pytest.approx(2 * 2 * 200 * 500, rel=0.5)  # the world's items are expected ones
    assert three.seconds() > one.seconds()

    monkeypatch.setattr(cost, "SECONDS_PER_MODEL_FIT", 100.0)
    preset = tmp_path / "factor.toml"
    preset.write_text(PRESET)
    code, _, err = invoke(["sim-to-real", str(_dataset(tmp_path)), "-p", str(preset), "-r", "1", "--max-users", "40"])
    assert code == 0, err
    assert err.splitlines()[0].startswith("simrec: this job should take about"), err


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

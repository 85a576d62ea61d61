"""The algorithm-response objective and the sim-to-real comparison (issue 24)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from simrec.calibration import (
    ALGORITHM_RESPONSE,
    RESPONSE_LOSS,
    AlgorithmResponse,
    CalibrationTarget,
    Objective,
    ResponseProtocol,
    algorithm_response,
    kendall_tau,
    response_loss,
    sim_to_real,
)
from simrec.config.models import CellSpec
from simrec.preference import LatentFactor

TWO = ResponseProtocol(algorithms=("Popular", "ItemKNN"), metrics=("recall",), n=5, max_users=40)


def _response(protocol: ResponseProtocol, means: dict[str, float], n_users: int = 400, sd: float = 0.05, seed=0):
    """Per-user values with the given means exactly (centred noise) for every metric."""
    rng = np.random.default_rng(seed)
    values = {}
    for m in protocol.metrics:
        for a in protocol.algorithms:
            noise = rng.normal(0, sd, n_users)
            values[(a, m)] = means[a] + noise - noise.mean()
    return AlgorithmResponse(protocol, values)


def test_kendall_tau_of_equal_and_reversed_orders():
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # one discordant pair of three: (2 - 1) / 3
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert np.isnan(kendall_tau([1.0], [2.0]))


def test_response_loss_is_relative_error_plus_half_one_minus_tau():
    real = {("A", "recall"): 0.1, ("B", "recall"): 0.2, ("C", "recall"): 0.3}
    assert response_loss(real, dict(real)) == {"response_loss": 0.0, "response_rel_error": 0.0, "response_tau": 1.0}
    rev = {("A", "recall"): 0.3, ("B", "recall"): 0.2, ("C", "recall"): 0.1}
    got = response_loss(real, rev)
    rel = (2.0 + 0.0 + 2 / 3) / 3  # |0.3-0.1|/0.1, 0, |0.1-0.3|/0.3
    assert got["response_tau"] == pytest.approx(-1.0)
    assert got["response_rel_error"] == pytest.approx(rel)
    assert got["response_loss"] == pytest.approx(rel + 1.0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"algorithms": ("Popular",)}, "at least two distinct names"),
        ({"algorithms": ("Popular", "SVD")}, "got \\['Popular', 'SVD'\\]"),
        ({"metrics": ("precision",)}, "`metrics` must be names of"),
        ({"test_fraction": 1.0}, "`test_fraction` must be in \\(0, 1\\); got 1.0"),
        ({"max_users": 0}, "max_users"),
    ],
)
def test_protocol_refuses_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ResponseProtocol(**kwargs)


def test_sim_to_real_intervals_ties_and_agreement():
    p = ResponseProtocol(algorithms=("Popular", "ItemKNN", "ImplicitMF"), metrics=("recall",))
    real = _response(p, {"Popular": 0.05, "ItemKNN": 0.10, "ImplicitMF": 0.1001})
    # 3 replicates with ImplicitMF ahead of ItemKNN, 1 behind; Popular always last
    sims = [
        _response(p, {"Popular": 0.04, "ItemKNN": 0.09, "ImplicitMF": x}, seed=i + 1)
        for i, x in enumerate([0.10, 0.11, 0.12, 0.08])
    ]
    res = sim_to_real(real, sims, "w")
    row = res.table.set_index("algorithm").loc["ImplicitMF"]
    assert row["real"] == pytest.approx(0.1001) and row["sim"] == pytest.approx(0.1025)
    assert row["real_low"] < 0.1001 < row["real_high"]
    half = 1.959963984540054 * 0.05 / np.sqrt(400)  # the normal interval's half width, sd ~ 0.05
    assert row["real_high"] - row["real_low"] == pytest.approx(2 * half, rel=0.1)
    reps = np.array([0.10, 0.11, 0.12, 0.08])
    t_half = 3.182446305284263 * reps.std(ddof=1) / 2  # t(0.975, 3) * sd / sqrt(4)
    assert row["sim_high"] - row["sim_low"] == pytest.approx(2 * t_half)
    assert row["rel_error"] == pytest.approx((0.1025 - 0.1001) / 0.1001)
    orders = res.orders.set_index(["a", "b"])
    assert orders.loc[("Popular", "ItemKNN"), "real_order"] == "Popular < ItemKNN"
    assert orders.loc[("Popular", "ItemKNN"), "agreement"] == 1.0
    assert orders.loc[("ItemKNN", "ImplicitMF"), "real_order"] == "tie"  # a gap of 1e-4 within its interval
    assert np.isnan(orders.loc[("ItemKNN", "ImplicitMF"), "agreement"])
    # the real means order ImplicitMF > ItemKNN > Popular: replicates 0-2 reproduce it, replicate 3 does not
    assert res.full_order_agreement["recall"] == pytest.approx(0.75)
    assert res.disagrees() == []


@pytest.mark.parametrize(
    "k, r, verdict",
    [(10, 10, "reproduced"), (2, 3, "uncertain"), (5, 10, "disagrees"), (1, 3, "disagrees"), (0, 20, "disagrees")],
)
def test_compare_to_real_counts_agreement_with_a_wilson_interval_and_its_verdict(k, r, verdict):
    """Any algorithms (the user's names, not the reference ones): k of R replicates with the real order, its
    Wilson interval (simrec.report.wilson_interval), and the verdict rule's both sides: at most half -> disagrees,
    Wilson lower end above 1/2 -> reproduced, else uncertain (2 of 3: Wilson [0.21, 0.94])."""
    from simrec.calibration.response import compare_to_real
    from simrec.report import wilson_interval

    @dataclasses.dataclass(frozen=True)
    class Mine:
        algorithms: tuple = ("MyMF", "MyKNN")
        metrics: tuple = ("precision",)
        n: int = 10

        def label(self) -> str:
            return "mine"

    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.05, 500)
    real = {("MyMF", "precision"): 0.2 + noise, ("MyKNN", "precision"): 0.1 + noise[::-1]}  # MyMF clearly ahead
    sim_mf = np.full(r, 0.15)
    sim_knn = np.where(np.arange(r) < k, 0.12, 0.18)  # k replicates keep MyMF ahead
    res = compare_to_real(real, {("MyMF", "precision"): sim_mf, ("MyKNN", "precision"): sim_knn}, Mine(), "w")
    o = res.orders.iloc[0]
    lo, hi = wilson_interval(np.array([k]), np.array([r]))
    assert (o.real_order, o.reproduced, o.replicates, o.verdict) == ("MyMF > MyKNN", k, r, verdict)
    assert (o.agreement_low, o.agreement_high) == (pytest.approx(lo[0]), pytest.approx(hi[0]))
    assert res.full_order_counts["precision"] == (k, r)
    assert bool(res.disagrees()) == (verdict == "disagrees")
    if verdict == "disagrees":
        assert f"({k} of {r}, Wilson [" in res.disagrees()[0]


def test_compare_to_real_a_real_tie_has_no_agreement_and_nan_replicates_are_left_out():
    from simrec.calibration.response import compare_to_real

    p = ResponseProtocol(algorithms=("Popular", "ItemKNN"), metrics=("recall",))
    real = _response(p, {"Popular": 0.1, "ItemKNN": 0.1001})
    sims = {("Popular", "recall"): np.array([0.1, np.nan, 0.2]), ("ItemKNN", "recall"): np.array([0.2, 0.3, 0.1])}
    res = compare_to_real(real.values, sims, p)
    o = res.orders.iloc[0]
    assert o.real_order == "tie" and o.verdict == "real tie" and np.isnan(o.agreement) and o.replicates == 2
    assert res.table.set_index("algorithm").loc["Popular", "replicates"] == 2
    with pytest.raises(ValueError, match="missing \\[\\('Popular', 'ndcg'\\), \\('ItemKNN', 'ndcg'\\)\\]"):
        compare_to_real(
            real.values, sims, ResponseProtocol(algorithms=("Popular", "ItemKNN"), metrics=("recall", "ndcg"))
        )


def test_sim_to_real_refuses_two_protocols():
    real = _response(TWO, {"Popular": 0.1, "ItemKNN": 0.2})
    other = _response(
        ResponseProtocol(algorithms=("Popular", "ItemKNN"), metrics=("recall",), n=10), {"Popular": 0.1, "ItemKNN": 0.2}
    )
    with pytest.raises(ValueError, match="one protocol on both sides"):
        sim_to_real(real, [other])


def _small_data(seed=0):
    model = LatentFactor(n_users=120, n_items=90, n_factors=4, signal=2.0, pop_exponent=1.0, lam=20.0)
    return model.generate(np.random.default_rng(seed))


@pytest.mark.slow  # LensKit's ItemKNN
def test_algorithm_response_is_reproducible_and_paired():
    data = _small_data()
    a = algorithm_response(data, TWO, 5)
    b = algorithm_response(data, TWO, 5)
    for key in a.values:
        np.testing.assert_array_equal(a.values[key], b.values[key])
    assert len(a.values[("Popular", "recall")]) == len(a.values[("ItemKNN", "recall")]) == 40
    assert all(0 <= v <= 1 for v in a.means().values())


@pytest.mark.slow  # LensKit's ItemKNN
def test_objective_algorithm_response_adds_the_response_loss_to_the_kls():
    data = _small_data(1)
    target = CalibrationTarget.from_interactions("small", data, rng=0, max_pairs=20_000)
    cell = CellSpec(preference="factor", observation="preference")
    with pytest.raises(ValueError, match="needs the target's `response`"):
        Objective(target, cell, ALGORITHM_RESPONSE, stat_pairs=20_000)
    import dataclasses

    real = algorithm_response(data, TWO, 0)
    obj = Objective(dataclasses.replace(target, response=real), cell, ALGORITHM_RESPONSE, stat_pairs=20_000)
    point = {d.name: (d.low + d.high) / 2 for d in cell.search_space(target.shape)}
    point["n_factors"] = 4
    out = obj(point, np.random.SeedSequence(3))
    assert out.refused is None
    d = out.details
    assert out.value == pytest.approx(d["sum_kl"] + d["response_loss"])
    assert d["response_loss"] == pytest.approx(d["response_rel_error"] + (1 - d["response_tau"]) / 2)
    assert {"sim_Popular_recall", "sim_ItemKNN_recall"} <= set(d)
    again = obj(point, np.random.SeedSequence(3))
    assert again.value == out.value  # deterministic in (params, seed)
    # the response loss alone: the same simulation and algorithms (the same seed), without the KLs
    alone = Objective(dataclasses.replace(target, response=real), cell, RESPONSE_LOSS, stat_pairs=20_000)
    only = alone(point, np.random.SeedSequence(3))
    assert only.value == pytest.approx(d["response_loss"]) and only.details["sum_kl"] == pytest.approx(d["sum_kl"])
    assert only.value == pytest.approx(out.value - d["sum_kl"])
    with pytest.raises(ValueError, match="objective 'response_loss' needs the target's `response`"):
        Objective(target, cell, RESPONSE_LOSS, stat_pairs=20_000)


def test_a_sweep_names_the_response_protocol_only_for_its_objective():
    from pydantic import ValidationError

    from simrec.config.sweep import SweepSpec

    base = {"name": "s", "seed": 1, "dataset": [{"name": "d", "path": "x"}]}
    assert SweepSpec.model_validate({**base, "objectives": ["sum_kl"]}).response_protocol() is None
    spec = SweepSpec.model_validate(
        {**base, "objectives": ["algorithm_response"], "response": {"max_users": 50, "metrics": ["ndcg"]}}
    )
    assert spec.response_protocol() == ResponseProtocol(metrics=("ndcg",), max_users=50)
    default = SweepSpec.model_validate({**base, "objectives": ["algorithm_response"]})
    assert default.response_protocol() == ResponseProtocol(max_users=500)
    alone = SweepSpec.model_validate({**base, "objectives": ["response_loss"], "response": {"max_users": 120}})
    assert alone.response_protocol() == ResponseProtocol(max_users=120)
    with pytest.raises(ValidationError, match="response.algorithms.1"):
        SweepSpec.model_validate({**base, "response": {"algorithms": ["Popular", "SVD"]}})


def test_the_chosen_points_evaluations_are_the_replicates_of_its_sim_to_real_check():
    """Calibration reports (issue 24): real vs simulated at the chosen point from its logged details (no new
    simulation), and the summary's section that shows it."""
    import pandas as pd

    from simrec.calibration import chosen_point_sim_to_real, summary_markdown

    real = _response(TWO, {"Popular": 0.10, "ItemKNN": 0.20})
    details = [
        {"sim_Popular_recall": 0.08, "sim_ItemKNN_recall": 0.15, "sum_kl": 1.0},
        {"sim_Popular_recall": 0.12, "sim_ItemKNN_recall": 0.11},
        {"sim_Popular_recall": 0.10},  # a key missing: left out of that algorithm's replicates
    ]
    c = chosen_point_sim_to_real(real, details, "factor-pref")
    row = c.table.set_index("algorithm")
    assert row.loc["Popular", "sim"] == pytest.approx(0.10) and row.loc["Popular", "replicates"] == 3
    assert row.loc["ItemKNN", "sim"] == pytest.approx(0.13) and row.loc["ItemKNN", "replicates"] == 2
    o = c.orders.iloc[0]
    assert o.real_order == "Popular < ItemKNN" and (o.reproduced, o.replicates) == (1, 2) and o.verdict == "disagrees"
    table = pd.DataFrame(
        [{"dataset": "d", "cell": "factor-pref", "objective": "algorithm_response", "algorithm_response": 1.5}]
    )
    text = summary_markdown(table, "d", [c])
    assert "## Sim to real at the chosen point of each algorithm-response search" in text
    assert "| factor-pref | recall | ItemKNN | 0.2 [" in text and "| 0.13 [" in text and "| -35% |" in text
    assert "| factor-pref | recall | Popular < ItemKNN (gap -0.1 [" in text and "| 1 of 2 [" in text
    assert "Sim to real" not in summary_markdown(table, "d")


@pytest.mark.slow  # LensKit's ItemKNN in every trial
def test_a_response_calibration_reports_real_vs_simulated_at_its_chosen_point(tmp_path):
    """``simrec calibrate`` with the algorithm_response objective and de-noising, through simrec.cli.main:
    summary.md and sim_to_real.csv give each reference algorithm on the data vs at the chosen point (the
    de-noising evaluations as replicates)."""
    import pandas as pd

    from tests.cli_helpers import invoke

    data = _small_data(2)
    coo = data.matrix.tocoo()
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"user": coo.row, "item": coo.col}).to_csv(pairs, index=False)
    spec = tmp_path / "sweep.toml"
    spec.write_text(f"""
name = "tiny-response"
seed = 3
n_calls = 3
n_initial = 3
preferences = ["factor"]
observations = ["preference"]
objectives = ["algorithm_response"]
denoise_top = 1
denoise_seeds = 2
[response]
algorithms = ["Popular", "ItemKNN"]
metrics = ["recall"]
n = 5
max_users = 60
[[dataset]]
name = "tiny"
path = "{pairs}"
""")
    out = tmp_path / "out"
    code, stdout, err = invoke(["calibrate", str(spec), "--out", str(out), "--no-figures"])
    assert code == 0, err
    assert "sim to real (tiny): the reference algorithms on the data vs at each algorithm_response search's " in stdout
    values = pd.read_csv(out / "tiny" / "sim_to_real.csv")
    assert set(values["algorithm"]) == {"Popular", "ItemKNN"} and (values["replicates"] == 2).all()
    assert (values["cell"] == "factor-pref").all() and values["real"].between(0, 1).all()
    orders = pd.read_csv(out / "tiny" / "sim_to_real_orders.csv")
    assert len(orders) == 1 and orders["replicates"].iloc[0] == 2
    summary = (out / "tiny" / "summary.md").read_text()
    assert "## Sim to real at the chosen point of each algorithm-response search" in summary
    assert "Protocol: 20% per-user holdout, @5, up to 60 users." in summary


def _mine(metrics=("precision",)):
    @dataclasses.dataclass(frozen=True)
    class Mine:
        algorithms: tuple = ("MyMF", "MyKNN")
        metrics: tuple = ()
        n: int = 10

        def label(self) -> str:
            return "mine"

    return Mine(metrics=metrics)


def test_a_pair_no_replicate_measured_is_not_measured_not_a_disagreement():
    """Every replicate lacks one of the pair's values: nothing to compare, so neither agreement nor the warning's
    "disagrees" (and no count: the text and the CSV say "not measured")."""
    from simrec.calibration.response import compare_to_real
    from simrec.studies.sim_to_real import SimToRealStudy, sim_to_real_text

    rng = np.random.default_rng(2)
    noise = rng.normal(0, 0.05, 300)
    real = {("MyMF", "precision"): 0.2 + noise, ("MyKNN", "precision"): 0.1 + noise[::-1]}
    sims = {("MyMF", "precision"): np.array([0.1, np.nan]), ("MyKNN", "precision"): np.array([np.nan, 0.2])}
    res = compare_to_real(real, sims, _mine(), "w")
    o = res.orders.iloc[0]
    assert (o.real_order, o.verdict, o.replicates) == ("MyMF > MyKNN", "not measured", 0)
    assert o.reproduced is pd.NA and np.isnan(o.agreement)
    assert res.disagrees() == []
    assert "not measured" in sim_to_real_text(SimToRealStudy(AlgorithmResponse(_mine(), real), (res,)))


def test_the_real_gap_is_the_mean_of_the_paired_differences_its_interval_describes():
    """With users missing a value for one algorithm, the gap is the paired users' mean difference (the interval's
    centre), not the difference of two means over different users (here of opposite sign)."""
    from simrec.calibration.response import compare_to_real

    jitter = np.random.default_rng(5).normal(0, 0.01, 120)
    a = np.array([0.0, 0.0, 0.5, 0.6, 0.5, 0.6] * 20)
    b = np.array([np.nan, np.nan, 0.4, 0.5, 0.4, 0.5] * 20) + jitter  # b lacks a's worst users
    assert np.nanmean(a) - np.nanmean(b) < 0  # the two separate means: the other sign
    res = compare_to_real({("MyMF", "precision"): a, ("MyKNN", "precision"): b}, {
        ("MyMF", "precision"): np.array([0.3, 0.3]), ("MyKNN", "precision"): np.array([0.2, 0.2])
    }, _mine())  # fmt: skip
    o = res.orders.iloc[0]
    assert o.real_gap == pytest.approx(np.nanmean(a - b)) and o.real_gap == pytest.approx(0.1, abs=0.005)
    assert o.real_gap_low < 0.1 < o.real_gap_high and o.real_order == "MyMF > MyKNN"


def test_confidence_sets_every_interval():
    """The level reaches the real (normal), simulated (t) and agreement (Wilson) intervals alike."""
    from scipy import stats

    from simrec.calibration.response import compare_to_real
    from simrec.report import wilson_interval

    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.05, 400)
    real = {("MyMF", "precision"): 0.2 + noise, ("MyKNN", "precision"): 0.1 + noise[::-1]}
    reps = np.array([0.15, 0.16, 0.18, 0.14, 0.2])
    sims = {("MyMF", "precision"): reps, ("MyKNN", "precision"): np.array([0.1, 0.12, 0.2, 0.1, 0.1])}
    res = compare_to_real(real, sims, _mine(), confidence=0.8)
    row = res.table.set_index("algorithm").loc["MyMF"]
    z = stats.norm.ppf(0.9)
    x = real[("MyMF", "precision")]
    assert row["real_high"] - row["real_low"] == pytest.approx(2 * z * x.std(ddof=1) / np.sqrt(400))
    t = stats.t.ppf(0.9, 4)
    assert row["sim_high"] - row["sim_low"] == pytest.approx(2 * t * reps.std(ddof=1) / np.sqrt(5))
    o = res.orders.iloc[0]
    lo, hi = wilson_interval(np.array([4]), np.array([5]), 0.8)
    assert (o.agreement_low, o.agreement_high) == (pytest.approx(lo[0]), pytest.approx(hi[0]))
    with pytest.raises(ValueError, match="`confidence` must be in"):
        compare_to_real(real, sims, _mine(), confidence=1.0)


def test_fewer_than_two_paired_users_warn_and_report_a_tie():
    from simrec.calibration.response import compare_to_real

    a, b = np.array([0.5, 0.2, 0.3]), np.array([0.1, np.nan, np.nan])
    sims = {("MyMF", "precision"): np.array([0.3, 0.3]), ("MyKNN", "precision"): np.array([0.2, 0.2])}
    with pytest.warns(RuntimeWarning, match="1 user\\(s\\) with values of both 'MyMF' and 'MyKNN'"):
        res = compare_to_real({("MyMF", "precision"): a, ("MyKNN", "precision"): b}, sims, _mine())
    assert res.orders.iloc[0].real_order == "tie"

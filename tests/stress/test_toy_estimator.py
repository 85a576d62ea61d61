"""Adding an estimator is one file plus one line in the estimator union (issue 23), proved end to end.

This module is the "one file": :class:`ScaledNaive`, a toy estimator defined
here and nowhere in simrec, carries its own fitting (a per-rank correction,
:class:`~simrec.sampling.estimators.CorrectionEstimator`). The "one line" is
its family in :data:`simrec.config.estimators.ESTIMATORS`, registered at test
time. ``simrec stress`` then runs it on the tests' small ranks file beside
simrec's own estimators, into ``estimates.parquet``, ``summary.csv`` and
``coverage.csv``, with no other change to the library, the harness or the
command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import STRESS_FILE_TOML, invoke

from simrec.config.estimators import ESTIMATORS, EstimatorFamily, EstimatorsSpec
from simrec.sampling import IntervalKind, Naive, SamplingScheme, metric_table, ndcg, recall
from simrec.sampling.estimators import CorrectionEstimator

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ranks" / "good.csv"


@dataclass(frozen=True)
class ScaledNaive(CorrectionEstimator):
    """A toy: the naive sampled metric times ``factor`` (F̂(r) = factor · F(r) on n items)."""

    factor: float = 0.5

    @property
    def name(self) -> str:
        return f"toy_scaled_naive({self.factor:g})"

    @property
    def interval_kind(self) -> IntervalKind:
        return IntervalKind.SAMPLING_BIASED

    def correction(self, problem, tables, n_users):
        return self.factor * metric_table(tables.metrics, tables.scheme.n)


TOY = EstimatorFamily("toy", lambda spec: [ScaledNaive(0.5)])  # the one line of the union


def test_the_toy_runs_through_the_library_call_shape():
    scheme = SamplingScheme(500, 20)
    r = scheme.sample(np.random.default_rng(0).integers(1, 501, size=300), rng=1)
    toy = ScaledNaive(0.5).fit(r, scheme, n_boot=30, rng=2).estimates([recall(5), ndcg(10)])
    naive = Naive().fit(r, scheme, n_boot=30, rng=2).estimates([recall(5), ndcg(10)])
    for t, n in zip(toy, naive):
        assert t.estimator == "toy_scaled_naive(0.5)" and t.interval_kind is IntervalKind.SAMPLING_BIASED
        assert t.estimate == pytest.approx(n.estimate / 2, rel=1e-12)
        assert (t.lower, t.upper) == pytest.approx((n.lower / 2, n.upper / 2), rel=1e-12)
        assert t.converged and t.n_iter == 0


def test_a_family_registered_at_test_time_is_accepted_and_then_forgotten():
    with pytest.raises(ValueError, match="Input should be 'naive', .* or 'mapping'"):
        EstimatorsSpec(names=["toy"])
    with ESTIMATORS.extended(TOY):
        assert EstimatorsSpec(names=["naive", "toy"]).build() == (Naive(), ScaledNaive(0.5))
        with pytest.raises(TypeError, match="'toy' is already registered"):
            ESTIMATORS.register(TOY)
    assert "toy" not in ESTIMATORS
    with pytest.raises(ValueError, match="or 'mapping'"):
        EstimatorsSpec(names=["toy"])


def test_simrec_stress_runs_a_toy_estimator_added_at_test_time(tmp_path):
    (tmp_path / "ranks.csv").write_bytes(FIXTURE.read_bytes())
    spec = tmp_path / "toy.toml"
    spec.write_text(
        STRESS_FILE_TOML.replace('names = ["naive", "MLE"]', 'names = ["naive", "toy", "MLE"]\nn_boot = 20')
    )
    with ESTIMATORS.extended(TOY):
        code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 0, err
    est = pd.read_parquet(tmp_path / "out" / "estimates.parquet")
    assert list(dict.fromkeys(est["estimator"])) == ["naive", "toy_scaled_naive(0.5)", "MLE"]
    toy = est[est["estimator"] == "toy_scaled_naive(0.5)"].set_index(["recommender", "scheme", "n", "metric", "k"])
    naive = est[est["estimator"] == "naive"].set_index(["recommender", "scheme", "n", "metric", "k"])
    assert len(toy) == len(naive) > 0
    np.testing.assert_allclose(toy["mean"], naive.loc[toy.index, "mean"] / 2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(toy["sd"], naive.loc[toy.index, "sd"] / 2, rtol=1e-9, atol=1e-15)
    assert set(toy["interval"]) == {"sampling_biased"} and toy["converged"].all()
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert (summary["estimator"] == "toy_scaled_naive(0.5)").sum() == (summary["estimator"] == "naive").sum() > 0
    coverage = pd.read_csv(tmp_path / "out" / "coverage.csv")
    assert (coverage["estimator"] == "toy_scaled_naive(0.5)").any()

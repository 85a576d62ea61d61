"""``fit(..., n_boot=0)``: the point estimate alone, with no bootstrap and no gradient work (issue 29)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simrec.sampling import (
    MES,
    MLE,
    BiasVariance,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    SamplingScheme,
    WeightedMLE,
    _em,
    _mes,
    ndcg,
    recall,
)
from simrec.sampling.estimators import priors

FITTED = [MLE(), WeightedMLE(10.0), MES(), MSEOptimal(MLEPrior()), BiasVariance(0.1, MESPrior()), Naive()]


@pytest.fixture
def no_gradients(monkeypatch):
    """Any linearisation (EM history, EM or MES gradient) fails the test."""

    def boom(*args, **kwargs):
        raise AssertionError("gradient work without an interval")

    for module, name in ((_em, "em_gradient"), (_em, "em_jvp"), (_mes, "mes_gradient"), (_mes, "mes_jvp")):
        monkeypatch.setattr(module, name, boom)
    monkeypatch.setattr(priors, "_em_history", boom)
    monkeypatch.setattr(priors, "em_gradient", boom)
    monkeypatch.setattr(priors, "mes_gradient", boom)


@pytest.mark.parametrize("estimator", FITTED, ids=lambda e: e.name)
def test_no_interval_no_gradient_the_same_point(estimator, no_gradients):
    s = SamplingScheme(800, 40)
    r = s.sample(np.minimum(800, np.random.default_rng(0).geometric(1 / 50, 400)), rng=1)
    metrics = [recall(5), ndcg(10)]
    point = estimator.fit(r, s, n_boot=0, rng=2).estimates(metrics)
    for e in point:
        assert e.n_boot == 0 and math.isnan(e.lower) and math.isnan(e.upper) and math.isnan(e.std_error)
    again = estimator.fit(r, s, n_boot=0, rng=3).estimates(metrics)  # the rng draws nothing without replicates
    assert [e.estimate for e in point] == [e.estimate for e in again]


@pytest.mark.parametrize("estimator", FITTED[:3], ids=lambda e: e.name)
def test_the_point_is_the_one_of_an_interval(estimator):
    s = SamplingScheme(800, 40)
    r = s.sample(np.minimum(800, np.random.default_rng(0).geometric(1 / 50, 400)), rng=1)
    point = estimator.fit(r, s, n_boot=0).estimate(ndcg(10))
    full = estimator.fit(r, s, n_boot=20, rng=2).estimate(ndcg(10))
    assert point.estimate == pytest.approx(full.estimate, rel=1e-12) and full.lower <= full.upper


def test_one_replicate_is_refused():
    with pytest.raises(ValueError, match=r"`n_boot` must be 0 \(no interval\) or >= 2; got 1"):
        Naive().fit([1, 2], SamplingScheme(100, 10), n_boot=1)

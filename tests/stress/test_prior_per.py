"""Per-dataset priors (issue 27): the authors fit BV_MES / MN_MES's prior on every repeat of a dataset and average
it over the repeats (``estimator/BV_MES_MLE.ipynb``, ``MN_MES_MLE.ipynb`` of
dli12/AAAI23-Towards-Reliable-Item-Sampling-for-Recommendation-Evaluation); simrec fits it per repeat.
``StressConfig(prior_per="dataset")`` runs the authors' way."""

from __future__ import annotations

import numpy as np
import pytest

from simrec.config.estimators import EstimatorsSpec
from simrec.sampling import (
    MES,
    BiasVariance,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    PooledPrior,
    SamplingScheme,
    ndcg,
    recall,
)
from simrec.stress import RecommenderRanks, StressConfig, run_stress
from simrec.stress.harness import rank_sampler

N, n, REPEATS = 600, 30, 4
ESTIMATORS = (MES(), MSEOptimal(MESPrior()), BiasVariance(0.1, MLEPrior()))


@pytest.fixture(scope="module")
def ranks() -> RecommenderRanks:
    R = np.minimum(np.random.default_rng(3).geometric(1 / 40, 250), N)
    return RecommenderRanks("A", R, np.full(R.size, N), np.arange(R.size))


def test_the_dataset_prior_is_the_average_of_the_repeats_fits(ranks):
    cfg = StressConfig(repeats=REPEATS, k_max=10, metrics=("recall", "ndcg"), estimators=ESTIMATORS)
    per_repeat = run_stress(ranks, "binomial", n, cfg, rng=0)
    per_dataset = run_stress(ranks, "binomial", n, StressConfig(**{**cfg.__dict__, "prior_per": "dataset"}), rng=0)
    assert per_repeat.estimators == ("MES", "MN_MES", "BV_MLE(gamma=0.1)")
    assert per_dataset.estimators == ("MES", "MN_MES@dataset", "BV_MLE@dataset(gamma=0.1)")
    np.testing.assert_array_equal(
        per_dataset.estimates[:, 0], per_repeat.estimates[:, 0]
    )  # MES: same draws, per repeat
    assert not np.allclose(per_dataset.estimates[:, 1:], per_repeat.estimates[:, 1:])

    # by hand: the same draws, each prior fitted per repeat and averaged, then each repeat's MN / BV on the average
    scheme = SamplingScheme(N, n)
    draw = rank_sampler(ranks, "binomial", n, np.random.default_rng(0))
    draws = [draw() for _ in range(REPEATS)]
    hists = [np.bincount(r - 1, minlength=n) for r in draws]
    metrics = [recall(k) for k in range(1, 11)] + [ndcg(k) for k in range(1, 11)]
    for prior, col, make in ((MESPrior(), 1, MSEOptimal), (MLEPrior(), 2, lambda p: BiasVariance(0.1, p))):
        fits = [prior.fit(h, scheme, 300).value for h in hists]
        pooled = PooledPrior(prior, np.mean(fits, axis=0), REPEATS)
        assert pooled.name == prior.name + "@dataset"
        for rep, r in enumerate(draws):
            est = make(pooled).fit(r, scheme, n_boot=2, rng=0).estimates(metrics)
            np.testing.assert_allclose(per_dataset.estimates[rep, col], [e.estimate for e in est], rtol=1e-10)


def test_the_dataset_prior_does_not_move_with_the_bootstrap(ranks):
    """Within a repeat π̄ is fixed: the linearised replicates of MN@dataset are those of MN on a fixed prior."""
    cfg = StressConfig(repeats=2, k_max=5, metrics=("recall",), estimators=ESTIMATORS, n_boot=30, prior_per="dataset")
    res = run_stress(ranks, "binomial", n, cfg, rng=1)
    assert np.all(res.lower <= res.estimates + 1e-12) and np.all(res.estimates <= res.upper + 1e-12)


def test_scenario_files_choose_where_priors_are_fitted():
    assert EstimatorsSpec().prior_per == "repeat"
    assert EstimatorsSpec(prior_per="dataset").prior_per == "dataset"
    with pytest.raises(ValueError, match="prior_per"):
        EstimatorsSpec(prior_per="user")
    with pytest.raises(ValueError, match="prior_per"):
        StressConfig(prior_per="user")

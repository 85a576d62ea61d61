"""MLE and its iterations (issue 27): the estimate depends on the EM's cap, the authors' fixed 100 epochs are a
named variant, and a fit stopped at its cap is reported without a warning per estimate.

References: the authors' ``estimator/MLE.ipynb``
(dli12/AAAI23-Towards-Reliable-Item-Sampling-for-Recommendation-Evaluation: ``epoch = 100`` EM iterations from
``pi = torch.ones(N)/N``, no tolerance); Li's dissertation §2.4.3 (eqs. 31-33).
"""

from __future__ import annotations

import warnings
from typing import get_args

import numpy as np
import pytest

from simrec.config.estimators import EstimatorsSpec
from simrec.sampling import (
    MES_OBJECTIVES,
    MLE,
    BiasVariance,
    ConvergenceWarning,
    MLEPrior,
    MSEOptimal,
    SamplingScheme,
    fit_limits,
    metric_table,
    ndcg,
    recall,
)
from simrec.sampling.distribution import mle


def _case():
    """N = 2,000, n = 100, M = 3,000 users with geometric global ranks (mean 250)."""
    rng = np.random.default_rng(0)
    scheme = SamplingScheme(2000, 100)
    R = np.minimum(2000, 1 + rng.geometric(0.004, size=3000))
    return scheme, R, scheme.sample(R, rng=1)


def test_the_estimate_moves_with_the_cap_and_the_em_never_meets_its_tolerance():
    """The numbers of MLEPrior's docstring: R@1 0.0075 / 0.0121 / 0.0349 after 100 / 300 / 3,000 iterations against
    a truth of 0, and log-likelihood gains per iteration that decay like 1/t (1.2e-6, 4.8e-7, 2.5e-8)."""
    scheme, R, r = _case()
    f = metric_table([recall(1), recall(10)], 2000)
    assert f[R - 1, 0].mean() == 0.0
    got = {}
    for cap in (100, 300, 3000):
        d = mle(r, scheme, max_iter=cap, tol=0.0)
        got[cap] = (d.probabilities @ f[:, 0], d.objective[-1] - d.objective[-2])
        assert d.n_iter == cap and not d.converged
    np.testing.assert_allclose([got[c][0] for c in (100, 300, 3000)], [0.0075, 0.0121, 0.0349], atol=1e-4)
    np.testing.assert_allclose([got[c][1] for c in (100, 300, 3000)], [1.24e-6, 4.81e-7, 2.48e-8], rtol=0.02)
    assert mle(r, scheme).converged is False  # the default (300, 1e-9) does not converge here either


def test_the_authors_fixed_epochs_are_a_named_variant():
    scheme, _, r = _case()
    authors = MLE(epochs=100)
    assert authors.name == "MLE[100 epochs]" and MLE().name == "MLE"
    assert MSEOptimal(MLEPrior(epochs=100)).name == "MN_MLE[100 epochs]"
    assert BiasVariance(0.1, MLEPrior(epochs=100)).name == "BV_MLE[100 epochs](gamma=0.1)"
    assert fit_limits(authors, 300) == ("EM, fixed epochs", 100, 0.0) and fit_limits(MLE(), 300) == ("EM", 300, 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # its rule is met: no warning
        est = authors.fit(r, scheme, n_boot=20, max_iter=300, rng=2).estimates([recall(1), ndcg(10)])
    assert all(e.converged and e.n_iter == 100 for e in est)
    d = mle(r, scheme, max_iter=100, tol=0.0)  # whatever max_iter the caller gives, 100 iterations
    f = metric_table([recall(1), ndcg(10)], 2000)
    np.testing.assert_allclose([e.estimate for e in est], d.probabilities @ f, rtol=1e-12)
    simrec = MLE().fit(r, scheme, n_boot=20, max_iter=300, rng=2).estimate(recall(1))
    assert simrec.estimate != pytest.approx(est[0].estimate, rel=0.1)  # 0.0121 vs 0.0075: the cap matters
    with pytest.raises(ValueError, match="`epochs`"):
        MLE(epochs=0)


def test_a_fit_stopped_at_its_cap_warns_once_per_estimator_and_cap_not_once_per_estimate():
    scheme, _, r = _case()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for rng in range(3):  # three estimates: one warning
            e = MLE().fit(r, scheme, n_boot=2, max_iter=5, rng=rng).estimate(recall(5))
            assert not e.converged and e.n_iter == 5
        MLE().fit(r, scheme, n_boot=2, max_iter=6, rng=0).estimate(recall(5))  # another cap: its own warning
    mine = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(mine) == 2 and "max_iter = 5" in mine[0] and "max_iter = 6" in mine[1]


def test_scenario_files_run_the_authors_epochs_and_mes_objectives():
    spec = EstimatorsSpec(names=["MLE", "MN_MLE", "MES", "BV_MES"], bv_gammas=[0.1], mle_epochs=100)
    names = [e.name for e in spec.build()]
    assert names == ["MLE[100 epochs]", "MN_MLE[100 epochs]", "MES", "BV_MES(gamma=0.1)"]
    spec = EstimatorsSpec(names=["MES", "MN_MES"], mes_objective="authors_notebook")
    built = spec.build()
    assert [e.name for e in built] == ["MES[notebook]", "MN_MES[notebook]"] and built[0].eta == 0.01
    assert spec.mes_prior.eta == 0.01
    assert set(get_args(EstimatorsSpec.model_fields["mes_objective"].annotation)) == set(MES_OBJECTIVES)
    assert EstimatorsSpec(mes_objective="unweighted", mes_eta=0.002).mes_prior.eta == 0.002
    with pytest.raises(ValueError, match="mes_objective"):
        EstimatorsSpec(mes_objective="cvxpy")
    with pytest.raises(ValueError, match="mle_epochs"):
        EstimatorsSpec(mle_epochs=0)

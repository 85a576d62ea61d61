"""The single-precision backward pass of the EM (issue 29): the same intervals as before, without subnormal floats.

Reference values: the double-precision backward pass over the full double
P(r|R) (``dtype=np.float64``, the reference of :mod:`simrec.sampling._em`) and
the single-precision pass as it was before issue 29 (the float32 copy with
the double's 1e-30 tail, vectors floored at 1e-30), recomputed in the test by
setting those two constants back.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from simrec.sampling import (
    MES,
    MES_AUTHORS_NOTEBOOK,
    MES_PUBLISHED,
    MES_UNWEIGHTED,
    MLE,
    BiasVariance,
    BiasVarianceInverseUsers,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    SamplingScheme,
    WeightedMLE,
    _em,
    bootstrap_estimates,
    bootstrap_histograms,
    metric_table,
    ndcg,
    recall,
)
from simrec.sampling.estimators import priors

#: Every linearisable estimator: the plug-ins of each fit, and MN and BV (gamma 0.1, 1/M) on each estimated prior.
ESTIMATORS = [
    MLE(),
    MLE(epochs=100),
    WeightedMLE(10.0),
    *(MES(objective=o) for o in (MES_PUBLISHED, MES_AUTHORS_NOTEBOOK, MES_UNWEIGHTED)),
    *(e for prior in (MLEPrior(), MESPrior()) for e in (MSEOptimal(prior), BiasVariance(0.1, prior))),
    BiasVarianceInverseUsers(MLEPrior()),
]

#: The EM gradient in single precision is within this share of its largest entry of the double-precision
#: one (module docstring of simrec.sampling._em; tests/sampling/test_linearize.py).
GRADIENT_RTOL = 1e-5


def _setup(N=2000, n=100, M=3000, n_boot=50):
    s = SamplingScheme(N, n)
    rng = np.random.default_rng(29)
    ranks = 1 + np.floor((N - 1) * rng.random(M) ** (1 / 0.3)).astype(int)  # Beta(0.3, 1)-shaped
    h = np.bincount(s.sample(ranks, rng=rng) - 1, minlength=n)
    return s, h, bootstrap_histograms(h, n_boot, rng=30)


def test_single_precision_copy_has_no_tail_and_no_subnormal_products():
    # every kept entry is at least 1e-12 of its row's largest, every entry of the double at least that large is
    # kept (exactly, up to float32 rounding), and a kept entry times the smallest vector entry kept is a normal
    # float32 (rows of P(r|R) sum to 1 over n columns, so their largest is at least 1/n)
    s = SamplingScheme(2000, 100)
    a = s.blocks
    single = _em._single_matrix(a)
    assert single is _em._single_matrix(a)  # cached
    dense, dense32 = a.dense(), single.dense()
    row_max = dense.max(axis=1, keepdims=True)
    kept = dense >= _em._SINGLE_CUTOFF * row_max
    np.testing.assert_allclose(dense32[kept], dense[kept], rtol=1e-7, atol=0)
    assert np.all(dense32[~kept] == 0)
    smallest = min(v[v > 0].min() for *_, v in single.blocks)
    assert smallest * _em._SINGLE_FLOOR >= np.finfo(np.float32).tiny
    assert all(v.dtype == np.float32 for *_, v in single.blocks)
    assert single.nnz < a.nnz  # the windows were narrowed


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.name)
def test_faster_interval_equals_the_previous_one(estimator, monkeypatch):
    """Derived tolerance: each replicate is point + ∇·dh; a gradient within GRADIENT_RTOL of its scale moves a
    replicate by at most GRADIENT_RTOL of the replicates' deviations from the point (the same linear map of the
    same dh), and a percentile endpoint by at most the largest replicate move. Compared with the pass before
    issue 29 and with the double-precision reference; point estimates and the MES family (no EM) bit-identical."""
    s, h, boot = _setup()
    metrics = [ndcg(10), recall(10)]
    new = bootstrap_estimates([estimator], h, boot, s, metrics)[:, 0]
    with monkeypatch.context() as m:  # the single-precision pass before issue 29
        m.setattr(_em, "_SINGLE_CUTOFF", 0.0)
        m.setattr(_em, "_SINGLE_FLOOR", 1e-30)
        m.setattr(_em, "_SINGLE", {})
        previous = bootstrap_estimates([estimator], h, boot, s, metrics)[:, 0]
    with monkeypatch.context() as m:  # double precision over the full matrix: the reference
        m.setattr(priors, "em_gradient", functools.partial(_em.em_gradient, dtype=np.float64))
        reference = bootstrap_estimates([estimator], h, boot, s, metrics)[:, 0]
    assert np.array_equal(new[0], previous[0]) and np.array_equal(new[0], reference[0])
    if isinstance(estimator.rank_fit, MESPrior):
        assert np.array_equal(new, previous)
        return
    scale = np.abs(reference[1:] - reference[0]).max(axis=0)
    tol = GRADIENT_RTOL * scale
    assert np.all(np.abs(new[1:] - previous[1:]) <= tol)
    assert np.all(np.abs(new[1:] - reference[1:]) <= tol)
    q = [0.025, 0.975]
    assert np.all(np.abs(np.quantile(new[1:], q, axis=0) - np.quantile(previous[1:], q, axis=0)) <= tol)
    assert not np.array_equal(new, previous)  # the single-precision pass did run on the new copy


def test_the_gradient_keeps_its_accuracy_at_a_realistic_size():
    # N = 20,720 / 4, n = 501 / 4 keeps the band of P(r|R) as wide relative to n as at ml-20m's size; 300
    # iterations stopped at the cap, as there: the single-precision gradient within 1e-6 of the double one
    # (6e-8 measured at full size, before and after the cut)
    N, n, M = 5180, 125, 34_000
    s = SamplingScheme(N, n)
    rng = np.random.default_rng(5)
    ranks = 1 + np.floor((N - 1) * rng.random(M) ** (1 / 0.3)).astype(int)
    p = np.bincount(s.sample(ranks, rng=rng) - 1, minlength=n) / M
    hist: list = []
    pi, it, converged, _ = _em.em(s.blocks, p, 300, _em.EM_TOL, history=hist)
    assert it == 300 and not converged
    f = metric_table([ndcg(10), recall(10)], N)
    g64 = _em.em_gradient(hist, pi, f, n, dtype=np.float64)
    g32 = _em.em_gradient(hist, pi, f, n)
    np.testing.assert_allclose(g32, g64, rtol=0, atol=1e-6 * np.abs(g64).max())

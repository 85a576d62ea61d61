"""The exact EM gradient (reverse mode) and the linearised bootstrap of MLE / WMLE built on it."""

from __future__ import annotations

import numpy as np
import pytest

from simrec.sampling import MLE, SamplingScheme, WeightedMLE, metric_table, ndcg, recall
from simrec.sampling._linearize import em_gradient
from simrec.sampling.distribution import _em
from simrec.sampling.fitted import _linearized_replicates, estimate_histograms


def _ranks(N, M, rng):
    return 1 + np.floor((N - 1) * rng.random(M) ** (1 / 0.3)).astype(int)  # Beta(0.3, 1)-shaped


@pytest.mark.parametrize(("n", "M"), [(20, 500), (40, 6)])  # every column observed / the restricted EM
def test_em_gradient_matches_central_differences(n, M):
    N = 300
    s = SamplingScheme(N, n)
    rng = np.random.default_rng(1)
    r = s.sample(_ranks(N, M, rng), rng=2)
    p = np.bincount(r - 1, minlength=n) / M
    f = metric_table([ndcg(10), recall(5)], N)
    hist: list = []
    pi, *_ = _em(s.blocks, p, 50, 0.0, history=hist)
    g = em_gradient(hist, pi, f, n)
    assert np.all(g[p == 0] == 0)
    for _ in range(3):
        d = rng.normal(size=n) * (p > 0)
        eps = 1e-6
        fd = (_em(s.blocks, p + eps * d, 50, 0.0)[0] @ f - _em(s.blocks, p - eps * d, 50, 0.0)[0] @ f) / (2 * eps)
        np.testing.assert_allclose(d @ g, fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("estimator", [MLE(), WeightedMLE(10.0)])
def test_linearised_bootstrap_agrees_with_refitting(estimator):
    # on the same replicate histograms the linearised replicates differ from the refitted ones by the
    # second-order term, O(1/M) against deviations of O(1/sqrt(M)): at M = 3,000 the typical (median)
    # replicate differs by under 10% of the bootstrap standard error, and the two standard errors by under 5%
    N, n, M = 2000, 50, 3000
    s = SamplingScheme(N, n)
    r = s.sample(_ranks(N, M, np.random.default_rng(1)), rng=2)
    metrics = [ndcg(10), recall(20)]
    fitted = estimator.fit(r, s, n_boot=60, rng=3)
    table = metric_table(metrics, N)
    lin = _linearized_replicates(estimator, fitted.counts, fitted.boot_counts, s, table, 300)
    rows = np.vstack([fitted.counts[None, :], fitted.boot_counts])
    ref = estimate_histograms([estimator], rows, s, metrics)[:, 0, :]
    np.testing.assert_allclose(lin[0], ref[0], rtol=1e-12)  # the same point estimate
    se = ref[1:].std(axis=0, ddof=1)
    np.testing.assert_allclose(lin[1:].std(axis=0, ddof=1), se, rtol=0.05)
    assert np.all(np.median(np.abs(lin[1:] - ref[1:]), axis=0) < 0.1 * se)
    # and the user-facing interval is the linearised one by default, the refitted one on request
    a = fitted.estimate(ndcg(10))
    assert [a.lower, a.upper] == pytest.approx(np.quantile(lin[1:, 0], [0.025, 0.975]), rel=1e-12)

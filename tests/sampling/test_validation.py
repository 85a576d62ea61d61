"""Every estimator validates its inputs and names the offending parameter."""

from __future__ import annotations

import numpy as np
import pytest

from simrec.sampling import (
    CorrectionProblem,
    SamplingScheme,
    average_precision,
    beta_mapping,
    bias_variance,
    decay_weights,
    fit_beta_mapping,
    global_ranks,
    least_squares,
    mes,
    mle,
    mle_adaptive,
    mse_optimal,
    naive,
    ndcg,
    precision,
    proportion_sample_size,
    proportion_z_test,
    recall,
    sample_ranks_adaptive,
    sample_ranks_binomial,
    sample_ranks_by_draws,
    sample_ranks_hypergeometric,
    weighted_mle,
)

S = SamplingScheme(100, 10)
R_OK = np.array([1, 2, 3])

CASES = [
    # (callable, exception, parameter named in the message)
    (lambda: SamplingScheme(100, 101), ValueError, "`n`"),  # n > N
    (lambda: SamplingScheme(100, 1), ValueError, "`n`"),
    (lambda: SamplingScheme(1, 1), ValueError, "`n_items`"),
    (lambda: SamplingScheme(100, 10, tail_cutoff=1.5), ValueError, "`tail_cutoff`"),
    (lambda: sample_ranks_binomial([1, 101], 100, 10), ValueError, "`ranks`"),  # rank outside [1, N]
    (lambda: sample_ranks_binomial([0], 100, 10), ValueError, "`ranks`"),
    (lambda: sample_ranks_binomial([], 100, 10), ValueError, "`ranks`"),  # empty
    (lambda: sample_ranks_hypergeometric([1.5], 100, 10), ValueError, "`ranks`"),
    (lambda: sample_ranks_hypergeometric([1], 100, 200), ValueError, "`n`"),  # n > N
    (lambda: recall(0), ValueError, "`k`"),  # K < 1
    (lambda: ndcg(-3), ValueError, "`k`"),
    (lambda: precision(2.5), TypeError, "`k`"),
    (lambda: average_precision(0), ValueError, "`k`"),
    (lambda: naive(recall(3), S).mean([0, 1]), ValueError, "`sampled_ranks`"),  # r outside [1, n]
    (lambda: naive(recall(3), S).mean([11]), ValueError, "`sampled_ranks`"),
    (lambda: naive(recall(3), S).mean([]), ValueError, "`sampled_ranks`"),
    (lambda: bias_variance(recall(3), S, 1.5), ValueError, "`gamma`"),  # γ outside [0, 1]
    (lambda: bias_variance(recall(3), S, -0.1), ValueError, "`gamma`"),
    (lambda: bias_variance("recall", S, 0.1), TypeError, "`metric`"),
    (lambda: least_squares(recall(3), S, prior=np.ones(5)), ValueError, "`prior`"),
    (lambda: least_squares(recall(3), S, prior=-np.ones(100)), ValueError, "`prior`"),
    (lambda: CorrectionProblem(S, rcond=2.0), ValueError, "`rcond`"),
    (lambda: mse_optimal(recall(3), S, sampled_ranks=[0, 1]), ValueError, "`sampled_ranks`"),
    (lambda: mle([1, 11], S), ValueError, "`sampled_ranks`"),
    (lambda: mle([], S), ValueError, "`sampled_ranks`"),
    (lambda: mle([1, 2], S, max_iter=0), ValueError, "`max_iter`"),
    (lambda: mle([1, 2], "scheme"), TypeError, "`scheme`"),
    (lambda: weighted_mle([1, 2], S, np.ones(3)), ValueError, "`weights`"),
    (lambda: weighted_mle([1, 2], S, np.r_[0, 0, np.ones(8)]), ValueError, "`weights`"),
    (lambda: decay_weights(ndcg(), 10, 0), ValueError, "`scale`"),
    (lambda: mes([1, 2], S, eta=0), ValueError, "`eta`"),
    (lambda: mle_adaptive([1, 3], [2, 2], 100), ValueError, "`sampled_ranks`"),
    (lambda: mle_adaptive([1, 1], [2, 200], 100), ValueError, "`sizes`"),
    (lambda: sample_ranks_adaptive(R_OK, 100, 1), ValueError, "`n0`"),
    (lambda: sample_ranks_adaptive(R_OK, 100, 20, n_max=200), ValueError, "`n_max`"),
    (lambda: beta_mapping(100, 10, 0), ValueError, "`a`"),
    (lambda: beta_mapping(100, 101, 0.5), ValueError, "`n`"),
    (lambda: fit_beta_mapping([1, 11], 100, 10), ValueError, "`sampled_ranks`"),
    (lambda: global_ranks(np.zeros((2, 3)), [0, 3]), ValueError, "`targets`"),
    (lambda: global_ranks(np.zeros((2, 3)), [0, 1], ties="first"), ValueError, "`ties`"),
    (lambda: sample_ranks_by_draws(np.zeros((2, 3)), [0, 1], 2, weights=np.ones(2)), ValueError, "`weights`"),
    (lambda: proportion_sample_size(0), ValueError, "`margin`"),
    (lambda: proportion_sample_size(0.03, confidence=1.0), ValueError, "`confidence`"),
    (lambda: proportion_z_test(11, 10, 1, 10), ValueError, "`successes_a`"),
    (lambda: proportion_z_test(1, 10, 1, 10, alternative="bigger"), ValueError, "`alternative`"),
]


@pytest.mark.parametrize("call,exc,name", CASES, ids=[f"{i}:{c[2]}" for i, c in enumerate(CASES)])
def test_bad_input_raises_naming_the_parameter(call, exc, name):
    with pytest.raises(exc, match=name):
        call()

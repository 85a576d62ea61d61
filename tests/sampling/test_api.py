"""One API rule (issue 10): M is taken from the sampled ranks, which are checked against the scheme everywhere."""

from __future__ import annotations

import numpy as np
import pytest

from simrec.sampling import (
    MLE,
    BiasVariance,
    CorrectionProblem,
    MSEOptimal,
    SamplingScheme,
    bias_variance,
    bias_variance_distribution,
    bias_variance_inverse_users,
    decay_weights,
    fit_beta_mapping,
    mes,
    mle,
    mse_optimal,
    naive,
    ndcg,
    rank_histogram,
    recall,
    sampled_hit_ratio_curve,
    weighted_mle,
)

S = SamplingScheme(100, 10)


def _data(N: int = 600, n: int = 20, M: int = 250) -> tuple[SamplingScheme, np.ndarray]:
    s = SamplingScheme(N, n)
    R = 1 + np.floor((N - 1) * np.random.default_rng(0).random(M) ** 3).astype(int)
    return s, s.sample(R, rng=1)


@pytest.mark.parametrize("use_prior", [False, True])
def test_m_dependent_corrections_give_the_numbers_of_the_old_computation(use_prior):
    # the old signature passed M by hand; the old computation solved eq. 45 / BV at γ = 1/M with that M
    s, r = _data()
    M = r.size
    prior = mle(r, s, max_iter=50) if use_prior else None
    m = ndcg(10)
    prob = CorrectionProblem.from_prior(s, prior)
    mn = mse_optimal(m, s, sampled_ranks=r, prior=prior)
    np.testing.assert_array_equal(mn.values, prob.solve_eq45(prob.rhs(m), M))
    bvm = bias_variance_inverse_users(m, s, sampled_ranks=r, prior=prior)
    np.testing.assert_array_equal(bvm.values, prob.solve(m, 1.0 / M))
    np.testing.assert_array_equal(bvm.values, bias_variance(m, s, 1.0 / M, prior=prior).values)
    # the old call still works (deprecated, warns) and gives the same numbers
    with pytest.warns(DeprecationWarning, match="pass `sampled_ranks=`"):
        old_mn = mse_optimal(m, s, M, prior=prior)
    with pytest.warns(DeprecationWarning, match="pass `sampled_ranks=`"):
        old_bvm = bias_variance_inverse_users(m, s, M, prior=prior)
    np.testing.assert_array_equal(old_mn.values, mn.values)
    np.testing.assert_array_equal(old_bvm.values, bvm.values)
    assert mn.estimator == old_mn.estimator and bvm.estimator == old_bvm.estimator


def test_n_users_is_the_count_of_the_sampled_ranks():
    s, r = _data()
    m = recall(10)
    twice = np.r_[r, r]
    with pytest.warns(DeprecationWarning):
        by_hand = mse_optimal(m, s, 2 * r.size)
    np.testing.assert_array_equal(mse_optimal(m, s, sampled_ranks=twice).values, by_hand.values)
    assert np.max(np.abs(mse_optimal(m, s, sampled_ranks=r).values - by_hand.values)) > 0
    # a CorrectionProblem works the same way (ranks checked against its scheme)
    prob = CorrectionProblem(s)
    np.testing.assert_array_equal(mse_optimal(m, prob, sampled_ranks=twice).values, by_hand.values)
    # the object API takes M from the ranks too and agrees with the functional layer
    e = MSEOptimal().fit(r, s, n_boot=2, rng=0).estimate(m)
    assert e.n_users == r.size
    assert e.estimate == pytest.approx(mse_optimal(m, s, sampled_ranks=r).mean(r), rel=1e-10)


BAD_M = [
    # (call, exception, message fragment)
    (lambda: mse_optimal(recall(3), S), TypeError, "`sampled_ranks` is required"),
    (lambda: bias_variance_inverse_users(recall(3), S), TypeError, "`sampled_ranks` is required"),
    (lambda: mse_optimal(recall(3), S, 3, sampled_ranks=[1, 2, 3]), TypeError, "not also `n_users`"),
    (
        lambda: mse_optimal(recall(3), S, sampled_ranks=[0, 1]),
        ValueError,
        "`sampled_ranks` must be integers in [1, 10]; got 0 at position 0",
    ),
    (
        lambda: mse_optimal(recall(3), S, sampled_ranks=[1, 11]),
        ValueError,
        "`sampled_ranks` must be integers in [1, 10]; got 11 at position 1",
    ),
    (
        lambda: bias_variance_inverse_users(recall(3), CorrectionProblem(S), sampled_ranks=[2, 50]),
        ValueError,
        "`sampled_ranks` must be integers in [1, 10]; got 50 at position 1",
    ),
    (
        lambda: mse_optimal(recall(3), S, sampled_ranks=[1.5]),
        ValueError,
        "`sampled_ranks` must hold integers; got 1.5 at position 0",
    ),
    (lambda: mse_optimal(recall(3), S, sampled_ranks=[1, np.nan]), ValueError, "`sampled_ranks` must hold integers"),
    (lambda: mse_optimal(recall(3), S, sampled_ranks=[]), ValueError, "`sampled_ranks` must not be empty"),
    (lambda: mse_optimal(recall(3), S, sampled_ranks=[[1, 2]]), ValueError, "`sampled_ranks` must have 1"),
    (lambda: mse_optimal(recall(3), S, sampled_ranks=[True]), TypeError, "`sampled_ranks` must be an array"),
    (lambda: mse_optimal(recall(3), S, sampled_ranks=["1"]), TypeError, "`sampled_ranks` must be an array"),
    (lambda: mse_optimal("recall", S, sampled_ranks=[1]), TypeError, "`metric`"),
    (lambda: mse_optimal(recall(3), "scheme", sampled_ranks=[1]), TypeError, "`scheme`"),
]


@pytest.mark.parametrize("call, exc, fragment", BAD_M)
def test_m_dependent_corrections_reject_bad_input_clearly(call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value)


def test_deprecated_n_users_is_still_checked():
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="`n_users`"):
        mse_optimal(recall(3), S, 0)


# every entry point that takes sampled ranks checks them against the scheme's n: ranks from an n = 100
# sampling (here 11) given to an n = 10 scheme fail with the same message
ENTRY_POINTS = {
    "RankCorrection.mean": lambda r: naive(recall(3), S).mean(r),
    "mse_optimal": lambda r: mse_optimal(recall(3), S, sampled_ranks=r),
    "bias_variance_inverse_users": lambda r: bias_variance_inverse_users(recall(3), S, sampled_ranks=r),
    "mle": lambda r: mle(r, S),
    "weighted_mle": lambda r: weighted_mle(r, S, decay_weights(ndcg(), 10)),
    "mes": lambda r: mes(r, S),
    "bias_variance_distribution": lambda r: bias_variance_distribution(r, S, 0.1),
    "Estimator.fit (MLE)": lambda r: MLE().fit(r, S),
    "Estimator.fit (BV)": lambda r: BiasVariance(0.1).fit(r, S),
    "Estimator.fit (MN)": lambda r: MSEOptimal().fit(r, S),
    "rank_histogram": lambda r: rank_histogram(r, 10),
    "sampled_hit_ratio_curve": lambda r: sampled_hit_ratio_curve(r, 10),
    "fit_beta_mapping": lambda r: fit_beta_mapping(r, 100, 10),
}


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_every_entry_point_checks_ranks_against_the_scheme(name):
    with pytest.raises(ValueError, match=r"`sampled_ranks` must be integers in \[1, 10\]; got 11 at position 2"):
        ENTRY_POINTS[name]([1, 5, 11])


def test_estimate_on_a_building_block_names_what_to_call_instead():
    # the functional results have no `.estimate` (only fitted estimators do); the error says what to use
    r = [1, 2, 3]
    with pytest.raises(AttributeError, match=r"use `\.expectation\(metric\)`.*MLE\(\)\.fit"):
        mle(r, S).estimate(ndcg(10))
    with pytest.raises(AttributeError, match=r"use `\.mean\(sampled_ranks\)`.*\.fit\(sampled_ranks, scheme\)"):
        naive(recall(3), S).estimate(r)
    assert not hasattr(mle(r, S), "estimate")

"""The pieces of simrec.debias against independent references.

References: simrec.metrics (the naive estimator is today's number), pandas.cut
(the authors' stratification), the stratified estimator's definition
(subsets evaluated one by one), closed forms (the test-set propensity by
enumeration, an exact power law), and the law of successive sampling.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from simrec import metrics as M
from simrec.debias import (
    IPS,
    NDCG,
    SNIPS,
    Hits,
    Naive,
    PopularityPowerLaw,
    Precision,
    Recall,
    RecallTruncated,
    Stratified,
    WeightedSampledRanks,
    fit_popularity_exponent,
    holdout_propensity,
    propensity_strata,
    rank_test,
    resample_test,
)
from simrec.debias.estimators import naive_on, stratum_values
from simrec.sampling import SamplingScheme, least_squares, mle
from simrec.sampling import recall as rank_recall


def _random_case(seed: int, n_users: int = 40, n_items: int = 30, width: int = 8):
    rng = np.random.default_rng(seed)
    lists = np.argsort(rng.random((n_users, n_items)), axis=1)[:, :width]
    lists[rng.random(n_users) < 0.2, -2:] = -1  # some short lists (trailing padding)
    test = sp.csr_array((rng.random((n_users, n_items)) < 0.15).astype(np.int8))
    return lists, test, rng


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        (Recall(5), lambda lists, t: M.recall(lists[:, :5], t)),
        (Precision(5), lambda lists, t: M.precision(lists[:, :5], t)),
        (Hits(), lambda lists, t: M.hits(lists, t)),
        (RecallTruncated(4), lambda lists, t: M.recall_truncated(lists[:, :4], t)),
        (NDCG(6), lambda lists, t: M.ndcg(lists[:, :6], t)),
    ],
    ids=["recall", "precision", "hits", "recall_truncated", "ndcg"],
)
def test_the_naive_estimator_is_simrec_metrics_value(mine, theirs):
    lists, test, _ = _random_case(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        ours = Naive().estimate(rank_test(lists, test), mine).per_user
        ref = np.asarray(theirs(lists, test), dtype=float)
    # simrec.metrics gives 0 (recall-like) or a value where we give NaN only for users without a test pair
    has = np.diff(test.indptr) > 0
    np.testing.assert_allclose(ours[has], ref[has], rtol=1e-12, equal_nan=True)
    assert np.isnan(ours[~has]).all()


def test_the_strata_are_pandas_cut():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.01, 0.9, 500)
    p[[4, 9]] = p.min(), p.max()
    for n in (1, 2, 5, 7):
        stratum, edges = propensity_strata(p, n)
        ref = pd.cut(p, bins=n, labels=False)
        np.testing.assert_array_equal(stratum, ref)
        assert edges[0] == p.min() and edges[-1] == p.max()
    stratum, _ = propensity_strata(np.array([0.2, np.nan, 0.5]), 2)
    assert stratum[1] == -1


@pytest.mark.parametrize("metric", [Recall(5), Precision(4), NDCG(6), Hits()], ids=lambda m: m.label)
def test_stratum_values_in_one_pass_equal_each_subset_evaluated_alone(metric):
    lists, test, rng = _random_case(1)
    ranked = rank_test(lists, test)
    stratum = rng.integers(-1, 4, test.nnz)
    stratum[stratum == 2] = 3  # an empty stratum
    got = stratum_values(ranked, metric, stratum, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        for s in range(4):
            sub = ranked.subset(stratum == s)
            ref = naive_on(sub, metric, "x", evaluated=np.diff(sub.test.indptr) > 0).value
            assert got[s] == pytest.approx(ref, rel=1e-12, nan_ok=True)
    assert np.isnan(got[2])


def test_stratified_with_one_stratum_is_the_naive_estimate_over_users():
    lists, test, rng = _random_case(2)
    ranked = rank_test(lists, test)
    p = rng.uniform(0.1, 1, test.nnz)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UndefinedMetricWarning)
        one = Stratified(1).estimate(ranked, Recall(5), p)
        assert one.value == pytest.approx(Naive().estimate(ranked, Recall(5)).value, rel=1e-12)
        # size weights: the strata's shares of the test pairs
        five = Stratified(5).estimate(ranked, Recall(5), p)
    assert five.strata.weights == pytest.approx(five.strata.sizes / five.strata.sizes.sum())


def test_test_propensity_by_enumeration_of_observation_and_holdout():
    # pair observed with probability pi, then a test pair with probability f (else training):
    # P(test | not training) = pi f / (pi f + 1 - pi)
    for pi, f in itertools.product([0.05, 0.3, 0.9, 1.0], [0.1, 0.2, 0.5, 1.0]):
        outcomes = {"test": pi * f, "train": pi * (1 - f), "unobserved": 1 - pi}
        want = outcomes["test"] / (outcomes["test"] + outcomes["unobserved"])
        assert holdout_propensity(pi, f) == pytest.approx(want, rel=1e-14)
    assert holdout_propensity(1.0, 0.2) == 1.0  # never above 1


def test_the_popularity_exponent_of_an_exact_power_law_is_recovered_exactly():
    # items of training count c = k^2 appear in k^3 lists: f(n*) = n*^1.5 exactly
    gamma = 1.5
    k = np.repeat(np.arange(1, 16), 3)
    counts, appear = k**2, k**3
    items = np.repeat(np.arange(len(counts)), appear)
    lists = np.pad(items, (0, (-len(items)) % 10), constant_values=-1).reshape(-1, 10)
    fit = fit_popularity_exponent(lists, counts)
    assert fit.exponent == pytest.approx(gamma, abs=1e-12) and fit.n_points == 15 and fit.se < 1e-10
    # and Poisson noise around it: within 4 standard errors
    rng = np.random.default_rng(8)
    noisy = rng.poisson(counts.astype(float) ** gamma)
    items = np.repeat(np.arange(len(counts)), noisy)
    lists = np.pad(items, (0, (-len(items)) % 10), constant_values=-1).reshape(-1, 10)
    fit = fit_popularity_exponent(lists, counts)
    assert abs(fit.exponent - gamma) < 4 * fit.se
    # Yang's propensity: p_i proportional to n*^((gamma + 1) / 2), the most popular item at 1
    p = PopularityPowerLaw().item_propensities(np.array([0, 1, 4, 16]), 1.0)
    np.testing.assert_allclose(p, [np.nan, 1 / 16, 4 / 16, 1.0])


def test_resampling_draws_successively_proportional_to_the_weights():
    # one pair drawn from three: P(j) = w_j / sum w (the first step of successive sampling); weight 0 never drawn
    lists = np.array([[0, 1, 2, 3]])
    test = sp.csr_array(np.array([[1, 1, 1, 1]], dtype=np.int8))
    ranked = rank_test(lists, test)
    w = np.array([1.0, 2.0, 5.0, 0.0])
    rng = np.random.default_rng(4)
    n = 20_000
    hits = np.zeros(4)
    for _ in range(n):
        hits += resample_test(ranked, w, 0.25, rng).test.toarray()[0]
    expected = n * w / w.sum()
    chi2 = float((((hits - expected) ** 2)[:3] / expected[:3]).sum())
    assert hits[3] == 0 and chi2 < 13.8  # chi-square, 2 degrees of freedom: P(> 13.8) = 0.001


def test_ips_and_snips_refuse_bad_propensities():
    lists, test, _ = _random_case(5)
    ranked = rank_test(lists, test, n_relevant=np.full(40, 10.0))
    for bad in (np.zeros(test.nnz), np.full(test.nnz, 1.5), np.ones(3)):
        for est in (IPS(), SNIPS()):
            with pytest.raises(ValueError, match="propensity"):
                est.estimate(ranked, Recall(), bad)


def test_weighted_sampled_ranks_with_equal_weights_are_the_unweighted_estimators():
    scheme = SamplingScheme(n_items=60, n=10)
    rng = np.random.default_rng(6)
    R = rng.integers(1, 61, 400)
    r = scheme.sample(R, rng=7)
    w = WeightedSampledRanks(r, np.full(len(r), 2.5), scheme)
    corr = least_squares(rank_recall(5), scheme)
    assert w.correction_mean(corr) == pytest.approx(float(corr.values[r - 1].mean()), rel=1e-12)
    assert w.n_eff == pytest.approx(len(r))
    np.testing.assert_allclose(w.rank_distribution().probabilities, mle(r, scheme).probabilities, atol=1e-9)


def test_weighted_sampled_ranks_with_inverse_propensities_are_consistent_for_the_relevant_pairs():
    # relevant pairs with global ranks R; low-ranked (good) pairs observed more often (p decreasing in R).
    # The SNIPS-weighted MLE targets the mean over *relevant* pairs of recall@5, not over the observed ones:
    # within 4 standard errors (Poisson bootstrap of the units, fixed seeds), the unweighted MLE far outside.
    scheme = SamplingScheme(n_items=60, n=10)
    rng = np.random.default_rng(9)
    R = rng.integers(1, 61, 12_000)
    p = 0.9 - 0.8 * (R - 1) / 59
    seen = rng.random(len(R)) < p
    r = scheme.sample(R[seen], rng=10)
    truth = float((R <= 5).mean())
    w = 1.0 / p[seen]
    est = WeightedSampledRanks(r, w, scheme).mle(rank_recall(5))
    boot = np.random.default_rng(11)
    reps = [WeightedSampledRanks(r, boot.poisson(1.0, len(r)) * w, scheme).mle(rank_recall(5)) for _ in range(60)]
    se = float(np.std(reps, ddof=1))
    assert abs(est - truth) < 4 * se
    plain = WeightedSampledRanks(r, np.ones(len(r)), scheme).mle(rank_recall(5))
    assert plain - truth > 8 * se


def test_the_dr_fit_is_kept_per_imputation_model_and_changes_nothing():
    # the training-dependent parts (the fitted imputation, its candidate sums) are computed once per model on a
    # RankedTest; estimates equal those on a fresh RankedTest, and an unequal model gets its own fit
    from simrec.debias import DR, SNDR, TrainPopularity

    rng = np.random.default_rng(3)
    train = sp.csr_array((rng.random((40, 30)) < 0.2).astype(np.int8))
    test = sp.csr_array(((rng.random((40, 30)) < 0.15) & (train.toarray() == 0)).astype(np.int8))
    lists = np.argsort(rng.random((40, 30)), axis=1)[:, :8]
    n_rel = np.diff(test.indptr) * 2.0
    ranked = rank_test(lists, test, train=train, n_relevant=n_rel)
    p = rng.uniform(0.2, 1.0, test.nnz)
    first = DR(TrainPopularity()).estimate(ranked, Recall(), p).value
    fit = ranked.imputed(TrainPopularity())
    assert ranked.imputed(TrainPopularity()) is fit  # equal model: the kept fit
    assert ranked.imputed(TrainPopularity(scale=2.0))[1][0] != fit[1][0] or not fit[1][0]
    fresh = rank_test(lists, test, train=train, n_relevant=n_rel)
    assert DR(TrainPopularity()).estimate(ranked, Recall(), p).value == first
    assert DR(TrainPopularity()).estimate(fresh, Recall(), p).value == first
    assert (
        SNDR(TrainPopularity()).estimate(ranked, Recall(), p).value
        == SNDR(TrainPopularity()).estimate(fresh, Recall(), p).value
    )


def test_per_user_sums_equal_bincount_with_empty_first_middle_and_last_rows():
    from simrec.debias.estimators import _per_user

    rng = np.random.default_rng(5)
    dense = (rng.random((9, 7)) < 0.4).astype(np.int8)
    dense[[0, 4, 8]] = 0  # empty rows where reduceat's segments need care
    test = sp.csr_array(dense)
    ranked = rank_test(np.argsort(rng.random((9, 7)), axis=1)[:, :3], test)
    values = rng.random(test.nnz)
    want = np.bincount(ranked.rows, weights=values, minlength=9)
    np.testing.assert_allclose(_per_user(ranked, values), want, rtol=1e-15, atol=1e-15)
    assert (_per_user(ranked, values)[[0, 4, 8]] == 0).all()


def test_subset_and_resampling_equal_the_boolean_mask_forms():
    # subset gathers the kept pairs by index (and reuses known rows), resample_test skips its gathers through
    # the positive pairs when every weight is positive (issue 25's speed-up): both equal, to the bit, the
    # boolean-mask forms they replaced
    lists, test, rng = _random_case(7)
    ranked = rank_test(lists, test, labels=rng.random(test.nnz))
    keep = rng.random(test.nnz) < 0.4
    for rows_known in (False, True):
        if rows_known:
            ranked.rows  # noqa: B018 (computes the cached rows)
        sub = ranked.subset(keep)
        assert np.array_equal(
            sub.test.indptr, np.concatenate(([0], np.cumsum(np.bincount(ranked.rows[keep], minlength=40))))
        )
        assert np.array_equal(sub.test.indices, test.indices[keep])
        assert np.array_equal(sub.position, ranked.position[keep])
        assert np.array_equal(sub.labels, ranked.labels[keep])
        assert np.array_equal(sub.rows, ranked.rows[keep])
    w = rng.uniform(0.1, 2.0, test.nnz)
    k = int(0.25 * test.nnz)  # resample_test's draw size at fraction 0.25
    keys = np.random.default_rng(3).standard_exponential(test.nnz) / w[np.flatnonzero(w > 0)]
    old = np.zeros(test.nnz, dtype=bool)
    old[np.flatnonzero(w > 0)[np.argpartition(keys, k - 1)[:k]]] = True
    drawn = resample_test(ranked, w, 0.25, np.random.default_rng(3))
    assert np.array_equal(drawn.position, ranked.position[old])
    assert np.array_equal(drawn.test.indices, test.indices[old])

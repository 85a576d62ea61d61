"""Exact expectations over every observation outcome of tiny worlds (issue 25).

Each world: a few users x items, each user's relevant items, a list or a full
ranking per user, and an independent inclusion probability per pair. Every
outcome (which pairs are observed) is enumerated with its probability, so an
expectation is a finite sum and "unbiased" is checked to rounding, not to a
Monte Carlo tolerance. Reference values: the metric on the true relevance set
(the naive estimator with every relevant pair observed, itself checked
against simrec.metrics in test_estimators.py) and hand algebra in the
comments.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from simrec.debias import (
    DCG,
    DR,
    IPS,
    NDCG,
    SNDR,
    SNIPS,
    AUCGain,
    ConstantImputation,
    DenseImputation,
    Hits,
    MeanDCG,
    Naive,
    Precision,
    Recall,
    RecallTruncated,
    rank_test,
)
from simrec.metrics import UndefinedMetricWarning

N_USERS, N_ITEMS = 3, 6
# relevant items of each user (the truth minus training), and each user's top-4 list
RELEVANT = [[0, 2, 5], [1, 3], [0, 1, 4]]
LISTS = np.array([[2, 1, 0, 3], [4, 3, 0, -1], [1, 0, 5, 2]])
FULL = np.array([[2, 1, 0, 3, 5, 4], [4, 3, 0, 1, 2, 5], [1, 0, 5, 2, 3, 4]])

LIST_METRICS = [
    Recall(),
    Recall(2),
    RecallTruncated(2),
    Precision(3),
    Hits(),
    DCG(3),
    NDCG(),
    NDCG(2),
    NDCG(3, discount="lenskit07"),
    MeanDCG(),
]


def _matrix(pairs: list[list[int]]) -> sp.csr_array:
    m = np.zeros((N_USERS, N_ITEMS), dtype=np.int8)
    for u, items in enumerate(pairs):
        m[u, items] = 1
    return sp.csr_array(m)


def _relevant_pairs() -> list[tuple[int, int]]:
    return [(u, i) for u, items in enumerate(RELEVANT) for i in items]


def _outcomes(probs: dict[tuple[int, int], float]):
    """Every subset of the pairs, with its probability under independent inclusion."""
    pairs = list(probs)
    for keep in itertools.product((False, True), repeat=len(pairs)):
        prob = 1.0
        for pair, k in zip(pairs, keep):
            prob *= probs[pair] if k else 1.0 - probs[pair]
        yield [pair for pair, k in zip(pairs, keep) if k], prob


def _test_matrix(observed: list[tuple[int, int]]) -> sp.csr_array:
    rows = [[i for (u, i) in observed if u == v] for v in range(N_USERS)]
    return _matrix(rows)


def _propensity_of(test: sp.csr_array, probs: dict[tuple[int, int], float]) -> np.ndarray:
    t = sp.csr_array(test)
    t.sort_indices()
    rows = np.repeat(np.arange(N_USERS), np.diff(t.indptr))
    return np.array([probs[(int(u), int(i))] for u, i in zip(rows, t.indices)])


def _true_values(lists: np.ndarray, metric) -> np.ndarray:
    """The metric on the true relevance sets: every relevant pair observed, propensity 1."""
    ranked = rank_test(lists, _matrix(RELEVANT))
    return Naive().estimate(ranked, metric).per_user


PROBS = {pair: p for pair, p in zip(_relevant_pairs(), [0.9, 0.3, 0.55, 0.2, 0.7, 0.45, 0.65, 0.35])}
N_REL = np.array([len(r) for r in RELEVANT], dtype=float)


def _expectation(estimator, lists, metric, probs, *, n_relevant=N_REL, labels=None, condition_nonempty=False):
    """E[per-user estimate] over every outcome (users with an undefined value in an outcome: conditional mean)."""
    total = np.zeros(N_USERS)
    mass = np.zeros(N_USERS)
    for observed, prob in _outcomes(probs):
        test = _test_matrix(observed)
        ranked = rank_test(lists, test, n_relevant=n_relevant)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            values = estimator.estimate(ranked, metric, _propensity_of(test, probs)).per_user
        ok = ~np.isnan(values)
        total[ok] += prob * values[ok]
        mass[ok] += prob
    return total / mass if condition_nonempty else total


@pytest.mark.parametrize("metric", LIST_METRICS, ids=lambda m: m.label)
def test_ips_with_exact_propensities_is_unbiased(metric):
    # E[sum_{S_u} c/p] = sum_{Rel_u} c: every user's expectation is its true value, users with S_u empty counting 0
    expected = _expectation(IPS(), LISTS, metric, PROBS)
    np.testing.assert_allclose(expected, _true_values(LISTS, metric), rtol=0, atol=1e-13)


def test_ips_unbiased_for_the_per_item_auc_of_full_rankings():
    expected = _expectation(IPS(), FULL, AUCGain(), PROBS)
    truth = _true_values(FULL, AUCGain())
    np.testing.assert_allclose(expected, truth, rtol=0, atol=1e-13)
    # by hand, user 0: items 2, 0, 5 at positions 1, 3, 5 of 6 -> mean of 1, 1 - 2/6, 1 - 4/6 = 2/3
    assert truth[0] == pytest.approx(2 / 3, abs=1e-15)


def test_naive_and_snips_are_biased_under_varying_propensities():
    # the same world: the naive estimate and SNIPS are off (this is what IPS corrects), so the checks above can fail
    truth = _true_values(LISTS, Recall(2))
    naive = _expectation(Naive(), LISTS, Recall(2), PROBS, condition_nonempty=True)
    snips = _expectation(SNIPS(), LISTS, Recall(2), PROBS, condition_nonempty=True)
    assert np.abs(naive - truth).max() > 0.05
    assert np.abs(snips - truth).max() > 0.02


@pytest.mark.parametrize("metric", [Recall(), Recall(2), MeanDCG()], ids=lambda m: m.label)
def test_snips_with_propensities_constant_within_users_is_exactly_unbiased_given_a_test_pair(metric):
    # p constant within a user: SNIPS is the naive estimate, and the observed pairs are a uniform subset of the
    # relevant ones, so for a mean over the relevant items E[. | S_u non-empty] is the truth
    probs = {(u, i): [0.3, 0.6, 0.45][u] for (u, i) in _relevant_pairs()}
    snips = _expectation(SNIPS(), LISTS, metric, probs, condition_nonempty=True)
    np.testing.assert_allclose(snips, _true_values(LISTS, metric), rtol=0, atol=1e-13)
    naive = _expectation(Naive(), LISTS, metric, probs, condition_nonempty=True)
    np.testing.assert_allclose(naive, snips, rtol=0, atol=1e-15)


def test_snips_is_scale_invariant_and_equals_naive_under_constant_propensities():
    test = _test_matrix([(0, 0), (0, 5), (1, 3), (2, 1), (2, 4)])
    ranked = rank_test(LISTS, test, n_relevant=N_REL)
    p = np.array([0.2, 0.7, 0.4, 0.9, 0.5])
    for metric in (Recall(2), Recall(), MeanDCG()):  # normalisers linear in n
        a = SNIPS().estimate(ranked, metric, p).per_user
        b = SNIPS().estimate(ranked, metric, 0.5 * p).per_user
        np.testing.assert_allclose(a, b, rtol=1e-14)
        const = SNIPS().estimate(ranked, metric, np.full(5, 0.37)).per_user
        np.testing.assert_allclose(const, Naive().estimate(ranked, metric).per_user, rtol=1e-14)
    # a capped normaliser (min(n, K)) is not: the numerator scales with 1/p, the capped denominator does not
    for metric in (RecallTruncated(2), NDCG(3)):
        a = SNIPS().estimate(ranked, metric, p).per_user
        b = SNIPS().estimate(ranked, metric, 0.5 * p).per_user
        assert np.abs(a - b).max() > 0.1


def test_snips_equals_ips_when_the_estimated_size_is_exact():
    # every relevant pair observed with p = 1: n_hat = n, and IPS = SNIPS = naive = the truth
    ranked = rank_test(LISTS, _matrix(RELEVANT), n_relevant=N_REL)
    for metric in LIST_METRICS:
        ips = IPS().estimate(ranked, metric, np.ones(8)).per_user
        np.testing.assert_allclose(SNIPS().estimate(ranked, metric, np.ones(8)).per_user, ips, rtol=1e-14)
        np.testing.assert_allclose(ips, _true_values(LISTS, metric), rtol=1e-14)


def test_ips_needs_the_relevance_size_for_normalised_metrics():
    ranked = rank_test(LISTS, _matrix(RELEVANT))
    with pytest.raises(ValueError, match="n_relevant"):
        IPS().estimate(ranked, Recall(), np.ones(8))
    # precision, hits and DCG need nothing unknown
    assert IPS().estimate(ranked, Precision(3), np.ones(8)).n_users == 3


# --- doubly robust: labelled observation (Saito's setting) --------------------------------------------------
# every (user, candidate) pair is observed independently with probability Q; an observed pair reveals its label
LABELS = np.zeros((N_USERS, N_ITEMS))
for _u, _items in enumerate(RELEVANT):
    LABELS[_u, _items] = 1.0
LABELS[1, 4] = 0.5  # a graded label
Q = np.array([[0.9, 0.3, 0.55, 0.2, 0.7, 0.45], [0.65, 0.35, 0.5, 0.8, 0.25, 0.6], [0.4, 0.75, 0.3, 0.5, 0.85, 0.2]])
Q_PAIRS = {(u, i): float(Q[u, i]) for u in range(N_USERS) for i in range(N_ITEMS)}


def _labelled_expectation(estimator, metric, q_true, q_used, n_relevant):
    """E over all 2^18 outcomes would be slow: users are independent, so enumerate each user's 2^6 outcomes."""
    out = np.zeros(N_USERS)
    for u in range(N_USERS):
        probs = {(u, i): float(q_true[u, i]) for i in range(N_ITEMS)}
        for observed, prob in _outcomes(probs):
            test = _test_matrix(observed)
            t = sp.csr_array(test)
            rows = np.repeat(np.arange(N_USERS), np.diff(t.indptr))
            labels = LABELS[rows, t.indices]
            used = q_used[rows, t.indices]
            ranked = rank_test(FULL, test, labels=labels, n_relevant=n_relevant)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                out[u] += prob * estimator.estimate(ranked, metric, used).per_user[u]
    return out


def _labelled_truth(metric) -> np.ndarray:
    # all pairs observed with p = 1 and labels revealed: the naive estimate is the truth
    ranked = rank_test(FULL, sp.csr_array(np.ones((N_USERS, N_ITEMS))), labels=LABELS.ravel())
    return Naive().estimate(ranked, metric).per_user


N_LABEL = LABELS.sum(axis=1)
WRONG_IMPUTATION = DenseImputation(np.array([[0.1, 0.9, 0.2, 0.6, 0.3, 0.0]] * 3))
RIGHT_IMPUTATION = DenseImputation(LABELS)
WRONG_Q = np.clip(Q[::-1, ::-1] * 0.8 + 0.1, 0.05, 1)


@pytest.mark.parametrize("metric", [Recall(3), NDCG(3), DCG(2), MeanDCG(), AUCGain()], ids=lambda m: m.label)
def test_dr_unbiased_when_the_propensities_are_right(metric):
    got = _labelled_expectation(DR(WRONG_IMPUTATION), metric, Q, Q, N_LABEL)
    np.testing.assert_allclose(got, _labelled_truth(metric), rtol=0, atol=1e-13)


@pytest.mark.parametrize("metric", [Recall(3), NDCG(3), DCG(2), MeanDCG(), AUCGain()], ids=lambda m: m.label)
def test_dr_unbiased_when_the_imputation_is_right(metric):
    got = _labelled_expectation(DR(RIGHT_IMPUTATION), metric, Q, WRONG_Q, N_LABEL)
    np.testing.assert_allclose(got, _labelled_truth(metric), rtol=0, atol=1e-13)
    # and the self-normalised DR too: its estimate of n_u is then exact in every outcome
    got = _labelled_expectation(SNDR(RIGHT_IMPUTATION), metric, Q, WRONG_Q, N_LABEL)
    np.testing.assert_allclose(got, _labelled_truth(metric), rtol=0, atol=1e-13)


def test_dr_biased_when_both_are_wrong():
    got = _labelled_expectation(DR(WRONG_IMPUTATION), Recall(3), Q, WRONG_Q, N_LABEL)
    assert np.abs(got - _labelled_truth(Recall(3))).max() > 0.05


def test_dr_with_zero_imputation_is_ips_and_sndr_is_snips():
    test = _test_matrix([(0, 0), (0, 3), (1, 1), (1, 4), (2, 0), (2, 5)])
    labels = np.array([1.0, 0.0, 1.0, 0.5, 1.0, 0.0])
    p = np.array([0.9, 0.2, 0.35, 0.25, 0.4, 0.2])
    ranked = rank_test(FULL, test, labels=labels, n_relevant=N_LABEL)
    for metric in (Recall(3), NDCG(3), MeanDCG(), AUCGain(), Precision(2)):
        dr = DR(ConstantImputation(0.0)).estimate(ranked, metric, p)
        np.testing.assert_allclose(dr.per_user, IPS().estimate(ranked, metric, p).per_user, rtol=1e-14)
        sndr = SNDR(ConstantImputation(0.0)).estimate(ranked, metric, p)
        np.testing.assert_allclose(sndr.per_user, SNIPS().estimate(ranked, metric, p).per_user, rtol=1e-14)


def test_dr_in_implicit_feedback_biased_by_the_imputation_of_non_relevant_items():
    # implicit feedback: only relevant pairs can be observed (label 1). With the right propensities the DR
    # expectation is the truth plus sum over the non-relevant candidates of c * y_hat / g (module docstring)
    imp = DenseImputation(np.full((N_USERS, N_ITEMS), 0.2))
    metric = Recall(3)
    got = _expectation(DR(imp), FULL, metric, PROBS)
    truth = _true_values(FULL, metric)
    pos = np.argsort(FULL, axis=1) + 1  # 1-based position of every item
    extra = np.array(
        [sum(0.2 * (pos[u, i] <= 3) for i in range(N_ITEMS) if i not in RELEVANT[u]) / N_REL[u] for u in range(3)]
    )
    np.testing.assert_allclose(got, truth + extra, rtol=0, atol=1e-13)
    assert extra.min() > 0

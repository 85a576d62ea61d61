"""Krichene & Rendle's toy example (KDD 2020, §3.2 Table 1 and §4.2 Table 2).

Three recommenders, five held-out items each, among N = 10,000 items; sampled
evaluation draws m = 99 irrelevant items (a sample set of n = 100).
Ranks from Table 1 of shared/seeds/krichene-rendle-kdd2020-sampled-metrics.txt:
A: 100 x 5; B: 40, 40, 8437, 9266, 4482; C: 212, 2, 743, 5342, 1548.
AP and NDCG are the untruncated metrics (their eqs. 12-13), Recall is @10.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simrec.sampling import SamplingScheme, auc, average_precision, naive, ndcg, recall

N, N_SAMPLE = 10_000, 100
RANKS = {
    "A": [100, 100, 100, 100, 100],
    "B": [40, 40, 8437, 9266, 4482],
    "C": [212, 2, 743, 5342, 1548],
}
METRICS = {"AUC": auc(), "AP": average_precision(), "NDCG": ndcg(), "Recall@10": recall(10)}

# Table 1 (exact metrics), rounded to 3 decimals in the paper.
TABLE_1 = {
    "A": {"AUC": 0.990, "AP": 0.010, "NDCG": 0.150, "Recall@10": 0.000},
    "B": {"AUC": 0.555, "AP": 0.010, "NDCG": 0.122, "Recall@10": 0.000},
    "C": {"AUC": 0.843, "AP": 0.101, "NDCG": 0.208, "Recall@10": 0.200},
}
# Table 2 (sampled metrics): mean and standard deviation over 1,000 repetitions.
TABLE_2 = {
    "A": {"AUC": (0.990, 0.004), "AP": (0.630, 0.129), "NDCG": (0.724, 0.097), "Recall@10": (1.000, 0.000)},
    "B": {"AUC": (0.555, 0.014), "AP": (0.336, 0.073), "NDCG": (0.444, 0.054), "Recall@10": (0.400, 0.000)},
    "C": {"AUC": (0.843, 0.014), "AP": (0.325, 0.050), "NDCG": (0.460, 0.039), "Recall@10": (0.567, 0.092)},
}
REPEATS_PAPER = 1_000


def _exact(rec, name):
    return float(METRICS[name](np.array(RANKS[rec]), N).mean())


@pytest.fixture(scope="module")
def scheme():
    return SamplingScheme(N, N_SAMPLE, replace=True)


def _expected_sampled(scheme, rec, name):
    return scheme.expected(naive(METRICS[name], scheme).values, RANKS[rec])


@pytest.mark.parametrize("rec", "ABC")
@pytest.mark.parametrize("name", list(METRICS))
def test_table_1_exact_metrics(rec, name):
    assert round(_exact(rec, name), 3) == pytest.approx(TABLE_1[rec][name], abs=1e-9)


@pytest.mark.parametrize("rec", "ABC")
@pytest.mark.parametrize("name", list(METRICS))
def test_table_2_is_within_the_papers_monte_carlo_error(scheme, rec, name):
    """Our exact expectation vs the paper's 1,000-repeat average: within 3 of their standard
    errors (sd / sqrt(1000)) plus the 0.0005 rounding of the printed value."""
    mean, sd = TABLE_2[rec][name]
    got = _expected_sampled(scheme, rec, name)
    assert abs(got - mean) <= 3 * sd / math.sqrt(REPEATS_PAPER) + 5e-4 + 1e-12


@pytest.mark.parametrize("replace", [True, False])
def test_exact_expectation_agrees_with_monte_carlo(replace):
    s = SamplingScheme(N, N_SAMPLE, replace=replace)
    repeats = 4_000
    rng = np.random.default_rng(2020)
    for rec, ranks in RANKS.items():
        r = s.sample(np.tile(ranks, (repeats, 1)), rng=rng)  # (repeats, 5)
        p = s.matrix[np.array(ranks) - 1]  # P(r | R_u), (5, n)
        for name, m in METRICS.items():
            f = naive(m, s).values
            per_repeat = naive(m, s).mean(r)  # sampled metric of each repetition
            # theoretical SE of the average of `repeats` repetitions: Var = Σ_u Var(F(r_u)) / 5²
            var_u = p @ f**2 - (p @ f) ** 2
            se = math.sqrt(var_u.sum() / len(ranks) ** 2 / repeats)
            exact = _expected_sampled(s, rec, name)
            assert abs(per_repeat.mean() - exact) <= 4 * se + 1e-12, (rec, name)


def _order(values):
    return sorted(values, key=values.get, reverse=True)


def test_sampling_reverses_the_order_except_for_auc(scheme):
    exact = {name: {rec: _exact(rec, name) for rec in RANKS} for name in METRICS}
    sampled = {name: {rec: _expected_sampled(scheme, rec, name) for rec in RANKS} for name in METRICS}
    # exact: C best on the top-heavy metrics (Table 1, bold); sampled: A best (Table 2, bold)
    for name in ("AP", "NDCG", "Recall@10"):
        assert _order(exact[name])[0] == "C"
        assert _order(sampled[name])[0] == "A"
    assert _order(exact["AP"]) == ["C", "B", "A"]  # 0.101 > 0.0101 > 0.0100
    assert _order(sampled["AP"]) == ["A", "B", "C"]  # 0.630 > 0.336 > 0.325: fully reversed
    assert _order(exact["NDCG"]) == ["C", "A", "B"]
    assert _order(sampled["NDCG"]) == ["A", "C", "B"]
    # AUC is consistent: sampled AUC is unbiased (K&R §4.4.1)
    assert _order(exact["AUC"]) == _order(sampled["AUC"]) == ["A", "C", "B"]
    for rec in RANKS:
        assert sampled["AUC"][rec] == pytest.approx(exact["AUC"][rec], rel=1e-12)

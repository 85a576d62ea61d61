"""The [significance] section's schema: test names agree with the library, tests built with their resamples."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from simrec.config.run import METRIC_NAMES
from simrec.config.significance import DEFAULT_PROTOCOLS, IPS_METRICS, PROTOCOLS, TEST_NAMES, SignificanceSpec
from simrec.debias import linear_metric
from simrec.significance import PAIRED_TESTS


def test_test_names_are_the_librarys():
    assert TEST_NAMES == tuple(t.name for t in PAIRED_TESTS)
    assert PROTOCOLS == ("full", "users", "sampled_naive", "sampled_corrected", "full_ips")
    # full_ips is asked for by name: a scenario without `protocols` keeps its table
    assert tuple(SignificanceSpec().protocols) == DEFAULT_PROTOCOLS == PROTOCOLS[:4]


def test_ips_metrics_are_the_scenario_metrics_the_mnar_estimators_take():
    linear = []
    for name in METRIC_NAMES:
        try:
            linear_metric(name)
        except ValueError:
            continue
        linear.append(name)
    assert tuple(linear) == IPS_METRICS


def test_paired_tests_carry_the_resamples_and_pairs_default_to_every_pair():
    spec = SignificanceSpec(tests=["permutation", "paired_t"], resamples=300)
    tests = spec.paired_tests()
    assert [t.name for t in tests] == ["permutation", "paired_t"] and tests[0].n_resamples == 300
    assert spec.chosen_pairs(["A", "B", "C"]) == [("A", "B"), ("A", "C"), ("B", "C")]


@pytest.mark.parametrize(
    "bad",
    [{"tests": ["paired_t", "paired_t"]}, {"alpha": 1.0}, {"gamma": 2.0}, {"users": 3}, {"pairs": [["A"]]}],
)
def test_bad_values_refused(bad):
    with pytest.raises(ValidationError):
        SignificanceSpec(**bad)

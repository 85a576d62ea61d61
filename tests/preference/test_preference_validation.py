"""Every bad parameter of a preference model raises, naming the parameter; the memory guard."""

from __future__ import annotations

import re

import pytest

from simrec._validation import SizeLimitError
from simrec.preference import HPF, IBP, LDA, ClusteredFactor, LatentFactor, Uniform

GOOD = {
    Uniform: dict(n_users=10, n_items=5, lam=2.0),
    IBP: dict(n_users=10, alpha=2.0, c=1.0, sigma=0.5),
    LDA: dict(n_users=10, n_items=5, n_topics=2, lam=2.0, a=0.5, b=0.5),
    HPF: dict(n_users=10, n_items=5, n_factors=2, a=0.3, a_prime=0.3, b_prime=1.0, c=0.3, c_prime=0.3, d_prime=1.0),
    LatentFactor: dict(n_users=10, n_items=5, n_factors=2, signal=1.0, pop_exponent=1.0, lam=2.0, activity_sd=1.0),
    ClusteredFactor: dict(
        n_users=10, n_items=5, n_factors=2, n_clusters=3, signal=1.0, cluster_signal=1.0, pop_exponent=1.0, lam=2.0
    ),
}

BAD = [
    (Uniform, "n_users", 0, ValueError),
    (Uniform, "n_users", 2.5, TypeError),
    (Uniform, "n_items", 0, ValueError),
    (Uniform, "lam", 0.0, ValueError),
    (Uniform, "lam", -1.0, ValueError),
    (Uniform, "lam", float("nan"), ValueError),
    (IBP, "n_users", 0, ValueError),
    (IBP, "alpha", 0.0, ValueError),
    (IBP, "sigma", 1.0, ValueError),
    (IBP, "sigma", -0.1, ValueError),
    (IBP, "c", -0.5, ValueError),  # c must exceed -sigma = -0.5
    (IBP, "c", -2.0, ValueError),
    (IBP, "c", "1", TypeError),
    (LDA, "n_users", 0, ValueError),
    (LDA, "n_items", 0, ValueError),
    (LDA, "n_topics", 0, ValueError),
    (LDA, "lam", 0.0, ValueError),
    (LDA, "a", 0.0, ValueError),
    (LDA, "b", -0.1, ValueError),
    (HPF, "n_users", 0, ValueError),
    (HPF, "n_items", 0, ValueError),
    (HPF, "n_factors", 0, ValueError),
    (HPF, "n_factors", 2.0, TypeError),
    (HPF, "a", 0.0, ValueError),
    (HPF, "a_prime", -1.0, ValueError),
    (HPF, "b_prime", 0.0, ValueError),
    (HPF, "c", float("inf"), ValueError),
    (HPF, "c_prime", 0.0, ValueError),
    (HPF, "d_prime", "1", TypeError),
    (LatentFactor, "n_users", 0, ValueError),
    (LatentFactor, "n_items", 0, ValueError),
    (LatentFactor, "n_factors", 0, ValueError),
    (LatentFactor, "signal", -0.1, ValueError),
    (LatentFactor, "pop_exponent", -1.0, ValueError),
    (LatentFactor, "lam", 0.0, ValueError),
    (LatentFactor, "activity_sd", -0.5, ValueError),
    (LatentFactor, "signal", float("nan"), ValueError),
    (ClusteredFactor, "n_clusters", 0, ValueError),
    (ClusteredFactor, "n_clusters", 2.5, TypeError),
    (ClusteredFactor, "cluster_signal", -0.1, ValueError),
    (ClusteredFactor, "signal", -0.1, ValueError),
    (ClusteredFactor, "lam", 0.0, ValueError),
]


@pytest.mark.parametrize("cls,name,value,exc", BAD, ids=[f"{c.__name__}-{n}-{v}" for c, n, v, _ in BAD])
def test_bad_parameter_raises_naming_it(cls, name, value, exc):
    kw = dict(GOOD[cls], **{name: value})
    with pytest.raises(exc, match=f"`{name}`"):
        cls(**kw)


def test_c_bound_depends_on_sigma():
    IBP(10, 1.0, -0.4, 0.5)  # fine: c > -sigma
    with pytest.raises(ValueError, match=r"`c` must be in \(-0.2, inf\); got -0.2"):
        IBP(10, 1.0, -0.2, 0.2)


@pytest.mark.parametrize(
    "model,expected",
    [
        (Uniform(1000, 500, 100.0), None),
        (IBP(1000, 100.0, 1.0, 0.5), 1e5),
        (LDA(1000, 500, 10, 100.0, 0.5, 0.5), 1e5),
        (HPF(1000, 500, 10, 0.3, 0.3, 1.0, 0.3, 0.3, 1.0), None),
        (LatentFactor(1000, 500, 10, 1.75, 1.75, 100.0, 0.0), 1e5),
        (ClusteredFactor(1000, 500, 10, 20, 1.75, 1.75, 1.75, 100.0, 0.0), 1e5),
    ],
)
def test_size_limit_error_before_allocation(model, expected):
    est = model.expected_pairs()
    if expected is not None:
        assert est == expected
    with pytest.raises(SizeLimitError, match=re.escape(f"{est:.3g}")):
        model.generate(0, max_pairs=int(est) - 1)
    with pytest.raises(ValueError, match="`max_pairs`"):
        model.generate(0, max_pairs=-1)


def test_huge_model_refused_by_default_guard():
    with pytest.raises(SizeLimitError):
        IBP(10**7, 1000.0, 1.0, 0.5).generate(0)  # 1e10 expected pairs
    with pytest.raises(SizeLimitError):
        Uniform(10**6, 10**6, 1e4).generate(0)

"""The stress harness's repeat memo (issue 29): a memoised repeat equals the computed one, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from simrec.stress import RecommenderRanks, StressConfig, run_stress
from simrec.stress.memo import REPEAT_MEMO, RepeatMemo

N = 400


def _ranks(name: str, R: list[int], **kw) -> RecommenderRanks:
    R = np.asarray(R)
    return RecommenderRanks(name, R, np.full(R.size, N), np.arange(R.size), **kw)


#: Few users at top ranks: most repeats repeat a histogram (the README's ranks-file case, smaller).
FEW = _ranks("few", [2, 5, 12], popularity_shares=np.array([0.001, 0.006, 0.02]))
CONFIG = StressConfig(repeats=25, k_max=10, metrics=("recall", "ndcg", "average_precision", "auc"), adaptive_n_max=80)


def _fields(res) -> dict[str, object]:
    return {
        "estimates": res.estimates,
        "n_iter": res.n_iter,
        "converged": res.converged,
        "shr": res.shr,
        "fitted_a": res.fitted_a,
        "lower": res.lower,
        "upper": res.upper,
        "mean_sample_size": res.mean_sample_size,
        "mapping_values": res.mapping_values,
        "global_hr_at_f": res.global_hr_at_f,
    }


def _assert_identical(a, b) -> None:
    fa, fb = _fields(a), _fields(b)
    for key in fa:
        x, y = fa[key], fb[key]
        if isinstance(x, dict):
            assert x.keys() == y.keys(), key
            for k in x:
                np.testing.assert_array_equal(x[k], y[k], err_msg=f"{key}[{k}]", strict=True)
        elif x is None or y is None:
            assert x is None and y is None, key
        else:
            np.testing.assert_array_equal(x, y, err_msg=key, strict=True)


@pytest.mark.parametrize("scheme", ["binomial", "hypergeometric", "popularity", "adaptive"])
def test_memoised_repeats_equal_computed_ones(scheme):
    with REPEAT_MEMO.disabled():
        plain = run_stress(FEW, scheme, 20, CONFIG, rng=7)
    REPEAT_MEMO.clear()
    first = run_stress(FEW, scheme, 20, CONFIG, rng=7)  # fills the memo: repeats after the first of a histogram hit
    hits, misses = REPEAT_MEMO.hits, REPEAT_MEMO.misses
    assert misses < CONFIG.repeats and hits + misses == CONFIG.repeats  # histograms repeat: the memo served some
    again = run_stress(FEW, scheme, 20, CONFIG, rng=7)  # every repeat from the memo
    assert REPEAT_MEMO.hits == hits + CONFIG.repeats and REPEAT_MEMO.misses == misses
    _assert_identical(first, plain)
    _assert_identical(again, plain)


@pytest.mark.slow
def test_memo_is_shared_across_recommenders_and_keyed_by_everything_else():
    """Another recommender with the same histograms reuses them; another n, scheme or max_iter does not."""
    REPEAT_MEMO.clear()
    run_stress(FEW, "binomial", 20, CONFIG, rng=3)
    entries = len(REPEAT_MEMO)
    twin = _ranks("twin", [2, 5, 12])  # same ranks, other name: same histograms
    with REPEAT_MEMO.disabled():
        plain = run_stress(twin, "binomial", 20, CONFIG, rng=3)
    hits = REPEAT_MEMO.hits
    shared = run_stress(twin, "binomial", 20, CONFIG, rng=3)
    assert REPEAT_MEMO.hits == hits + CONFIG.repeats and len(REPEAT_MEMO) == entries
    _assert_identical(shared, plain)
    for scheme, n, config in [
        ("binomial", 21, CONFIG),
        ("hypergeometric", 20, CONFIG),
        ("binomial", 20, StressConfig(**{**CONFIG.__dict__, "max_iter": 50})),
    ]:
        with REPEAT_MEMO.disabled():
            plain = run_stress(FEW, scheme, n, config, rng=3)
        before = REPEAT_MEMO.misses
        got = run_stress(FEW, scheme, n, config, rng=3)
        assert REPEAT_MEMO.misses > before  # a namespace of its own
        _assert_identical(got, plain)


def test_bootstrap_repeats_are_not_memoised():
    """With intervals a repeat draws its replicates from the task's generator: every repeat is computed."""
    config = StressConfig(repeats=6, k_max=5, n_boot=20)
    with REPEAT_MEMO.disabled():
        plain = run_stress(FEW, "binomial", 20, config, rng=5)
    REPEAT_MEMO.clear()
    got = run_stress(FEW, "binomial", 20, config, rng=5)
    assert REPEAT_MEMO.hits == 0 and REPEAT_MEMO.misses == 0
    _assert_identical(got, plain)


def test_many_users_histograms_do_not_repeat_and_results_are_unchanged():
    R = np.random.default_rng(0).integers(1, N + 1, size=300)
    many = _ranks("many", R.tolist())
    config = StressConfig(repeats=4, k_max=10)
    with REPEAT_MEMO.disabled():
        plain = run_stress(many, "binomial", 50, config, rng=1)
    REPEAT_MEMO.clear()
    got = run_stress(many, "binomial", 50, config, rng=1)
    assert REPEAT_MEMO.misses == 4
    _assert_identical(got, plain)


def test_repeat_memo_values_are_read_only_and_bounded():
    memo = RepeatMemo(max_bytes=3500)  # an entry below: 800 bytes of array + bookkeeping (about 1,060 bytes)
    space = memo.namespace(("ctx", 1))
    assert memo.namespace(("ctx", 1)) == space and memo.namespace(("ctx", 2)) != space
    calls = []

    def compute(i: int):
        calls.append(i)
        return np.full(100, float(i)), i

    for i in range(5):
        value, tag = memo.get_or_compute(space, bytes([i]), lambda i=i: compute(i))
        assert tag == i and not value.flags.writeable
    assert len(memo) == 3 and calls == [0, 1, 2, 3, 4]  # the two least recently used were dropped
    memo.get_or_compute(space, bytes([4]), lambda: compute(99))  # a hit: not computed
    memo.get_or_compute(space, bytes([0]), lambda: compute(0))  # dropped before: computed again
    assert calls == [0, 1, 2, 3, 4, 0] and (memo.hits, memo.misses) == (1, 6)
    with memo.disabled():
        memo.get_or_compute(space, bytes([4]), lambda: compute(4))
    assert calls[-1] == 4 and (memo.hits, memo.misses) == (1, 6)
    memo.clear()
    assert len(memo) == 0 and memo.hits == memo.misses == 0


def test_priors_pooled_per_dataset_are_not_memoised():
    """With prior_per = "dataset" the estimators carry this task's pooled priors: computed, never memoised."""
    config = StressConfig(repeats=8, k_max=5, prior_per="dataset")
    with REPEAT_MEMO.disabled():
        plain = run_stress(FEW, "binomial", 20, config, rng=2)
    REPEAT_MEMO.clear()
    got = run_stress(FEW, "binomial", 20, config, rng=2)
    assert REPEAT_MEMO.hits == 0 and REPEAT_MEMO.misses == 0
    _assert_identical(got, plain)

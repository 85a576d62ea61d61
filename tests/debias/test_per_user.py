"""Per-user IPS values beside the per-user truth (simrec.debias.ips_per_user), for the significance phase.

Reference values: the harness's IPS row with the world's propensities (:func:`simrec.debias.debias_replicate`,
same seed, hence the same data, lists and propensity draws) is the mean of the per-user values, and its truth
the mean of the per-user truths; the truths are ``simrec run``'s per-user ``"true"`` values of the same replicate.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from simrec.debias import IPS, NDCG, DebiasDesign, Recall, debias_replicate, ips_per_user
from simrec.experiment import run_replicate
from tests.debias.test_harness import SCENARIO, _world


@pytest.mark.parametrize("index", [0, 1], ids=["preference-world", "popularity-world"])
def test_per_user_ips_averages_to_the_harness_row_and_its_truth_is_the_runs(tmp_path, index):
    world, evaluation = _world(SCENARIO, tmp_path, index)
    seed = np.random.SeedSequence(7)
    design = DebiasDesign((Recall(),), (IPS(),), ("world",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = debias_replicate(world, evaluation, design, seed).set_index("recommender")
        values = ips_per_user(world, evaluation, seed, {"recall": Recall(), "ndcg": NDCG()})
        rep = run_replicate(world, evaluation, seed, 0)
    for rec in ("Oracle", "Popular", "Random"):
        v = values[rec, "recall"]
        assert v.estimate.shape == v.truth.shape == (rep.users.size,)
        assert np.nanmean(v.estimate) == pytest.approx(rows.loc[rec, "value"], rel=1e-12)
        assert np.nanmean(v.truth) == pytest.approx(rows.loc[rec, "truth"], rel=1e-12)
        np.testing.assert_allclose(v.truth, rep.per_user[rec, "recall", "true"], rtol=1e-12)
        assert np.array_equal(np.isnan(v.estimate), np.isnan(v.truth))
    assert (values["Oracle", "ndcg"].truth[~np.isnan(values["Oracle", "ndcg"].truth)] > 0).all()


def test_unknown_kind_or_recommender_is_refused(tmp_path):
    world, evaluation = _world(SCENARIO, tmp_path, 0)
    with pytest.raises(ValueError, match="`propensity` must be one of .*; got 'nope'"):
        ips_per_user(world, evaluation, 1, {"recall": Recall()}, propensity="nope")
    with pytest.raises(ValueError, match=r"`recommenders` must be among .*; got \['Nobody'\]"):
        ips_per_user(world, evaluation, 1, {"recall": Recall()}, ["Nobody"])

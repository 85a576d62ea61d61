"""Tests of simrec.recommenders.item_cf: Krichene & Rendle's item-based CF (KDD 2020, §9, eqs. 27-30).

Reference values: the hand case below is computed by hand from eqs. 27-30
(the fractions are in the comments); the cross-checks compare with a dense
numpy transcription of the equations written here and with LensKit's
``ItemKNNScorer`` (implicit feedback, every neighbour kept).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from simrec.config.recommenders import recommender_problems
from simrec.interactions import Interactions
from simrec.recommenders import LensKitRecommender
from simrec.recommenders.import_path import param_problems
from simrec.recommenders.lenskit_adapter import UNSCORED

pytest.importorskip("lenskit")

from lenskit.data import ItemList, RecQuery  # noqa: E402
from lenskit.training import TrainingOptions  # noqa: E402

from simrec.recommenders import ItemCFScorer, item_cf_similarity  # noqa: E402
from simrec.recommenders.item_cf import ItemCFConfig  # noqa: E402

# Users' items: u0 {0, 1}, u1 {0, 1, 2}, u2 {1, 2}, u3 {0, 3}. Item users: 0 {0,1,3}, 1 {0,1,2}, 2 {1,2}, 3 {3}.
# Cosines: s01 = 2/3, s02 = 1/sqrt(6), s03 = 1/sqrt(3), s12 = 2/sqrt(6), s13 = s23 = 0; with q = 2:
# s01 = 4/9, s02 = 1/6, s03 = 1/3, s12 = 2/3, s_ii = 1.
HAND = Interactions.from_pairs(np.array([0, 0, 1, 1, 1, 2, 2, 3, 3]), np.array([0, 1, 0, 1, 2, 1, 2, 0, 3]), (4, 4))


def trained(train: Interactions, **config) -> ItemCFScorer:
    comp = ItemCFScorer(**config)
    comp.train(LensKitRecommender.to_dataset(train), TrainingOptions())
    return comp


def call(comp: ItemCFScorer, history, items) -> np.ndarray:
    """LensKit's per-query call (an ItemList stores scores as float32)."""
    q = RecQuery(history_items=ItemList(item_ids=np.asarray(history)))
    return np.asarray(comp(q, ItemList(item_ids=np.asarray(items))).scores(), dtype=np.float64)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # eq. 30, s_ii = 1: row 0 sums to 1 + 4/9 + 1/6 + 1/3 = 35/18, row 2 to 1/6 + 2/3 + 1 = 11/6, row 3 to 4/3
        ({"q": 2.0}, [(4 / 9) / (35 / 18), (2 / 3) / (11 / 6), 0.0]),
        # without s_ii: rows sum to 17/18, 5/6, 1/3
        ({"q": 2.0, "self_similarity": False}, [(4 / 9) / (17 / 18), (2 / 3) / (5 / 6), 0.0]),
        # no normalisation: the plain sums of s over the history {1}
        ({"q": 2.0, "self_similarity": False, "normalize": False}, [4 / 9, 2 / 3, 0.0]),
        # k' = 1: each row keeps its nearest item (row 0: item 1, row 2: item 1, row 3: item 0)
        ({"q": 2.0, "self_similarity": False, "k_prime": 1}, [1.0, 1.0, 0.0]),
        # k' = 1 with s_ii: every row keeps only itself, which the history never holds
        ({"q": 2.0, "k_prime": 1}, [0.0, 0.0, 0.0]),
        # k = 1: s_ij kept iff i is j's nearest (nearest of 0: 1, of 1: 2, of 2: 1, of 3: 0): row 0 = {3},
        # row 2 = {1}, row 3 empty (NaN: cannot score)
        ({"q": 2.0, "self_similarity": False, "k": 1}, [0.0, 1.0, math.nan]),
        # q = 1 (plain cosine), no s_ii: row 0 = 2/3 + 1/sqrt(6) + 1/sqrt(3), row 2 = 1/sqrt(6) + 2/sqrt(6)
        ({"self_similarity": False}, [(2 / 3) / (2 / 3 + 1 / math.sqrt(6) + 1 / math.sqrt(3)), 2 / 3, 0.0]),
        # transpose, no s_ii: L2 norms of rows 0-3 are sqrt(109)/18, sqrt(52)/9, sqrt(17)/6, 1/3; target i sums
        # column i of s'' = s / norm(row): column 0 = (0, 4/sqrt52, 1/sqrt17, 1), column 2 = (3/sqrt109, 6/sqrt52, 0, 0)
        (
            {"q": 2.0, "self_similarity": False, "transpose": True},
            [
                (4 / math.sqrt(52)) / (4 / math.sqrt(52) + 1 / math.sqrt(17) + 1),
                (6 / math.sqrt(52)) / (3 / math.sqrt(109) + 6 / math.sqrt(52)),
                0.0,
            ],
        ),
        # the row-norm reading (denominator=False, issue 27): eq. 29's L2 row norm kept, eq. 30's denominator
        # dropped. With s_ii: row 0 = (1, 4/9, 1/6, 1/3) has norm sqrt(433)/18, row 2 = (1/6, 2/3, 1, 0)
        # sqrt(53)/6; target i scores s_i1 / norm(row i)
        ({"q": 2.0, "denominator": False}, [8 / math.sqrt(433), 4 / math.sqrt(53), 0.0]),
        # without s_ii: norms sqrt(109)/18 and sqrt(17)/6
        ({"q": 2.0, "self_similarity": False, "denominator": False}, [8 / math.sqrt(109), 4 / math.sqrt(17), 0.0]),
        # K&R's Z in this reading: k on the history side (k = 2: s_ij kept iff i is among j's 2 nearest;
        # N_2(0) = {1, 3}, N_2(1) = {0, 2}, N_2(2) = {0, 1}, N_2(3) = {0}): row 0 keeps all of
        # (4/9, 1/6, 1/3), row 2 only s_21 = 2/3 (score 1), row 3 only s_30 = 1/3 (score 0). The printed
        # eq. 30 would give target 0 (4/9) / (17/18) = 8/17 instead of 8/sqrt(109)
        ({"q": 2.0, "self_similarity": False, "k": 2, "denominator": False}, [8 / math.sqrt(109), 1.0, 0.0]),
        # transposed, no denominator: the history item 1 votes with row 1 = (4/9, 0, 2/3, 0) / (sqrt(52)/9)
        (
            {"q": 2.0, "self_similarity": False, "transpose": True, "denominator": False},
            [4 / math.sqrt(52), 6 / math.sqrt(52), 0.0],
        ),
    ],
)
def test_hand_case(config, expected):
    comp = trained(HAND, **config)
    history = Interactions.from_pairs(np.array([0]), np.array([1]), (1, 4)).matrix
    np.testing.assert_allclose(comp.score_histories(history)[0, [0, 2, 3]], expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(call(comp, [1], [0, 2, 3]), expected, rtol=1e-7, atol=0)


def test_similarity_matrix_by_hand():
    s = item_cf_similarity(HAND.matrix, ItemCFConfig(q=2.0)).toarray()
    want = np.array([[1, 4 / 9, 1 / 6, 1 / 3], [4 / 9, 1, 2 / 3, 0], [1 / 6, 2 / 3, 1, 0], [1 / 3, 0, 0, 1]])
    np.testing.assert_allclose(s, want, rtol=1e-12, atol=0)


def test_untrained_item_and_empty_history_score_nan():
    train = Interactions.from_pairs(np.array([0, 0, 1]), np.array([0, 1, 1]), (2, 3))  # item 2: no user
    comp = trained(train, q=3.0)
    got = call(comp, [0], [1, 2])
    assert got[0] == pytest.approx(1 / 2**1.5 / (1 / 2**1.5 + 1)) and math.isnan(got[1])
    assert np.isnan(call(comp, [], [0, 1])).all()
    assert np.isnan(call(comp, [0], [99])).all()  # not a training item


# -- cross-checks -------------------------------------------------------------------------------------------


def random_train(seed: int, n_users: int = 120, n_items: int = 30) -> Interactions:
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, n_items + 1) ** 0.7
    seen = rng.random((n_users, n_items)) < np.clip(0.6 * pop, 0.03, 0.6)
    return Interactions.from_pairs(*np.nonzero(seen), (n_users, n_items))


def dense_reference(
    train: Interactions,
    q: float,
    k,
    k_prime,
    normalize: bool,
    self_similarity: bool,
    transpose: bool,
    denominator: bool = True,
) -> np.ndarray:
    """Eqs. 27-30 transcribed with dense arrays and one loop per row (the tie rule: smaller item first)."""
    x = train.matrix.toarray().astype(float)
    counts = x.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.nan_to_num((x.T @ x) / np.sqrt(np.outer(counts, counts))) ** q  # eq. 27
    if not self_similarity:
        np.fill_diagonal(s, 0.0)
    n = s.shape[0]

    def nearest(row, kk):
        order = sorted((j for j in range(n) if row[j] > 0), key=lambda j: (-row[j], j))
        return set(order[:kk])

    keep = np.ones_like(s, dtype=bool)
    for i in range(n):
        for j in range(n):
            if k_prime is not None and j not in nearest(s[i], k_prime):
                keep[i, j] = False
            if k is not None and i not in nearest(s[j], k):
                keep[i, j] = False
    s1 = np.where(keep, s, 0.0)  # eq. 28
    if transpose:
        rows = (s1 > 0).any(axis=1)
        s2 = s1 / np.where(rows, np.linalg.norm(s1, axis=1), 1.0)[:, None]
        empty = ~(s1 > 0).any(axis=0)
        if not normalize:
            scores = x @ s1
        elif denominator:
            scores = x @ s2 / np.where(empty, 1.0, s2.sum(axis=0))[None, :]
        else:
            scores = x @ s2
        scores[:, empty] = np.nan
        return scores
    empty = ~(s1 > 0).any(axis=1)
    if normalize:
        s2 = s1 / np.where(empty, 1.0, np.linalg.norm(s1, axis=1))[:, None]  # eq. 29
        scores = x @ s2.T / (np.where(empty, 1.0, s2.sum(axis=1))[None, :] if denominator else 1.0)  # eq. 30
    else:
        scores = x @ s1.T
    scores[:, empty] = np.nan
    return scores


@pytest.mark.parametrize(
    "config",
    [
        {"q": 3.0},
        {"q": 1.0, "k_prime": 4},
        {"q": 2.0, "k": 3, "self_similarity": False},
        {"q": 0.5, "k": 6, "k_prime": 5, "normalize": False},
        {"q": 3.0, "transpose": True},
        {"q": 1.0, "k_prime": 4, "transpose": True, "self_similarity": False},
        {"q": 2.0, "k": 3, "k_prime": 7, "transpose": True, "normalize": False},
        {"q": 3.0, "denominator": False},
        {"q": 1.0, "k": 4, "self_similarity": False, "denominator": False},
        {"q": 1.0, "k_prime": 4, "transpose": True, "denominator": False},
    ],
)
def test_matches_dense_transcription_and_batch_equals_per_user(config):
    train = random_train(1)
    full = {"k": None, "k_prime": None, "normalize": True, "self_similarity": True, "transpose": False, **config}
    want = dense_reference(train, **full)
    comp = trained(train, **config)
    batch = comp.score_histories(train.matrix)
    np.testing.assert_allclose(batch, want, rtol=1e-10, atol=1e-14)
    for u in (0, 5, 17):
        hist = train.matrix.indices[train.matrix.indptr[u] : train.matrix.indptr[u + 1]]
        np.testing.assert_allclose(call(comp, hist, np.arange(train.n_items)), want[u], rtol=1e-7, atol=1e-14)


def lenskit_scores(train, rec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rec.fit(train, rng=1).score(train, None)


@pytest.mark.slow
@pytest.mark.parametrize(("k", "transpose"), [(None, False), (5, False), (5, True)])
def test_q1_without_normalisation_is_lenskit_item_knn(k, transpose):
    """q = 1, no eq. 29-30 normalisation, no s_ii: LensKit's cosine item-kNN (implicit), every neighbour;
    LensKit's ``save_nbrs = k`` keeps the items of which the target is among the k nearest (K&R's k, not k';
    transposed: k')."""
    train = random_train(4, n_users=400)
    nbrs = {"k_prime": k} if transpose else {"k": k}
    ours = lenskit_scores(
        train,
        LensKitRecommender(ItemCFScorer, q=1.0, normalize=False, self_similarity=False, transpose=transpose, **nbrs),
    )
    extra = {} if k is None else {"save_nbrs": k}
    lk = lenskit_scores(train, LensKitRecommender("ItemKNNScorer", max_nbrs=train.n_items, min_sim=1e-12, **extra))
    if k is not None:  # the comparison needs no tie at any item's k-th neighbour (LensKit's tie rule is not ours)
        s = np.sort(item_cf_similarity(train.matrix, ItemCFConfig(self_similarity=False)).toarray(), axis=1)
        assert ((s[:, -k] - s[:, -k - 1]) / s[:, -k]).min() > 1e-3  # far from float32 ties too
    cand = np.isfinite(lk)
    scored = cand & (lk != UNSCORED)
    assert scored.sum() > 1000
    np.testing.assert_allclose(ours[scored], lk[scored], rtol=1e-5)  # LensKit computes in float32
    # no neighbour in the history: LensKit cannot score, ours is 0 (or cannot score either: an empty row of s')
    assert np.isin(ours[cand & ~scored], [0.0, UNSCORED]).all() and (ours[cand & ~scored] == 0.0).any()
    np.testing.assert_array_equal(np.isfinite(ours), cand)


def test_config_checks_and_scenario_names(tmp_path):
    assert param_problems(ItemCFScorer, {"q": 3.0, "k_prime": 10}) == []
    ((key, msg),) = param_problems(ItemCFScorer, {"q": -1.0})
    assert key == "q" and "greater than 0" in msg and "-1.0" in msg
    ((key, msg),) = param_problems(ItemCFScorer, {"kprime": 10})
    assert key == "kprime" and "accepted: q, k, k_prime, normalize, self_similarity, denominator, transpose" in msg
    from pydantic import TypeAdapter

    from simrec.config.recommenders import RecommenderSpec

    specs = [
        TypeAdapter(RecommenderSpec).validate_python(s)
        for s in (
            {"kind": "lenskit", "algorithm": "item_cf", "name": "Y", "params": {"q": 3.0}},
            {"kind": "lenskit", "scorer": "simrec.recommenders:ItemCFScorer", "name": "Z", "params": {"k_prime": 10}},
            {"kind": "lenskit", "algorithm": "item_cf", "name": "bad", "params": {"k": 0}},
        )
    ]
    problems = recommender_problems(specs, "source.recommenders", truth=False)
    assert problems == ["source.recommenders[2].params.k: Input should be greater than 0 (ItemCFConfig); got 0"]
    rec = specs[0].build()
    assert rec.name == "Y"
    lists = rec.recommend(HAND, None, 2, rng=0)
    assert lists.shape == (4, 2)

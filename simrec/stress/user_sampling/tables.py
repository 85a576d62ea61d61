"""User sampling, the tables: estimates and intervals, tests, Tables 6-7 (tidy and as printed).

Each table exists for both parts of the experiment (module
:mod:`simrec.stress.user_sampling`): the user average on m sampled users
(the dissertation's) and the item-sampling estimators on them (simrec's
extension). The two differ in their cells (recommender × metric × K, or
× n × estimator as well), in where an estimate's interval and tests come
from (normal intervals from the samples' moments, or the bootstrap), and in
a few columns; each table is one builder here, parameterised by those
differences:

==========================  ======================================  ==========================================
builder                     user average                            item-sampling estimators
==========================  ======================================  ==========================================
:func:`_estimate_frame`     :func:`user_sampling_table`             :func:`user_sampling_estimator_table`
:func:`_test_frame`         :func:`user_sampling_tests`             :func:`user_sampling_estimator_tests`
:func:`_error_frame`        :func:`user_sampling_errors`            :func:`user_sampling_estimator_errors`
:func:`_wide_frame`         :func:`user_sampling_wide`              :func:`user_sampling_estimator_wide`
==========================  ======================================  ==========================================

A cell's repeats where its estimate is NaN are left out of it
(``n_repeats`` counts the rest; the user average is never NaN).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simrec.sampling import bonferroni_z, hoeffding_margin
from simrec.stress.harness import StressResult
from simrec.stress.user_sampling.run import UserSamplingResult
from simrec.stress.user_sampling.tests import TESTS, PairTests, estimator_pair_tests, pair_tests

__all__ = [
    "ERROR_COLUMNS",
    "ESTIMATOR_ERROR_COLUMNS",
    "ESTIMATOR_TABLE_COLUMNS",
    "ESTIMATOR_TEST_COLUMNS",
    "TABLE_COLUMNS",
    "TEST_COLUMNS",
    "size_label",
    "user_sampling_errors",
    "user_sampling_estimator_errors",
    "user_sampling_estimator_table",
    "user_sampling_estimator_tests",
    "user_sampling_estimator_wide",
    "user_sampling_table",
    "user_sampling_tests",
    "user_sampling_wide",
]


def size_label(method: str, size: int) -> str:
    """Column label as the dissertation prints it: ``user1K``, ``user5K``, ``user943``, ``item100``."""
    if size >= 1000 and size % 1000 == 0:
        return f"{method}{size // 1000}K"
    return f"{method}{size}"


def _cells(*shape: int) -> tuple[np.ndarray, ...]:
    """The index of each axis for every cell of a grid of ``shape``, raveled (last axis fastest)."""
    return tuple(g.ravel() for g in np.meshgrid(*(np.arange(n) for n in shape), indexing="ij"))


def _flat(values: np.ndarray) -> np.ndarray:
    """(repeats, *grid) -> (repeats, cells), the grid raveled as :func:`_cells`."""
    return values.reshape(values.shape[0], -1)


def _with_estimators(results: Sequence[UserSamplingResult]) -> list[UserSamplingResult]:
    return [res for res in results if res.item_estimates is not None]


def _abs_rel_errors(estimates: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|T̂ − T|/T per repeat, NaN where T = 0 or T̂ is NaN, shape of ``estimates``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(exact > 0, np.abs(estimates - exact) / np.where(exact > 0, exact, 1.0), np.nan)


def _tie_free(diff: np.ndarray) -> np.ndarray:
    """Exact differences with rounding noise (equal metrics summed in another order, e.g. permuted ranks) set to 0."""
    return np.where(np.abs(diff) <= 1e-12, 0.0, diff)


# ---------------------------------------------------------------------------
# estimates and intervals
# ---------------------------------------------------------------------------
#: The columns an estimate's statistics fill (:func:`_estimate_frame`), in both parts' tables.
_ESTIMATE_STATS = ["exact", "mean", "sd", "mean_abs_rel_error", "mean_se", "mean_half_width", "coverage"]
#: Columns of :func:`user_sampling_table`.
TABLE_COLUMNS = [
    *("recommender", "size", "n_population", "metric", "k", *_ESTIMATE_STATS),
    *("coverage_bonferroni", "hoeffding_half_width", "coverage_hoeffding", "nominal", "z", "z_bonferroni", "n_repeats"),
]

#: Columns of :func:`user_sampling_estimator_table`.
ESTIMATOR_TABLE_COLUMNS = [
    *("recommender", "size", "n_population", "scheme", "n", "estimator", "metric", "k", *_ESTIMATE_STATS),
    *("nominal", "n_boot", "n_repeats"),
]


@dataclass(frozen=True)
class _Estimates:
    """One result's estimates of the cells of its table (a grid, raveled) and their intervals.

    ``cells``: the identity columns (arrays over the cells, or constants);
    ``exact`` (C,); ``estimates`` (repeats, C), NaN where a repeat has none;
    ``se``, ``half_width``, ``covered`` (repeats, C) or None without
    intervals; ``defined`` (repeats, C): where an interval exists;
    ``extra``: the part's own columns.
    """

    cells: dict[str, Any]
    exact: np.ndarray
    estimates: np.ndarray
    se: np.ndarray | None = None
    half_width: np.ndarray | None = None
    covered: np.ndarray | None = None
    defined: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _estimate_frame(parts: Iterable[_Estimates], columns: list[str], sort: list[str] | None = None) -> pd.DataFrame:
    """The estimates table of ``parts``: per cell the exact T, the mean and sd of T̂ over repeats, the mean
    |relative error|, the mean standard error and half-width, the coverage of T, and the parts' columns."""
    frames = []
    for p in parts:
        est, reps = p.estimates, p.estimates.shape[0]
        nan = np.full(p.exact.shape, np.nan)
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells (no estimate in any repeat)
            stats = {
                "exact": p.exact,
                "mean": np.nanmean(est, axis=0),
                "sd": np.nanstd(est, axis=0, ddof=1) if reps > 1 else nan,
                "mean_abs_rel_error": np.nanmean(_abs_rel_errors(est, p.exact), axis=0),
                "mean_se": nan if p.se is None else np.nanmean(p.se, axis=0),
                "mean_half_width": nan if p.half_width is None else np.nanmean(p.half_width, axis=0),
                "coverage": nan
                if p.covered is None or p.defined is None
                else (p.covered & p.defined).sum(axis=0) / p.defined.sum(axis=0),
            }
        n_ok = (~np.isnan(est)).sum(axis=0)
        frames.append(pd.DataFrame({**p.cells, **stats, **p.extra, "n_repeats": n_ok})[columns])
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out if sort is None else out.sort_values(sort, kind="stable", ignore_index=True)


def _user_estimates(res: UserSamplingResult) -> _Estimates:
    """The user average's cells (recommender × metric × K): normal intervals T̂ ± z·se, Bonferroni's over the
    recommenders, Hoeffding's."""
    R, J = res.exact.shape
    z, zb = bonferroni_z(res.confidence, 1), bonferroni_z(res.confidence, R)
    se = _flat(res.standard_error())
    err = _flat(np.abs(res.mean - res.exact))
    # tolerance: T̂ and T are sums of the same values in different orders
    tol = (1e-12 * np.maximum(1.0, np.abs(res.exact))).ravel()
    hoeffding = hoeffding_margin(res.size, confidence=res.confidence)
    return _Estimates(
        cells={
            "recommender": np.repeat(res.recommenders, J),
            "size": res.size,
            "n_population": res.n_population,
            "metric": np.tile(res.families, R),
            "k": np.tile(res.ks, R),
        },
        exact=res.exact.ravel(),
        estimates=_flat(res.mean),
        se=se,
        half_width=z * se,
        covered=err <= z * se + tol,
        defined=np.ones(se.shape, bool),
        extra={
            "coverage_bonferroni": (err <= zb * se + tol).mean(axis=0),
            "hoeffding_half_width": hoeffding,
            "coverage_hoeffding": (err <= hoeffding + tol).mean(axis=0),
            "nominal": res.confidence,
            "z": z,
            "z_bonferroni": zb,
        },
    )


def _estimator_estimates(res: UserSamplingResult) -> _Estimates:
    """The estimators' cells (n × recommender × estimator × metric × K): bootstrap percentile intervals."""
    reps, I, R, E, J = res.item_estimates.shape  # type: ignore[union-attr]
    i, r, e, j = _cells(I, R, E, J)
    exact = res.exact[r, j]
    intervals = {}
    if res.item_se is not None:
        lower, upper = _flat(res.item_lower), _flat(res.item_upper)  # type: ignore[arg-type]
        tol = 1e-12 * np.maximum(1.0, np.abs(exact))
        intervals = {
            "se": _flat(res.item_se),
            "half_width": (upper - lower) / 2,
            "covered": (lower <= exact + tol) & (exact - tol <= upper),
            "defined": ~np.isnan(lower) & ~np.isnan(_flat(res.item_estimates)),  # type: ignore[arg-type]
        }
    return _Estimates(
        cells={
            "recommender": np.asarray(res.recommenders)[r],
            "size": res.size,
            "n_population": res.n_population,
            "scheme": res.item_scheme,
            "n": res.item_sizes[i],
            "estimator": np.asarray(res.estimators)[e],
            "metric": np.asarray(res.families)[j],
            "k": res.ks[j],
        },
        exact=exact,
        estimates=_flat(res.item_estimates),  # type: ignore[arg-type]
        extra={"nominal": res.confidence, "n_boot": res.n_boot},
        **intervals,
    )


def user_sampling_table(results: Sequence[UserSamplingResult]) -> pd.DataFrame:
    """Per recommender × size × metric × K: T, the estimates over repeats, intervals and their coverage.

    Columns (:data:`TABLE_COLUMNS`): recommender, size, n_population, metric, k, exact (T), mean and
    sd of T̂ over repeats, mean_abs_rel_error (mean of |T̂ − T|/T, NaN where
    T = 0), mean_se, mean_half_width, coverage (share of repeats whose
    interval holds T; 1 − the rejection rate of H0: E T̂ = T), coverage_bonferroni
    (simultaneous over the recommenders: the Bonferroni z),
    hoeffding_half_width and coverage_hoeffding (the distribution-free
    interval T̂ ± sqrt(ln(2/α)/(2m)) of eq. 52 for metrics in [0, 1]; it also
    holds for sampling without replacement, Hoeffding 1963 §6, so no
    finite-population correction), nominal, z, z_bonferroni, n_repeats.
    """
    return _estimate_frame((_user_estimates(res) for res in results), TABLE_COLUMNS)


def user_sampling_estimator_table(results: Sequence[UserSamplingResult]) -> pd.DataFrame:
    """Per recommender × m × scheme × n × estimator × metric × K: the estimator on m sampled users vs the exact T.

    .. math:: \\text{mean\\_abs\\_rel\\_error} = \\frac{1}{n_{rep}} \\sum_{rep}
              \\frac{|\\hat T^{(e)}_{S_{rep}} - T|}{T}

    Columns (:data:`ESTIMATOR_TABLE_COLUMNS`): recommender, size (m), n_population (M), scheme, n, estimator,
    metric, k, exact (T over all M users, full ranking), mean and sd of the
    estimate over repeats, mean_abs_rel_error (NaN where T = 0),
    mean_se (mean bootstrap standard error), mean_half_width (mean of
    (upper − lower)/2), coverage (share of repeats whose percentile interval
    holds T), nominal, n_boot, n_repeats (repeats with a defined estimate).
    The interval columns are NaN without bootstrap (``n_boot`` = 0).
    Results without the estimator part are skipped.
    """
    return _estimate_frame(
        (_estimator_estimates(res) for res in _with_estimators(results)),
        ESTIMATOR_TABLE_COLUMNS,
        sort=["recommender", "scheme", "n", "estimator", "size"],
    )


# ---------------------------------------------------------------------------
# tests between pairs of recommenders
# ---------------------------------------------------------------------------
#: The rejection columns (:func:`_test_frame`), in both parts' tables.
_REJECTIONS = ["reject_rate", "reject_rate_bonferroni", "correct_rate_bonferroni", "wrong_sign_rate_bonferroni"]
#: Columns of :func:`user_sampling_tests`.
TEST_COLUMNS = [
    *("size", "metric", "k", "recommender_a", "recommender_b", "test", "statistic", "exact_difference"),
    *("mean_difference", *_REJECTIONS, "alpha", "n_pairs", "n_repeats"),
]

#: Columns of :func:`user_sampling_estimator_tests`.
ESTIMATOR_TEST_COLUMNS = [
    *("size", "scheme", "n", "estimator", "metric", "k", "recommender_a", "recommender_b", "test"),
    *("exact_difference", "mean_difference", "order_rate", *_REJECTIONS, "alpha", "n_pairs", "n_boot", "n_repeats"),
]


@dataclass(frozen=True)
class _Tests:
    """One result's tests of one kind over the cells of its table (a grid, raveled).

    ``cells``: the identity columns; ``exact_difference`` (C,), T_A − T_B;
    ``tests``: the per-repeat tests, arrays (repeats, *grid); ``alpha``,
    ``n_pairs`` (Bonferroni's family); ``extra``: the part's own columns.
    """

    cells: dict[str, Any]
    exact_difference: np.ndarray
    tests: PairTests
    alpha: float
    n_pairs: int
    extra: dict[str, Any] = field(default_factory=dict)


def _test_frame(parts: Iterable[_Tests], columns: list[str], ks: Sequence[int] | None) -> pd.DataFrame:
    """The tests table of ``parts``: per cell the rejection rates (uncorrected, Bonferroni over the pairs), the
    right and the wrong winner declared significant, the order rate; rows at the cutoffs ``ks`` (default all)."""
    rows = []
    for p in parts:
        t, exact = p.tests, p.exact_difference
        diff, pv = _flat(t.difference), _flat(t.p_value)
        ok = ~np.isnan(diff)
        defined = ok if t.defined is None else ok & _flat(t.defined)
        sign_ok = np.sign(diff) == np.sign(exact)
        with np.errstate(invalid="ignore", divide="ignore"):
            n_ok, cnt = ok.sum(axis=0), defined.sum(axis=0)
            hit_b = defined & _flat(t.rejected_bonferroni(p.alpha))
            stats = {
                "exact_difference": exact,
                "mean_difference": np.where(ok, diff, 0).sum(axis=0) / n_ok,
                "order_rate": np.where(exact != 0, (ok & sign_ok).sum(axis=0) / n_ok, np.nan),
                "reject_rate": (defined & (pv <= p.alpha)).sum(axis=0) / cnt,
                "reject_rate_bonferroni": hit_b.sum(axis=0) / cnt,
                "correct_rate_bonferroni": (hit_b & sign_ok & (exact != 0)).sum(axis=0) / cnt,
                "wrong_sign_rate_bonferroni": (hit_b & ~sign_ok).sum(axis=0) / cnt,  # T_A = T_B: any rejection
            }
        frame = pd.DataFrame(
            {**p.cells, "test": t.test, **stats, "alpha": p.alpha, "n_pairs": p.n_pairs, **p.extra, "n_repeats": n_ok}
        )[columns]
        rows.append(frame if ks is None else frame[np.isin(frame["k"], list(ks))])
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def _user_tests(res: UserSamplingResult) -> Iterator[_Tests]:
    """The user average's tests (pair × metric × K; module decisions of :mod:`simrec.stress.user_sampling`)."""
    P, J = len(res.pairs), res.exact.shape[1]
    if P == 0:
        return
    fam = np.asarray(res.families)
    cells = {
        "size": res.size,
        "metric": np.tile(fam, P),
        "k": np.tile(res.ks, P),
        "recommender_a": np.repeat([res.recommenders[a] for a in res.pairs[:, 0]], J),
        "recommender_b": np.repeat([res.recommenders[b] for b in res.pairs[:, 1]], J),
    }
    exact = _tie_free(res.exact[res.pairs[:, 0]] - res.exact[res.pairs[:, 1]]).ravel()  # (P, J)
    for test in TESTS:
        stat = np.where(fam == "recall", "z", "welch_t") if test == "two_sample" else np.full(J, "paired_t")
        t = pair_tests(res, test)
        yield _Tests({**cells, "statistic": np.tile(stat, P)}, exact, t, 1 - res.confidence, P)


def _estimator_tests(res: UserSamplingResult) -> Iterator[_Tests]:
    """The estimators' tests (n × pair × estimator × metric × K; bootstrap standard errors)."""
    P = len(res.pairs)
    if P == 0:
        return
    _reps, I, _R, E, J = res.item_estimates.shape  # type: ignore[union-attr]
    i, p, e, j = _cells(I, P, E, J)
    a, b = res.pairs[:, 0], res.pairs[:, 1]
    cells = {
        "size": res.size,
        "scheme": res.item_scheme,
        "n": res.item_sizes[i],
        "estimator": np.asarray(res.estimators)[e],
        "metric": np.asarray(res.families)[j],
        "k": res.ks[j],
        "recommender_a": np.asarray(res.recommenders)[a[p]],
        "recommender_b": np.asarray(res.recommenders)[b[p]],
    }
    exact = _tie_free(res.exact[a] - res.exact[b])[p, j]
    for test in TESTS:
        t = estimator_pair_tests(res, test)
        yield _Tests(cells, exact, t, 1 - res.confidence, P, {"n_boot": res.n_boot})  # type: ignore[arg-type]


def user_sampling_tests(results: Sequence[UserSamplingResult], ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Per size × metric × K × pair × test: how often a sample of m users tells the two models apart.

    Columns (:data:`TEST_COLUMNS`): size, metric, k, recommender_a, recommender_b, test
    (``two_sample``/``paired``), statistic (``z``, ``welch_t`` or
    ``paired_t``), exact_difference (T_A − T_B over all users), mean_difference,
    reject_rate (share of repeats with p <= α), reject_rate_bonferroni (p <=
    α/n_pairs), correct_rate_bonferroni (rejected *and* the sign of T̂_A − T̂_B
    is that of T_A − T_B: the right winner declared significant),
    wrong_sign_rate_bonferroni (rejected with the wrong sign), alpha,
    n_pairs, n_repeats. ``ks``: the cutoffs kept (default all).
    """
    return _test_frame((t for res in results for t in _user_tests(res)), TEST_COLUMNS, ks)


def user_sampling_estimator_tests(
    results: Sequence[UserSamplingResult], ks: Sequence[int] | None = None
) -> pd.DataFrame:
    """Per m × scheme × n × estimator × metric × K × pair × test: do the estimates on m users tell A and B apart?

    .. math:: z_{two\\_sample} = \\frac{\\hat T_A - \\hat T_B}{\\sqrt{se_A^2 + se_B^2}}, \\qquad
              z_{paired} = \\frac{\\hat T_A - \\hat T_B}{se(\\hat T^*_A - \\hat T^*_B)}

    with bootstrap standard errors over the sample's users
    (:func:`~simrec.stress.user_sampling.estimator_pair_tests`); two-sided
    normal p-values. Columns (:data:`ESTIMATOR_TEST_COLUMNS`) as
    :func:`user_sampling_tests` (exact_difference is T_A − T_B over all
    users, full ranking) plus scheme, n, estimator, order_rate (share of
    repeats where sign(T̂_A − T̂_B) = sign(T_A − T_B); NaN for an exact tie;
    the same in both ``test`` rows) and n_boot; the rejection columns are NaN
    without bootstrap. Repeats where an estimate is NaN are left out
    (``n_repeats`` counts the rest).
    """
    return _test_frame(
        (t for res in _with_estimators(results) for t in _estimator_tests(res)), ESTIMATOR_TEST_COLUMNS, ks
    )


# ---------------------------------------------------------------------------
# Tables 6-7: relative error averaged over K
# ---------------------------------------------------------------------------
#: The statistics of a row of Tables 6-7 (:func:`_summarise`), in both parts' tables.
_ERROR_STATS = ["rel_error_pct", "rel_error_pct_sd", "rel_error_pct_sd_repeats", "n_k", "n_repeats"]
#: Columns of :func:`user_sampling_errors`.
ERROR_COLUMNS = ["recommender", "metric", "method", "size", "label", "estimator", "scheme", *_ERROR_STATS]

#: Columns of :func:`user_sampling_estimator_errors`.
ESTIMATOR_ERROR_COLUMNS = ["recommender", "metric", "estimator", "scheme", "n", "size", "label", *_ERROR_STATS]


def _summarise(errors: np.ndarray, families: np.ndarray) -> Iterator[dict[str, Any]]:
    """Per family: mean % over repeats and K, sd over K of the per-K means, sd over repeats of the
    K-averaged error, number of K and of repeats; ``errors`` (repeats, J)."""
    for fam in dict.fromkeys(families):
        e = errors[:, families == fam]
        e = e[:, ~np.isnan(e).all(axis=0)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            per_k = np.nanmean(e, axis=0) * 100
            per_rep = np.nanmean(e, axis=1) * 100
            yield {
                "metric": str(fam),
                "rel_error_pct": float(np.mean(per_k)) if per_k.size else math.nan,
                "rel_error_pct_sd": float(np.std(per_k, ddof=1)) if per_k.size > 1 else math.nan,
                "rel_error_pct_sd_repeats": (
                    float(np.nanstd(per_rep, ddof=1)) if np.isfinite(per_rep).sum() > 1 else math.nan
                ),
                "n_k": int(per_k.size),
                "n_repeats": int(np.isfinite(per_rep).sum()),
            }


#: One row group of a Tables 6-7 table: its identity columns, the |relative errors| (repeats, J), their families.
_ErrorPart = tuple[dict[str, Any], np.ndarray, np.ndarray]


def _on_user_sample(labels: pd.Series) -> pd.Series:
    """Whether a Tables 6-7 column is on sampled users (its label names a user-sample size: ``user1K``,
    ``item100+user1K``) rather than on all of them (``item100``); those come first."""
    return labels.str.contains("user", regex=False).astype(int)


def _error_frame(parts: Iterable[_ErrorPart], columns: list[str], sort: list[str]) -> pd.DataFrame:
    """Tables 6-7 in tidy form: one row per part × metric family (:func:`_summarise`), sorted by ``sort``
    (``_u``: the columns on all users before those on sampled users)."""
    rows = [{**cells, **stats} for cells, errors, fams in parts for stats in _summarise(errors, fams)]
    frame = pd.DataFrame([tuple(row[c] for c in columns) for row in rows], columns=columns)
    frame = frame.assign(_u=_on_user_sample(frame["label"])).sort_values(sort, kind="stable")
    return frame.drop(columns="_u").reset_index(drop=True)


def _harness_errors(
    item_results: Sequence[StressResult], keep: Callable[[str, StressResult], bool]
) -> Iterator[tuple[StressResult, str, np.ndarray, np.ndarray]]:
    """The harness's estimates on all users (estimators ``e`` with ``keep(e, result)``): |relative errors| per
    repeat at the cutoff metrics (user sampling has no AUC, no untruncated AP)."""
    for res in item_results:
        cut = np.asarray(res.ks) > 0
        for e, est in enumerate(res.estimators):
            if keep(est, res):
                yield res, est, _abs_rel_errors(res.estimates[:, e, cut], res.exact[cut]), np.asarray(res.families)[cut]


def user_sampling_errors(
    user_results: Sequence[UserSamplingResult],
    item_results: Sequence[StressResult] = (),
    *,
    item_estimator: str | None = "MN_MES",
    item_scheme: str = "binomial",
) -> pd.DataFrame:
    """Dissertation Tables 6-7 in tidy form: relative error (%) averaged over K, ± sd over K.

    .. math:: e = \\frac{1}{|K|} \\sum_K \\frac{1}{n_{rep}} \\sum_{rep}
              \\frac{|\\hat T_{K,rep} - T_K|}{T_K} \\times 100

    One row per recommender × metric family × column: the item-sampling
    columns (``method = "item"``, ``size`` = n, from ``item_results`` cells
    of ``item_estimator`` under ``item_scheme``; none when ``item_estimator``
    is None) then the user-sampling columns (``method = "user"``, ``size`` = m).
    ``label`` is the dissertation's column name (``item100``, ``user1K``).
    Columns: :data:`ERROR_COLUMNS`.
    """

    def parts() -> Iterator[_ErrorPart]:
        chosen = lambda est, res: est == item_estimator and res.scheme == item_scheme  # noqa: E731
        for item_res, est, errs, fams in _harness_errors(item_results, chosen):
            cells = {"recommender": item_res.recommender, "method": "item", "size": item_res.n, "estimator": est}
            yield {**cells, "label": size_label("item", item_res.n), "scheme": item_scheme}, errs, fams
        for res in user_results:
            for r, name in enumerate(res.recommenders):
                cells = {"recommender": name, "method": "user", "size": res.size, "estimator": "user_average"}
                errs = _abs_rel_errors(res.mean[:, r, :], res.exact[r])
                yield {**cells, "label": size_label("user", res.size), "scheme": ""}, errs, np.asarray(res.families)

    return _error_frame(parts(), ERROR_COLUMNS, ["metric", "recommender", "_u", "size"])


def user_sampling_estimator_errors(
    user_results: Sequence[UserSamplingResult], item_results: Sequence[StressResult] = ()
) -> pd.DataFrame:
    """Tables 6-7 layout for the estimators on user samples: relative error (%) averaged over K, ± sd over K.

    .. math:: e = \\frac{1}{|K|} \\sum_K \\frac{1}{n_{rep}} \\sum_{rep}
              \\frac{|\\hat T_{K,rep} - T_K|}{T_K} \\times 100

    (the per-repeat definition of :func:`user_sampling_errors`). Per
    recommender × metric family × estimator × scheme × n: first the harness's
    estimate on all users (``label`` ``item100``, ``size`` = the users it
    used; from ``item_results`` of the same estimator, scheme and n), then
    the estimate on m sampled users (``item100+user1K``, ``size`` = m).
    Columns: :data:`ESTIMATOR_ERROR_COLUMNS`.
    """
    sampled = _with_estimators(user_results)
    combos = {(est, res.item_scheme, int(n)) for res in sampled for n in res.item_sizes for est in res.estimators}

    def parts() -> Iterator[_ErrorPart]:
        for res in sampled:
            for i, n in enumerate(res.item_sizes):
                label = f"{size_label('item', int(n))}+{size_label('user', res.size)}"
                for e, est in enumerate(res.estimators):
                    for r, name in enumerate(res.recommenders):
                        cells = {"recommender": name, "estimator": est, "scheme": res.item_scheme, "n": int(n)}
                        errs = _abs_rel_errors(res.item_estimates[:, i, r, e, :], res.exact[r])  # type: ignore[index]
                        yield {**cells, "size": res.size, "label": label}, errs, np.asarray(res.families)
        for item_res, est, errs, fams in _harness_errors(
            item_results, lambda est, res: (est, res.scheme, res.n) in combos
        ):
            cells = {"recommender": item_res.recommender, "estimator": est, "scheme": item_res.scheme, "n": item_res.n}
            yield {**cells, "size": item_res.n_users, "label": size_label("item", item_res.n)}, errs, fams

    return _error_frame(
        parts(), ESTIMATOR_ERROR_COLUMNS, ["metric", "recommender", "estimator", "scheme", "n", "_u", "size"]
    )


def _wide_frame(errors: pd.DataFrame, dataset: str, keys: list[str], label_order: list[str]) -> pd.DataFrame:
    """Tables 6-7 as printed: one row per dataset × ``keys``, one column per label (ordered by ``label_order``;
    ``_u``: the columns on all users first), cells "mean±sd" in % with two decimals."""
    ident = ["dataset", "model", "metric", *keys[2:]]
    if not len(errors):
        return pd.DataFrame(columns=ident)
    order = errors.assign(_u=_on_user_sample(errors["label"])).sort_values(label_order, kind="stable")
    labels = list(dict.fromkeys(order["label"]))
    cell = errors.assign(cell=[f"{m:.2f}±{s:.2f}" for m, s in zip(errors["rel_error_pct"], errors["rel_error_pct_sd"])])
    wide = cell.pivot_table(index=keys, columns="label", values="cell", aggfunc="first", sort=False)
    wide = wide.reindex(columns=labels).reset_index().rename(columns={"recommender": "model"})
    wide.columns.name = None
    wide.insert(0, "dataset", dataset)
    return wide[[*ident, *labels]]


def user_sampling_wide(errors: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Tables 6-7 as printed: one row per dataset × model × metric, one column per item/user size, cells "mean±sd".

    ``errors`` is :func:`user_sampling_errors`'s output; values in %, two decimals.
    """
    return _wide_frame(errors, dataset, ["metric", "recommender"], ["_u", "size"])


def user_sampling_estimator_wide(errors: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """One row per dataset × model × metric × estimator × scheme, one column per label (``item100``,
    ``item100+user1K``, ...), cells "mean±sd" in % (from :func:`user_sampling_estimator_errors`)."""
    return _wide_frame(errors, dataset, ["metric", "recommender", "estimator", "scheme"], ["n", "_u", "size"])

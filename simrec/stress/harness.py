"""Repeat sampled evaluation and run every estimator of :mod:`simrec.sampling`.

For one recommender's global ranks, one sampling scheme and one sample size n,
:func:`run_stress` draws the sampled ranks ``repeats`` times and records, per
repeat, every estimator's estimate of every metric F ∈ {Recall, NDCG, AP} at
K = 1..k_max (shared/DESIGN.md §5 "Stress harness"; the dissertation's Tables
3-4 and Krichene & Rendle's Table 4 are built from these by :mod:`.tables`).

Schemes (the sampled rank r_u of user u with global rank R_u among N_u candidates):

* ``binomial`` — uniform negatives with replacement, r − 1 ~ Bin(n − 1, θ_u),
  θ_u = (R_u − 1)/(N_u − 1) (K&R §4.3);
* ``hypergeometric`` — uniform without replacement,
  r − 1 ~ Hypergeom(N_u − 1, R_u − 1, n − 1);
* ``popularity`` — negatives drawn with probability ∝ training popularity,
  with replacement: r − 1 ~ Bin(n − 1, s_u) with s_u the popularity share
  ranked above the held-out item (exact for actual weighted draws with
  replacement, :func:`simrec.sampling.above_weight_share`). The estimators
  assume uniform sampling (what a paper's reader assumes), so this scheme
  measures their bias under popularity-weighted negatives;
* ``adaptive`` — Li's Algorithm 1 (dissertation §2.6) with replacement from
  n0 = n, doubling while r = 1 up to ``adaptive_n_max``; estimated by
  ``adaptive_MLE`` only (the other estimators assume one fixed n).

Estimators (names as in the output tables):

* per-rank corrections F̂ (uniform prior): ``naive``, ``rank_estimate``,
  ``LS``, ``CLS``, ``BV(gamma=g)`` for each g of ``bv_gammas``;
* rank-distribution estimators: ``MLE``, ``WMLE`` (weights F_NDCG(r/C),
  C = ``wmle_scale``), ``MES`` (η = ``mes_eta``), refitted on every repeat;
* linear estimators with the estimated prior (refitted every repeat):
  ``MN_MLE``, ``MN_MES`` (γ = 1/M) and ``BV_MLE(gamma=g)``, ``BV_MES(gamma=g)``;
* Li & Jin mappings, Recall only: ``mapping:linear``, ``mapping:bound``,
  ``mapping:beta@P`` (HR@K read off the sampled curve at f(k), interpolated
  as in :meth:`simrec.sampling.Mapping.hit_ratio`).

Decisions
---------
* Estimators are given one catalogue size N = round(mean_u N_u) (users'
  candidate counts differ by their training profiles); sampling itself uses
  each user's own N_u. With a common N_u (e.g. a ranks file) this is exact;
  otherwise the model mismatch is part of the measured error, as in practice.
* Recommenders are sampled independently (given only ranks, the joint
  distribution of two recommenders' sampled ranks is not determined).
* Every estimator here depends on the sampled ranks only through their
  histogram (n counts), so a repeat costs O(M) to draw plus the fits.
* Linear estimators with an estimated prior are solved for all metrics at
  once (:func:`linear_family`): the metrics' F vanish beyond rank k_max, so
  A^T D b needs only the first k_max rows of P(r|R), and one
  eigendecomposition per prior serves every metric and γ.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import xlog1py, xlogy

from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice, check_in_range, check_int
from simrec.sampling import (
    CorrectionProblem,
    RankMetric,
    SamplingScheme,
    average_precision,
    beta_mapping,
    bound_mapping,
    constrained_least_squares,
    decay_weights,
    fit_beta_mapping,
    linear_mapping,
    log_conditional_rank_probabilities,
    mes,
    metric_table,
    mle,
    mle_adaptive,
    ndcg,
    rank_estimate,
    recall,
    weighted_mle,
)
from simrec.sampling._threads import single_threaded_blas
from simrec.stress.sources import RecommenderRanks

__all__ = [
    "SCHEMES",
    "ESTIMATORS",
    "METRIC_FAMILIES",
    "StressConfig",
    "StressResult",
    "estimator_items",
    "estimator_names",
    "sample_ranks",
    "linear_family",
    "metric_values",
    "true_metric_values",
    "expected_sampled_metrics",
    "run_stress",
]

SCHEMES: tuple[str, ...] = ("binomial", "hypergeometric", "popularity", "adaptive")
ESTIMATORS: tuple[str, ...] = (
    "naive", "rank_estimate", "LS", "CLS", "BV", "MLE", "WMLE", "MES", "MN_MLE", "MN_MES", "BV_MLE", "BV_MES",
    "mapping",
)
#: Metric families of the harness: name -> constructor of a RankMetric at cutoff K.
METRIC_FAMILIES = {"recall": recall, "ndcg": ndcg, "average_precision": average_precision}
_MAPPINGS = ("linear", "bound", "beta@P")


@dataclass(frozen=True)
class StressConfig:
    """What to compute for each (recommender, scheme, n).

    Parameters
    ----------
    repeats : int, default 100
        Independent samplings per task.
    metrics : tuple of str, default ("recall", "ndcg", "average_precision")
        Families of :data:`METRIC_FAMILIES`, each at K = 1..k_max.
    k_max : int, default 50
    estimators : tuple of str, default all of :data:`ESTIMATORS`
        ``"BV"`` expands to one estimator per ``bv_gammas`` (so do
        ``"BV_MLE"``/``"BV_MES"``); ``"mapping"`` to the three mappings.
    bv_gammas : tuple of float in [0, 1], default (1, 0.1, 0.01, 0.001)
        K&R's γ values.
    wmle_scale : float, default 10
        C of the weighted MLE's weights F_NDCG(r / C) (dissertation §2.4.3).
    mes_eta : float, default 0.001
        η of MES (the dissertation's value).
    max_iter : int, default 300
        EM iterations (MLE, WMLE, adaptive MLE).
    adaptive_n_max : int, default 3200
        Terminal sample size of adaptive sampling (capped at N).
    """

    repeats: int = 100
    metrics: tuple[str, ...] = ("recall", "ndcg", "average_precision")
    k_max: int = 50
    estimators: tuple[str, ...] = ESTIMATORS
    bv_gammas: tuple[float, ...] = (1.0, 0.1, 0.01, 0.001)
    wmle_scale: float = 10.0
    mes_eta: float = 0.001
    max_iter: int = 300
    adaptive_n_max: int = 3200

    def __post_init__(self) -> None:
        check_int("repeats", self.repeats, low=1)
        check_int("k_max", self.k_max, low=1)
        if not self.metrics:
            raise ValueError("`metrics` must name at least one metric family; got none")
        for m in self.metrics:
            check_choice("metrics", m, tuple(METRIC_FAMILIES))
        if not self.estimators:
            raise ValueError("`estimators` must name at least one estimator; got none")
        for e in self.estimators:
            check_choice("estimators", e, ESTIMATORS)
        for g in self.bv_gammas:
            check_in_range("bv_gammas", g, 0, 1)
        check_in_range("wmle_scale", self.wmle_scale, 0, None, low_open=True)
        check_in_range("mes_eta", self.mes_eta, 0, None, low_open=True)
        check_int("max_iter", self.max_iter, low=1)
        check_int("adaptive_n_max", self.adaptive_n_max, low=2)
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "estimators", tuple(self.estimators))
        object.__setattr__(self, "bv_gammas", tuple(float(g) for g in self.bv_gammas))

    def rank_metrics(self) -> list[RankMetric]:
        """Every family at K = 1..k_max, family-major."""
        return [METRIC_FAMILIES[m](k) for m in self.metrics for k in range(1, self.k_max + 1)]


@dataclass(frozen=True, eq=False)
class StressResult:
    """Per-repeat estimates of one (recommender, scheme, n).

    Attributes
    ----------
    recommender, scheme : str
    n : int
        Sample-set size (n0 for ``adaptive``).
    n_items : int
        N given to the estimators.
    n_users : int
        M.
    families : tuple of str, shape (J,)
        Metric family of each metric column.
    ks : ndarray of int, shape (J,)
        Cutoff K of each metric column.
    estimators : tuple of str, shape (E,)
    exact : ndarray, shape (J,)
        The exact metric (1/M) Σ_u F(R_u).
    estimates : ndarray, shape (repeats, E, J)
        NaN where an estimator does not apply (mappings for NDCG and AP) or failed.
    true : ndarray of shape (J,) or None
        Simulations: the true metric (see :func:`true_metric_values`).
    shr : ndarray of shape (n,) or None
        Sampled hit ratio SHR@k, k = 1..n, averaged over repeats (not for ``adaptive``).
    mapping_values : dict of str -> ndarray (n,)
        f(k) of each mapping (beta@P with the mean fitted a over repeats).
    global_hr_at_f : dict of str -> ndarray (n,)
        The exact global hit ratio HR@⌊f(k)⌋ (Li & Jin Figure 7 compares it with ``shr``).
    mean_sample_size : float
        Mean sample-set size per user (n, or more for ``adaptive``).
    seconds : float
    """

    recommender: str
    scheme: str
    n: int
    n_items: int
    n_users: int
    families: tuple[str, ...]
    ks: np.ndarray
    estimators: tuple[str, ...]
    exact: np.ndarray
    estimates: np.ndarray
    true: np.ndarray | None = None
    shr: np.ndarray | None = None
    mapping_values: dict[str, np.ndarray] = field(default_factory=dict)
    global_hr_at_f: dict[str, np.ndarray] = field(default_factory=dict)
    mean_sample_size: float = math.nan
    seconds: float = math.nan

    @property
    def metric_labels(self) -> list[str]:
        return [f"{f}@{k}" for f, k in zip(self.families, self.ks)]


def estimator_items(ranks: RecommenderRanks) -> int:
    """N given to the estimators: round(mean_u N_u) (see the module's decisions)."""
    return int(np.rint(ranks.n_candidates.mean()))


def estimator_names(config: StressConfig, scheme: str) -> tuple[str, ...]:
    """Output names of the estimators ``config`` asks for under ``scheme``, in order."""
    check_choice("scheme", scheme, SCHEMES)
    if scheme == "adaptive":
        return ("adaptive_MLE",)
    out: list[str] = []
    for e in config.estimators:
        if e in ("BV", "BV_MLE", "BV_MES"):
            out += [f"{e}(gamma={g:g})" for g in config.bv_gammas]
        elif e == "mapping":
            out += [f"mapping:{m}" for m in _MAPPINGS]
        else:
            out.append(e)
    return tuple(out)


def metric_values(ranks: np.ndarray, f_top: np.ndarray) -> np.ndarray:
    """F_j(R) for each rank, shape (len(ranks), J), from the table of F on ranks 1..k_max (0 beyond)."""
    k_max = f_top.shape[0]
    out = np.zeros((ranks.size, f_top.shape[1]))
    top = ranks <= k_max
    out[top] = f_top[ranks[top] - 1]
    return out


def true_metric_values(ranks: RecommenderRanks, f_top: np.ndarray) -> np.ndarray:
    """The true metric of a simulation, shape (J,).

    .. math:: T_{true} = \\frac1M \\sum_u \\frac{1}{|Rel_u|} \\sum_{i \\in Rel_u} F(R_u(i))

    with Rel_u = truth_u − train_u and R_u(i) the rank of i among u's
    candidates: the expected metric of leave-one-out evaluation had the
    held-out item been drawn uniformly from the user's true relevant
    candidates instead of from the observed ones ("leave-one-out in the
    truth"). Users without a true relevant candidate (impossible when
    observed ⊆ truth) would be left out with a warning.
    """
    if not ranks.has_truth:
        raise ValueError(f"recommender {ranks.name!r} has no true ranks (not a simulation)")
    vals = metric_values(ranks.true_ranks, f_top)
    m = ranks.n_users
    counts = np.bincount(ranks.true_users, minlength=m).astype(np.float64)
    sums = np.stack([np.bincount(ranks.true_users, weights=vals[:, j], minlength=m) for j in range(vals.shape[1])], 1)
    ok = counts > 0
    if not ok.all():
        warnings.warn(f"{int((~ok).sum())} user(s) have no true relevant candidate; left out of the true metric",
                      RuntimeWarning, stacklevel=2)
    return (sums[ok] / counts[ok, None]).mean(axis=0)


def sample_ranks(ranks: RecommenderRanks, scheme: str, n: int, rng: RNGLike = None) -> np.ndarray:
    """One draw of the sampled ranks (M,) under ``scheme`` (not ``adaptive``), each user with its own N_u."""
    check_choice("scheme", scheme, SCHEMES[:3])
    n = check_int("n", n, low=2)
    gen = as_generator(rng)
    R, N = ranks.ranks, ranks.n_candidates
    if scheme == "binomial":
        return 1 + gen.binomial(n - 1, (R - 1) / (N - 1.0))
    if scheme == "hypergeometric":
        if n > N.min():
            raise ValueError(f"`n` = {n} exceeds the smallest candidate set ({int(N.min())}) of {ranks.name!r}; "
                             "sampling without replacement is impossible")
        return 1 + gen.hypergeometric(R - 1, N - R, n - 1)
    if ranks.popularity_shares is None:
        raise ValueError(f"scheme 'popularity' needs popularity shares; {ranks.name!r} has none")
    return 1 + gen.binomial(n - 1, ranks.popularity_shares)


def _sample_adaptive(ranks: RecommenderRanks, n0: int, n_max: int, gen: np.random.Generator):
    """Li's Algorithm 1 with replacement and per-user θ_u (as :func:`simrec.sampling.sample_ranks_adaptive`)."""
    theta = (ranks.ranks - 1) / (ranks.n_candidates - 1.0)
    r = 1 + gen.binomial(n0 - 1, theta)
    size = np.full(r.shape, n0, dtype=np.int64)
    active = np.flatnonzero((r == 1) & (size < n_max))
    while active.size:
        cur = size[active]
        new = np.minimum(2 * cur, n_max)
        x = gen.binomial(new - cur, theta[active])
        r[active] = 1 + x
        size[active] = new
        active = active[(x == 0) & (new < n_max)]
    return r.astype(np.int64), size


def _nan_mean_sd(x: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, sd (ddof=1; NaN below 2 values) and count of the non-NaN values along ``axis``."""
    ok = ~np.isnan(x)
    cnt = ok.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, x, 0).sum(axis=axis) / cnt
        dev = np.where(ok, x - np.expand_dims(mean, axis), 0)
        sd = np.sqrt((dev**2).sum(axis=axis) / (cnt - 1))
    return mean, np.where(cnt > 1, sd, np.nan), cnt


def _fill(x: np.ndarray, support: np.ndarray, n: int) -> np.ndarray:
    """Values at ranks outside the support: the nearest supported rank's (as CorrectionProblem does)."""
    if support.size == n:
        return x
    grid = np.arange(n)
    nearest = np.clip(np.searchsorted(support, grid), 0, support.size - 1)
    left = np.clip(nearest - 1, 0, support.size - 1)
    use_left = np.abs(support[left] - grid) <= np.abs(support[nearest] - grid)
    return x[np.where(use_left, left, nearest)]


def linear_family(
    problem: CorrectionProblem, f_top: np.ndarray, gammas: tuple[float, ...], a_top: np.ndarray | None = None
) -> dict[float, np.ndarray]:
    """F̂ of the linear family for many metrics and γ at once, shape (n, J) per γ.

    .. math:: \\hat F = C^{-1/2} Q\\,\\mathrm{diag}\\big(1/((1-γ)λ + γ)\\big) Q^\\top C^{-1/2} A^\\top D B

    Same solution as :meth:`CorrectionProblem.solve` (its eigendecomposition
    of S = C^{-1/2} A^T D A C^{-1/2}, its γ = 0 cutoff n·eps·max λ and its
    nearest-rank fill), with the right-hand sides of all J metrics in one
    product. ``f_top`` (k_max, J) holds F on ranks 1..k_max and must vanish
    beyond, so A^T D B = A_top^T (π_top ⊙ F_top) with A_top = P(r | R ≤ k_max).

    Parameters
    ----------
    problem : CorrectionProblem
    f_top : ndarray, shape (k_max, J), k_max <= N
    gammas : tuple of float in [0, 1]
    a_top : ndarray (k_max, n), optional
        P(r|R) for R = 1..k_max (computed if omitted).
    """
    scheme = problem.scheme
    k_max = f_top.shape[0]
    if a_top is None:
        a_top = np.exp(log_conditional_rank_probabilities(scheme.n_items, scheme.n, replace=scheme.replace,
                                                          ranks=np.arange(1, k_max + 1)))
    c = problem.c
    support = np.flatnonzero(c > 1e-200 * c.max())
    sc = np.sqrt(c[support])
    s = problem.gram[np.ix_(support, support)] / np.outer(sc, sc)
    lam, q = np.linalg.eigh((s + s.T) / 2)
    lam = np.clip(lam, 0.0, None)
    rhs = a_top.T @ (problem.prior[:k_max, None] * f_top)
    y = q.T @ (rhs[support] / sc[:, None])
    out = {}
    for g in gammas:
        if g == 0:
            rcond = scheme.n * np.finfo(float).eps if problem.rcond is None else problem.rcond
            keep = lam > rcond * max(float(lam.max()), 1e-300)
            phi = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
        else:
            phi = 1.0 / ((1.0 - g) * lam + g)
        out[g] = _fill((q @ (phi[:, None] * y)) / sc[:, None], support, scheme.n)
    return out


def _interp_rows(ks: np.ndarray, f: np.ndarray, shr: np.ndarray) -> np.ndarray:
    return np.interp(ks, np.r_[0.0, f], np.r_[0.0, shr])


def _binomial_pmf_grid(theta: np.ndarray, n: int) -> np.ndarray:
    """P(r = k + 1) = Bin(k; n - 1, θ) for k = 0..n-1, rows = θ (exact at θ ∈ {0, 1})."""
    from scipy.special import gammaln

    m = n - 1
    k = np.arange(n, dtype=np.float64)
    logc = gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0)
    t = theta[:, None]
    return np.exp(logc[None, :] + xlogy(k[None, :], t) + xlog1py(m - k[None, :], -t))


def expected_sampled_metrics(
    ranks: RecommenderRanks, metrics: list[RankMetric], sizes: tuple[int, ...]
) -> np.ndarray:
    """E[naive sampled metric] under uniform sampling with replacement, for each n in ``sizes``.

    .. math:: E\\Big[\\frac1M \\sum_u F(r_u)\\Big] = \\frac1M \\sum_u \\sum_{k=0}^{n-1}
              \\binom{n-1}{k} θ_u^k (1-θ_u)^{n-1-k} F(k+1),\\quad θ_u = \\frac{R_u - 1}{N_u - 1}

    exactly (K&R Figure 6: the sampled metric as a function of the sample
    size; with n = N_u it is the exact metric). Computed on the distinct θ_u.

    Returns
    -------
    ndarray, shape (len(sizes), len(metrics))
    """
    theta, counts = np.unique((ranks.ranks - 1) / (ranks.n_candidates - 1.0), return_counts=True)
    out = np.empty((len(sizes), len(metrics)))
    for i, n in enumerate(sizes):
        n = check_int("sizes", n, low=2)
        table = metric_table(metrics, n)
        acc = np.zeros(len(metrics))
        step = max(1, (1 << 21) // n)
        for t0 in range(0, theta.size, step):
            p = _binomial_pmf_grid(theta[t0 : t0 + step], n)
            acc += counts[t0 : t0 + step] @ (p @ table)
        out[i] = acc / ranks.n_users
    return out


def run_stress(
    ranks: RecommenderRanks,
    scheme: str,
    n: int,
    config: StressConfig | None = None,
    rng: RNGLike = None,
) -> StressResult:
    """Repeat sampled evaluation of one recommender and run every estimator.

    Parameters
    ----------
    ranks : RecommenderRanks
        Global ranks of the held-out items (and, in simulations, the truth's).
    scheme : {"binomial", "hypergeometric", "popularity", "adaptive"}
        See the module docstring.
    n : int
        Sample-set size (held-out item + n − 1 negatives), 2 <= n <= N; the
        initial size n0 for ``adaptive``.
    config : StressConfig, optional
    rng : Generator or seed

    Returns
    -------
    StressResult
    """
    config = StressConfig() if config is None else config
    if not isinstance(config, StressConfig):
        raise TypeError(f"`config` must be a StressConfig; got {type(config).__name__}")
    if not isinstance(ranks, RecommenderRanks):
        raise TypeError(f"`ranks` must be a RecommenderRanks; got {type(ranks).__name__}")
    check_choice("scheme", scheme, SCHEMES)
    N = estimator_items(ranks)
    n = check_int("n", n, low=2, high=N)
    if config.k_max > N:
        raise ValueError(f"`k_max` must be <= N = {N} (the estimators' catalogue size); got {config.k_max}")
    if scheme == "hypergeometric" and n > ranks.n_candidates.min():
        raise ValueError(f"`n` = {n} exceeds the smallest candidate set ({int(ranks.n_candidates.min())}) of "
                         f"{ranks.name!r}; sampling without replacement is impossible")
    if scheme == "popularity" and ranks.popularity_shares is None:
        raise ValueError(f"scheme 'popularity' needs popularity shares; {ranks.name!r} has none")
    n_max = min(config.adaptive_n_max, N)
    if scheme == "adaptive" and n > n_max:
        raise ValueError(f"`n` = {n} (n0) must be <= adaptive_n_max = {n_max}")
    gen = as_generator(rng)
    t0 = time.perf_counter()
    metrics = config.rank_metrics()
    families = tuple(m for m in config.metrics for _ in range(config.k_max))
    ks = np.tile(np.arange(1, config.k_max + 1), len(config.metrics))
    f_top = metric_table(metrics, config.k_max)
    exact = metric_values(ranks.ranks, f_top).mean(axis=0)
    true = true_metric_values(ranks, f_top) if ranks.has_truth else None
    names = estimator_names(config, scheme)
    col = {e: i for i, e in enumerate(names)}
    M = ranks.n_users
    est = np.full((config.repeats, len(names), len(metrics)), np.nan)

    with single_threaded_blas():
        if scheme == "adaptive":
            total = 0.0
            for rep in range(config.repeats):
                r, sizes = _sample_adaptive(ranks, n, n_max, gen)
                total += sizes.mean()
                pi = mle_adaptive(r, sizes, N, max_iter=config.max_iter).probabilities
                est[rep, 0] = pi[: config.k_max] @ f_top
            return StressResult(ranks.name, scheme, n, N, M, families, ks, names, exact, est, true,
                                mean_sample_size=total / config.repeats, seconds=time.perf_counter() - t0)

        sch = SamplingScheme.cached(N, n, replace=scheme != "hypergeometric")
        a_top = np.exp(log_conditional_rank_probabilities(N, n, replace=sch.replace,
                                                          ranks=np.arange(1, config.k_max + 1)))
        want = set(config.estimators)
        fixed: dict[str, np.ndarray] = {}  # name -> F̂ (n, J), applied to the histogram
        if "naive" in want:
            fixed["naive"] = metric_table(metrics, n)
        if "rank_estimate" in want:
            fixed["rank_estimate"] = np.column_stack([rank_estimate(m, sch).values for m in metrics])
        if "CLS" in want:
            fixed["CLS"] = np.column_stack([constrained_least_squares(m, sch).values for m in metrics])
        gam = ([0.0] if "LS" in want else []) + (list(config.bv_gammas) if "BV" in want else [])
        if gam:
            sol = linear_family(CorrectionProblem.from_prior(sch, None), f_top, tuple(gam), a_top)
            if "LS" in want:
                fixed["LS"] = sol[0.0]
            if "BV" in want:
                fixed.update({f"BV(gamma={g:g})": sol[g] for g in config.bv_gammas})
        recall_cols = np.flatnonzero(np.asarray(families) == "recall")
        maps = {"linear": linear_mapping(N, n).values, "bound": bound_mapping(N, n).values}
        wmle_w = decay_weights(ndcg(), n, config.wmle_scale) if "WMLE" in want else None
        hist_sum = np.zeros(n)
        beta_a: list[float] = []
        for rep in range(config.repeats):
            r = sample_ranks(ranks, scheme, n, gen)
            h = np.bincount(r - 1, minlength=n).astype(np.float64)
            hist_sum += h
            p = h / M
            for name, fh in fixed.items():
                est[rep, col[name]] = p @ fh
            for dist_name, prior_names in (("MLE", ("MN_MLE", "BV_MLE")), ("MES", ("MN_MES", "BV_MES"))):
                if dist_name not in want and not (want & set(prior_names)):
                    continue
                d = mle(r, sch, max_iter=config.max_iter) if dist_name == "MLE" else mes(r, sch, eta=config.mes_eta)
                if dist_name in want:
                    est[rep, col[dist_name]] = d.probabilities[: config.k_max] @ f_top
                g_list = ([1.0 / M] if prior_names[0] in want else []) + (
                    list(config.bv_gammas) if prior_names[1] in want else [])
                if g_list:
                    prob = CorrectionProblem(sch, d.probabilities, prior_name=dist_name)
                    sol = linear_family(prob, f_top, tuple(g_list), a_top)
                    if prior_names[0] in want:
                        est[rep, col[prior_names[0]]] = p @ sol[1.0 / M]
                    if prior_names[1] in want:
                        for g in config.bv_gammas:
                            est[rep, col[f"{prior_names[1]}(gamma={g:g})"]] = p @ sol[g]
            if "WMLE" in want:
                d = weighted_mle(r, sch, wmle_w, max_iter=config.max_iter)
                est[rep, col["WMLE"]] = d.probabilities[: config.k_max] @ f_top
            if "mapping" in want and recall_cols.size:
                shr = np.cumsum(h) / M
                kr = ks[recall_cols].astype(np.float64)
                for mname in ("linear", "bound"):
                    est[rep, col[f"mapping:{mname}"], recall_cols] = _interp_rows(kr, maps[mname], shr)
                try:
                    fit = fit_beta_mapping(r, N, n)
                except ValueError:  # every sampled rank is n: a diverges; the estimate is undefined (NaN)
                    continue
                beta_a.append(float(fit.a))
                est[rep, col["mapping:beta@P"], recall_cols] = _interp_rows(kr, fit.values, shr)
        if beta_a:
            maps["beta@P"] = beta_mapping(N, n, float(np.mean(beta_a))).values
    sorted_r = np.sort(ranks.ranks)
    ghr = {k: np.searchsorted(sorted_r, np.floor(f), side="right") / M for k, f in maps.items()}
    return StressResult(
        ranks.name, scheme, n, N, M, families, ks, names, exact, est, true,
        shr=np.cumsum(hist_sum) / (M * config.repeats), mapping_values=maps, global_hr_at_f=ghr, mean_sample_size=float(n),
        seconds=time.perf_counter() - t0,
    )

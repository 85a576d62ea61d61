"""The shards of ``simrec stress``: a recommender's ranks and a stress cell's result as named arrays.

``DIR/ranks/<j>.npz`` holds recommender j's held-out ranks and the source's
sizes (:func:`ranks_arrays`); ``DIR/tasks/<j>__<scheme>__n<n>.npz`` one
(recommender, scheme, size) cell of the harness (:func:`result_arrays`).
Both are :data:`~simrec.shards.ARRAYS` shards (the identity record and the
digest are :class:`~simrec.shards.Shards`'); the arrays and their names are
the contract with existing run folders, which resume: a member added later is
optional when read (``n_unscored``).
"""

from __future__ import annotations

import json
import math
from typing import cast

import numpy as np

from simrec.stress.harness import StressResult
from simrec.stress.sources import RecommenderRanks

__all__ = ["ranks_arrays", "ranks_from_arrays", "result_arrays", "result_from_arrays"]


def ranks_arrays(r: RecommenderRanks, info: dict) -> dict[str, np.ndarray]:
    """Recommender ``r``'s ranks and the source's sizes ``info`` (JSON) as a shard's arrays."""
    arrays = {
        "info": np.array(json.dumps(info)),
        "name": np.array(r.name),
        "ranks": r.ranks,
        "n_candidates": r.n_candidates,
        "users": np.asarray(r.users).astype(str),
        "n_unscored": np.array(r.n_unscored),
    }
    for key in ("popularity_shares", "true_ranks", "true_users"):
        val = getattr(r, key)
        if val is not None:
            arrays[key] = val
    return arrays


def ranks_from_arrays(get: dict[str, np.ndarray]) -> tuple[RecommenderRanks, dict]:
    """Inverse of :func:`ranks_arrays`."""
    return RecommenderRanks(
        str(get["name"]),
        get["ranks"],
        get["n_candidates"],
        get["users"],
        popularity_shares=get.get("popularity_shares"),
        true_ranks=get.get("true_ranks"),
        true_users=get.get("true_users"),
        n_unscored=int(get.get("n_unscored", 0)),  # absent from shards of an older simrec
    ), json.loads(str(get["info"]))


def result_arrays(r: StressResult) -> dict[str, np.ndarray]:
    """A stress cell's result as a shard's arrays (optional parts only when present)."""
    arrays = {
        "recommender": np.array(r.recommender),
        "scheme": np.array(r.scheme),
        "n": np.array(r.n),
        "n_items": np.array(r.n_items),
        "n_users": np.array(r.n_users),
        "families": np.array(r.families),
        "ks": r.ks,
        "estimators": np.array(r.estimators),
        "exact": r.exact,
        "estimates": r.estimates,
        "mean_sample_size": np.array(r.mean_sample_size),
        "seconds": np.array(r.seconds),
        "mappings": np.array(list(r.mapping_values)),
    }
    if r.fitted_a is not None:
        arrays["fitted_a"] = r.fitted_a
    if r.n_iter is not None:
        arrays.update(n_iter=r.n_iter, converged=cast(np.ndarray, r.converged))  # set together
    if r.interval_kinds is not None:
        arrays["interval_kinds"] = np.array(r.interval_kinds)
    if r.lower is not None:
        arrays.update(lower=r.lower, upper=cast(np.ndarray, r.upper), confidence=np.array(r.confidence))  # set together
    if r.true is not None:
        arrays["true"] = r.true
    if r.shr is not None:
        arrays["shr"] = r.shr
    for k, v in r.mapping_values.items():
        arrays[f"map_{k}"] = v
        arrays[f"ghr_{k}"] = r.global_hr_at_f[k]
    return arrays


def result_from_arrays(g: dict[str, np.ndarray]) -> StressResult:
    """Inverse of :func:`result_arrays`."""
    maps = [str(m) for m in g["mappings"]]
    return StressResult(
        str(g["recommender"]),
        str(g["scheme"]),
        int(g["n"]),
        int(g["n_items"]),
        int(g["n_users"]),
        tuple(str(f) for f in g["families"]),
        g["ks"],
        tuple(str(e) for e in g["estimators"]),
        g["exact"],
        g["estimates"],
        g.get("true"),
        g.get("shr"),
        {m: g[f"map_{m}"] for m in maps},
        {m: g[f"ghr_{m}"] for m in maps},
        float(g["mean_sample_size"]),
        float(g["seconds"]),
        g.get("lower"),
        g.get("upper"),
        float(g["confidence"]) if "confidence" in g else math.nan,
        g.get("fitted_a"),
        n_iter=g.get("n_iter"),
        converged=g.get("converged"),
        interval_kinds=tuple(str(k) for k in g["interval_kinds"]) if "interval_kinds" in g else None,
    )

"""The probability that the observed ranking of the user's algorithms is the true one.

For each simulated evaluation (replicate r of a calibrated world w) and
metric, the algorithms are ordered by their metric against the observed test
items and by their metric against the true preferences; the evaluation
*agrees* when the two orders are the same. The probability is estimated by
the share of agreeing evaluations,

.. math:: \\hat p = \\frac{1}{|R \\times W|} \\sum_{r, w}
          \\mathbb 1\\{\\operatorname{rank}(M^{obs}_{r,w}) = \\operatorname{rank}(M^{true}_{r,w})\\},

with a Wilson interval (:func:`simrec.report.wilson_interval`; Wilson 1927),
pooled over the worlds and per world. It generalises the thesis's Table 3
(the share of replicates in which Oracle beats Popular; Tian 2019, §4.3) from
one pair to the whole ranking of the user's algorithms.

Decision (ties): orders are compared as rank vectors with ties sharing the
lowest rank, so an observed tie agrees only with a true tie; evaluations in
which a metric is undefined (NaN) for some algorithm are left out (``n``
counts the rest).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simrec.report import wilson_interval

__all__ = ["RANKING_COLUMNS", "ranking_agreement"]

RANKING_COLUMNS = ["metric", "source", "agree", "n", "probability", "lower", "upper", "true_order"]


def ranking_agreement(results: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Share of simulated evaluations whose observed ranking of the algorithms equals the true one.

    Parameters
    ----------
    results : DataFrame
        The run study's tidy results (:data:`simrec.experiment.RESULT_COLUMNS`)
        with at least two recommenders.
    level : float, default 0.95
        Level of the Wilson interval.

    Returns
    -------
    DataFrame
        :data:`RANKING_COLUMNS`, one row per metric x source (``"all
        worlds"``, then each world); ``true_order`` is the most frequent true
        order (best first, ``" > "``-separated).
    """
    recs = list(dict.fromkeys(results["recommender"]))
    wide = results.pivot_table(
        index=["metric", "world", "replicate"],
        columns=["truth", "recommender"],
        values="value",
        aggfunc="first",
        sort=False,
    )
    rows = []
    for metric in dict.fromkeys(results["metric"]):
        sub = wide.loc[metric]
        obs = sub["observed"].reindex(columns=recs).to_numpy(dtype=float)
        tru = sub["true"].reindex(columns=recs).to_numpy(dtype=float)
        ok = np.isfinite(obs).all(axis=1) & np.isfinite(tru).all(axis=1)
        # rank with ties at the lowest rank: rank_i = #{j : x_j > x_i}
        r_obs = (obs[:, None, :] > obs[:, :, None]).sum(axis=2)
        r_tru = (tru[:, None, :] > tru[:, :, None]).sum(axis=2)
        agree = (r_obs == r_tru).all(axis=1) & ok
        worlds = sub.index.get_level_values("world").to_numpy()
        orders = [" > ".join(recs[j] for j in np.argsort(-t, kind="stable")) for t in tru]
        for source in ["all worlds", *dict.fromkeys(worlds)]:
            sel = ok if source == "all worlds" else ok & (worlds == source)
            n, a = int(sel.sum()), int(agree[sel].sum())
            lo, hi = wilson_interval(np.array([a]), np.array([n]), level)
            common = pd.Series([o for o, s in zip(orders, sel) if s]).mode()
            rows.append(
                (
                    metric,
                    source,
                    a,
                    n,
                    a / n if n else np.nan,
                    float(lo[0]),
                    float(hi[0]),
                    common.iloc[0] if len(common) else "",
                )
            )
    return pd.DataFrame(rows, columns=RANKING_COLUMNS)

"""Total evaluation error of a published sampled number, decomposed (simulations only).

For a recommender, a metric F@K, a sampling scheme, a sample size and an
estimator, with T̂ the estimate (averaged over repeats), T_obs the exact
leave-one-out metric on the observed held-out items and T_true the true
metric (:func:`simrec.stress.harness.true_metric_values`):

.. math::

    \\underbrace{\\bar T̂ - T_{true}}_{\\text{total error}}
    = \\underbrace{\\bar T̂ - T_{obs}}_{\\text{sampling/estimator error}}
    + \\underbrace{T_{obs} - T_{true}}_{\\text{missing-data error}}

The first term is Krichene & Rendle's and Li's concern (sampled metrics and
their corrections), the second Tian's (thesis §4: observed test data is a
biased sample of the truth); their sum answers "how wrong is a published
sampled number, in total".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simrec.stress.harness import StressResult
from simrec.stress.tables import k_column
from simrec.stress.values import _nan_mean_sd

__all__ = ["DECOMPOSITION_COLUMNS", "decomposition_table"]

DECOMPOSITION_COLUMNS = [
    "recommender",
    "scheme",
    "n",
    "estimator",
    "metric",
    "k",
    "true",
    "exact_observed",
    "estimate",
    "estimate_sd",
    "sampling_error",
    "missing_data_error",
    "total_error",
]


def decomposition_table(results: Sequence[StressResult]) -> pd.DataFrame:
    """Sampling error, missing-data error and their sum, side by side, one row per cell.

    Results without a truth (real data, ranks files) are skipped; an empty
    frame with :data:`DECOMPOSITION_COLUMNS` is returned when none has one.
    ``estimate_sd`` is the sd of the estimate over repeats (the spread of the
    sampling error; the missing-data error is fixed given the data).
    """
    frames = []
    for res in results:
        if res.true is None:
            continue
        mean, sd, cnt = _nan_mean_sd(res.estimates)
        E, J = mean.shape
        exact = np.broadcast_to(res.exact, (E, J))
        true = np.broadcast_to(res.true, (E, J))
        frame = pd.DataFrame(
            {
                "recommender": res.recommender,
                "scheme": res.scheme,
                "n": res.n,
                "estimator": np.repeat(res.estimators, J),
                "metric": np.tile(res.families, E),
                "k": k_column(res.ks, E),
                "true": true.ravel(),
                "exact_observed": exact.ravel(),
                "estimate": mean.ravel(),
                "estimate_sd": sd.ravel(),
                "sampling_error": (mean - exact).ravel(),
                "missing_data_error": (exact - true).ravel(),
                "total_error": (mean - true).ravel(),
            }
        )
        frames.append(frame[cnt.ravel() > 0])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=DECOMPOSITION_COLUMNS)

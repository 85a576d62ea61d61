"""The result of a test of the mean paired difference (t, bootstrap, permutation): Cohen's d_z as effect size."""

from __future__ import annotations

import numpy as np

from simrec.significance._common import Paired, warn_undefined
from simrec.significance.effect_size import dz_values
from simrec.significance.result import PairedTestResult


def mean_test_result(
    p: Paired,
    test: str,
    statistic: np.ndarray,
    p_value: np.ndarray,
    ci: tuple[np.ndarray, np.ndarray] | None,
    confidence: float,
) -> PairedTestResult:
    """A :class:`PairedTestResult` whose direction is the mean difference's and effect size d_z.

    ``ci`` is the interval of the mean difference, or None for a test without
    one. d_z's warning covers the rows with at least two users (a row with
    fewer has the test's own warning).
    """
    mean = p.mean_difference()
    dz, dz_undefined = dz_values(p)
    warn_undefined("Cohen's d_z", dz_undefined & (p.n_valid >= 2), "zero variance of the differences", stacklevel=4)
    nan = np.full(mean.shape, np.nan)
    low, high = (nan, nan) if ci is None else ci
    return PairedTestResult(
        test=test,
        statistic=p.shaped(statistic),
        p_value=p.shaped(p_value),
        mean_difference=p.shaped(mean),
        sign=p.shaped(np.sign(mean)),
        effect_size=p.shaped(dz),
        effect_size_name="cohens_dz",
        ci_low=p.shaped(low),
        ci_high=p.shaped(high),
        ci_of="" if ci is None else "mean difference",
        confidence=confidence if ci is not None else float("nan"),
        n_used=p.shaped(p.n_valid),
    )

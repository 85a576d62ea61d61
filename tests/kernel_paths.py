"""Switch simrec's hot paths between their compiled kernels and their numpy code (for tests).

Each hot path of a replicate runs a numba kernel from a size threshold on, or
once numba is loaded, and its numpy code otherwise; the two give the same
outputs draw for draw. :func:`use_kernels` sets every threshold to 0
(kernels everywhere) or out of reach with numba looking unloaded (numpy
everywhere), so a test can compare the two on small data.
"""

from __future__ import annotations

import importlib
import sys

import pytest

#: (module, attribute) of every size threshold from which a hot path runs its compiled kernel.
KERNEL_THRESHOLDS = (
    ("simrec.interactions", "_COUNT_KERNEL_MIN"),
    ("simrec._subsets", "_KERNEL_MIN_DRAWS"),
    ("simrec._sampling", "_KERNEL_MIN_DRAWS"),
    ("simrec.preference.ibp", "_KERNEL_MIN_PAIRS"),
    ("simrec.experiment", "_KERNEL_MIN_PAIRS"),
    ("simrec.split", "_KERNEL_MIN_PAIRS"),
    ("simrec.observation.samplers", "_KERNEL_MIN_PAIRS"),
    ("simrec.recommenders._base", "_KERNEL_MIN_PAIRS"),
    ("simrec.recommenders._popular_lists", "_KERNEL_MIN_PAIRS"),
    ("simrec.recommenders._candidates", "_KERNEL_MIN_QUERIES"),
    ("simrec.metrics._common", "_KERNEL_MIN_ENTRIES"),
    ("simrec.metrics.lists", "_KERNEL_MIN_ENTRIES"),
)


def use_kernels(mp: pytest.MonkeyPatch, compiled: bool) -> None:
    """Every hot path compiled (``True``) or numpy (``False``: numba looks unloaded), until ``mp`` undoes it."""
    if compiled:
        import numba  # noqa: F401  (loaded before the kernels' modules)
    else:
        mp.delitem(sys.modules, "numba", raising=False)
    for module, name in KERNEL_THRESHOLDS:
        mod = importlib.import_module(module)
        assert hasattr(mod, name), f"{module}.{name}"  # a renamed threshold must be renamed here too
        mp.setattr(mod, name, 0 if compiled else 1 << 62)

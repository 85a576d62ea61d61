"""simrec: simulate recommender data with known ground truth and measure how
wrong offline evaluations are (missing-data error and sampled-metric error).

Subpackages: :mod:`simrec.preference` (true preferences), :mod:`simrec.observation`
(profile sizes and samplers), :mod:`simrec.split`, :mod:`simrec.recommenders`,
:mod:`simrec.metrics`, :mod:`simrec.experiment`, :mod:`simrec.datasets`,
:mod:`simrec.stats`, :mod:`simrec.calibration`, :mod:`simrec.sampling`,
:mod:`simrec.significance`.
The top level re-exports the common currency and the seed helpers only, so
``import simrec`` stays light (LensKit and PyTorch load on first use).
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._random import as_generator, spawn_seeds, task_seed
    from ._validation import DEFAULT_MAX_PAIRS, SizeLimitError
    from .interactions import Interactions

    __version__: str

__all__ = [
    "Interactions",
    "as_generator",
    "spawn_seeds",
    "task_seed",
    "DEFAULT_MAX_PAIRS",
    "SizeLimitError",
    "__version__",
]

# Lazy re-exports (PEP 562): ``import simrec`` (and so ``simrec --help``)
# loads no numpy, scipy or pandas; each name is imported on first access.
_LAZY = {
    "Interactions": "simrec.interactions",
    "as_generator": "simrec._random",
    "spawn_seeds": "simrec._random",
    "task_seed": "simrec._random",
    "DEFAULT_MAX_PAIRS": "simrec._validation",
    "SizeLimitError": "simrec._validation",
}


def __getattr__(name: str) -> object:
    if name == "__version__":
        from importlib import metadata

        try:
            value = metadata.version("simrec")
        except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
            value = "0+unknown"
    elif name in _LAZY:
        value = getattr(_import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'simrec' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

"""simrec: simulate recommender data with known ground truth and measure how
wrong offline evaluations are (missing-data error and sampled-metric error).

Subpackages: :mod:`simrec.preference` (true preferences), :mod:`simrec.observation`
(profile sizes and samplers), :mod:`simrec.split`, :mod:`simrec.recommenders`,
:mod:`simrec.metrics`, :mod:`simrec.experiment`, :mod:`simrec.datasets`,
:mod:`simrec.stats`, :mod:`simrec.calibration`, :mod:`simrec.sampling`.
The top level re-exports the common currency and the seed helpers only, so
``import simrec`` stays light (LensKit and PyTorch load on first use).
"""

from importlib import metadata as _metadata

from ._random import as_generator, spawn_seeds, task_seed
from ._validation import DEFAULT_MAX_PAIRS, SizeLimitError
from .interactions import Interactions

try:
    __version__ = _metadata.version("simrec")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = ["Interactions", "as_generator", "spawn_seeds", "task_seed", "DEFAULT_MAX_PAIRS", "SizeLimitError", "__version__"]

"""True-preference generators (Tian's thesis §3.1; docs/design.md §1; issue 24's latent-factor worlds).

Each model is a frozen, validated dataclass with ``expected_pairs()``,
``expected_items()`` and ``generate(rng, *, max_pairs=None) -> Interactions``
(the :class:`PreferenceModel` protocol).
"""

from simrec.preference._base import PreferenceModel
from simrec.preference.clustered import ClusteredFactor
from simrec.preference.factor import LatentFactor
from simrec.preference.hpf import HPF
from simrec.preference.ibp import IBP
from simrec.preference.lda import LDA
from simrec.preference.uniform import Uniform, truncated_poisson_pmf

__all__ = [
    "PreferenceModel",
    "Uniform",
    "IBP",
    "LDA",
    "HPF",
    "LatentFactor",
    "ClusteredFactor",
    "truncated_poisson_pmf",
]

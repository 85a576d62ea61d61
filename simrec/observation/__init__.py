"""Observation: profile sizes and samplers, truth -> observed (Tian's thesis §3.2; docs/design.md §2)."""

from simrec.observation.profile import TruncatedBetaBinomial, TruncatedPareto
from simrec.observation.samplers import Observed, PopularitySampler, UniformSampler, observe

__all__ = [
    "TruncatedPareto",
    "TruncatedBetaBinomial",
    "UniformSampler",
    "PopularitySampler",
    "Observed",
    "observe",
]

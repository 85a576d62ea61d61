"""Observation: profile sizes, samplers and ratings, truth -> observed (Tian's thesis §3.2; docs/design.md §2)."""

from simrec.observation.preference_sampler import PreferenceSampler
from simrec.observation.profile import TruncatedBetaBinomial, TruncatedPareto
from simrec.observation.ratings import Rated, Ratings, observed_preference
from simrec.observation.samplers import Observed, PopularitySampler, UniformSampler, observe

__all__ = [
    "TruncatedPareto",
    "TruncatedBetaBinomial",
    "UniformSampler",
    "PopularitySampler",
    "PreferenceSampler",
    "Ratings",
    "Rated",
    "observed_preference",
    "Observed",
    "observe",
]

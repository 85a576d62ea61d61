"""The simulation models simrec knows: one :class:`~simrec.config.union.SpecUnion` per kind of model.

These unions are the registry: a world's ``preference``, ``profile`` and
``sampler`` tables validate against them, calibration cells and sweep files
name their tags, and their order is simrec's fixed order (calibration seeds
index the preference models and samplers by it: append a new model, never
insert one). Adding a model is one new file (its spec, the subclass of the
kind's base spec) plus one entry here (``docs/design.md``, "Adding a model").
"""

from __future__ import annotations

from typing import Annotated

from simrec.config.models.base import BasePreferenceSpec, BaseProfileSpec, BaseSamplerSpec
from simrec.config.models.clustered import ClusteredFactorSpec
from simrec.config.models.factor import LatentFactorSpec
from simrec.config.models.hpf import HPFSpec
from simrec.config.models.ibp import IBPSpec
from simrec.config.models.lda import LDASpec
from simrec.config.models.preference_sampler import PreferenceSamplerSpec
from simrec.config.models.profiles import BetaBinomialSpec, ParetoSpec
from simrec.config.models.samplers import PopularitySamplerSpec, UniformSamplerSpec
from simrec.config.models.uniform import UniformSpec
from simrec.config.union import SpecUnion, TagOf

__all__ = [
    "THESIS_PREFERENCES",
    "THESIS_SAMPLERS",
    "PREFERENCE_MODELS",
    "PROFILE_MODELS",
    "SAMPLER_MODELS",
    "PreferenceSpec",
    "ProfileSpec",
    "SamplerSpec",
    "PreferenceTag",
    "SamplerTag",
]

#: Preference models by their ``model`` tag: uniform, ibp, lda (the thesis's), hpf, factor, clustered (issue 24).
PREFERENCE_MODELS: SpecUnion[BasePreferenceSpec] = SpecUnion(
    "model", UniformSpec, IBPSpec, LDASpec, HPFSpec, LatentFactorSpec, ClusteredFactorSpec
)
#: The thesis's preference models and samplers (§3.1-3.2, its six cells): what calibration sweeps and
#: assessments use when told nothing else, so that a model registered later (issue 24's latent-factor truths,
#: the preference-driven sampler) changes no existing sweep or assessment.
THESIS_PREFERENCES: tuple[str, ...] = ("uniform", "ibp", "lda")
THESIS_SAMPLERS: tuple[str, ...] = ("uniform", "popularity")
#: Profile-size models by their ``model`` tag: pareto, beta_binomial.
PROFILE_MODELS: SpecUnion[BaseProfileSpec] = SpecUnion("model", ParetoSpec, BetaBinomialSpec)
#: Observation samplers by their ``model`` tag (a bare tag is the sampler at its defaults): uniform, popularity
#: (the thesis's), preference (issue 24).
SAMPLER_MODELS: SpecUnion[BaseSamplerSpec] = SpecUnion(
    "model", UniformSamplerSpec, PopularitySamplerSpec, PreferenceSamplerSpec, shorthand=True
)


#: A ``preference`` table (the type of a field holding one).
PreferenceSpec = Annotated[BasePreferenceSpec, PREFERENCE_MODELS]
#: A ``profile`` table.
ProfileSpec = Annotated[BaseProfileSpec, PROFILE_MODELS]
#: A ``sampler`` (a bare tag or a table).
SamplerSpec = Annotated[BaseSamplerSpec, SAMPLER_MODELS]
#: The tag of a preference model (a calibration cell's, a sweep file's ``preferences``).
PreferenceTag = Annotated[str, TagOf(PREFERENCE_MODELS)]
#: The tag of a sampler.
SamplerTag = Annotated[str, TagOf(SAMPLER_MODELS)]

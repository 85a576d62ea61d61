"""Specs of the simulation models: preference, profile sizes, observation, world.

Each spec is the TOML table of one model (``preference = { model = "ibp",
alpha = 60.0, c = 5.0, sigma = 0.6 }``), validates itself, builds its library
object (``IBPSpec.build(population) -> IBP``) and answers for its model
everything the rest of simrec asks (:mod:`~simrec.config.models.base`): the
item count, the rules that need more than one key, its share of a job's
memory and, for calibration, its search space on a reference dataset
(``search_space(ref)``) and the spec at a point of it (``from_point(point,
ref)``). The unions of :mod:`~simrec.config.models.registry` list the models;
adding one is a new file plus one entry there (``docs/design.md``, "Adding a
model").

Search spaces (Tian 2019, Table 2, derived from the reference data; shapes as
in the thesis, ranges as documented in :mod:`simrec.calibration.space`):

============  =====================================  =====================================
parameter     thesis Table 2                          simrec (reference with U users, I items,
                                                      profile sizes min s_lo, mean s̄, max s_hi)
============  =====================================  =====================================
Unif λ        (5, 2000)                               (s̄/2, min(I, 20 s̄)), log scale
IBP α         (10..20, 500..1000)                     (I/500, I/2) log scale
IBP c         (0.01, 100)                             (0.01, 100), log scale
IBP σ         (0, 0.99)                               (0, 0.99)
LDA K         (5, 200)                                (5, 200), integer
LDA λ         (5, 2000)                               as Unif λ
LDA a, b      (0.01, 1)                               (0.01, 1), log scale
Pareto m_low  ±20% of the smallest profile            (0.8 s_lo, 1.2 s_lo), at least 1
Pareto m_high ±20% of the largest profile             (0.8 s_hi, 1.2 s_hi), above m_low's range
Pareto α      (0.1, 20)                               (0.1, 20), log scale
============  =====================================  =====================================

The issue-24 models (no thesis range; spaces derived from the reference, ρ
its density = s̄/I, σ_s the log-sd of its profile sizes): HPF K in [5, 100]
(integer), a, c in [0.05, 3] and a', c' in [0.3, 10] (log), d' = 1 and b'
solved from the truth density searched in [ρ, min(0.5, 20ρ)] (log);
LatentFactor K in [2, 50] (integer), signal and pop_exponent in [0, 4], λ as
Unif λ, activity_sd in [0.5 σ_s, 2 σ_s]; ClusteredFactor the same, its G in
[2, 100] (integer, log scale) and cluster_signal in [0, 4]; the preference
sampler's a in [-0.5, 3], b in [0, 4], dislike_rate in [0, 1]; ratings' κ
in [0.2, 5] (log) and σ in [0, 2], their scale and ``min_rating`` the
dataset's.

The Pareto α is searched as ``pareto_alpha`` (IBP has an ``alpha`` too).
"""

from simrec.config.models.base import (
    BasePreferenceSpec,
    BaseProfileSpec,
    BaseSamplerSpec,
    PopulationSpec,
    Sizes,
)
from simrec.config.models.clustered import ClusteredFactorSpec
from simrec.config.models.factor import LatentFactorSpec
from simrec.config.models.hpf import HPFSpec
from simrec.config.models.ibp import IBPSpec
from simrec.config.models.lda import LDASpec
from simrec.config.models.preference_sampler import PreferenceSamplerSpec
from simrec.config.models.profiles import BetaBinomialSpec, ParetoSpec
from simrec.config.models.ratings import RatingsSpec
from simrec.config.models.registry import (
    PREFERENCE_MODELS,
    PROFILE_MODELS,
    SAMPLER_MODELS,
    THESIS_PREFERENCES,
    THESIS_SAMPLERS,
    PreferenceSpec,
    PreferenceTag,
    ProfileSpec,
    SamplerSpec,
    SamplerTag,
)
from simrec.config.models.samplers import PopularitySamplerSpec, UniformSamplerSpec
from simrec.config.models.uniform import UniformSpec
from simrec.config.models.world import CellSpec, ObservationSpec, WorldSpec, cell_name

#: Preference specs by their ``model`` tag, in simrec's fixed order (calibration seeds index it); a read-only view
#: of :data:`PREFERENCE_MODELS`.
PREFERENCE_SPECS = PREFERENCE_MODELS.by_tag

__all__ = [
    "Sizes",
    "PopulationSpec",
    "BasePreferenceSpec",
    "BaseProfileSpec",
    "BaseSamplerSpec",
    "UniformSpec",
    "IBPSpec",
    "LDASpec",
    "HPFSpec",
    "LatentFactorSpec",
    "ClusteredFactorSpec",
    "ParetoSpec",
    "BetaBinomialSpec",
    "UniformSamplerSpec",
    "PopularitySamplerSpec",
    "PreferenceSamplerSpec",
    "RatingsSpec",
    "PREFERENCE_MODELS",
    "THESIS_PREFERENCES",
    "THESIS_SAMPLERS",
    "PROFILE_MODELS",
    "SAMPLER_MODELS",
    "PREFERENCE_SPECS",
    "PreferenceSpec",
    "ProfileSpec",
    "SamplerSpec",
    "PreferenceTag",
    "SamplerTag",
    "ObservationSpec",
    "WorldSpec",
    "CellSpec",
    "cell_name",
]

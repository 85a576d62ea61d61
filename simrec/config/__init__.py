"""The config layer: one typed, self-validating spec per concept.

Scenario, stress and sweep files are thin schemas over these specs; each spec
validates itself, builds its library object (``IBPSpec.build(population) ->
IBP``) and answers for its model what the rest of simrec asks (item count,
rules, memory, search space). The specs of one kind form a tagged union that
is also the registry of that kind (:class:`~simrec.config.union.SpecUnion`:
``simrec.config.models.PREFERENCE_MODELS``, ``PROFILE_MODELS``,
``SAMPLER_MODELS``, ``simrec.config.recommenders.RECOMMENDERS``,
``simrec.config.sources.SOURCES``). Library code never receives a config dict:
the command line parses a file into specs, and the specs hand typed objects to
the library.
"""

from simrec.config.base import ScenarioError, Strict, format_validation, no_repeats, problems_error, read_toml

__all__ = ["ScenarioError", "Strict", "format_validation", "no_repeats", "problems_error", "read_toml"]

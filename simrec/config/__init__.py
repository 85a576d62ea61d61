"""The config layer: one typed, self-validating spec per concept.

Scenario, stress and sweep files are thin schemas over these specs; each spec
validates itself and builds its library object (``IBPSpec.build(n_users) ->
IBP``). Library code never receives a config dict: the command line parses a
file into specs, and the specs hand typed objects to the library.
"""

from simrec.config.base import ScenarioError, Strict, format_validation, no_repeats, problems_error, read_toml

__all__ = ["ScenarioError", "Strict", "format_validation", "no_repeats", "problems_error", "read_toml"]

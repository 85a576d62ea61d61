"""Sweep spec files (TOML) for ``simrec calibrate``, validated before any work.

Example (``calibration/ml-100k.toml``):

.. code-block:: toml

    name = "ml-100k"
    seed = 2019
    n_calls = 150
    n_initial = 25
    preferences = ["uniform", "ibp", "lda"]
    observations = ["uniform", "popularity"]
    objectives = ["item_popularity", "user_activity", "item_similarity", "user_similarity", "average_loss"]

    [[dataset]]
    name = "ml-100k"
    path = "../../shared/data/ml-100k"   # relative to this file
    kind = "movielens"

Relative dataset paths are resolved against the spec file's folder; the
``SIMREC_DATA`` environment variable, when set, is tried first as a folder
holding ``<dataset name>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..scenario import ScenarioError, _format_validation, no_repeats, read_toml

__all__ = ["SweepSpec", "DatasetRef", "load_sweep_spec"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetRef(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    path: str
    kind: Literal["movielens", "amazon", "steam", "pairs"] | None = None
    min_rating: float | None = None
    k_core: int | None = Field(default=None, ge=1)


class SweepSpec(_Strict):
    name: str
    description: str = ""
    seed: int = Field(ge=0)
    n_calls: int = Field(default=150, ge=1)
    n_initial: int = Field(default=25, ge=1)
    preferences: list[Literal["uniform", "ibp", "lda"]] = Field(default_factory=lambda: ["uniform", "ibp", "lda"], min_length=1)
    observations: list[Literal["uniform", "popularity"]] = Field(default_factory=lambda: ["uniform", "popularity"], min_length=1)
    objectives: list[Literal["item_popularity", "user_activity", "item_similarity", "user_similarity", "average_loss"]] = Field(
        default_factory=lambda: ["item_popularity", "user_activity", "item_similarity", "user_similarity", "average_loss"],
        min_length=1,
    )
    max_pairs: int | None = Field(default=None, ge=1)
    stat_pairs: int = Field(default=1_000_000, ge=1)
    dataset: list[DatasetRef] = Field(min_length=1)

    @model_validator(mode="after")
    def _checks(self) -> SweepSpec:
        if self.n_initial > self.n_calls:
            raise ValueError(f"`n_initial` ({self.n_initial}) must not exceed `n_calls` ({self.n_calls})")
        no_repeats(self, "preferences", "observations", "objectives")
        names = [d.name for d in self.dataset]
        if len(set(names)) != len(names):
            raise ValueError(f"dataset names must be unique; got {names}")
        return self

    def dataset_path(self, ref: DatasetRef, spec_path: Path) -> Path:
        env = os.environ.get("SIMREC_DATA")
        if env and (Path(env) / ref.name).exists():
            return Path(env) / ref.name
        p = Path(ref.path).expanduser()
        return p if p.is_absolute() else (spec_path.parent / p).resolve()


def load_sweep_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep spec; raise ScenarioError naming file and keys."""
    path = Path(path)
    raw = read_toml(path)
    try:
        spec = SweepSpec.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(_format_validation(path, exc).replace("invalid scenario", "invalid sweep spec")) from None
    missing = [f"dataset[{i}].path: {spec.dataset_path(d, path)} does not exist"
               for i, d in enumerate(spec.dataset) if not spec.dataset_path(d, path).exists()]
    if missing:
        raise ScenarioError(f"{path}: invalid sweep spec:\n" + "\n".join(f"  {m}" for m in missing))
    return spec

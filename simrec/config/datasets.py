"""The spec of a reference dataset named in a stress scenario or a sweep spec.

.. code-block:: toml

    [[dataset]]                           # sweep spec; a stress source has the same keys
    name = "ml-100k"
    path = "../../shared/data/ml-100k"    # relative to the file naming it (symlinks followed)
    format = "movielens"                  # optional: detected when absent (`kind` is accepted too)
    min_rating = 4                        # optional: keep ratings >= this
    k_core = 5                            # optional: iterate to a k-core

Decision: ``$SIMREC_DATA/<name>``, when it exists, wins over ``path``, so a
shipped file works on any machine once ``SIMREC_DATA`` points at the data.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field

from simrec.config.base import Strict
from simrec.interactions import Interactions

__all__ = ["DatasetSpec", "DATASET_FORMATS"]

DATASET_FORMATS: tuple[str, ...] = ("movielens", "amazon", "steam", "pairs")


class DatasetSpec(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    path: str
    format: Literal["movielens", "amazon", "steam", "pairs"] | None = Field(
        default=None, validation_alias=AliasChoices("format", "kind"))
    min_rating: float | None = None
    k_core: int | None = Field(default=None, ge=1)

    def resolve(self, spec_path: str | Path) -> Path:
        """Where the data is: ``$SIMREC_DATA/<name>`` if it exists, else ``path``
        (relative paths against the folder of ``spec_path``, symlinks followed)."""
        env = os.environ.get("SIMREC_DATA")
        if env and (Path(env) / self.name).exists():
            return Path(env) / self.name
        p = Path(self.path).expanduser()
        return p if p.is_absolute() else (Path(spec_path).resolve().parent / p).resolve()

    def read(self, data: str | Path) -> Interactions:
        """The interactions at ``data`` (see :meth:`resolve`), filtered by ``min_rating``,
        then reduced to the ``k_core``.

        Raises
        ------
        simrec.datasets.DatasetError
            Unknown layout or unreadable data.
        TypeError
            ``min_rating`` given for a layout whose loader does not take it.
        """
        from simrec.datasets import k_core, load_dataset

        options = {} if self.min_rating is None else {"min_rating": self.min_rating}
        inter = load_dataset(data, kind=self.format, **options)
        return k_core(inter, self.k_core) if self.k_core else inter

"""The spec of a reference dataset named in a stress scenario or a sweep spec.

.. code-block:: toml

    [[dataset]]                           # sweep spec; a stress source has the same keys
    name = "ml-100k"
    path = "../../shared/data/ml-100k"    # relative to the file naming it (symlinks followed)
    format = "movielens"                  # optional: detected when absent (`kind` is accepted too)
    min_rating = 4                        # optional: keep ratings >= this
    k_core = 5                            # optional: iterate to a k-core
    user_col = "userId"                   # optional, CSV/Parquet tables: column names (default user, item)
    item_col = "itemId"
    rating_col = "rating"                 # optional, CSV/Parquet tables: needed by min_rating
    sep = ";"                             # optional, CSV tables: field separator (default detected)

Decision: ``$SIMREC_DATA/<name>``, when it exists, wins over ``path``, so a
shipped file works on any machine once ``SIMREC_DATA`` points at the data.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field

from simrec._validation import quote
from simrec.config.base import SafeName, ScenarioError, Strict
from simrec.interactions import Interactions

__all__ = ["DatasetSpec", "DATASET_FORMATS"]

DATASET_FORMATS: tuple[str, ...] = ("movielens", "amazon", "steam", "pairs")


class DatasetSpec(Strict):
    name: SafeName
    path: str
    format: Literal["movielens", "amazon", "steam", "pairs"] | None = Field(
        default=None, validation_alias=AliasChoices("format", "kind")
    )
    min_rating: float | None = None
    k_core: int | None = Field(default=None, ge=1)
    user_col: str | None = Field(default=None, min_length=1)
    item_col: str | None = Field(default=None, min_length=1)
    rating_col: str | None = Field(default=None, min_length=1)
    sep: str | None = Field(default=None, min_length=1)

    @classmethod
    def from_options(cls, path: str | Path, kind: str | None = None, **options: Any) -> DatasetSpec:
        """The spec of a dataset named on the command line (``simrec datasets describe``); options left
        None keep their defaults; ScenarioError naming the option for a bad one."""
        from pydantic import ValidationError

        given = {k: v for k, v in options.items() if v is not None}
        if given.get("sep") == "\\t":
            given["sep"] = "\t"
        try:
            return cls(name="dataset", path=str(path), format=kind, **given)
        except ValidationError as exc:
            e = exc.errors()[0]
            key = str(e["loc"][0]).replace("_", "-") if e["loc"] else "option"
            raise ScenarioError(
                f"--{key}: {e['msg'].removeprefix('Value error, ')}; got {quote(e.get('input'))}"
            ) from None

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
            An option (``min_rating``, ``user_col``, ``item_col``, ``rating_col``, ``sep``)
            given for a layout whose loader does not take it.
        """
        from simrec.datasets import k_core, load_dataset

        inter = load_dataset(data, kind=self.format, **self._options())
        return k_core(inter, self.k_core) if self.k_core else inter

    def read_timestamped(self, data: str | Path) -> tuple[Interactions, Any]:
        """:meth:`read`, and each stored pair's latest timestamp (:func:`simrec.datasets.load_timestamped`).

        Raises
        ------
        simrec.datasets.DatasetError
            Unreadable data, or a layout without timestamps.
        """
        from simrec.datasets import k_core_pairs, keep_pairs, load_timestamped

        inter, times = load_timestamped(data, kind=self.format, **self._options())
        if not self.k_core:
            return inter, times
        keep = k_core_pairs(inter, self.k_core)
        return keep_pairs(inter, keep), times[keep]

    def _options(self) -> dict:
        return {
            k: getattr(self, k)
            for k in ("min_rating", "user_col", "item_col", "rating_col", "sep")
            if getattr(self, k) is not None
        }

"""Calibrated presets: the best point of a sweep cell as a small TOML file.

A preset ``<dataset>/<cell>`` (e.g. ``ml-100k/ibp-pop``) holds the tables a
scenario world needs (``preference``, ``observation``: the cell's
:class:`~simrec.config.models.WorldSpec` at the point) plus ``reference``
(the dataset's sizes) and ``fit`` (the KL divergences reached). Scenario files
reference it by name (``preset = "ml-100k/ibp-pop"``); presets that serve as
defaults ship inside the package under ``simrec/presets/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simrec._io import write_text
from simrec.calibration.space import ReferenceShape
from simrec.config.models import CellSpec

__all__ = ["preset_tables", "write_preset", "to_toml"]


def preset_tables(
    cell: CellSpec, point: dict[str, float], shape: ReferenceShape, dataset: str, fit: dict[str, float]
) -> dict[str, Any]:
    """The preset's tables for the best point of a cell's search (keys at their defaults left out)."""
    world = cell.world_spec(point, shape)
    ref = {"dataset": dataset, "n_users": shape.n_users, "n_items": shape.n_items}
    return {
        "reference": ref,
        "preference": world.preference.model_dump(exclude_defaults=True),
        "observation": world.observation.model_dump(exclude_defaults=True),
        "fit": fit,
    }


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return (
            repr(v)
            if v == v and v not in (float("inf"), float("-inf"))
            else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
        )
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def to_toml(tables: dict[str, Any], comment: str = "") -> str:
    """A minimal TOML writer for scalar keys and nested tables (no arrays of tables)."""
    lines = [f"# {line}" for line in comment.splitlines()] if comment else []

    def emit(prefix: str, table: dict[str, Any]) -> None:
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
        subs = {k: v for k, v in table.items() if isinstance(v, dict)}
        if prefix:
            lines.append("")
            lines.append(f"[{prefix}]")
        for k, v in scalars.items():
            lines.append(f"{k} = {_value(v)}")
        for k, v in subs.items():
            emit(f"{prefix}.{k}" if prefix else k, v)

    emit("", tables)
    return "\n".join(lines).lstrip("\n") + "\n"


def write_preset(path: str | Path, tables: dict[str, Any], comment: str = "") -> Path:
    """Write a preset file atomically."""
    return write_text(path, to_toml(tables, comment))

"""The calibrated worlds an assessment considers (:mod:`simrec.config.assess`): cells, presets, their fit.

``[calibration]`` names either a preset set (shipped by dataset, e.g.
``"ml-1m"``, or a folder of ``<cell>.toml`` files) or nothing (the cells are
calibrated first); ``calibration.cells`` names the worlds considered, by
default the thesis's six (:data:`CELLS`). This module turns those names into
:class:`CalibratedCell` objects, or into the problems found, keyed
``calibration.presets`` / ``calibration.cells``. Every name reaching the file
system is a safe name (checked where the spec is validated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simrec._validation import quote
from simrec.config.base import check_safe_name
from simrec.config.files import _presets_root, load_preset
from simrec.config.models import (
    PREFERENCE_MODELS,
    SAMPLER_MODELS,
    THESIS_PREFERENCES,
    THESIS_SAMPLERS,
    PopulationSpec,
    WorldSpec,
    cell_name,
)

__all__ = ["CELLS", "CalibratedCell", "cell_from_tables"]

#: The preference x observation cells (the six of the thesis), in the calibration's order.
CELLS: tuple[str, ...] = tuple(cell_name(p, o) for p in THESIS_PREFERENCES for o in THESIS_SAMPLERS)


@dataclass(frozen=True)
class CalibratedCell:
    """One calibrated model: its cell name, world spec, reference sizes and fit (lower ``loss`` = better)."""

    cell: str
    world: WorldSpec
    population: PopulationSpec
    fit: dict[str, float]

    @property
    def loss(self) -> float:
        """``fit.average_loss``, else the mean of the KL divergences, else +inf (see the module docstring)."""
        if math.isfinite(self.fit.get("average_loss", math.nan)):
            return float(self.fit["average_loss"])
        kls = [v for k, v in self.fit.items() if k.startswith("kl_") and math.isfinite(v)]
        return sum(kls) / len(kls) if kls else math.inf


def cell_from_tables(cell: str, tables: dict[str, Any], where: str) -> CalibratedCell:
    """A :class:`CalibratedCell` from a preset's TOML tables; ValueError naming ``where`` if malformed."""
    try:
        ref = tables["reference"]
        world = WorldSpec(name=cell, preference=tables["preference"], observation=tables["observation"])
        population = PopulationSpec(n_users=ref["n_users"], n_items=ref["n_items"])
    except KeyError as exc:
        raise ValueError(f"{where}: the preset lacks the table or key {exc.args[0]!r}") from None
    except (ValidationError, TypeError) as exc:
        raise ValueError(f"{where}: not a valid preset ({str(exc).splitlines()[0]})") from None
    fit = {k: float(v) for k, v in tables.get("fit", {}).items() if isinstance(v, (int, float))}
    return CalibratedCell(cell, world, population, fit)


def _known_cells() -> dict[str, tuple[str, str]]:
    """Every cell name of the registered models: ``"<preference>-<sampler>"`` -> (preference tag, sampler tag)."""
    return {cell_name(p, o): (p, o) for p in PREFERENCE_MODELS.tags for o in SAMPLER_MODELS.tags}


def _calibrated_cell_problems(names: tuple[str, ...]) -> list[str]:
    """The ``calibration.cells`` that a calibration cannot search (not a cell of registered models)."""
    known = _known_cells()
    return [
        f"calibration.cells: without presets the named cells are calibrated, so each must be "
        f"'<preference>-<sampler>' of registered models ({', '.join(known)}); got {quote(c)}"
        for c in names
        if c not in known
    ]


def _preset_cells(
    presets: str, path: Path, names: tuple[str, ...] = CELLS
) -> tuple[tuple[CalibratedCell, ...] | None, list[str]]:
    """The cells ``names`` (default the six) of the named presets, or the problems found (key
    ``calibration.presets``)."""
    key = "calibration.presets"
    folder = Path(presets).expanduser()
    folder = folder if folder.is_absolute() else (path.resolve().parent / folder)
    by_path = "/" in presets or "\\" in presets or folder.is_dir()
    cells, problems = [], []
    for cell in names:
        if by_path:
            f = folder / f"{cell}.toml"  # CELLS, or `cells` from the file: safe names (no separator), checked first
            if not folder.is_dir():
                return None, [
                    f"{key}: preset folder not found at {folder}; name a folder holding the six "
                    f"<cell>.toml files ({', '.join(CELLS)}) or a shipped preset set; got {quote(presets)}"
                ]
            if not f.is_file():
                problems.append(f"{key}: preset {cell}.toml not found in {folder}")
                continue
            try:
                tables = load_preset(str(f))  # checks it is a preset file (tables), as a world's preset path is
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
                continue
        else:
            try:
                check_safe_name(presets)
                tables = load_preset(f"{presets}/{cell}")
            except ValueError as exc:
                return None, [f"{key}: a shipped preset set's name {exc}; got {quote(presets)}"]
            except KeyError:
                root = _presets_root()
                shipped = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
                return None, [
                    f"{key}: no shipped presets named {quote(presets)} (shipped: {', '.join(shipped) or 'none'}) "
                    f"and no folder of that name beside the file; got {quote(presets)}"
                ]
        try:
            cells.append(cell_from_tables(cell, tables, f"{key} ({cell})"))
        except ValueError as exc:
            problems.append(str(exc))
    return (tuple(cells) if not problems else None), problems

"""Finding scenario files and presets: shipped by name, or given by path.

A scenario argument that is not an existing path names a scenario shipped in
the package (``simrec/scenarios/NAME.toml``), so ``simrec run quickstart``
works after a plain ``pip install``. A world's ``preset = "ml-100k/ibp-pop"``
names a calibrated preset shipped under ``simrec/presets/<dataset>/<cell>.toml``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from simrec.config.base import ScenarioError

__all__ = ["scenario_kind", "shipped_scenarios", "resolve_scenario_path", "load_preset", "merge_presets"]

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def scenario_kind(path: str | Path) -> str | None:
    """The top-level ``kind`` of a scenario file: ``"run"`` (the default) or
    ``"stress"``; None when the file cannot be read as TOML."""
    try:
        with open(path, "rb") as fh:
            return str(tomllib.load(fh).get("kind", "run"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None


def shipped_scenarios(kind: str | None = None) -> dict[str, Path]:
    """Scenarios shipped inside the package, by name (only those of ``kind`` when given)."""
    root = _PACKAGE_DIR / "scenarios"
    files = sorted(root.glob("*.toml")) if root.is_dir() else []
    return {p.stem: p for p in files if kind is None or scenario_kind(p) == kind}


def resolve_scenario_path(scenario: str | Path, kind: str | None = None) -> Path:
    """An existing path as is; otherwise the shipped scenario of that name (and ``kind``)."""
    p = Path(scenario)
    if p.exists():
        return p
    shipped = shipped_scenarios(kind)
    name = p.stem if p.suffix == ".toml" and len(p.parts) == 1 else str(scenario)
    if name in shipped:
        return shipped[name]
    other = shipped_scenarios().get(name)
    if other is not None:  # a shipped scenario of the other kind
        found = scenario_kind(other)
        command = "simrec stress" if found == "stress" else "simrec run"
        raise ScenarioError(f"{scenario}: this is a shipped {found} scenario; run it with `{command} {name}`")
    what = "shipped scenario" if kind is None else f"shipped {kind} scenario"
    raise ScenarioError(
        f"{scenario}: no such file, and no {what} of that name (shipped: {', '.join(sorted(shipped)) or 'none'})"
    )


def _presets_root() -> Path:
    return _PACKAGE_DIR / "presets"


def load_preset(name: str) -> dict[str, Any]:
    """The TOML tables of a calibrated preset shipped with the package.

    ``name`` is ``"<dataset>/<cell>"``, e.g. ``"ml-100k/ibp-pop"``; the file is
    ``simrec/presets/<dataset>/<cell>.toml`` with ``preference`` and
    ``observation`` tables (and the reference's ``n_users``/``n_items``).
    Only names of shipped files are accepted (the name never becomes any other path).

    Raises
    ------
    KeyError
        No shipped preset of that name; the message lists the available ones.
    """
    root = _presets_root()
    available = {f"{f.parent.name}/{f.stem}": f for f in root.glob("*/*.toml")} if root.is_dir() else {}
    if name not in available:
        raise KeyError(f"unknown preset {name!r}; available: {', '.join(sorted(available)) or 'none'}")
    with open(available[name], "rb") as fh:
        return tomllib.load(fh)


def merge_presets(worlds: Any, path: Path, where: str = "world") -> Any:
    """Fill the world tables that name a preset with the preset's tables (explicit keys win).

    ``worlds`` is the raw list of world tables (anything else is returned
    unchanged for the schema to report); ``where`` is their key path.
    """
    if not isinstance(worlds, list):
        return worlds
    merged = []
    for i, w in enumerate(worlds):
        if isinstance(w, dict) and isinstance(w.get("preset"), str):
            try:
                preset = load_preset(w["preset"])
            except KeyError as exc:
                raise ScenarioError(f"{path}: {where}[{i}].preset: {exc.args[0]}") from None
            w = {**w}
            for key in ("preference", "observation"):
                if key not in w and key in preset:
                    w[key] = preset[key]
        merged.append(w)
    return merged

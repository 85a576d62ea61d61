"""Finding scenario files and presets: shipped by name, or given by path.

A scenario argument that is not an existing path names a scenario shipped in
the package (``simrec/scenarios/NAME.toml``), so ``simrec run quickstart``
works after a plain ``pip install``. A world's ``preset = "ml-100k/ibp-pop"``
names a calibrated preset shipped under ``simrec/presets/<dataset>/<cell>.toml``;
``preset = "presets/my-data/ibp-pop.toml"`` (ending in ``.toml``) a preset
file, relative to the scenario file's folder.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from simrec._validation import quote
from simrec.config.base import ScenarioError, read_toml

__all__ = [
    "scenario_kind",
    "shipped_scenarios",
    "shipped_name",
    "resolve_scenario_path",
    "load_preset",
    "merge_presets",
    "PRESET_TABLES",
]

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


def shipped_name(argument: str | Path) -> str:
    """The shipped-file name a command-line argument means: ``quickstart`` for ``quickstart`` or ``quickstart.toml``."""
    p = Path(argument)
    return p.stem if p.suffix == ".toml" and len(p.parts) == 1 else str(argument)


def resolve_scenario_path(scenario: str | Path, kind: str | None = None) -> Path:
    """An existing path as is; otherwise the shipped scenario of that name (and ``kind``)."""
    if Path(scenario).exists():
        return Path(scenario)
    shipped = shipped_scenarios(kind)
    name = shipped_name(scenario)
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


#: Top-level tables of a preset file (``simrec calibrate`` writes them; ``preference`` and ``observation`` required).
PRESET_TABLES: tuple[str, ...] = ("reference", "preference", "observation", "fit")


def load_preset(name: str, base: str | Path | None = None) -> dict[str, Any]:
    """The TOML tables of a calibrated preset: shipped by name, or a preset file by path.

    ``name`` ending in ``.toml`` is a file path (``~`` expanded; relative
    paths against ``base``, the folder of the file naming it, else the
    current folder), e.g. a preset ``simrec calibrate --export-presets``
    wrote; any other ``name`` is ``"<dataset>/<cell>"``, e.g.
    ``"ml-100k/ibp-pop"``, a preset shipped in ``simrec/presets/`` (only names
    of shipped files are accepted: such a name never becomes any other path).

    A preset file must be UTF-8 TOML with a ``preference`` and an
    ``observation`` table and no top-level keys other than
    :data:`PRESET_TABLES` (the models' keys are validated with the world).

    Raises
    ------
    KeyError
        No shipped preset of that name; the message lists the available ones.
    ValueError
        A preset file that does not exist, cannot be read, is not TOML or is
        not a preset (e.g. a scenario file); the message names the file.
    """
    if name.endswith(".toml"):
        return _preset_file(name, base)
    root = _presets_root()
    available = {f"{f.parent.name}/{f.stem}": f for f in root.glob("*/*.toml")} if root.is_dir() else {}
    if name not in available:
        raise KeyError(
            f"unknown preset {quote(name)}; available: {', '.join(sorted(available)) or 'none'} "
            "(or the path of a preset file, ending in .toml)"
        )
    with open(available[name], "rb") as fh:
        return tomllib.load(fh)


def _preset_file(name: str, base: str | Path | None) -> dict[str, Any]:
    p = Path(name).expanduser()
    if not p.is_absolute():
        p = Path(base if base is not None else ".") / p
    if p.is_dir() or not p.exists():  # anything else that is not a regular file: read_toml says what it is
        what = "is a folder" if p.is_dir() else "no such file"
        raise ValueError(
            f"preset file {quote(str(p))}: {what} (a relative path is taken from the scenario file's folder)"
        )
    try:
        raw = read_toml(p)
    except ScenarioError as exc:
        raise ValueError(f"preset file {exc}") from None
    missing = [t for t in ("preference", "observation") if not isinstance(raw.get(t), dict)]
    extra = [k for k in raw if k not in PRESET_TABLES]
    if missing or extra:
        hint = "; this looks like a scenario file" if {"kind", "world", "source", "name"} & set(raw) else ""
        raise ValueError(
            f"preset file {quote(str(p))}: not a preset (needs [preference] and [observation] tables, and "
            f"only {', '.join(PRESET_TABLES)} at the top level; missing: {', '.join(missing) or 'none'}"
            f", unexpected: {', '.join(extra) or 'none'}){hint}"
        )
    return raw


def merge_presets(worlds: Any, path: Path, where: str = "world") -> Any:
    """Fill the world tables that name a preset with the preset's tables (explicit keys win).

    A preset path is taken relative to the folder of the scenario file ``path``
    (symlinks followed, as data paths are).

    ``worlds`` is the raw list of world tables (anything else is returned
    unchanged for the schema to report); ``where`` is their key path.
    """
    if not isinstance(worlds, list):
        return worlds
    merged = []
    for i, w in enumerate(worlds):
        if isinstance(w, dict) and isinstance(w.get("preset"), str):
            try:
                preset = load_preset(w["preset"], Path(path).resolve().parent)
            except (KeyError, ValueError) as exc:
                raise ScenarioError(f"{path}: {where}[{i}].preset: {exc.args[0]}") from None
            w = {**w}
            for key in ("preference", "observation"):
                if key not in w and key in preset:
                    w[key] = preset[key]
        merged.append(w)
    return merged

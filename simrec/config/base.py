"""The pieces every spec shares: a strict pydantic base, one error type, TOML
reading and one format for validation messages.

Every message names the file, the key path (e.g. ``world[2].preference.sigma``),
the rule and the value received; several problems are reported together.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = ["Strict", "ScenarioError", "no_repeats", "read_toml", "format_validation", "problems_error"]


class ScenarioError(ValueError):
    """A scenario, stress scenario or sweep spec is malformed; the message lists every problem found."""


class Strict(BaseModel):
    """Base of every spec: unknown keys are errors and a validated spec is frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def no_repeats(model: BaseModel, *keys: str) -> None:
    """Raise ValueError if a list field of ``model`` names a value twice (for model validators)."""
    for key in keys:
        vals = list(getattr(model, key))
        if len(set(vals)) != len(vals):
            dup = sorted({str(v) for v in vals if vals.count(v) > 1})
            raise ValueError(f"`{key}` lists {', '.join(dup)} twice; got {vals}")


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables; ScenarioError naming the file if it is missing, unreadable or not TOML."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None


#: Discriminator tags pydantic inserts into error locations (left out of key paths).
#: (The stress source's tags, which are also ordinary key names, are removed by its loader.)
_TAGS = frozenset({"uniform", "ibp", "lda", "pareto", "beta_binomial", "oracle", "probabilistic_oracle", "popular",
                   "random", "lenskit"})


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _TAGS:
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def format_validation(path: Path, err: ValidationError, what: str = "scenario") -> str:
    """One message for every problem pydantic found in the file at ``path``."""
    n = err.error_count()
    lines = [f"{path}: invalid {what} ({n} problem{'s' if n > 1 else ''}):"]
    for e in err.errors():
        loc = _fmt_loc(tuple(e["loc"]))
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key is missing"
        got = "" if e["type"] == "missing" else f"; got {e.get('input')!r}"
        if e["type"] == "extra_forbidden" or isinstance(e.get("input"), dict):
            got = ""
        lines.append(f"  {loc}: {msg}{got}")
    return "\n".join(lines)


def problems_error(path: Path, problems: list[str], what: str = "scenario") -> ScenarioError:
    """The error for rules that need more than one key (checked after the schema)."""
    n = len(problems)
    return ScenarioError(f"{path}: invalid {what} ({n} problem{'s' if n > 1 else ''}):\n"
                         + "\n".join(f"  {p}" for p in problems))

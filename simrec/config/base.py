"""The pieces every spec shares: a strict pydantic base, one error type, TOML
reading and one format for validation messages.

Every message names the file, the key path (e.g. ``world[2].preference.sigma``),
the rule and the value received; several problems are reported together.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from simrec._inputs import InputFileError, parse_toml, read_input
from simrec._validation import quote

__all__ = [
    "Strict",
    "ScenarioError",
    "SafeName",
    "MaxUsers",
    "check_safe_name",
    "no_repeats",
    "read_toml",
    "format_validation",
    "problems_error",
    "content_digest",
]

#: A name that may become part of a file or folder name: 1-64 letters, digits, ``_``, ``-`` or ``.``, starting
#: with a letter or digit (so never ``""``, ``.``, ``..``, a path separator or a hidden file).
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
SAFE_NAME_RULE = "must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit"


def check_safe_name(value: str) -> str:
    """Return ``value`` if it is a safe name (:data:`SAFE_NAME_RULE`); ValueError otherwise.

    Decision (issue 12): every name that comes from a file and could reach the
    file system (scenario, world, recommender, dataset names) is checked with
    this one rule at validation, even where the current code uses indices for
    file names, so no later output can turn a name into a path.
    """
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value):
        raise ValueError(SAFE_NAME_RULE)
    return value


#: A validated safe name (see :func:`check_safe_name`).
SafeName = Annotated[str, AfterValidator(check_safe_name)]


def _check_max_users(value: int) -> int:
    from simrec.user_sample import MIN_MAX_USERS, max_users_rule

    if value < MIN_MAX_USERS:
        raise ValueError(max_users_rule())
    return value


#: ``max_users`` of a file: the evaluated users' sample size (:mod:`simrec.user_sample`), None = every user.
MaxUsers = Annotated[int, AfterValidator(_check_max_users)]


class ScenarioError(ValueError):
    """A scenario, stress scenario or sweep spec is malformed; the message lists every problem found."""


class Strict(BaseModel):
    """Base of every spec: unknown keys are errors, types are strict and a validated spec is frozen.

    Strict types (decision, issue 12): TOML has real integers, floats, booleans
    and strings, so nothing is coerced: ``n_users = "100"``, ``lam = true`` and
    ``replicates = 1e9`` (a float) are errors, not 100, 1.0 and 1000000000.
    Integers are accepted where a float is expected.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def content_digest(spec: Strict) -> str:
    """Stable hash of a validated file's content (a run folder refuses a different one).

    Keys at their default values are left out, so adding an optional key to a
    schema never changes the identity of an existing run folder.
    """
    blob = json.dumps(spec.model_dump(mode="json", exclude_defaults=True), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def no_repeats(model: BaseModel, *keys: str) -> None:
    """Raise ValueError if a list field of ``model`` names a value twice (for model validators)."""
    for key in keys:
        vals = list(getattr(model, key))
        if len(set(vals)) != len(vals):
            dup = sorted({str(v) for v in vals if vals.count(v) > 1})
            raise ValueError(f"`{key}` lists {', '.join(dup)} twice; got {quote(vals)}")


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables; ScenarioError naming the file if it is missing, unreadable or not TOML.

    The file is bounded before it is read (:mod:`simrec._inputs`): a folder,
    a FIFO, a device, a file over the TOML size limit (1 MiB unless
    ``SIMREC_MAX_TOML_SIZE`` says otherwise) or nesting deeper than
    :data:`~simrec._inputs.MAX_TOML_DEPTH` levels is refused with one line,
    and so is a file that holds no key at all (empty, or comments only: one
    line rather than one "required key is missing" per key of the schema).
    """
    try:
        data = read_input(path, "toml", "a TOML file")
        tables = parse_toml(data.decode("utf-8"), str(path))
    except InputFileError as exc:
        raise ScenarioError(str(exc)) from None
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); save the file as UTF-8"
        ) from None
    except IsADirectoryError:
        raise ScenarioError(f"{path}: is a folder; expected a TOML file") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    if not tables:
        raise ScenarioError(f"{path}: holds no keys (empty, or comments only); expected a TOML file with its tables")
    return tables


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    """A key path such as ``world[2].preference.sigma``; a key from the file longer than ~100 characters is cut.

    (Specs of a kind are told apart by their tag at validation, :class:`~simrec.config.union.SpecUnion`, which
    puts no tag into the path.)
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            if len(text) > 100:
                text = quote(text)
            out += f".{text}" if out else text
    return out or "(top level)"


def _one_per_value(errors: list[Any]) -> list[Any]:
    """pydantic's errors, one per value: the branches of a union that each refused the same value become one.

    pydantic reports a value refused by every member of a union (a ``params`` value given as a table: number,
    integer, string, boolean, list) once per member, each under a location ending in the member's name
    (``params.mdict.float``, ``params.mdict.int``, ...). Consecutive errors at the same location but its last
    part, about the same input object, with different messages, are those branches: they are merged into one
    error at the value's own location whose message lists what each member expected (issue 22: one line per
    bad value).
    """
    out: list[Any] = []
    i = 0
    while i < len(errors):
        j = i + 1
        e = errors[i]
        while (
            j < len(errors)
            and len(e["loc"]) > 0
            and isinstance(e["loc"][-1], str)
            and tuple(errors[j]["loc"][:-1]) == tuple(e["loc"][:-1])
            and isinstance(errors[j]["loc"][-1], str)
            and errors[j].get("input") is e.get("input")
            and errors[j]["msg"] not in {x["msg"] for x in errors[i:j]}
        ):
            j += 1
        if j - i < 2:
            out.append(e)
        else:
            wanted = [x["msg"].removeprefix("Input should be ") for x in errors[i:j]]
            msg = "Input should be " + ", ".join(wanted[:-1]) + " or " + wanted[-1]
            out.append({**e, "loc": tuple(e["loc"][:-1]), "msg": msg, "type": "union"})
        i = j
    return out


def format_validation(path: Path, err: ValidationError, what: str = "scenario") -> str:
    """One message for every problem pydantic found in the file at ``path`` (one line per value refused)."""
    errors = _one_per_value(list(err.errors()))
    n = len(errors)
    lines = [f"{path}: invalid {what} ({n} problem{'s' if n > 1 else ''}):"]
    for e in errors:
        loc = _fmt_loc(tuple(e["loc"]))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key is missing"
        got = "" if e["type"] == "missing" else f"; got {quote(e.get('input'))}"
        if e["type"] == "extra_forbidden" or isinstance(e.get("input"), dict):
            got = ""
        lines.append(f"  {loc}: {msg}{got}")
    return "\n".join(lines)


def problems_error(path: Path, problems: list[str], what: str = "scenario") -> ScenarioError:
    """The error for rules that need more than one key (checked after the schema)."""
    n = len(problems)
    return ScenarioError(
        f"{path}: invalid {what} ({n} problem{'s' if n > 1 else ''}):\n" + "\n".join(f"  {p}" for p in problems)
    )

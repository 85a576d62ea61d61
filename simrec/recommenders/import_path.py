"""Bring your own algorithm: a LensKit component named by import path.

A scenario's ``scorer = "my_scorers:ShrunkPopScorer"`` names a LensKit
``Component`` class (or a callable returning one) that
:class:`~simrec.recommenders.LensKitRecommender` wraps in LensKit's top-N
pipeline. This module checks such a path and the parameters given to it,
before anything runs:

1. the path is ``package.module:Attribute`` — dot-separated Python
   identifiers, one colon, one identifier after it (anything else is refused
   *before* any import: no file paths, no expressions, no relative imports);
2. the module imports (importing it runs its code: that is what naming it
   asks for, so name only modules you trust);
3. the attribute exists and is a LensKit ``Component`` subclass, or a
   callable (a factory) that returns a ``Component``;
4. the parameters are the component's configuration: every key is a field of
   its config class (a dataclass or pydantic model; LensKit itself silently
   ignores unknown keys, simrec refuses them) and the config validates them
   (types, bounds).

``search_path`` (a scenario file's folder) is *appended* to ``sys.path`` if
not already there, so a module next to the scenario file imports, and
installed packages and the standard library still win over a file of the
same name (choose a distinctive module name).

Python imports a module once per process: two scenario folders that each hold
a ``my_scorers.py`` cannot both be used in one process, and a module of the
same name installed (or imported earlier) would silently win over the file
next to the scenario. Decision: :func:`import_component` refuses that case
with the two locations named, rather than run another file's code under the
scenario's name — rename one of the modules.
"""

from __future__ import annotations

import dataclasses
import importlib
import keyword
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simrec._validation import quote

__all__ = ["IMPORT_PATH_RULE", "ImportPathError", "check_import_path", "import_component", "param_problems"]


#: The rule an import path follows (the message of a malformed one).
IMPORT_PATH_RULE = (
    "must be an import path 'package.module:Class' (dot-separated Python identifiers, one ':'; no file paths)"
)


class ImportPathError(ValueError):
    """A scorer import path that is malformed, does not import, or names no LensKit component."""


def check_import_path(path: str) -> tuple[str, str]:
    """``(module, attribute)`` of ``"package.module:Attribute"``; ImportPathError for any other form.

    Every dot-separated part and the attribute must be a Python identifier
    that is not a keyword (``str.isidentifier``); nothing is imported here.
    """
    if not isinstance(path, str):
        raise ImportPathError(f"`scorer` must be a string 'package.module:Class'; got {quote(path)}")
    module, sep, attr = path.partition(":")
    parts = module.split(".")
    ok = (
        sep == ":"
        and attr.isidentifier()
        and not keyword.iskeyword(attr)
        and all(p.isidentifier() and not keyword.iskeyword(p) for p in parts)
    )
    if not ok:
        raise ImportPathError(f"`scorer` {IMPORT_PATH_RULE}; got {quote(path)}")
    return module, attr


def _is_component_class(obj: Any) -> bool:
    from lenskit.pipeline import Component

    return isinstance(obj, type) and issubclass(obj, Component)


def import_component(path: str, search_path: str | Path | None = None) -> Callable[..., Any]:
    """Import the LensKit component class (or factory) that ``path`` names.

    Parameters
    ----------
    path : str
        ``"package.module:Class"`` (see :func:`check_import_path`).
    search_path : str or Path, optional
        A folder appended to ``sys.path`` (if absent) before importing, e.g.
        the folder of the scenario file naming ``path``.

    Returns
    -------
    type or callable
        A ``lenskit.pipeline.Component`` subclass, or another callable
        (whose result :func:`param_problems` checks).

    Raises
    ------
    ImportPathError
        Malformed path, a module that does not import (its error is named, no
        traceback), a missing attribute, or an attribute that is neither a
        ``Component`` subclass nor callable.
    """
    module, attr = check_import_path(path)
    if search_path is not None:
        folder = str(Path(search_path))
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        where = f" (searched sys.path, including {search_path})" if search_path is not None else ""
        raise ImportPathError(f"`scorer` {quote(path)}: no module named {exc.name!r}{where}") from None
    except SyntaxError as exc:
        raise ImportPathError(
            f"`scorer` {quote(path)}: module {module!r} has a syntax error at {exc.filename}, line {exc.lineno}: {exc.msg}"
        ) from None
    except Exception as exc:  # the user's module raised while being imported
        raise ImportPathError(
            f"`scorer` {quote(path)}: importing module {module!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    if search_path is not None:
        _check_not_shadowed(path, module.partition(".")[0], Path(search_path))
    if not hasattr(mod, attr):
        raise ImportPathError(f"`scorer` {quote(path)}: module {module!r} has no attribute {attr!r}")
    obj = getattr(mod, attr)
    if not _is_component_class(obj) and (isinstance(obj, type) or not callable(obj)):
        raise ImportPathError(
            f"`scorer` {quote(path)}: must be a LensKit Component class (a subclass of "
            f"lenskit.pipeline.Component) or a function returning one; got "
            f"{type(obj).__name__} {obj!r}"
        )
    return obj


def _module_location(top: str) -> Path | None:
    """The file (or package folder) the imported top-level module ``top`` was loaded from, if any."""
    mod = sys.modules.get(top)
    file = getattr(mod, "__file__", None)
    if file:
        f = Path(file)
        return f.parent if f.name == "__init__.py" else f
    paths = list(getattr(mod, "__path__", []) or [])  # a namespace package
    return Path(paths[0]) if paths else None


def _check_not_shadowed(path: str, top: str, folder: Path) -> None:
    """ImportPathError if ``folder`` holds its own ``top`` module but the process imported another one."""
    local = [c for c in (folder / f"{top}.py", folder / top) if c.exists()]
    loaded = _module_location(top)
    if not local or loaded is None:
        return
    try:
        same = any(c.resolve() == loaded.resolve() for c in local)
    except OSError:
        same = False
    if not same:
        raise ImportPathError(
            f"`scorer` {quote(path)}: module {top!r} is already imported from {loaded}, so {local[0]} next to the "
            "file cannot be loaded (Python imports a module once per process); rename one of them"
        )


def _config_fields(config_class: Any) -> list[str] | None:
    """Field names of a dataclass or pydantic config class (None: unknown, accept any key)."""
    if dataclasses.is_dataclass(config_class):
        return [f.name for f in dataclasses.fields(config_class)]
    fields = getattr(config_class, "model_fields", None)
    return list(fields) if isinstance(fields, dict) else None


def param_problems(factory: Callable[..., Any], params: dict[str, Any]) -> list[tuple[str, str]]:
    """Problems of ``params`` for ``factory``: ``(key, message)`` pairs, empty when a component builds.

    A ``Component`` subclass: keys not in its config class are refused (the
    message lists the accepted ones), then the config validates the values
    (LensKit's ``validate_config``: pydantic). A factory: it is called with
    the parameters and must return a ``Component``. ``key`` is ``""`` for a
    problem of the whole call.
    """
    from lenskit.pipeline import Component
    from pydantic import ValidationError

    unknown: list[tuple[str, str]] = []
    if _is_component_class(factory):
        fields = _config_fields(factory.config_class())  # type: ignore[attr-defined]
        if fields is not None:
            accepted = ", ".join(fields) or "none"
            unknown = [
                (
                    k,
                    f"unknown parameter of {factory.__name__} (accepted: {accepted}); "  # type: ignore[attr-defined]
                    f"got {quote(v)}",
                )
                for k, v in params.items()
                if k not in fields
            ]
            params = {k: v for k, v in params.items() if k in fields}
    try:
        obj = factory(**params)
    except ValidationError as exc:
        return unknown + [
            (
                ".".join(str(p) for p in e["loc"]),
                f"{e['msg'].removeprefix('Value error, ')} ({exc.title})"
                + ("" if isinstance(e.get("input"), dict) else f"; got {quote(e.get('input'))}"),
            )
            for e in exc.errors()
        ]
    except Exception as exc:  # a user's factory or config refused the parameters
        return unknown + [
            (
                "",
                f"building {getattr(factory, '__name__', factory)!r} with {quote(params)} failed: "
                f"{type(exc).__name__}: {exc}",
            )
        ]
    if not isinstance(obj, Component):
        return unknown + [
            ("", f"{getattr(factory, '__name__', factory)!r} must return a LensKit Component; got {type(obj).__name__}")
        ]
    return unknown

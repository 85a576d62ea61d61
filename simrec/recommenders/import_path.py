"""Bring your own algorithm: a LensKit component class named by import path.

A scenario's ``scorer = "my_scorers:ShrunkPopScorer"`` names a LensKit
``Component`` class that :class:`~simrec.recommenders.LensKitRecommender`
wraps in LensKit's top-N pipeline. A scenario, stress, assessment file or a
``simrec ranks -r`` option comes from a user and is untrusted (a shared TOML
file must not be able to run ``subprocess:getoutput``), so this module
resolves such a path to a *class* and calls nothing else. It checks the path
and the parameters given to it before anything runs:

1. the path is ``package.module:Class`` — dot-separated Python identifiers,
   one colon, one identifier after it (anything else is refused *before* any
   import: no file paths, no expressions, no relative imports);
2. a module of Python's standard library (``sys.stdlib_module_names`` and its
   submodules: ``os``, ``os.path``, ``xml.etree``, ``antigravity``, ``this``)
   or any ``__main__`` module is refused *before import*: none holds a LensKit
   component, and importing some has effects (``antigravity`` opens a web
   browser, ``this`` prints, a package's ``__main__`` runs its program);
3. the module is imported. **Naming a module of your own runs its top-level
   code**, as ``python -m`` or ``import`` would: name only modules you trust.
   A module of simrec's dependencies (``numpy``, ``lenskit``, ...) is imported
   only to look the class up;
4. the attribute must be a class and a subclass of
   ``lenskit.pipeline.Component`` (``issubclass``), checked before anything is
   called, and not abstract. Functions, instances and other classes are
   refused, from any module (``numpy:save`` is never called). Decision (issue
   22): factories (functions returning a component), accepted before, are no
   longer accepted: calling a function a file names is how a scenario ran
   ``os:system``; name the component class and give its configuration in
   ``params``;
5. the parameters are the component's configuration, checked without
   constructing the component: every key must be a field of its config class
   (a dataclass, pydantic model or TypedDict; LensKit itself silently ignores
   unknown keys, simrec refuses them) and the config validates the values as
   LensKit's own ``Component.validate_config`` does (pydantic's
   ``TypeAdapter``; this runs the config's own checks, e.g. a dataclass's
   ``__post_init__``). Whatever the module's import or the config raises,
   ``SystemExit`` included, is reported as a problem (:mod:`simrec._usercode`).

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
import inspect
import keyword
import sys
from pathlib import Path
from typing import Any

from simrec._usercode import UserCodeError, user_code
from simrec._validation import quote

__all__ = [
    "IMPORT_PATH_RULE",
    "STDLIB_MODULES",
    "ImportPathError",
    "check_import_path",
    "import_component",
    "is_component_class",
    "param_problems",
]


#: The rule an import path follows (the message of a malformed one).
IMPORT_PATH_RULE = (
    "must be an import path 'package.module:Class' (dot-separated Python identifiers, one ':'; no file paths)"
)

#: Top-level modules refused before import: Python's standard library and the interpreter's built-in modules.
STDLIB_MODULES: frozenset[str] = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)


class ImportPathError(ValueError):
    """A scorer import path that is malformed, refused, does not import, or names no LensKit component class."""


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


def _refuse_before_import(path: str, module: str) -> None:
    """ImportPathError for a module that is never imported: the standard library's, or a ``__main__``."""
    top = module.partition(".")[0]
    if top in STDLIB_MODULES:
        raise ImportPathError(
            f"`scorer` {quote(path)}: module {quote(module)} is part of Python's standard library, which holds no LensKit "
            "component; it is refused before import (name the module that defines your Component class)"
        )
    if "__main__" in module.split("."):
        raise ImportPathError(
            f"`scorer` {quote(path)}: a __main__ module runs a program when imported; it is refused before import "
            "(name the module that defines your Component class)"
        )


def is_component_class(obj: object) -> bool:
    """Whether ``obj`` is a class and a subclass of ``lenskit.pipeline.Component`` (nothing of ``obj`` is called).

    ``type(obj)`` is the object's real type (``isinstance`` would read a
    ``__class__`` attribute, which an object can compute).
    """
    from lenskit.pipeline import Component

    return issubclass(type(obj), type) and issubclass(obj, Component)  # type: ignore[arg-type]


def import_component(path: str, search_path: str | Path | None = None) -> type:
    """Import the LensKit component class that ``path`` names; nothing but the module's import runs.

    Parameters
    ----------
    path : str
        ``"package.module:Class"`` (see :func:`check_import_path`).
    search_path : str or Path, optional
        A folder appended to ``sys.path`` (if absent) before importing, e.g.
        the folder of the scenario file naming ``path``.

    Returns
    -------
    type
        A concrete ``lenskit.pipeline.Component`` subclass.

    Raises
    ------
    ImportPathError
        Malformed path; a module of the standard library or a ``__main__``
        (refused before import); a module that does not import (whatever its
        import raised is named, ``SystemExit`` included, no traceback); a
        missing attribute; an attribute that is not a concrete ``Component``
        class (a function, a factory, an instance, another class).
    """
    module, attr = check_import_path(path)
    _refuse_before_import(path, module)
    if search_path is not None:
        folder = str(Path(search_path))
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        with user_code(f"importing module {quote(module)}"):
            mod = importlib.import_module(module)
    except UserCodeError as exc:
        cause = exc.__cause__
        if isinstance(cause, ModuleNotFoundError):
            where = f" (searched sys.path, including {search_path})" if search_path is not None else ""
            raise ImportPathError(f"`scorer` {quote(path)}: no module named {cause.name!r}{where}") from None
        if isinstance(cause, SyntaxError):
            raise ImportPathError(
                f"`scorer` {quote(path)}: module {quote(module)} has a syntax error at {cause.filename}, line {cause.lineno}: "
                f"{cause.msg}"
            ) from None
        raise ImportPathError(f"`scorer` {quote(path)}: {exc}") from None  # the user's module raised while imported
    if search_path is not None:
        _check_not_shadowed(path, module.partition(".")[0], Path(search_path))
    try:
        with user_code(
            f"looking up {quote(attr)} in module {quote(module)}"
        ):  # a module-level __getattr__ (lazy names)
            obj = getattr(mod, attr)
    except UserCodeError as exc:
        if isinstance(exc.__cause__, AttributeError):
            raise ImportPathError(
                f"`scorer` {quote(path)}: module {quote(module)} has no attribute {quote(attr)}"
            ) from None
        raise ImportPathError(f"`scorer` {quote(path)}: {exc}") from None
    if not is_component_class(obj):
        kind = "class" if issubclass(type(obj), type) else "function" if callable(obj) else type(obj).__name__
        raise ImportPathError(
            f"`scorer` {quote(path)}: must name a LensKit Component class (a subclass of lenskit.pipeline.Component); "
            f"got {kind} {quote(attr)}. Nothing it names is called: functions, including factories returning a "
            "component (no longer accepted), are refused; name the component class and give its configuration "
            "in `params`"
        )
    if inspect.isabstract(obj):
        raise ImportPathError(
            f"`scorer` {quote(path)}: {quote(attr)} is an abstract Component class; name a concrete one"
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
            f"`scorer` {quote(path)}: module {quote(top)} is already imported from {loaded}, so {local[0]} next to the "
            "file cannot be loaded (Python imports a module once per process); rename one of them"
        )


def _config_class(cls: type) -> Any:
    """The config class of a Component class, as LensKit finds it (the ``config`` annotation), or None."""
    from lenskit.pipeline import Component

    return Component.config_class.__func__(cls)  # type: ignore[attr-defined]  # LensKit's own, not an override


def _config_fields(config_class: Any) -> list[str] | None:
    """Names a config class accepts: dataclass fields, pydantic fields and aliases, TypedDict keys (None: unknown)."""
    if dataclasses.is_dataclass(config_class):
        return [f.name for f in dataclasses.fields(config_class)]
    fields = getattr(config_class, "model_fields", None)
    if isinstance(fields, dict):
        aliases = [f.alias for f in fields.values() if getattr(f, "alias", None)]
        return list(fields) + [a for a in aliases if a not in fields]
    keys = getattr(config_class, "__required_keys__", None)
    if isinstance(keys, frozenset):
        return sorted(keys | getattr(config_class, "__optional_keys__", frozenset()))
    return None


def param_problems(cls: type, params: dict[str, Any]) -> list[tuple[str, str]]:
    """Problems of ``params`` for the Component class ``cls``: ``(key, message)`` pairs, empty when they are valid.

    Nothing is constructed: keys not in the class's config class are refused
    (the message lists the accepted ones), then the config validates the
    values as LensKit's ``Component.validate_config`` would (pydantic's
    ``TypeAdapter``: a dataclass's ``__post_init__`` and a pydantic model's
    validators run; whatever they raise is a problem). ``key`` is ``""`` for a
    problem of the whole configuration.
    """
    from pydantic import TypeAdapter, ValidationError

    name = cls.__name__
    try:
        with user_code(f"finding the config class of {name}"):
            config_class = _config_class(cls)
    except UserCodeError as exc:
        return [("", str(exc))]
    if config_class is None:
        return [(k, f"{name} takes no parameters (it has no config class); got {quote(v)}") for k, v in params.items()]
    unknown: list[tuple[str, str]] = []
    fields = _config_fields(config_class)
    if fields is not None:
        accepted = ", ".join(fields) or "none"
        unknown = [
            (k, f"unknown parameter of {name} (accepted: {accepted}); got {quote(v)}")
            for k, v in params.items()
            if k not in fields
        ]
        params = {k: v for k, v in params.items() if k in fields}
    invalid = None
    try:
        with user_code(f"checking the configuration of {name}"):
            try:
                TypeAdapter(config_class).validate_python(params)
            except ValidationError as exc:
                invalid = exc
    except UserCodeError as exc:  # the config's own check raised something other than a validation error
        return unknown + [("", str(exc))]
    if invalid is None:
        return unknown
    return unknown + [
        (
            ".".join(str(p) for p in e["loc"]),
            f"{e['msg'].removeprefix('Value error, ')} ({invalid.title})"
            + ("" if isinstance(e.get("input"), dict) else f"; got {quote(e.get('input'))}"),
        )
        for e in invalid.errors()
    ]

"""Sphinx configuration of simrec's documentation site (``make docs``).

Decisions (issue 28):

* Sphinx, not MkDocs: simrec's docstrings are numpydoc with reStructuredText
  inside (``.. math::``, ``:func:`` roles, tables), which Sphinx renders
  natively and checks (nitpicky cross-references); mkdocstrings would render
  the numpydoc sections but not the reST directives and roles in them.
* Pages are Markdown (MyST), so they read as plain files in a clone too: the
  README links into them. The notebooks are committed executed and rendered
  as they are (myst-nb, ``nb_execution_mode = "off"``); ``docs/notebooks`` is a
  symbolic link to the repository's ``notebooks/``.
* The API reference is generated at build time from each public module's
  ``__all__`` (:func:`write_api_pages`, into ``docs/api/generated/``, not
  committed), so a name added to a subpackage appears without editing the
  docs, and a name that is not public never does.
* Built with ``-W --keep-going -n`` in CI: every warning, and every
  cross-reference that does not resolve, fails the build. Only references to
  other projects' objects (numpy, pandas, LensKit, ...) are let through
  (:data:`nitpick_ignore_regex`): no network is used (no intersphinx).
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from importlib import import_module
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

import simrec  # noqa: E402  (after the path is set)

project = "simrec"
author = "simrec developers"
copyright = "simrec developers"  # noqa: A001
release = version = simrec.__version__

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "README.md"]
templates_path = []

# -- MyST and notebooks ---------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links, checked like any other
nb_execution_mode = "off"  # the notebooks are committed executed; the test suite re-runs them small
nb_merge_streams = True

# -- API reference ---------------------------------------------------------------------------------------
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types (with shapes and defaults)
autodoc_member_order = "bysource"
autosummary_generate = False  # the pages are written by write_api_pages below
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- Checks ----------------------------------------------------------------------------------------------
nitpicky = True
#: References to other projects' objects (no intersphinx: the build uses no network) and to the standard
#: library pass; a reference to a simrec object that is not documented fails the build.
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|pandas|pd|scipy|lenskit|torch|ray|pyarrow|matplotlib|pydantic|skopt|typer|rich)(\..*)?"),
    (r"py:.*", r"(os|pathlib|collections|typing|enum|dataclasses|concurrent|multiprocessing|fcntl|signal)(\..*)?"),
    (r"py:.*", r"(Path|Generator|SeedSequence|DataFrame|Series|ndarray|Callable|Iterator|Iterable|Sequence)"),
    (r"py:.*", r"(int|float|str|bool|bytes|dict|list|tuple|set|frozenset|object|type|None|Any|Exception)"),
]

# -- HTML ------------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"simrec {release}"
html_static_path = []
html_show_sourcelink = False
html_last_updated_fmt = None

#: Public modules and their API pages, in the order of the API index (each documents its ``__all__``).
API_MODULES = {
    "Simulation": [
        "simrec",
        "simrec.interactions",
        "simrec.preference",
        "simrec.observation",
        "simrec.split",
        "simrec.loo",
        "simrec.experiment",
        "simrec.user_sample",
    ],
    "Recommenders and metrics": ["simrec.recommenders", "simrec.metrics"],
    "Missing-data corrections": ["simrec.debias"],
    "Sampled metrics": ["simrec.sampling", "simrec.stress"],
    "Significance": ["simrec.significance"],
    "Data and calibration": ["simrec.datasets", "simrec.stats", "simrec.calibration"],
    "Jobs, outputs and provenance": [
        "simrec.studies",
        "simrec.assess",
        "simrec.report",
        "simrec.config",
        "simrec.tasks",
        "simrec.rundir",
        "simrec.shards",
        "simrec.provenance",
        "simrec.labels",
    ],
}


def _directive(obj: object) -> str:
    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if inspect.isroutine(obj):
        return "autofunction"
    return "autodata"


def write_api_pages(out: Path = DOCS / "api" / "generated") -> list[str]:
    """One reST page per public module: its docstring, a summary table and every name of its ``__all__``.

    An object exported by several modules is described once, on the first
    module's page (:data:`API_MODULES` order); the others list it in their
    table and link to it. Returns the page names (``generated/<module>``).
    """
    out.mkdir(parents=True, exist_ok=True)
    seen: dict[int, str] = {}
    pages = []
    for modules in API_MODULES.values():
        for name in modules:
            module = import_module(name)
            lines = [name, "=" * len(name), "", f".. automodule:: {name}", "", f".. currentmodule:: {name}", ""]
            names = [n for n in module.__all__ if not n.startswith("__")]
            lines += [".. autosummary::", "   :nosignatures:", ""] + [f"   {n}" for n in names] + [""]
            for n in names:
                obj = getattr(module, n)
                where = seen.setdefault(id(obj), f"{name}.{n}")
                if where != f"{name}.{n}":
                    lines += [f".. {_directive(obj)}:: {n}", "   :no-index:", ""]
                    lines += [f"   The same object as :obj:`{where}`.", ""] if _directive(obj) == "autodata" else []
                    continue
                directive = _directive(obj)
                options = ["   :members:", "   :undoc-members:"] if directive in ("autoclass", "autoexception") else []
                options += ["   :no-value:"] if directive == "autodata" else []
                lines += [f".. {directive}:: {n}", *options, ""]
            text = "\n".join(lines)
            page = out / f"{name}.rst"
            if not page.exists() or page.read_text(encoding="utf-8") != text:  # unchanged pages stay fresh
                page.write_text(text, encoding="utf-8")
            pages.append(f"generated/{name}")
    return pages


def write_cli_page(out: Path = DOCS / "api" / "generated") -> None:
    """The ``--help`` of ``simrec`` and of each of its commands, as the command prints it."""
    from typer.testing import CliRunner

    from simrec.cli import app

    runner = CliRunner()
    commands = [[], ["run"], ["stress"], ["calibrate"], ["assess"], ["ranks"], ["scenarios"], ["datasets", "describe"]]
    lines = ["simrec command line", "===================", ""]
    lines += ["Every command's ``--help``, as printed (generated when the documentation is built).", ""]
    for cmd in commands:
        res = runner.invoke(app, [*cmd, "--help"], env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})
        title = " ".join(["simrec", *cmd])
        lines += [title, "-" * len(title), "", ".. code-block:: text", ""]
        lines += [f"   {line}".rstrip() for line in res.output.splitlines()] + [""]
    text = "\n".join(lines)
    page = out / "cli.rst"
    if not page.exists() or page.read_text(encoding="utf-8") != text:
        page.write_text(text, encoding="utf-8")


# -- docstrings written for help() as well as for the site -----------------------------------------------
_MATH = re.compile(r"^(\s*)\.\. math::")
_PROTECTED = re.compile(r"``.*?``|:[a-z:]+:`[^`]*`|`[^`]*`_?")


def _escape_bars(line: str) -> str:
    """``|x|`` (an absolute value, a set's size) is not a substitution: escape ``|`` outside literals and roles."""
    out, end = [], 0
    for m in _PROTECTED.finditer(line):
        out += [line[end : m.start()].replace("|", "\\|"), m.group(0)]
        end = m.end()
    return "".join(out + [line[end:].replace("|", "\\|")])


def escape_docstring_bars(app, what, name, obj, options, lines: list[str]) -> None:
    """Let docstrings write ``|Ĩ_u|`` and ``|T̂ - T|`` as a reader of ``help()`` expects.

    reST reads ``|name|`` as a substitution, which simrec never uses: outside
    ``.. math::`` blocks, grid tables, literals and roles, ``|`` is escaped.
    """
    math_indent = None
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if math_indent is not None and (not line.strip() or indent > math_indent):
            continue  # inside a math block
        math_indent = None
        if m := _MATH.match(line):
            math_indent = len(m.group(1))
            continue
        stripped = line.strip()
        if stripped.startswith("+") or (stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1):
            continue  # a grid table
        lines[i] = _escape_bars(line)


# -- references by object, whatever import path a docstring names -------------------------------------
#: id(object) -> the name it is documented under (classes, functions, methods, modules; not plain values).
DOCUMENTED: dict[int, str] = {}


def _index_documented() -> None:
    for modules in API_MODULES.values():
        for modname in modules:
            module = import_module(modname)
            DOCUMENTED.setdefault(id(module), modname)
            for n in module.__all__:
                obj = getattr(module, n)
                if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                    continue
                DOCUMENTED.setdefault(id(obj), f"{modname}.{n}")
                if inspect.isclass(obj):
                    for attr, value in vars(obj).items():
                        if not attr.startswith("_"):
                            DOCUMENTED.setdefault(id(getattr(value, "__func__", value)), f"{modname}.{n}.{attr}")


def _lookup(dotted: str) -> tuple[object, str] | None:
    """The object a dotted name reaches (importing its module), and the part of the name left unresolved."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = import_module(".".join(parts[:i]))
        except ImportError:
            continue
        except Exception:  # noqa: BLE001 - a module that fails on import is not a reference target
            return None
        rest = parts[i:]
        while rest and hasattr(obj, rest[0]) and not isinstance(obj, property):
            try:
                value = inspect.getattr_static(obj, rest[0])
            except AttributeError:
                value = getattr(obj, rest[0])
            obj, rest = getattr(value, "__func__", value), rest[1:]
        return obj, ".".join(rest)
    return None


def _public_page(module_name: str) -> str | None:
    """The documented public module that holds a submodule's names (``simrec.metrics.lists`` -> ``simrec.metrics``)."""
    documented = [m for ms in API_MODULES.values() for m in ms]
    parts = module_name.split(".")
    if any(p.startswith("_") for p in parts):
        return None
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in documented:
            return ".".join(parts[:i])
    return None


def _exported_name(cand: str, obj: object) -> str | None:
    """Where a public module exports a value (a constant) under the name ``cand`` ends with."""
    attr = cand.rpartition(".")[2]
    for modules in API_MODULES.values():
        for m in modules:
            module = import_module(m)
            if attr in getattr(module, "__all__", ()) and getattr(module, attr) is obj:
                return f"{m}.{attr}"
    return None


def _candidates(node) -> list[str]:
    """Dotted names a reference may mean: as written, relative to its module and class, or unique in simrec."""
    target = node["reftarget"].lstrip("~.")
    module, cls = node.get("py:module"), node.get("py:class")
    out = []
    if module:
        parts = module.split(".")
        if cls:
            out.append(f"{module}.{cls}.{target}")
        out += [f"{'.'.join(parts[:i])}.{target}" for i in range(len(parts), 0, -1)]
    # the module the docstring was written in (``... docstring of simrec.x.y.f``): a name relative to it
    if found := re.search(r"docstring of ([\w.]+)", getattr(node, "source", None) or ""):
        parts = found.group(1).split(".")
        out += [f"{'.'.join(parts[:i])}.{target}" for i in range(len(parts) - 1, 0, -1)]
    out.append(target)
    if module and not cls and "." not in target and module in sys.modules:
        # a summary line in an autosummary table has no class context: ``:meth:`lines``` in a class's
        # first line means that class's member, when exactly one public class of the module has it
        mod = sys.modules[module]
        owners = [
            n
            for n in getattr(mod, "__all__", ())
            if inspect.isclass(getattr(mod, n)) and target in vars(getattr(mod, n))
        ]
        if len(owners) == 1:
            out.append(f"{module}.{owners[0]}.{target}")
    head = target.split(".")[0]
    # a name written without its module (e.g. from a re-exported object's docstring shown on another page):
    # every simrec module that has it, used only if they all mean one object
    owners = [m for m, mod in list(sys.modules.items()) if m.startswith("simrec") and hasattr(mod, head)]
    if owners and len({id(getattr(sys.modules[m], head)) for m in owners}) == 1:
        out.append(f"{owners[0]}.{target}")
    return [c for c in out if c.startswith("simrec")]


def resolve_by_object(app, env, node, contnode):
    """Resolve a reference to a simrec object through any of its import paths (relative ones included).

    A docstring may name :func:`simrec.sampling.distribution.mle`, ``:func:`distribution.mle``` from inside
    :mod:`simrec.sampling`, or a method through a subclass: the reference goes to where the object is
    documented. A reference to an object that exists but is not part of the documented API (a private
    helper, a module's internal constant) is shown without a link. A name that reaches no object (a
    misspelt or removed name) stays a broken reference and, in nitpicky mode, fails the build.
    """
    if node.get("refdomain") != "py":
        return None
    py = env.get_domain("py")
    exists = False
    for cand in _candidates(node):
        found = _lookup(cand)
        if found is None:
            continue
        obj, rest = found
        fields = set(getattr(obj, "__dataclass_fields__", ())) | set(getattr(obj, "model_fields", ()))
        if rest and rest not in fields:
            continue  # the name goes on past what exists
        exists = True
        base = DOCUMENTED.get(id(obj))
        if base is None and inspect.ismodule(obj):
            base = _public_page(obj.__name__)
        if base is None and not rest:
            base = _exported_name(cand, obj)
        if base is None:
            continue
        for name in (f"{base}.{rest}", base) if rest else (base,):  # a field: its own entry, else its class
            ref = py.resolve_xref(env, node["refdoc"], app.builder, "obj", name, node, contnode)
            if ref is None and inspect.ismodule(obj):
                ref = py.resolve_xref(env, node["refdoc"], app.builder, "mod", name, node, contnode)
            if ref is not None:
                return ref
    return contnode if exists else None


def setup(app):
    _index_documented()
    app.connect("autodoc-process-docstring", escape_docstring_bars, priority=400)  # before numpydoc's (500)
    app.connect("missing-reference", resolve_by_object)


API_PAGES = write_api_pages()
write_cli_page()

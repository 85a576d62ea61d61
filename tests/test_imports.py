"""The package's import structure: no private name crosses a package, no import cycle.

Rules (issue 9), checked on the source with :mod:`ast`:

* a private module of a subpackage (``simrec/sampling/_threads.py``) is
  imported only from inside that subpackage; the root package's private
  modules (``simrec/_random.py``, ``simrec/_io.py``, ...) are simrec's shared
  internals and may be imported anywhere in simrec;
* a private name (``_name``) is imported only from a module of the same
  subpackage (or from the root's private modules);
* the graph of module-level imports between simrec's modules has no cycle
  (imports inside functions, which break cycles at run time, are left out, as
  are ``TYPE_CHECKING`` blocks);
* nor has the graph of every import, at any level (issue 23): no module
  imports, even inside a function or for type checking, from a module that
  imports it, so no cycle is hidden behind a lazy import.

``python tests/test_imports.py`` prints the module graph (for the closing
note of a structural change).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "simrec"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _package_of(module: str, is_pkg: bool) -> str:
    """The subpackage a module belongs to: ``simrec.sampling`` for ``simrec.sampling.ranks``, ``simrec`` for root modules."""
    parts = module.split(".")
    if is_pkg:
        return module if len(parts) > 1 else "simrec"
    return ".".join(parts[:2]) if len(parts) > 2 else "simrec"


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_level_imports(tree: ast.Module):
    """Import statements executed at import time (not in functions, not under TYPE_CHECKING)."""

    def walk(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node
            elif isinstance(node, ast.If):
                test = node.test
                if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
                    continue
                yield from walk(node.body)
                yield from walk(node.orelse)
            elif isinstance(node, ast.Try):
                yield from walk(node.body)
                for h in node.handlers:
                    yield from walk(h.body)

    yield from walk(tree.body)


def _all_imports(tree: ast.Module):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def import_graph(any_level: bool = False) -> dict[str, set[str]]:
    """Module -> the simrec modules it imports at module level (``any_level``: anywhere in the module)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        tree = ast.parse(path.read_text())
        for node in _all_imports(tree) if any_level else _top_level_imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                src = _resolve(mod, is_pkg, node)
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t.startswith("simrec") and t != mod:
                    deps.add(t)
        graph[mod] = deps
    return graph


def test_no_private_name_crosses_a_package():
    mods = _modules()
    problems = []
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        own = _package_of(mod, is_pkg)
        for node in _all_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                pairs = [(a.name, None) for a in node.names]
            else:
                src = _resolve(mod, is_pkg, node)
                pairs = [(src, a.name) for a in node.names]
            for src, name in pairs:
                if not src.startswith("simrec"):
                    continue
                parts = src.split(".")
                # the subpackage that owns a private module or name in `src`
                for i, part in enumerate(parts):
                    if _is_private(part):
                        owner = ".".join(parts[:i]) or "simrec"
                        if owner != "simrec" and not (mod == owner or mod.startswith(owner + ".")):
                            problems.append(f"{mod} imports private module {src}")
                        break
                else:
                    if name and _is_private(name):
                        src_is_pkg = (ROOT.parent / Path(*parts) / "__init__.py").exists()
                        owner = _package_of(src, src_is_pkg)
                        if owner != own:
                            problems.append(f"{mod} imports private name {name} from {src}")
    assert not problems, "\n".join(problems)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_import_graph_has_no_cycle():
    cycles = _cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_import_cycle_even_through_imports_inside_functions():
    """No module imports, at any level, from a module that imports it (issue 23: ``config/{budget,run,stress}``
    closed a cycle through function-level imports, and so did ``sampling/{estimators,fitted}`` until the estimators
    carried their own fitting)."""
    cycles = _cycles(import_graph(any_level=True))
    assert not cycles, "import cycles through imports inside functions:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_library_never_imports_the_pipeline():
    """Data flows one way: library packages know nothing of the config layer, studies or the CLI."""
    # (simrec.__main__ is `python -m simrec`: the CLI itself)
    # (simrec._cli_support, simrec._cli_summaries: the CLI's helpers and summaries, part of the CLI layer)
    upper = ("simrec.config", "simrec.studies", "simrec.cli", "simrec._cli_", "simrec.rundir", "simrec.__main__")
    graph = import_graph()
    mods = _modules()
    bad = []
    for mod, path in mods.items():
        if mod.startswith(upper):
            continue
        for node in _all_imports(ast.parse(path.read_text())):
            srcs = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [_resolve(mod, path.name == "__init__.py", node)]
            )
            bad += [f"{mod} imports {s}" for s in srcs if s.startswith(upper)]
    assert not bad, "\n".join(bad)
    assert graph  # the graph was built


def test_the_command_line_help_loads_no_numerical_stack():
    """``simrec --help`` stays fast (issue 13: <= 0.5 s CPU): importing the CLI
    and the package loads neither numpy, scipy nor pandas (lazy re-exports in
    ``simrec/__init__.py``, pandas imported inside ``Interactions.to_frame``)."""
    code = (
        "import sys, simrec.cli; heavy = [m for m in ('numpy', 'scipy', 'pandas') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == ""


def test_simrec_run_loads_only_what_it_uses():
    """``simrec run`` (issue 13): the modules it imports (its command, the scenario
    schema, the study, the job's error handler) load neither ``scipy.stats``
    (1 s CPU; the summaries use ``scipy.special``) nor the stress harness, the
    assessment or the sampled-metric estimators, which only other commands use."""
    code = (
        "import sys, simrec.cli, simrec.config.run; from simrec.studies import run_scenario; "
        "simrec.cli._input_errors(); "
        "mods = ('scipy.stats', 'simrec.stress', 'simrec.assess', 'simrec.sampling', 'simrec.studies.assess', "
        "'simrec.studies.stress', 'simrec.studies.calibrate'); print(','.join(m for m in mods if m in sys.modules))"
    )
    assert _printed(code) == ""


def test_simrec_stress_loads_only_what_it_uses():
    """``simrec stress`` (issue 29): its scenario schema and study load neither the ``simrec run`` scenario
    (``simrec.config.run``, with the debiasing layer) nor the pipeline a simulated world runs on
    (``simrec.experiment``, ``simrec.loo``): a stress run of a ranks file uses none of them, and scored
    sources import them when they build their data."""
    code = (
        "import sys, simrec.cli, simrec.config.stress; from simrec.studies import run_stress_scenario; "
        "mods = ('simrec.config.run', 'simrec.debias', 'simrec.experiment', 'simrec.loo'); "
        "print(','.join(m for m in mods if m in sys.modules))"
    )
    assert _printed(code) == ""


def _printed(code: str) -> str:
    """What ``python -c code`` prints (stripped), run in a fresh interpreter on this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()


def test_lazy_studies_names_resolve():
    import simrec.studies as studies

    assert set(studies.__all__) <= set(dir(studies))
    for name in studies.__all__:
        assert getattr(studies, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        studies.nope  # noqa: B018


def test_lazy_top_level_names_resolve():
    import simrec

    assert set(simrec.__all__) <= set(dir(simrec))
    for name in simrec.__all__:
        assert getattr(simrec, name) is not None


if __name__ == "__main__":  # pragma: no cover - prints the package-level graph
    g = import_graph()
    pkg = {}
    for mod, deps in g.items():
        a = _package_of(mod, (ROOT.parent / Path(*mod.split(".")) / "__init__.py").exists())
        for d in deps:
            b = _package_of(d, (ROOT.parent / Path(*d.split(".")) / "__init__.py").exists())
            if a != b:
                pkg.setdefault(a, set()).add(b)
    for a in sorted(pkg):
        print(f"{a:22s} -> {', '.join(sorted(pkg[a]))}")
    print(f"{len(g)} modules, {sum(map(len, g.values()))} module-level edges, cycles: {_cycles(g) or 'none'}")

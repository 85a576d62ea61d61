"""Bring your own algorithm: LensKit components named by import path (simrec.recommenders.import_path)."""

from __future__ import annotations

import math
import os
import shutil
import string
import subprocess
import sys
import textwrap
import zlib
from keyword import iskeyword
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simrec.recommenders import LensKitRecommender
from simrec.recommenders.import_path import ImportPathError, check_import_path, import_component, param_problems
from tests.cli_helpers import invoke

BYO = Path(__file__).parent / "fixtures" / "byo"


@pytest.mark.parametrize(
    "path, parts",
    [
        ("m:C", ("m", "C")),
        ("pkg.sub.mod:Class_2", ("pkg.sub.mod", "Class_2")),
        ("lenskit.knn:ItemKNNScorer", ("lenskit.knn", "ItemKNNScorer")),
    ],
)
def test_import_path_syntax_accepts(path, parts):
    assert check_import_path(path) == parts


@pytest.mark.parametrize(
    "path",
    [
        "m",
        "m.C",
        "m:",
        ":C",
        "m:C:D",
        "../m:C",
        "/tmp/m:C",
        "m/n.py:C",
        ".m:C",
        "m..n:C",
        "a-b:C",
        "m:C.D",
        "m:class",
        "import:C",
        "m :C",
        "m:C()",
        "",
        "m:C; import os",
    ],
)
def test_import_path_syntax_refuses(path):
    with pytest.raises(ImportPathError, match="must be an import path 'package.module:Class'"):
        check_import_path(path)


def test_import_component_from_a_search_folder():
    cls = import_component("simrec_test_scorers:ShrunkPopScorer", BYO)
    assert cls.__name__ == "ShrunkPopScorer" and str(BYO) in sys.path
    assert sys.path.index(str(BYO)) > 0  # appended: installed modules and the standard library win


@pytest.mark.parametrize(
    "path, message",
    [
        ("simrec_no_such_module_xyz:C", "no module named 'simrec_no_such_module_xyz'"),
        ("simrec_test_scorers:Missing", "module 'simrec_test_scorers' has no attribute 'Missing'"),
        ("simrec_test_scorers:NOT_CALLABLE", "must name a LensKit Component class .*; got int 'NOT_CALLABLE'"),
        ("simrec_test_scorers:ShrunkPopConfig", "must name a LensKit Component class .*; got class"),  # not a Component
        # a factory (a function returning a component) is never called: refused since issue 22
        ("simrec_test_scorers:make_shrunk_pop", "got function 'make_shrunk_pop'.*factories .*no longer accepted"),
    ],
)
def test_import_component_errors(path, message):
    with pytest.raises(ImportPathError, match=message):
        import_component(path, BYO)


def test_import_component_reports_a_broken_module_without_traceback(tmp_path):
    (tmp_path / "simrec_broken_syntax_mod.py").write_text("def f(:\n")
    (tmp_path / "simrec_raising_mod.py").write_text("raise RuntimeError('no GPU here')\n")
    with pytest.raises(ImportPathError, match=r"syntax error at .*simrec_broken_syntax_mod.py, line 1"):
        import_component("simrec_broken_syntax_mod:C", tmp_path)
    with pytest.raises(ImportPathError, match="importing module 'simrec_raising_mod' failed: RuntimeError: no GPU"):
        import_component("simrec_raising_mod:C", tmp_path)


def test_param_problems():
    cls = import_component("simrec_test_scorers:ShrunkPopScorer", BYO)
    assert param_problems(cls, {"shrinkage": 2.0}) == []
    found = dict(param_problems(cls, {"bogus": 1, "shrinkage": "x"}))
    assert "unknown parameter of ShrunkPopScorer (accepted: shrinkage, id_weight); got 1" in found["bogus"]
    assert "got 'x'" in found["shrinkage"]
    assert "`shrinkage` must be > 0" in param_problems(cls, {"shrinkage": -1.0})[0][1]


def test_lenskit_recommender_takes_an_import_path():
    import_component("simrec_test_scorers:ShrunkPopScorer", BYO)  # puts the folder on sys.path
    rec = LensKitRecommender("simrec_test_scorers:ShrunkPopScorer", shrinkage=3.0)
    assert rec.name == "ShrunkPopScorer" and rec.params == {"shrinkage": 3.0}


def test_run_scenario_with_a_user_defined_scorer_end_to_end(tmp_path):
    code, out, err = invoke(
        ["run", str(BYO / "byo-run.toml"), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"]
    )
    assert code == 0, err
    res = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert set(res["recommender"]) == {"LensKitPop", "ShrunkPop", "ShrunkPopCount"}
    value = res.set_index(["recommender", "metric", "truth"])["value"].sort_index()
    # c / (c + s) orders items exactly as LensKit's PopScorer with score = "count" does, ties included; LensKit's
    # ranker breaks ties the same way: the user-defined scorer's lists, hence metrics, are PopScorer's
    assert value.loc["ShrunkPopCount"].to_dict() == value.loc["LensKitPop"].to_dict()
    assert value.loc["ShrunkPop"].notna().all()


def test_stress_scenario_with_a_user_defined_scorer_end_to_end(tmp_path):
    code, _, err = invoke(
        ["stress", str(BYO / "byo-stress.toml"), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"]
    )
    assert code == 0, err
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert {"ShrunkPop", "Popular"} <= set(summary["recommender"])


@pytest.mark.parametrize(
    "rec, needle",
    [
        ('{ kind = "lenskit", scorer = "../evil:C" }', "evaluation.recommenders[0].scorer: must be an import path"),
        (
            '{ kind = "lenskit", scorer = "simrec_test_scorers:Nope" }',
            "evaluation.recommenders[0].scorer: `scorer` 'simrec_test_scorers:Nope': module",
        ),
        (
            '{ kind = "lenskit", scorer = "simrec_test_scorers:ShrunkPopScorer", params = { shrink = 1.0 } }',
            "evaluation.recommenders[0].params.shrink: unknown parameter of ShrunkPopScorer",
        ),
        (
            '{ kind = "lenskit", scorer = "simrec_test_scorers:ShrunkPopScorer", params = { shrinkage = 0.0 } }',
            "evaluation.recommenders[0].params: `shrinkage` must be > 0; got 0.0",
        ),
        ('{ kind = "lenskit", algorithm = "popular", scorer = "m:C" }', "give exactly one of `algorithm`"),
        ('{ kind = "lenskit" }', "give exactly one of `algorithm`"),
    ],
)
def test_bad_scorers_are_reported_with_file_key_rule_and_value(tmp_path, rec, needle):
    text = (BYO / "byo-run.toml").read_text()
    start = text.index("recommenders = [")
    scenario = tmp_path / "s.toml"
    # a copy of the scorer module under a name of its own: the one in BYO may be imported already, and a
    # same-named module in another folder is refused (test_same_named_modules_in_two_folders_...)
    module = f"simrec_test_scorers_{zlib.crc32(rec.encode())}"
    scenario.write_text(text[:start] + f"recommenders = [{rec.replace('simrec_test_scorers', module)}]\n")
    (tmp_path / f"{module}.py").write_text((BYO / "simrec_test_scorers.py").read_text())
    code, _, err = invoke(["run", str(scenario), "--out", str(tmp_path / "out")])
    assert code == 2 and err.startswith(f"simrec: error: {scenario}"), err
    assert needle.replace("simrec_test_scorers", module) in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_same_named_modules_in_two_folders_are_refused_not_mixed(tmp_path):
    """Python imports a module once per process: the second folder's file of the same name is refused, naming both."""
    body = "from simrec_test_scorers import ShrunkPopScorer as Base\n\n\nclass Other(Base):\n    pass\n"
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
        (folder / "simrec_dup_scorers_mod.py").write_text(body)
    import_component("simrec_test_scorers:ShrunkPopScorer", BYO)
    try:
        assert import_component("simrec_dup_scorers_mod:Other", a).__name__ == "Other"
        assert import_component("simrec_dup_scorers_mod:Other", a).__name__ == "Other"  # the same folder again: fine
        with pytest.raises(
            ImportPathError,
            match=r"module 'simrec_dup_scorers_mod' is already imported from .*a.*"
            r"simrec_dup_scorers_mod.py.*rename one of them",
        ):
            import_component("simrec_dup_scorers_mod:Other", b)
    finally:
        sys.modules.pop("simrec_dup_scorers_mod", None)
        for folder in (a, b):
            if str(folder) in sys.path:
                sys.path.remove(str(folder))


# -- the trust boundary (issue 22): a file names a class, nothing it names is ever called ------------------------------

#: Strings a hostile (or careless) scenario, stress, assessment file or `ranks -r` option may give as `scorer`, each
#: with the parameters that make it act when called. Before issue 22, validating the file called them.
HOSTILE = {
    "subprocess:getoutput": '{{ cmd = "touch {marker}" }}',
    "os:system": '{{ command = "touch {marker}" }}',
    "shutil:rmtree": '{{ path = "{victim}" }}',
    "builtins:exit": "",
    "antigravity:x": "",  # importing it opens a web browser (here: BROWSER touches the marker)
    "this:s": "",  # importing it prints the Zen of Python
    "numpy:save": '{{ file = "{marker}", arr = [1.0, 2.0] }}',  # a dependency's function
}


def _hostile_rec(scorer: str, marker: Path, victim: Path) -> str:
    params = HOSTILE[scorer].format(marker=marker, victim=victim)
    return f'{{ kind = "lenskit", name = "x", scorer = "{scorer}"{", params = " + params if params else ""} }}'


def _hostile_args(command: str, rec: str, tmp_path: Path) -> list[str]:
    """The command line of ``command`` whose input names the hostile recommender ``rec``."""
    from cli_helpers import RUN_TOML

    out = tmp_path / "out"
    if command == "run":
        text = RUN_TOML.replace('recommenders = [{ kind = "oracle" }, { kind = "popular" }]', f"recommenders = [{rec}]")
    elif command == "stress":
        text = (BYO / "byo-stress.toml").read_text()
        start, end = text.index("recommenders = ["), text.index("[sampling]")
        text = text[:start] + f"recommenders = [{rec}]\n\n" + text[end:]
    elif command == "assess":
        from assess.conftest import assessment_toml

        text = assessment_toml(PAIRS, recommenders=f'recommenders = [{rec}, {{ kind = "popular" }}]')
    else:
        return ["ranks", str(PAIRS), "-r", rec, "-o", str(tmp_path / "ranks.csv"), "-q"]
    path = tmp_path / f"{command}.toml"
    path.write_text(text)
    return [command, str(path), "--out", str(out), "-q"]


PAIRS = Path(__file__).parent / "golden" / "pairs.csv"


@pytest.mark.parametrize("scorer", sorted(HOSTILE))
@pytest.mark.parametrize("command", ["run", "stress", "assess", "ranks"])
def test_a_hostile_scorer_is_refused_before_anything_runs(tmp_path, monkeypatch, command, scorer):
    marker, victim = tmp_path / "PWNED", tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("mine")
    monkeypatch.setenv("BROWSER", f"touch {marker}")
    monkeypatch.chdir(tmp_path)
    fresh = scorer.partition(":")[0] not in sys.modules
    code, out, err = invoke(_hostile_args(command, _hostile_rec(scorer, marker, victim), tmp_path))
    assert code == 2, err  # `builtins:exit` exited 0 with nothing run
    problems = [line for line in err.splitlines() if "scorer" in line and scorer in line]
    assert len(problems) == 1 and "Traceback" not in err, err
    top = scorer.partition(":")[0]
    if top == "numpy":  # a dependency: imported to look the name up, never called
        assert "must name a LensKit Component class" in problems[0] and "got function 'save'" in problems[0], err
    else:  # the standard library: never imported
        assert "part of Python's standard library" in problems[0] and "refused before import" in problems[0], err
        assert not fresh or top not in sys.modules
    assert not list(tmp_path.glob("PWNED*")) and (victim / "precious.txt").read_text() == "mine"
    assert "Beautiful is better" not in out
    assert not (tmp_path / "out").exists() and not (tmp_path / "ranks.csv").exists()


def test_os_abort_is_never_called(tmp_path):
    """`os:abort` killed the process (exit 134) while the file was validated: run in a child, for every command."""
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        from pathlib import Path
        from cli_helpers import invoke
        from test_import_path import _hostile_args
        tmp = Path({str(tmp_path)!r})
        for command in ("run", "stress", "assess", "ranks"):
            (tmp / command).mkdir()
            code, _, err = invoke(_hostile_args(command, '{{ kind = "lenskit", scorer = "os:abort" }}', tmp / command))
            print(command, code, "standard library" in err)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split("\n")[:4] == [f"{c} 2 True" for c in ("run", "stress", "assess", "ranks")], res.stdout


def test_every_standard_library_module_is_refused_before_import():
    before = set(sys.modules)
    for name in sorted(sys.stdlib_module_names):
        with pytest.raises(ImportPathError, match="standard library, which holds no LensKit component"):
            import_component(f"{name}:Anything")
        with pytest.raises(ImportPathError, match="standard library"):
            import_component(f"{name}.sub.module:Anything")
    assert set(sys.modules) == before


@st.composite
def _stdlib_paths(draw) -> str:
    """``module[.sub]:attr`` with a standard-library module and an attribute of a real module or any identifier."""
    module = draw(st.sampled_from(sorted(sys.stdlib_module_names)))
    if draw(st.booleans()):
        module += "." + draw(st.sampled_from(["path", "etree", "client", "util", "abc", "main", "x"]))
    safe = sorted({a for m in (os, string, math, shutil) for a in dir(m) if a.isidentifier() and not iskeyword(a)})
    ident = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True).filter(lambda s: not iskeyword(s))
    attr = draw(st.one_of(st.sampled_from(safe), ident))
    return f"{module}:{attr}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=_stdlib_paths())
def test_standard_library_paths_are_never_imported_or_called(tmp_path, path):
    """Property: through `simrec ranks -r`, a standard-library `module:attr` is refused before its module is imported."""
    top = path.partition(".")[0].partition(":")[0]
    fresh = top not in sys.modules
    rec = f'{{ kind = "lenskit", scorer = "{path}", params = {{ cmd = "touch {tmp_path / "PWNED"}" }} }}'
    code, _, err = invoke(["ranks", str(PAIRS), "-r", rec, "-o", str(tmp_path / "r.csv"), "-q"])
    assert code == 2 and "refused before import" in err and "Traceback" not in err, err
    assert not fresh or top not in sys.modules
    assert not (tmp_path / "PWNED").exists()

"""Bring your own algorithm: LensKit components named by import path (simrec.recommenders.import_path)."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import pandas as pd
import pytest

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
    assert callable(import_component("simrec_test_scorers:make_shrunk_pop", BYO))


@pytest.mark.parametrize(
    "path, message",
    [
        ("simrec_no_such_module_xyz:C", "no module named 'simrec_no_such_module_xyz'"),
        ("simrec_test_scorers:Missing", "module 'simrec_test_scorers' has no attribute 'Missing'"),
        ("simrec_test_scorers:NOT_CALLABLE", "must be a LensKit Component class"),
        ("simrec_test_scorers:ShrunkPopConfig", "must be a LensKit Component class"),  # a class, not a Component
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
    factory = import_component("simrec_test_scorers:not_a_component", BYO)
    assert "must return a LensKit Component; got int" in param_problems(factory, {})[0][1]
    assert "TypeError" in param_problems(import_component("simrec_test_scorers:make_shrunk_pop", BYO), {"x": 1})[0][1]


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
    assert set(res["recommender"]) == {"LensKitPop", "ShrunkPop", "ShrunkPopFactory"}
    value = res.set_index(["recommender", "metric", "truth"])["value"].sort_index()
    # c / (c + s) orders items exactly as LensKit's PopScorer with score = "count" does, ties included; LensKit's
    # ranker breaks ties the same way: the user-defined scorer's lists, hence metrics, are PopScorer's
    assert value.loc["ShrunkPopFactory"].to_dict() == value.loc["LensKitPop"].to_dict()
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

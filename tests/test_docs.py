"""The README stays short and true, its links stay inside the repository, and the documentation site builds.

The site's own links between pages are checked by the Sphinx build (``-n``:
a link to a missing page or heading fails it); the fast tests here check the
links Sphinx does not see: the README's, and the docs pages' links to files
that are not pages.
"""

from __future__ import annotations

import doctest
import importlib
import re
import subprocess
import sys
import tomllib
import unicodedata
from pathlib import Path

import pytest

import simrec
from simrec.config.run import load_scenario

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def _prose(text: str) -> list[tuple[int, str]]:
    """The lines of a Markdown text outside fenced code blocks, with their numbers."""
    out, fence = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line.strip()):
            fence = not fence
            continue
        if not fence:
            out.append((i, line))
    return out


def _links(path: Path) -> list[tuple[int, str]]:
    lines = [(i, re.sub(r"`[^`]*`", "", line)) for i, line in _prose(path.read_text(encoding="utf-8"))]
    return [(i, m.group(1)) for i, line in lines for m in _LINK.finditer(line)]  # not inside inline code


def _slug(heading: str) -> str:
    """GitHub's (and MyST's) anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for _, line in _prose(path.read_text(encoding="utf-8")) if line.startswith("#")}


def _problems(source: Path, links: list[tuple[int, str]], allow_external: bool) -> list[str]:
    problems = []
    for line, target in links:
        where = f"{source.relative_to(ROOT)}:{line}: {target}"
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            if not allow_external:
                problems.append(f"{where}: links outside the repository")
            continue
        path_part, _, anchor = target.partition("#")
        dest = (source.parent / path_part).resolve() if path_part else source
        if ROOT not in (dest, *dest.parents):
            problems.append(f"{where}: leaves the repository")
        elif not dest.exists():
            problems.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}")
    return problems


def test_readme_is_short() -> None:
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 250, f"README.md has {n} lines; the first five minutes fit in 250: move detail into docs/"


def test_every_readme_link_resolves_inside_the_repository() -> None:
    links = _links(README)
    assert len(links) > 20  # the links the README promises (docs pages, notebooks, figures)
    assert _problems(README, links, allow_external=False) == []


def test_docs_pages_link_to_files_that_exist() -> None:
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts and "generated" not in p.parts]
    assert len(pages) >= 15
    problems = [p for page in pages for p in _problems(page, _links(page), allow_external=True)]
    assert problems == []


def test_the_link_checker_finds_a_broken_link(tmp_path: Path) -> None:
    page = ROOT / "docs" / "x.md"  # never written: only its folder is used to resolve the links
    links = [(1, "getting-started.md#2-a-first-run"), (2, "getting-started.md#no-such"), (3, "missing.md")]
    links += [(4, "../../outside.md"), (5, "https://example.org")]
    problems = _problems(page, links, allow_external=False)
    assert [p.split(": ")[0] for p in problems] == ["docs/x.md:2", "docs/x.md:3", "docs/x.md:4", "docs/x.md:5"]


def test_slugs_match_the_anchors_markdown_renderers_make() -> None:
    assert _slug(" 3. Reading the results") == "3-reading-the-results"
    assert _slug(" 4. Evaluation experiment (thesis §3.5, §4.2-4.3)") == "4-evaluation-experiment-thesis-35-42-43"
    assert _slug(" Assessing your own evaluation (`simrec assess`)") == "assessing-your-own-evaluation-simrec-assess"


def _readme_block(after: str, lang: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"```{lang}\n", text.index(after)) + len(f"```{lang}\n")
    return text[start : text.index("```", start)]


def test_the_readme_scenario_is_valid(tmp_path: Path) -> None:
    block = _readme_block("A minimal scenario", "toml")
    path = tmp_path / "demo.toml"
    path.write_text(block, encoding="utf-8")
    scenario, _ = load_scenario(path)
    assert scenario.name == "demo" and scenario.replicates == 10
    assert [w.name for w in scenario.world] == ["ibp-pop"]
    assert len(scenario.evaluation.recommenders) == 4


def test_the_readme_library_example_runs() -> None:
    code = _readme_block("## Using the library", "python")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("Interactions(n_users=") == 2


def test_the_own_algorithm_scorers_score_as_their_docstrings_say(tmp_path: Path) -> None:
    """docs/howto/own-algorithm.md's two scorers, as printed, run through simrec's LensKit wrapper and give the
    scores their docstrings state (the co-occurrence one reads the user's history: issue 28)."""
    import numpy as np

    from simrec.interactions import Interactions
    from simrec.recommenders import LensKitRecommender
    from simrec.recommenders.import_path import import_component

    text = (DOCS / "howto" / "own-algorithm.md").read_text(encoding="utf-8")
    for name in ("my_scorers", "my_cooc"):
        start = text.index(f"```python\n# {name}.py\n") + len("```python\n")
        (tmp_path / f"{name}.py").write_text(text[start : text.index("```", start)], encoding="utf-8")
    rng = np.random.default_rng(28)
    dense = rng.random((20, 12)) < 0.3
    dense[:, 11] = False  # an item nobody has seen
    train = Interactions.from_pairs(*np.nonzero(dense), shape=dense.shape)
    counts = dense.sum(axis=0).astype(float)
    cooc = dense.T.astype(float) @ dense
    np.fill_diagonal(cooc, 0)
    expected = {
        "my_scorers:ShrunkPopScorer": lambda u: (counts + 50.0 * 0.0) / (20 + 50.0),  # shrinkage 50, prior 0
        "my_cooc:CoocScorer": lambda u: cooc[:, dense[u]] @ (1.0 / (counts[dense[u]] + 5.0)),
    }
    params = {"my_scorers:ShrunkPopScorer": {"shrinkage": 50.0}, "my_cooc:CoocScorer": {"damping": 5.0}}
    for path, want in expected.items():
        import_component(path, tmp_path)  # puts the folder on sys.path, as a scenario beside the file does
        scores = LensKitRecommender(path, **params[path]).score(train, None, rng=0)
        for u in range(train.n_users):
            unseen = ~dense[u]
            assert np.all(np.isneginf(scores[u, ~unseen]))  # LensKit's scores are float32: rtol 1e-6
            np.testing.assert_allclose(scores[u, unseen], want(u)[unseen], rtol=1e-6, err_msg=f"{path}, user {u}")


def _subset_problems(shown: dict, shipped: dict, where: str = "") -> list[str]:
    out = []
    for key, value in shown.items():
        if key not in shipped:
            out.append(f"{where}{key}: not in the shipped file")
        elif isinstance(value, dict) and isinstance(shipped[key], dict):
            out += _subset_problems(value, shipped[key], f"{where}{key}.")
        elif value != shipped[key]:
            out.append(f"{where}{key}: shown {value!r}, shipped {shipped[key]!r}")
    return out


def test_the_abridged_assessment_file_matches_the_shipped_one() -> None:
    """docs/howto/assess.md shows ``assessments/ml100k-assess.toml`` abridged: every key it shows has the shipped value."""
    text = (DOCS / "howto" / "assess.md").read_text(encoding="utf-8")
    start = text.index("```toml\n", text.index("ml100k-assess.toml`, abridged")) + len("```toml\n")
    shown = tomllib.loads(text[start : text.index("```", start)])
    shipped = tomllib.loads((ROOT / "assessments" / "ml100k-assess.toml").read_text(encoding="utf-8"))
    assert len(shown) >= 6 and _subset_problems(shown, shipped) == []


def test_citation_file_names_this_version() -> None:
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(simrec.__version__)}$", cff, re.MULTILINE)
    with open(ROOT / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["version"] == simrec.__version__


#: Modules whose docstrings hold examples (found without importing anything).
DOCTEST_MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in (ROOT / "simrec").rglob("*.py")
    if ">>> " in p.read_text(encoding="utf-8")
)


#: Examples that take seconds (simrec.sampling's fits an MLE with 20 bootstrap replicates at N = 10,000).
SLOW_DOCTESTS = {"simrec.sampling"}


@pytest.mark.parametrize(
    "name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW_DOCTESTS else m for m in DOCTEST_MODULES]
)
def test_docstring_examples_run(name: str) -> None:
    """The examples the API reference shows run as written (``# doctest: +SKIP`` marks the ones that cannot)."""
    module = importlib.import_module(name)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures = []
    for test in finder.find(module, name):
        result = runner.run(test, out=failures.append)
        assert result.failed == 0, "".join(failures)


def test_doctest_modules_are_found() -> None:
    assert {"simrec.sampling", "simrec.stress", "simrec.provenance"} <= set(DOCTEST_MODULES)


@pytest.mark.slow
def test_the_documentation_site_builds_without_a_warning(tmp_path: Path) -> None:
    """``make docs``'s build: every page re-read, every warning and unresolved reference an error (about 3 min)."""
    pytest.importorskip("sphinx", reason="the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("myst_nb", reason="the docs extra: pip install -e '.[docs]'")
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going", "-n", "-q"]
    out = subprocess.run([*cmd, str(DOCS), str(tmp_path / "html")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-5000:]
    html = tmp_path / "html"
    for page in ["index", "getting-started", "howto/assess", "concepts/estimators", "api/generated/simrec.sampling"]:
        assert (html / f"{page}.html").is_file(), page
    assert (html / "notebooks" / "01-tour.html").is_file()

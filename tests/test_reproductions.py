"""Committed results are stamped, and stamped with the draws version of this code.

A committed reproduction (``reproductions/*/``, the calibration REPORTs, shipped
presets made by a run) is only worth its numbers if the code still draws them:
a run of another draws version (:data:`simrec._random.DRAWS_VERSION`) gives
other numbers for the same seed. Rules checked here (issue 27):

* every CSV under ``reproductions/`` is either published numbers (a non-empty
  ``source`` column naming repository, commit and file) or simrec's (the
  columns ``simrec_version``, ``git_commit`` and ``draws_version``, filled);
* every ``draws_version`` recorded there, and every stamp line
  ``Made with simrec <version>, commit <sha>, draws version <n>`` in a REPORT,
  Markdown file or preset comment of ``reproductions/``, ``calibration/`` and
  ``simrec/presets/``, names this code's draws version;
* every REPORT under ``reproductions/`` carries at least one stamp;
* every committed executed notebook (``notebooks/*.ipynb``) carries at least
  one stamp, in a Markdown cell or a code cell's output (e.g. printed by
  :func:`simrec.provenance.stamp_line` from its run folder), and each of its
  stamps names this code's draws version; a stamp line whose commit is not a
  commit (``<sha>+modified``, ``unknown``: run from a changed or unknown tree)
  does not count as a stamp.

The tests fail when the draws version is raised without regenerating (or
re-stamping) the committed results; ``test_stamp_rules_catch_a_stale_stamp``
shows each rule failing on a stale copy.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from simrec._random import DRAWS_VERSION

ROOT = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"Made with simrec (\S+), commit ([0-9a-f]{7,40}), draws version (\d+)")
#: Anything that looks like a stamp, valid or not (e.g. ``commit 8d7d774+modified``).
ANY_STAMP = re.compile(r"Made with simrec \S+, commit ([^,\s]+), draws version (\d+)")
STAMP_COLUMNS = ("simrec_version", "git_commit", "draws_version")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def csv_problems(path: Path, draws: int = DRAWS_VERSION) -> list[str]:
    """What is wrong with a committed result table (empty: nothing)."""
    frame = pd.read_csv(path)
    if "source" in frame.columns:
        if frame["source"].isna().any() or (frame["source"].astype(str).str.strip() == "").any():
            return [f"{path}: rows without a source"]
        stamped = [c for c in STAMP_COLUMNS if c in frame.columns]
        if not stamped:
            return []
    missing = [c for c in STAMP_COLUMNS if c not in frame.columns]
    if missing:
        return [f"{path}: neither a source column nor the stamp columns (missing {', '.join(missing)})"]
    problems = [f"{path}: empty {c}" for c in STAMP_COLUMNS if frame[c].isna().any()]
    stale = sorted(set(frame["draws_version"].dropna().astype(int)) - {draws})
    if stale:
        problems.append(f"{path}: draws version {stale} recorded, this code draws version {draws}")
    return problems


def text_problems(path: Path, draws: int = DRAWS_VERSION, *, need_stamp: bool = False) -> list[str]:
    """Stamps of another draws version in a text file (and, with ``need_stamp``, no stamp at all)."""
    stamps = STAMP.findall(path.read_text(encoding="utf-8"))
    problems = [
        f"{path}: stamped draws version {d} (simrec {v}, commit {c}), this code draws version {draws}"
        for v, c, d in stamps
        if int(d) != draws
    ]
    if need_stamp and not stamps:
        problems.append(f"{path}: no stamp line ('Made with simrec <version>, commit <sha>, draws version <n>')")
    return problems


def _notebook_text(path: Path) -> str:
    """A notebook's Markdown cells and its code cells' text outputs (streams, text/plain, text/markdown)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    parts = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    for c in cells:
        for out in c.get("outputs", []) if c["cell_type"] == "code" else []:
            parts.append("".join(out.get("text", "")))
            data = out.get("data", {})
            parts += ["".join(data.get(kind, "")) for kind in ("text/plain", "text/markdown")]
    return "\n".join(parts)


def notebook_problems(path: Path, draws: int = DRAWS_VERSION) -> list[str]:
    """What is wrong with a committed notebook's stamps (empty: nothing)."""
    text = _notebook_text(path)
    stamps = STAMP.findall(text)
    problems = [
        f"{path}: stamped draws version {d} (simrec {v}, commit {c}), this code draws version {draws}"
        for v, c, d in stamps
        if int(d) != draws
    ]
    problems += [
        f"{path}: a stamp without a commit ('commit {c}'): re-execute it from a clean clone"
        for c, _ in ANY_STAMP.findall(text)
        if not re.fullmatch(r"[0-9a-f]{7,40}", c)
    ]
    if not stamps:
        problems.append(f"{path}: no stamp line ('Made with simrec <version>, commit <sha>, draws version <n>')")
    return problems


def _files(pattern: str, *folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob(pattern))


def test_reproduction_tables_are_sourced_or_stamped_with_this_draws_version():
    tables = _files("*.csv", "reproductions")
    assert tables, "no committed reproduction tables found"
    problems = [p for path in tables for p in csv_problems(path)]
    assert problems == []


def test_reports_and_presets_are_stamped_with_this_draws_version():
    reports = _files("REPORT.md", "reproductions")
    assert reports
    texts = _files("*.md", "reproductions", "calibration") + _files("*.toml", "simrec/presets")
    problems = [p for path in texts for p in text_problems(path, need_stamp=path in reports)]
    assert problems == []
    assert any(STAMP.search(p.read_text(encoding="utf-8")) for p in _files("*.toml", "simrec/presets"))


def test_committed_notebooks_are_stamped_with_this_draws_version():
    assert len(NOTEBOOKS) >= 8, "no committed notebooks found"
    problems = [p for path in NOTEBOOKS for p in notebook_problems(path)]
    assert problems == []


def _notebook(path: Path, markdown: str = "", output: str = "") -> Path:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": [markdown]},
        {"cell_type": "code", "metadata": {}, "source": ["print(1)"], "execution_count": 1,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": [output]}]},
    ]  # fmt: skip
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_stamp_rules_catch_an_unstamped_or_stale_notebook(tmp_path):
    """A notebook without a stamp, with another draws version or stamped from a changed tree fails."""
    good = "Made with simrec 0.1.0, commit 8d7d774, draws version 2\n"
    assert notebook_problems(_notebook(tmp_path / "md.ipynb", markdown=good), draws=2) == []
    assert notebook_problems(_notebook(tmp_path / "out.ipynb", output=good), draws=2) == []
    bare = _notebook(tmp_path / "bare.ipynb", markdown="Numbers.", output="0.5\n")
    assert notebook_problems(bare, draws=2) == [
        f"{bare}: no stamp line ('Made with simrec <version>, commit <sha>, draws version <n>')"
    ]
    assert notebook_problems(tmp_path / "out.ipynb", draws=3) == [
        f"{tmp_path / 'out.ipynb'}: stamped draws version 2 (simrec 0.1.0, commit 8d7d774), this code draws version 3"
    ]
    dirty = _notebook(tmp_path / "dirty.ipynb", output=good.replace("8d7d774", "8d7d774+modified"))
    assert [p.split(": ", 1)[1] for p in notebook_problems(dirty, draws=2)] == [
        "a stamp without a commit ('commit 8d7d774+modified'): re-execute it from a clean clone",
        "no stamp line ('Made with simrec <version>, commit <sha>, draws version <n>')",
    ]


def test_stamp_rules_catch_a_stale_stamp(tmp_path):
    """Each rule fails on a stale or unstamped copy (so the tests above can fail)."""
    ours = pd.DataFrame({"x": [1.0], "simrec_version": ["0.1.0"], "git_commit": ["abc1234"], "draws_version": [1]})
    ours.to_csv(tmp_path / "ours.csv", index=False)
    assert csv_problems(tmp_path / "ours.csv", draws=2) == [
        f"{tmp_path / 'ours.csv'}: draws version [1] recorded, this code draws version 2"
    ]
    assert csv_problems(tmp_path / "ours.csv", draws=1) == []
    pd.DataFrame({"x": [1.0]}).to_csv(tmp_path / "bare.csv", index=False)
    assert "neither a source column nor the stamp columns" in csv_problems(tmp_path / "bare.csv")[0]
    pd.DataFrame({"x": [1.0, 2.0], "source": ["repo@abc:file", None]}).to_csv(tmp_path / "pub.csv", index=False)
    assert csv_problems(tmp_path / "pub.csv") == [f"{tmp_path / 'pub.csv'}: rows without a source"]
    report = tmp_path / "REPORT.md"
    report.write_text("Numbers.\n\nMade with simrec 0.1.0, commit 288fc5e, draws version 1.\n", encoding="utf-8")
    assert text_problems(report, draws=2) == [
        f"{report}: stamped draws version 1 (simrec 0.1.0, commit 288fc5e), this code draws version 2"
    ]
    report.write_text("Numbers without a stamp.\n", encoding="utf-8")
    assert text_problems(report, draws=2) == []
    assert "no stamp line" in text_problems(report, draws=2, need_stamp=True)[0]

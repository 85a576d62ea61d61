"""The notebooks in ``notebooks/`` run top to bottom at the small scale.

Each notebook is copied into a temporary folder and executed there with
nbclient (``SIMREC_NOTEBOOK_SCALE=small``, ``SIMREC_REPO`` pointing at this
repository, run folders under the temporary folder), so the committed,
executed notebooks are never overwritten. The kernel is ``python3`` from the
ipykernel of the interpreter running the tests (the project's venv). A cell
that raises fails the test with the cell's source and traceback.

Notebooks needing ``../shared/data`` print a message and skip their analysis
when it is absent (they must still run without errors). The per-notebook
timeout bounds a runaway cell; at the small scale each notebook takes well
under a minute on a quiet 2-core machine.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Seconds any one cell may take at the small scale before the test fails.
CELL_TIMEOUT = 300


def test_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert {
        "01-tour",
        "02-tian-thesis",
        "03-krichene-rendle",
        "04-li-jin",
        "05-li-dissertation",
        "06-significance",
        "07-yang",
    } <= names


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_at_small_scale(notebook: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from nbclient.exceptions import CellExecutionError

    copy = tmp_path / notebook.name
    shutil.copy(notebook, copy)
    committed = notebook.read_bytes()
    monkeypatch.setenv("SIMREC_NOTEBOOK_SCALE", "small")
    monkeypatch.setenv("SIMREC_REPO", str(ROOT))
    monkeypatch.setenv("SIMREC_NOTEBOOK_OUT", str(tmp_path / "runs"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    nb = nbformat.read(copy, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()
    except CellExecutionError as exc:  # the failing cell's source and traceback, without the kernel's noise
        pytest.fail(f"{notebook.name}: a cell raised:\n{exc}", pytrace=False)
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert not errors, f"{notebook.name}: error outputs {errors}"
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code" and c.source.strip())
    assert notebook.read_bytes() == committed, "the committed notebook must not be modified by the test"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_executed_with_figures(notebook: Path):
    """The committed copy keeps its outputs (at the full scale) and shows its figures as PNG."""
    nb = nbformat.read(notebook, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code and all(c.get("execution_count") for c in code), "commit the notebook executed, top to bottom"
    assert not [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", []))
    scale = [c for c in code if "SIMREC_NOTEBOOK_SCALE" in c.source]
    assert scale and '"full"' in scale[0].source

"""Running the ``simrec`` entry point in-process, as a user's shell would (for the boundary tests).

:func:`invoke` calls :func:`simrec.cli.main` (not the typer app directly), so
the boundary's own handling of usage errors, Ctrl-C and unexpected errors is
what the tests see; it returns the exit code and what was printed.
"""

from __future__ import annotations

import contextlib
import io
import textwrap
from pathlib import Path

from simrec.cli import main

#: A tiny valid run scenario (one replicate of one small world).
RUN_TOML = textwrap.dedent("""
    name = "tiny"
    seed = 3
    replicates = 1
    [population]
    n_users = 40
    n_items = 60
    [[world]]
    name = "unif-unif"
    preference = { model = "uniform", lam = 12.0 }
    observation = { sampler = "uniform", profile = { model = "pareto", m_low = 3, alpha = 1.0, m_high = 10 } }
    [evaluation]
    n = 5
    metrics = ["precision", "recall"]
    recommenders = [{ kind = "oracle" }, { kind = "popular" }]
""")

#: A tiny stress scenario on a ranks file ``ranks.csv`` beside it (3 repeats, one scheme and size).
STRESS_FILE_TOML = textwrap.dedent("""
    kind = "stress"
    name = "mine"
    seed = 1
    repeats = 3
    [source]
    type = "file"
    path = "ranks.csv"
    [sampling]
    schemes = ["binomial"]
    sizes = [10]
    [estimators]
    names = ["naive", "MLE"]
    [metrics]
    k_max = 5
    curve_k = 5
    curve_sizes = [10]
""")


#: A tiny valid calibration sweep (one cell, two GP calls) of the golden pairs table.
SWEEP_TOML = textwrap.dedent(f"""
    name = "tiny-sweep"
    seed = 5
    n_calls = 2
    n_initial = 2
    preferences = ["uniform"]
    observations = ["popularity"]
    stat_pairs = 2000
    [[dataset]]
    name = "pairs"
    path = "{Path(__file__).resolve().parent / "golden" / "pairs.csv"}"
    kind = "pairs"
""")


def assert_one_line(code: int, err: str, *needles: str, expected: int = 2) -> None:
    """A refusal as the boundary promises it: exit code ``expected``, one line on stderr, no traceback."""
    assert code == expected, err
    assert err.startswith("simrec: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


def invoke(args: list[str]) -> tuple[int, str, str]:
    """``simrec ARGS`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def files_under(folder: Path) -> set[str]:
    """Every file and folder below ``folder`` (relative paths)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}

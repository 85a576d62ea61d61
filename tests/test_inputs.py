"""Inputs bounded before they are read (simrec._inputs) and values quoted short (simrec._validation.quote), issue 22.

The command-line cases are in ``tests/test_boundary_inputs.py``; here the
helpers themselves, including the swap of a checked file for a FIFO between
the check and the open (run in a child process with a timeout, so a
regression fails instead of hanging).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simrec._inputs import (
    DEFAULT_MAX_DATA_SIZE,
    DEFAULT_MAX_TOML_SIZE,
    MAX_TOML_DEPTH,
    InputFileError,
    check_input_file,
    max_input_size,
    open_input,
    parse_toml,
    read_input,
)
from simrec._validation import QUOTE_LIMIT, parse_size, quote
from simrec.recommenders.coverage import UNSCORED, empty_lists, unscored_note, unscored_rows


# -- quote ---------------------------------------------------------------------------------------------
def test_quote_cuts_a_50_mb_string_and_says_how_long_it_was():
    text = quote("x" * 52_428_800)
    assert len(text) < QUOTE_LIMIT + 40
    assert text.endswith("…' (52,428,800 characters)")
    assert text.startswith("'xxxx")


def test_quote_leaves_short_values_as_repr():
    for value in ("abc", 3, 2.5, None, [1, 2], {"a": 1}, "x" * QUOTE_LIMIT):
        assert quote(value) == repr(value)


@pytest.mark.parametrize(
    "value, tail",
    [
        (list(range(10**6)), "(1,000,000 entries)"),
        ({str(i): i for i in range(1000)}, "(1,000 entries)"),
        (b"\x00" * 10**6, "(1,000,000 bytes)"),
        ("\x00" * 1000, "(1,000 characters)"),  # escapes make the repr 4x longer: still cut
        ([["y" * 10**6]], "(1 entry)"),
    ],
)
def test_quote_bounds_containers_bytes_and_escapes(value, tail):
    text = quote(value)
    assert len(text) <= QUOTE_LIMIT + 40, text
    assert text.endswith(tail), text


@given(st.one_of(st.text(), st.binary(), st.lists(st.text()), st.dictionaries(st.text(), st.integers())))
def test_quote_is_always_short(value):
    assert len(quote(value)) <= QUOTE_LIMIT + 40


def test_parse_size():
    assert parse_size("x", "8G") == 8 * 2**30
    assert parse_size("x", "1.5M") == int(1.5 * 2**20)
    assert parse_size("x", "512KiB") == 512 * 2**10
    with pytest.raises(ValueError, match="`SIZE` must be a size such as 8G") as exc:
        parse_size("SIZE", "y" * 10**6)
    assert len(str(exc.value)) < 250


# -- regular files within a limit -------------------------------------------------------------------------
def test_limits_default_and_override(monkeypatch):
    monkeypatch.delenv("SIMREC_MAX_TOML_SIZE", raising=False)
    monkeypatch.delenv("SIMREC_MAX_DATA_SIZE", raising=False)
    assert max_input_size("toml") == DEFAULT_MAX_TOML_SIZE == 2**20
    assert max_input_size("data") == DEFAULT_MAX_DATA_SIZE == 16 * 2**30
    monkeypatch.setenv("SIMREC_MAX_TOML_SIZE", "4M")
    monkeypatch.setenv("SIMREC_MAX_DATA_SIZE", "100")
    assert max_input_size("toml") == 4 * 2**20
    assert max_input_size("data") == 100
    monkeypatch.setenv("SIMREC_MAX_DATA_SIZE", "lots")
    with pytest.raises(ValueError, match="SIMREC_MAX_DATA_SIZE"):
        max_input_size("data")


@pytest.mark.parametrize("what", ["folder", "fifo", "device", "socket"])
def test_only_regular_files_are_opened(tmp_path, what):
    if what == "folder":
        path, word = tmp_path, "a folder"
    elif what == "fifo":
        path, word = tmp_path / "f", "a named pipe (FIFO)"
        os.mkfifo(path)
    elif what == "device":
        path, word = "/dev/zero", "a character device"
    else:
        import socket

        path, word = tmp_path / "s", "a socket"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    for call in (check_input_file, open_input, read_input):
        with pytest.raises(InputFileError, match=re.escape(f"is {word}, not a regular file; expected a thing")):
            call(path, "toml", "a thing")


def test_a_file_over_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "a.toml"
    path.write_bytes(b"#" * (2**20 + 1))
    with pytest.raises(InputFileError, match=r"1.0 MiB \(1,048,577 bytes\), over simrec's limit of 1.0 MiB") as exc:
        read_input(path, "toml", "a TOML file")
    assert "SIMREC_MAX_TOML_SIZE" in str(exc.value)
    monkeypatch.setenv("SIMREC_MAX_TOML_SIZE", "2M")
    assert len(read_input(path, "toml", "a TOML file")) == 2**20 + 1


def test_the_file_is_checked_again_after_opening(tmp_path):
    """A file swapped for a FIFO between the check and the open: refused, no hang (a child process, timed out)."""
    script = textwrap.dedent(f"""
        import os
        import simrec._inputs as inputs
        path = {str(tmp_path / "scenario.toml")!r}
        open(path, "w").write("a = 1")
        checked = inputs.check_input_file

        def check_then_swap(p, kind, expected):
            st = checked(p, kind, expected)   # a regular file when checked ...
            os.remove(p)
            os.mkfifo(p)                      # ... a FIFO when opened
            return st

        inputs.check_input_file = check_then_swap
        try:
            inputs.read_input(path, "toml", "a TOML file")
        except inputs.InputFileError as exc:
            print(exc)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "is a named pipe (FIFO), not a regular file" in res.stdout


# -- TOML nesting ------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 10_000 + "]" * 10_000,
        "a = " + "{ b = " * 10_000 + "1" + " }" * 10_000,
        "a" + ".a" * 10_000 + " = 1",
        "[" + ".".join(["t"] * 5000) + "]\nx = 1",
        "a = " + "[" * (MAX_TOML_DEPTH + 1) + "]" * (MAX_TOML_DEPTH + 1),
    ],
    ids=["arrays", "inline-tables", "dotted-keys", "table-header", "just-over"],
)
def test_deep_nesting_is_refused(text):
    with pytest.raises(InputFileError, match=f"f.toml: nested more than {MAX_TOML_DEPTH} levels deep"):
        parse_toml(text, "f.toml")


def test_nesting_up_to_the_limit_parses():
    text = "a = " + "[" * (MAX_TOML_DEPTH - 1) + "]" * (MAX_TOML_DEPTH - 1)
    assert parse_toml(text, "f.toml") == tomllib.loads(text)
    with pytest.raises(tomllib.TOMLDecodeError):
        parse_toml("a = ", "f.toml")


# -- users without lists or scores -------------------------------------------------------------------------
def test_unscored_rows_and_empty_lists():
    scores = np.array(
        [
            [1.0, -np.inf, np.nan],  # one scored candidate
            [UNSCORED, -np.inf, np.nan],  # none
            [np.nan, np.nan, np.nan],  # none
            [np.inf, UNSCORED, UNSCORED],  # +inf is a score
        ]
    )
    np.testing.assert_array_equal(unscored_rows(scores), [False, True, True, False])
    exclude = np.array([[True, False, False]] + [[False] * 3] * 3)
    np.testing.assert_array_equal(unscored_rows(scores, exclude), [True, True, True, False])
    np.testing.assert_array_equal(empty_lists(np.array([[3, -1], [-1, -1], [0, 1]])), [False, True, False])


def test_unscored_note_threshold():
    assert unscored_note("r", 10, 100, "x") is None  # 10% is not more than 10%
    note = unscored_note("r", 11, 100, "no candidate scored")
    assert note is not None and note.startswith("recommender 'r': no candidate scored, for 11 of 100 users (11%")
    assert unscored_note("r", 0, 0, "x") is None

"""Fuzzing the input boundary (issue 12): run, stress and sweep files and ranks files.

Hypothesis starts from a small valid file of each kind and mutates it: a
value replaced by a hostile one (huge or negative numbers, NaN, wrong types,
path-like names, non-ASCII text), a key deleted or an unknown key added, or
the file's bytes garbled. Each input goes through the real entry point
(:func:`simrec.cli.main`) with ``--max-memory 2G``, in a process whose address
space is capped at its current size plus 4 GiB, and must end in exactly one of:

* exit 0 with a complete run folder, or
* exit 2 with one message naming the file (or the ``--out`` folder),

never a traceback or an "internal error", never a file outside ``--out``, and
never an allocation beyond the guard (a ``MemoryError`` would surface as exit 1).

The examples are derandomized (the same inputs in every run, so CI is
repeatable); set ``FUZZ_EXAMPLES`` to search longer, with fresh random inputs, locally.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import RUN_TOML, files_under, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PAIRS = Path(__file__).resolve().parent / "golden" / "pairs.csv"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20"))

RANKS_CSV = "user,recommender,rank,n_candidates,popularity_share\n" + "".join(
    f"u{i},{rec},{1 + (i * 7 + k) % 50},120,{(i % 10) / 10}\n" for k, rec in enumerate(["A", "B"]) for i in range(40)
)

STRESS = {
    "kind": "stress",
    "name": "fuzz",
    "seed": 1,
    "repeats": 2,
    "source": {"type": "file", "path": "ranks.csv"},
    "sampling": {"schemes": ["binomial", "popularity"], "sizes": [10]},
    "estimators": {"names": ["naive", "CLS", "MLE"], "max_iter": 20},
    "metrics": {"k_max": 5, "curve_k": 5, "curve_sizes": [10]},
}
SWEEP = {
    "name": "fuzz",
    "seed": 2,
    "n_calls": 2,
    "n_initial": 2,
    "preferences": ["uniform"],
    "observations": ["popularity"],
    "objectives": ["item_popularity"],
    "stat_pairs": 2000,
    "max_pairs": 200000,
    "dataset": [{"name": "pairs", "path": str(PAIRS), "kind": "pairs"}],
}
BASES = {"run": tomllib.loads(RUN_TOML), "stress": STRESS, "calibrate": SWEEP}
ARGS = {"run": [], "stress": [], "calibrate": ["--n-calls", "2"]}

HOSTILE = st.one_of(
    st.sampled_from(
        [
            -1,
            0,
            1,
            2,
            3,
            10**9,
            10**20,
            2**63 - 1,
            -(2**63),
            0.5,
            -0.5,
            1e9,
            1e300,
            math.nan,
            math.inf,
            True,
            False,
            "",
            "x",
            "../../escape",
            "a/b",
            "ü",
            "uniform",
            "ibp",
            "lda",
            "popularity",
            "pareto",
            "binomial",
            "adaptive",
            "MLE",
            [],
            [0],
            [10**9],
            {},
            {"a": 1},
        ]
    ),
    st.integers(-3, 300),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.text(max_size=6),
)


# -- a small TOML writer (inline tables, so arrays of tables need no headers) ------------------------
def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON string escapes are valid TOML basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(x)}" for k, x in v.items()) + " }"


def to_toml(d: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(str(k))} = {_toml(v)}\n" for k, v in d.items())


def _paths(v: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a nested dict/list value (the value's own path first)."""
    out = [prefix] if prefix else []
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, (*prefix, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, (*prefix, i))
    return out


def _mutated(base: dict, data: st.DataObject) -> dict:
    doc = json.loads(json.dumps(base))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        paths = _paths(doc)
        path = data.draw(st.sampled_from(paths), label="path")
        *parent_path, last = path
        parent = doc
        for p in parent_path:
            parent = parent[p]
        action = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]), label="action")
        if action == "replace":
            parent[last] = data.draw(HOSTILE, label="value")
        elif action == "delete" and isinstance(parent, dict):
            del parent[last]
        elif isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["bogus", "Name", "seed "]), label="key")] = data.draw(HOSTILE)
    return doc


def _garbled(text: str, data: st.DataObject) -> bytes:
    raw = bytearray(text.encode())
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        i = data.draw(st.integers(0, len(raw)), label="at")
        byte = data.draw(st.integers(0, 255), label="byte")
        if data.draw(st.booleans(), label="insert") or i == len(raw):
            raw.insert(i, byte)
        else:
            raw[i] = byte
    return bytes(raw)


@contextlib.contextmanager
def memory_cap(extra: int = 4 * 2**30):
    """Cap this process's address space at its current size plus ``extra`` (restored afterwards)."""
    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _check(kind: str, content: bytes, ranks: bytes = RANKS_CSV.encode()) -> int:
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        spec = work / "spec.toml"
        spec.write_bytes(content)
        (work / "ranks.csv").write_bytes(ranks)
        out = work / "out"
        with memory_cap():
            code, _, err = invoke(
                [kind, str(spec), "--out", str(out), "--quiet", "--no-figures", "--max-memory", "2G", *ARGS[kind]]
            )
        assert "Traceback" not in err and "internal error" not in err, err
        assert code in (0, 2), f"exit {code}: {err}"
        if code == 2:
            first = err.splitlines()[0]
            assert first.startswith("simrec: error: ") and (str(spec) in first or "--out" in first), err
        else:
            manifest = json.loads((out / "manifest.json").read_text())
            assert manifest["status"] == "complete"
        outside = {p for p in files_under(work) if p.split("/")[0] not in ("spec.toml", "ranks.csv", "out")}
        assert not outside, f"written outside --out: {outside}"
    return code


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("kind", sorted(BASES))
def test_bases_are_valid(kind, tmp_path):
    """The starting points run to completion (so mutations start from a valid file)."""
    assert _check(kind, to_toml(BASES[kind]).encode()) == 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(BASES))
@FUZZ
@given(data=st.data())
def test_mutated_files(kind, data):
    _check(kind, to_toml(_mutated(BASES[kind], data)).encode())


@pytest.mark.parametrize("kind", sorted(BASES))
@FUZZ
@given(data=st.data())
def test_garbled_files(kind, data):
    _check(kind, _garbled(to_toml(BASES[kind]), data))


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_mutated_ranks_files(data):
    lines = RANKS_CSV.splitlines()
    if data.draw(st.booleans(), label="garble"):
        ranks = _garbled(RANKS_CSV, data)
    else:
        row = data.draw(st.integers(0, len(lines) - 1), label="row")
        cells = lines[row].split(",")
        col = data.draw(st.integers(0, len(cells) - 1), label="col")
        value = data.draw(HOSTILE, label="value")
        cells[col] = str(value) if not isinstance(value, (list, dict)) else json.dumps(value)
        lines[row] = ",".join(cells)
        ranks = ("\n".join(lines) + "\n").encode()
    _check("stress", to_toml(STRESS).encode(), ranks)

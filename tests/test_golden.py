"""Behaviour pins: small versions of the shipped jobs regenerate byte-identical outputs.

Issue 9 (one pipeline for run, stress and calibrate) must not change a single
number. These cases are small versions of the quickstart (``simrec run``), of
both shipped stress scenarios (simulation and dataset sources) and of the
ML-100K calibration sweep; their outputs were produced by main *before* the
refactor (commit f5b3e1c) and are committed under ``tests/golden/expected/``.
Each case runs through the command line, and every output file is compared as
text: CSV, Markdown and TOML as written; Parquet as the CSV of its frame
(floats printed with 17 significant digits, so exactly); trial logs with the wall-clock
``seconds`` field dropped. Files over 100 kB are pinned by their SHA-256
(``NAME.sha256``) to keep the repository small.

Regenerate (only when a change of numbers is intended, and say so in the
commit): ``python tests/test_golden.py --regenerate``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

HERE = Path(__file__).resolve().parent / "golden"
EXPECTED = HERE / "expected"
PAIRS = HERE / "pairs.csv"

_WORLD = "observation = {{ sampler = \"{s}\", profile = {{ model = \"pareto\", m_low = 5, alpha = 1.0, m_high = 90 }} }}"

RUN = f"""
name = "golden-run"
seed = 20190531
replicates = 2
[population]
n_users = 120
n_items = 260
[[world]]
name = "unif-unif"
preference = {{ model = "uniform", lam = 40.0 }}
{_WORLD.format(s="uniform")}
[[world]]
name = "ibp-pop"
preference = {{ model = "ibp", alpha = 30.0, c = 2.0, sigma = 0.1 }}
{_WORLD.format(s="popularity")}
[[world]]
name = "lda-pop"
preference = {{ model = "lda", n_topics = 5, lam = 40.0, a = 0.1, b = 0.05 }}
{_WORLD.format(s="popularity")}
[evaluation]
n = 20
test_fraction = 0.2
metrics = ["precision", "recall", "recall_truncated", "reciprocal_rank", "ndcg", "average_precision", "auc", "pap_at_k"]
pap_k = 5
recommenders = [{{ kind = "oracle" }}, {{ kind = "popular" }}, {{ kind = "random" }},
                {{ kind = "probabilistic_oracle", p = 0.5 }},
                {{ kind = "lenskit", algorithm = "item_knn", name = "ItemKNN", params = {{ max_nbrs = 10 }} }}]
"""

_STRESS_TAIL = """
[sampling]
schemes = ["binomial", "hypergeometric", "popularity", "adaptive"]
sizes = [20, 40]
adaptive_n_max = 160
[estimators]
bv_gammas = [1.0, 0.1, 0.01]
[metrics]
k_max = 5
curve_k = 5
curve_sizes = [10, 20, 50]
"""

STRESS_SIM = f"""
kind = "stress"
name = "golden-stress-sim"
seed = 20200824
repeats = 3
[source]
type = "simulation"
population = {{ n_users = 120, n_items = 260 }}
world = {{ name = "ibp-pop", preference = {{ model = "ibp", alpha = 30.0, c = 2.0, sigma = 0.1 }}, {_WORLD.format(s="popularity")} }}
min_items = 2
recommenders = [{{ kind = "oracle" }}, {{ kind = "popular" }}, {{ kind = "random" }},
                {{ kind = "lenskit", algorithm = "item_knn", name = "ItemKNN", params = {{ max_nbrs = 10 }} }}]
{_STRESS_TAIL}
"""

STRESS_DATA = f"""
kind = "stress"
name = "golden-stress-data"
seed = 20200823
repeats = 3
[source]
type = "dataset"
name = "golden-pairs"
path = "{PAIRS}"
format = "pairs"
min_items = 2
recommenders = [{{ kind = "popular" }}, {{ kind = "random" }}]
{_STRESS_TAIL}
"""

SWEEP = f"""
name = "golden-sweep"
seed = 2019
n_calls = 3
n_initial = 2
preferences = ["uniform", "ibp"]
observations = ["popularity"]
stat_pairs = 20000
[[dataset]]
name = "golden-pairs"
path = "{PAIRS}"
kind = "pairs"
"""

CASES = {
    "run": ("run", RUN),
    "stress-sim": ("stress", STRESS_SIM),
    "stress-data": ("stress", STRESS_DATA),
    "calibrate": ("calibrate", SWEEP),
}


def produce(case: str, work: Path) -> Path:
    """Run one case through the command line into ``work/out``; return that folder."""
    from typer.testing import CliRunner

    from simrec.cli import app

    command, text = CASES[case]
    spec = work / f"{case}.toml"
    spec.write_text(text)
    out = work / "out"
    res = CliRunner().invoke(app, [command, str(spec), "--out", str(out), "--quiet", "--no-figures"])
    if res.exit_code != 0:
        raise RuntimeError(f"{case}: exit {res.exit_code}: {res.output}\n{res.exception!r}")
    return out


def snapshot(out: Path) -> dict[str, str]:
    """Every result file of a run folder as comparable text (see the module docstring)."""
    skip = {"manifest.json", "scenario.toml"}
    files: dict[str, str] = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if not p.is_file() or p.name in skip or p.name.startswith("."):
            continue
        if p.suffix == ".parquet":
            if "/" in rel:  # per-task shards: their content reaches results.parquet
                continue
            files[rel + ".csv"] = pd.read_parquet(p).to_csv(index=False, float_format="%.17g")
        elif p.suffix == ".npz":
            continue  # per-task shards of stress runs: their content reaches the tables
        elif p.suffix == ".jsonl":
            lines = []
            for line in p.read_text().splitlines():
                rec = json.loads(line)
                rec.pop("seconds", None)
                lines.append(json.dumps(rec, sort_keys=True))
            files[rel] = "\n".join(lines) + "\n"
        else:
            files[rel] = p.read_text()
    return files


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_unchanged(case, tmp_path):
    expected_dir = EXPECTED / case
    expected = {p.relative_to(expected_dir).as_posix(): p.read_text()
                for p in sorted(expected_dir.rglob("*")) if p.is_file()}
    got = snapshot(produce(case, tmp_path))
    assert sorted(got) == sorted(n.removesuffix(".sha256") for n in expected)
    for name, text in expected.items():
        if name.endswith(".sha256"):
            name = name.removesuffix(".sha256")
            assert _sha(got[name]) == text.strip(), f"{case}: {name} differs from the pinned output"
        else:
            assert got[name] == text, f"{case}: {name} differs from the pinned output"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


if __name__ == "__main__":  # pragma: no cover - regeneration entry point
    import shutil
    import tempfile

    if sys.argv[1:] != ["--regenerate"]:
        sys.exit("usage: python tests/test_golden.py --regenerate")
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            snap = snapshot(produce(case, Path(tmp)))
        target = EXPECTED / case
        shutil.rmtree(target, ignore_errors=True)
        for name, text in snap.items():
            if len(text) > 100_000:
                name, text = name + ".sha256", _sha(text) + "\n"
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_text(text)
        print(case, len(snap), "files")

"""Fixtures of the assessment tests: a small synthetic dataset and one finished assessment of it.

The synthetic assessment reuses the shipped ML-100K presets (943-user worlds),
Popular vs Random, one replicate of one world and a small sampled evaluation
on a 120-user pairs table, so it finishes in seconds and serves the report,
browser and resume tests; the ML-100K assessment with LensKit algorithms is
tested separately (and skips without the data).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def write_pairs(folder: Path, n_users: int = 120, n_items: int = 150, seed: int = 0) -> Path:
    """A pairs CSV with popularity-skewed items (every user >= 8 items)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_items + 1) ** 0.8
    p /= p.sum()
    rows = []
    for u in range(n_users):
        k = int(rng.integers(8, 30))
        for i in rng.choice(n_items, size=k, replace=False, p=p):
            rows.append(f"u{u},i{i},{1_000_000 + len(rows)}")
    path = folder / "pairs.csv"
    path.write_text("user,item,timestamp\n" + "\n".join(rows) + "\n")
    return path


def assessment_toml(data: Path, **override: str) -> str:
    """A small valid assessment of the pairs table at ``data``; ``override`` replaces whole lines by key."""
    lines = {
        "presets": 'presets = "ml-100k"',
        "worlds": "worlds = 1",
        "n": "n = 5",
        "negatives": "negatives = 20",
        "metrics": 'metrics = ["recall", "ndcg", "precision"]',
        "recommenders": 'recommenders = [{ kind = "popular" }, { kind = "random" }]',
        "replicates": "replicates = 2",
        "sizes": "sizes = [20, 50]",
        "estimators": 'estimators = ["naive", "CLS", "BV"]',
        "n_boot": "n_boot = 10",
        "dataset_path": f'path = "{data}"',
    }
    lines.update(override)
    return textwrap.dedent(f"""
        kind = "assess"
        name = "tiny-assess"
        seed = 3
        [dataset]
        name = "tiny"
        {lines["dataset_path"]}
        format = "pairs"
        [calibration]
        {lines["presets"]}
        {lines["worlds"]}
        [protocol]
        {lines["n"]}
        {lines["negatives"]}
        {lines["metrics"]}
        {lines["recommenders"]}
        [simulation]
        {lines["replicates"]}
        [sampling]
        {lines["sizes"]}
        repeats = 10
        {lines["estimators"]}
        {lines["n_boot"]}
    """)


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> Path:
    return write_pairs(tmp_path_factory.mktemp("tiny-data"))


@pytest.fixture(scope="session")
def tiny_assessment(tmp_path_factory, tiny_data) -> tuple[Path, Path, object]:
    """(assessment file, output folder, outcome) of the small synthetic assessment, run once per session."""
    from simrec.config.assess import load_assessment
    from simrec.studies import run_assessment

    folder = tmp_path_factory.mktemp("tiny-assess")
    path = folder / "tiny.toml"
    path.write_text(assessment_toml(tiny_data))
    out = folder / "out"
    outcome = run_assessment(load_assessment(path), out, progress=False, figures=False)
    return path, out, outcome

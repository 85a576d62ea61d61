"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

#: ../shared/data beside the repository (present in CI and on developer
#: machines; absent in a user's fresh clone, where tests needing it skip).
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def ml100k_path() -> Path:
    path = SHARED_DATA / "ml-100k"
    if not (path / "u.data").exists():
        pytest.skip(f"MovieLens 100K not found at {path}")
    return path

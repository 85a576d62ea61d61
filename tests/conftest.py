"""Shared test fixtures."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

#: ../shared/data beside the repository (present in CI and on developer
#: machines; absent in a user's fresh clone, where tests needing it skip).
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(autouse=True, scope="session")
def _sigint_raises_keyboard_interrupt():
    """SIGINT raises KeyboardInterrupt in the test process, as in an interactive shell.

    A suite started in the background by a non-interactive shell (``cmd &``,
    ``nohup``) inherits SIGINT *ignored*; the tests that send themselves
    SIGINT (what Ctrl-C does) would then see nothing. Restored afterwards.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def ml100k_path() -> Path:
    path = SHARED_DATA / "ml-100k"
    if not (path / "u.data").exists():
        pytest.skip(f"MovieLens 100K not found at {path}")
    return path

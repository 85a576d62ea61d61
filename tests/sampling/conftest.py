"""Each test sees the EM's cap warning afresh (simrec warns once per process for each estimator and cap)."""

import pytest

from simrec.sampling import histograms


@pytest.fixture(autouse=True)
def _em_warnings_afresh():
    histograms._EM_WARNED.clear()
    yield
    histograms._EM_WARNED.clear()

"""simrec._blas: BLAS limited to one thread, including libraries loaded after the first limit (issue 29)."""

from __future__ import annotations

import sys
import types

import pytest

from simrec import _blas


def test_every_blas_library_is_single_threaded_inside_the_limit() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with _blas.single_threaded_blas():
        info = [lib for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]
    assert info and all(lib["num_threads"] == 1 for lib in info), info


def test_the_controller_is_rebuilt_after_an_import(monkeypatch: pytest.MonkeyPatch) -> None:
    # a controller knows only the libraries loaded before it was built: an import (which may load scipy's own
    # OpenBLAS) must make the next limit build a new one, and no import must reuse it
    pytest.importorskip("threadpoolctl")
    with _blas.single_threaded_blas():
        pass
    first = _blas._CONTROLLER[0]
    with _blas.single_threaded_blas():
        pass
    assert _blas._CONTROLLER[0] is first
    monkeypatch.setitem(sys.modules, "_simrec_test_newly_imported", types.ModuleType("_simrec_test_newly_imported"))
    with _blas.single_threaded_blas():
        pass
    assert _blas._CONTROLLER[0] is not first

"""simrec._alloc: glibc's thresholds raised where simrec owns the process, and nowhere else.

The effect test runs in a fresh interpreter: glibc's ``mallinfo2`` (2.33+)
tells heap bytes (``arena``) from separately mapped bytes (``hblkhd``), so a
64 MiB block must be mapped with glibc's defaults and come from the heap
after :func:`simrec.tune_allocator`.
"""

from __future__ import annotations

import importlib
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import simrec
from simrec import _alloc
from simrec._alloc import AllocatorSetting, allocator_setting, tune_allocator
from simrec.tasks import ProcessBackend, RayBackend, Task, run_tasks

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
needs_glibc = pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")


@pytest.fixture
def fresh_setting(monkeypatch):
    """Forget this process's outcome (the setting itself stays process-wide; it changes no result)."""
    monkeypatch.setattr(_alloc, "_setting", None)
    for var in (_alloc.ENV_VAR, *_alloc._GLIBC_VARS):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def setting_in_worker(_: object) -> AllocatorSetting | None:
    """Task run in a pool worker: the worker's outcome of tune_allocator (None: not called)."""
    return allocator_setting()


def test_public_name():
    assert simrec.tune_allocator is tune_allocator and "tune_allocator" in simrec.__all__


@needs_glibc
def test_applied_on_glibc(fresh_setting):
    assert allocator_setting() is None
    got = tune_allocator()
    assert got.applied and "mmap threshold 1024 MiB" in got.reason
    assert allocator_setting() is got


@pytest.mark.parametrize("var, value, reason", [
    ("SIMREC_MALLOC", "default", "SIMREC_MALLOC=default"),
    ("SIMREC_MALLOC", " Default ", "SIMREC_MALLOC=default"),
    ("MALLOC_MMAP_THRESHOLD_", "65536", "MALLOC_MMAP_THRESHOLD_ set"),
    ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1", "GLIBC_TUNABLES set"),
])
def test_switched_off_by_the_environment(fresh_setting, var, value, reason):
    fresh_setting.setenv(var, value)
    got = tune_allocator()
    assert not got.applied and reason in got.reason


def test_not_glibc_is_a_no_op(fresh_setting):
    fresh_setting.setattr(_alloc.platform, "libc_ver", lambda: ("", ""))
    got = tune_allocator()
    assert got == AllocatorSetting(False, "not glibc: allocator left alone")


@pytest.mark.parametrize("kwargs, message", [
    ({"mmap_threshold": 1 << 31}, "`mmap_threshold` must be an int in [1 MiB, 2 GiB) bytes; got 2147483648"),
    ({"trim_threshold": 1000}, "`trim_threshold` must be an int in [1 MiB, 2 GiB) bytes; got 1000"),
    ({"mmap_threshold": 2.0**25}, "`mmap_threshold` must be an int"),
    ({"trim_threshold": True}, "`trim_threshold` must be an int"),
])
def test_threshold_validation(fresh_setting, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        tune_allocator(**kwargs)
    assert allocator_setting() is None


@needs_glibc
@pytest.mark.parametrize("env, mapped_after", [({}, False), ({"SIMREC_MALLOC": "default"}, True)])
def test_large_blocks_come_from_the_heap_after_tuning(env, mapped_after):
    code = textwrap.dedent("""
        import ctypes
        libc = ctypes.CDLL(None)

        class Info(ctypes.Structure):
            _fields_ = [(f, ctypes.c_size_t) for f in
                        "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

        libc.mallinfo2.restype = Info
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = (ctypes.c_size_t,)
        libc.free.argtypes = (ctypes.c_void_p,)

        def mapped(size=64 << 20):
            p = libc.malloc(size)
            h = libc.mallinfo2().hblkhd
            libc.free(p)
            return h >= size

        before = mapped()
        from simrec import tune_allocator
        tune_allocator()
        print(before, mapped())
    """)
    import os

    full_env = {k: v for k, v in os.environ.items() if k not in (_alloc.ENV_VAR, *_alloc._GLIBC_VARS)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**full_env, **env}).stdout.split()
    assert out == ["True", str(mapped_after)]  # glibc's default maps a 64 MiB block fresh


@pytest.mark.parametrize("tuned", [True, False])
def test_pool_workers_follow_the_creating_process(fresh_setting, tuned):
    if tuned:
        fresh_setting.setattr(_alloc, "_setting", AllocatorSetting(True, "test"))
    with ProcessBackend(1) as backend:
        got = run_tasks(setting_in_worker, [Task("t", None, "t")], backend=backend)[0]
    if not tuned:
        assert got is None  # a library user's pool: the worker's allocator is left alone
    elif GLIBC:
        assert got is not None and got.applied
    else:
        assert got is not None and not got.applied


def test_cli_entry_point_applies_it(fresh_setting):
    from cli_helpers import invoke

    code, _, _ = invoke(["--help"])
    assert code == 0
    got = allocator_setting()
    assert got is not None and got.applied == GLIBC


@pytest.mark.parametrize("tuned, given, hook", [
    (True, None, "simrec._alloc.tune_allocator"),
    (True, {"env_vars": {"A": "1"}}, "simrec._alloc.tune_allocator"),
    (True, {"worker_process_setup_hook": "my.hook"}, "my.hook"),  # the user's own hook is kept
    (False, None, None),
    (False, {"env_vars": {"A": "1"}}, None),
])
def test_ray_runtime_env_carries_the_setting(fresh_setting, tuned, given, hook):
    pytest.importorskip("ray")
    if tuned:
        fresh_setting.setattr(_alloc, "_setting", AllocatorSetting(True, "test"))
    env = RayBackend(n_cpus=1, runtime_env=given)._worker_env()
    if given is None and not tuned:
        assert env is None
    else:
        assert (env or {}).get("worker_process_setup_hook") == hook
        assert {k: v for k, v in env.items() if k != "worker_process_setup_hook"} == \
            {k: v for k, v in (given or {}).items() if k != "worker_process_setup_hook"}
    if hook and hook.startswith("simrec."):  # Ray imports the hook by this path in each worker
        module, name = hook.rsplit(".", 1)
        assert getattr(importlib.import_module(module), name) is tune_allocator


@pytest.mark.slow
def test_ray_workers_follow_the_driver(fresh_setting):
    pytest.importorskip("ray")
    fresh_setting.setattr(_alloc, "_setting", AllocatorSetting(True, "test"))
    env = {"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}}  # workers import this module
    with RayBackend(n_cpus=1, runtime_env=env) as backend:
        got = run_tasks(setting_in_worker, [Task("t", None, "t")], backend=backend)[0]
    assert got is not None and got.applied == GLIBC

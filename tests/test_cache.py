"""Nothing outside ``--out`` but the user's cache folder (issue 22; simrec._cache).

numba's compiled kernels and matplotlib's cache and config go under the
platform's user cache folder (``$XDG_CACHE_HOME/simrec`` here), never into the
installed package's folder or HOME's dotfiles; the kernel cache works across
processes; an explicit ``NUMBA_CACHE_DIR`` is respected; and with a HOME that
cannot be written, a run still works, silently. Each case runs in a fresh
process with its own HOME and cache folder (what numba and matplotlib do is
decided when they are imported).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from cli_helpers import RUN_TOML

import simrec
from simrec._cache import configure_matplotlib, user_cache_dir

PACKAGE = Path(simrec.__file__).resolve().parent

#: Calls both compiled kernels once; prints (cache hits, cache misses) of each.
KERNELS = textwrap.dedent("""
    import numpy as np
    from simrec.metrics._auc_kernel import auc_rows
    from simrec.preference._urn_kernel import urn_topic_counts

    scores = np.array([[0.1, 0.5, -np.inf, 0.3]])
    auc_rows(np.sort(scores, axis=1), scores, np.array([0, 1]), np.array([1]), 0, np.zeros(1), np.zeros(1, bool))
    urn_topic_counts(np.array([0.2, 0.7, 0.4]), np.array([3]), 0.5, np.zeros((1, 2), dtype=np.int64))
    for kernel in (auc_rows, urn_topic_counts):
        print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
""")

#: A small run that uses both kernels (an LDA world, AUC of a dense scorer) and draws figures.
CACHE_RUN = (
    RUN_TOML.replace(
        'preference = { model = "uniform", lam = 12.0 }',
        'preference = { model = "lda", n_topics = 3, lam = 12.0, a = 0.1, b = 0.1 }',
    )
    .replace('metrics = ["precision", "recall"]', 'metrics = ["precision", "auc"]')
    .replace('{ kind = "oracle" }', '{ kind = "oracle", ties = "item_id" }')
)


def _package_kernel_files() -> dict[Path, float]:
    """numba cache files in the package folder, with their modification times."""
    return {p: p.stat().st_mtime for pattern in ("*.nbi", "*.nbc") for p in PACKAGE.rglob(pattern)}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "NUMBA_CACHE_DIR", "MPLCONFIGDIR")}
    env.update(extra)
    return env


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_kernels_are_cached_in_the_user_cache_folder_and_loaded_by_the_next_process(tmp_path):
    home, cache = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    env = _env(tmp_path, HOME=str(home), XDG_CACHE_HOME=str(cache))
    before = _package_kernel_files()
    first = _python(KERNELS, env, tmp_path).stdout.split("\n")[:2]
    assert first == ["0 1", "0 1"]  # compiled
    files = _files(cache / "simrec" / "numba")
    assert any(f.endswith(".nbi") and "_auc_kernel.auc_rows" in f for f in files), files
    assert any(f.endswith(".nbc") and "_urn_kernel.urn_topic_counts" in f for f in files), files
    second = _python(KERNELS, env, tmp_path).stdout.split("\n")[:2]
    assert second == ["1 0", "1 0"]  # loaded from the cache by another process
    assert _package_kernel_files() == before  # nothing written into (or refreshed in) the package folder
    assert _files(home) == set()


@pytest.mark.slow
def test_an_explicit_numba_cache_dir_is_respected(tmp_path):
    mine = tmp_path / "mine"
    env = _env(tmp_path, HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "xdg"), NUMBA_CACHE_DIR=str(mine))
    _python(KERNELS, env, tmp_path)
    assert any(f.endswith(".nbi") for f in _files(mine))
    assert not (tmp_path / "xdg").exists()


@pytest.mark.slow
@pytest.mark.parametrize("home_kind", ["writable", "read-only"])
def test_a_run_writes_nothing_outside_out_but_the_cache_folder(tmp_path, home_kind):
    """A writable HOME gets only ~/.cache/simrec; a HOME that cannot be written (below a file: even root cannot
    create it) leaves simrec working, with no traceback and no warning but simrec's own."""
    if home_kind == "writable":
        home = tmp_path / "home"
        home.mkdir()
    else:
        (tmp_path / "a-file").write_text("not a folder")
        home = tmp_path / "a-file" / "home"
    (tmp_path / "s.toml").write_text(CACHE_RUN)
    before = _package_kernel_files()
    env = _env(tmp_path, HOME=str(home))
    res = subprocess.run(
        [sys.executable, "-m", "simrec.cli", "run", "s.toml", "--out", "out", "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    others = [line for line in res.stderr.splitlines() if not line.startswith("simrec: warning: ")]
    assert others == [], res.stderr[-3000:]
    assert {"values_auc.png", "error_precision.png"} <= set(os.listdir(tmp_path / "out" / "figures"))
    assert _package_kernel_files() == before
    if home_kind == "writable":
        written = _files(home)
        assert written and all(f.startswith(".cache/simrec/") for f in written), written
        assert any(f.startswith(".cache/simrec/matplotlib/") for f in written), written
        assert any(f.startswith(".cache/simrec/numba/") and f.endswith(".nbc") for f in written), written
    outside = set(os.listdir(tmp_path)) - {"s.toml", "out", "home", "a-file"}
    assert outside == set(), outside


def _short_folder() -> Path:
    """A new folder with a short path (``/tmp/tmpXXXXXXXX``; pytest's are too long for Ray's socket), removed at exit."""
    folder = Path(tempfile.mkdtemp(dir="/tmp" if os.path.isdir("/tmp") else None))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _without_ray_settings(env: dict[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in env.items()
        if k not in ("RAY_TMPDIR", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
    }


@pytest.mark.slow
def test_a_run_on_a_local_ray_cluster_writes_nothing_outside_out_but_the_cache_folder(tmp_path):
    """``--backend ray`` without ``--address`` starts a local cluster. Before the fix Ray saved its token as
    ``~/.ray/auth_token`` (a HOME dotfile) and its session folder under ``$TMPDIR/ray`` (kept), and said on
    stderr that authentication was on; now the session lives in the cache folder and is removed, the token
    is never saved, and stderr has simrec's lines only."""
    pytest.importorskip("ray")
    tmp_path = _short_folder()  # Ray's socket path must fit in 107 bytes
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    (tmp_path / "s.toml").write_text(RUN_TOML)
    env = _without_ray_settings(_env(tmp_path, HOME=str(home), TMPDIR=str(tmp)))
    res = subprocess.run(
        [sys.executable, "-m", "simrec.cli", "run", "s.toml", "--out", "out", "-q", "--no-figures"]
        + ["--backend", "ray", "--jobs", "2"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    others = [line for line in res.stderr.splitlines() if not line.startswith("simrec: warning: ")]
    assert others == [], res.stderr[-3000:]
    written = {p.relative_to(home).as_posix() for p in home.rglob("*")}
    assert all(f.startswith(".cache") for f in written), written
    assert ".cache/simrec/ray" in written and not any(f.startswith(".cache/simrec/ray/") for f in written), written
    assert list(tmp.iterdir()) == []
    assert set(os.listdir(tmp_path)) == {"s.toml", "out", "home", "tmp"}


@pytest.mark.slow
def test_a_ray_folder_too_long_for_its_socket_is_one_line(tmp_path):
    """A ``RAY_TMPDIR`` whose path leaves no room for Ray's socket (107 bytes): one line saying so, exit 2.
    Before: ``cannot write out: validate_socket_filename failed ...`` advising another --out folder, exit 1."""
    pytest.importorskip("ray")
    (tmp_path / "s.toml").write_text(RUN_TOML)
    env = {
        **_without_ray_settings(_env(tmp_path, HOME=str(tmp_path / "home"))),
        "RAY_TMPDIR": str(tmp_path / ("r" * 60)),
    }
    res = subprocess.run(
        [sys.executable, "-m", "simrec.cli", "run", "s.toml", "--out", "out", "-q", "--no-figures"]
        + ["--backend", "ray", "--jobs", "2"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr.startswith("simrec: error: cannot start a local Ray cluster: ") and res.stderr.count("\n") == 1
    assert "AF_UNIX path length" in res.stderr and "set RAY_TMPDIR to a short folder" in res.stderr


#: Two local clusters one after the other in one process (the driver caches its token): where each keeps its
#: session while it runs (the cache folder, or a private temp folder), whether a token was given in the
#: environment, and what is left once both are closed.
RAY_TWICE = textwrap.dedent("""
    import os
    from pathlib import Path
    from simrec.tasks import RayBackend, Task, run_tasks

    cache, tmp = Path(os.environ["XDG_CACHE_HOME"]) / "simrec" / "ray", Path(os.environ["TMPDIR"])
    def sessions(folder):
        return len([p for p in folder.glob("**/session_*") if not p.is_symlink()])
    for _ in range(2):
        with RayBackend(n_cpus=1) as backend:
            out = run_tasks(abs, [Task("t", 0, -3)], backend=backend)
            print(out, sessions(cache), sessions(tmp), "RAY_AUTH_TOKEN" in os.environ)
        print(sessions(cache), sorted(p.name for p in tmp.iterdir()), "RAY_AUTH_TOKEN" in os.environ)
""")


@pytest.mark.slow
@pytest.mark.parametrize("cache_path", ["short", "too long for Ray's socket"])
def test_local_ray_clusters_keep_their_session_in_the_cache_folder_and_remove_it(cache_path):
    """A cache folder whose path leaves room for Ray's socket holds the session; a longer one makes way for a
    private temp folder (``simrec-ray-*``). Either is gone once the cluster is closed, and no token is saved."""
    pytest.importorskip("ray")
    base = _short_folder()
    home, tmp = base / "home", base / "tmp"
    home.mkdir()
    tmp.mkdir()
    cache = base / ("xdg" if cache_path == "short" else "x" * 60)
    env = _without_ray_settings(_env(base, HOME=str(home), XDG_CACHE_HOME=str(cache), TMPDIR=str(tmp)))
    lines = _python(RAY_TWICE, env, base).stdout.splitlines()
    during = "[3] 1 0 True" if cache_path == "short" else "[3] 0 1 True"
    assert lines == [during, "0 [] False"] * 2, lines
    assert not (home / ".ray").exists()


def test_user_cache_dir_follows_xdg(monkeypatch, tmp_path):
    if sys.platform in ("win32", "darwin"):
        pytest.skip("XDG_CACHE_HOME is a Linux convention")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache_dir() == tmp_path / "simrec"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # the specification says: ignore it
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert user_cache_dir() == tmp_path / "h" / ".cache" / "simrec"


def test_configure_matplotlib_respects_the_users_setting(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)  # as if not imported yet (restored after)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "theirs"))
    assert configure_matplotlib() is None and os.environ["MPLCONFIGDIR"] == str(tmp_path / "theirs")
    monkeypatch.delenv("MPLCONFIGDIR")
    assert configure_matplotlib() == tmp_path / "xdg" / "simrec" / "matplotlib"
    assert os.environ["MPLCONFIGDIR"] == str(tmp_path / "xdg" / "simrec" / "matplotlib")


def test_every_kernel_is_compiled_by_cached_njit():
    """No simrec module decorates with numba's own ``njit``/``jit`` (whose ``cache=True`` writes into the package
    folder, possibly read-only or shared): every compiled kernel goes through :func:`simrec._cache.cached_njit`."""
    import ast

    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_cache.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "numba":
                offenders += [
                    f"{path.name}: from numba import {a.name}" for a in node.names if a.name in ("njit", "jit")
                ]
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("njit", "jit")
                and getattr(node.value, "id", "")
                in (
                    "numba",
                    "nb",
                )
            ):
                offenders.append(f"{path.name}: numba.{node.attr}")
    assert offenders == []

"""Where a local Ray cluster started by simrec writes its files: simrec's cache folder, not HOME or ``/tmp`` (issue 22).

``ray.init()`` of a new local cluster (``--backend ray`` without
``--address``), left alone, writes two things outside ``--out``:

* its session folder (logs, the object store's socket, runtime
  resources; 0.2-0.4 MB) under ``/tmp/ray`` (or ``$TMPDIR/ray``), never
  removed;
* since Ray 2.5x, a token for its token authentication, which it turns on for
  every new local cluster: when no token is found it generates one and saves
  it as ``~/.ray/auth_token``, a dotfile in HOME.

:func:`local_cluster_files` changes both for a local cluster:

* the session folder goes under ``<user cache>/ray``
  (:func:`simrec._cache.user_cache_dir`, Ray's ``_temp_dir``) and is removed
  when the cluster shuts down (its logs with it). Decision: Ray's logs are
  for debugging Ray; simrec reports every task's error itself. A user who
  sets ``RAY_TMPDIR`` chooses the folder: simrec then leaves it, and the
  session folders in it, to Ray. If the cache folder cannot be written, or
  its path is too long for the Unix socket Ray creates in it (AF_UNIX paths
  are at most 107 bytes on Linux, 103 on macOS, and Ray's session adds up
  to 66: a cache folder of more than 41 bytes, e.g.
  ``/home/firstname.lastname/.cache/simrec/ray``), a private folder in the
  system's temp folder (``$TMPDIR`` or ``/tmp``; ``simrec-ray-XXXXXXXX``) is
  used instead and removed with the cluster, as :mod:`simrec._cache` does
  for matplotlib; if even that path is too long, Ray's default is kept, and
  Ray's refusal is a one-line :class:`~simrec.tasks.BackendError` that says
  to set ``RAY_TMPDIR``;
* the token: a random one (256 bits, as Ray makes them) is given to the
  cluster in the environment (``RAY_AUTH_TOKEN``; Ray turns token
  authentication on as before, so it stays on) for as long as the cluster
  runs, and nothing is saved; Ray's notice on stderr that authentication is
  on is not shown. Left to Ray: a user who set ``RAY_AUTH_MODE`` to another
  mode (e.g. ``disabled``), ``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH``, or
  has ``~/.ray/auth_token`` already (Ray reads it and writes nothing).

A cluster at an ``--address`` is someone else's: nothing is changed.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from simrec._cache import _writable, user_cache_dir

__all__ = ["local_cluster_files", "ray_temp_dir"]

#: Bytes Ray adds to its temp folder for the object store's socket:
#: ``/session_YYYY-MM-DD_HH-MM-SS_ffffff_<pid>/sockets/plasma_store.<n>`` (pid up to 7 digits, n one digit).
_SOCKET_TAIL = 66
#: Longest AF_UNIX socket path (``sun_path`` less its terminating byte).
_SOCKET_MAX = 103 if sys.platform == "darwin" else 107

#: Ray's logger that announces on stderr, at every new local cluster, that token authentication is on.
_NOTICE = "ray._private.authentication.authentication_token_setup"

#: The token of this process's local clusters (one per process: Ray's driver caches the token it read).
_TOKEN: list[str] = []


def _fits(folder: Path) -> bool:
    """Whether Ray's socket below ``folder`` fits in an AF_UNIX path."""
    return len(os.fsencode(str(folder))) + _SOCKET_TAIL <= _SOCKET_MAX


def ray_temp_dir() -> Path | None:
    """The temp folder of a local cluster in simrec's cache folder: ``<user cache>/ray``.

    None when the user set ``RAY_TMPDIR`` (Ray's choice), when there is no home
    folder, when the folder cannot be written, or when its path is too long for
    Ray's socket (see the module docstring).
    """
    if os.environ.get("RAY_TMPDIR"):
        return None
    try:
        folder = (user_cache_dir() / "ray").absolute()
    except RuntimeError:  # no home folder
        return None
    return folder if _fits(folder) and _writable(folder) else None


def _token_environment() -> dict[str, str]:
    """The variable that gives a local cluster its token without a file (empty: leave it to Ray)."""
    if os.environ.get("RAY_AUTH_MODE", "token").strip().lower() != "token":
        return {}  # the user turned authentication off (or chose another mode)
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return {}
    with suppress(RuntimeError, OSError):  # no home folder: nothing there to read
        if (Path.home() / ".ray" / "auth_token").exists():
            return {}
    if not _TOKEN:
        _TOKEN.append(secrets.token_hex(32))
    return {"RAY_AUTH_TOKEN": _TOKEN[0]}


def _remove_sessions(folder: Path) -> None:
    """Remove this process's session folders in ``folder`` (Ray names them ``session_<time>_<pid>``)."""
    pid = os.getpid()
    for session in folder.glob(f"session_*_{pid}"):
        shutil.rmtree(session, ignore_errors=True)
    latest = folder / "session_latest"
    if latest.is_symlink() and not latest.exists():
        with suppress(OSError):
            latest.unlink()


@contextmanager
def local_cluster_files() -> Iterator[dict[str, Any]]:
    """Keyword arguments of ``ray.init`` for a local cluster whose files stay in simrec's cache folder.

    Sets the token's environment variables while the block runs (the cluster
    runs inside it) and restores them after; then removes the cluster's session
    folder. See the module docstring.
    """
    folder, own = ray_temp_dir(), False
    if folder is None and not os.environ.get("RAY_TMPDIR"):  # a short private folder, removed with the cluster
        with suppress(OSError):
            folder, own = Path(tempfile.mkdtemp(prefix="simrec-ray-")), True
            if not _fits(folder):
                folder.rmdir()
                folder, own = None, False
    env = _token_environment()
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    notice = logging.getLogger(_NOTICE)
    level = notice.level
    notice.setLevel(logging.ERROR)
    try:
        yield {} if folder is None else {"_temp_dir": str(folder)}
    finally:
        notice.setLevel(level)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if own and folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        elif folder is not None:
            _remove_sessions(folder)

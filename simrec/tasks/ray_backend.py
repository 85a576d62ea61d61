"""The Ray backend: tasks on a local Ray cluster or on the cluster at an address.

A local cluster is started on first use (``n_cpus`` CPUs, no dashboard) and
shut down by :meth:`~simrec.tasks.Backend.close`; a cluster at ``address``
(``"auto"``, ``"ray://head:10001"``, ...) is only disconnected from. Every
node of a cluster must import simrec and its dependencies in the driver's
versions (task functions and payloads are pickled by reference to simrec's
modules): install the same environment on every node, or give the job a Ray
``runtime_env`` that provides it, either ``RayBackend(address,
runtime_env={"pip": [...]})`` / ``{"py_modules": [...]}`` or by running the
command as a Ray job (``ray job submit --runtime-env-json '...' -- simrec run
... --backend ray --address auto``; Ray merges the job's environment into the
driver's). Workers of a local cluster use the driver's interpreter and
environment, so nothing is needed there. A cluster started with ``ray start``
may use token authentication: the driver then needs ``RAY_AUTH_MODE=token``
and the cluster's token (``~/.ray/auth_token`` or ``RAY_AUTH_TOKEN``);
otherwise connecting fails with a :class:`~simrec.tasks.BackendError` that
says so.

A local cluster keeps its files in simrec's cache folder and gets its
authentication token in the environment, not in ``~/.ray``
(:mod:`simrec.tasks._ray_files`).

A local cluster costs seconds to start and milliseconds per task (more than
the ``processes`` backend; ``bench/bench_backends.py`` measures both, and the
page "Running on several processes or a Ray cluster", docs/howto/parallel.md, gives its table):
Ray pays off for longer tasks or for more CPUs than one machine has.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import subprocess
from collections.abc import Callable, Hashable, Iterable, Sequence
from contextlib import ExitStack, suppress
from typing import Any

from simrec.tasks._ray_files import local_cluster_files
from simrec.tasks._reaper import reaper_go, start_reaper, stop_reaper
from simrec.tasks._worker import error_text, run_one, traceback_text
from simrec.tasks.backends import Backend, BackendError, _check_n_jobs, _Outcome

__all__ = ["RayBackend"]


class RayBackend(Backend):
    """Tasks on a Ray cluster: a local one, or the one at ``address``.

    Parameters
    ----------
    address : str, optional
        Cluster to connect to (``ray.init(address=...)``); :meth:`close` only
        disconnects. Default: start a local cluster on first use and shut it
        down on :meth:`close`.
    n_cpus : int, optional
        CPUs of the local cluster (default: every CPU of the machine); not
        allowed with ``address``.
    runtime_env : dict, optional
        Ray ``runtime_env`` of the job (``ray.init(runtime_env=...)``), e.g. to
        make simrec importable on the nodes of a cluster.

    Raises
    ------
    BackendError
        Ray is not installed.

    Notes
    -----
    Tasks are submitted with ``max_retries=0`` (retries are
    :func:`~simrec.tasks.run_tasks`'s) and one CPU each; on an interrupt they are
    force-cancelled, which kills the workers running them. A local cluster
    gets a reaper process (Linux, :mod:`simrec.tasks._reaper`) that kills
    what is left of it if the driver dies. The module docstring says what a
    cluster needs.
    """

    name = "ray"

    def __init__(
        self, address: str | None = None, n_cpus: int | None = None, runtime_env: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        if runtime_env is not None and not isinstance(runtime_env, dict):
            raise TypeError(f"`runtime_env` must be a dict; got {type(runtime_env).__name__}")
        if address is not None and not (isinstance(address, str) and address.strip()):
            raise ValueError(f"`address` must be a non-empty string; got {address!r}")
        if n_cpus is not None:
            n_cpus = _check_n_jobs(n_cpus, "n_cpus")
            if address is not None:
                raise ValueError(
                    "`n_cpus` sets the CPUs of a local cluster; the cluster at "
                    f"`address` has its own; got n_cpus={n_cpus}, address={address!r}"
                )
        _require_ray()
        self.address = address
        self.n_cpus = n_cpus
        self.runtime_env = runtime_env
        self._ray: Any = None
        self._remote: Any = None
        self._named: dict[Callable[[Any], Any], Any] = {}
        self._cluster_cpus: int | None = None
        self._reaper: subprocess.Popen | None = None
        self._files = ExitStack()

    @property
    def n_workers(self) -> int:
        if self._cluster_cpus is not None:
            return self._cluster_cpus
        if self.n_cpus is not None:
            return self.n_cpus
        return (os.cpu_count() or 1) if self.address is None else 1

    def __repr__(self) -> str:
        return f"RayBackend(address={self.address!r}, n_cpus={self.n_cpus!r})"

    def _start(self) -> None:
        ray = _require_ray(import_it=True)
        if ray.is_initialized():
            raise BackendError(
                "Ray is already initialized in this process; shut it down "
                "(ray.shutdown()) or close the other ray backend first"
            )
        if self.address is None:
            self._reaper = start_reaper()
            try:
                ray.init(
                    address="local",
                    num_cpus=self.n_cpus,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                    runtime_env=self.runtime_env,
                    **self._files.enter_context(local_cluster_files()),
                )
            except BaseException as exc:
                stop_reaper(self._reaper)
                self._reaper = None
                self._files.close()
                if isinstance(exc, OSError) and exc.errno is None:  # Ray's own, e.g. its socket's path too long
                    raise BackendError(
                        f"cannot start a local Ray cluster: {' '.join(error_text(exc).split())} (Ray keeps its "
                        "files in RAY_TMPDIR, else simrec's cache folder if its path is short enough for a socket, "
                        "else $TMPDIR/ray or /tmp/ray: set RAY_TMPDIR to a short folder, e.g. RAY_TMPDIR=/tmp/ray)"
                    ) from exc
                raise
            reaper_go(self._reaper)
        else:
            try:
                ray.init(address=self.address, logging_level=logging.WARNING, runtime_env=self.runtime_env)
            except (ConnectionError, ValueError) as exc:
                detail = " ".join(str(exc).split())
                if exc.__cause__ is not None:  # e.g. the cluster wants an authentication token
                    detail += f" ({' '.join(error_text(exc.__cause__).split())})"
                raise BackendError(f"cannot connect to the Ray cluster at {self.address!r}: {detail}") from exc
        self._ray = ray
        self._remote = ray.remote(run_one)
        self._cluster_cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def _close(self) -> None:
        try:
            self._ray.shutdown()  # stops a local cluster, disconnects from a remote one
        finally:
            stop_reaper(self._reaper)
            self._reaper = None
            self._ray = self._remote = None
            self._named.clear()
            self._files.close()  # a local cluster's token variables and session folder (simrec.tasks._ray_files)

    def _submit(self, fn: Callable[[Any], Any], payload: Any) -> Hashable:
        remote = self._named.get(fn)
        if remote is None:  # tasks show as ray::<fn name> in `ray list tasks` and the dashboard
            remote = self._named[fn] = self._remote.options(
                max_retries=0, num_cpus=1, name=getattr(fn, "__name__", "task")
            )
        return remote.remote(fn, payload)

    def _wait(self, handles: Iterable[Hashable], timeout: float) -> list[Hashable]:
        ready, rest = self._ray.wait(list(handles), num_returns=1, timeout=timeout)
        if ready and rest:  # and whatever else is done already
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return ready

    def _outcome(self, handle: Hashable) -> _Outcome:
        try:
            ok, value = self._ray.get(handle)
        except Exception as exc:  # noqa: BLE001 - worker crashed, cancelled, lost object, ...
            return "error", (error_text(exc), traceback_text(exc))
        return ("ok", value) if ok else ("error", value)

    def _abort(self, handles: Sequence[Hashable]) -> None:
        for ref in handles:
            with suppress(Exception):  # already finished or gone
                self._ray.cancel(ref, force=True)


def _require_ray(import_it: bool = False) -> Any:
    message = 'the ray backend needs Ray: pip install "simrec[ray]"'
    if not import_it:
        try:
            found = importlib.util.find_spec("ray") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise BackendError(message)
        return None
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise BackendError(message) from exc

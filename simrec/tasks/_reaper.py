"""The reaper of a local Ray cluster (Linux): a program that kills the cluster's processes when the driver dies.

Why: when the driver is SIGKILLed, Ray's own fate-sharing
(``PR_SET_PDEATHSIG``) kills the GCS server and the raylet of a local cluster
at once and its task workers exit within seconds, but the dashboard and
runtime-env agents linger for about a minute (Ray 2.60: they report the
raylet's death to the dead GCS with a 60 s timeout). So
:class:`~simrec.tasks.ray_backend.RayBackend` starts this program beside a
local cluster.

The program (:func:`main`; argument: the driver's pid) records the driver's
children at start and writes ``ready``; on ``go`` (sent once ``ray.init``
returned) it tracks the process tree below the driver's new children (GCS,
raylet, agents, workers), writes ``tracking``, and refreshes the tree every
second. When its stdin reaches end of file (the driver closed the pipe or
died), it SIGKILLs every tracked process still alive (same pid and start
time, so a reused pid is spared) and exits. Decision (issue 23): the driver
waits for ``tracking`` (a scan of ``/proc``, milliseconds) before it runs
tasks; before, a driver killed right after ``go`` could die before the reaper
read it, and the cluster's processes, re-parented by then, were never
tracked.

The driver's side is :func:`start_reaper`, :func:`reaper_go` and
:func:`stop_reaper`. Decision: the program is this file, run by path in an
isolated interpreter (``python -I .../simrec/tasks/_reaper.py PID``), not
``python -I -m simrec.tasks._reaper``: ``-I`` drops ``PYTHONPATH`` and the
current folder from ``sys.path``, so ``-m`` would find simrec in
site-packages, i.e. another copy than the driver's (or none) whenever simrec
runs from a source tree; by path it is always the driver's own file, and it
imports neither simrec nor numpy (it needs the standard library only, and
must keep to it). The ``/proc`` readers here (:func:`proc_stat`,
:func:`start_ticks`) are also the ones the process workers' watchdog uses.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

#: Seconds between two refreshes of the tracked process tree.
_REFRESH = 1.0


def proc_stat(pid: int) -> tuple[int, int] | None:
    """Parent pid and start time (Linux clock ticks) of a live process; None if gone, a zombie or no ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[19])


def start_ticks(pid: int) -> int | None:
    """Start time of a live process (Linux clock ticks), None if gone, a zombie or on systems without ``/proc``."""
    stat = proc_stat(pid)
    return None if stat is None else stat[1]


def _table() -> dict[int, tuple[int, int]]:
    """Every live process: pid -> (parent pid, start time)."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = proc_stat(int(name))
            if stat is not None:
                out[int(name)] = stat
    return out


def _refresh(tracked: dict[int, int], me: int) -> None:
    """Add to ``tracked`` (pid -> start time) every live descendant of a tracked process still alive."""
    table = _table()
    kids: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        kids.setdefault(parent, []).append(pid)
    stack = [p for p, start in tracked.items() if p in table and table[p][1] == start]
    while stack:
        for child in kids.get(stack.pop(), ()):
            if child != me and child not in tracked:
                tracked[child] = table[child][1]
                stack.append(child)


def main(argv: list[str]) -> None:
    """Run the reaper for the driver whose pid is ``argv[0]`` (the protocol: see the module docstring)."""
    driver, me = int(argv[0]), os.getpid()
    baseline = {p for p, (parent, _) in _table().items() if parent == driver}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    tracked: dict[int, int] = {}
    going, buf = False, b""
    while True:
        ready, _, _ = select.select([0], [], [], _REFRESH)
        if ready:
            chunk = os.read(0, 4096)
            if not chunk:
                break
            buf += chunk
            if not going and b"go\n" in buf:
                going = True
                for p, (parent, start) in _table().items():
                    if parent == driver and p != me and p not in baseline:
                        tracked[p] = start
                _refresh(tracked, me)
                sys.stdout.write("tracking\n")
                sys.stdout.flush()
                continue
        if going:
            _refresh(tracked, me)
    if going:
        _refresh(tracked, me)
    for pid, start in tracked.items():
        if start_ticks(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# -- the driver's side ---------------------------------------------------------------------------------------------


def start_reaper() -> subprocess.Popen | None:
    """Start the reaper of a local cluster, before ``ray.init`` (None where there is no ``/proc``)."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        return None
    proc = subprocess.Popen(
        [sys.executable, "-I", os.path.abspath(__file__), str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # no Ctrl-C from the terminal
    if (
        proc.stdout is None or proc.stdout.readline() != b"ready\n"
    ):  # pragma: no cover - the interpreter failed to start
        stop_reaper(proc)
        return None
    return proc


def reaper_go(proc: subprocess.Popen | None) -> None:
    """Tell the reaper that the cluster started; return once it tracks the driver's new children and their trees."""
    if proc is not None and proc.stdin is not None and proc.stdout is not None:
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        proc.stdout.readline()  # "tracking" (or b"" if the reaper died: nothing to wait for)


def stop_reaper(proc: subprocess.Popen | None) -> None:
    """Close the reaper's stdin: it kills the cluster's stragglers and exits."""
    if proc is None:
        return
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - /proc scans take milliseconds
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main(sys.argv[1:])

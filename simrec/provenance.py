"""Where a run's numbers came from: simrec's version and commit, the command, the key packages.

Every run folder's ``manifest.json`` records (:meth:`simrec.rundir.RunDir.open`):

* ``versions`` — Python, simrec and the packages that determine a run's
  numbers (:func:`package_versions`): numpy, scipy, pandas, pyarrow, numba,
  LensKit, PyTorch (LensKit's engine), scikit-optimize, and Ray when the job
  used it (imported in this process);
* ``commit`` — the git commit simrec was run from (:func:`git_commit`), or
  ``null`` when simrec is not a git clone (a wheel from a package index);
* ``command`` — the command line (:func:`command_line`): ``simrec run ...``
  as typed, or ``python <script> ...`` when the library was called from a
  script or notebook.

``simrec --version`` prints the same (:func:`version_text`), and
:func:`stamp_line` turns a manifest into the one-line stamp a committed result
carries (``Made with simrec <version>, commit <sha>, draws version <n>``).

Decisions (issue 28):

* The commit is read from the clone's ``.git`` without running git
  (``HEAD``, the branch's ref file or ``packed-refs``; worktrees and
  ``gitdir:`` files followed); only when the files cannot be read that way
  (e.g. the reftable format) is ``git rev-parse HEAD`` asked, with a 2-second
  timeout. Only a clone whose top folder holds the ``simrec`` package counts
  (an editable install or ``PYTHONPATH``): a copy of simrec installed into a
  virtual environment that happens to sit inside some git repository is not
  attributed that repository's commit. A ``pip install git+URL`` install records
  the commit pip resolved (``direct_url.json``). Nothing here ever fails: a
  commit that cannot be found is ``None``.
* Whether the clone had uncommitted changes is asked of git
  (``git --no-optional-locks status --porcelain --untracked-files=no``, which
  takes no lock and writes nothing, 2-second timeout): ``modified`` is True,
  False, or None when git could not say.
* Stdlib only, and cached per process: ``simrec --version`` loads no numpy.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import subprocess
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "KEY_PACKAGES",
    "Commit",
    "git_commit",
    "package_versions",
    "command_line",
    "begin_command",
    "end_command",
    "note_run_folder",
    "run_folders",
    "version_text",
    "stamp_line",
]

#: Packages whose versions determine a run's numbers (``ray`` is added when a job used it).
KEY_PACKAGES = ("simrec", "numpy", "scipy", "pandas", "pyarrow", "numba", "lenskit", "torch", "scikit-optimize")

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_TIMEOUT = 2.0
#: The command this process is running (set by the ``simrec`` command) and the run folders it opened.
_STATE: dict = {"command": None, "folders": []}


class Commit(NamedTuple):
    """The commit simrec runs from, whether the work tree differs from it, and the clone's folder."""

    sha: str
    modified: bool | None
    where: str

    def short(self) -> str:
        """``7ad3bd7`` or ``7ad3bd7+modified``."""
        return self.sha[:7] + ("+modified" if self.modified else "")


def _git_dir(root: Path) -> Path | None:
    """The git directory of a work tree at ``root`` (a ``.git`` folder, or the folder a ``.git`` file names)."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[len("gitdir:") :].strip())
            target = target if target.is_absolute() else root / target
            return target if target.is_dir() else None
    return None


def _read_ref(git_dir: Path, ref: str) -> str | None:
    """The commit of ``ref`` (e.g. ``refs/heads/main``): loose ref files, then ``packed-refs``."""
    common = git_dir
    commondir = git_dir / "commondir"  # a linked worktree: branches live in the main repository's folder
    if commondir.is_file():
        common = (git_dir / commondir.read_text(encoding="utf-8").strip()).resolve()
    for base in (git_dir, common):
        path = base / ref
        if path.is_file():
            value = path.read_text(encoding="utf-8", errors="replace").strip()
            return value if _SHA.fullmatch(value) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref and _SHA.fullmatch(sha):
                return sha
    return None


def _head_from_files(root: Path) -> str | None:
    git_dir = _git_dir(root)
    if git_dir is None or not (git_dir / "HEAD").is_file():
        return None
    head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    if _SHA.fullmatch(head):  # a detached HEAD
        return head
    if head.startswith("ref:"):
        return _read_ref(git_dir, head[len("ref:") :].strip())
    return None


def _git(root: Path, *args: str) -> str | None:
    """``git -C root args`` with a timeout; None if git is missing, fails or takes too long."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _from_pip() -> Commit | None:
    """The commit pip recorded for a ``pip install git+URL`` (PEP 610 ``direct_url.json``)."""
    try:
        text = metadata.distribution("simrec").read_text("direct_url.json")
        info = json.loads(text or "{}")
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
    sha = str((info.get("vcs_info") or {}).get("commit_id", ""))
    return Commit(sha, None, str(info.get("url", ""))) if _SHA.fullmatch(sha) else None


def git_commit(root: str | os.PathLike | None = None) -> Commit | None:
    """The git commit simrec runs from, or None when it is not run from a clone.

    Parameters
    ----------
    root : folder, optional
        The top folder of a clone (the one holding ``.git``). Default: the
        folder above the ``simrec`` package, when that package is not inside a
        ``site-packages`` folder; else the commit pip recorded, if any.

    Returns
    -------
    Commit or None
        ``(sha, modified, where)``: the 40-digit commit; True / False whether
        tracked files differ from it (None if git could not say); the clone's
        folder. Never raises.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> clone = Path(tempfile.mkdtemp())
    >>> (clone / ".git" / "refs" / "heads").mkdir(parents=True)
    >>> _ = (clone / ".git" / "HEAD").write_text("ref: refs/heads/main\\n")
    >>> _ = (clone / ".git" / "refs" / "heads" / "main").write_text("7ad3bd7" + "0" * 33 + "\\n")
    >>> git_commit(clone).sha[:7], len(git_commit(clone).sha)
    ('7ad3bd7', 40)
    >>> git_commit(Path(tempfile.mkdtemp())) is None
    True
    """
    if root is None:
        return _default_commit()
    return _commit_at(Path(root))


@lru_cache(maxsize=None)
def _commit_at(root: Path) -> Commit | None:
    try:
        sha = _head_from_files(root)
    except OSError:
        sha = None
    if sha is None and (root / ".git").exists():
        out = _git(root, "rev-parse", "HEAD")
        sha = out.strip() if out and _SHA.fullmatch(out.strip()) else None
    if sha is None:
        return None
    status = _git(root, "--no-optional-locks", "status", "--porcelain", "--untracked-files=no")
    return Commit(sha, None if status is None else bool(status.strip()), str(root))


@lru_cache(maxsize=1)
def _default_commit() -> Commit | None:
    package = Path(__file__).resolve().parent
    if not any(part in ("site-packages", "dist-packages") for part in package.parts):
        found = _commit_at(package.parent)
        if found is not None:
            return found
    return _from_pip()


def package_versions() -> dict[str, str]:
    """Versions of Python and of :data:`KEY_PACKAGES` (``"not installed"`` if absent), and Ray's if imported.

    Read from the installed packages' metadata: nothing is imported.
    """
    out = {"python": platform.python_version()}
    packages = KEY_PACKAGES + (("ray",) if "ray" in sys.modules else ())
    for pkg in packages:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def begin_command(argv: list[str]) -> None:
    """Record that this process runs the ``simrec`` command ``argv`` (without the program name)."""
    _STATE.update(command=shlex.join(["simrec", *argv]), folders=[])


def end_command() -> None:
    """Forget the command (the process goes on as a library user, e.g. a test runner)."""
    _STATE.update(command=None, folders=[])


def command_line() -> str:
    """The command that started this job: ``simrec ...``, else ``python`` and this process's arguments."""
    return _STATE["command"] or shlex.join(["python", *sys.argv])


def note_run_folder(path: str | os.PathLike) -> None:
    """Record that the running ``simrec`` command opened the run folder ``path`` (for its ``run.log``)."""
    if _STATE["command"] is not None:
        _STATE["folders"].append(Path(path).resolve())


def run_folders() -> tuple[Path, ...]:
    """The run folders the running ``simrec`` command opened (resolved), in order."""
    return tuple(_STATE["folders"])


def version_text() -> str:
    """What ``simrec --version`` prints: version and commit, draws version, key packages.

    The first line is ``simrec <version>``, followed by the commit when run
    from a clone.
    """
    from simrec._random import DRAWS_VERSION

    versions = package_versions()
    commit = git_commit()
    first = f"simrec {versions['simrec']}"
    if commit is not None:
        first += f" (commit {commit.short()}, {commit.where})"
    packages = ", ".join(f"{k} {v}" for k, v in versions.items() if k != "simrec")
    return f"{first}\nrandom draws: version {DRAWS_VERSION}\n{packages}"


def stamp_line(run: str | os.PathLike | None = None) -> str:
    """The stamp of a committed result: ``Made with simrec <version>, commit <sha>, draws version <n>``.

    Parameters
    ----------
    run : folder, optional
        A run folder: the stamp is read from its ``manifest.json`` (the simrec
        version, commit and draws version that made its numbers, also when the
        folder was resumed later by another simrec). Default: this process's
        simrec (:func:`git_commit`, :data:`simrec._random.DRAWS_VERSION`).

    Returns
    -------
    str
        The stamp line. The commit is the 7-digit short sha, ``<sha>+modified``
        when the clone had uncommitted changes, or ``unknown`` when simrec was
        not run from a clone: neither of those is a valid stamp for the
        repository's stamp check (``tests/test_reproductions.py``), since no
        commit holds the code that made the numbers.

    Raises
    ------
    FileNotFoundError
        ``run`` has no ``manifest.json``.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> run = Path(tempfile.mkdtemp())
    >>> manifest = {"versions": {"simrec": "0.1.0"}, "commit": "7ad3bd7" + "0" * 33, "commit_modified": False, "draws": 2}
    >>> _ = (run / "manifest.json").write_text(json.dumps(manifest))
    >>> stamp_line(run)
    'Made with simrec 0.1.0, commit 7ad3bd7, draws version 2'
    """
    if run is None:
        from simrec._random import DRAWS_VERSION

        commit = git_commit()
        short = "unknown" if commit is None else commit.short()
        return f"Made with simrec {package_versions()['simrec']}, commit {short}, draws version {DRAWS_VERSION}"
    manifest = json.loads((Path(run) / "manifest.json").read_text(encoding="utf-8"))
    sha = manifest.get("commit")
    short = "unknown" if not sha else Commit(str(sha), manifest.get("commit_modified"), str(run)).short()
    version = (manifest.get("versions") or {}).get("simrec", "unknown")
    return f"Made with simrec {version}, commit {short}, draws version {manifest.get('draws', 1)}"

"""Where simrec's libraries keep their caches: the user's cache folder, nothing else outside ``--out``.

Two libraries write files of their own while simrec runs. Left alone, numba
caches the compiled kernels (:mod:`simrec.metrics._auc_kernel`,
:mod:`simrec.preference._urn_kernel`) next to their modules, i.e. into the
installed package's folder, and matplotlib creates its config folder and font
cache among HOME's dotfiles (``~/.config/matplotlib``, ``~/.cache/matplotlib``
or ``~/.matplotlib``). simrec points both at the platform's user cache folder
(:func:`user_cache_dir`): ``$XDG_CACHE_HOME/simrec`` or ``~/.cache/simrec`` on
Linux, ``~/Library/Caches/simrec`` on macOS, ``%LOCALAPPDATA%\\simrec\\Cache``
on Windows, with a subfolder per library (``numba/``, ``matplotlib/``).

* numba (:func:`cached_njit`): the kernels are cached in
  ``<cache>/numba``, or in ``NUMBA_CACHE_DIR`` when the user set it. numba's
  other cache locations (the package folder, ``~/.cache/numba``) are never
  used: if the folder cannot be written (a read-only HOME), the kernels are
  compiled in memory in each process (a few seconds each), nothing is written
  and nothing is printed.
* matplotlib (:func:`configure_matplotlib`, called by the ``simrec`` command
  before anything imports matplotlib): ``MPLCONFIGDIR`` is set to
  ``<cache>/matplotlib`` unless the user set it. If that folder cannot be
  written, a temporary folder is used (removed when the process exits), which
  is what matplotlib itself would do, but without its warning. Decision:
  only the command does this, not ``import simrec``: in a notebook or
  script, matplotlib belongs to the user (their ``matplotlibrc`` and
  folders). A consequence for the command: a ``matplotlibrc`` in
  ``~/.config/matplotlib`` does not style simrec's figures (one in the
  current folder still does); set ``MPLCONFIGDIR`` to use yours.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["cached_njit", "configure_matplotlib", "numba_cache_dir", "use_kernel", "user_cache_dir"]

#: numba's settings that :func:`cached_njit` changes while it decorates (and restores).
_NUMBA_SETTINGS = ("CACHE_DIR", "CACHE_LOCATOR_CLASSES")


def user_cache_dir() -> Path:
    """The platform's user cache folder for simrec (not created here).

    ``$XDG_CACHE_HOME/simrec`` (an absolute ``XDG_CACHE_HOME`` only, as the
    XDG specification says) or ``~/.cache/simrec`` on Linux and other POSIX
    systems, ``~/Library/Caches/simrec`` on macOS, ``%LOCALAPPDATA%\\simrec\\Cache``
    on Windows.
    """
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "simrec" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "simrec"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "simrec"


def _writable(folder: Path) -> bool:
    """Create ``folder`` (user-only permissions) if needed; whether a file can be written in it."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except (OSError, RuntimeError):  # RuntimeError: Path.home() without a home
        return False
    return True


def numba_cache_dir() -> Path | None:
    """Where numba caches simrec's kernels: ``NUMBA_CACHE_DIR`` if set, else ``<user cache>/numba``; None if unwritable."""
    explicit = os.environ.get("NUMBA_CACHE_DIR")
    try:
        folder = Path(explicit) if explicit else user_cache_dir() / "numba"
    except RuntimeError:  # no home folder
        return None
    return folder if _writable(folder) else None


def use_kernel(size: float, minimum: float) -> bool:
    """Whether a step of ``size`` units takes its compiled kernel rather than its numpy path.

    The rule every kernel switch in simrec shares: the kernel when the step is
    at least ``minimum`` units (the size at which importing numba and loading
    the cached kernel, about 0.4 s, pays for itself; each call site measures
    its own), or whenever numba is already imported (then the kernel costs
    nothing extra). Both paths give the same numbers, so the switch changes
    only the time.
    """
    return size >= minimum or "numba" in sys.modules


def cached_njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(cache=True, **options)`` with the cache in :func:`numba_cache_dir` (no cache if there is none).

    numba picks a function's cache folder when it is decorated; numba's own
    setting (``numba.config.CACHE_DIR``, and its list of locators, so that no
    other location is tried) is changed only while simrec's function is
    decorated, so the user's own numba functions are not affected.
    """
    import numba
    from numba.core import config as _config

    config: Any = _config  # numba sets its settings at import: the type checker does not see them

    folder = numba_cache_dir()

    def decorate(fn: Callable[..., Any]) -> Any:
        if folder is None:
            return numba.njit(**options)(fn)
        saved = {name: getattr(config, name) for name in _NUMBA_SETTINGS if hasattr(config, name)}
        config.CACHE_DIR = str(folder)
        if "CACHE_LOCATOR_CLASSES" in saved:  # numba >= 0.61: try no other location
            config.CACHE_LOCATOR_CLASSES = "UserProvidedCacheLocator"
        try:
            return numba.njit(cache=True, **options)(fn)
        except RuntimeError:  # "cannot cache function": the folder became unwritable meanwhile
            return numba.njit(**options)(fn)
        finally:
            for name, value in saved.items():
                setattr(config, name, value)

    return decorate


def configure_matplotlib() -> Path | None:
    """Set ``MPLCONFIGDIR`` for this process and its children (unless the user set it); the folder, or None.

    ``<user cache>/matplotlib``, else a temporary folder removed at exit.
    Nothing is done once matplotlib is imported (it has read the variable).
    """
    if os.environ.get("MPLCONFIGDIR") or "matplotlib" in sys.modules:
        return None
    try:
        folder: Path | None = user_cache_dir() / "matplotlib"
    except RuntimeError:  # no home folder
        folder = None
    if folder is None or not _writable(folder):
        try:
            folder = Path(tempfile.mkdtemp(prefix="simrec-matplotlib-"))
        except OSError:
            return None  # nowhere to write: matplotlib says so itself
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = str(folder)
    return folder

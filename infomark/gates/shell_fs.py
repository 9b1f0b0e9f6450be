"""The shell classifier's only window on the file system, and whether a classification used it.

:func:`infomark.gates.shell.classify_shell` is a function of its command line, its start
directory, the environment's ``HOME`` and whatever it reads of the file system (globs, the
files a ``sed -f`` or ``psql -f`` runs, whether ``git checkout X`` names a path, symlinks
under the paths it names). Every file-system read of ``infomark/gates/shell/`` goes through
the functions here (``tests/gates/shell/test_shell_fs.py`` holds the package to that), and
each one that can change the *class* notes that the running classification read the file
system (resolving symlinks only adds to ``paths``). A classification that read nothing has
the same class later for the same inputs, whatever changed on disk in between: the facade
reuses that class when it records the result of the call it decided
(:mod:`infomark.gates.watch`) instead of classifying the command again.

Kept outside ``gates/shell/`` so that asking costs no parser import. Standard library only.
"""

from __future__ import annotations

import _thread
import os

from infomark.kernel.regular import read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "begin",
    "exists",
    "expanduser",
    "glob",
    "isdir",
    "isfile",
    "lexists",
    "listdir",
    "read_any",
    "read_file",
    "realpath",
    "start_dir",
    "stat",
    "untouched",
]

_SEEN = _thread._local()  # per thread: the HTTP service classifies on several


def begin() -> None:
    """Start watching: the classification that follows has read nothing yet."""
    _SEEN.read = False


def untouched() -> bool:
    """Whether nothing was read (and :func:`begin` was called on this thread)."""
    return getattr(_SEEN, "read", True) is False


def read_any() -> None:
    """Note a read of the file system (or of anything else outside the classifier's inputs)."""
    _SEEN.read = True


def start_dir(cwd: str | None) -> str:
    """The absolute start directory: ``cwd``, or this process's (a read when it is used)."""
    if not (cwd and os.path.isabs(cwd)):
        read_any()
    return os.path.abspath(cwd) if cwd else os.getcwd()


def stat(path: str) -> os.stat_result:
    read_any()
    return os.stat(path)


def _probe(test: Callable[[str], bool]) -> Callable[[str], bool]:
    """``test`` (an ``os.path`` predicate), noting the read first."""

    def probe(path: str) -> bool:
        read_any()
        return test(path)

    probe.__name__ = probe.__qualname__ = test.__name__
    return probe


isfile = _probe(os.path.isfile)
isdir = _probe(os.path.isdir)
exists = _probe(os.path.exists)
lexists = _probe(os.path.lexists)


def listdir(path: str) -> list[str]:
    read_any()
    return os.listdir(path)


def realpath(path: str) -> str:
    """Where a path the line names really is: it adds to the classification's ``paths`` (what
    self-protection checks when deciding), never to its class, so it is not a read here;
    ``State.path`` notes one when the paths' count decides the class (the cap)."""
    return os.path.realpath(path)


def glob(pattern: str, root_dir: str | None) -> list[str]:
    """``glob.glob(pattern, root_dir=root_dir)`` (loaded only then: it loads re, fnmatch)."""
    read_any()
    import glob as _glob

    return _glob.glob(pattern, root_dir=root_dir)


def read_file(path: str, limit: int) -> bytes:
    """The first ``limit`` bytes of the regular file at ``path``; a FIFO, socket or device
    there is an ``OSError``, never a read that waits (:mod:`infomark.kernel.regular`)."""
    read_any()
    return read_regular(path, limit)


def expanduser(path: str) -> str:
    """``os.path.expanduser``: ``~`` is ``$HOME`` (an input the caller names); without ``HOME``,
    or for ``~user``, it reads the password database."""
    if path.startswith("~"):
        own = path == "~" or path.startswith("~/")
        if not own or "HOME" not in os.environ:
            read_any()
    return os.path.expanduser(path)

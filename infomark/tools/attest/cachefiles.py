"""Reading and writing the files of infomark's byte-code caches (:mod:`.pycache`,
:mod:`.rewrites`): nothing through a symlink, nothing but regular files, entries 0600 written
whole through a temporary file and a rename."""

from __future__ import annotations

import contextlib
import os
import stat

from infomark.tools.attest.fileio import read_fd

__all__ = ["private_dir", "read_regular", "read_with_stat", "store"]


def read_regular(path: str) -> bytes | None:
    """The bytes of the regular file at ``path`` (a symlink is not followed), or None."""
    got = read_with_stat(path)
    return got[0] if got is not None else None


def read_with_stat(path: str) -> tuple[bytes, os.stat_result] | None:
    """The bytes and the stat of the regular file at ``path`` (not through a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return read_fd(fd, st), st
    except OSError:
        return None
    finally:
        os.close(fd)


def store(cache: str, name: str, pyc: bytes) -> None:
    tmp = os.path.join(cache, f".{name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(pyc)
        os.replace(tmp, os.path.join(cache, name))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def private_dir(path: str) -> str | None:
    """``path``, created 0700, or None when it is not a private directory of this user (a
    symlink, a file, someone else's, open to others): nothing is read from it or written."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return path

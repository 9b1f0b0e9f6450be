"""Read a file the agent may have replaced, without ever blocking on it.

The project (its configuration, git's index, the host's settings) is the agent's: with a
shell, it can put a FIFO, a socket or a device where a file was. A plain ``open()`` of a
FIFO waits for a writer for ever, so a hook process hung until its watchdog, and the
service, which reads these files on its event loop, stopped answering every session
(``tests/security/test_hook_fifos.py`` turns every file of a project into a FIFO). Here the
file is opened non-blocking and read only when ``fstat`` of that descriptor says it is a
regular file; anything else is an :class:`OSError` naming what it found. Standard library
only (hot path).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["NotRegular", "open_regular", "read_regular", "regular_fd"]

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
# the file-type bits of st_mode (stat.S_IFMT and friends: that module is not imported, to
# keep this one, which every hook process loads, at the cost of its own few lines)
_S_IFMT, _S_IFREG = 0o170000, 0o100000
_EINVAL = 22  # errno.EINVAL (Linux, macOS, the BSDs): errno is not imported either
_KINDS = {
    0o040000: "a directory",
    0o010000: "a FIFO",
    0o140000: "a socket",
    0o020000: "a character device",
    0o060000: "a block device",
}


class NotRegular(OSError):
    """The path names something other than a regular file (``strerror`` says what)."""


def regular_fd(path: str) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at ``path`` (opened non-blocking; the caller closes
    it) and its ``fstat``; :class:`NotRegular` for anything else, never opened to wait."""
    fd = os.open(path, _FLAGS)  # a directory opens read-only on Linux: fstat tells
    st = os.fstat(fd)
    kind = st.st_mode & _S_IFMT
    if kind != _S_IFREG:
        os.close(fd)
        what = _KINDS.get(kind, "not a regular file")
        raise NotRegular(_EINVAL, f"{what}, not a file", path)
    return fd, st


def open_regular(path: str) -> BinaryIO:
    """The regular file at ``path`` open for binary reading (seekable), as ``open(path,
    "rb")`` but never waiting on a FIFO or device: :class:`NotRegular` for those."""
    return os.fdopen(regular_fd(path)[0], "rb")


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed; at most ``limit``).

    :class:`NotRegular` when it is a directory, FIFO, socket or device (never opened for a
    blocking read); the :class:`OSError` of ``open`` when it cannot be opened
    (``FileNotFoundError`` when there is nothing there).
    """
    fd = regular_fd(path)[0]
    try:
        chunks: list[bytes] = []
        left = -1 if limit is None else limit
        while left:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if left > 0:
                left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

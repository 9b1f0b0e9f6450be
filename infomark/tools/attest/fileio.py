"""Whole-file reads and writes with the ``os`` calls alone, for the thousands of small files an
attested check reads and writes (the copy, its byte code, the caches' entries).

``open(path, "rb").read()`` builds a file object, a buffer and a context for each file; on a
copy of 1,000 files (and 1,000 pycs) that was about a third of the cost of each read and write
(docs/performance.md, "Attested runs"). Same bytes, same errors (:class:`OSError`).
"""

from __future__ import annotations

import os

__all__ = ["read_fd", "read_path", "write_fd", "write_path"]

_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def read_fd(fd: int, st: os.stat_result | None = None) -> bytes:
    """Everything from ``fd`` to its end (its size from ``st``, its ``fstat`` when not given)."""
    size = (st or os.fstat(fd)).st_size
    chunk = os.read(fd, size + 1 if size else 1 << 16)
    if not chunk:
        return b""
    parts = [chunk]
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_path(path: str, flags: int = 0) -> bytes:
    """The bytes of the file at ``path`` (``flags``: more ``os.open`` flags, e.g.
    ``O_NOFOLLOW``)."""
    fd = os.open(path, _READ | flags)
    try:
        return read_fd(fd)
    finally:
        os.close(fd)


def write_path(path: str, data: bytes, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` (created with ``mode`` less the umask, or truncated)."""
    fd = os.open(path, _WRITE, mode)
    try:
        write_fd(fd, data)
    finally:
        os.close(fd)


def write_fd(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    done = os.write(fd, data)
    if done < len(data):
        view = memoryview(data)[done:]
        while view:
            view = view[os.write(fd, view) :]

"""Content-addressed storage of tool outputs under ``<home>/blobs`` (sha256)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from infomark.kernel.contexts import suppress
from infomark.kernel.digest import LARGE, sha256

TYPE_CHECKING = False

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Protocol

    from _typeshed import StrPath

__all__ = ["BlobStore", "Blobs"]

# Characters per encoded chunk of a large text output: the slice, its encoding and the hash
# update stay in cache, and the two buffers of a chunk together stay under glibc's 128 KiB
# trim threshold (above it every chunk grows and shrinks the heap: two brk calls and fresh
# pages per chunk, measured 34-49 % of sha256 at 100-256 Ki). An ASCII slice is one byte per
# character and so is its encoding: 48 Ki (CPU time, paired with sha256 of the same bytes:
# 16 Ki 78-81 %, 48 Ki 82-83 %); other texts use 16 Ki (a slice of up to 4 bytes a character).
_CHUNK = 1 << 14
_ASCII_CHUNK = 48 << 10


def _encoded(text: str) -> Iterator[bytes]:
    """``text`` as UTF-8 (lone surrogates passed through), one chunk at a time."""
    step = _ASCII_CHUNK if text.isascii() else _CHUNK
    for i in range(0, len(text), step):
        yield text[i : i + step].encode("utf-8", "surrogatepass")


if TYPE_CHECKING:

    class Blobs(Protocol):
        """Where tool outputs go: files under the home (:class:`BlobStore`) or a store's
        table (:class:`infomark.ledger.pg_blobs.PgBlobStore`)."""

        def put(self, data: bytes) -> str: ...

        def put_text(self, text: str) -> tuple[str, int]: ...

        def get(self, digest: str) -> bytes | None: ...

        def verify(self, digest: str) -> bool | None: ...

        def exists(self, digest: str) -> bool: ...

else:

    class Blobs:
        """Where tool outputs go (a ``typing.Protocol`` when type checking): files under the
        home (:class:`BlobStore`) or a store's table (``pg_blobs.PgBlobStore``)."""


class BlobStore:
    def __init__(self, root: StrPath) -> None:
        self.root = root
        self._root = os.fspath(root)

    def _file(self, digest: str) -> str:
        hexd = digest.removeprefix("sha256:")
        return os.path.join(self._root, hexd[:2], hexd[2:])

    def path_for(self, digest: str) -> Path:
        from pathlib import Path  # for callers; the hook's path uses _file

        return Path(self._file(digest))

    def exists(self, digest: str) -> bool:
        """Whether the blob is there (not whether it is intact: :meth:`verify`)."""
        return os.path.isfile(self._file(digest))

    def put(self, data: bytes) -> str:
        """Store ``data`` (idempotent, atomic, durable) and return ``sha256:<hex>``.

        One hash and one fsync per new blob: the data is on disk before the rename makes it
        visible, and before the caller commits the event that points to it (that commit's
        fsync also makes the rename durable on journaling filesystems). A blob already
        stored with the right size is not written again.
        """
        hexd = sha256(data).hexdigest()
        if not self._stored(hexd, len(data)):
            self._write(hexd, (data,))
        return "sha256:" + hexd

    def put_text(self, text: str) -> tuple[str, int]:
        """Store ``text`` as UTF-8 (lone surrogates passed through): ``(digest, size)``.

        A large text is encoded chunk by chunk, never as one copy: hashed first (a blob
        already stored costs one pass), then written and fsync'd only when it is new.
        """
        if len(text) <= _CHUNK:
            data = text.encode("utf-8", "surrogatepass")
            return self.put(data), len(data)
        h = sha256(large=len(text) * 4 >= LARGE)  # len() in code points: up to 4 bytes each
        update = h.update
        size = 0
        for part in _encoded(text):
            update(part)
            size += len(part)
        hexd = h.hexdigest()
        if not self._stored(hexd, size):
            self._write(hexd, _encoded(text))
        return "sha256:" + hexd, size

    def _stored(self, hexd: str, size: int) -> bool:
        try:
            return os.stat(os.path.join(self._root, hexd[:2], hexd[2:])).st_size == size
        except FileNotFoundError:
            return False

    def _write(self, hexd: str, chunks: Iterable[bytes]) -> None:
        """Write ``chunks`` to a private temp file, fsync it, then rename it into place."""
        folder = os.path.join(self._root, hexd[:2])
        tmp = os.path.join(folder, f".{hexd[2:]}.{os.getpid()}.{os.urandom(4).hex()}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(tmp, flags, 0o600)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, flags, 0o600)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        os.close(fd)
        os.replace(tmp, os.path.join(folder, hexd[2:]))

    def get(self, digest: str) -> bytes | None:
        try:
            with open(self._file(digest), "rb") as f:
                return f.read()
        except OSError:
            return None

    def verify(self, digest: str) -> bool | None:
        """True when the blob matches its digest, False when it does not, None when missing."""
        data = self.get(digest)
        if data is None:
            return None
        return "sha256:" + sha256(data).hexdigest() == digest

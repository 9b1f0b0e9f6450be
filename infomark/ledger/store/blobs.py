"""Content-addressed storage of tool outputs (sha256): small ones as rows of the ledger,
the others as files under ``<home>/blobs``.

A tool output of at most :data:`SMALL` bytes (:meth:`BlobStore.put_output`) is staged and
written by the next write transaction of the ledger (``insert_blobs``), the one that records
the event pointing to it: one commit, one fsync for both. As a file it took a file created,
fsync'd and renamed before that commit: on ext4 here a journal commit of its own, 1.2 ms of
the 4.4 ms median of a PostToolUse over HTTP (measured in session 13; the WAL's fdatasync
that follows takes 0.08 ms). Every other blob (a larger output, a baseline's files, a
grading file's content) is a file, durable before its ``put`` returns.

A new blob file is written to ``<home>/blobs/.tmp/<hex>.<pid>.<random>``, fsync'd, then renamed
into place. :data:`PARTIAL` names the temp files this process is writing, so the hook's
watchdog can remove them when it answers in the hook's place (a process that ends with
``os._exit`` leaves no other trace); every :class:`BlobStore` opened sweeps the temp files
of writers that no longer run (a killed process, a host crash).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator

from infomark.kernel.contexts import suppress
from infomark.kernel.digest import LARGE, sha256

TYPE_CHECKING = False

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Protocol

    from _typeshed import StrPath

    from infomark.kernel.spooled import LargeText

__all__ = ["PARTIAL", "SMALL", "BlobRows", "BlobStore", "Blobs", "remove_partial"]

SMALL = 32 << 10  # bytes: a tool output up to this size is a row of the ledger

PARTIAL: set[str] = set()  # temp files this process is writing right now
_TMP = ".tmp"
_STALE_S = 3600.0  # a temp file untouched this long is an orphan, whoever wrote it

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
        table (:class:`infomark.ledger.store.pg_blobs.PgBlobStore`)."""

        def put(self, data: bytes) -> str: ...

        def put_text(self, text: str) -> tuple[str, int]: ...

        def put_large(self, text: LargeText) -> tuple[str, int]: ...

        def get(self, digest: str) -> bytes | None: ...

        def verify(self, digest: str) -> bool | None: ...

        def exists(self, digest: str) -> bool: ...

        def put_output(self, data: bytes | str | LargeText) -> tuple[str, int]: ...

        def flush_staged(self) -> None: ...

        def drop_staged(self) -> None: ...

    class BlobRows(Protocol):
        """The ledger's table of small outputs (the SQLite journal)."""

        def insert_blobs(self, staged: dict[str, bytes]) -> None: ...

        def blob(self, hexd: str) -> bytes | None: ...

        def has_blob(self, hexd: str) -> bool: ...

else:

    class Blobs:
        """Where tool outputs go (a ``typing.Protocol`` when type checking): files under the
        home (:class:`BlobStore`) or a store's table (``pg_blobs.PgBlobStore``)."""

    class BlobRows:
        """The ledger's table of small outputs (a ``typing.Protocol`` when type checking)."""


def remove_partial() -> list[str]:
    """Delete the temp files this process is writing (the watchdog, before it exits)."""
    removed = []
    for path in list(PARTIAL):
        with suppress(OSError):
            os.unlink(path)
            removed.append(path)
        PARTIAL.discard(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def sweep(tmp: str) -> int:
    """Remove orphaned temp files under ``tmp``: their writer is gone, or they are stale."""
    import time

    removed = 0
    try:
        entries = list(os.scandir(tmp))
    except OSError:  # no temp dir yet: nothing was ever left
        return 0
    now = time.time()
    for entry in entries:
        parts = entry.name.split(".")
        pid = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else -1
        with suppress(OSError):
            if pid == os.getpid():
                continue
            if (pid > 0 and not _alive(pid)) or now - entry.stat().st_mtime > _STALE_S:
                os.unlink(entry.path)
                removed += 1
    return removed


def _write_all(fd: int, chunks: Iterable[bytes]) -> None:
    """Every byte of ``chunks`` to ``fd`` (the tests' seam for a slow disk)."""
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]


class BlobStore:
    """Blob files under ``root``; with ``rows`` (the SQLite journal), small tool outputs as
    rows of the ledger (see the module's docstring)."""

    def __init__(self, root: StrPath, rows: BlobRows | None = None) -> None:
        self.root = root
        self._root = os.fspath(root)
        self._tmp = os.path.join(self._root, _TMP)
        self._rows = rows
        self._staged: dict[str, bytes] = {}  # hex digest -> a small output not committed yet
        sweep(self._tmp)

    def put_output(self, data: bytes | str | LargeText) -> tuple[str, int]:
        """Store a tool output: ``(digest, size)``. A small one (at most :data:`SMALL` bytes
        of UTF-8) is staged for the ledger's next write transaction, which must be the one
        that records the event pointing to it (:meth:`flush_staged`); any other is a file,
        durable before this returns."""
        if isinstance(data, str):
            if self._rows is None or len(data) > SMALL:  # code points: at least as many bytes
                return self.put_text(data)
            data = data.encode("utf-8", "surrogatepass")
        if not isinstance(data, bytes):
            return self.put_large(data)  # streamed from the hook's stdin: over 1 MiB
        if self._rows is None or len(data) > SMALL:
            return self.put(data), len(data)
        hexd = sha256(data).hexdigest()
        self._staged[hexd] = data
        return "sha256:" + hexd, len(data)

    def flush_staged(self) -> None:
        """Inside the ledger's write transaction: the staged outputs into its table."""
        if self._staged and self._rows is not None:
            staged, self._staged = self._staged, {}
            self._rows.insert_blobs(staged)

    def drop_staged(self) -> None:
        """The transaction that was to store them rolled back (its events with them)."""
        self._staged.clear()

    def _file(self, digest: str) -> str:
        hexd = digest.removeprefix("sha256:")
        return os.path.join(self._root, hexd[:2], hexd[2:])

    def path_for(self, digest: str) -> Path:
        from pathlib import Path  # for callers; the hook's path uses _file

        return Path(self._file(digest))

    def exists(self, digest: str) -> bool:
        """Whether the blob is there (not whether it is intact: :meth:`verify`)."""
        hexd = digest.removeprefix("sha256:")
        if hexd in self._staged or (self._rows is not None and self._rows.has_blob(hexd)):
            return True
        return os.path.isfile(self._file(digest))

    def put(self, data: bytes) -> str:
        """Store ``data`` (idempotent, atomic, durable) and return ``sha256:<hex>``.

        One hash and one fsync per new blob: the data is on disk before the rename makes it
        visible, and before the caller commits the event that points to it (that commit's
        fsync also makes the rename durable on journaling filesystems). A blob already
        stored (a regular file of the right size, :meth:`_stored`) is not written again.
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

    def put_large(self, text: LargeText) -> tuple[str, int]:
        """Store a text streamed from the hook's stdin (:mod:`infomark.kernel.spooled`):
        ``(digest, size)`` of its UTF-8 bytes, as :meth:`put_text` of the ``str`` it stands
        for; read back from its spool a chunk at a time, written only when new."""
        digest, size = text.digest()
        hexd = digest.removeprefix("sha256:")
        if not self._stored(hexd, size):
            self._write(hexd, text.chunks())
        return digest, size

    def _stored(self, hexd: str, size: int) -> bool:
        """Whether the blob file is there: a regular file of that size under its name. A link
        there (to a file the agent can write elsewhere) or a file of another size is
        replaced. The bytes are not read again: a file planted under the name of an output
        with other bytes of the same size reads as altered (``audit --verify``, the evidence
        refused), exactly as an edit made after the record does, so keeping it hides
        nothing; comparing would cost a 100 MB output that is already stored ~25 ms of CPU
        more than its hash (57 % of ``sha256`` instead of 81 %, ``python -m bench hash``)."""
        try:
            st = os.lstat(os.path.join(self._root, hexd[:2], hexd[2:]))
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == size

    def _write(self, hexd: str, chunks: Iterable[bytes]) -> None:
        """Write ``chunks`` to a private temp file, fsync it, then rename it into place."""
        folder = os.path.join(self._root, hexd[:2])
        tmp = os.path.join(self._tmp, f"{hexd[:16]}.{os.getpid()}.{os.urandom(4).hex()}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(tmp, flags, 0o600)
        except FileNotFoundError:
            os.makedirs(self._tmp, exist_ok=True)
            fd = os.open(tmp, flags, 0o600)
        PARTIAL.add(tmp)
        try:
            try:
                _write_all(fd, chunks)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.replace(tmp, os.path.join(folder, hexd[2:]))
            except FileNotFoundError:
                os.makedirs(folder, exist_ok=True)
                os.replace(tmp, os.path.join(folder, hexd[2:]))
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        finally:
            PARTIAL.discard(tmp)

    def get(self, digest: str) -> bytes | None:
        hexd = digest.removeprefix("sha256:")
        staged = self._staged.get(hexd)
        if staged is not None:
            return staged
        if self._rows is not None:
            row = self._rows.blob(hexd)
            if row is not None:
                return row
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

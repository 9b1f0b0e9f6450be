"""Tool outputs in a PostgreSQL store (the ``blobs`` table), for every host to read."""

from __future__ import annotations

import hashlib

from infomark.ledger.store.pg import PgJournal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from infomark.kernel.spooled import LargeText

__all__ = ["PgBlobStore"]

_STORED = "SELECT 1 FROM blobs WHERE digest = ? AND size = ?"
_UPSERT = (
    "INSERT INTO blobs(digest, size, data) VALUES (?, ?, ?) ON CONFLICT (digest) DO UPDATE "
    "SET size = excluded.size, data = excluded.data WHERE blobs.data <> excluded.data"
)


class PgBlobStore:
    """Tool outputs in the store's ``blobs`` table, content-addressed by SHA-256 as the
    files of :class:`~infomark.ledger.store.blobs.BlobStore` are: every host reads every blob.
    Each ``put`` commits before the event that points to it (outside a write), or with it."""

    def __init__(self, journal: PgJournal) -> None:
        self._journal = journal

    def put(self, data: bytes) -> str:
        """Store ``data`` under its digest. A row already there is overwritten unless it
        holds these bytes, as the SQLite store's rows are; a big one (over 64 KiB) of the
        right size is kept without sending the payload again (other bytes in it read as
        altered, as the files of the SQLite store do)."""
        hexd = hashlib.sha256(data).hexdigest()
        j = self._journal
        if len(data) > 65536 and j._one(_STORED, (hexd, len(data))):
            return "sha256:" + hexd  # already stored: the big payload is not sent again
        j._retry(lambda: j._db.execute(_UPSERT, (hexd, len(data), data)))
        return "sha256:" + hexd

    def put_text(self, text: str) -> tuple[str, int]:
        data = text.encode("utf-8", "surrogatepass")
        return self.put(data), len(data)

    def put_large(self, text: LargeText) -> tuple[str, int]:
        """A streamed text (``kernel.spooled``): one row holds it whole, so it is joined."""
        data = b"".join(text.chunks())
        return self.put(data), len(data)

    def put_output(self, data: bytes | str | LargeText) -> tuple[str, int]:
        """A tool output: a row whatever its size (each ``put`` is its own statement)."""
        if isinstance(data, bytes):
            return self.put(data), len(data)
        if isinstance(data, str):
            return self.put_text(data)
        return self.put_large(data)

    def flush_staged(self) -> None:
        """Nothing is staged here: each ``put`` inserted its row already."""

    def drop_staged(self) -> None:
        """Nothing is staged here."""

    def get(self, digest: str) -> bytes | None:
        hexd = digest.removeprefix("sha256:")
        row = self._journal._one("SELECT data FROM blobs WHERE digest = ?", (hexd,))
        return None if row is None else bytes(row[0])

    def exists(self, digest: str) -> bool:
        """Whether the blob is there (not whether it is intact: :meth:`verify`)."""
        hexd = digest.removeprefix("sha256:")
        return self._journal._one("SELECT 1 FROM blobs WHERE digest = ?", (hexd,)) is not None

    def verify(self, digest: str) -> bool | None:
        """True when the blob matches its digest, False when it does not, None when missing."""
        data = self.get(digest)
        if data is None:
            return None
        return "sha256:" + hashlib.sha256(data).hexdigest() == digest

"""The append-only, tamper-evident journal on SQLite (plain ``sqlite3``: hot path).

One ``events`` table holds every event of every session: ``(session, seq)`` is the
order (per session, gap-free), the timestamp is for display only. Each row is
chained (``hash = sha256(prev_hash ‖ canonical row)``) and MACed with the ledger
key; ``heads`` holds the MACed last hash of each session, so deleting the tail is
caught too. Evidence records are indexed by ref in ``evidence`` (a projection,
written in the same transaction as their event). Snapshots of the per-session
projection let a new process skip most of the replay; they are MACed and ignored
when they do not verify.

Writers serialise on ``BEGIN IMMEDIATE``; ``busy_timeout`` plus a bounded retry
turns a lock that outlives the bound into :class:`StoreBusyError`, never a raw
"database is locked". ``sessions`` keeps a parent pointer and fork seq so a
session can later be forked and merged; the schema version lives in
``PRAGMA user_version``.

This is the embedded backend of the store seam (:mod:`infomark.ledger.store.base`,
which holds the chain, the MACs and every read both backends share); the PostgreSQL
backend is :mod:`infomark.ledger.store.pg`.
"""

from __future__ import annotations

import os
import time

from infomark.kernel.contexts import contextmanager
from infomark.kernel.errors import StoreBusyError, StoreError
from infomark.ledger import manifest
from infomark.ledger.store.base import _ENCODE as _ENCODE  # re-exported: tests, audit
from infomark.ledger.store.base import _STR as _STR
from infomark.ledger.store.base import (
    GENESIS,
    BaseJournal,
    EventRow,
    _now,
    event_body,
    event_hash,
    loads_object,
)
from infomark.ledger.store.writer_queue import WriterQueue

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterator
    from typing import TypeVar

    from _typeshed import StrPath

    from infomark.ledger.keys import Key
    from infomark.ledger.store.conn import Conn
    from infomark.ledger.store.group_commit import WriteGate

    _T = TypeVar("_T")
else:
    try:  # the C module: ``sqlite3`` only adds datetime adapters (~6 M instructions)
        import _sqlite3 as sqlite3
    except ImportError:  # pragma: no cover - a Python whose sqlite3 is not CPython's
        import sqlite3

__all__ = [
    "GENESIS",
    "SCHEMA_VERSION",
    "EventRow",
    "Journal",
    "bound_store_waits",
    "event_body",
    "event_hash",
    "keep_wal_at_exit",
    "loads_object",
]

# 2: evidence_by_seq (streamed verification); 3: the home manifest; 4: small tool outputs as
# rows (``blobs``), committed with the event that points to them
SCHEMA_VERSION = 4
_BUSY_MS = 10_000
_RETRIES = 5
_OPEN = "cannot open the ledger at"
_pause = time.sleep  # the back-off between retries (a test observes it)


def bound_store_waits(total_seconds: float) -> None:
    """Bound every later lock wait of this process's journals to about ``total_seconds``.

    The Claude Code hook calls it at start-up: a lock held by another process must turn
    into a :class:`StoreBusyError` (and a fail-closed answer) well before the host's hook
    timeout, not after the default 50 s.
    """
    global _BUSY_MS
    _BUSY_MS = max(50, int(total_seconds * 1000 / _RETRIES))


_KEEP_WAL: list[sqlite3.Connection] | None = None  # see keep_wal_at_exit
_HOOK_WAL_PAGES = 128  # wal_autocheckpoint where the WAL outlives the process


def keep_wal_at_exit() -> None:
    """This process ends with ``os._exit`` right after its answer (the command hook): from
    now on :meth:`Journal.close` leaves each connection to the exit instead of closing it.

    SQLite's close of the last connection checkpoints the WAL into the database and deletes
    the ``-wal`` and ``-shm`` files, which the next hook process re-creates: 4 ``fdatasync``
    calls (WAL, its directory, WAL and database again) and 2 unlinks in every hook process,
    a Read's PreToolUse included, whose own commit needs none. Left open, the WAL and its
    index stay for the next process; the kernel drops the locks at exit, as after any
    crash, which WAL mode is built to survive (everything is committed by then).

    The next process to open the home rebuilds the WAL index from the WAL (~2 instructions a
    byte, measured: ~10 M for SQLite's default of 1,000 pages), so such processes checkpoint
    at :data:`_HOOK_WAL_PAGES` pages (every ~20 hook calls, in the commit that crosses it).
    """
    global _KEEP_WAL
    if _KEEP_WAL is None:
        _KEEP_WAL = []


_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY, parent TEXT, fork_seq INTEGER, created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL,
    ts TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL, mac TEXT NOT NULL,
    key_id TEXT NOT NULL, PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS heads (
    session TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evidence (
    ref TEXT PRIMARY KEY, session TEXT NOT NULL, seq INTEGER NOT NULL,
    record TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    session TEXT PRIMARY KEY, seq INTEGER NOT NULL, state TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_by_seq ON evidence(session, seq);
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL
);
"""
    + manifest.SCHEMA
)


def _deadline() -> float:
    return time.monotonic() + _RETRIES * _BUSY_MS / 1000


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class Journal(BaseJournal):
    """The SQLite journal of one ledger home. Cheap to open; one per process is enough."""

    kind = "sqlite"
    _db: sqlite3.Connection

    def __init__(self, path: StrPath, key: Key) -> None:
        self._init_state(path, key)
        self._relax_next = False  # the next transaction commits without an fsync
        self._sync_after = False  # ... unless it turns out to need one
        self.last_commit_synced = True  # whether the last commit waited for the disk
        self._gate: WriteGate | None = None  # set by group_commits()
        self._deferring = 0  # inside sync_once() (nested uses count)
        self._owed = 0  # the gate's ticket of the last durable commit not synced yet
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._queue = WriterQueue(os.fspath(path))
        try:
            self._db = sqlite3.connect(
                path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False
            )
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the ledger at {path}: {exc}") from exc
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        """Every statement of the open path runs inside the same bounded retry as writes."""
        deadline = _deadline()
        self._retry(lambda: self._db.execute(f"PRAGMA busy_timeout={_BUSY_MS}"), deadline, _OPEN)
        mode = self._retry(
            lambda: self._db.execute("PRAGMA journal_mode").fetchone(), deadline, _OPEN
        )
        if str(mode[0]).lower() != "wal":
            # Switching a new file to WAL needs an exclusive lock that busy_timeout does not
            # always wait for (two openers both holding SHARED): retried here, not raised.
            got = self._retry(
                lambda: self._db.execute("PRAGMA journal_mode=WAL").fetchone(), deadline, _OPEN
            )
            if str(got[0]).lower() != "wal":
                raise StoreError(
                    f"cannot open the ledger at {self.path}: it cannot use WAL mode "
                    f"(got {got[0]!r}); put the home on a local filesystem"
                )
        self._retry(lambda: self._db.execute("PRAGMA synchronous=FULL"), deadline, _OPEN)
        if _KEEP_WAL is not None:  # the next process re-reads the WAL: keep it short
            self._retry(
                lambda: self._db.execute(f"PRAGMA wal_autocheckpoint={_HOOK_WAL_PAGES}"),
                deadline,
                _OPEN,
            )
        version = self._retry(
            lambda: int(self._db.execute("PRAGMA user_version").fetchone()[0]), deadline, _OPEN
        )
        migrated = False
        if version != SCHEMA_VERSION:
            try:
                migrated = self._migrate(version)
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{_OPEN} {self.path}: {exc}") from exc
        # The marker is written by whoever created (or upgraded) the ledger, or on the first
        # open of a ledger with no events yet; one deleted later is reported by verification.
        if not os.path.exists(manifest.marker_path(self.path)) and (
            migrated or self._one("SELECT 1 FROM events LIMIT 1") is None
        ):
            self._write_marker()

    def _retry(
        self,
        op: Callable[[], _T],
        deadline: float | None = None,
        what: str = "the ledger failed at",
    ) -> _T:
        """Run ``op``; a busy/locked error is retried (with backoff) until the bound, then
        :class:`StoreBusyError`. Any other database error is a :class:`StoreError`."""
        deadline = _deadline() if deadline is None else deadline
        pause = 0.001
        while True:
            try:
                return op()
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise StoreError(f"{what} {self.path}: {exc}") from exc
                if time.monotonic() >= deadline:
                    raise self._busy_error(exc) from exc
                _pause(pause * (0.5 + os.urandom(1)[0] / 256))  # jitter
                pause = min(pause * 2, 0.05)
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{what} {self.path}: {exc}") from exc

    def _busy_error(self, exc: BaseException) -> StoreBusyError:
        return StoreBusyError(
            f"the ledger at {self.path} stayed locked by other writers past the "
            f"retry bound ({_RETRIES} x {_BUSY_MS / 1000:g}s: {exc}); retry, or stop "
            "the process holding it"
        )

    # -- schema ---------------------------------------------------------------
    def _migrate(self, version: int) -> bool:
        """Create or upgrade the schema (once, by whoever takes the lock first)."""
        migrated = False
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema {version}, newer than this infomark ({SCHEMA_VERSION}); "
                "upgrade infomark"
            )
        self._begin()
        try:
            if self._db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self._db.execute(stmt)
                self._db.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('created', ?)", (_now(),)
                )
                manifest.init_manifest(self._db, self.key)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                migrated = True
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return migrated

    def close(self) -> None:
        self._queue.close()
        if self._gate is not None:
            self._gate.detach()
            self._gate = None
        if _KEEP_WAL is not None and not self._db.in_transaction:
            _KEEP_WAL.append(self._db)  # a reference: garbage collection would close it
            return
        self._db.close()

    # -- transactions ----------------------------------------------------------
    def _begin(self) -> None:
        """``BEGIN IMMEDIATE`` with a bounded retry on top of ``busy_timeout``."""
        self._retry(lambda: self._db.execute("BEGIN IMMEDIATE"), what="ledger write failed at")

    def reader(self) -> sqlite3.Connection:
        """A second connection: WAL readers never wait for the writer."""
        return sqlite3.connect(self.path, timeout=10, check_same_thread=False)

    def reopen(self) -> Journal:
        return Journal(self.path, self.key)

    @contextmanager
    def write(self, session: str | None = None) -> Iterator[Conn]:
        """A serialised write transaction (``BEGIN IMMEDIATE``); commits or rolls back whole."""
        if self._in_tx or self._reading:
            raise StoreError("nested write transaction")
        relaxed, self._relax_next, self._sync_after = self._relax_next, False, False
        if self._gate is not None:
            with self._gated(self._gate, relaxed) as conn:
                yield conn
            return
        if relaxed:  # set outside a transaction: SQLite refuses to change it inside one
            self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._transaction() as conn:
                yield conn
        finally:
            if relaxed:
                self._db.execute("PRAGMA synchronous=FULL")
        self.last_commit_synced = not relaxed
        if relaxed and self._sync_after:
            self._sync_wal()

    @contextmanager
    def _gated(self, gate: WriteGate, relaxed: bool) -> Iterator[Conn]:
        """:meth:`write` through the process's gate (:meth:`group_commits`): the writers of
        this process queue on its lock, not in SQLite's busy handler (the wait bounded as
        SQLite's is: a writer of this thread already holding it gets an error, not a hang),
        and a durable commit returns after the shared fsync, taken after the lock."""
        if not gate.lock.acquire(timeout=_RETRIES * _BUSY_MS / 1000):
            raise self._busy_error(TimeoutError("the process's write lock"))
        began, version = False, None  # the gate looked, with SQLite's lock held (and saw this)
        try:
            changes = self._db.total_changes
            with self._transaction() as conn:
                version, began = gate.begun(self._db), True
                yield conn
            ticket = gate.committed() if self._db.total_changes != changes else 0
        finally:
            try:
                if began:
                    gate.ended(self._db, version)
            finally:
                gate.lock.release()
        if relaxed and not self._sync_after:
            self.last_commit_synced = ticket == 0  # nothing written: nothing to lose
            return
        if ticket and self._deferring:  # sync_once(): synced when the scope ends
            self._owed = ticket
            self.last_commit_synced = False
            return
        if ticket:
            gate.sync(ticket)  # concurrent commits share one fsync
        self.last_commit_synced = True

    @contextmanager
    def sync_once(
        self,
        *,
        before_wait: Callable[[], None] | None = None,
        settle: Callable[[Callable[[], None]], None] | None = None,
    ) -> Iterator[None]:
        """The durable commits inside wait for the disk together, once, when the scope ends
        (re-entrant; the outermost exit syncs, on an error too): the HTTP service's pooled
        sessions answer a request only after that, so what a request acknowledged is on the
        disk, for one fsync however many transactions it committed. Each commit is visible
        to other connections at once, as any commit under group commit is a little before it
        is durable; a crash before the fsync can lose only a suffix of them (the WAL is
        replayed up to its last intact commit), never an earlier one and keep a later.
        Without group commit (:meth:`group_commits`) every commit syncs as usual.
        ``before_wait``: called just before that fsync when the disk has lately been slow
        (:meth:`~infomark.ledger.store.group_commit.WriteGate.slow`): the service's lane
        lets the next call run meanwhile. ``settle``: on a disk lately slow, the scope does
        not wait; it hands ``settle`` the function that waits for the disk, and the caller
        must run it before it acknowledges anything (the service runs it in a worker thread
        while its event loop goes on)."""
        if self._gate is None:
            yield
            return
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if not self._deferring and self._owed:
                owed, self._owed = self._owed, 0
                gate = self._gate
                if not gate.slow():  # a fast disk: waiting costs less than handing over
                    self._settle(gate, owed)
                elif settle is not None:
                    settle(lambda: self._settle(gate, owed))
                else:
                    try:
                        if before_wait is not None:
                            before_wait()
                    finally:  # whatever before_wait did, the commits reach the disk
                        self._settle(gate, owed)

    def _settle(self, gate: WriteGate, ticket: int) -> None:
        gate.sync(ticket)
        self.last_commit_synced = True

    @contextmanager
    def _transaction(self) -> Iterator[Conn]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (the manifest flushed first), or ``ROLLBACK``,
        holding the cross-process writer queue (:mod:`.writer_queue`) throughout."""
        try:
            self._queue.acquire(_deadline())
        except TimeoutError as exc:
            raise self._busy_error(exc) from exc
        try:
            self._begin()
            self._in_tx = True
            self._touched = {}
            yield self._db
            if self._touched:
                manifest.flush(self._db, self.key, self._touched)
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"ledger write failed: {exc}") from exc
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        finally:
            self._in_tx = False
            self._queue.release()

    def relax_next(self) -> None:
        """Commit the next transaction without an fsync (``synchronous=NORMAL`` for it).

        WAL mode keeps the journal consistent either way; such a commit survives a crash
        of any process, and only an OS crash or a power loss before the next durable
        commit (whose fsync carries every earlier frame of the WAL) can drop it.
        """
        if not self._in_tx:
            self._relax_next = True

    def defer_checkpoints(self) -> bool:
        """No automatic checkpoint in this connection's commits (``wal_autocheckpoint=0``):
        the HTTP service's :class:`~infomark.tools.checkpointer.Checkpointer` runs them off
        the request path."""
        self._retry(lambda: self._db.execute("PRAGMA wal_autocheckpoint=0"))
        return True

    def group_commits(self) -> bool:
        """Share this process's write lock and WAL fsyncs with its other journals of the same
        file (:mod:`~infomark.ledger.store.group_commit`): the HTTP service's pooled
        sessions. Commits then run at ``synchronous=NORMAL`` and a durable one returns after
        the shared fsync."""
        from infomark.ledger.store.group_commit import gate_for

        self._retry(lambda: self._db.execute("PRAGMA synchronous=NORMAL"))
        if self._gate is None:
            self._gate = gate_for(os.fspath(self.path))
            self._gate.attach()
        return True

    def writer_busy(self) -> bool:
        """Whether another process holds the ledger's writer queue now
        (:meth:`~infomark.ledger.store.writer_queue.WriterQueue.held_elsewhere`)."""
        return self._queue.held_elsewhere()

    def foreign_commits(self) -> int | None:
        """Under group commit, how many commits this process's gate has seen that none of
        its writers made (:meth:`~infomark.ledger.store.group_commit.WriteGate.foreign_commits`);
        None otherwise."""
        return None if self._gate is None else self._gate.foreign_commits()

    def require_sync(self) -> None:
        """The open transaction turned out to need the disk: fsync the WAL after it."""
        self._sync_after = True

    def _sync_wal(self) -> None:
        """What ``synchronous=FULL`` does after a commit: fsync the WAL (opened afresh, so
        a WAL that was deleted and re-created is the one synced)."""
        try:
            fd = os.open(f"{self.path}-wal", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:  # checkpointed and removed: the frames are in the file
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.last_commit_synced = True

    # -- small tool outputs (blobs.BlobStore's rows) -------------------------------------
    def insert_blobs(self, staged: dict[str, bytes]) -> None:
        """Inside a write transaction: store outputs by their hex SHA-256, so they commit
        with the events that point to them. A row already under that digest is kept when it
        holds the same bytes and overwritten when it does not: a row planted ahead of the
        output it names (by anyone who can write ``ledger.db``) never stands for it."""
        if not self._in_tx:
            raise StoreError("tool outputs are stored inside a write transaction")
        self._db.executemany(
            "INSERT INTO blobs(digest, size, data) VALUES (?, ?, ?) ON CONFLICT(digest) DO "
            "UPDATE SET size = excluded.size, data = excluded.data WHERE data != excluded.data",
            [(hexd, len(data), data) for hexd, data in staged.items()],
        )

    def blob(self, hexd: str) -> bytes | None:
        row = self._one("SELECT data FROM blobs WHERE digest = ?", (hexd,))
        return None if row is None else bytes(row[0])

    def has_blob(self, hexd: str) -> bool:
        return self._one("SELECT 1 FROM blobs WHERE digest = ?", (hexd,)) is not None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One deferred read transaction (WAL: the first read fixes what it sees, writers
        go on in parallel and never wait for it); re-entrant."""
        if self._reading or self._in_tx:
            yield
            return
        self._retry(lambda: self._db.execute("BEGIN"))
        self._reading = True
        try:
            self._one("SELECT 1 FROM meta LIMIT 1")  # fixes the snapshot now
            yield
        finally:
            self._reading = False
            if self._db.in_transaction:
                self._db.execute("COMMIT")  # a read transaction: nothing to write

    def verify_home(self) -> list[tuple[str | None, int | None, str, str]]:
        """Home-level problems (manifest, marker), read in one consistent snapshot."""
        with self.snapshot():
            return self._retry(lambda: manifest.verify_home(self._db, self.path, self.key))

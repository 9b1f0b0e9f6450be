"""Group commit for the SQLite journals of one process (the HTTP service's pooled sessions).

Several sessions of one ledger home, each on its own connection in its own thread, write to
one SQLite file. Left to SQLite, a writer that finds the write lock taken waits in its busy
handler, which sleeps 1, 2, 5, 10, 15, 20, 25… ms between tries whatever the holder does:
measured under three concurrent clients, a third of the service's time went to those
sleeps. And each commit held that lock through its own fsync, so three sessions' durable
commits waited for three fsyncs one after the other.

A :class:`WriteGate` (one per database file in a process, :func:`gate_for`) does both jobs
instead:

- :attr:`WriteGate.lock` is held from ``BEGIN IMMEDIATE`` to ``COMMIT``: the process's own
  writers queue on it and each is woken the moment the previous one commits, so SQLite's
  busy handler only ever waits for other processes.
- The commits under it do not fsync (``synchronous=NORMAL``). A durable commit calls
  :meth:`WriteGate.sync` after the lock is released and before it returns: one ``fsync`` of
  the WAL covers every commit written before it began, so commits that wait for the disk
  together share one fsync (a commit returns only once an fsync that began after its own
  ``COMMIT`` has finished). No commit returns before its frames are on the disk; a commit
  becomes visible to other connections a little before it is durable, as a commit that did
  not ask for durability always was.

:attr:`WriteGate.fsync_seconds` follows how long the WAL's fsyncs take (a moving average):
the HTTP service's lane lets the next call run while a call waits for a slow disk, and
keeps it where handing over would cost more than the wait (:meth:`WriteGate.slow`).

The WAL's directory is fsync'd too the first time each WAL file (by inode) is synced, as
SQLite does for a WAL it created.

**Which commits were not ours** (:meth:`WriteGate.foreign_commits`). A pooled session's tail
check compares every row it verified with what is stored whenever SQLite's ``data_version``
says another connection committed, since that connection may have rewritten them; under three
clients the other connection is nearly always a sibling session of this process, whose
writes only append (12 % of the service's instructions per request went to those
comparisons, ``bench.http_concurrent --icount``). The gate tells the two apart with a
connection of its own that never writes (the observer): its ``data_version`` moves with
every commit by anyone, and the gated writers, holding :attr:`WriteGate.lock`, account for
their own. A writer looks once it holds SQLite's write lock (nobody can commit then: a change
seen is someone else's, counted), and again after its ``COMMIT``: the observer absorbs that
commit, and the writer's own ``data_version``, which its own commit never moves, read after
the observer's, says whether anyone else committed in between (counted too). A commit from
another process, or from a connection of this one that does not go through the gate, is
therefore always counted, at the latest at the next look; when in doubt (a look that failed)
the count moves, which only costs a full comparison. A look does not wait for a writer's
transaction: between that writer's ``COMMIT`` and its second look it takes the commit for
a foreign one (a full comparison more), and anywhere else it sees what the writer would.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time

__all__ = ["SLOW_FSYNC", "WriteGate", "gate_for"]

SLOW_FSYNC = 0.001
"""Seconds: an fsync slower than this (on average) is worth letting another call run
through. Handing the service's lane over and back costs about 0.1-0.3 ms of CPU under
contention (``bench.http_concurrent``: 2.07 against 2.14-2.31 ms per request with a
0.13 ms fsync); on a disk whose fsync takes milliseconds, the overlap wins."""

_GATES: dict[str, WriteGate] = {}
_GATES_LOCK = threading.Lock()


class WriteGate:
    """The in-process write lock and the shared WAL fsync of one database file."""

    def __init__(self, db: str) -> None:
        self.wal = db + "-wal"
        self.lock = threading.Lock()  # BEGIN IMMEDIATE … COMMIT, within this process
        self._sync_lock = threading.Lock()
        self._written = 0  # durable commits whose frames are written (tickets handed out)
        self._synced = 0  # every ticket up to this one is on the disk
        self._wal_inode: tuple[int, int] | None = None  # the WAL whose directory is synced
        self.fsyncs = 0  # WAL fsyncs done (tests pin the sharing)
        self.fsync_seconds = 0.0  # moving average of their durations
        self._db = db
        self._observer: sqlite3.Connection | None = None  # never writes; opened on first look
        self._seen: int | None = None  # its data_version, every commit up to it accounted for
        self._foreign = 0  # commits seen that no gated writer of this process made
        self._users = 0  # journals writing through the gate (the last closes the observer)
        self._look_lock = threading.Lock()  # the observer and the counts (never held long)

    # -- which commits were not ours (the module's docstring) -------------------------------
    def foreign_commits(self) -> int:
        """How many times a commit not made under this gate was seen, looking now: equal
        counts at two moments mean every commit between them was a gated writer's. Does
        not wait for a writer's transaction: a look inside one sees its commit at worst as
        foreign (the module's docstring), which costs one full comparison."""
        with self._look_lock:
            self._look()
            return self._foreign

    def begun(self, conn: sqlite3.Connection) -> int | None:
        """Look, holding :attr:`lock` and SQLite's write lock (``BEGIN IMMEDIATE`` done on
        ``conn``); ``conn``'s ``data_version`` for :meth:`ended`."""
        with self._look_lock:
            self._look()
            return _data_version(conn)

    def ended(self, conn: sqlite3.Connection, version: int | None) -> None:
        """After ``conn``'s ``COMMIT`` (or ``ROLLBACK``), still holding :attr:`lock`: the
        observer takes that commit as ours unless ``conn`` saw another one since."""
        with self._look_lock:
            seen = self._observed()
            if version is None or seen is None or _data_version(conn) != version:
                self._foreign += 1
            self._seen = seen

    def _look(self) -> None:
        seen = self._observed()
        if seen is None or seen != self._seen:  # the first look counts too: harmless
            self._foreign += 1
            self._seen = seen

    def _observed(self) -> int | None:
        try:
            if self._observer is None:
                self._observer = sqlite3.connect(
                    self._db, isolation_level=None, check_same_thread=False, timeout=1.0
                )
            return _data_version(self._observer)
        except sqlite3.Error:
            return None

    def attach(self) -> None:
        """A journal of this process now writes through the gate."""
        with self._look_lock:
            self._users += 1

    def detach(self) -> None:
        """One fewer; the last closes the observer (a later look opens it again)."""
        with self._look_lock:
            self._users -= 1
            if self._users <= 0 and self._observer is not None:
                self._observer.close()
                self._observer, self._seen = None, None

    def slow(self) -> bool:
        """Whether the WAL's fsyncs have lately taken longer than :data:`SLOW_FSYNC`."""
        return self.fsync_seconds > SLOW_FSYNC

    def committed(self) -> int:
        """A ticket for the commit that just returned (call it holding :attr:`lock`)."""
        self._written += 1
        return self._written

    def sync(self, ticket: int) -> None:
        """Return once the commit of ``ticket`` is on the disk: at once when an fsync that
        began after it has finished, else after one more fsync, which covers every commit
        written before it began (the ones waiting here with it included)."""
        with self._sync_lock:
            if self._synced >= ticket:
                return
            covered = self._written  # each of these commits returned before the fsync begins
            self._fsync_wal()
            self._synced = covered

    def _fsync_wal(self) -> None:
        try:
            fd = os.open(self.wal, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:  # checkpointed and removed: the frames are in the database
            return
        began = time.perf_counter()
        try:
            os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        self.fsync_seconds += (time.perf_counter() - began - self.fsync_seconds) * 0.25
        self.fsyncs += 1
        inode = (st.st_dev, st.st_ino)
        if inode != self._wal_inode:  # a new WAL file: its name must survive a crash too
            _fsync_dir(os.path.dirname(self.wal) or ".")
            self._wal_inode = inode


def _data_version(conn: sqlite3.Connection) -> int | None:
    try:
        return int(conn.execute("PRAGMA data_version").fetchone()[0])
    except sqlite3.Error:
        return None


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def gate_for(db: str) -> WriteGate:
    """The process's gate for the database file ``db`` (one per real path)."""
    key = os.path.realpath(db)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = WriteGate(key)
        return gate

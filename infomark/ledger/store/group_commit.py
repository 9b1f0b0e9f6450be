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
"""

from __future__ import annotations

import os
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

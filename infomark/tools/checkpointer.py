"""The HTTP service's background WAL checkpointer (SQLite stores only).

SQLite checkpoints its WAL inside the commit that grows it past ``wal_autocheckpoint``
pages: that commit copies the WAL into the database and fsyncs it before it returns, so
about one request in ninety paid for everyone's writes (the service's p99). In the service
every pooled session's connection has automatic checkpoints off
(:meth:`~infomark.ledger.store.journal.Journal.defer_checkpoints`) and this thread runs them
instead, on its own connection: ``PRAGMA wal_checkpoint(PASSIVE)``, which neither waits for
nor blocks readers and writers, once :data:`EVERY` requests have been served since the
last one, and once more when the service stops. The hook processes of the same home keep
SQLite's default, so the WAL stays bounded even when no service runs.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path

__all__ = ["EVERY", "Checkpointer"]

EVERY = 32  # requests between checkpoints (a few hundred WAL pages at most)


class Checkpointer:
    """One thread, one connection; :meth:`poke` after each request, :meth:`stop` at the end."""

    def __init__(self, db: Path, every: int = EVERY) -> None:
        self.db = db
        self.every = max(1, every)
        self.runs = 0  # checkpoints attempted
        self._pokes = 0
        self._lock = threading.Lock()
        self._ran = threading.Condition(self._lock)  # notified after each run
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(
            target=self._loop, name="infomark-checkpointer", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def poke(self) -> None:
        """A request was served (it may have committed)."""
        with self._lock:
            self._pokes += 1
            due = self._pokes >= self.every
        if due:
            self._wake.set()

    def flush(self, timeout: float = 60.0) -> bool:
        """Ask for a checkpoint now and wait until one has run (False: not within
        ``timeout``, e.g. the thread was never started)."""
        with self._lock:
            target = self.runs + 1
        self._wake.set()
        return self.wait_runs(target, timeout)

    def wait_runs(self, n: int, timeout: float = 60.0) -> bool:
        """Wait until ``n`` checkpoints have run in all."""
        with self._ran:
            return self._ran.wait_for(lambda: self.runs >= n, timeout)

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                with self._lock:
                    self._pokes = 0
                if conn is None and self.db.exists():
                    conn = sqlite3.connect(self.db, timeout=5, check_same_thread=False)
                if conn is not None:
                    self._checkpoint(conn)
                if self._stopping:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:  # busy or broken: the next poke tries again
            sys.stderr.write(f"infomark: background checkpoint failed: {exc}\n")
        with self._ran:
            self.runs += 1
            self._ran.notify_all()

"""The writers of one SQLite ledger, across processes, queue on a lock file, not in SQLite.

Two processes that write one home at once (Claude Code runs the hooks of parallel tool calls
together; the CLI beside a running service) met on SQLite's write lock, where the loser
waits in SQLite's busy handler: it sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms
between tries, whatever the holder does: a lucky writer goes at once, an unlucky one sleeps
through many commits. Measured with ``python -m bench.parallel_writers`` (N processes, each
authorizing durable Bash calls on its own session of one home), three alternations against
the same code without the queue, on a quiet machine: two processes, p99 13.6–24.3 ms and
worst 17–49 ms with it against 4.6–55 ms and 55–107 ms without; four, p99 31–46 ms and worst
59–75 ms against 56–107 ms and 182–333 ms. The price is fairness's: with four writers the
median rises from 1.1 to 2.0 ms and the p90 from 1.5–3.3 to 10–12 ms, each waiting its turn
behind the others' fsyncs instead of a few waiting for all of them. Parallel hooks are waited
for together (Claude Code runs a batch's hooks at once and goes on when the last answers),
so the worst is what an agent sees.

A writer first takes a POSIX record lock (``lockf``) on ``<db>-writer`` (created 0600 beside
the database), then ``BEGIN IMMEDIATE``, and lets the lock go after ``COMMIT`` or
``ROLLBACK``. A waiting writer polls the lock every 0.2 ms, doubling to 2 ms at most, so it
starts within 2 ms of the holder's release; the wait stays bounded (the caller's deadline,
then :class:`TimeoutError`), where a blocking lock could hang behind a stuck process
forever. The lock dies with its process, so a crashed writer never leaves it held. Writers
that do not take it (an older infomark, the ``sqlite3`` shell) still meet the others on
SQLite's own lock, as before.

``lockf`` is the ``os`` module's (``flock`` would import ``fcntl``, a shared library: +0.7 M
instructions and ~0.2 ms on every hook process). Its locks belong to the process, not to
one open file, so a process keeps one descriptor per lock file while any of its queues of
that file is open (closing any descriptor of the file would drop the process's lock), and
closes it with the last of them; writers of one process do not exclude each other here:
the HTTP service's go through its in-process gate first (:mod:`.group_commit`). Where
``os.lockf`` does not exist, there is no queue. (Before, the descriptor stayed open for the
process: a process that opened many homes, the test suite's thousands, ran out of the
descriptors ``select`` can watch.)
"""

from __future__ import annotations

import _thread
import os
import time

__all__ = ["WriterQueue"]

_FIRST = 0.0002  # seconds between the first tries
_MOST = 0.002  # ... doubling up to this
_FDS: dict[str, int] = {}  # lock file -> this process's one descriptor of it
_OPEN: dict[str, int] = {}  # lock file -> how many of this process's queues are open on it
_HELD: dict[str, int] = {}  # lock file -> how many of them hold the lock now
_COUNTS = _thread.allocate_lock()  # the three tables, across threads (the service's)


def _fd(path: str) -> int:
    """This process's descriptor of the lock file ``path`` (opened on first use); called
    with ``_COUNTS`` held."""
    fd = _FDS.get(path)
    if fd is None:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = _FDS[path] = os.open(path, flags, 0o600)
    return fd


class WriterQueue:
    """The cross-process write lock of one database file."""

    def __init__(self, db: str) -> None:
        self.path = db + "-writer"
        self._held = False
        self._open = True
        self.waits = 0  # tries that found the lock taken (tests read it)
        with _COUNTS:
            _OPEN[self.path] = _OPEN.get(self.path, 0) + 1

    def acquire(self, deadline: float) -> None:
        """Take the lock, trying until ``deadline`` (``time.monotonic()``), then raise
        :class:`TimeoutError`."""
        if not hasattr(os, "lockf"):
            return
        pause = _FIRST
        while True:
            try:
                with _COUNTS:  # no close of the descriptor between the lock and its count
                    os.lockf(_fd(self.path), os.F_TLOCK, 0)
                    _HELD[self.path] = _HELD.get(self.path, 0) + 1
                self._held = True
                return
            except (BlockingIOError, PermissionError):  # EAGAIN, EACCES: another process's
                self.waits += 1
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{self.path} stayed locked by another writer")
            time.sleep(pause)
            pause = min(pause * 2, _MOST)

    def held_elsewhere(self) -> bool:
        """Whether another process holds the lock now (``F_TEST``: one ``fcntl``, no wait):
        the HTTP service keeps a call off its event loop then, where the wait would hold up
        every session. A moment's answer: the lock may be taken just after."""
        if not hasattr(os, "lockf"):
            return False
        try:
            with _COUNTS:
                os.lockf(_fd(self.path), os.F_TEST, 0)
        except OSError:  # EAGAIN, EACCES: another process's; anything else: cannot tell, so
            return True  # busy, which only costs a thread
        return False

    def release(self) -> None:
        if self._held:
            self._held = False
            with _COUNTS:
                _HELD[self.path] -= 1
                os.lockf(_fd(self.path), os.F_ULOCK, 0)

    def close(self) -> None:
        """Let the lock go; the last open queue of this file in the process closes the
        descriptor, unless another of its queues holds the lock (closing would drop it)."""
        self.release()
        if not self._open:
            return
        self._open = False
        with _COUNTS:
            _OPEN[self.path] -= 1
            if _OPEN[self.path] or _HELD.get(self.path, 0):
                return
            del _OPEN[self.path]
            _HELD.pop(self.path, None)
            fd = _FDS.pop(self.path, None)
            if fd is not None:
                os.close(fd)

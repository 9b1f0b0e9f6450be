"""The HTTP service's lane: pooled calls run in worker threads one at a time, unless one
overstays.

A hook call is about 2 ms of Python that holds the GIL. Run in a thread each, as anyio's
threadpool runs them, three sessions' calls contend for the one GIL: measured with three
clients posting back to back (``python -m bench.http_concurrent --strace``), the server made
358 ``futex`` calls per request and spent 2.6 ms of CPU on each, against 1.8 ms for the same
requests from one client, and the p99 round trip was 16 ms. Queued so that one runs at a
time, the same calls took 34 ``futex`` calls and 2.0 ms each, and the p99 fell to about
10 ms: they ran no slower, since the GIL let only one of them run at a time anyway.

But a call may be long: the finish runs the project's checks (minutes), a session's first
call takes its baseline, a 100 MB result is hashed and stored. Queued behind one of those,
every other session would wait. So a call holds the lane for at most :data:`LEASE`
seconds: past that, the next waiting call takes the lane and the long one runs on beside
it in its own thread (the GIL shares the CPU between them as before). When it ends, it
does not free the lane it no longer holds.

A call that is only waiting for a slow disk (its commits' fsync, which releases the GIL)
steps aside (:meth:`Lane.run` hands it the function; the journal calls it when the WAL's
fsyncs have lately been slow, :meth:`~infomark.ledger.store.group_commit.WriteGate.slow`):
the next call runs while it waits, so on a slow disk the sessions' fsyncs still overlap and
share (group commit). On a fast one the call keeps the lane through its fsync: handing it
over would cost more than the wait.

Only SQLite homes use a lane (:class:`~infomark.tools.service_pool.SessionPool`): a
PostgreSQL commit waits for the server's disk inside the call, and sessions' commits must
reach the server together for it to group them, so there every call runs at once, as
before (``Lane(lease=None)``).

Each session's own calls are already in arrival order (the pool's per-session queue); the
lane orders calls of different sessions, first come first served.

**A short call skips the thread.** Handing a call to a worker thread and back (a queue, a
wake-up, the answer posted back to the loop, and the GIL passed between the loop and the
worker whenever another client's bytes arrive meanwhile) was about a quarter of the
service's CPU under three clients. So when the lane is :meth:`Lane.idle` (no holder, and no
call of :meth:`Lane.run` still running in a thread, passed over or not: counted by the
thread itself, so a call whose waiter was cancelled counts until it ends), the pool runs a
call its caller says is short on the event loop's own thread
(:meth:`~infomark.tools.service_pool.SessionPool.run`); nothing else then runs Python in
this process, so it meets no other call on the write lock. Its fsync on a slow disk is
waited for in a worker thread (:meth:`Lane.off_loop`), without the lane.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import TypeVar

__all__ = ["LEASE", "Lane"]

T = TypeVar("T")

_THREADS = 40  # as many as anyio's threadpool: calls passed over, and stores without a lane

LEASE = 0.02
"""Seconds a call holds the lane before the next waiting call may run beside it: ten
ordinary hook calls, so ordinary calls never overstay, and a long call delays the others by
at most this much."""


def _stay() -> None:
    """``step_aside`` where there is no lane to leave."""


class Lane:
    """Run blocking calls in worker threads, one at a time; a call holding the lane longer
    than ``lease`` seconds gives it up to the next one.

    On asyncio's own primitives and executor (uvicorn's loop): anyio's thread dispatch,
    cancel scopes and events cost about 0.1 M instructions per hook request more."""

    def __init__(self, lease: float | None = LEASE) -> None:
        self.lease = lease  # None: no lane, every call runs at once
        # Only touched on the event loop's thread, between awaits: no lock needed.
        self._holder: object | None = None  # the token of the call that holds the lane
        self._since = 0.0  # when it took the lane (the loop's clock)
        self._freed: asyncio.Future[None] | None = None  # done when the holder leaves
        self._threads: ThreadPoolExecutor | None = None
        # calls of run() begun in a worker thread (on the loop) and ended there (counted by
        # the thread itself, so a call whose waiter was cancelled still counts until it ends)
        self._started = 0
        self._ended = 0
        self._ended_lock = threading.Lock()
        self.passed_over = 0  # calls that overstayed their lease (tests and benches read it)

    def idle(self) -> bool:
        """Whether no call holds the lane or runs in a worker thread: a short call may then
        run on the event loop's own thread (:meth:`SessionPool.run`), where it meets no
        other call on the process's locks. False where there is no lane (``lease=None``)."""
        return self.lease is not None and self._holder is None and self._started == self._ended

    async def off_loop(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread, without the lane (a wait for the disk)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor(), fn)

    def _executor(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(_THREADS, thread_name_prefix="infomark-lane")
        return self._threads

    async def run(self, fn: Callable[[Callable[[], None]], T]) -> T:
        """``fn(step_aside)`` in a worker thread, once the lane is free or its holder
        overstayed. ``step_aside()``, called from that thread, gives up the lane for the rest
        of the call (it returns at once; the next call starts when the event loop gets to
        it)."""
        loop = asyncio.get_running_loop()
        threads = self._executor()
        if self.lease is None:
            return await loop.run_in_executor(threads, fn, _stay)
        while self._holder is not None:
            left = self._since + self.lease - loop.time()
            if left <= 0:
                self._pass_over()
                break
            if self._freed is None:
                self._freed = loop.create_future()
            await asyncio.wait((self._freed,), timeout=left)
        token = object()
        self._holder, self._since = token, loop.time()

        def step_aside() -> None:
            with suppress(RuntimeError):  # the loop closed (shutdown): no one waits for it
                loop.call_soon_threadsafe(self._step_aside, token)

        self._started += 1
        try:
            return await loop.run_in_executor(threads, self._counted, fn, step_aside)
        finally:
            if self._holder is token:  # not passed over: the lane is still this call's
                self._release()

    def _counted(self, fn: Callable[[Callable[[], None]], T], step_aside: Callable[[], None]) -> T:
        try:
            return fn(step_aside)
        finally:
            with self._ended_lock:
                self._ended += 1

    def close(self) -> None:
        """Let the worker threads end (a call still running finishes first)."""
        threads, self._threads = self._threads, None  # a later call makes new ones
        if threads is not None:
            threads.shutdown(wait=False)

    def _step_aside(self, token: object) -> None:
        if self._holder is token:
            self._release()

    def _pass_over(self) -> None:
        """The holder overstayed: it runs on without the lane."""
        self.passed_over += 1
        self._release()

    def _release(self) -> None:
        self._holder = None
        freed, self._freed = self._freed, None
        if freed is not None and not freed.done():
            freed.set_result(None)

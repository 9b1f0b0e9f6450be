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
service's CPU under three clients. So a call whose turn has come may run on the event
loop's own thread instead (the pool decides which:
:meth:`~infomark.tools.service_pool.SessionPool.run`) when no call runs in a worker thread
any more (:meth:`Lane.threads_idle`: passed over or not, counted by the thread itself, so a
call whose waiter was cancelled counts until it ends): nothing else then runs Python in
this process, so it meets no other call on the write lock. Its fsync on a slow disk is
waited for in a worker thread (:meth:`Lane.off_loop`), without the lane.

**Turns are taken in arrival order, and one ends only after the loop has read its
sockets.** A call run on the loop holds it for its whole length, so requests that arrive
meanwhile are read only when it returns. Left at that, asyncio reads every waiting socket
in one go and then runs the calls it found back to back; a client that sends its next
request just after that read waits for the whole batch, and with three clients posting back
to back one of them was served every other time while the other two each waited for three
calls (the p99). So the lane is a first-come, first-served queue for every call, and a turn
is handed on at the loop's next iteration (``call_soon``), after the loop has polled its
sockets: a request that arrived during a call queues behind those that arrived before it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress
from typing import TypeVar

__all__ = ["LEASE", "Lane", "Turn"]

T = TypeVar("T")

_THREADS = 40  # as many as anyio's threadpool: calls passed over, and stores without a lane

LEASE = 0.02
"""Seconds a call holds the lane before the next waiting call may run beside it: ten
ordinary hook calls, so ordinary calls never overstay, and a long call delays the others by
at most this much."""


class Turn:
    """One call's hold on the lane (:meth:`Lane.turn`): the call runs on the loop's thread
    while it holds it, or in a worker thread (:meth:`in_thread`)."""

    def __init__(self, lane: Lane, token: object | None) -> None:
        self._lane = lane
        self._token = token  # None: no lane (every call runs at once)

    async def in_thread(self, fn: Callable[[Callable[[], None]], T]) -> T:
        """``fn(step_aside)`` in a worker thread. Past :data:`LEASE` seconds the next waiting
        call may take the lane and run beside it. ``step_aside()``, called from that thread,
        gives up the lane for the rest of the call (it returns at once)."""
        lane, token = self._lane, self._token
        loop = asyncio.get_running_loop()
        threads = lane._executor()
        if token is None or lane.lease is None:
            return await loop.run_in_executor(threads, fn, _stay)
        lane._lease_timer(loop, token, lane.lease)

        def step_aside() -> None:
            with suppress(RuntimeError):  # the loop closed (shutdown): no one waits for it
                loop.call_soon_threadsafe(lane._give, token)

        done = loop.run_in_executor(threads, lane._counted, fn, step_aside)
        lane._started += 1  # once submitted: a refused submission (shutdown) never ends
        return await done

    def leave(self) -> None:
        """Hand the lane on at the loop's next iteration, after it has read its sockets
        (idempotent; the turn's end does it)."""
        if self._token is not None:
            token, self._token = self._token, None
            with suppress(RuntimeError):  # the loop closed (shutdown)
                asyncio.get_running_loop().call_soon(self._lane._give, token)


def _stay() -> None:
    """``step_aside`` where there is no lane to leave."""


class Lane:
    """Turns for blocking calls, one at a time, first come first served; a call holding the
    lane in a worker thread longer than ``lease`` seconds gives it up to the next one.

    On asyncio's own primitives and executor (uvicorn's loop): anyio's thread dispatch,
    cancel scopes and events cost about 0.1 M instructions per hook request more."""

    def __init__(self, lease: float | None = LEASE) -> None:
        self.lease = lease  # None: no lane, every call runs at once
        # Only touched on the event loop's thread, between awaits: no lock needed.
        self._holder: object | None = None  # the token of the call that holds the lane
        self._waiters: deque[tuple[object, asyncio.Future[None]]] = deque()  # arrival order
        self._timer: asyncio.TimerHandle | None = None  # the holder's lease, in a thread
        self._overdue = False  # the holder overstayed with no one waiting: the next passes it
        self._threads: ThreadPoolExecutor | None = None
        # calls begun in a worker thread (on the loop) and ended there (counted by the
        # thread itself, so a call whose waiter was cancelled still counts until it ends)
        self._started = 0
        self._ended = 0
        self._ended_lock = threading.Lock()
        self.passed_over = 0  # calls that overstayed their lease (tests and benches read it)

    def threads_idle(self) -> bool:
        """Whether no call of this lane runs in a worker thread (passed over, stepped aside
        or not)."""
        return self._started == self._ended

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[Turn]:
        """Wait for the lane in arrival order; hold it until the block ends (or
        :meth:`Turn.leave`, or a thread's call overstays its lease)."""
        if self.lease is None:
            yield Turn(self, None)
            return
        turn = Turn(self, await self._take())
        try:
            yield turn
        finally:
            turn.leave()

    async def run(self, fn: Callable[[Callable[[], None]], T]) -> T:
        """``fn(step_aside)`` in a worker thread, once the lane is this call's (or its holder
        overstayed): :meth:`Turn.in_thread`."""
        async with self.turn() as turn:
            return await turn.in_thread(fn)

    async def off_loop(self, fn: Callable[[], T]) -> T:
        """``fn()`` in a worker thread, without the lane (a wait for the disk)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor(), fn)

    def close(self) -> None:
        """Let the worker threads end (a call still running finishes first)."""
        threads, self._threads = self._threads, None  # a later call makes new ones
        if threads is not None:
            threads.shutdown(wait=False)

    # -- the queue ------------------------------------------------------------------------
    async def _take(self) -> object:
        token = object()
        if self._holder is not None and self._overdue:
            self._pass_over()
        if self._holder is None and not self._waiters:
            self._holder = token
            return token
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (token, waiter)
        self._waiters.append(entry)
        try:
            await waiter
        except BaseException:  # cancelled: handed the lane meanwhile, or still queued
            if self._holder is token:
                self._give(token)
            else:
                with suppress(ValueError):
                    self._waiters.remove(entry)
            raise
        return token

    def _give(self, token: object) -> None:
        """``token`` leaves the lane: the first call still waiting takes it."""
        if self._holder is not token:
            return  # passed over, or stepped aside, already
        self._holder, self._overdue = None, False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._waiters:
            nxt, waiter = self._waiters.popleft()
            if not waiter.done():  # not cancelled
                self._holder = nxt
                waiter.set_result(None)
                return

    def _lease_timer(self, loop: asyncio.AbstractEventLoop, token: object, lease: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(lease, self._lease_over, token)

    def _lease_over(self, token: object) -> None:
        self._timer = None
        if self._holder is not token:
            return
        if self._waiters:
            self._pass_over()
        else:
            self._overdue = True  # the next call to come passes it over

    def _pass_over(self) -> None:
        """The holder overstayed: it runs on without the lane."""
        self.passed_over += 1
        holder = self._holder
        if holder is not None:
            self._give(holder)

    def _executor(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(_THREADS, thread_name_prefix="infomark-lane")
        return self._threads

    def _counted(self, fn: Callable[[Callable[[], None]], T], step_aside: Callable[[], None]) -> T:
        try:
            return fn(step_aside)
        finally:
            with self._ended_lock:
                self._ended += 1

"""The HTTP service's session pool: one open gatekeeper per (project root, session id).

A gatekeeper is not safe for concurrent use, so each session's calls run one at a time:
an ``asyncio.Lock`` queues them in arrival order on the event loop, then the call runs in
the threadpool (or, if short, on the loop) under the slot's ``threading.Lock``. Calls of
different sessions take turns on the pool's :class:`~infomark.tools.service_lane.Lane`
(one at a time, since they would only contend for the GIL, unless one runs long: then the
next runs beside it); their commits queue on one in-process write lock and share their WAL
fsyncs (group commit,
:mod:`~infomark.ledger.store.group_commit`), and the durable commits of one call wait for
the disk together, once, before the call returns (``Journal.sync_once``: a transcript's
ingest and the decision after it, a record and the inbox's lease share one fsync). At most
``max_open`` stay open: past that, the least recently used idle ones are closed (and
reopened on their next call), so SQLite connections stay bounded.

A call its caller says is short (the hook route: a PreToolUse or PostToolUse of at most a
row-sized body, other than ``infomark check``; the API's classify, authorize and record of
such a body) runs on the event loop's own thread instead, when :meth:`SessionPool._on_loop`
allows: its session is open under the same configuration, no call runs in a thread, its
next action takes no baseline, no other process holds the ledger's writer queue, and no
call of its session overran the lease in the last :data:`THREADED_FOR` seconds. A short
call that overruns anyway (another process taking the write lock just after that look, a
huge project scanned) delays the other sessions once, by its own length, and its session's
calls then run in the threads. Either way a call waits for its turn on the lane, first come
first served (:mod:`~infomark.tools.service_lane`). Measured with three clients posting
back to back through the forwarding hook's own client (``python -m bench.http_concurrent
--forward --cpu``, docs/performance.md): the server's CPU a request fell by about a fifth,
and the p99 round trip with it.

The API routes serve the service's own project root and configuration. The Claude Code
hook route serves the project a payload names (``cwd``): :meth:`SessionPool.project_config`
loads that root's configuration once and keeps it until one of its files changes, and a
session opened under an older configuration is reopened under the new one (an equal
configuration is the same object: the hook route and the API routes share the session).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from infomark.gates.config import Config, load_config
from infomark.kernel.errors import ConfigError
from infomark.kernel.records import dataclass, field
from infomark.ledger.keys import load_key
from infomark.ledger.store.base import BaseJournal
from infomark.ledger.store.select import open_journal
from infomark.tools.checkpointer import Checkpointer
from infomark.tools.protocol import SessionLike
from infomark.tools.service_lane import LEASE, Lane, Turn

__all__ = ["THREADED_FOR", "Opener", "SessionPool"]

THREADED_FOR = 30.0
"""Seconds a session's calls run in the lane's threads after one of them, run on the event
loop, overran the lease: whatever made it long (a big project scanned, another process
holding the ledger's write lock) likely lasts a while, and in a thread a long call delays
the other sessions by at most the lease."""

T = TypeVar("T")
Opener = Callable[[str, Path, Config], SessionLike]
"""``opener(session, root, config)``: open one session of the pool's home."""

_CONFIG_FILES = ("infomark.toml", "infomark.yaml", "infomark.yml", "pyproject.toml")
_MAX_PROJECTS = 256


def _defer_checkpoints(gk: SessionLike) -> None:
    """The session's journal leaves checkpoints to the pool's checkpointer, and queues its
    commits with the other sessions' on the process's write lock, sharing their fsyncs
    (:mod:`~infomark.ledger.store.group_commit`)."""
    journal = gk.store.journal
    journal.defer_checkpoints()
    journal.group_commits()


@dataclass
class _Slot:
    queue: asyncio.Lock = field(default_factory=asyncio.Lock)  # arrival order, on the loop
    lock: threading.Lock = field(default_factory=threading.Lock)  # the session itself
    gk: SessionLike | None = None
    config: Config | None = None  # what gk was opened with
    used: int = 0  # a logical clock, for closing the least recently used
    threaded_until: float = 0.0  # by the pool's clock: its calls run in the threads until


@dataclass(frozen=True, slots=True)
class _ProjectConfig:
    fingerprint: tuple[Any, ...] | None  # None: too fresh to trust, read again next time
    config: Config
    error: ConfigError | None


class SessionPool:
    """Lazily opened sessions, each used by one thread at a time."""

    def __init__(
        self,
        home: Path,
        root: Path,
        config: Config,
        opener: Opener,
        max_open: int,
        *,
        store: str = "sqlite",
    ) -> None:
        self.home = home
        self.store = store  # "sqlite" or the postgresql:// URL every session uses
        self.root = root
        self.config = config
        self.max_open = max(1, max_open)
        self._open = opener
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._clock = 0
        self._journal: BaseJournal | None = None
        self._journal_lock = threading.Lock()
        self._projects: dict[Path, _ProjectConfig] = {}
        self._projects_lock = threading.Lock()
        self.checkpointer: Checkpointer | None = None  # set by the service (SQLite)
        self.lane = Lane(lease=LEASE if store == "sqlite" else None)
        self.clock: Callable[[], float] = time.monotonic  # how long a call on the loop took
        self.ran_on_loop = 0  # calls run on the event loop's thread (tests and benches read them)
        self.sent_back = 0  # ... that overran the lease, sending their session to the threads

    def _slot(self, key: tuple[str, str]) -> _Slot:
        # Only called on the event loop thread: the dict needs no lock.
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot()
        self._clock += 1
        slot.used = self._clock
        return slot

    async def run(
        self,
        session: str,
        fn: Callable[[SessionLike], T],
        *,
        root: Path | None = None,
        config: Config | None = None,
        short: bool = False,
        prepare: Callable[[SessionLike], Awaitable[bool]] | None = None,
    ) -> T:
        """Run ``fn(session)`` in its turn on the lane (in the threadpool, or on the loop),
        one call per session at a time.

        ``root`` / ``config`` default to the service's own; a session already open under
        another configuration is closed and reopened under this one. ``short``: the caller
        expects a call of a few milliseconds (the module's docstring): it runs on the event
        loop's thread when :meth:`_on_loop` allows. ``prepare``: awaited on the loop, when the
        session is open, after its earlier calls and before this call's turn, so that what it
        waits for holds no other session (a PreToolUse's transcript line,
        :mod:`~infomark.tools.service_transcript`); false: the call is not short after all.
        """
        root_p = root if root is not None else self.root
        cfg = config if config is not None else self.config
        slot = self._slot((str(root_p), session))
        try:
            async with slot.queue:
                if prepare is not None and slot.gk is not None:
                    short = await prepare(slot.gk) and short
                async with self.lane.turn() as turn:
                    gk = self._on_loop(slot, cfg) if short else None
                    if gk is not None:
                        return await self._call_on_loop(slot, gk, fn, turn)
                    call = partial(self._call, slot, session, root_p, cfg, fn)
                    return await turn.in_thread(call)
        finally:
            if sum(1 for s in self._slots.values() if s.gk is not None) > self.max_open:
                await self._close_idle()

    def _call(
        self,
        slot: _Slot,
        session: str,
        root: Path,
        config: Config,
        fn: Callable[[SessionLike], T],
        step_aside: Callable[[], None],
    ) -> T:
        with slot.lock:
            if slot.gk is not None and slot.config is not config:
                slot.gk.close()
                slot.gk = None
            if slot.gk is None:
                slot.gk = self._open(session, root, config)
                slot.config = config
                if self.checkpointer is not None:
                    _defer_checkpoints(slot.gk)
            try:
                # One fsync for the request's commits, waited for off the lane.
                with slot.gk.store.journal.sync_once(before_wait=step_aside):
                    return fn(slot.gk)
            finally:
                if self.checkpointer is not None:
                    self.checkpointer.poke()

    def _on_loop(self, slot: _Slot, config: Config) -> SessionLike | None:
        """The open session a short call of ``slot`` may run on the event loop's thread (its
        turn on the lane has come), if it may: there is a lane (not PostgreSQL), its session
        is open under ``config`` (opening one replays its journal), no call runs in a worker
        thread (so the process's write lock is free), its next action takes no baseline (a
        copy of the project), no other process holds the ledger's writer queue now (the
        call's commits would wait for it on the loop), and none of its calls overran the
        lease lately."""
        gk = slot.gk
        if (
            gk is None
            or self.lane.lease is None  # no lane (PostgreSQL: a commit waits for the server)
            or slot.config is not config
            or not self.lane.threads_idle()
            or self.clock() < slot.threaded_until
            or gk.baseline_pending
            or gk.store.journal.writer_busy()  # its commits would wait on the loop
        ):
            return None
        return gk

    async def _call_on_loop(
        self, slot: _Slot, gk: SessionLike, fn: Callable[[SessionLike], T], turn: Turn
    ) -> T:
        """``fn`` on this thread. Its commits' fsync is waited for here on a fast disk (less
        than handing over would cost), in a worker thread on a disk lately slow, while the
        loop serves the other sessions; the answer goes out only after it either way. A call
        that overran the lease sends the session's calls back to the threads for
        :data:`THREADED_FOR` seconds."""
        self.ran_on_loop += 1
        owed: list[Callable[[], None]] = []
        began = self.clock()
        try:
            with slot.lock, gk.store.journal.sync_once(settle=owed.append):
                return fn(gk)
        finally:
            turn.leave()  # the next call's turn, once the loop has read its sockets
            lease, now = self.lane.lease, self.clock()
            if lease is not None and now - began > lease:
                slot.threaded_until = now + THREADED_FOR
                self.sent_back += 1
            try:
                for wait in owed:
                    await self.lane.off_loop(wait)
            finally:
                if self.checkpointer is not None:
                    self.checkpointer.poke()

    async def _close_idle(self) -> None:
        open_slots = [s for s in self._slots.values() if s.gk is not None]
        idle = sorted((s for s in open_slots if not s.queue.locked()), key=lambda s: s.used)
        for slot in idle[: len(open_slots) - self.max_open]:
            async with slot.queue:
                await anyio.to_thread.run_sync(self._close_slot, slot)

    @staticmethod
    def _close_slot(slot: _Slot) -> None:
        with slot.lock:
            if slot.gk is not None:
                slot.gk.close()
                slot.gk = None

    # -- per-project configuration ------------------------------------------------------
    async def project_config(self, root: Path) -> tuple[Config, ConfigError | None]:
        """``root``'s configuration, cached until one of its files changes.

        A broken configuration comes back as the defaults plus the error, so the caller
        can judge with the defaults and deny mutations until it is fixed (as the command
        hook does). The check is a few ``stat`` calls on the event loop; only a changed
        or new configuration is read and validated, in a worker thread.
        """
        fingerprint = _fingerprint(root)
        known = self._projects.get(root)
        if known is not None and known.fingerprint == fingerprint:
            return known.config, known.error
        return await anyio.to_thread.run_sync(self._load_project, root, fingerprint)

    def _load_project(
        self, root: Path, fingerprint: tuple[Any, ...]
    ) -> tuple[Config, ConfigError | None]:
        with self._projects_lock:
            known = self._projects.get(root)
            if known is not None and known.fingerprint == fingerprint:
                return known.config, known.error
            trusted = None if _racy(fingerprint) else fingerprint
            try:
                entry = _ProjectConfig(trusted, self._same(load_config(root, self.home)), None)
            except ConfigError as exc:
                entry = _ProjectConfig(trusted, Config(), exc)
            if len(self._projects) >= _MAX_PROJECTS:  # many roots: forget, reload on use
                self._projects.clear()
            self._projects[root] = entry
            return entry.config, entry.error

    def _same(self, config: Config) -> Config:
        """``config``, or the equal one the pool already holds (the service's own, or the
        project's previous one): a session is reopened only when its configuration changed,
        not when the API routes and the hook route hold two equal copies, nor when a file
        was touched without changing what it says."""
        if config == self.config:
            return self.config
        for known in self._projects.values():
            if known.error is None and known.config == config:
                return known.config
        return config

    # -- listing and closing ------------------------------------------------------------
    async def summaries(self) -> list[dict[str, Any]]:
        opened = {s for (_, s), slot in self._slots.items() if slot.gk is not None}
        return await anyio.to_thread.run_sync(self._summaries, opened)

    def _summaries(self, opened: set[str]) -> list[dict[str, Any]]:
        prefix = self.config.session_prefix
        with self._journal_lock:
            if self._journal is None:
                self._journal = open_journal(self.home, load_key(self.home), self.store)
            journal = self._journal
            names = {s[len(prefix) :]: s for s in journal.sessions() if s.startswith(prefix)}
            counts = {name: journal.last_seq(full) for name, full in names.items()}
        return [
            {"session": name, "events": counts.get(name, 0), "open": name in opened}
            for name in sorted(set(names) | opened)
        ]

    def close(self) -> None:
        for slot in self._slots.values():
            self._close_slot(slot)
        with self._journal_lock:
            if self._journal is not None:
                self._journal.close()
                self._journal = None
        self.lane.close()


def _fingerprint(root: Path) -> tuple[Any, ...]:
    """What changes when a configuration source of ``root`` changes (stat, not read): the
    change time too, which no one can set back (``touch -d`` sets only the others)."""
    explicit = os.environ.get("INFOMARK_CONFIG")
    base = str(root)
    paths = [explicit] if explicit else [os.path.join(base, name) for name in _CONFIG_FILES]
    out: list[Any] = [explicit]
    for path in paths:  # plain strings: this runs on the event loop for every hook call
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            out.append(None)
            continue
        out.append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino))
    return tuple(out)


_RACY_NS = 2_000_000_000


def _racy(fingerprint: tuple[Any, ...]) -> bool:
    """Whether a file was changed so recently that another change within the same clock
    tick (file times are coarse) would leave its times as they are: not cached then."""
    now = time.time_ns()
    return any(
        isinstance(entry, tuple) and max(entry[0], entry[1]) > now - _RACY_NS
        for entry in fingerprint
    )

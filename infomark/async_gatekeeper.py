"""The asyncio facade: :class:`Gatekeeper`'s methods as coroutines that never block the loop.

Every journaling call (an ingest, a decision, a record, a finish) is an SQLite transaction
with a durable commit. :class:`AsyncGatekeeper` runs each one on its session's own worker
thread, so the event loop keeps running while the commit waits for the disk. One worker per
session keeps the calls in the order they were awaited, as the synchronous facade would run
them; the synchronous :class:`Gatekeeper` underneath is the same code, so the two cannot
disagree about a decision.

``tests/test_async_gatekeeper.py`` fails when the synchronous facade gains a public member
this class lacks, or when their signatures drift apart.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import Evidence
from infomark.ledger.state import SessionState
from infomark.ledger.store.journal import EventRow
from infomark.wrapping import GatedResult, gated_async_tool, wrap_async

if TYPE_CHECKING:
    from infomark.gates.policies.runtime import PolicyRuntime
    from infomark.ledger.stamps.source import Refetch

__all__ = ["AsyncGatekeeper"]

P = ParamSpec("P")
T = TypeVar("T")


def _worker() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="infomark-journal")


def _off_loop(
    method: Callable[Concatenate[Gatekeeper, P], T],
) -> Callable[Concatenate[AsyncGatekeeper, P], Coroutine[Any, Any, T]]:
    """The async facade's method of the same name and signature: the sync facade's, run on the
    session's worker. Written once: ``ingest = _off_loop(Gatekeeper.ingest)``; mypy and
    ``inspect.signature`` read ``Gatekeeper.ingest``'s parameters through it."""
    name = method.__name__

    @functools.wraps(method)
    async def forward(self: AsyncGatekeeper, /, *args: P.args, **kwargs: P.kwargs) -> T:
        sync: Callable[P, T] = getattr(self._gk, name)  # the instance's own (a subclass's)
        return await self._run(sync, *args, **kwargs)

    return forward


class _Read(property, Generic[T]):
    """An attribute of the sync facade underneath, read through as a property of the async
    one (``agk.session`` is ``agk.sync.session``); mypy reads its type ``T``."""

    def __init__(self, name: str, doc: str | None = None, *, settable: bool = False) -> None:
        def get(outer: AsyncGatekeeper) -> T:
            value: T = getattr(outer._gk, name)
            return value

        def put(outer: AsyncGatekeeper, value: T) -> None:
            setattr(outer._gk, name, value)

        super().__init__(get, put if settable else None, doc=doc)

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _Read[T]: ...
    @overload
    def __get__(self, instance: AsyncGatekeeper, owner: type | None = None) -> T: ...
    def __get__(self, instance: AsyncGatekeeper | None, owner: type | None = None) -> Any:
        return super().__get__(instance, owner)


class _Through(_Read[T]):
    """A settable attribute of the sync facade underneath, as a property of the async one
    (``agk.unattended = …`` sets ``agk.sync.unattended``)."""

    def __init__(self, name: str, doc: str) -> None:
        super().__init__(name, doc, settable=True)

    def __set__(self, instance: AsyncGatekeeper, value: T) -> None:
        super().__set__(instance, value)


class AsyncGatekeeper:
    """The gatekeeper of one agent session, for asyncio code.

    ``agk = await AsyncGatekeeper.open(home, session)``; then ``await agk.ingest(text)``,
    ``await agk.authorize(call)``, ``await agk.record(call, outcome)``,
    ``await agk.can_finish(text)`` … exactly as on :class:`Gatekeeper`. ``agk.wrap(executor)``
    gates a sync or async executor into an async one returning a
    :class:`~infomark.wrapping.GatedResult`. Use it as ``async with`` or ``await agk.close()``.

    A cancelled await does not cancel the journal write already running on the worker: the
    decision or record still commits, as it would have in the synchronous facade.
    """

    def __init__(self, gatekeeper: Gatekeeper, worker: ThreadPoolExecutor | None = None) -> None:
        self._gk = gatekeeper
        self._worker = worker or _worker()

    async def _run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        # The caller's context goes along (an OpenTelemetry span, a contextvar), as in the
        # synchronous facade, which runs in its caller's context.
        ctx = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._worker, functools.partial(ctx.run, fn, *args, **kwargs)
        )

    # -- opening and plumbing ---------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        home: Path | str | None = None,
        session: str = "default",
        *,
        root: Path | str | None = None,
        config: Config | None = None,
        profile: str | None = None,
        store: str | None = None,
    ) -> AsyncGatekeeper:
        """Open (creating if needed) the ledger home and one session in it, off the loop."""
        worker = _worker()
        loop = asyncio.get_running_loop()
        try:
            gk = await loop.run_in_executor(
                worker,
                functools.partial(
                    Gatekeeper.open,
                    home,
                    session,
                    root=root,
                    config=config,
                    profile=profile,
                    store=store,
                ),
            )
        except BaseException:
            worker.shutdown(wait=False)
            raise
        return cls(gk, worker)

    session: _Read[str] = _Read("session")
    home: _Read[Path] = _Read("home")

    # The sync facade's settable attributes, read and written through (typed properties).
    config: _Through[Config] = _Through("config", "The session's configuration.")
    unattended: _Through[str | None] = _Through(
        "unattended", 'Why nobody can answer an "ask" in this run (see Gatekeeper.authorize).'
    )
    attester: _Through[Callable[[str], str] | None] = _Through(
        "attester", "Runs a claim's oracle attested (see Gatekeeper.attester)."
    )
    check_attester: _Through[Callable[[str], str] | None] = _Through(
        "check_attester", "Runs a required check attested (see Gatekeeper.check_attester)."
    )
    refetch: _Through[Refetch | None] = _Through(
        "refetch", "How the host re-runs a web fetch (see Gatekeeper.refetch)."
    )
    host_files: _Through[tuple[str, ...]] = _Through(
        "host_files", "Files the host keeps that the agent may not change (see Gatekeeper)."
    )

    policy: _Read[PolicyRuntime] = _Read("policy")
    baseline_pending: _Read[bool] = _Read(
        "baseline_pending",
        "Whether the session's next action takes its baseline (from what is in memory).",
    )
    store: _Read[Ledger] = _Read(
        "store", "The underlying ledger engine; call it through :meth:`run_sync` from the loop."
    )

    @property
    def sync(self) -> Gatekeeper:
        """The synchronous facade underneath (for code that runs on the worker)."""
        return self._gk

    async def run_sync(self, fn: Callable[[Gatekeeper], T]) -> T:
        """Run ``fn(gatekeeper)`` on this session's worker, in order with the other calls."""
        return await self._run(fn, self._gk)

    async def state(self) -> SessionState:
        """The session's projection, refreshed from the journal (a property on the sync
        facade; a coroutine here because the refresh reads the journal)."""
        return await self._run(lambda: self._gk.state)

    def use_policies(self, runtime: PolicyRuntime) -> None:
        self._gk.use_policies(runtime)

    async def close(self) -> None:
        try:
            await self._run(self._gk.close)
        finally:
            self._worker.shutdown(wait=False)

    async def __aenter__(self) -> AsyncGatekeeper:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the API: each the sync facade's method, run on the session's worker (_off_loop) -----
    ingest = _off_loop(Gatekeeper.ingest)
    classify = _off_loop(Gatekeeper.classify)
    authorize = _off_loop(Gatekeeper.authorize)
    record = _off_loop(Gatekeeper.record)
    can_finish = _off_loop(Gatekeeper.can_finish)
    check_status = _off_loop(Gatekeeper.check_status)
    record_attested = _off_loop(Gatekeeper.record_attested)
    record_attested_check = _off_loop(Gatekeeper.record_attested_check)
    approve = _off_loop(Gatekeeper.approve)
    record_sandbox = _off_loop(Gatekeeper.record_sandbox)
    approve_grading = _off_loop(Gatekeeper.approve_grading)
    approve_baseline = _off_loop(Gatekeeper.approve_baseline)
    record_baseline = _off_loop(Gatekeeper.record_baseline)
    new_turn = _off_loop(Gatekeeper.new_turn)
    move = _off_loop(Gatekeeper.move)
    ledger = _off_loop(Gatekeeper.ledger)
    gate = _off_loop(Gatekeeper.gate)
    audit = _off_loop(Gatekeeper.audit)
    evidence = _off_loop(Gatekeeper.evidence)
    store_cursor = _off_loop(Gatekeeper.store_cursor)
    on_prompt = _off_loop(Gatekeeper.on_prompt)
    host_report = _off_loop(Gatekeeper.host_report)
    context_view = _off_loop(Gatekeeper.context_view)
    compaction_context = _off_loop(Gatekeeper.compaction_context)
    state_document = _off_loop(Gatekeeper.state_document)
    merge_from = _off_loop(Gatekeeper.merge_from)

    async def events(self, *, after: int = 0) -> AsyncIterator[EventRow]:
        """The session's events after seq ``after`` (read on the worker, then yielded)."""
        rows = await self._run(lambda: list(self._gk.events(after=after)))
        for row in rows:
            yield row

    def after_tool_text(self, call: ToolCall, outcome: ToolOutcome, evidence: Evidence) -> str:
        """Instruction packs fired by a recorded result (kept in memory: no journal read)."""
        return self._gk.after_tool_text(call, outcome, evidence)

    # -- wrapping executors -----------------------------------------------------------------
    def wrap(
        self, executor: Callable[[ToolCall], Any], *, tool_class: str | None = None
    ) -> Callable[[ToolCall], Awaitable[GatedResult]]:
        """Gate a sync or async ``(ToolCall) -> ToolOutcome`` executor into an async one.

        The gated executor returns a :class:`~infomark.wrapping.GatedResult`. A sync executor
        runs in the default thread pool (not on the journal's worker, not on the loop).
        """
        return wrap_async(self, executor, tool_class=tool_class)

    def tool(self, name: str | None = None, *, tool_class: str | None = None) -> Callable[..., Any]:
        """Decorate a plain (sync or async) function as a gated async tool (see
        :meth:`Gatekeeper.tool`: it reports its outcome by what it returns or raises)."""
        return gated_async_tool(self, name=name, tool_class=tool_class)

    # -- fork and merge ---------------------------------------------------------------------
    async def fork(self, as_session: str, upto: int | None = None) -> AsyncGatekeeper:
        """Fork this session (see :meth:`Gatekeeper.fork`); the fork gets its own worker."""
        return AsyncGatekeeper(await self._run(self._gk.fork, as_session, upto))

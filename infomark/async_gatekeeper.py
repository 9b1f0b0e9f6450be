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
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from infomark.gatekeeper import Gatekeeper, GateView, LedgerView
from infomark.gates.checks import CheckStatus
from infomark.gates.config import Config
from infomark.gates.decision import Decision, FinishDecision
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import Evidence
from infomark.ledger.report import IngestReport
from infomark.ledger.state import SessionState
from infomark.ledger.store.journal import EventRow
from infomark.wrapping import GatedResult, outcome_of, result_of

if TYPE_CHECKING:
    from infomark.gates.policies.runtime import PolicyRuntime
    from infomark.ledger.audit import AuditReport
    from infomark.ledger.stamps.source import Refetch

__all__ = ["AsyncGatekeeper"]

P = ParamSpec("P")
T = TypeVar("T")


def _worker() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="infomark-journal")


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

    @property
    def session(self) -> str:
        return self._gk.session

    @property
    def home(self) -> Path:
        return self._gk.home

    @property
    def config(self) -> Config:
        return self._gk.config

    @config.setter
    def config(self, value: Config) -> None:
        self._gk.config = value

    @property
    def unattended(self) -> str | None:
        """Why nobody can answer an "ask" in this run (see :meth:`Gatekeeper.authorize`)."""
        return self._gk.unattended

    @unattended.setter
    def unattended(self, value: str | None) -> None:
        self._gk.unattended = value

    @property
    def attester(self) -> Callable[[str], str] | None:
        """Runs a claim's oracle attested (see :attr:`Gatekeeper.attester`)."""
        return self._gk.attester

    @attester.setter
    def attester(self, value: Callable[[str], str] | None) -> None:
        self._gk.attester = value

    @property
    def check_attester(self) -> Callable[[str], str] | None:
        """Runs a required check attested (see :attr:`Gatekeeper.check_attester`)."""
        return self._gk.check_attester

    @check_attester.setter
    def check_attester(self, value: Callable[[str], str] | None) -> None:
        self._gk.check_attester = value

    @property
    def refetch(self) -> Refetch | None:
        """How the host re-runs a web fetch (see :attr:`Gatekeeper.refetch`)."""
        return self._gk.refetch

    @refetch.setter
    def refetch(self, value: Refetch | None) -> None:
        self._gk.refetch = value

    @property
    def host_files(self) -> tuple[str, ...]:
        """Files the host keeps that the agent may not change (see :class:`Gatekeeper`)."""
        return self._gk.host_files

    @host_files.setter
    def host_files(self, value: tuple[str, ...]) -> None:
        self._gk.host_files = value

    @property
    def policy(self) -> PolicyRuntime:
        return self._gk.policy

    @property
    def store(self) -> Ledger:
        """The underlying ledger engine; call it through :meth:`run_sync` from the loop."""
        return self._gk.store

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

    # -- the API ----------------------------------------------------------------------------
    async def ingest(
        self,
        text: str,
        *,
        source: str = "assistant",
        cursor: tuple[str, int] | None = None,
        dedupe: bool = False,
    ) -> IngestReport:
        return await self._run(self._gk.ingest, text, source=source, cursor=cursor, dedupe=dedupe)

    async def classify(
        self, call: ToolCall, tool_class: str | None = None
    ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        return await self._run(self._gk.classify, call, tool_class)

    async def authorize(
        self,
        call: ToolCall,
        *,
        bypass: bool | None = None,
        tool_class: str | None = None,
    ) -> Decision:
        return await self._run(self._gk.authorize, call, bypass=bypass, tool_class=tool_class)

    async def record(
        self,
        call: ToolCall,
        outcome: ToolOutcome,
        *,
        tool_class: str | None = None,
        call_id: str | None = None,
        cwd: str | None = None,
        background_id: str | None = None,
    ) -> Evidence:
        """Record the result of an authorized call (see :meth:`Gatekeeper.record`)."""
        return await self._run(
            self._gk.record,
            call,
            outcome,
            tool_class=tool_class,
            call_id=call_id,
            cwd=cwd,
            background_id=background_id,
        )

    async def can_finish(self, final_text: str = "") -> FinishDecision:
        return await self._run(self._gk.can_finish, final_text)

    async def check_status(self) -> list[CheckStatus]:
        return await self._run(self._gk.check_status)

    async def record_attested(
        self,
        claim_id: str,
        outcome: ToolOutcome,
        attestation: Mapping[str, Any],
        judged: str,
    ) -> tuple[Evidence, IngestReport]:
        return await self._run(self._gk.record_attested, claim_id, outcome, attestation, judged)

    async def record_attested_check(
        self, check: str, outcome: ToolOutcome, attestation: Mapping[str, Any], judged: str
    ) -> Evidence:
        return await self._run(self._gk.record_attested_check, check, outcome, attestation, judged)

    async def approve(self, *, by: str = "operator", note: str = "") -> None:
        await self._run(self._gk.approve, by=by, note=note)

    async def record_sandbox(
        self, sandboxed: bool, *, host: str, detail: str, fix: str = ""
    ) -> bool:
        """Journal whether the agent's own commands run in an OS sandbox (see the sync facade)."""
        return await self._run(
            self._gk.record_sandbox, sandboxed, host=host, detail=detail, fix=fix
        )

    async def approve_grading(self, path: str, *, by: str = "operator", note: str = "") -> None:
        """The user accepts a changed grading file (an operator act, see the sync facade)."""
        await self._run(self._gk.approve_grading, path, by=by, note=note)

    async def new_turn(self, prompt: str | None = None) -> str:
        return await self._run(self._gk.new_turn, prompt)

    async def move(self, gate: str) -> dict[str, Any]:
        return await self._run(self._gk.move, gate)

    async def ledger(self) -> LedgerView:
        return await self._run(self._gk.ledger)

    async def gate(self) -> GateView:
        return await self._run(self._gk.gate)

    async def audit(self, verify: bool = True) -> AuditReport:
        return await self._run(self._gk.audit, verify)

    async def events(self, *, after: int = 0) -> AsyncIterator[EventRow]:
        """The session's events after seq ``after`` (read on the worker, then yielded)."""
        rows = await self._run(lambda: list(self._gk.events(after=after)))
        for row in rows:
            yield row

    async def evidence(self, ref: str) -> Evidence | None:
        return await self._run(self._gk.evidence, ref)

    async def store_cursor(self, name: str, value: int) -> None:
        await self._run(self._gk.store_cursor, name, value)

    async def on_prompt(self, prompt: str) -> str:
        return await self._run(self._gk.on_prompt, prompt)

    async def host_report(
        self,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> str:
        return await self._run(
            self._gk.host_report,
            tokens_used=tokens_used,
            context_window=context_window,
            compacted=compacted,
        )

    async def context_view(self, budget: int = 1200) -> str:
        return await self._run(self._gk.context_view, budget)

    async def compaction_context(self) -> str:
        return await self._run(self._gk.compaction_context)

    async def state_document(self) -> dict[str, Any]:
        return await self._run(self._gk.state_document)

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
        return self._gated(executor, tool_class)

    def tool(self, name: str | None = None, *, tool_class: str | None = None) -> Callable[..., Any]:
        """Decorate a plain (sync or async) function as a gated async tool (see
        :meth:`Gatekeeper.tool`: it reports its outcome by what it returns or raises)."""

        def deco(fn: Callable[..., Any]) -> Callable[..., Awaitable[GatedResult]]:
            tool_name = name or fn.__name__

            async def run(call: ToolCall) -> object:
                value = fn(**dict(call.input))
                return await value if inspect.isawaitable(value) else value

            gated = self._gated(run, tool_class)

            @functools.wraps(fn)
            async def call_tool(**kwargs: Any) -> GatedResult:
                return await gated(ToolCall(tool=tool_name, input=kwargs))

            return call_tool

        return deco

    def _gated(
        self, executor: Callable[[ToolCall], Any], tool_class: str | None
    ) -> Callable[[ToolCall], Awaitable[GatedResult]]:
        is_async = inspect.iscoroutinefunction(executor)

        @functools.wraps(executor)
        async def gated(call: ToolCall) -> GatedResult:
            decision = await self.authorize(call, tool_class=tool_class)
            if not decision.allowed:
                return result_of(decision)
            started = time.perf_counter()
            try:
                value = (
                    await executor(call) if is_async else await asyncio.to_thread(executor, call)
                )
                outcome = outcome_of(value, started)
            except Exception as exc:  # a tool error is evidence (ERROR), not a crash
                msg = f"{type(exc).__name__}: {exc}"
                elapsed = (time.perf_counter() - started) * 1000
                outcome = ToolOutcome(output=msg, error=msg, is_error=True, duration_ms=elapsed)
            # Paired with its authorization: only a call infomark allowed becomes evidence.
            evidence = await self.record(
                call, outcome, tool_class=tool_class, call_id=decision.call_id or None
            )
            return result_of(
                decision, outcome, evidence, self.after_tool_text(call, outcome, evidence)
            )

        return gated

    # -- fork and merge ---------------------------------------------------------------------
    async def fork(self, as_session: str, upto: int | None = None) -> AsyncGatekeeper:
        """Fork this session (see :meth:`Gatekeeper.fork`); the fork gets its own worker."""
        return AsyncGatekeeper(await self._run(self._gk.fork, as_session, upto))

    async def merge_from(self, session: str) -> dict[str, Any]:
        return await self._run(self._gk.merge_from, session)

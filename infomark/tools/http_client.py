"""httpx clients of the HTTP service, mirroring the :class:`Gatekeeper` facade.

``Client(base_url, token=None, session="default", home=None)`` has the facade's
methods, method for method (``ingest``, ``classify``, ``authorize``, ``record``,
``evidence``, ``after_tool_text``, ``can_finish``, ``approve``, ``new_turn``,
``on_prompt``, ``move``, ``host_report``, ``context_view``, ``compaction_context``,
``state_document``, ``ledger``, ``gate``, ``audit``, ``events``, ``fork``, ``merge_from``,
``wrap``, ``tool``, ``close``) and returns the same types (:class:`Decision`,
:class:`FinishDecision`, :class:`IngestReport`, :class:`Evidence`, :class:`LedgerView`,
:class:`GateView`, :class:`AuditReport`; ``fork`` returns a client of the fork), so a
remote ledger is used exactly like a local one. :class:`AsyncClient` is the same with
``async`` methods. The token comes from the argument, else ``$INFOMARK_TOKEN``, else
``<home>/token``. A session id is checked by the rule every entry point shares
(:mod:`infomark.kernel.session_id`) when the client is made.

Each method is one line here: its request and decoding are written once, in
:class:`~infomark.tools.client_core.Requests` (the connection:
:class:`~infomark.tools.client_base.ClientBase`); the two classes below differ only in how
they send a :class:`~infomark.tools.client_core.Call`.

Errors: :class:`ServiceUnavailable` when the service cannot be reached,
:class:`ServiceError` (with the service's error ``code`` and HTTP ``status``) for an
HTTP error; both are :class:`InfomarkError`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from infomark.kernel.contexts import Closing
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.client_base import (
    DEFAULT_URL,
    TOKEN_ENV,
    ClientBase,
    ServiceError,
    ServiceUnavailable,
)
from infomark.tools.client_core import Call, RemoteEvent, Requests
from infomark.wrapping import (
    GatedResult,
    gated_async_tool,
    gated_tool,
    wrap_async,
    wrap_executor,
)

__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "AsyncClient",
    "Client",
    "RemoteEvent",
    "ServiceError",
    "ServiceUnavailable",
]

P = ParamSpec("P")
R = TypeVar("R")


def _sync(
    build: Callable[Concatenate[Requests, P], Call[R]],
) -> Callable[Concatenate[Client, P], R]:
    """A blocking client method from the shared request builder of the same name."""

    @functools.wraps(build)
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._send(build(self._req, *args, **kwargs))

    return method


def _async(
    build: Callable[Concatenate[Requests, P], Call[R]],
) -> Callable[Concatenate[AsyncClient, P], Awaitable[R]]:
    """An async client method from the shared request builder of the same name."""

    @functools.wraps(build)
    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self._send(build(self._req, *args, **kwargs))

    return method


class Client(ClientBase[httpx.Client], Closing):
    """A blocking client of one session on the infomark service (thread-safe).

    ``http`` shares an existing ``httpx.Client`` (its connection pool); a client
    given one does not close it.
    """

    def _connect(self, timeout: float) -> httpx.Client:
        return httpx.Client(timeout=timeout, trust_env=self._trust_env)

    def close(self) -> None:
        if self._owns:
            self._http.close()

    def _send(self, call: Call[R]) -> R:
        method, url, content, headers = self._request(call)
        try:
            response = self._http.request(
                method, url, content=content, headers=headers, params=call.params or None
            )
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc
        return self._decode(call, response)

    health = _sync(Requests.health)
    sessions = _sync(Requests.sessions)
    ingest = _sync(Requests.ingest)
    classify = _sync(Requests.classify)
    authorize = _sync(Requests.authorize)
    record = _sync(Requests.record)
    evidence = _sync(Requests.evidence)
    can_finish = _sync(Requests.can_finish)
    check = _sync(Requests.check)
    approve = _sync(Requests.approve)
    new_turn = _sync(Requests.new_turn)
    on_prompt = _sync(Requests.on_prompt)
    move = _sync(Requests.move)
    host_report = _sync(Requests.host_report)
    context_view = _sync(Requests.context_view)
    compaction_context = _sync(Requests.compaction_context)
    state_document = _sync(Requests.state_document)
    ledger = _sync(Requests.ledger)
    gate = _sync(Requests.gate)
    audit = _sync(Requests.audit)
    merge_from = _sync(Requests.merge_from)

    def fork(self, as_session: str, upto: int | None = None) -> Client:
        """Fork this session into ``as_session``; a client of the fork (same connections)."""
        self._send(self._req.fork(as_session, upto))
        return self.with_session(as_session)

    def events(self, *, after: int = 0, follow: bool = False) -> Iterator[RemoteEvent]:
        """Journal events after ``after``; with ``follow``, keep waiting for new ones."""
        call = self._req.events(after=after, follow=follow)
        timeout = httpx.Timeout(self._timeout, read=None) if follow else self._timeout
        method, url, _, headers = self._request(call)
        try:
            with self._http.stream(
                method, url, params=call.params, headers=headers, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    raise self._error(response.status_code, response.read())
                for line in response.iter_lines():
                    event = call.decode(line)
                    if event is not None:
                        yield event
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc

    def wrap(
        self, executor: Callable[..., Any], *, tool_class: str | None = None
    ) -> Callable[..., Any]:
        """Gate a ``(ToolCall) -> ToolOutcome`` executor (sync or async), as the facade does."""
        return wrap_executor(self, executor, tool_class=tool_class)

    def tool(self, name: str | None = None, *, tool_class: str | None = None) -> Callable[..., Any]:
        """Decorate a plain function as a gated tool, as ``Gatekeeper.tool`` does."""
        return gated_tool(self, name=name, tool_class=tool_class)


class AsyncClient(ClientBase[httpx.AsyncClient]):
    """The asyncio client: :class:`Client`'s methods as coroutines."""

    def _connect(self, timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=timeout, trust_env=self._trust_env)

    async def aclose(self) -> None:
        if self._owns:
            await self._http.aclose()

    async def close(self) -> None:
        """The same as :meth:`aclose` (the facade's name)."""
        await self.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call[R]) -> R:
        method, url, content, headers = self._request(call)
        try:
            response = await self._http.request(
                method, url, content=content, headers=headers, params=call.params or None
            )
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc
        return self._decode(call, response)

    health = _async(Requests.health)
    sessions = _async(Requests.sessions)
    ingest = _async(Requests.ingest)
    classify = _async(Requests.classify)
    authorize = _async(Requests.authorize)
    record = _async(Requests.record)
    evidence = _async(Requests.evidence)
    can_finish = _async(Requests.can_finish)
    check = _async(Requests.check)
    approve = _async(Requests.approve)
    new_turn = _async(Requests.new_turn)
    on_prompt = _async(Requests.on_prompt)
    move = _async(Requests.move)
    host_report = _async(Requests.host_report)
    context_view = _async(Requests.context_view)
    compaction_context = _async(Requests.compaction_context)
    state_document = _async(Requests.state_document)
    ledger = _async(Requests.ledger)
    gate = _async(Requests.gate)
    audit = _async(Requests.audit)
    merge_from = _async(Requests.merge_from)

    async def fork(self, as_session: str, upto: int | None = None) -> AsyncClient:
        """Fork this session into ``as_session``; a client of the fork (same connections)."""
        await self._send(self._req.fork(as_session, upto))
        return self.with_session(as_session)

    async def events(self, *, after: int = 0, follow: bool = False) -> AsyncIterator[RemoteEvent]:
        """Journal events after ``after``; with ``follow``, keep waiting for new ones."""
        call = self._req.events(after=after, follow=follow)
        timeout = httpx.Timeout(self._timeout, read=None) if follow else self._timeout
        method, url, _, headers = self._request(call)
        try:
            async with self._http.stream(
                method, url, params=call.params, headers=headers, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    raise self._error(response.status_code, await response.aread())
                async for line in response.aiter_lines():
                    event = call.decode(line)
                    if event is not None:
                        yield event
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc

    def wrap(
        self,
        executor: Callable[[ToolCall], Awaitable[ToolOutcome]],
        *,
        tool_class: str | None = None,
    ) -> Callable[[ToolCall], Awaitable[GatedResult]]:
        """Gate an async ``(ToolCall) -> ToolOutcome`` executor: authorize, run, record, tag.

        The gated executor returns a :class:`~infomark.wrapping.GatedResult`.
        """
        if not inspect.iscoroutinefunction(executor):
            raise TypeError("AsyncClient.wrap needs an async executor; use Client.wrap for sync")
        return wrap_async(self, executor, tool_class=tool_class)

    def tool(
        self, name: str | None = None, *, tool_class: str | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Awaitable[GatedResult]]]:
        """Decorate a plain (sync or async) function as a gated async tool.

        It reports its outcome as ``Gatekeeper.tool``'s functions do
        (:func:`~infomark.wrapping.outcome_of`).
        """
        return gated_async_tool(self, name=name, tool_class=tool_class)

"""The MCP proxy beyond tools: resources, templates, prompts, completions, logging, notices.

:class:`Forwarder` answers the client's ``resources/*``, ``prompts/*``,
``completion/complete`` and ``logging/setLevel`` by asking the downstream server and
passing its answer back unchanged, for exactly the capabilities the downstream server
declared. One exception: a ``resources/read`` reads something, so it is gated and
recorded like a read tool call (the call ``read`` with the URI, and the local path of a
``file://`` URI so the home's protection applies); the contents come back with the
evidence tag appended as one more text entry (``uri`` ``infomark:evidence/<ref>``).

:class:`Relay` passes the downstream server's notifications up to the client:
``tools/list_changed`` (after re-listing), ``resources/list_changed``,
``resources/updated``, ``prompts/list_changed`` and log messages. They go to the client
session seen on the latest request (a notification that arrives before any request has
nowhere to go and is dropped with a warning on stderr). Handshake-era sessions only: the
2026-07-28 ``subscriptions/listen`` stream is not proxied.
"""

from __future__ import annotations

import functools
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import mcp_types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.mcp_tools import evidence_tag

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.session import ServerSession

    from infomark.tools.protocol import LedgerTools

__all__ = ["RESOURCE_TOOL", "Forwarder", "Relay", "resource_call"]

RESOURCE_TOOL = "read"
"""The tool name a resource read is gated and recorded as (its evidence is an observation)."""


def _warn(message: str) -> None:
    print(f"infomark mcp-proxy: {message}", file=sys.stderr, flush=True)


def resource_call(uri: str, call_id: str | None = None) -> ToolCall:
    """The call a ``resources/read`` of ``uri`` stands for: a read, with the local path of a
    ``file://`` URI under ``path`` (so reading the ledger home through it is refused)."""
    arguments: dict[str, Any] = {"uri": uri}
    parts = urlsplit(uri)
    if parts.scheme.lower() == "file":
        arguments["path"] = unquote(parts.path) or "/"
    return ToolCall(tool=RESOURCE_TOOL, input=arguments, tool_call_id=call_id)


async def _inline(fn: Callable[..., Any], /, *args: Any) -> Any:
    return fn(*args)


def _contents_text(result: types.ReadResourceResult) -> str:
    parts: list[str] = []
    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            parts.append(item.text)
        else:
            parts.append(item.model_dump_json(by_alias=True, exclude_none=True))
    return "\n".join(parts)


class Relay:
    """Downstream notifications, passed up to the client session of the latest request."""

    def __init__(self) -> None:
        self.upstream: ServerSession | None = None
        self.on_tools_changed: Callable[[], Awaitable[object]] | None = None

    def seen(self, ctx: ServerRequestContext[Any]) -> None:
        self.upstream = ctx.session

    async def on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            _warn(f"the downstream connection reported: {type(message).__name__}: {message}")
            return
        up = self.upstream
        if up is None:
            _warn(f"dropped a downstream {type(message).__name__}: no client request yet")
            return
        if isinstance(message, types.ToolListChangedNotification):
            if self.on_tools_changed is not None:
                try:
                    await self.on_tools_changed()
                except Exception as exc:  # the client re-lists anyway
                    _warn(f"re-listing the downstream tools failed: {exc}")
            await up.send_tool_list_changed()
        elif isinstance(message, types.ResourceListChangedNotification):
            await up.send_resource_list_changed()
        elif isinstance(message, types.PromptListChangedNotification):
            await up.send_prompt_list_changed()
        elif isinstance(message, types.ResourceUpdatedNotification):
            await up.send_resource_updated(message.params.uri)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        up = self.upstream
        if up is None:
            _warn("dropped a downstream log message: no client request yet")
            return
        with warnings.catch_warnings():  # logging is deprecated in 2026-07-28, still served
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await up.send_log_message(level=params.level, data=params.data, logger=params.logger)


class Forwarder:
    """The client's non-tool requests, answered by the downstream server."""

    def __init__(
        self,
        gk: LedgerTools,
        downstream: ClientSession,
        relay: Relay,
        *,
        run: Callable[..., Awaitable[Any]] | None = None,
    ) -> None:
        self.gk = gk
        self.downstream = downstream
        self.relay = relay
        self._run = run if run is not None else _inline

    async def _gk(self, fn: Callable[..., Any], /, *args: Any) -> Any:
        """One gatekeeper call, the way the proxy runs them (its worker thread)."""
        return await self._run(fn, *args)

    def handlers(self) -> dict[str, Any]:
        """``Server(...)`` keyword arguments for what the downstream server offers."""
        caps = self.downstream.server_capabilities
        out: dict[str, Any] = {}
        if caps is None:
            return out
        if caps.resources is not None:
            out.update(
                on_list_resources=self.list_resources,
                on_list_resource_templates=self.list_resource_templates,
                on_read_resource=self.read_resource,
            )
            if caps.resources.subscribe:
                out.update(
                    on_subscribe_resource=self.subscribe, on_unsubscribe_resource=self.unsubscribe
                )
        if caps.prompts is not None:
            out.update(on_list_prompts=self.list_prompts, on_get_prompt=self.get_prompt)
        if caps.completions is not None:
            out.update(on_completion=self.complete)
        if caps.logging is not None:
            out.update(on_set_logging_level=self.set_logging_level)
        return out

    # -- passed through -----------------------------------------------------------------
    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self.relay.seen(ctx)
        return await self.downstream.list_resources(params=params)

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        self.relay.seen(ctx)
        return await self.downstream.list_resource_templates(params=params)

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.relay.seen(ctx)
        return await self.downstream.subscribe_resource(params.uri)

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.relay.seen(ctx)
        return await self.downstream.unsubscribe_resource(params.uri)

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self.relay.seen(ctx)
        return await self.downstream.list_prompts(params=params)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        self.relay.seen(ctx)
        return await self.downstream.get_prompt(params.name, params.arguments)

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        self.relay.seen(ctx)
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        return await self.downstream.complete(params.ref, argument, context)

    async def set_logging_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.relay.seen(ctx)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            return await self.downstream.set_logging_level(params.level)

    # -- gated: a resource read is a read ----------------------------------------------
    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """authorize (as a read) → forward → record (observation) → contents + the tag.

        A denial is a JSON-RPC error carrying the reason (a read has no error result).
        """
        self.relay.seen(ctx)
        uri = str(params.uri)
        call_id = None if ctx.request_id is None else f"mcp-{ctx.request_id}"
        call = resource_call(uri, call_id)
        try:
            decision = await self._gk(functools.partial(self.gk.authorize, tool_class="read"), call)
        except Exception as exc:  # fail closed: no decision, no read
            raise MCPError(
                types.INTERNAL_ERROR, f"[infomark error] could not decide on {uri}: {exc}"
            ) from exc
        if not decision.allowed:
            verb = "denied" if decision.verdict.value == "deny" else "held for approval"
            raise MCPError(
                types.INVALID_REQUEST, f"[infomark {verb}: {decision.code}] {decision.reason}"
            )
        started = time.perf_counter()
        try:
            result = await self.downstream.read_resource(uri)
        except MCPError as exc:
            msg = f"the downstream server failed to read {uri}: {exc.error.message}"
            outcome = ToolOutcome(output=msg, error=msg, is_error=True)
            await self._record(call, outcome, started, decision.call_id)
            raise
        outcome = ToolOutcome(output=_contents_text(result))
        evidence = await self._record(call, outcome, started, decision.call_id)
        if evidence is None:
            return result
        tag = types.TextResourceContents(
            uri=f"infomark:evidence/{evidence.ref}",
            mime_type="text/plain",
            text=evidence_tag(evidence),
        )
        return result.model_copy(update={"contents": [*result.contents, tag]})

    async def _record(
        self, call: ToolCall, outcome: ToolOutcome, started: float, call_id: str = ""
    ) -> Any:
        timed = ToolOutcome(
            output=outcome.output,
            error=outcome.error,
            is_error=outcome.is_error,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        try:
            record = functools.partial(self.gk.record, tool_class="read", call_id=call_id or None)
            return await self._gk(record, call, timed)
        except Exception as exc:  # the read happened; say that its evidence is missing
            _warn(f"a resource read was not recorded as evidence: {exc}")
            return None

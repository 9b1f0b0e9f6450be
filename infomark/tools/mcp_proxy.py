"""The MCP gatekeeper proxy: an MCP server in front of another MCP server.

``infomark mcp-proxy -- <server command> [args…]`` starts the downstream server over
stdio (without any ``INFOMARK_*`` variable in its environment) and serves its tools
unchanged (names, schemas, annotations), plus five ledger tools of its own
(:mod:`infomark.tools.mcp_tools`, ``infomark_finish`` among them). Every forwarded
``tools/call`` is authorized (the tool's MCP annotations reach classification),
forwarded, recorded as signed evidence, and returned with the evidence tag appended as
an extra text block; the tag's ``eligible=`` says exactly which stamps it can back.
Resources, templates, prompts, completions, logging and the downstream notifications are
forwarded by :mod:`infomark.tools.mcp_forward` (a resource read is gated as a read).
A denial, or a hold for approval the proxy cannot put to a user, is a result with
``is_error`` set and the reason as text, never a JSON-RPC error.

The proxy can re-fetch: before a mutation, the gatekeeper re-checks each page a grounded
premise rests on (``Gatekeeper.refetch``), and the proxy answers by calling the same
downstream web tool with the same arguments (:meth:`GatekeeperProxy.refetch`). Only a tool
the gate classes as ``web`` is called again (a shell tool that ran ``curl`` is not re-run);
anything else, an error result, a tool gone from the listing or no answer within
:data:`REFETCH_TIMEOUT_S` cannot confirm the page, which then counts as changed. The
gatekeeper's calls run on one worker thread at a time, so the event loop stays free to
carry that downstream call.

stdout is the protocol channel: nothing here prints to it; diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

from infomark._version import __version__
from infomark.kernel.environ import child_env
from infomark.kernel.errors import InfomarkError
from infomark.kernel.profiles import PROFILES
from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.canonical import scrub_surrogates
from infomark.tools.mcp_forward import Forwarder, Relay, content_texts
from infomark.tools.mcp_tools import OWN_TOOL_NAMES, call_own_tool, evidence_tag, own_tools

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from infomark.gates.decision import Decision
    from infomark.ledger.stamps.source import Refetch
    from infomark.tools.protocol import LedgerTools

    class Refetching(Protocol):
        """A gatekeeper the proxy can give its re-fetcher to (``Gatekeeper`` is one)."""

        refetch: Refetch | None

        def classify(
            self, call: ToolCall, tool_class: str | None = None
        ) -> tuple[str, tuple[str, ...], tuple[str, ...]]: ...

    class _ProxiedGatekeeper(LedgerTools, Refetching, Protocol):
        """What ``_serve`` needs: the ledger tools, and a re-fetcher slot."""


__all__ = [
    "REFETCH_TIMEOUT_S",
    "STARTUP_TIMEOUT_S",
    "GatekeeperProxy",
    "hold_note",
    "main",
    "outcome_of",
    "run_proxy",
]

STARTUP_TIMEOUT_S = 120.0
"""How long the downstream server may take to start and answer its first listing."""

REFETCH_TIMEOUT_S = 30.0
"""How long a re-fetch of a premise's page may take; no answer by then counts as changed."""

T = TypeVar("T")

_INSTRUCTIONS = (
    "infomark gates these tools: each result ends with an [infomark evidence_ref=…] tag; "
    "declare claims with infomark_ledger, bind evidence with infomark_stamp, read the "
    "ledger with infomark_status, and call infomark_finish before you stop. Modify and "
    "destructive tools are denied while a premise of the plan is not grounded."
)


def _warn(message: str) -> None:
    print(f"infomark mcp-proxy: {message}", file=sys.stderr, flush=True)


class GatekeeperProxy:
    """The proxy's state: one gatekeeper, one downstream session, the downstream listing."""

    def __init__(
        self, gk: LedgerTools, downstream: ClientSession, relay: Relay | None = None
    ) -> None:
        self.gk = gk
        self.downstream = downstream
        self.relay = relay if relay is not None else Relay()
        self.relay.on_tools_changed = self.refresh
        self._tools: list[types.Tool] = []
        self._annotations: dict[str, dict[str, Any]] = {}
        self._shadowed: set[str] = set()
        self._one = anyio.CapacityLimiter(1)  # the gatekeeper: one call at a time
        self._classify: Callable[[ToolCall], str] | None = None
        # said in the instructions and with the first decision: the downstream's commands run
        # outside an OS sandbox (run_proxy without --sandbox)
        self.sandbox_warning = ""
        self._warned = False

    async def _gk(self, fn: Callable[..., T], /, *args: Any) -> T:
        """Run one gatekeeper call on a worker thread (one at a time), off the event loop."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=self._one)

    # -- re-fetching a premise's page ------------------------------------------------------
    def can_refetch(self, gk: Refetching) -> None:
        """Make this proxy ``gk``'s re-fetcher (``run_proxy`` does; see :meth:`refetch`)."""
        self._classify = lambda call: gk.classify(call)[0]
        gk.refetch = self.refetch

    def refetch(self, tool: str, arguments: Mapping[str, object]) -> str | None:
        """The page again: the same downstream web tool called with the same arguments.

        Called by the gatekeeper inside :meth:`forward`'s authorize (a worker thread); None
        when the page cannot be confirmed (not a web tool, no longer listed, an error
        result), and a raise (no answer in time, called off a worker thread): the gatekeeper
        counts both as a changed page.
        """
        if tool not in self._annotations or self._classify is None:
            return None
        call = ToolCall(tool=tool, input=dict(arguments), annotations=self._annotations[tool])
        if self._classify(call) != ToolClass.WEB:
            return None  # a shell tool that ran curl is not run again
        result = anyio.from_thread.run(self._call_again, tool, dict(arguments))
        if result.is_error:
            return None
        return _result_text(result)  # exactly the text the first call recorded

    async def _call_again(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        with anyio.fail_after(REFETCH_TIMEOUT_S):
            return await self.downstream.call_tool(tool, arguments)

    # -- listing ------------------------------------------------------------------------
    async def refresh(self) -> list[types.Tool]:
        """Fetch the full downstream listing (every page) and remember each tool's annotations."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self.downstream.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        kept: list[types.Tool] = []
        for tool in tools:
            if tool.name in OWN_TOOL_NAMES:
                if tool.name not in self._shadowed:
                    _warn(
                        f"the downstream tool {tool.name!r} has the name of an infomark tool; "
                        "the infomark tool wins and the downstream one is not reachable"
                    )
                    self._shadowed.add(tool.name)
                continue
            kept.append(tool)
        self._tools = kept
        self._annotations = {t.name: _annotations_of(t) for t in kept}
        return kept

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """The downstream tools as listed (re-fetched on each request), then the proxy's own."""
        self.relay.seen(ctx)
        try:
            await self.refresh()
        except Exception as exc:  # a dead downstream still leaves the ledger tools usable
            _warn(f"listing the downstream tools failed ({_describe(exc)}); serving the last list")
        return types.ListToolsResult(tools=[*self._tools, *own_tools()])

    # -- calls --------------------------------------------------------------------------
    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Gate one call. Never raises: every failure is an ``is_error`` result with the reason."""
        self.relay.seen(ctx)
        name = params.name
        arguments = dict(params.arguments or {})
        try:
            if name in OWN_TOOL_NAMES:
                return await self._gk(call_own_tool, self.gk, name, arguments)
            call_id = None if ctx.request_id is None else f"mcp-{ctx.request_id}"
            return await self.forward(name, arguments, call_id)
        except Exception as exc:
            _warn(f"tools/call {name!r} failed inside the proxy: {_describe(exc)}")
            return _text_result(f"[infomark proxy error] {_describe(exc)}", is_error=True)

    async def forward(
        self, name: str, arguments: dict[str, Any], call_id: str | None = None
    ) -> types.CallToolResult:
        """authorize → forward → record → the downstream result with the evidence tag appended."""
        if name not in self._annotations:
            try:  # a tool the listing we hold does not know: the downstream may have added it
                await self.refresh()
            except Exception as exc:
                _warn(f"re-listing the downstream tools failed: {_describe(exc)}")
        call = ToolCall(
            tool=name,
            input=arguments,
            tool_call_id=call_id,
            annotations=self._annotations.get(name),
        )
        try:
            decision = await self._gk(self.gk.authorize, call)
        except Exception as exc:  # fail closed: no decision, no call
            return _text_result(
                f"[infomark error] could not decide on {name}: {_describe(exc)}; not run",
                is_error=True,
            )
        if not decision.allowed:
            return self._first(_denial(decision))

        started = time.perf_counter()
        try:
            result = await self.downstream.call_tool(name, arguments)
        except Exception as exc:  # the downstream failed: that is evidence (ERROR) too
            msg = f"the downstream server failed on {name}: {_describe(exc)}"
            outcome = ToolOutcome(output=msg, error=msg, is_error=True, duration_ms=_since(started))
            result = _text_result(msg, is_error=True)
        else:
            outcome = outcome_of(result, duration_ms=_since(started))
        # the warning after the tool's own output, before the evidence tag
        return await self._recorded(call, outcome, self._first(result), decision.call_id)

    def _first(self, result: types.CallToolResult) -> types.CallToolResult:
        """The first decision's result carries the sandbox warning."""
        if not self.sandbox_warning or self._warned:
            return result
        self._warned = True
        return _appended(result, [self.sandbox_warning])

    async def _recorded(
        self,
        call: ToolCall,
        outcome: ToolOutcome,
        result: types.CallToolResult,
        call_id: str = "",
    ) -> types.CallToolResult:
        try:
            evidence = await self._gk(
                functools.partial(self.gk.record, call, outcome, call_id=call_id or None)
            )
        except Exception as exc:  # the tool ran; say that its evidence is missing
            note = f"[infomark error] the result was not recorded as evidence: {_describe(exc)}"
            return _appended(result, [note])
        tail = [evidence_tag(evidence)]
        try:
            extra = await self._gk(self.gk.after_tool_text, call, outcome, evidence)
        except Exception as exc:
            _warn(f"after_tool_text failed for {call.tool}: {_describe(exc)}")
            extra = ""
        if extra:
            tail.append(extra)
        return _appended(result, tail)

    # -- serving ------------------------------------------------------------------------
    def server(self, instructions: str | None = None) -> Server[Any]:
        """The low-level MCP server that answers the proxy's client."""
        text = _INSTRUCTIONS if not instructions else f"{instructions}\n\n{_INSTRUCTIONS}"
        if self.sandbox_warning:
            text = f"{self.sandbox_warning}\n\n{text}"
        forwarder = Forwarder(self.gk, self.downstream, self.relay, run=self._gk)
        return Server(
            "infomark-mcp-proxy",
            version=__version__,
            instructions=text,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            **forwarder.handlers(),
        )

    def notification_options(self) -> NotificationOptions:
        """The proxy may tell its client that a list changed wherever the downstream can."""
        caps = self.downstream.server_capabilities
        return NotificationOptions(
            tools_changed=True,
            resources_changed=caps is not None and caps.resources is not None,
            prompts_changed=caps is not None and caps.prompts is not None,
        )


# --------------------------------------------------------------------------- results


def outcome_of(result: types.CallToolResult, *, duration_ms: float | None = None) -> ToolOutcome:
    """The :class:`ToolOutcome` a downstream result stands for.

    ``is_error`` → an error outcome (ERROR). Otherwise no exit status (OBSERVED), unless
    the structured content carries an integer ``exit_code`` / ``exitCode``.
    """
    output = _result_text(result)
    if result.is_error:
        return ToolOutcome(
            output=output,
            error=output or "the tool reported an error",
            is_error=True,
            duration_ms=duration_ms,
        )
    return ToolOutcome(
        output=output, exit_code=_exit_code(result.structured_content), duration_ms=duration_ms
    )


def _exit_code(structured: object) -> int | None:
    if not isinstance(structured, Mapping):
        return None
    for key in ("exit_code", "exitCode"):
        value = structured.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _result_text(result: types.CallToolResult) -> str:
    parts = content_texts(result.content, types.TextContent)
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, sort_keys=True, ensure_ascii=False))
    return "\n".join(parts)


def _annotations_of(tool: types.Tool) -> dict[str, Any]:
    """The tool's hints with camelCase keys, as classification reads them.

    A listed tool with no hints gets the MCP default ``readOnlyHint: false`` spelled out,
    so it classifies as a tool that changes things (modify), not as an unknown tool.
    """
    hints = (
        {}
        if tool.annotations is None
        else tool.annotations.model_dump(by_alias=True, exclude_none=True)
    )
    return hints or {"readOnlyHint": False}


def _appended(result: types.CallToolResult, texts: list[str]) -> types.CallToolResult:
    extra = [types.TextContent(type="text", text=scrub_surrogates(t)) for t in texts]
    return result.model_copy(update={"content": [*result.content, *extra]})


def _denial(decision: Decision) -> types.CallToolResult:
    from infomark.tools.executor import denied_outcome

    if decision.verdict.value == "ask":
        reason = decision.reason.rstrip()
        reason += ("" if reason.endswith(".") else ".") + " " + hold_note(decision)
        decision = replace(decision, reason=reason)
    return _text_result(str(denied_outcome(decision).output).rstrip(), is_error=True)


def hold_note(decision: Decision) -> str:
    """What the agent is told about a held call: who can approve it, and how."""
    return (
        "An MCP proxy cannot put the question to the user, so the call was not run. The "
        f"operator can approve it outside this session (`infomark held`, then `infomark "
        f"approve --call {decision.decision_id}`); then call it again with exactly the same "
        "arguments. You cannot approve it yourself."
    )


def _text_result(text: str, *, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=scrub_surrogates(text))], is_error=is_error
    )


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _describe(exc: BaseException) -> str:
    """A one-line account of an error, looking inside exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --------------------------------------------------------------------------- running


async def _serve(gk: _ProxiedGatekeeper, server_cmd: list[str], warning: str = "") -> None:
    # The downstream server never sees INFOMARK_* (the key, the token, the bypass switch).
    params = StdioServerParameters(command=server_cmd[0], args=server_cmd[1:], env=child_env())
    relay = Relay()
    async with (
        stdio_client(params) as (down_read, down_write),
        ClientSession(
            down_read, down_write, message_handler=relay.on_message, logging_callback=relay.on_log
        ) as downstream,
    ):
        proxy = GatekeeperProxy(gk, downstream, relay)
        proxy.sandbox_warning = warning
        proxy.can_refetch(gk)
        with anyio.fail_after(STARTUP_TIMEOUT_S):
            await downstream.initialize()
            await proxy.refresh()
        server = proxy.server(downstream.instructions)
        async with stdio_server() as (read, write):
            options = server.create_initialization_options(proxy.notification_options())
            await server.run(read, write, options)


def run_proxy(
    server_cmd: list[str],
    *,
    home: Path,
    session: str,
    profile: str | None,
    root: Path,
    sandbox: bool = False,
) -> int:
    """Serve the proxy on stdin/stdout until the client disconnects; return the exit code.

    ``sandbox``: start the downstream server in the agent's OS sandbox
    (:func:`infomark.tools.agent_sandbox.agent_policy`: the home hidden, infomark's
    environment read-only); refused (2, with the fix) where no sandbox can run.

    0 after a clean shutdown; 2 when the command is missing or the ledger home cannot be
    opened; 1 when the downstream server could not be started or failed.
    """
    if not server_cmd:
        _warn("no downstream server command; use: infomark mcp-proxy -- <command> [args…]")
        return 2
    from infomark.tools.hooks.sandboxed import AgentSandbox, warning

    boxed = AgentSandbox(
        False,
        "mcp-proxy",
        "the MCP proxy starts the downstream server without --sandbox",
        "restart the proxy as `infomark mcp-proxy --sandbox -- <server command>`",
    )
    if sandbox:
        from infomark.tools import sandbox as box
        from infomark.tools.agent_sandbox import agent_policy

        status = box.probe()
        if not status.available:
            _warn(f"--sandbox: no OS sandbox can run here ({status.detail}); fix: {status.fix}")
            return 2
        policy = agent_policy(home, root, env=child_env(), cwd=Path.cwd())
        server_cmd = box.command(server_cmd, policy)
        boxed = AgentSandbox(True, "mcp-proxy", f"the downstream server runs in {status.detail}")
    from infomark.gatekeeper import Gatekeeper

    try:
        gk = Gatekeeper.open(home, session, root=root, profile=profile)
    except InfomarkError as exc:
        _warn(str(exc))
        return exc.exit_code
    from infomark.tools.attest_lazy import lazy_attester

    lazy_attester(gk)  # infomark_check, and the finish's own runs
    text = ""
    try:
        gk.record_sandbox(boxed.sandboxed, host=boxed.host, detail=boxed.detail, fix=boxed.fix)
        text = warning(boxed, enforcing=gk.config.profile.enforcing)
    except InfomarkError as exc:
        _warn(str(exc))
        gk.close()
        return exc.exit_code
    if text:
        _warn(text)
    try:
        anyio.run(_serve, gk, list(server_cmd), text)
    except TimeoutError:
        _warn(
            f"the downstream server {server_cmd[0]!r} did not start within {STARTUP_TIMEOUT_S:g}s"
        )
        return 1
    except Exception as exc:
        _warn(f"the downstream server {server_cmd[0]!r} failed: {_describe(exc)}")
        return 1
    finally:
        gk.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m infomark.tools.mcp_proxy [--session S] [--home H] [--profile P] -- cmd …``."""
    from infomark.ledger.home import default_home

    parser = argparse.ArgumentParser(
        prog="infomark mcp-proxy",
        description="Gate a downstream MCP stdio server with infomark.",
    )
    parser.add_argument(
        "--session", default=None, help="session (default $INFOMARK_SESSION or mcp)"
    )
    parser.add_argument("--home", type=Path, default=None, help="ledger home (default .infomark)")
    parser.add_argument("--profile", choices=PROFILES, default=None)
    parser.add_argument("--sandbox", action="store_true", help="downstream in the OS sandbox")
    parser.add_argument("server_cmd", nargs=argparse.REMAINDER, help="-- <command> [args…]")
    args = parser.parse_args(argv)
    server_cmd = list(args.server_cmd)
    if server_cmd[:1] == ["--"]:
        server_cmd = server_cmd[1:]
    from infomark.tools.otel import shutdown_process_export, start_process_export

    try:
        start_process_export()  # INFOMARK_OTEL=1 (as `infomark mcp-proxy` does)
    except InfomarkError as exc:
        _warn(str(exc))
        return exc.exit_code
    try:
        return run_proxy(
            server_cmd,
            home=args.home if args.home is not None else default_home(),
            session=args.session or os.environ.get("INFOMARK_SESSION") or "mcp",
            profile=args.profile,
            sandbox=args.sandbox,
            root=Path.cwd(),
        )
    finally:
        shutdown_process_export()


if __name__ == "__main__":
    sys.exit(main())

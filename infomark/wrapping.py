"""Wrap any tool executor: authorize → execute → record evidence → tag the output.

A denial or a hold comes back as a :class:`ToolOutcome` carrying the reason as
an error result; it never raises, so the agent reads it and corrects course.

Part of the facade layer: it drives a gatekeeper through the small :class:`GatedSession`
protocol (``Gatekeeper`` satisfies it), touches nothing outside, and imports nothing above
the gates. ``infomark.tools.executor`` re-exports it for the integrations.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from infomark.gates.decision import Decision
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence

__all__ = ["GatedSession", "denied_outcome", "gated_tool", "tagged", "wrap_executor"]


class GatedSession(Protocol):
    """What a wrapped executor needs from a gatekeeper."""

    def authorize(self, call: ToolCall, *, tool_class: str | None = None) -> Decision: ...

    def record(
        self, call: ToolCall, outcome: ToolOutcome, *, tool_class: str | None = None
    ) -> Evidence: ...

    def after_tool_text(self, call: ToolCall, outcome: ToolOutcome, evidence: Evidence) -> str: ...


Executor = Callable[[ToolCall], ToolOutcome]
AsyncExecutor = Callable[[ToolCall], Awaitable[ToolOutcome]]
F = TypeVar("F", bound=Callable[..., Any])


def denied_outcome(decision: Decision) -> ToolOutcome:
    """The result the model sees for a denied or held call: the reason, then any
    instruction pack the denial fired (policies' ``after_decision``)."""
    verb = "denied" if decision.decision.value == "deny" else "held for approval"
    text = f"[infomark {verb}: {decision.code}] {decision.reason}"
    if decision.instructions:
        text += "\n" + decision.instructions
    return ToolOutcome(output=text, error=text, is_error=True)


def tagged(outcome: ToolOutcome, evidence: Evidence, extra: str = "") -> ToolOutcome:
    """The outcome with the evidence tag (and any instruction text) appended to its output."""
    tail = "\n" + evidence.tag + (("\n" + extra) if extra else "")
    out = outcome.output
    new: str | bytes = out + tail.encode() if isinstance(out, bytes) else out + tail
    return outcome.with_output(new)


def _after(
    gk: GatedSession, call: ToolCall, outcome: ToolOutcome, tool_class: str | None
) -> ToolOutcome:
    evidence = gk.record(call, outcome, tool_class=tool_class)
    return tagged(outcome, evidence, gk.after_tool_text(call, outcome, evidence))


def _failed(exc: BaseException, started: float) -> ToolOutcome:
    msg = f"{type(exc).__name__}: {exc}"
    return ToolOutcome(
        output=msg, error=msg, is_error=True, duration_ms=(time.perf_counter() - started) * 1000
    )


def wrap_executor(
    gk: GatedSession,
    executor: Executor | AsyncExecutor,
    *,
    tool_class: str | None = None,
) -> Callable[[ToolCall], Any]:
    """Return a gated executor of the same kind (sync or async) as ``executor``."""
    if inspect.iscoroutinefunction(executor):
        async_exec: AsyncExecutor = executor

        @functools.wraps(executor)
        async def gated_async(call: ToolCall) -> ToolOutcome:
            decision = gk.authorize(call, tool_class=tool_class)
            if not decision.allowed:
                return denied_outcome(decision)
            started = time.perf_counter()
            try:
                outcome = await async_exec(call)
            except Exception as exc:  # a tool error is evidence (ERROR), not a crash
                outcome = _failed(exc, started)
            return _after(gk, call, outcome, tool_class)

        return gated_async

    sync_exec: Executor = executor  # type: ignore[assignment]

    @functools.wraps(executor)
    def gated(call: ToolCall) -> ToolOutcome:
        decision = gk.authorize(call, tool_class=tool_class)
        if not decision.allowed:
            return denied_outcome(decision)
        started = time.perf_counter()
        try:
            outcome = sync_exec(call)
        except Exception as exc:  # a tool error is evidence (ERROR), not a crash
            outcome = _failed(exc, started)
        return _after(gk, call, outcome, tool_class)

    return gated


def gated_tool(
    gk: GatedSession, *, name: str | None = None, tool_class: str | None = None
) -> Callable[[F], Callable[..., ToolOutcome]]:
    """Decorate ``fn(**kwargs) -> str`` as a gated tool; call it with keyword arguments."""

    def deco(fn: F) -> Callable[..., ToolOutcome]:
        tool_name = name or fn.__name__

        def run(call: ToolCall) -> ToolOutcome:
            started = time.perf_counter()
            result = fn(**dict(call.input))
            return ToolOutcome(
                output="" if result is None else str(result),
                exit_code=0 if tool_class == "execute" else None,
                duration_ms=(time.perf_counter() - started) * 1000,
            )

        gated = wrap_executor(gk, run, tool_class=tool_class)

        @functools.wraps(fn)
        def call_tool(**kwargs: Any) -> ToolOutcome:
            out: ToolOutcome = gated(ToolCall(tool=tool_name, input=kwargs))
            return out

        return call_tool

    return deco

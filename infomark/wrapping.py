"""Wrap any tool executor: authorize → execute → record evidence → tag the output.

A gated executor returns a :class:`GatedResult`: the decision (allowed, denied or held, with
its reason code), the evidence the run became (its ref, outcome and what it may back) and the
text for the model. A denial or a hold never raises and never runs the executor; the agent
reads the reason and corrects course.

The environment: a user's executor runs in the caller's process, so infomark cannot scrub
what it hands to the programs it starts. An executor that takes an ``env`` keyword is given
:func:`infomark.kernel.environ.agent_env` (the process environment without any ``INFOMARK_*``
variable) on every call; any other executor should pass ``env=agent_env()`` to the
subprocesses it starts itself (``make_builtins`` does).

Part of the facade layer: it drives a gatekeeper through the small :class:`GatedSession`
protocol (``Gatekeeper`` satisfies it), touches nothing outside, and imports nothing above
the gates. ``infomark.tools.executor`` re-exports it for the integrations.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Unpack, overload

from infomark.gates.decision import Decision, Verdict
from infomark.kernel.environ import agent_env
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence, Outcome

if TYPE_CHECKING:
    from infomark.ledger.calls import RecordOptions

__all__ = [
    "AsyncGatedSession",
    "GatedResult",
    "GatedSession",
    "denied_outcome",
    "gated_async_tool",
    "gated_tool",
    "ingest_note",
    "outcome_of",
    "result_of",
    "tagged",
    "wrap_async",
    "wrap_executor",
]


class GatedSession(Protocol):
    """What a wrapped executor needs from a gatekeeper."""

    def authorize(self, call: ToolCall, *, tool_class: str | None = None) -> Decision: ...

    def record(
        self, call: ToolCall, outcome: ToolOutcome, **opts: Unpack[RecordOptions]
    ) -> Evidence: ...

    def after_tool_text(self, call: ToolCall, outcome: ToolOutcome, evidence: Evidence) -> str: ...


class AsyncGatedSession(Protocol):
    """What an async gated executor needs: :class:`GatedSession`'s two journal calls, awaited
    (:class:`~infomark.async_gatekeeper.AsyncGatekeeper`, the HTTP ``AsyncClient``)."""

    def authorize(
        self, call: ToolCall, *, tool_class: str | None = None
    ) -> Awaitable[Decision]: ...

    def record(
        self, call: ToolCall, outcome: ToolOutcome, **opts: Unpack[RecordOptions]
    ) -> Awaitable[Evidence]: ...

    def after_tool_text(self, call: ToolCall, outcome: ToolOutcome, evidence: Evidence) -> str: ...


Executor = Callable[[ToolCall], ToolOutcome]
AsyncExecutor = Callable[[ToolCall], Awaitable[ToolOutcome]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class GatedResult:
    """What a gated call came to: the decision, the evidence, and the text for the model.

    ``decision`` is the journaled :class:`~infomark.gates.decision.Decision`. When it allowed
    the call, ``tool_outcome`` is what the executor returned (untagged) and ``evidence`` is
    the signed record of it; when it denied or held the call, both are None and the executor
    did not run. ``output`` is what the model should read: the tool's output with the
    evidence tag (and any instruction text) appended, or the denial text.
    """

    decision: Decision
    output: str | bytes
    tool_outcome: ToolOutcome | None = None
    evidence: Evidence | None = None
    instructions: str = ""

    # -- the decision ----------------------------------------------------------------------
    @property
    def allowed(self) -> bool:
        """The call was allowed and the executor ran."""
        return self.decision.allowed

    @property
    def denied(self) -> bool:
        """The call was denied: it did not run."""
        return self.decision.verdict is Verdict.DENY

    @property
    def held(self) -> bool:
        """The call was held for a human's approval (an ``ask``): it did not run."""
        return self.decision.verdict is Verdict.ASK

    @property
    def code(self) -> str:
        """The decision's reason code (``allowed``, ``ungrounded_premises``, …)."""
        return self.decision.code

    @property
    def reason(self) -> str:
        return self.decision.reason

    # -- the evidence ----------------------------------------------------------------------
    @property
    def ref(self) -> str | None:
        """The ``evidence_ref`` to stamp a claim with (None when the call did not run)."""
        return None if self.evidence is None else self.evidence.ref

    @property
    def outcome(self) -> Outcome | None:
        """PASS / FAIL / ERROR / OBSERVED as recorded (None when the call did not run)."""
        return None if self.evidence is None else self.evidence.outcome

    @property
    def passed(self) -> bool:
        """The run was recorded with outcome PASS."""
        return self.outcome is Outcome.PASS

    @property
    def eligible_for(self) -> tuple[str, ...]:
        """The stamps this evidence may back (``()`` when none or when nothing ran)."""
        return () if self.evidence is None else self.evidence.eligible_for

    # -- the text for the model -------------------------------------------------------------
    @property
    def text(self) -> str:
        """:attr:`output` as text (bytes decoded as UTF-8, bad bytes replaced)."""
        out = self.output
        return out if isinstance(out, str) else out.decode("utf-8", "replace")

    @property
    def error(self) -> str | None:
        """The tool's own error message, or the denial text when the call did not run."""
        if self.tool_outcome is None:
            return self.text
        return self.tool_outcome.error

    @property
    def is_error(self) -> bool:
        """Flag the tool result as an error to the model: not run, or the tool errored."""
        o = self.tool_outcome
        return o is None or o.is_error or o.error is not None

    def to_outcome(self) -> ToolOutcome:
        """The result as the :class:`ToolOutcome` the model reads (tagged output)."""
        o = self.tool_outcome
        if o is None:
            return ToolOutcome(output=self.output, error=self.text, is_error=True)
        return o.with_output(self.output)


def denied_outcome(decision: Decision) -> ToolOutcome:
    """The error result a denied or held call answers with (the executor did not run): the
    reason, then any instruction pack the denial fired (policies' ``after_decision``)."""
    verb = "denied" if decision.verdict.value == "deny" else "held for approval"
    text = f"[infomark {verb}: {decision.code}] {decision.reason}"
    if decision.instructions:
        text += "\n" + decision.instructions
    return ToolOutcome(output=text, error=text, is_error=True)


def ingest_note(report: Any, *, packs: bool = True) -> str:
    """What an agent loop tells the model after ingesting its text ("" when nothing): a block
    it wrote that could not be read (the parser's line, column, what was expected and a caret
    under the text), and the instruction packs the ingest fired (a rejected stamp's code and
    fix; ``packs=False`` when the loop's next prompt carries the active packs anyway, as
    ``infomark run``'s context view does: told once, not twice). ``report``: an
    :class:`~infomark.ledger.report.IngestReport` or its dict."""
    if report is None:
        return ""
    from infomark.gates.authorize import parse_error_text

    data = report if isinstance(report, dict) else report.to_dict()
    errors = [d for d in data.get("diagnostics") or () if d.get("severity", "error") == "error"]
    unread = [d for d in errors if not d.get("code")]  # the parser's: the block was not applied
    refused = [d for d in errors if d.get("code")]  # read and applied, one part refused
    parts = []
    if unread:
        parts.append(
            "[infomark] a block you wrote could not be read, so it was not applied; fix it "
            "and write it again:\n" + parse_error_text(unread)
        )
    parts += [f"[infomark] line {d.get('line')}: {d.get('message')}" for d in refused]
    if packs and data.get("instructions"):
        parts.append(str(data["instructions"]))
    return "\n".join(parts)


def tagged(outcome: ToolOutcome, evidence: Evidence, extra: str = "") -> ToolOutcome:
    """The outcome with the evidence tag (and any instruction text) appended to its output."""
    tail = "\n" + evidence.tag + (("\n" + extra) if extra else "")
    out = outcome.output
    new: str | bytes = out + tail.encode() if isinstance(out, bytes) else str(out) + tail
    return outcome.with_output(new)


def result_of(
    decision: Decision,
    outcome: ToolOutcome | None = None,
    evidence: Evidence | None = None,
    extra: str = "",
) -> GatedResult:
    """Assemble a :class:`GatedResult` (for integrations that authorize and record themselves).

    With no ``outcome`` the call did not run: the output is the denial text. Otherwise
    ``evidence`` (the record of ``outcome``) is required and its tag is appended.
    """
    if outcome is None:
        return GatedResult(decision=decision, output=str(denied_outcome(decision).output))
    if evidence is None:
        raise ValueError("a result that ran needs the evidence it was recorded as")
    out = tagged(outcome, evidence, extra).output
    return GatedResult(
        decision=decision,
        output=out if isinstance(out, str | bytes) else str(out),  # tagged() made it a str
        tool_outcome=outcome,
        evidence=evidence,
        instructions=extra,
    )


def _after(
    gk: GatedSession,
    call: ToolCall,
    outcome: ToolOutcome,
    tool_class: str | None,
    decision: Decision,
) -> GatedResult:
    # Paired with its authorization: only a call infomark allowed becomes evidence.
    evidence = gk.record(call, outcome, tool_class=tool_class, call_id=decision.call_id or None)
    return result_of(decision, outcome, evidence, gk.after_tool_text(call, outcome, evidence))


def _failed(exc: BaseException, started: float) -> ToolOutcome:
    msg = f"{type(exc).__name__}: {exc}"
    return ToolOutcome(
        output=msg, error=msg, is_error=True, duration_ms=(time.perf_counter() - started) * 1000
    )


@overload
def wrap_executor(
    gk: GatedSession, executor: AsyncExecutor, *, tool_class: str | None = None
) -> Callable[[ToolCall], Awaitable[GatedResult]]: ...


@overload
def wrap_executor(
    gk: GatedSession, executor: Executor, *, tool_class: str | None = None
) -> Callable[[ToolCall], GatedResult]: ...


def wrap_executor(
    gk: GatedSession,
    executor: Executor | AsyncExecutor,
    *,
    tool_class: str | None = None,
) -> Callable[[ToolCall], Any]:
    """Return a gated executor of the same kind (sync or async) as ``executor``.

    It returns a :class:`GatedResult`; ``tool_class`` is the declared class of every call
    (it decides both the gate's class and the evidence class, see :func:`gated_tool`). An
    executor with an ``env`` keyword parameter is called as ``executor(call, env=…)`` with
    :func:`~infomark.kernel.environ.agent_env`.
    """
    if _takes_env(executor):
        plain: Callable[..., Any] = executor

        if inspect.iscoroutinefunction(plain):

            @functools.wraps(plain)
            async def with_env_async(call: ToolCall) -> Any:
                return await plain(call, env=agent_env())

            return wrap_executor(gk, with_env_async, tool_class=tool_class)

        @functools.wraps(plain)
        def with_env(call: ToolCall) -> Any:
            return plain(call, env=agent_env())

        return wrap_executor(gk, with_env, tool_class=tool_class)
    if inspect.iscoroutinefunction(executor):
        async_exec: AsyncExecutor = executor

        @functools.wraps(executor)
        async def gated_async(call: ToolCall) -> GatedResult:
            decision = gk.authorize(call, tool_class=tool_class)
            if not decision.allowed:
                return result_of(decision)
            started = time.perf_counter()
            try:
                outcome = outcome_of(await async_exec(call), started)
            except Exception as exc:  # a tool error is evidence (ERROR), not a crash
                outcome = _failed(exc, started)
            return _after(gk, call, outcome, tool_class, decision)

        return gated_async

    sync_exec: Executor = executor  # type: ignore[assignment]

    @functools.wraps(executor)
    def gated(call: ToolCall) -> GatedResult:
        decision = gk.authorize(call, tool_class=tool_class)
        if not decision.allowed:
            return result_of(decision)
        started = time.perf_counter()
        try:
            outcome = outcome_of(sync_exec(call), started)
        except Exception as exc:  # a tool error is evidence (ERROR), not a crash
            outcome = _failed(exc, started)
        return _after(gk, call, outcome, tool_class, decision)

    return gated


def wrap_async(
    gk: AsyncGatedSession, executor: Callable[[ToolCall], Any], *, tool_class: str | None = None
) -> Callable[[ToolCall], Awaitable[GatedResult]]:
    """An async gated executor for an async session: authorize, run, record, tag (awaited).

    An async ``executor`` is awaited; a sync one runs in the default thread pool (never on
    the loop). A tool error is evidence (``ERROR``), not a crash, as in :func:`wrap_executor`.
    """
    import asyncio  # not at the top: the sync facade and the hook never need it

    is_async = inspect.iscoroutinefunction(executor)

    @functools.wraps(executor)
    async def gated(call: ToolCall) -> GatedResult:
        decision = await gk.authorize(call, tool_class=tool_class)
        if not decision.allowed:
            return result_of(decision)
        started = time.perf_counter()
        try:
            value = await executor(call) if is_async else await asyncio.to_thread(executor, call)
            outcome = outcome_of(value, started)
        except Exception as exc:  # a tool error is evidence (ERROR), not a crash
            outcome = _failed(exc, started)
        # Paired with its authorization: only a call infomark allowed becomes evidence.
        evidence = await gk.record(
            call, outcome, tool_class=tool_class, call_id=decision.call_id or None
        )
        return result_of(decision, outcome, evidence, gk.after_tool_text(call, outcome, evidence))

    return gated


def _takes_env(executor: Callable[..., Any]) -> bool:
    """Does ``executor`` declare an ``env`` parameter (not through ``functools.wraps``)?"""
    try:
        params = inspect.signature(executor, follow_wrapped=False).parameters
    except (TypeError, ValueError):
        return False
    param = params.get("env")
    return param is not None and param.kind in (
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )


def outcome_of(value: object, started: float | None = None) -> ToolOutcome:
    """What a tool function's return value says it did, as a :class:`ToolOutcome`.

    * a :class:`ToolOutcome`: itself (its ``duration_ms`` filled in when missing);
    * an object with an integer ``returncode`` (``subprocess.CompletedProcess``) or
      ``exit_code``: that exit status, its ``stdout`` (+ ``stderr``) or ``output`` as output;
    * anything else (``str``, ``bytes``, ``None``, a number, …): an output with **no exit
      status**, so its evidence is ``OBSERVED``, never ``PASS``: a function that returns
      the text "1 failed" has not said that it passed.
    """
    ms = None if started is None else (time.perf_counter() - started) * 1000
    if isinstance(value, ToolOutcome):
        if value.duration_ms is None and ms is not None:
            return ToolOutcome(value.output, value.exit_code, value.error, ms, value.is_error)
        return value
    for attr in ("returncode", "exit_code"):
        code = getattr(value, attr, None)
        if isinstance(code, int) and not isinstance(code, bool):
            return ToolOutcome(output=_process_output(value), exit_code=code, duration_ms=ms)
    if value is None:
        return ToolOutcome(output="", duration_ms=ms)
    if isinstance(value, str | bytes):
        return ToolOutcome(output=value, duration_ms=ms)
    return ToolOutcome(output=str(value), duration_ms=ms)


def _process_output(value: object) -> str | bytes:
    parts = [getattr(value, name, None) for name in ("stdout", "stderr", "output")]
    found = [p for p in parts if isinstance(p, str | bytes) and p]
    if not found:
        return ""
    if all(isinstance(p, bytes) for p in found):
        return b"".join(p for p in found if isinstance(p, bytes))
    return "".join(p if isinstance(p, str) else p.decode("utf-8", "replace") for p in found)


def gated_tool(
    gk: GatedSession, *, name: str | None = None, tool_class: str | None = None
) -> Callable[[F], Callable[..., GatedResult]]:
    """Decorate ``fn(**kwargs)`` as a gated tool; call it with keyword arguments.

    The function reports what it did by what it returns (see :func:`outcome_of`): return a
    :class:`ToolOutcome` or a ``CompletedProcess`` to give an exit status, raise to record
    an ``ERROR``. A plain return value has no exit status (``OBSERVED``). The declared
    ``tool_class`` decides the gate's class and the evidence class.
    """

    def deco(fn: F) -> Callable[..., GatedResult]:
        tool_name = name or fn.__name__

        def run(call: ToolCall) -> ToolOutcome:
            return outcome_of(fn(**dict(call.input)))

        gated = wrap_executor(gk, run, tool_class=tool_class)

        @functools.wraps(fn)
        def call_tool(**kwargs: Any) -> GatedResult:
            return gated(ToolCall(tool=tool_name, input=kwargs))

        return call_tool

    return deco


def gated_async_tool(
    gk: AsyncGatedSession, *, name: str | None = None, tool_class: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Awaitable[GatedResult]]]:
    """:func:`gated_tool` for an async session: decorate a sync or async ``fn(**kwargs)``
    as a gated async tool (its outcome read by :func:`outcome_of`)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Awaitable[GatedResult]]:
        tool_name = name or fn.__name__

        async def run(call: ToolCall) -> object:
            value = fn(**dict(call.input))
            return await value if inspect.isawaitable(value) else value

        gated = wrap_async(gk, run, tool_class=tool_class)

        @functools.wraps(fn)
        async def call_tool(**kwargs: Any) -> GatedResult:
            return await gated(ToolCall(tool=tool_name, input=kwargs))

        return call_tool

    return deco

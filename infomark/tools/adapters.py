"""Adapters for the message shapes agent loops use: OpenAI Chat Completions, OpenAI Responses,
Anthropic Messages.

Each adapter turns one model response into the messages to append to the conversation:

1. the response's text is ingested **before** any of its tool calls runs (a ``claim_ledger``
   or a stamp in the same message counts for those calls);
2. each tool call runs through the gate (authorize → run → record) and comes back as the
   provider's tool-result shape, with the evidence tag in its text and the host's call id
   (``tool_call_id`` / ``call_id`` / ``tool_use_id``) on the decision and the evidence;
3. a response with no tool call asks the finish gate; a refusal comes back as a user message
   with the reason, so the loop goes on; :attr:`Turn.done` says when it may stop.

:meth:`system_prompt` puts the protocol in the system prompt, :meth:`user` starts a user turn.

Pure data shapes: responses are plain dicts (the JSON of the HTTP API) or SDK objects with a
``model_dump()`` (pydantic); no SDK is imported. The session may be a :class:`Gatekeeper` or a
:class:`~infomark.tools.http_client.Client` (:meth:`handle`), or an
:class:`~infomark.async_gatekeeper.AsyncGatekeeper` or an ``AsyncClient`` (:meth:`ahandle`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from infomark.gates.decision import FinishDecision
from infomark.kernel.protocol import render_protocol
from infomark.ledger.calls import ToolCall
from infomark.ledger.report import IngestReport
from infomark.wrapping import GatedResult, ingest_note

__all__ = [
    "AnthropicMessages",
    "OpenAIChat",
    "OpenAIResponses",
    "RawCall",
    "ToolLoopSession",
    "Turn",
]

Message = dict[str, Any]


class ToolLoopSession(Protocol):
    """What an adapter drives: the facade, the async facade or either HTTP client."""

    @property
    def session(self) -> str: ...

    def wrap(
        self, executor: Callable[..., Any], *, tool_class: str | None = None
    ) -> Callable[..., Any]: ...

    def ingest(self, text: str, *, source: str = "assistant") -> Any: ...

    def can_finish(self, final_text: str = "") -> Any: ...

    def on_prompt(self, prompt: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class RawCall:
    """One tool call as the model wrote it: ``arguments`` None when they did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    problem: str = ""  # why the arguments are unusable, for the model


@dataclass(frozen=True, slots=True)
class Turn:
    """What one model response came to.

    ``messages``: append them to the conversation (the response itself first, then the tool
    results, or the finish gate's refusal). ``results``: one :class:`GatedResult` per tool call
    that reached the gate. ``finish``: the finish decision when the response called no tool.
    """

    messages: list[Message]
    results: tuple[GatedResult, ...] = ()
    finish: FinishDecision | None = None
    ingested: IngestReport | None = None
    problems: tuple[str, ...] = ()  # calls that never reached the gate (unknown tool, bad JSON)
    echoed: int = 0  # how many of ``messages`` are the response itself

    @property
    def answers(self) -> list[Message]:
        """The messages after the echoed response: the tool results or the refusal (what to
        send with the Responses API's ``previous_response_id``)."""
        return self.messages[self.echoed :]

    @property
    def done(self) -> bool:
        """The model called no tool and the finish gate allowed it to stop."""
        return self.finish is not None and self.finish.allow


@dataclass(frozen=True, slots=True)
class _Parsed:
    text: str
    calls: tuple[RawCall, ...]
    echo: list[Message] = field(default_factory=list)  # the response as conversation items


def _plain(value: Any) -> Any:
    """An SDK object (pydantic ``model_dump``) or a plain value, as plain data."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    return value


def _arguments(name: str, raw: Any) -> tuple[dict[str, Any] | None, str]:
    if isinstance(raw, Mapping):
        return dict(raw), ""
    if raw is None or raw == "":
        return {}, ""
    if not isinstance(raw, str):
        got = type(raw).__name__
        return None, f"{name}: arguments must be a JSON object, got {got}; nothing ran"
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"{name}: arguments are not JSON ({exc}); nothing ran"
    if not isinstance(value, dict):
        return None, f"{name}: arguments must be a JSON object; nothing ran"
    return value, ""


def _bad(what: str) -> ValueError:
    return ValueError(f"not a model response: {what}")


class _Adapter:
    """The loop logic every shape shares; a subclass says how its shape reads and writes."""

    provider: ClassVar[str] = ""

    def __init__(
        self,
        session: ToolLoopSession,
        tools: Mapping[str, Callable[[ToolCall], Any]],
        *,
        tool_classes: Mapping[str, str] | None = None,
    ) -> None:
        """``tools``: name → executor ``(ToolCall) -> ToolOutcome`` (sync, or async with an
        async session); ``tool_classes``: a declared class per tool name (decides the gate's
        class and the evidence class, as ``@gk.tool(tool_class=…)`` does)."""
        self.session = session
        classes = dict(tool_classes or {})
        self._gated: dict[str, Callable[[ToolCall], Any]] = {
            name: session.wrap(executor, tool_class=classes.get(name))
            for name, executor in tools.items()
        }

    # -- what the loop calls ---------------------------------------------------------------
    def system_prompt(self, base: str = "") -> str:
        """``base`` followed by the infomark protocol (the agent's rules, from the kernel)."""
        return "\n\n".join(p for p in (base.strip(), render_protocol()) if p)

    def user(self, prompt: str) -> Message:
        """Start a user turn (resets the finish refusals) and return its message."""
        context = _sync(self.session.on_prompt(prompt), "await adapter.auser(prompt)")
        return self._user_message(prompt, str(context or ""))

    async def auser(self, prompt: str) -> Message:
        context = self.session.on_prompt(prompt)
        if inspect.isawaitable(context):
            context = await context
        return self._user_message(prompt, str(context or ""))

    def handle(self, response: Any) -> Turn:
        """Ingest the response's text, run its tool calls through the gate, or ask the
        finish gate when it called none (a synchronous session)."""
        steps = self._steps(self.parse(response))
        try:
            value = next(steps)
            while True:
                value = steps.send(_sync(value))
        except StopIteration as done:
            turn: Turn = done.value
            return turn

    async def ahandle(self, response: Any) -> Turn:
        """:meth:`handle` for an async session (AsyncGatekeeper, AsyncClient)."""
        steps = self._steps(self.parse(response))
        try:
            value = next(steps)
            while True:
                value = steps.send(await _maybe(value))
        except StopIteration as done:
            turn: Turn = done.value
            return turn

    def _steps(self, parsed: _Parsed) -> Generator[Any, Any, Turn]:
        """The loop of :meth:`handle` and :meth:`ahandle`, written once: it yields each
        session call's return value and is sent its result (awaited, for an async session)."""
        report = (yield self.session.ingest(parsed.text)) if parsed.text.strip() else None
        if not parsed.calls:
            fin = yield self.session.can_finish(parsed.text)
            return self._finished(parsed, fin, report)
        answers: list[tuple[RawCall, str, bool]] = []
        results: list[GatedResult] = []
        problems: list[str] = []
        for raw in parsed.calls:
            problem = self._problem(raw)
            if problem:
                problems.append(problem)
                answers.append((raw, problem, True))
                continue
            assert raw.arguments is not None
            result = yield self._gated[raw.name](ToolCall(raw.name, raw.arguments, raw.id))
            results.append(result)
            answers.append((raw, result.text, result.is_error))
        return self._ran(parsed, answers, results, problems, report)

    def tool_calls(self, response: Any) -> list[ToolCall]:
        """The response's well-formed tool calls as :class:`ToolCall` (with the host's id)."""
        return [
            ToolCall(r.name, r.arguments, r.id)
            for r in self.parse(response).calls
            if r.arguments is not None
        ]

    # -- shared pieces ---------------------------------------------------------------------
    def _problem(self, raw: RawCall) -> str:
        if raw.name not in self._gated:
            known = ", ".join(sorted(self._gated)) or "none"
            return f"[infomark] unknown tool {raw.name!r}; the tools are: {known}; nothing ran"
        if raw.arguments is None:
            return f"[infomark] {raw.problem}"
        return ""

    def _finished(self, parsed: _Parsed, fin: FinishDecision, report: Any) -> Turn:
        messages = list(parsed.echo)
        if not fin.allow:
            messages.append(
                self._user_message(f"[infomark finish refused: {fin.code}] {fin.reason}", "")
            )
        return Turn(messages, finish=fin, ingested=report, echoed=len(parsed.echo))

    def _ran(
        self,
        parsed: _Parsed,
        answers: list[tuple[RawCall, str, bool]],
        results: list[GatedResult],
        problems: list[str],
        report: Any,
    ) -> Turn:
        note = ingest_note(report)
        if note and answers:  # what the response's blocks came to, with the first result
            raw, text, is_error = answers[0]
            answers = [(raw, f"{note}\n\n{text}", is_error), *answers[1:]]
        messages = [*parsed.echo, *self._results(answers)]
        return Turn(
            messages,
            tuple(results),
            ingested=report,
            problems=tuple(problems),
            echoed=len(parsed.echo),
        )

    # -- what a shape says -----------------------------------------------------------------
    def parse(self, response: Any) -> _Parsed:  # pragma: no cover - every shape overrides it
        raise NotImplementedError

    def _results(self, answers: list[tuple[RawCall, str, bool]]) -> list[Message]:
        raise NotImplementedError  # pragma: no cover

    def _user_message(self, prompt: str, context: str) -> Message:
        return {"role": "user", "content": prompt + (("\n\n" + context) if context else "")}


def _sync(value: Any, instead: str = "await adapter.ahandle(response)") -> Any:
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: no "coroutine was never awaited" warning
        raise TypeError(f"this session is async: use `{instead}`")
    return value


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


# -- OpenAI Chat Completions ---------------------------------------------------------------------


def _obj(value: Any, what: str) -> Mapping[str, Any]:
    value = _plain(value)
    if not isinstance(value, Mapping):
        raise _bad(f"{what} is not an object")
    return value


def _list(value: Any, what: str) -> list[Any]:
    value = _plain(value)
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise _bad(f"{what} is not a list")
    return list(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class OpenAIChat(_Adapter):
    """``POST /v1/chat/completions``: ``choices[0].message`` with ``tool_calls``; tool results
    are ``{"role": "tool", "tool_call_id", "content"}`` messages."""

    provider = "openai.chat_completions"

    def parse(self, response: Any) -> _Parsed:
        data = _obj(response, "the response")
        if "choices" in data:
            choices = _list(data.get("choices"), "choices")
            if not choices:
                raise _bad("a chat completion without choices")
            data = _obj(_obj(choices[0], "choices[0]").get("message"), "choices[0].message")
        content = _plain(data.get("content"))
        if isinstance(content, list | tuple):  # content parts
            text = "\n".join(
                _text(_plain(p).get("text")) for p in content if isinstance(_plain(p), Mapping)
            )
        else:
            text = _text(content)
        calls: list[RawCall] = []
        wire: list[Message] = []
        for i, item in enumerate(_list(data.get("tool_calls"), "tool_calls")):
            raw = _obj(item, f"tool_calls[{i}]")
            fn = _obj(raw.get("function") or {}, f"tool_calls[{i}].function")
            name, cid = _text(fn.get("name")), _text(raw.get("id"))
            args, problem = _arguments(name, fn.get("arguments"))
            calls.append(RawCall(cid, name, args, problem))
            arguments = fn.get("arguments")
            wire.append(
                {
                    "id": cid,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments or {}),
                    },
                }
            )
        echo: Message = {"role": "assistant", "content": text or None}
        if wire:
            echo["tool_calls"] = wire
        return _Parsed(text, tuple(calls), [echo])

    def _results(self, answers: list[tuple[RawCall, str, bool]]) -> list[Message]:
        return [
            {"role": "tool", "tool_call_id": raw.id, "content": text} for raw, text, _ in answers
        ]


# -- OpenAI Responses ----------------------------------------------------------------------------


class OpenAIResponses(_Adapter):
    """``POST /v1/responses``: ``output`` items (``message``, ``function_call`` …); results are
    ``{"type": "function_call_output", "call_id", "output"}`` items for the next ``input``.
    Put :meth:`system_prompt` in ``instructions``."""

    provider = "openai.responses"

    def parse(self, response: Any) -> _Parsed:
        data = _plain(response)
        items = _list(data.get("output") if isinstance(data, Mapping) else data, "output")
        texts: list[str] = []
        calls: list[RawCall] = []
        echo: list[Message] = []
        for i, entry in enumerate(items):
            item = _obj(entry, f"output[{i}]")
            kind = item.get("type")
            if kind == "message":
                for part in _list(item.get("content"), f"output[{i}].content"):
                    part = _plain(part)
                    if isinstance(part, Mapping) and part.get("type") == "output_text":
                        texts.append(_text(part.get("text")))
            elif kind == "function_call":
                name = _text(item.get("name"))
                args, problem = _arguments(name, item.get("arguments"))
                calls.append(RawCall(_text(item.get("call_id")), name, args, problem))
            echo.append(dict(item))  # reasoning items too: the API wants them back
        return _Parsed("\n".join(texts), tuple(calls), echo)

    def _results(self, answers: list[tuple[RawCall, str, bool]]) -> list[Message]:
        return [
            {"type": "function_call_output", "call_id": raw.id, "output": text}
            for raw, text, _ in answers
        ]


# -- Anthropic Messages --------------------------------------------------------------------------


class AnthropicMessages(_Adapter):
    """``POST /v1/messages``: ``content`` blocks (``text``, ``tool_use``); results are one user
    message of ``tool_result`` blocks (``is_error`` set for a denial or a tool error). Put
    :meth:`system_prompt` in ``system``."""

    provider = "anthropic.messages"

    def parse(self, response: Any) -> _Parsed:
        data = _plain(response)
        blocks = data.get("content") if isinstance(data, Mapping) else data
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        texts: list[str] = []
        calls: list[RawCall] = []
        content: list[Message] = []
        for i, entry in enumerate(_list(blocks, "content")):
            block = _obj(entry, f"content[{i}]")
            kind = block.get("type")
            if kind == "text":
                texts.append(_text(block.get("text")))
            elif kind == "tool_use":
                name = _text(block.get("name"))
                args, problem = _arguments(name, block.get("input"))
                calls.append(RawCall(_text(block.get("id")), name, args, problem))
            content.append(dict(block))
        return _Parsed("\n".join(texts), tuple(calls), [{"role": "assistant", "content": content}])

    def _results(self, answers: list[tuple[RawCall, str, bool]]) -> list[Message]:
        blocks: list[Message] = []
        for raw, text, is_error in answers:
            block: Message = {"type": "tool_result", "tool_use_id": raw.id, "content": text}
            if is_error:
                block["is_error"] = True
            blocks.append(block)
        return [{"role": "user", "content": blocks}]

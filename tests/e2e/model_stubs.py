"""Scripted model APIs on 127.0.0.1 for the hosts' end-to-end tests: Gemini, OpenAI Responses
and OpenAI Chat Completions.

``ModelStub(protocol, script)`` serves one HTTP API from a script of steps. A step is a
:class:`Turn` or a callable that receives the parsed request (:class:`Request`) and returns
one, so a test reads what the host sent back (tool errors, hook context, finish refusals)
and answers with it, as a model would. Once the script is exhausted every further request
gets the text ``done.``. Side calls (a Gemini ``:generateContent`` router request, a model
list) are answered without consuming the script. A step that raises is recorded in
:attr:`ModelStub.errors` and answered with HTTP 500 at once; :meth:`ModelStub.check` raises
it.

Observed wire formats (the pinned versions are in :mod:`.hosts_harness`):

* Gemini CLI 0.61.0 with ``GOOGLE_GEMINI_BASE_URL``: ``POST
  /v1beta/models/<model>:streamGenerateContent?alt=sse`` (``contents``, ``tools``), answered
  as server-sent ``data:`` lines of ``GenerateContentResponse``; the router's
  ``:generateContent`` side call expects one JSON response.
* Codex 0.171.0 with a ``wire_api = "responses"`` provider: ``POST /v1/responses`` with
  ``stream: true`` (``input`` items, ``tools``), answered with ``response.created``,
  ``response.output_item.done`` per item and ``response.completed`` events.
* OpenCode 1.18.33 with an ``@ai-sdk/openai-compatible`` provider: ``POST
  /v1/chat/completions`` with ``stream: true`` (``messages``, ``tools``), answered with
  ``chat.completion.chunk`` deltas (text, then ``tool_calls``), a ``finish_reason`` chunk and
  ``data: [DONE]``; its title request carries no ``tools`` and is answered as a side call.
"""

from __future__ import annotations

import itertools
import json
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Call", "ModelStub", "Request", "Step", "Turn"]


@dataclass(frozen=True)
class Call:
    """One tool call of a scripted turn."""

    name: str
    args: Mapping[str, Any]
    custom: str | None = None  # a Responses custom tool's raw input (Codex's apply_patch)


@dataclass(frozen=True)
class Turn:
    """One scripted model answer: optional text, then tool calls."""

    text: str | None = None
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True)
class Request:
    """One request the host sent, parsed."""

    path: str
    body: dict[str, Any]

    def history(self) -> list[Any]:
        """The conversation items: Gemini ``contents``, Responses ``input``, Chat ``messages``."""
        items = self.body.get("contents", self.body.get("input", self.body.get("messages", [])))
        return list(items) if isinstance(items, list) else []

    def since_model(self) -> str:
        """Every string in the items after the model's last turn, joined (what it is shown
        now: tool results, hook context, a finish refusal)."""
        items = self.history()
        last = 0
        for i, item in enumerate(items):
            if isinstance(item, dict) and (
                item.get("role") in ("model", "assistant")
                or item.get("type") in ("function_call", "custom_tool_call")
            ):
                last = i + 1
        return "\n".join(_strings(items[last:]))

    def all_text(self) -> str:
        return "\n".join(_strings(self.body))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


Step = Turn | Callable[[Request], Turn]
_EXHAUSTED = Turn(text="done.")


def _gemini_events(turn: Turn) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if turn.text:
        parts.append({"text": turn.text})
    parts += [{"functionCall": {"name": c.name, "args": dict(c.args)}} for c in turn.calls]
    usage = {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10}
    return [
        {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": usage,
        }
    ]


def _chat_events(turn: Turn, n: int) -> list[dict[str, Any]]:
    cid = f"chatcmpl_{n}"
    base = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": "stub"}
    delta: dict[str, Any] = {"role": "assistant"}
    if turn.text:
        delta["content"] = turn.text
    if turn.calls:
        delta["tool_calls"] = [
            {
                "index": i,
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(dict(c.args))},
            }
            for i, c in enumerate(turn.calls)
        ]
    finish = "tool_calls" if turn.calls else "stop"
    usage = {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
    ]


def _responses_events(turn: Turn, n: int) -> list[dict[str, Any]]:
    rid = f"resp_{n}"
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": rid}}]
    if turn.text:
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{n}",
            "content": [{"type": "output_text", "text": turn.text}],
        }
        events.append({"type": "response.output_item.done", "item": item})
    for i, c in enumerate(turn.calls):
        call: dict[str, Any] = {"id": f"fc_{n}_{i}", "call_id": f"call_{n}_{i}", "name": c.name}
        if c.custom is not None:
            call.update(type="custom_tool_call", input=c.custom)
        else:
            call.update(type="function_call", arguments=json.dumps(dict(c.args)))
        events.append({"type": "response.output_item.done", "item": call})
    usage = {
        "input_tokens": 5,
        "output_tokens": 5,
        "total_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    events.append({"type": "response.completed", "response": {"id": rid, "usage": usage}})
    return events


@dataclass
class ModelStub:
    """A scripted model API (``protocol``: ``"gemini"``, ``"responses"`` or ``"chat"``) on
    127.0.0.1."""

    protocol: str
    script: Sequence[Step]
    requests: list[Request] = field(default_factory=list)
    scripted: list[Request] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.protocol not in ("gemini", "responses", "chat"):
            raise ValueError(f"unknown protocol {self.protocol!r}")
        self._steps = iter(self.script)
        self._count = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the stub is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ModelStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:  # a model list: nothing to offer
                self._send(200, "application/json", b'{"data": [], "models": []}')

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(size) or b"{}")
                    status, kind, out = stub._answer(self.path, body)
                except Exception:
                    stub.errors.append(traceback.format_exc())
                    status, kind, out = 500, "text/plain", b"stub step failed"
                self._send(status, kind, out)

            def _send(self, status: int, kind: str, out: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, path: str, body: Any) -> tuple[int, str, bytes]:
        request = Request(path, body if isinstance(body, dict) else {})
        with self._lock:
            self.requests.append(request)
            if self.protocol == "gemini" and ":generateContent" in path:  # the router's side call
                side = _gemini_events(Turn(text="{}"))[0]
                return 200, "application/json", json.dumps(side).encode()
            if self.protocol == "chat" and not body.get("tools"):  # a title / summary side call
                side = "".join(f"data: {json.dumps(e)}\n\n" for e in _chat_events(Turn("Fix"), 0))
                return 200, "text/event-stream", (side + "data: [DONE]\n\n").encode()
            self.scripted.append(request)
            step = next(self._steps, _EXHAUSTED)
            turn = step if isinstance(step, Turn) else step(request)
            n = next(self._count)
        if self.protocol == "gemini":
            events = _gemini_events(turn)
        elif self.protocol == "chat":
            events = _chat_events(turn, n)
        else:
            events = _responses_events(turn, n)
        sse = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
        if self.protocol == "chat":
            sse += "data: [DONE]\n\n"
        return 200, "text/event-stream", sse.encode()

    def check(self, *, complete: bool = True) -> None:
        """Raise when a step failed, or (``complete``) a scripted step was never asked for."""
        if self.errors:
            raise AssertionError("a stub step failed:\n" + "\n".join(self.errors))
        if complete and next(self._steps, None) is not None:
            raise AssertionError(
                f"the host stopped after {len(self.scripted)} scripted requests; the script "
                "had more steps"
            )

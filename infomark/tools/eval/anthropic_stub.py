"""A scripted Anthropic Messages API server on 127.0.0.1 (e2e tests, `eval --agent claude-code`).

``AnthropicStub(script)`` runs a real HTTP server (stdlib ``ThreadingHTTPServer``, port 0, in a
daemon thread) that answers ``POST /v1/messages`` (any query string, e.g. ``?beta=true``) from a
script. A step is either a fixed :class:`Reply` or a callable that receives the parsed
:class:`MessagesRequest` and returns a :class:`Reply`, so a test can read what the client sent back
(tool results, hook feedback, evidence refs) and use it in its next answer.

Rules:

* Only requests that offer ``tools`` consume script steps; a request without tools (a side call)
  gets a short text answer and leaves the script where it is.
* Once the script is exhausted every further request gets ``end_turn`` with the text ``done.``.
* ``stream: true`` is answered with server-sent events (``message_start``,
  ``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``) /
  ``content_block_stop``, ``message_delta`` with the stop reason and usage, ``message_stop``);
  otherwise with one JSON message.
* The stop reason is ``tool_use`` when the reply has tool calls, else ``end_turn``, unless the
  reply sets it. Claude Code runs the tool calls it receives whatever the stop reason says.
* A step that raises, an unparsable body or an unknown path is recorded in :attr:`errors` and
  answered with an HTTP error at once: the client never hangs on the stub.

Every request is recorded; :meth:`AnthropicStub.check` raises when anything went wrong.
"""

from __future__ import annotations

import itertools
import json
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from infomark.kernel.errors import UserError

__all__ = [
    "AnthropicStub",
    "MessagesRequest",
    "Reply",
    "Step",
    "StubScriptError",
    "ToolCall",
    "ToolResult",
]

_MESSAGES_PATH = "/v1/messages"
_SIDE_CALL_TEXT = "ok."
_EXHAUSTED_TEXT = "done."
_TEXT_CHUNK = 24
_JSON_CHUNK = 16
_POLL_INTERVAL = 0.02


@dataclass(frozen=True)
class ToolCall:
    """One ``tool_use`` block of a scripted reply; ``id`` defaults to a unique generated one."""

    name: str
    input: Mapping[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted assistant message: optional text, then tool calls, in that order."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None

    def __post_init__(self) -> None:
        if not self.text and not self.tool_calls:
            raise UserError("Reply needs a non-empty text or at least one tool call")

    @property
    def effective_stop_reason(self) -> str:
        """The stop reason sent to the client."""
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


@dataclass(frozen=True)
class ToolResult:
    """A ``tool_result`` block the client sent, its content flattened to text."""

    tool_use_id: str
    content: str
    is_error: bool


@dataclass(frozen=True)
class MessagesRequest:
    """One recorded HTTP request; ``body`` is the parsed JSON object (empty when unparsable)."""

    index: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path

    @property
    def is_messages_call(self) -> bool:
        """Whether this is a ``POST /v1/messages`` call."""
        return self.method == "POST" and self.route == _MESSAGES_PATH

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation the client sent."""
        raw = self.body.get("messages", [])
        return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []

    @property
    def model(self) -> str:
        """The model the client asked for."""
        return str(self.body.get("model", ""))

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed answer."""
        return self.body.get("stream") is True

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model."""
        raw = self.body.get("tools", [])
        if not isinstance(raw, list):
            return []
        return [str(t.get("name", "")) for t in raw if isinstance(t, dict)]

    @property
    def has_tools(self) -> bool:
        """Whether the request offers tools (only such requests consume script steps)."""
        return bool(self.tool_names)

    def new_messages(self) -> list[dict[str, Any]]:
        """The messages after the last assistant message (all of them if there is none)."""
        messages = self.messages
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        return messages[last + 1 :]

    def new_blocks(self) -> list[dict[str, Any]]:
        """The content blocks of :meth:`new_messages`; string content becomes a text block."""
        return list(_blocks(self.new_messages()))

    def tool_results(self, new_only: bool = True) -> list[ToolResult]:
        """The ``tool_result`` blocks, by default only those after the last assistant message."""
        blocks = self.new_blocks() if new_only else list(_blocks(self.messages))
        return [
            ToolResult(
                tool_use_id=str(b.get("tool_use_id", "")),
                content=_flatten(b.get("content")),
                is_error=b.get("is_error") is True,
            )
            for b in blocks
            if b.get("type") == "tool_result"
        ]

    def texts(self, new_only: bool = True) -> list[str]:
        """The ``text`` blocks, by default only those after the last assistant message."""
        blocks = self.new_blocks() if new_only else list(_blocks(self.messages))
        return [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]

    def system_text(self) -> str:
        """The system prompt as one string."""
        return _flatten(self.body.get("system"))

    def all_text(self) -> str:
        """Everything the model would read: system prompt, texts and tool results, in order."""
        parts = [self.system_text()]
        for block in _blocks(self.messages):
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "tool_result":
                parts.append(_flatten(block.get("content")))
            elif kind == "tool_use":
                parts.append(json.dumps(block.get("input", {}), ensure_ascii=False))
        return "\n".join(parts)


Step = Reply | Callable[[MessagesRequest], Reply]


class StubScriptError(AssertionError):
    """The stub met a failing script step or a request it could not answer."""


class AnthropicStub:
    """A scripted Messages API server: use as a context manager, point the client at ``url``."""

    def __init__(self, script: Sequence[Step] = ()) -> None:
        self._script = list(script)
        self._lock = threading.Lock()
        self._requests: list[MessagesRequest] = []
        self._errors: list[str] = []
        self._steps_used = 0
        self._tool_ids = itertools.count(1)
        self._messages = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> AnthropicStub:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._server is not None:
            return
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL},
            name="anthropic-stub",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()

    # -- state -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL for ``ANTHROPIC_BASE_URL``."""
        if self._server is None:
            raise UserError("AnthropicStub is not running: use it as a context manager first")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[MessagesRequest]:
        """Every HTTP request received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[MessagesRequest]:
        """The ``POST /v1/messages`` calls, side calls included."""
        return [r for r in self.requests if r.is_messages_call]

    @property
    def scripted_requests(self) -> list[MessagesRequest]:
        """The ``POST /v1/messages`` calls that offered tools (answered from the script)."""
        return [r for r in self.model_requests if r.has_tools]

    @property
    def steps_used(self) -> int:
        """How many script steps have been consumed."""
        with self._lock:
            return self._steps_used

    @property
    def script_length(self) -> int:
        """How many steps the script has."""
        return len(self._script)

    @property
    def errors(self) -> list[str]:
        """Failures met while answering (raising steps, bad bodies, unknown paths)."""
        with self._lock:
            return list(self._errors)

    def check(self, *, complete: bool = False) -> None:
        """Raise :class:`StubScriptError` if anything failed, or (``complete``) steps are left."""
        errors = self.errors
        if errors:
            raise StubScriptError("the Anthropic stub recorded errors:\n" + "\n".join(errors))
        if complete and self.steps_used < len(self._script):
            raise StubScriptError(
                f"only {self.steps_used} of {len(self._script)} script steps were used; "
                f"{len(self.model_requests)} model requests arrived"
            )

    # -- answering (called from handler threads) -------------------------------------------

    def _handle(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> _Answer:
        with self._lock:
            index = len(self._requests)
            body: Mapping[str, Any] = {}
            parse_error: str | None = None
            if raw:
                try:
                    parsed = json.loads(raw)
                except ValueError as exc:
                    parse_error = f"body is not JSON: {exc}"
                else:
                    if isinstance(parsed, dict):
                        body = parsed
                    else:
                        parse_error = "body is not a JSON object"
            request = MessagesRequest(index, method, path, dict(headers), body)
            self._requests.append(request)
            if not request.is_messages_call:
                return self._fail(404, f"request #{index}: no route for {method} {path}")
            if parse_error is not None:
                return self._fail(400, f"request #{index}: {parse_error}")
            if not request.has_tools:
                reply = Reply(text=_SIDE_CALL_TEXT)
            elif self._steps_used >= len(self._script):
                reply = Reply(text=_EXHAUSTED_TEXT)
            else:
                step_no = self._steps_used
                step = self._script[step_no]
                self._steps_used += 1
                try:
                    reply = step if isinstance(step, Reply) else step(request)
                    if not isinstance(reply, Reply):
                        raise TypeError(f"script step returned {type(reply).__name__}, not Reply")
                except Exception as exc:
                    detail = "".join(traceback.format_exception(exc)).rstrip()
                    return self._fail(400, f"request #{index} (script step {step_no}): {detail}")
            message = self._message(reply, request)
        if request.stream:
            return _Answer(200, "text/event-stream", _sse(message))
        return _Answer(200, "application/json", json.dumps(message).encode())

    def _fail(self, status: int, detail: str) -> _Answer:
        self._errors.append(detail)
        error = {"type": "error", "error": {"type": "invalid_request_error", "message": detail}}
        return _Answer(status, "application/json", json.dumps(error).encode())

    def _message(self, reply: Reply, request: MessagesRequest) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            tool_id = call.id or f"toolu_stub{next(self._tool_ids):06d}"
            content.append(
                {"type": "tool_use", "id": tool_id, "name": call.name, "input": dict(call.input)}
            )
        return {
            "id": f"msg_stub{next(self._messages):06d}",
            "type": "message",
            "role": "assistant",
            "model": request.model or "claude-stub",
            "content": content,
            "stop_reason": reply.effective_stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(1, len(json.dumps(request.body)) // 4),
                "output_tokens": max(1, len(json.dumps(content)) // 4),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }


@dataclass(frozen=True)
class _Answer:
    status: int
    content_type: str
    body: bytes


def _make_handler(stub: AnthropicStub) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 60

        def do_POST(self) -> None:
            self._answer()

        def do_GET(self) -> None:
            self._answer()

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = stub._handle(self.command, self.path, headers, raw)
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.send_header("request-id", "req_stub")
            self.end_headers()
            self.wfile.write(answer.body)
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            return

    return _Handler


def _blocks(messages: Sequence[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            yield {"type": "text", "text": content}
        elif isinstance(content, list):
            yield from (b for b in content if isinstance(b, dict))


def _flatten(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _sse(message: Mapping[str, Any]) -> bytes:
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    out = [_event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": c} for c in _chunks(block["text"], _TEXT_CHUNK)
            ]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": c}
                for c in _chunks(json.dumps(block["input"]), _JSON_CHUNK)
            ]
        out.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        out.extend(
            _event(
                "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
            )
            for d in deltas
        )
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": usage,
            },
        )
    )
    out.append(_event("message_stop", {"type": "message_stop"}))
    return b"".join(out)

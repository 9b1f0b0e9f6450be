"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 (tests and the demo).

A real HTTP server (``http.server`` on a thread) that answers ``POST …/chat/completions``
from a script instead of a model: per session (read from the ``infomark session: S`` line
the runner puts in its system message), a list of steps, each a message or a function of
the request that returns one. When a session's script runs out, ``default`` answers.
:class:`Fail` steps answer an HTTP error (to exercise retries). Every request is kept in
``requests`` with its ``Authorization`` header, so a test can check what the model saw.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from infomark.kernel.protocol import CONTEXT_HEADER
from infomark.ledger.evidence import TAGGED_REF

__all__ = [
    "Fail",
    "Request",
    "ScriptedModelServer",
    "Step",
    "call",
    "evidence_refs",
    "reply",
    "tool_results",
]

_SESSION = re.compile(r"infomark session: (\S+)")


@dataclass(frozen=True, slots=True)
class Request:
    session: str
    body: dict[str, Any]
    authorization: str | None

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return msgs if isinstance(msgs, list) else []

    @property
    def conversation(self) -> list[dict[str, Any]]:
        """The messages without the runner's context view (the request's last message when
        there is one: it is sent with every request and never kept in the history)."""
        msgs = self.messages
        tail = msgs[-1] if msgs else {}
        context = tail.get("role") == "user" and str(tail.get("content") or "").startswith(
            CONTEXT_HEADER
        )
        return msgs[:-1] if context else msgs

    @property
    def last(self) -> dict[str, Any]:
        """The conversation's last message (``{}`` when there is none)."""
        conv = self.conversation
        return conv[-1] if conv else {}

    def text(self) -> str:
        """Every message's content, joined (for ``in`` checks)."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)


@dataclass(frozen=True, slots=True)
class Fail:
    status: int = 503
    body: str = "overloaded"


Step = Mapping[str, Any] | Callable[[Request], Mapping[str, Any]] | Fail


def reply(content: str = "", *calls: Mapping[str, Any]) -> dict[str, Any]:
    """An assistant message with ``content`` and tool ``calls`` (from :func:`call`)."""
    msg: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        msg["tool_calls"] = [dict(c) for c in calls]
    return msg


_ids = iter(range(1, 1 << 62))


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    """A tool call of ``tool`` with ``arguments`` (as the model writes it: JSON text)."""
    return {
        "id": f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(arguments)},
    }


def tool_results(req: Request) -> list[str]:
    """The tool results since the last assistant message, in order."""
    out: list[str] = []
    for m in reversed(req.messages):
        if m.get("role") == "assistant":
            break
        if m.get("role") == "tool":
            out.append(str(m.get("content") or ""))
    return out[::-1]


def evidence_refs(req: Request) -> list[str]:
    """The evidence refs of the tool results since the last assistant message, in order."""
    return [m.group(1) for text in tool_results(req) for m in TAGGED_REF.finditer(text)]


@dataclass
class _State:
    scripts: dict[str, list[Step]]
    default: Step
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class ScriptedModelServer:
    """``with ScriptedModelServer({"s1": [reply("hi")]}) as srv: srv.url`` → ``…/v1``."""

    def __init__(
        self,
        scripts: Mapping[str, Sequence[Step]] | None = None,
        *,
        default: Step | None = None,
    ) -> None:
        self.state = _State(
            {k: list(v) for k, v in (scripts or {}).items()},
            default if default is not None else reply("Nothing more to do."),
        )
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                session = ""
                for m in body.get("messages") or []:
                    if m.get("role") == "system":
                        found = _SESSION.search(str(m.get("content") or ""))
                        session = found.group(1) if found else ""
                        break
                req = Request(session, body, self.headers.get("authorization"))
                with state.lock:
                    state.requests.append(req)
                    queue = state.scripts.get(session)
                    step = queue.pop(0) if queue else state.default
                if isinstance(step, Fail):
                    self._send(step.status, {"error": {"message": step.body}})
                    return
                try:
                    msg = dict(step(req) if callable(step) else step)
                except Exception as exc:  # a script assertion: answer 500 with the reason
                    self._send(500, {"error": {"message": f"script step failed: {exc!r}"}})
                    return
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(state.requests)}",
                        "object": "chat.completion",
                        "model": body.get("model", "scripted"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", **msg},
                                "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": 100,
                            "completion_tokens": 20,
                            "total_tokens": 120,
                        },
                    },
                )

            def _send(self, status: int, payload: Mapping[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[Request]:
        with self.state.lock:
            return list(self.state.requests)

    def add(self, session: str, *steps: Step) -> None:
        with self.state.lock:
            self.state.scripts.setdefault(session, []).extend(steps)

    def remaining(self, session: str) -> int:
        with self.state.lock:
            return len(self.state.scripts.get(session, []))

    def start(self) -> ScriptedModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""The Claude Code hook route, served ahead of Starlette's stack (pure ASGI middleware).

``POST /v1/hooks/claude-code`` is called on every tool call of every session the service
serves, twice; every other route is called now and then. Through Starlette, each call also
paid for its exception middleware, the router's match over every route, a ``Request`` and
a ``Response`` object and their header parsing: measured with ``python -m
bench.http_concurrent --icount``, 4.42 M instructions per hook request through Starlette
against 4.31 M here (-2.5 %; the hook's own work is the same call,
:meth:`~infomark.tools.service._Service.hook_answer`).

What the route promises is unchanged: the bearer token checked in constant time (401 and
the same JSON error otherwise), a body over the limit refused with 413 before it is read
whole, every failure a JSON error and never a traceback (an unexpected one is logged),
and the answer the Starlette route gives (which still serves the OpenAPI document's
description of it and any other method on the path).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from infomark.tools.routes import API_PREFIX
from infomark.tools.service_auth import UNAUTHORIZED, bearer_valid
from infomark.tools.service_io import api_error_of, error_body, read_capped

__all__ = ["HOOK_PATH", "PROJECT_HEADER", "HookRoute"]

HOOK_PATH = API_PREFIX + "/hooks/claude-code"
PROJECT_HEADER = "x-claude-project-dir"
"""The header that names the hook's project (the forwarder sends it), over the payload's
``cwd``."""
_PROJECT = PROJECT_HEADER.encode("latin-1")

Answer = Callable[[bytes, "str | None"], Awaitable[bytes]]
"""``answer(raw_body, project_header)``: the response body of one hook call."""


class HookRoute:
    """Pure ASGI middleware: ``POST`` on :data:`HOOK_PATH` answered by ``answer``; every
    other request goes on to ``app``."""

    def __init__(self, app: ASGIApp, *, token: str, limit: int, answer: Answer) -> None:
        self.app = app
        self._token = token.encode()
        self._limit = limit
        self._answer = answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != HOOK_PATH or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if not bearer_valid(headers, self._token):
            body = error_body("unauthorized", UNAUTHORIZED)
            await _send(send, 401, body, ((b"www-authenticate", b"Bearer"),))
            return
        try:
            raw = await self._read(headers, receive)
            if raw is None:
                return  # the client went away
            project = next((v.decode("latin-1") for k, v in headers if k == _PROJECT), None)
            body = await self._answer(raw, project)
        except Exception as exc:
            err = api_error_of(exc, "POST", HOOK_PATH)
            await _send(send, err.status, error_body(err.code, err.message, err.details))
            return
        await _send(send, 200, body)

    async def _read(self, headers: list[tuple[bytes, bytes]], receive: Receive) -> bytes | None:
        """The whole body (:func:`~infomark.tools.service_io.read_capped`: 413 past the
        limit), or None when the client disconnected."""
        declared = next((v.decode("latin-1") for k, v in headers if k == b"content-length"), None)
        gone = False

        async def chunks() -> AsyncIterator[bytes]:
            nonlocal gone
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone = True
                    return
                yield message.get("body", b"")
                if not message.get("more_body", False):
                    return

        raw = await read_capped(declared, chunks(), self._limit)
        return None if gone else raw


async def _send(
    send: Send, status: int, body: bytes, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    headers = [
        (b"content-length", str(len(body)).encode("ascii")),
        (b"content-type", b"application/json"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

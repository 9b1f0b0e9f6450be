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

import logging
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from infomark.kernel.errors import InfomarkError
from infomark.tools.routes import API_PREFIX
from infomark.tools.service_auth import bearer_valid
from infomark.tools.service_io import INTERNAL, ApiError, error_body, infomark_api_error

__all__ = ["HOOK_PATH", "HookRoute"]

HOOK_PATH = API_PREFIX + "/hooks/claude-code"
PROJECT_HEADER = b"x-claude-project-dir"

log = logging.getLogger("infomark.service")

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
            await _send(send, 401, _unauthorized(), ((b"www-authenticate", b"Bearer"),))
            return
        try:
            raw = await self._read(headers, receive)
            if raw is None:
                return  # the client went away
            project = next((v.decode("latin-1") for k, v in headers if k == PROJECT_HEADER), None)
            body = await self._answer(raw, project)
        except ApiError as exc:
            await _send(send, exc.status, error_body(exc.code, exc.message, exc.details))
            return
        except InfomarkError as exc:
            err = infomark_api_error(exc)
            await _send(send, err.status, error_body(err.code, err.message))
            return
        except Exception as exc:
            log.error("internal error on POST %s", HOOK_PATH, exc_info=exc)
            await _send(send, 500, error_body("internal_error", INTERNAL))
            return
        await _send(send, 200, body)

    async def _read(self, headers: list[tuple[bytes, bytes]], receive: Receive) -> bytes | None:
        """The whole body, or None when the client disconnected; 413 past the limit."""
        for name, value in headers:
            if name == b"content-length" and value.isdigit() and int(value) > self._limit:
                raise ApiError(
                    413, "body_too_large", f"the request body exceeds {self._limit} bytes"
                )
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._limit:
                raise ApiError(
                    413, "body_too_large", f"the request body exceeds {self._limit} bytes"
                )
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _unauthorized() -> bytes:
    return error_body(
        "unauthorized",
        "missing or invalid bearer token: send 'Authorization: Bearer <token>' "
        "with the token from <home>/token",
    )


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

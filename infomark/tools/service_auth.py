"""The HTTP service's edge: the bearer-token check and the JSON error pages.

Pure ASGI middleware and Starlette exception handlers, used by
:func:`infomark.tools.service.create_app`. The token is compared in constant time; every
error is ``{"error": {"code", "message"}}`` (:mod:`infomark.tools.service_io`).
"""

from __future__ import annotations

import hmac

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from infomark.tools.routes import API_PREFIX
from infomark.tools.service_io import INTERNAL, error_response

__all__ = ["UNAUTHORIZED", "BearerAuth", "bearer_valid", "http_error", "internal_error"]

UNAUTHORIZED = (
    "missing or invalid bearer token: send 'Authorization: Bearer <token>' "
    "with the token from <home>/token"
)


def bearer_valid(headers: list[tuple[bytes, bytes]], token: bytes) -> bool:
    """Whether the ASGI ``headers`` carry ``Authorization: Bearer <token>`` (constant time)."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, given = value.partition(b" ")
            if scheme.lower() != b"bearer":
                return False
            return hmac.compare_digest(given.strip(), token)
    return False


class BearerAuth:
    """Pure ASGI middleware: a valid bearer token on every route but ``GET /v1/health``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._open(scope) or self._valid(scope):
            await self.app(scope, receive, send)
            return
        response = error_response(
            401, "unauthorized", UNAUTHORIZED, headers={"www-authenticate": "Bearer"}
        )
        await response(scope, receive, send)

    @staticmethod
    def _open(scope: Scope) -> bool:
        return scope["path"] == API_PREFIX + "/health" and scope["method"] in ("GET", "HEAD")

    def _valid(self, scope: Scope) -> bool:
        return bearer_valid(scope["headers"], self._token)


async def http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return error_response(
            404, "not_found", f"no route {request.url.path}; see GET /v1/openapi.json"
        )
    if status == 405:
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None
        return error_response(
            405,
            "method_not_allowed",
            f"{request.method} is not allowed on {request.url.path}",
            headers=headers,
        )
    detail = exc.detail if isinstance(exc, HTTPException) else INTERNAL
    return error_response(status, "http_error", str(detail))


async def internal_error(request: Request, exc: Exception) -> Response:
    # Only middleware bugs get here; the server logs the traceback after this response.
    return error_response(500, "internal_error", INTERNAL)

"""The HTTP service's wire helpers: JSON in and out, errors, the NDJSON stream, hook bodies.

Every error the service sends is ``{"error": {"code", "message"}}`` (plus ``details``
for invalid fields), never a traceback: :func:`guarded` turns every failure of an
endpoint into one, and logs the unexpected ones server-side only.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from infomark.kernel.errors import InfomarkError, StoreBusyError, UserError, VerificationError
from infomark.kernel.session_id import InvalidSessionError, check_session_id
from infomark.ledger.calls import ToolOutcome
from infomark.ledger.evidence import Evidence
from infomark.tools.api_models import RecordRequest

__all__ = [
    "INTERNAL",
    "ApiError",
    "NdjsonStream",
    "api_error_of",
    "checked",
    "error_body",
    "error_response",
    "evidence_body",
    "guarded",
    "hook_http_body",
    "json_body",
    "json_response",
    "path_session",
    "query_bool",
    "query_int",
    "read_body",
    "read_capped",
    "read_model",
    "record_outcome",
]

log = logging.getLogger("infomark.service")
M = TypeVar("M", bound=BaseModel)
INTERNAL = "internal server error (the details are in the service's log)"


class ApiError(Exception):
    """An error answer: HTTP ``status``, a stable ``code``, a message saying how to fix it."""

    def __init__(
        self, status: int, code: str, message: str, details: list[dict[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def json_body(data: Any) -> bytes:
    """A response body: compact JSON, ASCII-escaped (a lone surrogate in a tool input must
    not break the encoder)."""
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode()


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = json_body(data)
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def _error(code: str, message: str, details: list[dict[str, str]] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return {"error": body}


def error_body(code: str, message: str, details: list[dict[str, str]] | None = None) -> bytes:
    """The body of an error: ``{"error": {"code", "message"[, "details"]}}``."""
    return json_body(_error(code, message, details))


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    return json_response(_error(code, message, details), status=status, headers=headers)


def _validation_error(exc: ValidationError) -> ApiError:
    details = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(body)"
        details.append({"loc": loc, "msg": str(err["msg"]), "type": str(err["type"])})
    summary = "; ".join(f"{d['loc']}: {d['msg']}" for d in details[:5])
    return ApiError(400, "invalid_request", f"invalid request body: {summary}", details)


def _infomark_error(exc: InfomarkError) -> ApiError:
    if isinstance(exc, UserError):
        return ApiError(400, exc.code, str(exc))
    if isinstance(exc, StoreBusyError):
        return ApiError(503, exc.code, str(exc))
    if isinstance(exc, VerificationError):  # e.g. a merge of a fork that does not verify
        return ApiError(409, exc.code, str(exc))
    return ApiError(500, exc.code, str(exc))


def api_error_of(exc: Exception, method: str, path: str) -> ApiError:
    """What a failed request answers: its :class:`ApiError`, an infomark error's status and
    code, else a 500 whose text says nothing of it (the error is logged with its traceback)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, InfomarkError):
        return _infomark_error(exc)
    log.error("internal error on %s %s", method, path, exc_info=exc)
    return ApiError(500, "internal_error", INTERNAL)


def guarded(
    fn: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """Turn every failure of an endpoint into a JSON error; log unexpected ones."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except Exception as exc:
            err = api_error_of(exc, request.method, request.url.path)
            return error_response(err.status, err.code, err.message, err.details)

    return endpoint


# -- reading requests ----------------------------------------------------------------------
def path_session(request: Request) -> str:
    """The ``{session}`` path parameter, checked by the shared rule (400 otherwise)."""
    try:
        return check_session_id(str(request.path_params["session"]))
    except InvalidSessionError as exc:
        raise ApiError(400, exc.code, str(exc)) from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


async def read_body(request: Request, limit: int) -> bytes:
    return await read_capped(request.headers.get("content-length"), request.stream(), limit)


async def read_capped(declared: str | None, chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """A request body from its ``chunks``, refused with 413 when its declared length
    (``content-length``) or what arrives passes ``limit``, before it is read whole."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        parts.append(chunk)
    return b"".join(parts)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "body_too_large", f"the request body exceeds {limit} bytes")


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "bad_json", f"the request body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise ApiError(400, "bad_json", "the request body is nested too deeply") from exc


async def read_model(request: Request, model: type[M], limit: int) -> M:
    raw = await read_body(request, limit)
    data = _parse_json(raw) if raw.strip() else {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc) from exc


def query_bool(request: Request, name: str, default: bool) -> bool:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    low = value.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ApiError(
        400, "invalid_request", f"query.{name}: expected 1/0 or true/false, got {value!r}"
    )


def query_int(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if not value.isdigit():
        raise ApiError(
            400, "invalid_request", f"query.{name}: expected a non-negative integer, got {value!r}"
        )
    return int(value)


# -- writing responses ---------------------------------------------------------------------
def checked(model: type[BaseModel], data: dict[str, Any]) -> Response:
    """Validate a response against its model (a mismatch is a server bug: 500)."""
    model.model_validate(data)
    return json_response(data)


def evidence_body(evidence: Evidence) -> dict[str, Any]:
    """The JSON body of an evidence (``GET …/evidence/{ref}``, ``POST …/record``)."""
    return {
        "evidence_ref": evidence.ref,
        "tool": evidence.tool,
        "evidence_class": evidence.evidence_class.value,
        "outcome": evidence.outcome.value,
        "eligible_for": list(evidence.eligible_for),
        "output_digest": evidence.output_digest,
        "tag": evidence.tag,
        "session": evidence.session,
        "seq": evidence.seq,
        "tool_call_id": evidence.tool_call_id,
        "command": evidence.command,
        "exit_code": evidence.exit_code,
        "tool_class": evidence.tool_class,
        "record": dict(evidence.record),
    }


def _block_body(event: str, reason: str) -> dict[str, Any]:
    """The JSON a command hook's exit 2 (stderr = reason) stands for, per event."""
    if event == "PreToolUse":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    if event == "PermissionRequest":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        }
    return {"decision": "block", "reason": reason}


def hook_http_body(
    payload: Any, stdout: dict[str, Any] | None, exit_code: int, stderr: str
) -> dict[str, Any]:
    """Map a command-hook answer to the 2xx JSON body of a Claude Code HTTP hook.

    Exit 0: the stdout object, or ``{}`` (no opinion). Exit 2 (blocking): the deny /
    block JSON for the event, with stderr as the reason. Any other exit code is a
    non-blocking error: ``{}``, with stderr as a ``systemMessage`` for the user.
    """
    event = payload.get("hook_event_name") if isinstance(payload, dict) else None
    if exit_code == 0:
        return stdout if stdout is not None else {}
    if exit_code == 2:
        reason = stderr.strip() or "blocked by infomark"
        return _block_body(event if isinstance(event, str) else "PreToolUse", reason)
    return {"systemMessage": stderr.strip()} if stderr.strip() else {}


class NdjsonStream(Response):
    """Stream JSON lines until the generator ends or the client disconnects."""

    media_type = "application/x-ndjson"

    def __init__(self, lines: AsyncGenerator[bytes, None]) -> None:
        self._lines = lines
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-store", "x-content-type-options": "nosniff"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                await self._stream(send)
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._lines.aclose()

    async def _stream(self, send: Send) -> None:
        start: Message = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        try:
            await send(start)
            async for line in self._lines:
                await send({"type": "http.response.body", "body": line, "more_body": True})
        except OSError:
            return  # the client went away
        except Exception as exc:  # headers are sent: end the stream, log server-side
            log.error("events stream failed", exc_info=exc)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def record_outcome(body: RecordRequest) -> ToolOutcome:
    """The tool outcome a record body carries (``output_encoding: base64`` decoded)."""
    output: str | bytes = body.output
    if body.output_encoding == "base64":
        try:
            output = base64.b64decode(body.output, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ApiError(
                400, "invalid_request", "output: not valid base64 (output_encoding is base64)"
            ) from exc
    return ToolOutcome(
        output=output,
        exit_code=body.exit_code,
        error=body.error,
        duration_ms=body.duration_ms,
        is_error=body.is_error,
    )

"""The HTTP service (``infomark serve``): a Starlette app over per-session Gatekeepers.

Every route lives under ``/v1`` and needs ``Authorization: Bearer <token>`` (the
ledger home's ``token`` file) except ``GET /v1/health``. Bodies are validated with
pydantic models; every error is ``{"error": {"code", "message"}}``, never a
traceback (internal errors are logged server-side only).

One :class:`Gatekeeper` per session id, opened lazily on first use and kept. A
Gatekeeper is not safe for concurrent use, so each session's calls run one at a
time: an ``anyio.Lock`` queues them in arrival order on the event loop, then the
call runs in the threadpool under the session's ``threading.Lock``. Different
sessions run in parallel (SQLite serialises the commits).

The OpenAPI document is built by hand from :data:`OPERATIONS` and the models'
``model_json_schema()``; ``python -m infomark.tools.service openapi FILE`` writes it.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import importlib
import json
import logging
import re
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.gates.decision import Decision
from infomark.kernel.errors import InfomarkError, StoreBusyError, UserError
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence
from infomark.ledger.init import ensure_token
from infomark.ledger.journal import Journal
from infomark.ledger.keys import load_key

__all__ = [
    "API_PREFIX",
    "API_VERSION",
    "MAX_BODY_BYTES",
    "OPERATIONS",
    "SESSION_PATTERN",
    "ApproveRequest",
    "AuditOut",
    "AuthorizeRequest",
    "ContextOut",
    "DecisionOut",
    "ErrorOut",
    "EventOut",
    "FinishOut",
    "FinishRequest",
    "GateOut",
    "HealthOut",
    "HostReportRequest",
    "IngestOut",
    "IngestRequest",
    "InstructionsOut",
    "LedgerOut",
    "OkOut",
    "Operation",
    "RecordOut",
    "RecordRequest",
    "SessionOut",
    "SessionsOut",
    "StateOut",
    "TurnOut",
    "TurnRequest",
    "create_app",
    "evidence_body",
    "hook_http_body",
    "openapi_document",
    "openapi_json",
]

API_PREFIX = "/v1"
API_VERSION = "1.0.0"
MAX_BODY_BYTES = 10 * 1024 * 1024
SESSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
_SESSION_RE = re.compile(SESSION_PATTERN)
_EVENTS_BATCH = 500
_HOOK_MODULE = "infomark.tools.hooks.claude_code"

log = logging.getLogger("infomark.service")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


# -- request models ------------------------------------------------------------------------
class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IngestRequest(_Request):
    """Agent text to parse: claim_ledger blocks, stamps, divergences, gate lines."""

    text: str
    source: str = "assistant"
    cursor: tuple[str, int] | None = None
    dedupe: bool = False


ToolClassName = Literal[
    "read", "search", "web", "execute", "modify", "destructive", "ledger", "unknown"
]


class AuthorizeRequest(_Request):
    """A tool call the agent asks to run."""

    tool: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)
    tool_call_id: str | None = None
    annotations: dict[str, Any] | None = None
    tool_class: ToolClassName | None = None

    def call(self) -> ToolCall:
        return ToolCall(
            tool=self.tool,
            input=self.input,
            tool_call_id=self.tool_call_id,
            annotations=self.annotations,
        )


class RecordRequest(AuthorizeRequest):
    """A tool call and what it returned; ``output_encoding: base64`` carries bytes."""

    output: str = ""
    output_encoding: Literal["utf-8", "base64"] = "utf-8"
    exit_code: int | None = None
    error: str | None = None
    duration_ms: float | None = None
    is_error: bool = False

    def outcome(self) -> ToolOutcome:
        output: str | bytes = self.output
        if self.output_encoding == "base64":
            try:
                output = base64.b64decode(self.output, validate=True)
            except (binascii.Error, ValueError):
                raise _ApiError(
                    400, "invalid_request", "output: not valid base64 (output_encoding is base64)"
                ) from None
        return ToolOutcome(
            output=output,
            exit_code=self.exit_code,
            error=self.error,
            duration_ms=self.duration_ms,
            is_error=self.is_error,
        )


class FinishRequest(_Request):
    """The agent's final message; the answer says whether it may stop."""

    text: str = ""


class ApproveRequest(_Request):
    by: str = "operator"
    note: str = ""


class TurnRequest(_Request):
    prompt: str | None = None


class HostReportRequest(_Request):
    """Usage and compaction as the host (the agent runtime) reports them."""

    tokens_used: int | None = Field(default=None, ge=0)
    context_window: int | None = Field(default=None, ge=0)
    compacted: bool = False


# -- response models (extra keys pass through: the facade may add fields) ------------------
class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class Ungrounded(_Response):
    id: str
    status: str


class DecisionOut(_Response):
    decision: Literal["allow", "deny", "ask"]
    reason: str
    code: str
    tool: str
    tool_class: str
    families: list[str]
    gate: str
    ungrounded: list[Ungrounded]
    bypass: bool
    dryrun: bool
    profile: str
    decision_id: str
    why: list[str]
    instructions: str = ""


class FinishOut(_Response):
    allow: bool
    reason: str
    code: str
    stale: list[str]
    ungrounded: list[Ungrounded]
    completion_claimed: bool
    cap_reached: bool


class IngestOut(_Response):
    ledger_updated: bool
    claims: list[dict[str, Any]]
    demoted: list[str]
    stamps_applied: list[dict[str, Any]]
    stamps_rejected: list[dict[str, Any]]
    invalidated: list[dict[str, Any]]
    diagnostics: list[dict[str, Any]]
    gate_moves: list[dict[str, Any]]
    instructions: str = ""
    skipped: bool = False


class RecordOut(_Response):
    evidence_ref: str
    tool: str
    evidence_class: Literal["execution", "observation", "web", "ineligible"]
    outcome: Literal["PASS", "FAIL", "ERROR", "OBSERVED"]
    eligible_for: list[str]
    output_digest: str
    tag: str
    session: str
    seq: int
    tool_call_id: str | None
    command: str
    exit_code: int | None
    tool_class: str | None
    record: dict[str, Any]
    instructions: str = Field(
        default="", description="Instruction text to deliver with this tool result"
    )


class LedgerOut(_Response):
    session: str
    claims: list[dict[str, Any]]
    premises: list[str]
    open_questions: list[str]
    ungrounded: list[Ungrounded]
    grounded: bool
    gate: str
    has_ledger: bool


class GateOut(_Response):
    position: str
    allowed_moves: list[str]
    loop_budget: int
    budget_used: int
    profile: str


class SessionOut(_Response):
    session: str
    ledger: LedgerOut
    gate: GateOut


class SessionSummary(_Response):
    session: str
    events: int
    open: bool


class SessionsOut(_Response):
    sessions: list[SessionSummary]


class AuditOut(_Response):
    session: str
    claims: list[dict[str, Any]]
    premises: list[dict[str, Any]]
    open_questions: list[str]
    grounded: bool
    verified: bool | None
    events: int
    problems: list[dict[str, Any]]
    bypasses: list[dict[str, Any]]
    rejections: list[dict[str, Any]]
    gate: str
    key_id: str


class EventOut(_Response):
    """One line of ``GET /v1/sessions/{session}/events`` (JSON lines)."""

    session: str
    seq: int
    type: str
    payload: dict[str, Any]
    timestamp: str
    hash: str


class OkOut(_Response):
    ok: bool


class TurnOut(_Response):
    ok: bool
    context: str = Field(description="Context text for the next model call (may be empty)")


class ContextOut(_Response):
    context: str = Field(description="Active packs, working memory and a ledger summary")


class InstructionsOut(_Response):
    instructions: str = Field(description="Instruction packs that fired (may be empty)")


class StateOut(_Response):
    """The session's state document: ledger, gate, metrics and policy state."""

    session: str
    seq: int


class HealthOut(_Response):
    status: Literal["ok"]
    service: Literal["infomark"]
    api: str
    version: str


class ErrorDetail(_Response):
    loc: str
    msg: str
    type: str


class ErrorBody(_Response):
    code: str
    message: str
    details: list[ErrorDetail] | None = None


class ErrorOut(_Response):
    error: ErrorBody


class HookPayload(_Response):
    """A Claude Code hook payload, as Claude Code sends it (``hook_event_name`` …)."""


class HookResponse(_Response):
    """Claude Code hook output JSON; ``{}`` means no opinion."""


# -- errors --------------------------------------------------------------------------------
class _ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, details: list[dict[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    # ASCII-escaped: a lone surrogate in a tool input must not break the encoder.
    body = json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode()
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def _error_response(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return _json({"error": body}, status=status, headers=headers)


_INTERNAL = "internal server error (the details are in the service's log)"


def _validation_error(exc: ValidationError) -> _ApiError:
    details = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(body)"
        details.append({"loc": loc, "msg": str(err["msg"]), "type": str(err["type"])})
    summary = "; ".join(f"{d['loc']}: {d['msg']}" for d in details[:5])
    return _ApiError(400, "invalid_request", f"invalid request body: {summary}", details)


def _infomark_error(exc: InfomarkError) -> _ApiError:
    if isinstance(exc, UserError):
        return _ApiError(400, exc.code, str(exc))
    if isinstance(exc, StoreBusyError):
        return _ApiError(503, exc.code, str(exc))
    return _ApiError(500, exc.code, str(exc))


def _guarded(
    fn: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """Turn every failure of an endpoint into a JSON error; log unexpected ones."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except _ApiError as exc:
            return _error_response(exc.status, exc.code, exc.message, exc.details)
        except InfomarkError as exc:
            err = _infomark_error(exc)
            return _error_response(err.status, err.code, err.message)
        except Exception as exc:
            log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
            return _error_response(500, "internal_error", _INTERNAL)

    return endpoint


# -- the session pool ----------------------------------------------------------------------
@dataclass
class _Slot:
    queue: anyio.Lock = field(default_factory=anyio.Lock)  # arrival order, on the loop
    lock: threading.Lock = field(default_factory=threading.Lock)  # the Gatekeeper itself
    gk: Gatekeeper | None = None
    used: int = 0  # a logical clock, for closing the least recently used


class _SessionPool:
    """One lazily opened Gatekeeper per session id, each used by one thread at a time.

    At most ``max_open`` stay open: past that, the least recently used idle ones are
    closed (and reopened on their next call), so SQLite connections stay bounded.
    """

    def __init__(
        self, home: Path, root: Path, config: Config, profile: str | None, max_open: int
    ) -> None:
        self.home = home
        self.root = root
        self.config = config
        self.profile = profile
        self.max_open = max(1, max_open)
        self._slots: dict[str, _Slot] = {}
        self._clock = 0
        self._journal: Journal | None = None
        self._journal_lock = threading.Lock()
        self._hook_locks: dict[str, anyio.Lock] = {}

    def _slot(self, session: str) -> _Slot:
        # Only called on the event loop thread: the dict needs no lock.
        slot = self._slots.get(session)
        if slot is None:
            slot = self._slots[session] = _Slot()
        self._clock += 1
        slot.used = self._clock
        return slot

    async def run(self, session: str, fn: Callable[[Gatekeeper], T]) -> T:
        """Run ``fn(gatekeeper)`` in the threadpool, one call per session at a time."""
        slot = self._slot(session)
        try:
            async with slot.queue:
                return await anyio.to_thread.run_sync(self._call, slot, session, fn)
        finally:
            if sum(1 for s in self._slots.values() if s.gk is not None) > self.max_open:
                await self._close_idle()

    def _call(self, slot: _Slot, session: str, fn: Callable[[Gatekeeper], T]) -> T:
        with slot.lock:
            if slot.gk is None:
                slot.gk = Gatekeeper.open(
                    self.home, session, root=self.root, config=self.config, profile=self.profile
                )
            return fn(slot.gk)

    async def _close_idle(self) -> None:
        open_slots = [s for s in self._slots.values() if s.gk is not None]
        idle = sorted((s for s in open_slots if not s.queue.locked()), key=lambda s: s.used)
        for slot in idle[: len(open_slots) - self.max_open]:
            async with slot.queue:
                await anyio.to_thread.run_sync(self._close_slot, slot)

    @staticmethod
    def _close_slot(slot: _Slot) -> None:
        with slot.lock:
            if slot.gk is not None:
                slot.gk.close()
                slot.gk = None

    def hook_lock(self, key: str) -> anyio.Lock:
        lock = self._hook_locks.get(key)
        if lock is None:
            lock = self._hook_locks[key] = anyio.Lock()
        return lock

    async def summaries(self) -> list[dict[str, Any]]:
        opened = {s for s, slot in self._slots.items() if slot.gk is not None}
        return await anyio.to_thread.run_sync(self._summaries, opened)

    def _summaries(self, opened: set[str]) -> list[dict[str, Any]]:
        prefix = self.config.session_prefix
        with self._journal_lock:
            if self._journal is None:
                self._journal = Journal(self.home / "ledger.db", load_key(self.home))
            journal = self._journal
            names = {s[len(prefix) :]: s for s in journal.sessions() if s.startswith(prefix)}
            counts = {name: journal.last_seq(full) for name, full in names.items()}
        return [
            {"session": name, "events": counts.get(name, 0), "open": name in opened}
            for name in sorted(set(names) | opened)
        ]

    def close(self) -> None:
        for slot in self._slots.values():
            self._close_slot(slot)
        with self._journal_lock:
            if self._journal is not None:
                self._journal.close()
                self._journal = None


# -- request helpers -----------------------------------------------------------------------
def _session(request: Request) -> str:
    session = str(request.path_params["session"])
    if not _SESSION_RE.match(session):
        raise _ApiError(
            400,
            "invalid_session",
            f"session id {session[:80]!r} is not valid: use 1-128 characters from "
            "A-Z a-z 0-9 . _ : @ -, starting with a letter or digit",
        )
    return session


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _ApiError(413, "body_too_large", f"the request body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _ApiError(413, "body_too_large", f"the request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _ApiError(400, "bad_json", f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise _ApiError(400, "bad_json", "the request body is nested too deeply") from None


async def _model(request: Request, model: type[M], limit: int) -> M:
    raw = await _body(request, limit)
    data = _parse_json(raw) if raw.strip() else {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc) from None


def _query_bool(request: Request, name: str, default: bool) -> bool:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    low = value.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise _ApiError(
        400, "invalid_request", f"query.{name}: expected 1/0 or true/false, got {value!r}"
    )


def _query_int(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if not value.isdigit():
        raise _ApiError(
            400, "invalid_request", f"query.{name}: expected a non-negative integer, got {value!r}"
        )
    return int(value)


def _checked(model: type[BaseModel], data: dict[str, Any]) -> Response:
    """Validate a response against its model (a mismatch is a server bug: 500)."""
    model.model_validate(data)
    return _json(data)


def evidence_body(evidence: Evidence) -> dict[str, Any]:
    """The JSON body of ``POST …/record``: the ref, its tag and the signed record."""
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


# -- the NDJSON stream ---------------------------------------------------------------------
class _NdjsonStream(Response):
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


def _event_batch(gk: Gatekeeper, after: int) -> list[dict[str, Any]]:
    rows = gk.events(after=after)
    try:
        return [r.public() for r in islice(rows, _EVENTS_BATCH)]
    finally:
        close = getattr(rows, "close", None)  # release the SQLite cursor now
        if close is not None:
            close()


# -- the service ---------------------------------------------------------------------------
class _Service:
    def __init__(
        self, pool: _SessionPool, *, max_body_bytes: int, poll_seconds: float, stopping: Any
    ) -> None:
        self.pool = pool
        self.limit = max_body_bytes
        self.poll = poll_seconds
        self.stopping: threading.Event = stopping

    async def health(self, request: Request) -> Response:
        from infomark import __version__

        return _json(
            {"status": "ok", "service": "infomark", "api": API_VERSION, "version": __version__}
        )

    async def openapi(self, request: Request) -> Response:
        return _json(openapi_document())

    async def sessions(self, request: Request) -> Response:
        return _checked(SessionsOut, {"sessions": await self.pool.summaries()})

    async def session(self, request: Request) -> Response:
        s = _session(request)

        def view(gk: Gatekeeper) -> dict[str, Any]:
            return {"session": s, "ledger": gk.ledger().to_dict(), "gate": gk.gate().to_dict()}

        return _checked(SessionOut, await self.pool.run(s, view))

    async def ingest(self, request: Request) -> Response:
        s = _session(request)
        body = await _model(request, IngestRequest, self.limit)

        def go(gk: Gatekeeper) -> dict[str, Any]:
            report = gk.ingest(
                body.text, source=body.source, cursor=body.cursor, dedupe=body.dedupe
            )
            return {**report.to_dict(), "skipped": report.skipped}

        return _checked(IngestOut, await self.pool.run(s, go))

    async def authorize(self, request: Request) -> Response:
        s = _session(request)
        body = await _model(request, AuthorizeRequest, self.limit)
        call = body.call()

        def go(gk: Gatekeeper) -> Decision:
            return gk.authorize(call, tool_class=body.tool_class)

        return _checked(DecisionOut, (await self.pool.run(s, go)).to_dict())

    async def record(self, request: Request) -> Response:
        s = _session(request)
        body = await _model(request, RecordRequest, self.limit)
        call, outcome = body.call(), body.outcome()

        def go(gk: Gatekeeper) -> dict[str, Any]:
            evidence = gk.record(call, outcome, tool_class=body.tool_class)
            text = gk.after_tool_text(call, outcome, evidence)  # popped: delivered once, here
            return {**evidence_body(evidence), "instructions": text}

        return _checked(RecordOut, await self.pool.run(s, go))

    async def finish(self, request: Request) -> Response:
        s = _session(request)
        body = await _model(request, FinishRequest, self.limit)
        result = await self.pool.run(s, lambda gk: gk.can_finish(body.text))
        return _checked(FinishOut, result.to_dict())

    async def approve(self, request: Request) -> Response:
        s = _session(request)
        body = await _model(request, ApproveRequest, self.limit)
        await self.pool.run(s, lambda gk: gk.approve(by=body.by, note=body.note))
        return _json({"ok": True})

    async def turn(self, request: Request) -> Response:
        s = _session(request)
        body = await _model(request, TurnRequest, self.limit)
        context = await self.pool.run(s, lambda gk: gk.new_turn(body.prompt))
        return _checked(TurnOut, {"ok": True, "context": context or ""})

    async def host_report(self, request: Request) -> Response:
        s = _session(request)
        body = await _model(request, HostReportRequest, self.limit)

        def go(gk: Gatekeeper) -> str:
            return gk.host_report(
                tokens_used=body.tokens_used,
                context_window=body.context_window,
                compacted=body.compacted,
            )

        return _checked(InstructionsOut, {"instructions": await self.pool.run(s, go)})

    async def context(self, request: Request) -> Response:
        s = _session(request)
        budget = _query_int(request, "budget", 1200)
        text = await self.pool.run(s, lambda gk: gk.context_view(budget))
        return _checked(ContextOut, {"context": text})

    async def state(self, request: Request) -> Response:
        s = _session(request)
        return _checked(StateOut, await self.pool.run(s, lambda gk: gk.state_document()))

    async def gate(self, request: Request) -> Response:
        s = _session(request)
        return _checked(GateOut, (await self.pool.run(s, lambda gk: gk.gate())).to_dict())

    async def audit(self, request: Request) -> Response:
        s = _session(request)
        verify = _query_bool(request, "verify", True)
        report = await self.pool.run(s, lambda gk: gk.audit(verify=verify))
        return _checked(AuditOut, report.to_dict())

    async def events(self, request: Request) -> Response:
        s = _session(request)
        after = _query_int(request, "after", 0)
        follow = _query_bool(request, "follow", False)
        first = await self.pool.run(s, partial(_event_batch, after=after))  # errors: JSON

        async def lines() -> AsyncGenerator[bytes, None]:
            batch, last = first, after
            while True:
                for row in batch:
                    last = int(row["seq"])
                    yield json.dumps(row, ensure_ascii=True).encode() + b"\n"
                if len(batch) < _EVENTS_BATCH:
                    if not follow or self.stopping.is_set():
                        return  # a following stream ends cleanly when the server stops
                    await anyio.sleep(self.poll)  # poll the journal; writers never wait on us
                batch = await self.pool.run(s, partial(_event_batch, after=last))

        return _NdjsonStream(lines())

    async def claude_code_hook(self, request: Request) -> Response:
        raw = await _body(request, self.limit)
        try:
            payload: Any = json.loads(raw.decode("utf-8")) if raw.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            payload = None  # like the command hook: handle() answers a non-object payload
        try:
            module = importlib.import_module(_HOOK_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name and _HOOK_MODULE.startswith(exc.name):
                raise _ApiError(
                    501, "not_implemented", "this infomark has no Claude Code hook handler"
                ) from None
            raise
        handle: Callable[..., Any] = module.handle
        sid = payload.get("session_id") if isinstance(payload, dict) else None
        pool = self.pool
        # The project's config, not the one of the directory where `serve` started: the
        # forwarding hook names its project (the token already proves who is asking).
        named = request.headers.get("x-infomark-root")
        root = Path(named) if named and Path(named).is_dir() else pool.root
        async with pool.hook_lock(sid if isinstance(sid, str) else ""):
            answer = await anyio.to_thread.run_sync(
                partial(handle, payload, home=pool.home, root=root)
            )
        return _json(
            hook_http_body(payload, answer.stdout, int(answer.exit_code), str(answer.stderr))
        )


# -- the route table (drives both the router and the OpenAPI document) ---------------------
@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    path: str  # under API_PREFIX
    name: str  # the _Service method, and the OpenAPI operationId
    summary: str
    request: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    query: tuple[tuple[str, str, str], ...] = ()  # (name, type, description)
    auth: bool = True
    media_type: str = "application/json"


_S = "/sessions/{session}"
_OPEN = "(opens the session on first use)"
OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/health", "health", "Liveness (no token)", response=HealthOut, auth=False),
    Operation("GET", "/openapi.json", "openapi", "This OpenAPI document"),
    Operation("GET", "/sessions", "sessions", "Sessions in the ledger home", response=SessionsOut),
    Operation("GET", _S, "session", f"Ledger view and gate {_OPEN}", response=SessionOut),
    Operation("POST", _S + "/ingest", "ingest", "Ingest agent text", IngestRequest, IngestOut),
    Operation("POST", _S + "/authorize", "authorize", "Decide one tool call", AuthorizeRequest,
              DecisionOut),
    Operation("POST", _S + "/record", "record", "Record a tool result as evidence",
              RecordRequest, RecordOut),
    Operation("POST", _S + "/finish", "finish", "May the agent stop now?", FinishRequest,
              FinishOut),
    Operation("POST", _S + "/approve", "approve", "Record the G4 approval", ApproveRequest, OkOut),
    Operation("POST", _S + "/turn", "turn", "Start a user turn; context for the next model call",
              TurnRequest, TurnOut),
    Operation("POST", _S + "/host-report", "host_report", "Report token usage / compaction",
              HostReportRequest, InstructionsOut),
    Operation("GET", _S + "/context", "context", "Context text for the next model call",
              response=ContextOut,
              query=(("budget", "integer", "Size budget in characters (default 1200)"),)),
    Operation("GET", _S + "/state", "state", "The session's state document", response=StateOut),
    Operation("GET", _S + "/gate", "gate", "Gate position and loop budget", response=GateOut),
    Operation("GET", _S + "/audit", "audit", "Every claim's rank and why", response=AuditOut,
              query=(("verify", "boolean", "Verify hash chain and MACs (default 1)"),)),
    Operation("GET", _S + "/events", "events", "Journal events as JSON lines",
              response=EventOut, media_type="application/x-ndjson",
              query=(("after", "integer", "Start after this seq (default 0)"),
                     ("follow", "boolean", "Stream new events until disconnect (default 0)"))),
    Operation("POST", "/hooks/claude-code", "claude_code_hook",
              "Claude Code HTTP hook: answers like the command hook", HookPayload, HookResponse),
)  # fmt: skip


# -- the app -------------------------------------------------------------------------------
class _BearerAuth:
    """Pure ASGI middleware: a valid bearer token on every route but ``GET /v1/health``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._open(scope) or self._valid(scope):
            await self.app(scope, receive, send)
            return
        response = _error_response(
            401,
            "unauthorized",
            "missing or invalid bearer token: send 'Authorization: Bearer <token>' "
            "with the token from <home>/token",
            headers={"www-authenticate": "Bearer"},
        )
        await response(scope, receive, send)

    @staticmethod
    def _open(scope: Scope) -> bool:
        return scope["path"] == API_PREFIX + "/health" and scope["method"] in ("GET", "HEAD")

    def _valid(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                if scheme.lower() != b"bearer":
                    return False
                return hmac.compare_digest(given.strip(), self._token)
        return False


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return _error_response(
            404, "not_found", f"no route {request.url.path}; see GET /v1/openapi.json"
        )
    if status == 405:
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None
        return _error_response(
            405,
            "method_not_allowed",
            f"{request.method} is not allowed on {request.url.path}",
            headers=headers,
        )
    detail = exc.detail if isinstance(exc, HTTPException) else _INTERNAL
    return _error_response(status, "http_error", str(detail))


async def _internal(request: Request, exc: Exception) -> Response:
    # Only middleware bugs get here; the server logs the traceback after this response.
    return _error_response(500, "internal_error", _INTERNAL)


def create_app(
    home: Path | str,
    *,
    root: Path | str | None = None,
    profile: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    poll_seconds: float = 0.25,
    max_open_sessions: int = 128,
) -> Starlette:
    """The ASGI app of the service over the ledger home ``home``.

    ``root`` is the project directory (config lookup, artifacts; default: cwd).
    The bearer token is ``ensure_token(home)``, created on first use. At most
    ``max_open_sessions`` Gatekeepers stay open (least recently used closed first).
    ``app.state.stopping`` (a ``threading.Event``) ends following event streams:
    the server sets it when it starts shutting down.
    """
    home_p = Path(home)
    root_p = Path(root) if root is not None else Path.cwd()
    home_p.mkdir(parents=True, exist_ok=True)
    token = ensure_token(home_p)
    config = load_config(root_p, home_p)  # a broken config fails at startup, not per request
    pool = _SessionPool(home_p, root_p, config, profile, max_open_sessions)
    stopping = threading.Event()
    service = _Service(
        pool, max_body_bytes=max_body_bytes, poll_seconds=poll_seconds, stopping=stopping
    )
    routes = [
        Route(API_PREFIX + op.path, _guarded(getattr(service, op.name)), methods=[op.method])
        for op in OPERATIONS
    ]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(pool.close)

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error, 500: _internal},
    )
    app.add_middleware(_BearerAuth, token=token)
    app.state.stopping = stopping
    return app


# -- OpenAPI -------------------------------------------------------------------------------
def _error_responses(op: Operation) -> dict[str, Any]:
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
    out: dict[str, Any] = {}
    if op.request is not None or op.query or "{session}" in op.path:
        out["400"] = {"description": "Bad JSON, invalid fields or parameters", **ref}
    if op.auth:
        out["401"] = {"description": "Missing or invalid bearer token (unauthorized)", **ref}
    if op.request is not None:
        out["413"] = {"description": "Body too large (body_too_large)", **ref}
    out["500"] = {"description": "Internal error (internal_error)", **ref}
    return out


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the service, built from :data:`OPERATIONS`."""
    schemas: dict[str, Any] = {}

    def ref(model: type[BaseModel]) -> dict[str, Any]:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    ref(ErrorOut)
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        item: dict[str, Any] = {"operationId": op.name, "summary": op.summary}
        params: list[dict[str, Any]] = []
        if "{session}" in op.path:
            params.append(
                {
                    "name": "session",
                    "in": "path",
                    "required": True,
                    "description": "Session id (opened on first use)",
                    "schema": {"type": "string", "pattern": SESSION_PATTERN},
                }
            )
        for name, typ, desc in op.query:
            schema: dict[str, Any] = {"type": typ}
            if typ == "integer":
                schema["minimum"] = 0
            params.append(
                {"name": name, "in": "query", "required": False, "description": desc,
                 "schema": schema}
            )  # fmt: skip
        if params:
            item["parameters"] = params
        if op.request is not None:
            item["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": ref(op.request)}},
            }
        ok: dict[str, Any] = {"description": "OK"}
        if op.response is not None:
            ok["content"] = {op.media_type: {"schema": ref(op.response)}}
        else:
            ok["content"] = {op.media_type: {"schema": {"type": "object"}}}
        item["responses"] = {"200": ok, **_error_responses(op)}
        if not op.auth:
            item["security"] = []
        paths.setdefault(API_PREFIX + op.path, {})[op.method.lower()] = item
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "infomark",
            "version": API_VERSION,
            "description": "The infomark gatekeeper over HTTP: one ledger home, sessions "
            "opened on first use. Every route but GET /v1/health needs "
            "'Authorization: Bearer <token>' (the token is in <home>/token). Errors are "
            '{"error": {"code", "message"}}.',
        },
        "servers": [{"url": "http://127.0.0.1:8765"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": dict(sorted(schemas.items())),
        },
    }


def openapi_json() -> str:
    """The document as checked in at ``docs/openapi.json`` (stable text)."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


def _main(argv: list[str]) -> int:
    if argv[:1] == ["openapi"] and len(argv) <= 2:
        text = openapi_json()
        if len(argv) == 2:
            Path(argv[1]).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        return 0
    print("usage: python -m infomark.tools.service openapi [FILE]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))

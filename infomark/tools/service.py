"""The HTTP service (``infomark serve``): a Starlette app over a pool of sessions.

Every route lives under ``/v1`` and needs ``Authorization: Bearer <token>`` (the
ledger home's ``token`` file) except ``GET /v1/health``. The routes are the table
:data:`~infomark.tools.routes.OPERATIONS` (which also drives the OpenAPI document and
both clients); each is the :class:`_Service` method of its name. Bodies are the models
of :mod:`infomark.tools.api_models`; every error is ``{"error": {"code", "message"}}``,
never a traceback (:mod:`infomark.tools.service_io`). Sessions come from the pool of
:mod:`infomark.tools.service_pool`, the Claude Code hook route's included: no request
reopens a session.

``python -m infomark.tools.service openapi FILE`` writes the OpenAPI document.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from infomark._version import __version__
from infomark.gatekeeper import Gatekeeper
from infomark.gates import feed_local
from infomark.gates.config import Config, load_config
from infomark.kernel.profiles import Profile
from infomark.kernel.session_id import is_session_id
from infomark.ledger.home import ensure_private_dir
from infomark.ledger.init import ensure_token
from infomark.ledger.store.blobs import SMALL
from infomark.ledger.store.select import pick_store, resolve_store
from infomark.tools.api_models import (
    ApproveRequest,
    AuditOut,
    AuthorizeRequest,
    CheckOut,
    CheckRequest,
    ClassifyOut,
    ClassifyRequest,
    ContextOut,
    DecisionOut,
    EvidenceOut,
    FinishOut,
    FinishRequest,
    ForkOut,
    ForkRequest,
    GateOut,
    HostReportRequest,
    IngestOut,
    IngestRequest,
    InstructionsOut,
    MergeOut,
    MergeRequest,
    MoveOut,
    MoveRequest,
    RecordOut,
    RecordRequest,
    SendOut,
    SendRequest,
    SessionOut,
    SessionsOut,
    StateOut,
    TurnOut,
    TurnRequest,
)
from infomark.tools.checkpointer import Checkpointer
from infomark.tools.hooks.check_call import check_target
from infomark.tools.hooks.claude_code import handle as handle_hook
from infomark.tools.hooks.sandboxed import WARNED_CURSOR, AgentSandbox, warning
from infomark.tools.openapi import main as _openapi_main
from infomark.tools.openapi import openapi_document, openapi_json
from infomark.tools.operator_token import check_operator, operator_token
from infomark.tools.protocol import SessionLike
from infomark.tools.routes import API_PREFIX, API_VERSION, OPERATIONS, SESSION_PATTERN, Operation
from infomark.tools.service_auth import BearerAuth, http_error, internal_error
from infomark.tools.service_hook_route import PROJECT_HEADER, HookRoute
from infomark.tools.service_io import (
    ApiError,
    NdjsonStream,
    checked,
    evidence_body,
    guarded,
    hook_http_body,
    json_body,
    json_response,
    path_session,
    query_bool,
    query_int,
    read_body,
    read_model,
    record_outcome,
)
from infomark.tools.service_pool import SessionPool
from infomark.tools.service_transcript import TranscriptWait
from infomark.tools.service_warm import warm

__all__ = [
    "API_PREFIX",
    "API_VERSION",
    "HTTP_HOST",
    "MAX_BODY_BYTES",
    "OPERATIONS",
    "PROJECT_HEADER",
    "SESSION_PATTERN",
    "Operation",
    "create_app",
    "declared_sandbox",
    "evidence_body",
    "hook_http_body",
    "openapi_document",
    "openapi_json",
]

MAX_BODY_BYTES = 10 * 1024 * 1024
"""An http hook may send ``$CLAUDE_PROJECT_DIR`` in this header; it wins over ``cwd``."""
_EVENTS_BATCH = 500
_guarded = guarded  # the name the tests (and older callers) use


def _event_batch(gk: SessionLike, after: int) -> list[dict[str, Any]]:
    rows = gk.events(after=after)
    try:
        return [r.public() for r in islice(rows, _EVENTS_BATCH)]
    finally:
        close = getattr(rows, "close", None)  # release the SQLite cursor now
        if close is not None:
            close()


def _hook_root(project: str | None, payload: Any, default: Path) -> Path:
    """The project a hook payload belongs to: the project header, else ``cwd``, else ours.

    Only an absolute path to an existing directory counts; anything else falls back to
    the service's own root (whose configuration then applies).
    """
    candidates: list[object] = [project]
    if isinstance(payload, dict):
        candidates.append(payload.get("cwd"))
    for value in candidates:
        if not isinstance(value, str) or not value or "\x00" in value:
            continue
        if os.path.isabs(value) and os.path.isdir(value):
            return Path(os.path.realpath(value))
    return default


_SHORT_EVENTS = frozenset({"PreToolUse", "PostToolUse"})


def _short_hook_call(event: str, payload: dict[str, Any], size: int) -> bool:
    """Whether a hook call is one of the few-millisecond kind the pool may run on the event
    loop (:meth:`SessionPool.run`'s ``short``): a PreToolUse or PostToolUse whose body is no
    larger than a tool output stored as a row (a larger one is hashed and written as a file,
    with an fsync), other than ``infomark check`` (an attested run: minutes). The finish, a
    session's start and everything else run in the lane's threads."""
    if event not in _SHORT_EVENTS or size > SMALL:
        return False
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if isinstance(tool, str) and isinstance(tool_input, dict):
        return check_target(tool, tool_input) is None
    return True


def _small(request: Request) -> bool:
    """Whether an API call (classify, authorize, record) is short in the sense of
    :func:`_short_hook_call`: its body, by its ``Content-Length``, no larger than a tool
    output stored as a row. A chunked body (no length) runs in the lane's threads."""
    length = request.headers.get("content-length", "")
    return length.isascii() and length.isdigit() and int(length) <= SMALL


HTTP_HOST = "http"
"""The ``host`` of the ``agent_sandbox`` status the service's own routes record."""


def declared_sandbox(declaration: str | None) -> AgentSandbox:
    """Whether the agent's commands run sandboxed, as the operator declared it when the service
    started (``--agent-sandbox HOW``); without a declaration, not sandboxed. Nothing a request
    carries changes it: the agent's own commands cannot vouch for their sandbox. A declared
    sandbox is journaled only where it ends a "not sandboxed" span these routes recorded; a
    session with no status counts its runs already (as the Python API's caller vouches)."""
    if declaration is not None and declaration.strip():
        how = " ".join(declaration.split())[:300]
        return AgentSandbox(
            True, HTTP_HOST, f"declared by the operator at the service's start: {how}"
        )
    return AgentSandbox(
        False,
        HTTP_HOST,
        "the HTTP service was started without --agent-sandbox, so nothing shows that the "
        "agent's commands run in an OS sandbox that hides the ledger home",
        "run the agent's commands in an OS sandbox that hides the ledger home (as `infomark "
        "run` does), then restart the service as `infomark serve --agent-sandbox 'HOW'`",
    )


class _Service:
    """One method per route of :data:`OPERATIONS` (the router calls them by name)."""

    def __init__(
        self,
        pool: SessionPool,
        *,
        max_body_bytes: int,
        poll_seconds: float,
        stopping: Any,
        operator_token: str | None = None,
        agent_sandbox: AgentSandbox | None = None,
    ) -> None:
        self.pool = pool
        self.operator_token = operator_token
        self.limit = max_body_bytes
        self.poll = poll_seconds
        self.stopping: threading.Event = stopping
        self.sandbox = agent_sandbox if agent_sandbox is not None else declared_sandbox(None)

    def _sandbox(self, gk: SessionLike) -> str:
        """Journal the operator's declaration for a session these routes drive, before what
        they record, and say so once per span while the agent's commands are not known to be
        sandboxed (the warning goes with the answer, for the model and the user). A status a
        hook host judged (the hook route reads the host's settings) is kept, unless it says
        "sandboxed" and the service has no declaration: these routes never turn a session
        to "sandboxed" without the operator."""
        box = gk.state.agent_sandbox
        mine = self.sandbox
        if box and box.get("host") != HTTP_HOST and (mine.sandboxed or not box.get("sandboxed")):
            return ""
        if not box and mine.sandboxed:
            return ""  # nothing recorded counts the runs already: the operator vouches for them
        gk.record_sandbox(mine.sandboxed, host=mine.host, detail=mine.detail, fix=mine.fix)
        if mine.sandboxed:
            return ""
        state = gk.state
        since = state.unsandboxed[-1][0] if state.unsandboxed else 0
        if state.cursors.get(WARNED_CURSOR) == since:
            return ""
        gk.store_cursor(WARNED_CURSOR, since)
        return warning(mine, enforcing=gk.config.profile.enforcing)

    async def health(self, request: Request) -> Response:
        return json_response(
            {
                "status": "ok",
                "service": "infomark",
                "api": API_VERSION,
                "version": __version__,
                "pid": os.getpid(),  # which process answered (``serve --workers``: which worker)
            }
        )

    async def openapi(self, request: Request) -> Response:
        return json_response(openapi_document())

    async def sessions(self, request: Request) -> Response:
        return checked(SessionsOut, {"sessions": await self.pool.summaries()})

    async def session(self, request: Request) -> Response:
        s = path_session(request)

        def view(gk: SessionLike) -> dict[str, Any]:
            return {"session": s, "ledger": gk.ledger().to_dict(), "gate": gk.gate().to_dict()}

        return checked(SessionOut, await self.pool.run(s, view))

    async def ingest(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, IngestRequest, self.limit)

        def go(gk: SessionLike) -> dict[str, Any]:
            report = gk.ingest(
                body.text, source=body.source, cursor=body.cursor, dedupe=body.dedupe
            )
            return {**report.to_dict(), "skipped": report.skipped}

        return checked(IngestOut, await self.pool.run(s, go))

    async def classify(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, ClassifyRequest, self.limit)
        call = body.call()
        cls_, families, reasons = await self.pool.run(
            s, lambda gk: gk.classify(call, body.tool_class), short=_small(request)
        )
        data = {"tool_class": cls_, "families": list(families), "reasons": list(reasons)}
        return checked(ClassifyOut, data)

    async def authorize(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, AuthorizeRequest, self.limit)
        call = body.call()

        def go(gk: SessionLike) -> dict[str, Any]:
            said = self._sandbox(gk)
            out = gk.authorize(call, tool_class=body.tool_class).to_dict()
            if said:
                out["instructions"] = "\n\n".join(t for t in (said, out["instructions"]) if t)
            return out

        return checked(DecisionOut, await self.pool.run(s, go, short=_small(request)))

    async def record(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, RecordRequest, self.limit)
        call, outcome = body.call(), record_outcome(body)

        def go(gk: SessionLike) -> dict[str, Any]:
            said = self._sandbox(gk)  # before the evidence: its span decides what it grounds
            evidence = gk.record(
                call,
                outcome,
                tool_class=body.tool_class,
                cwd=body.cwd,
                background_id=body.background_id,
            )
            text = gk.after_tool_text(call, outcome, evidence)  # popped: delivered once, here
            text = "\n\n".join(t for t in (said, text) if t)
            return {**evidence_body(evidence), "instructions": text}

        return checked(RecordOut, await self.pool.run(s, go, short=_small(request)))

    async def evidence(self, request: Request) -> Response:
        s = path_session(request)
        ref = str(request.path_params["ref"])
        found = await self.pool.run(s, lambda gk: gk.evidence(ref))
        if found is None:
            raise ApiError(
                404,
                "unknown_evidence",
                f"session {s!r} has no evidence {ref[:80]!r}; refs come from the tags of "
                "recorded results ([infomark evidence_ref=ev_…])",
            )
        return checked(EvidenceOut, evidence_body(found))

    async def finish(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, FinishRequest, self.limit)
        result = await self.pool.run(s, lambda gk: gk.can_finish(body.text))
        return checked(FinishOut, result.to_dict())

    async def check(self, request: Request) -> Response:
        from infomark.tools.attest import CheckResult
        from infomark.tools.attest import check as attested_check

        s = path_session(request)
        body = await read_model(request, CheckRequest, self.limit)

        def run(gk: SessionLike) -> CheckResult:
            return attested_check(gk, body.claim_id)

        result = await self.pool.run(s, run)
        return checked(
            CheckOut,
            {
                "text": result.text,
                "evidence_ref": result.evidence.ref if result.evidence else None,
                "outcome": result.outcome,
                "status": result.status,
            },
        )

    async def approve(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, ApproveRequest, self.limit)
        check_operator(body.operator_token, self.operator_token)
        await self.pool.run(s, lambda gk: gk.approve(by=body.by, note=body.note))
        return json_response({"ok": True})

    async def turn(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, TurnRequest, self.limit)

        def go(gk: SessionLike) -> str:
            said = self._sandbox(gk)
            return "\n\n".join(t for t in (said, gk.new_turn(body.prompt)) if t)

        context = await self.pool.run(s, go)
        return checked(TurnOut, {"ok": True, "context": context or ""})

    async def move(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, MoveRequest, self.limit)
        return checked(MoveOut, await self.pool.run(s, lambda gk: gk.move(body.gate)))

    async def send(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, SendRequest, self.limit)
        home, session = self.pool.home, self.pool.config.session_prefix + s

        def go() -> dict[str, Any]:
            from infomark.ledger.inbox import Inbox, InboxRefused
            from infomark.ledger.keys import load_key
            from infomark.ledger.store.select import open_journal

            journal = open_journal(home, load_key(home), self.pool.store)
            inbox = Inbox(journal)
            try:
                got = inbox.send(session, body.message, sender=body.sender)
            except InboxRefused as exc:  # 409: nothing was delivered; the reason says why
                detail = [{"loc": "session", "msg": exc.reason, "type": "inbox_refused"}]
                raise ApiError(409, exc.code, str(exc), detail) from exc
            finally:
                inbox.close()
                journal.close()
            return {"delivered": True, "session": s, "message_id": got.message_id}

        return checked(SendOut, await anyio.to_thread.run_sync(go))

    async def host_report(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, HostReportRequest, self.limit)

        def go(gk: SessionLike) -> str:
            return gk.host_report(
                tokens_used=body.tokens_used,
                context_window=body.context_window,
                compacted=body.compacted,
            )

        return checked(InstructionsOut, {"instructions": await self.pool.run(s, go)})

    async def context(self, request: Request) -> Response:
        s = path_session(request)
        budget = query_int(request, "budget", 1200)
        text = await self.pool.run(s, lambda gk: gk.context_view(budget))
        return checked(ContextOut, {"context": text})

    async def compaction_context(self, request: Request) -> Response:
        s = path_session(request)
        text = await self.pool.run(s, lambda gk: gk.compaction_context())
        return checked(ContextOut, {"context": text})

    async def state(self, request: Request) -> Response:
        s = path_session(request)
        return checked(StateOut, await self.pool.run(s, lambda gk: gk.state_document()))

    async def gate(self, request: Request) -> Response:
        s = path_session(request)
        return checked(GateOut, (await self.pool.run(s, lambda gk: gk.gate())).to_dict())

    async def audit(self, request: Request) -> Response:
        s = path_session(request)
        verify = query_bool(request, "verify", True)
        report = await self.pool.run(s, lambda gk: gk.audit(verify=verify))
        return checked(AuditOut, report.to_dict())

    async def events(self, request: Request) -> Response:
        s = path_session(request)
        after = query_int(request, "after", 0)
        follow = query_bool(request, "follow", False)
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

        return NdjsonStream(lines())

    async def fork(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, ForkRequest, self.limit)

        def go(gk: SessionLike) -> dict[str, Any]:
            child = gk.fork(body.as_session, upto=body.upto)
            try:
                rows = [(r.type, r.payload) for r in child.events()]
            finally:
                child.close()  # the pool opens the fork on its first request
            first = rows[0][1]
            return {
                "session": body.as_session,
                "forked_from": s,
                "seq": first["seq"],
                "head_hash": first["head_hash"],
                "copied": len(rows) - 1,
            }

        return checked(ForkOut, await self.pool.run(s, go))

    async def merge(self, request: Request) -> Response:
        s = path_session(request)
        body = await read_model(request, MergeRequest, self.limit)
        result = await self.pool.run(s, lambda gk: gk.merge_from(body.from_session))
        result = {**result, "from": body.from_session, "into": s}  # without the prefix
        return checked(MergeOut, result)

    async def claude_code_hook(self, request: Request) -> Response:
        """Answer like the command hook (:meth:`hook_answer`)."""
        raw = await read_body(request, self.limit)
        body = await self.hook_answer(raw, request.headers.get(PROJECT_HEADER))
        return Response(body, media_type="application/json")

    async def hook_answer(self, raw: bytes, project: str | None) -> bytes:
        """The Claude Code hook route's answer to the body ``raw`` (JSON bytes), like the
        command hook's, with the payload project's configuration and the pooled session (a
        payload without a usable session id is answered unpooled). ``project``: the
        project header's value."""
        try:
            payload: Any = json.loads(raw.decode("utf-8")) if raw.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            payload = None  # like the command hook: handle() answers a non-object payload
        pool = self.pool
        root = _hook_root(project, payload, pool.root)
        sid = payload.get("session_id") if isinstance(payload, dict) else None
        event = payload.get("hook_event_name") if isinstance(payload, dict) else None
        if not isinstance(event, str) or not is_session_id(sid):
            answer = await anyio.to_thread.run_sync(
                partial(handle_hook, payload, home=pool.home, root=root)
            )
        else:
            config, error = await pool.project_config(root)
            line = TranscriptWait.of(event, payload)  # a PreToolUse waits for it off the lane

            def go(gk: SessionLike) -> Any:
                return handle_hook(
                    payload,
                    home=pool.home,
                    root=root,
                    gatekeeper=gk,
                    config_error=error,
                    # a broken configuration: an enforcing profile, as _profile reads it
                    profile=config.profile if error is None else Profile.LEDGER,
                    transcript_wait=None if line is None else line.left,
                )

            short = _short_hook_call(event, payload, len(raw))
            answer = await pool.run(
                str(sid), go, root=root, config=config, short=short, prepare=line
            )
        return json_body(
            hook_http_body(payload, answer.stdout, int(answer.exit_code), str(answer.stderr))
        )


# -- the app -------------------------------------------------------------------------------
def _lifespan(pool: SessionPool) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """Import the hook path's modules (:mod:`~infomark.tools.service_warm`: no hook call run
    on the loop pays for an import), hold the process's own change feeds
    (:mod:`~infomark.gates.feed_local`: a Bash call's compare asks them instead of ``lstat``ing
    every tracked file) and start the WAL checkpointer with the app; at shutdown close the
    sessions, the feeds, then stop it."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(warm, "sqlite" if pool.store == "sqlite" else "postgresql")
        feed_local.acquire()
        if pool.checkpointer is not None:
            pool.checkpointer.start()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(pool.close)
            feed_local.release()
            if pool.checkpointer is not None:
                await anyio.to_thread.run_sync(pool.checkpointer.stop)

    return lifespan


def create_app(
    home: Path | str,
    *,
    root: Path | str | None = None,
    profile: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    poll_seconds: float = 0.25,
    max_open_sessions: int = 128,
    operator_token_file: Path | str | None = None,
    operator_token_fd: int | None = None,
    agent_sandbox: str | None = None,
) -> Starlette:
    """The ASGI app of the service over the ledger home ``home``.

    ``root`` is the project directory (config lookup, artifacts; default: cwd). The home
    is created private (0700, a ``.gitignore``) through ``ensure_private_dir``; the
    bearer token is ``ensure_token(home)``, created on first use (0600). At most
    ``max_open_sessions`` sessions stay open (least recently used closed first).
    ``app.state.stopping`` (a ``threading.Event``) ends following event streams:
    the server sets it when it starts shutting down. ``operator_token_file`` holds the
    token ``POST …/approve`` needs (:mod:`infomark.tools.operator_token`); without it the
    route refuses every approval. ``agent_sandbox`` is the operator's declaration that the
    agent's commands run in an OS sandbox hiding the home (how, in words); without it the
    sessions these routes drive record that they do not (:func:`declared_sandbox`), so in
    the enforcing profiles the agent's own runs ground nothing (``unsandboxed_run``).
    """
    home_p = Path(home)
    root_p = Path(root) if root is not None else Path.cwd()
    ensure_private_dir(home_p)
    token = ensure_token(home_p)
    # read once: an fd, the file, $INFOMARK_OPERATOR_TOKEN (then removed from the
    # environment) or ~/.config/infomark/operator-token; a bad one fails at startup
    operator, _source = operator_token(home_p, file=operator_token_file, fd=operator_token_fd)
    config = load_config(root_p, home_p)  # a broken config fails at startup, not per request
    # One store for the whole service (every session, the inbox, the listing): several
    # instances on one PostgreSQL store are one ledger (docs/deploy.md).
    store = resolve_store(home_p, pick_store(None, config.store)) or "sqlite"

    def opener(session: str, at: Path, cfg: Config) -> SessionLike:
        from infomark.tools.attest_lazy import lazy_attester

        gk = Gatekeeper.open(home_p, session, root=at, config=cfg, profile=profile, store=store)
        lazy_attester(gk)  # the finish runs the oracles it needs, attested
        return gk

    pool = SessionPool(home_p, root_p, config, opener, max_open_sessions, store=store)
    if store == "sqlite":  # WAL checkpoints off the request path (docs/performance.md)
        pool.checkpointer = Checkpointer(home_p / "ledger.db")
    stopping = threading.Event()
    service = _Service(
        pool,
        max_body_bytes=max_body_bytes,
        poll_seconds=poll_seconds,
        stopping=stopping,
        operator_token=operator,
        agent_sandbox=declared_sandbox(agent_sandbox),
    )
    # The hook route first: the router tries each path in turn, and it is the one called on
    # every tool call (no other path overlaps it, so the order changes nothing else).
    ordered = sorted(OPERATIONS, key=lambda op: op.name != "claude_code_hook")
    routes = [
        Route(API_PREFIX + op.path, guarded(getattr(service, op.name)), methods=[op.method])
        for op in ordered
    ]

    app = Starlette(
        routes=routes,
        lifespan=_lifespan(pool),
        exception_handlers={HTTPException: http_error, 500: internal_error},
    )
    app.add_middleware(BearerAuth, token=token)
    # outermost: the hook route, called on every tool call, skips the rest of the stack
    app.add_middleware(HookRoute, token=token, limit=max_body_bytes, answer=service.hook_answer)
    app.state.stopping = stopping
    app.state.pool = pool  # in-process introspection (tests, benches): which calls ran where
    return app


if __name__ == "__main__":
    raise SystemExit(_openapi_main(sys.argv[1:]))

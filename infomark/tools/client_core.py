"""What both HTTP clients share: one request builder per facade method, and the decoding.

:class:`Requests` turns each facade call into a :class:`Call` (the route from the table
:data:`~infomark.tools.routes.OPERATIONS`, the JSON body, the query, and how to turn the
answer back into the facade's type). :class:`ClientBase` holds the URL, token, session
and error mapping. The transports in :mod:`infomark.tools.http_client` only send a
:class:`Call` (blocking or async): every method body is written once, here.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from infomark.gatekeeper import GateView, LedgerView
from infomark.gates.decision import Decision, FinishDecision, Verdict
from infomark.kernel.errors import InfomarkError, UserError
from infomark.kernel.session_id import check_session_id
from infomark.ledger.audit import AuditReport
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence
from infomark.ledger.report import IngestReport
from infomark.tools.routes import operation

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "Call",
    "ClientBase",
    "RemoteEvent",
    "Requests",
    "ServiceError",
    "ServiceUnavailable",
]

DEFAULT_URL = "http://127.0.0.1:8765"
TOKEN_ENV = "INFOMARK_TOKEN"  # noqa: S105 - the name of a variable, not a secret
TIMEOUT = 30.0
D = TypeVar("D", bound="DataclassInstance")
R = TypeVar("R")


class ServiceError(InfomarkError):
    """The service answered with an HTTP error; ``code`` is its error code."""

    code = "service_error"

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(f"{message} (HTTP {status}, {code})")
        self.code = code
        self.status = status
        self.details = details or []


class ServiceUnavailable(InfomarkError):
    """The service could not be reached (not running, wrong URL, or it stopped answering)."""

    code = "service_unavailable"


@dataclass(frozen=True, slots=True)
class RemoteEvent:
    """One journal event as the service streams it (``EventRow.public()`` shape)."""

    session: str
    seq: int
    type: str
    payload: dict[str, Any]
    timestamp: str
    hash: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RemoteEvent:
        return cls(
            session=str(d["session"]),
            seq=int(d["seq"]),
            type=str(d["type"]),
            payload=dict(d.get("payload") or {}),
            timestamp=str(d.get("timestamp", "")),
            hash=str(d.get("hash", "")),
        )

    def public(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "seq": self.seq,
            "type": self.type,
            "payload": self.payload,
            "timestamp": self.timestamp,
            "hash": self.hash,
        }

    to_dict = public


# -- shared: configuration, bodies, decoding ------------------------------------------------
def _base_url(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _resolve_token(token: str | None, home: Path | None) -> str | None:
    if token:
        return token
    env = os.environ.get(TOKEN_ENV)
    if env:
        return env.strip()
    from infomark.ledger.home import default_home

    path = (home if home is not None else default_home()) / "token"
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _headers(token: str | None) -> dict[str, str]:
    headers = {"accept": "application/json", "user-agent": "infomark-client"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    return headers


def _encode(body: Mapping[str, Any]) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=True, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise UserError(f"the request cannot be sent as JSON ({exc}); pass plain data") from None


def _call_body(
    call: ToolCall, tool_class: str | None, bypass: bool | None = None
) -> dict[str, Any]:
    if bypass is not None:
        raise UserError(
            "bypass cannot be set over HTTP: the service decides it from its own "
            "environment (INFOMARK_BYPASS_GROUNDING=1 where `infomark serve` runs)"
        )
    body: dict[str, Any] = {"tool": call.tool, "input": dict(call.input)}
    if call.tool_call_id is not None:
        body["tool_call_id"] = call.tool_call_id
    if call.annotations is not None:
        body["annotations"] = dict(call.annotations)
    if call.cwd is not None:
        body["cwd"] = call.cwd
    if tool_class is not None:
        body["tool_class"] = tool_class
    return body


def _record_body(call: ToolCall, outcome: ToolOutcome, tool_class: str | None) -> dict[str, Any]:
    body = _call_body(call, tool_class)
    if isinstance(outcome.output, bytes):
        body["output"] = base64.b64encode(outcome.output).decode("ascii")
        body["output_encoding"] = "base64"
    else:
        body["output"] = outcome.output
    body.update(
        exit_code=outcome.exit_code,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
        is_error=outcome.is_error,
    )
    return body


def _ingest_body(
    text: str, source: str, cursor: tuple[str, int] | None, dedupe: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {"text": text, "source": source, "dedupe": dedupe}
    if cursor is not None:
        body["cursor"] = [cursor[0], cursor[1]]
    return body


def _host_body(
    tokens_used: int | None, context_window: int | None, compacted: bool
) -> dict[str, Any]:
    return {"tokens_used": tokens_used, "context_window": context_window, "compacted": compacted}


def _pairs(items: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(u["id"]), str(u["status"])) for u in items or ())


def _build(cls: type[D], d: Mapping[str, Any], **given: Any) -> D:
    """A facade dataclass from its ``to_dict()`` shape, field by field.

    Fields the service sent are taken as they are (JSON lists become tuples where the
    field is a tuple); ``given`` overrides; an ``extra`` field collects unknown keys
    (the facade spreads ``extra`` into ``to_dict()``). New facade fields need no
    change here.
    """
    names = {f.name: str(f.type) for f in fields(cls)}
    kw: dict[str, Any] = {}
    for name, typ in names.items():
        if name in given:
            kw[name] = given[name]
        elif name in d:
            value = d[name]
            kw[name] = (
                tuple(value) if typ.startswith("tuple") and isinstance(value, list) else value
            )
    if "extra" in names and "extra" not in given:
        kw["extra"] = {k: v for k, v in d.items() if k not in names}
    return cls(**kw)


def _decision(d: Mapping[str, Any]) -> Decision:
    return _build(
        Decision, d, verdict=Verdict(d["decision"]), ungrounded=_pairs(d.get("ungrounded"))
    )


def _finish(d: Mapping[str, Any]) -> FinishDecision:
    return _build(FinishDecision, d, ungrounded=_pairs(d.get("ungrounded")))


def _ingest(d: Mapping[str, Any]) -> IngestReport:
    return _build(IngestReport, d)


def _evidence(d: Mapping[str, Any]) -> Evidence:
    return Evidence.from_record(str(d["evidence_ref"]), dict(d["record"]))


def _ledger(d: Mapping[str, Any]) -> LedgerView:
    return _build(LedgerView, d, ungrounded=_pairs(d.get("ungrounded")))


def _gate(d: Mapping[str, Any]) -> GateView:
    return _build(GateView, d)


def _audit(d: Mapping[str, Any]) -> AuditReport:
    return _build(AuditReport, d)


def _classified(d: Mapping[str, Any]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return str(d["tool_class"]), tuple(d["families"]), tuple(d["reasons"])


def _maybe_evidence(d: Mapping[str, Any] | None) -> Evidence | None:
    return None if d is None else _evidence(d)


# -- requests ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Call(Generic[R]):
    """One request to send: ``method path`` (+ JSON ``body``, ``params``) and its decoder.

    ``missing``: an error code that means "there is none" (the decoder gets ``None``).
    """

    method: str
    path: str
    decode: Callable[[Any], R]
    body: Mapping[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    missing: str | None = None


class Requests:
    """The facade's methods as :class:`Call` s, for one session (checked by the shared rule)."""

    def __init__(self, session: str) -> None:
        self.session = check_session_id(session)
        self.tool_text: dict[str, str] = {}

    def _call(
        self,
        name: str,
        decode: Callable[[Any], R],
        body: Mapping[str, Any] | None = None,
        *,
        missing: str | None = None,
        path: Mapping[str, str] | None = None,
        **params: Any,
    ) -> Call[R]:
        op = operation(name)
        where = {"session": self.session} if "session" in op.path_params else {}
        url = op.url_path(**where, **(path or {}))
        return Call(op.method, url, decode, body, params, missing)

    def health(self) -> Call[dict[str, Any]]:
        """Liveness of the service (no token needed)."""
        return self._call("health", dict)

    def sessions(self) -> Call[list[dict[str, Any]]]:
        """Sessions in the service's ledger home, with their event counts."""
        return self._call("sessions", lambda d: list(d["sessions"]))

    def ingest(
        self,
        text: str,
        *,
        source: str = "assistant",
        cursor: tuple[str, int] | None = None,
        dedupe: bool = False,
    ) -> Call[IngestReport]:
        """Parse assistant text; apply claim_ledger, stamps, divergences and gate lines."""
        return self._call("ingest", _ingest, _ingest_body(text, source, cursor, dedupe))

    def classify(
        self, call: ToolCall, tool_class: str | None = None
    ) -> Call[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """``(class, families, reasons)`` of a call; a declared class wins."""
        return self._call("classify", _classified, _call_body(call, tool_class))

    def authorize(
        self, call: ToolCall, *, bypass: bool | None = None, tool_class: str | None = None
    ) -> Call[Decision]:
        """allow / deny / ask for one call (``bypass`` is the service's to decide)."""
        return self._call("authorize", _decision, _call_body(call, tool_class, bypass))

    def record(
        self,
        call: ToolCall,
        outcome: ToolOutcome,
        *,
        tool_class: str | None = None,
        call_id: str | None = None,
        cwd: str | None = None,
        background_id: str | None = None,
    ) -> Call[Evidence]:
        """Record the result of an authorized call (``call_id`` from its decision)."""
        body = _record_body(call, outcome, tool_class)
        if call_id:  # the service pairs the record with the call authorize returned
            body["tool_call_id"] = call_id
        if cwd is not None:
            body["cwd"] = cwd
        if background_id is not None:
            body["background_id"] = background_id
        return self._call("record", self._recorded, body)

    def _recorded(self, body: Mapping[str, Any]) -> Evidence:
        evidence = _evidence(body)
        text = str(body.get("instructions") or "")
        if text:
            self.tool_text[evidence.ref] = text
        return evidence

    def evidence(self, ref: str) -> Call[Evidence | None]:
        """The evidence recorded under ``ref`` in this session, or None."""
        return self._call(
            "evidence", _maybe_evidence, missing="unknown_evidence", path={"ref": ref}
        )

    def can_finish(self, final_text: str = "") -> Call[FinishDecision]:
        """May the agent stop now?"""
        return self._call("finish", _finish, {"text": final_text})

    def approve(
        self, *, by: str = "operator", note: str = "", operator_token: str | None = None
    ) -> Call[None]:
        """Record the G4 approval: an operator act, so the service needs the operator's token
        (``serve --operator-token-file``), never the agent-readable service token."""
        body: dict[str, Any] = {"by": by, "note": note}
        if operator_token is not None:
            body["operator_token"] = operator_token
        return self._call("approve", lambda d: None, body)

    def new_turn(self, prompt: str | None = None) -> Call[str]:
        """Start a user turn; returns context text for the next model call."""
        return self._call("turn", lambda d: str(d["context"]), {"prompt": prompt})

    def on_prompt(self, prompt: str) -> Call[str]:
        """A new user prompt: start a turn; return context text for the next model call."""
        return self.new_turn(prompt)

    def move(self, gate: str) -> Call[dict[str, Any]]:
        """Request a gate move as the agent would with a ``gate:`` line."""
        return self._call("move", dict, {"gate": gate})

    def host_report(
        self,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> Call[str]:
        """Usage and compaction as the host reports them; returns packs that fired."""
        body = _host_body(tokens_used, context_window, compacted)
        return self._call("host_report", lambda d: str(d["instructions"]), body)

    def context_view(self, budget: int = 1200) -> Call[str]:
        """What goes into the next model call: active packs, working memory, ledger summary."""
        return self._call("context", lambda d: str(d["context"]), budget=budget)

    def compaction_context(self) -> Call[str]:
        """After a compaction: claim ids, ranks and live evidence refs, verbatim."""
        return self._call("compaction_context", lambda d: str(d["context"]))

    def state_document(self) -> Call[dict[str, Any]]:
        """The session's state: ledger, gate, metrics, policy state."""
        return self._call("state", dict)

    def ledger(self) -> Call[LedgerView]:
        """A read-only view of the session's ledger."""
        return self._call("session", lambda d: _ledger(d["ledger"]))

    def gate(self) -> Call[GateView]:
        """The gate position, its allowed moves and loop budget."""
        return self._call("gate", _gate)

    def audit(self, verify: bool = True) -> Call[AuditReport]:
        """Every claim's rank and why; ``verify`` checks the hash chain and MACs."""
        return self._call("audit", _audit, verify=int(verify))

    def fork(self, as_session: str, upto: int | None = None) -> Call[dict[str, Any]]:
        """Fork this session up to seq ``upto`` (default: the head) into ``as_session``."""
        body: dict[str, Any] = {"as_session": check_session_id(as_session), "upto": upto}
        return self._call("fork", dict, body)

    def merge_from(self, session: str) -> Call[dict[str, Any]]:
        """Merge what the fork ``session`` settled after its fork point into this session."""
        return self._call("merge", dict, {"from_session": check_session_id(session)})

    def events(self, *, after: int = 0, follow: bool = False) -> Call[RemoteEvent | None]:
        """Journal events after ``after`` (JSON lines; each line decodes to one event)."""
        return self._call("events", _line_event, after=after, follow=int(follow))


def _line_event(line: str) -> RemoteEvent | None:
    return RemoteEvent.from_dict(json.loads(line)) if line.strip() else None


class ClientBase:
    """The URL, the token, the session and the error mapping, for both transports."""

    def __init__(
        self, base_url: str, token: str | None, session: str, home: Path | str | None
    ) -> None:
        self._req = Requests(session)
        self.base_url = _base_url(base_url)
        self.home = Path(home) if home is not None else None
        self.token = _resolve_token(token, self.home)
        self._headers = _headers(self.token)  # per request: a shared httpx client works too

    @property
    def session(self) -> str:
        return self._req.session

    def after_tool_text(self, call: ToolCall, outcome: ToolOutcome, evidence: Evidence) -> str:
        """Instruction text to deliver with this recorded result ("" if none), once."""
        return self._req.tool_text.pop(evidence.ref, "")

    @property
    def _trust_env(self) -> bool:
        # Proxy variables never apply to a loopback service: the token stays on this host.
        host = httpx.URL(self.base_url).host
        if host == "localhost":
            return False
        try:
            return not ipaddress.ip_address(host).is_loopback
        except ValueError:
            return True

    def _request(self, call: Call[Any]) -> tuple[str, str, bytes | None, dict[str, str]]:
        content = _encode(call.body) if call.body is not None else None
        headers = self._headers
        if content is not None:
            headers = {**headers, "content-type": "application/json"}
        return call.method, self.base_url + call.path, content, headers

    def _unavailable(self, exc: httpx.TransportError) -> ServiceUnavailable:
        home = str(self.home) if self.home is not None else "<ledger home>"
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return ServiceUnavailable(
                f"the infomark service at {self.base_url} did not answer in time "
                f"({type(exc).__name__}); check that it is healthy "
                f"(GET {self.base_url}/v1/health)"
            )
        return ServiceUnavailable(
            f"cannot reach the infomark service at {self.base_url} "
            f"({type(exc).__name__}: {exc}); start it with `infomark serve --home {home}` "
            "or pass the right base_url"
        )

    def _error(self, status: int, raw: bytes) -> ServiceError:
        code, message, details = f"http_{status}", f"HTTP {status}", None
        try:
            err = json.loads(raw)["error"]
            code, message = str(err["code"]), str(err["message"])
            details = err.get("details")
        except (ValueError, KeyError, TypeError):
            text = raw.decode("utf-8", "replace").strip()
            if text:
                message = f"HTTP {status}: {text[:200]}"
        if status == 401 and not self.token:
            message += (
                f"; this client has no token: pass token=, set ${TOKEN_ENV}, or pass the "
                "home= whose token file the service uses"
            )
        return ServiceError(code, message, status=status, details=details)

    def _decode(self, call: Call[R], response: httpx.Response) -> R:
        if response.status_code >= 400:
            error = self._error(response.status_code, response.content)
            if call.missing is not None and error.code == call.missing:
                return call.decode(None)
            raise error
        try:
            data = response.json()
        except ValueError:
            raise ServiceError(
                "bad_response",
                f"the service at {self.base_url} answered with something that is not JSON; "
                "is base_url an infomark service?",
                status=response.status_code,
            ) from None
        return call.decode(data)

"""httpx clients of the HTTP service, mirroring the :class:`Gatekeeper` facade.

``Client(base_url, token=None, session="default", home=None)`` has the facade's
methods (``ingest``, ``authorize``, ``record``, ``after_tool_text``, ``can_finish``,
``approve``, ``new_turn``, ``host_report``, ``context_view``, ``state_document``,
``ledger``, ``gate``, ``audit``, ``events``, ``wrap``, ``tool``) and returns the same
types (:class:`Decision`, :class:`FinishDecision`, :class:`IngestReport`,
:class:`Evidence`, :class:`LedgerView`, :class:`GateView`, :class:`AuditReport`),
so a remote ledger is used exactly like a local one. :class:`AsyncClient` is the
same with ``async`` methods (no ``wrap``/``tool``). The token comes from the
argument, else ``$INFOMARK_TOKEN``, else ``<home>/token``.

Errors: :class:`ServiceUnavailable` when the service cannot be reached,
:class:`ServiceError` (with the service's error ``code`` and HTTP ``status``) for an
HTTP error; both are :class:`InfomarkError`.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import quote

import httpx

from infomark.gatekeeper import GateView, LedgerView
from infomark.gates.decision import Decision, FinishDecision, Verdict
from infomark.kernel.errors import InfomarkError, UserError
from infomark.ledger.audit import AuditReport
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence
from infomark.ledger.report import IngestReport

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from infomark.gatekeeper import Gatekeeper

__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "AsyncClient",
    "Client",
    "RemoteEvent",
    "ServiceError",
    "ServiceUnavailable",
]

DEFAULT_URL = "http://127.0.0.1:8765"
TOKEN_ENV = "INFOMARK_TOKEN"  # noqa: S105 - the name of a variable, not a secret
_TIMEOUT = 30.0
D = TypeVar("D", bound="DataclassInstance")


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
        Decision, d, decision=Verdict(d["decision"]), ungrounded=_pairs(d.get("ungrounded"))
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


class _Core:
    """What both clients share: the URL, the session, the token and error mapping."""

    def __init__(
        self, base_url: str, token: str | None, session: str, home: Path | str | None
    ) -> None:
        self.base_url = _base_url(base_url)
        self.session = session
        self.home = Path(home) if home is not None else None
        self.token = _resolve_token(token, self.home)
        self._tool_text: dict[str, str] = {}
        self._headers = _headers(self.token)  # per request: a shared httpx client works too

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

    def _url(self, path: str) -> str:
        return self.base_url + path

    def _request_headers(self, content: bytes | None) -> dict[str, str]:
        if content is None:
            return self._headers
        return {**self._headers, "content-type": "application/json"}

    def _evidence(self, body: Mapping[str, Any]) -> Evidence:
        evidence = _evidence(body)
        text = str(body.get("instructions") or "")
        if text:
            self._tool_text[evidence.ref] = text
        return evidence

    def after_tool_text(self, call: ToolCall, outcome: ToolOutcome, evidence: Evidence) -> str:
        """Instruction text to deliver with this recorded result ("" if none), once."""
        return self._tool_text.pop(evidence.ref, "")

    def _path(self, tail: str = "") -> str:
        return f"/v1/sessions/{quote(self.session, safe='')}{tail}"

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

    def _decode(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise self._error(response.status_code, response.content)
        try:
            return response.json()
        except ValueError:
            raise ServiceError(
                "bad_response",
                f"the service at {self.base_url} answered with something that is not JSON; "
                "is base_url an infomark service?",
                status=response.status_code,
            ) from None


def _line_event(line: str) -> RemoteEvent | None:
    return RemoteEvent.from_dict(json.loads(line)) if line.strip() else None


class Client(_Core):
    """A blocking client of one session on the infomark service (thread-safe).

    ``http`` shares an existing ``httpx.Client`` (its connection pool); a client
    given one does not close it.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: str | None = None,
        session: str = "default",
        home: Path | str | None = None,
        *,
        timeout: float = _TIMEOUT,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, token, session, home)
        self._timeout = timeout
        self._owns = http is None
        self._http = http or httpx.Client(timeout=timeout, trust_env=self._trust_env)

    def with_session(self, session: str) -> Client:
        """A client of another session sharing this one's connections."""
        return Client(
            self.base_url, self.token, session, self.home, timeout=self._timeout, http=self._http
        )

    def close(self) -> None:
        if self._owns:
            self._http.close()

    def wrap(self, executor: Callable[..., Any]) -> Callable[..., Any]:
        """Gate a ``(ToolCall) -> ToolOutcome`` executor, as ``Gatekeeper.wrap`` does."""
        from infomark.tools.executor import wrap_executor

        return wrap_executor(cast("Gatekeeper", self), executor)

    def tool(self, name: str | None = None, *, tool_class: str | None = None) -> Callable[..., Any]:
        """Decorate a plain function as a gated tool, as ``Gatekeeper.tool`` does."""
        from infomark.tools.executor import gated_tool

        return gated_tool(cast("Gatekeeper", self), name=name, tool_class=tool_class)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, **params: Any
    ) -> Any:
        content = _encode(body) if body is not None else None
        headers = self._request_headers(content)
        try:
            response = self._http.request(
                method, self._url(path), content=content, headers=headers, params=params or None
            )
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc
        return self._decode(response)

    # -- the facade ---------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._send("GET", "/v1/health")
        return result

    def sessions(self) -> list[dict[str, Any]]:
        return list(self._send("GET", "/v1/sessions")["sessions"])

    def ingest(
        self,
        text: str,
        *,
        source: str = "assistant",
        cursor: tuple[str, int] | None = None,
        dedupe: bool = False,
    ) -> IngestReport:
        body = _ingest_body(text, source, cursor, dedupe)
        return _ingest(self._send("POST", self._path("/ingest"), body))

    def authorize(
        self, call: ToolCall, *, bypass: bool | None = None, tool_class: str | None = None
    ) -> Decision:
        body = _call_body(call, tool_class, bypass)
        return _decision(self._send("POST", self._path("/authorize"), body))

    def record(
        self,
        call: ToolCall,
        outcome: ToolOutcome,
        *,
        tool_class: str | None = None,
        call_id: str | None = None,
    ) -> Evidence:
        body = _record_body(call, outcome, tool_class)
        if call_id:  # the call id authorize returned: the service pairs the record with it
            body["tool_call_id"] = call_id
        return self._evidence(self._send("POST", self._path("/record"), body))

    def can_finish(self, final_text: str = "") -> FinishDecision:
        return _finish(self._send("POST", self._path("/finish"), {"text": final_text}))

    def approve(self, *, by: str = "operator", note: str = "") -> None:
        self._send("POST", self._path("/approve"), {"by": by, "note": note})

    def new_turn(self, prompt: str | None = None) -> str:
        """Start a user turn; returns context text for the next model call."""
        return str(self._send("POST", self._path("/turn"), {"prompt": prompt})["context"])

    def on_prompt(self, prompt: str) -> str:
        return self.new_turn(prompt)

    def host_report(
        self,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> str:
        body = _host_body(tokens_used, context_window, compacted)
        return str(self._send("POST", self._path("/host-report"), body)["instructions"])

    def context_view(self, budget: int = 1200) -> str:
        return str(self._send("GET", self._path("/context"), budget=budget)["context"])

    def state_document(self) -> dict[str, Any]:
        return dict(self._send("GET", self._path("/state")))

    def ledger(self) -> LedgerView:
        return _ledger(self._send("GET", self._path())["ledger"])

    def gate(self) -> GateView:
        return _gate(self._send("GET", self._path("/gate")))

    def audit(self, verify: bool = True) -> AuditReport:
        return _audit(self._send("GET", self._path("/audit"), verify=int(verify)))

    def events(self, *, after: int = 0, follow: bool = False) -> Iterator[RemoteEvent]:
        """Journal events after ``after``; with ``follow``, keep waiting for new ones."""
        params = {"after": after, "follow": int(follow)}
        timeout = httpx.Timeout(self._timeout, read=None) if follow else self._timeout
        try:
            with self._http.stream(
                "GET",
                self._url(self._path("/events")),
                params=params,
                headers=self._headers,
                timeout=timeout,
            ) as response:
                if response.status_code >= 400:
                    raise self._error(response.status_code, response.read())
                for line in response.iter_lines():
                    event = _line_event(line)
                    if event is not None:
                        yield event
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc


class AsyncClient(_Core):
    """The asyncio client: :class:`Client`'s methods as coroutines."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: str | None = None,
        session: str = "default",
        home: Path | str | None = None,
        *,
        timeout: float = _TIMEOUT,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, token, session, home)
        self._timeout = timeout
        self._owns = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout, trust_env=self._trust_env)

    def with_session(self, session: str) -> AsyncClient:
        """A client of another session sharing this one's connections."""
        return AsyncClient(
            self.base_url, self.token, session, self.home, timeout=self._timeout, http=self._http
        )

    async def aclose(self) -> None:
        if self._owns:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, **params: Any
    ) -> Any:
        content = _encode(body) if body is not None else None
        headers = self._request_headers(content)
        try:
            response = await self._http.request(
                method, self._url(path), content=content, headers=headers, params=params or None
            )
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc
        return self._decode(response)

    # -- the facade ---------------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._send("GET", "/v1/health")
        return result

    async def sessions(self) -> list[dict[str, Any]]:
        return list((await self._send("GET", "/v1/sessions"))["sessions"])

    async def ingest(
        self,
        text: str,
        *,
        source: str = "assistant",
        cursor: tuple[str, int] | None = None,
        dedupe: bool = False,
    ) -> IngestReport:
        body = _ingest_body(text, source, cursor, dedupe)
        return _ingest(await self._send("POST", self._path("/ingest"), body))

    async def authorize(
        self, call: ToolCall, *, bypass: bool | None = None, tool_class: str | None = None
    ) -> Decision:
        body = _call_body(call, tool_class, bypass)
        return _decision(await self._send("POST", self._path("/authorize"), body))

    async def record(
        self,
        call: ToolCall,
        outcome: ToolOutcome,
        *,
        tool_class: str | None = None,
        call_id: str | None = None,
    ) -> Evidence:
        body = _record_body(call, outcome, tool_class)
        if call_id:  # the call id authorize returned: the service pairs the record with it
            body["tool_call_id"] = call_id
        return self._evidence(await self._send("POST", self._path("/record"), body))

    async def can_finish(self, final_text: str = "") -> FinishDecision:
        return _finish(await self._send("POST", self._path("/finish"), {"text": final_text}))

    async def approve(self, *, by: str = "operator", note: str = "") -> None:
        await self._send("POST", self._path("/approve"), {"by": by, "note": note})

    async def new_turn(self, prompt: str | None = None) -> str:
        """Start a user turn; returns context text for the next model call."""
        return str((await self._send("POST", self._path("/turn"), {"prompt": prompt}))["context"])

    async def on_prompt(self, prompt: str) -> str:
        return await self.new_turn(prompt)

    async def host_report(
        self,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> str:
        body = _host_body(tokens_used, context_window, compacted)
        return str((await self._send("POST", self._path("/host-report"), body))["instructions"])

    async def context_view(self, budget: int = 1200) -> str:
        return str((await self._send("GET", self._path("/context"), budget=budget))["context"])

    async def state_document(self) -> dict[str, Any]:
        return dict(await self._send("GET", self._path("/state")))

    async def ledger(self) -> LedgerView:
        return _ledger((await self._send("GET", self._path()))["ledger"])

    async def gate(self) -> GateView:
        return _gate(await self._send("GET", self._path("/gate")))

    async def audit(self, verify: bool = True) -> AuditReport:
        return _audit(await self._send("GET", self._path("/audit"), verify=int(verify)))

    async def events(self, *, after: int = 0, follow: bool = False) -> AsyncIterator[RemoteEvent]:
        """Journal events after ``after``; with ``follow``, keep waiting for new ones."""
        params = {"after": after, "follow": int(follow)}
        timeout = httpx.Timeout(self._timeout, read=None) if follow else self._timeout
        try:
            async with self._http.stream(
                "GET",
                self._url(self._path("/events")),
                params=params,
                headers=self._headers,
                timeout=timeout,
            ) as response:
                if response.status_code >= 400:
                    raise self._error(response.status_code, await response.aread())
                async for line in response.aiter_lines():
                    event = _line_event(line)
                    if event is not None:
                        yield event
        except httpx.TransportError as exc:
            raise self._unavailable(exc) from exc

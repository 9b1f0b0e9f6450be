"""The connection both HTTP clients share: URL, token, headers, and the error mapping.

:class:`ClientBase` resolves the token (argument, ``$INFOMARK_TOKEN``, the home's token file),
builds each request's headers and body bytes from a :class:`~infomark.tools.client_core.Call`,
and turns an HTTP error into :class:`ServiceError` (the service's error ``code``) or a
transport failure into :class:`ServiceUnavailable`, with what to do about it.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

import httpx

from infomark.kernel.errors import InfomarkError, UserError
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence
from infomark.tools.client_core import Call, Requests

__all__ = [
    "DEFAULT_URL",
    "TIMEOUT",
    "TOKEN_ENV",
    "ClientBase",
    "ServiceError",
    "ServiceUnavailable",
]

DEFAULT_URL = "http://127.0.0.1:8765"
TOKEN_ENV = "INFOMARK_TOKEN"  # noqa: S105 - the name of a variable, not a secret
TIMEOUT = 30.0
R = TypeVar("R")
H = TypeVar("H", httpx.Client, httpx.AsyncClient)  # the transport


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
        raise UserError(f"the request cannot be sent as JSON ({exc}); pass plain data") from exc


class ClientBase(Generic[H]):
    """The URL, the token, the session and the error mapping, for both transports.

    ``http`` shares an existing httpx client (its connection pool); a client given one does
    not close it.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: str | None = None,
        session: str = "default",
        home: Path | str | None = None,
        *,
        timeout: float = TIMEOUT,
        http: H | None = None,
    ) -> None:
        self._req = Requests(session)
        self.base_url = _base_url(base_url)
        self.home = Path(home) if home is not None else None
        self.token = _resolve_token(token, self.home)
        self._headers = _headers(self.token)  # per request: a shared httpx client works too
        self._timeout = timeout
        self._owns = http is None
        self._http: H = http if http is not None else self._connect(timeout)

    def _connect(self, timeout: float) -> H:
        """A new httpx client of this transport (closed with this client)."""
        raise NotImplementedError

    def with_session(self, session: str) -> Self:
        """A client of another session sharing this one's connections."""
        return type(self)(
            self.base_url, self.token, session, self.home, timeout=self._timeout, http=self._http
        )

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
        except ValueError as exc:
            raise ServiceError(
                "bad_response",
                f"the service at {self.base_url} answered with something that is not JSON; "
                "is base_url an infomark service?",
                status=response.status_code,
            ) from exc
        return call.decode(data)

"""The HTTP API's route table: every route written once, read by everything that needs it.

:data:`OPERATIONS` drives the Starlette router (:mod:`infomark.tools.service`: the
handler is the ``_Service`` method named ``name``), the OpenAPI document
(:mod:`infomark.tools.openapi`: paths, parameters, the ``request`` / ``response`` models
by name from :mod:`infomark.tools.api_models`) and both HTTP clients
(:mod:`infomark.tools.http_client`: method, path and parameters come from here, looked
up by ``name``). ``facade`` names the :class:`~infomark.gatekeeper.Gatekeeper` methods a
route serves, so a test can check that every facade method has a route and a client
method. Standard library only, so the clients never load pydantic or starlette for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import quote

from infomark.kernel.session_id import SESSION_PATTERN, check_session_id

__all__ = [
    "API_PREFIX",
    "API_VERSION",
    "OPERATIONS",
    "SESSION_PATTERN",
    "Operation",
    "operation",
]

API_PREFIX = "/v1"
API_VERSION = "1.1.0"


@dataclass(frozen=True, slots=True)
class Operation:
    """One route: ``method`` ``API_PREFIX + path``, handled by ``_Service.<name>``."""

    method: str
    path: str  # under API_PREFIX; {session} and {ref} are path parameters
    name: str  # the _Service method, the OpenAPI operationId, the client's lookup key
    summary: str
    request: str | None = None  # a model name in infomark.tools.api_models
    response: str | None = None
    query: tuple[tuple[str, str, str], ...] = ()  # (name, type, description)
    auth: bool = True
    media_type: str = "application/json"
    facade: tuple[str, ...] = ()  # the Gatekeeper methods this route serves

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{"))

    def url_path(self, **params: str) -> str:
        """The concrete path: ``{session}`` checked by the shared rule, every part quoted."""
        if "session" in params:
            params["session"] = check_session_id(params["session"])
        missing = set(self.path_params) - set(params)
        if missing:
            raise TypeError(f"{self.name}: missing path parameter(s) {sorted(missing)}")
        path = self.path
        for key, value in params.items():
            path = path.replace("{" + key + "}", quote(value, safe=""))
        return API_PREFIX + path


_S = "/sessions/{session}"
_OPEN = "(opens the session on first use)"
OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/health", "health", "Liveness (no token)", response="HealthOut",
              auth=False),
    Operation("GET", "/openapi.json", "openapi", "This OpenAPI document"),
    Operation("GET", "/sessions", "sessions", "Sessions in the ledger home",
              response="SessionsOut"),
    Operation("GET", _S, "session", f"Ledger view and gate {_OPEN}", response="SessionOut",
              facade=("ledger",)),
    Operation("POST", _S + "/ingest", "ingest", "Ingest agent text", "IngestRequest",
              "IngestOut", facade=("ingest",)),
    Operation("POST", _S + "/classify", "classify", "Classify one tool call (journals nothing)",
              "ClassifyRequest", "ClassifyOut", facade=("classify",)),
    Operation("POST", _S + "/authorize", "authorize", "Decide one tool call",
              "AuthorizeRequest", "DecisionOut", facade=("authorize",)),
    Operation("POST", _S + "/record", "record", "Record a tool result as evidence",
              "RecordRequest", "RecordOut", facade=("record", "after_tool_text")),
    Operation("GET", _S + "/evidence/{ref}", "evidence", "One recorded evidence by its ref",
              response="EvidenceOut", facade=("evidence",)),
    Operation("POST", _S + "/finish", "finish", "May the agent stop now?", "FinishRequest",
              "FinishOut", facade=("can_finish",)),
    Operation("POST", _S + "/check", "check",
              "infomark runs a claim's oracle itself, sandboxed, on the baseline (attested)",
              "CheckRequest", "CheckOut"),
    Operation("POST", _S + "/approve", "approve", "Record the G4 approval", "ApproveRequest",
              "OkOut", facade=("approve",)),
    Operation("POST", _S + "/turn", "turn", "Start a user turn; context for the next model call",
              "TurnRequest", "TurnOut", facade=("new_turn", "on_prompt")),
    Operation("POST", _S + "/move", "move", "Request a gate move (as a gate: line would)",
              "MoveRequest", "MoveOut", facade=("move",)),
    Operation("POST", _S + "/send", "send",
              "Deliver an operator message to the live inbox (409 when it has none)",
              "SendRequest", "SendOut"),
    Operation("POST", _S + "/host-report", "host_report", "Report token usage / compaction",
              "HostReportRequest", "InstructionsOut", facade=("host_report",)),
    Operation("GET", _S + "/context", "context", "Context text for the next model call",
              response="ContextOut",
              query=(("budget", "integer", "Size budget in characters (default 1200)"),),
              facade=("context_view",)),
    Operation("GET", _S + "/compaction-context", "compaction_context",
              "After a compaction: claim ids, ranks and live evidence refs, verbatim",
              response="ContextOut", facade=("compaction_context",)),
    Operation("GET", _S + "/state", "state", "The session's state document",
              response="StateOut", facade=("state_document",)),
    Operation("GET", _S + "/gate", "gate", "Gate position and loop budget", response="GateOut",
              facade=("gate",)),
    Operation("GET", _S + "/audit", "audit", "Every claim's rank and why", response="AuditOut",
              query=(("verify", "boolean", "Verify hash chain and MACs (default 1)"),),
              facade=("audit",)),
    Operation("GET", _S + "/events", "events", "Journal events as JSON lines",
              response="EventOut", media_type="application/x-ndjson",
              query=(("after", "integer", "Start after this seq (default 0)"),
                     ("follow", "boolean", "Stream new events until disconnect (default 0)")),
              facade=("events",)),
    Operation("POST", _S + "/fork", "fork",
              "Fork this session (up to a seq) into a new session (docs/fork.md)",
              "ForkRequest", "ForkOut", facade=("fork",)),
    Operation("POST", _S + "/merge", "merge",
              "Merge what a fork of this session settled after its fork point",
              "MergeRequest", "MergeOut", facade=("merge_from",)),
    Operation("POST", "/hooks/claude-code", "claude_code_hook",
              "Claude Code HTTP hook: answers like the command hook", "HookPayload",
              "HookResponse"),
)  # fmt: skip

_BY_NAME = MappingProxyType({op.name: op for op in OPERATIONS})


def operation(name: str) -> Operation:
    """The route called ``name`` (a ``KeyError`` names the known ones)."""
    try:
        return _BY_NAME[name]
    except KeyError as exc:
        raise KeyError(f"no route {name!r}; known: {', '.join(sorted(_BY_NAME))}") from exc

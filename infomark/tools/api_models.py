"""The HTTP API's bodies as pydantic models: what each route takes and answers.

Requests forbid unknown fields (a typo is a 400 naming the field); responses allow extra
keys (the facade may add fields) and are validated before they are sent, so a mismatch
is a server bug (500), never a silent change of shape. :func:`model` resolves the names
the route table (:mod:`infomark.tools.routes`) uses.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from infomark.gates.config_model import ToolClassName
from infomark.ledger.calls import ToolCall

__all__ = [
    "ApproveRequest",
    "AuditOut",
    "AuthorizeRequest",
    "CheckOut",
    "CheckRequest",
    "ClassifyOut",
    "ClassifyRequest",
    "ContextOut",
    "DecisionOut",
    "ErrorOut",
    "EventOut",
    "EvidenceOut",
    "FinishOut",
    "FinishRequest",
    "ForkOut",
    "ForkRequest",
    "GateOut",
    "HealthOut",
    "HookPayload",
    "HookResponse",
    "HostReportRequest",
    "IngestOut",
    "IngestRequest",
    "InstructionsOut",
    "LedgerOut",
    "MergeOut",
    "MergeRequest",
    "MoveOut",
    "MoveRequest",
    "OkOut",
    "RecordOut",
    "RecordRequest",
    "SendOut",
    "SendRequest",
    "SessionOut",
    "SessionsOut",
    "StateOut",
    "TurnOut",
    "TurnRequest",
    "model",
]


# -- request models ------------------------------------------------------------------------
class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IngestRequest(_Request):
    """Agent text to parse: claim_ledger blocks, stamps, divergences, gate lines."""

    text: str
    source: str = "assistant"
    cursor: tuple[str, int] | None = None
    dedupe: bool = False


class AuthorizeRequest(_Request):
    """A tool call the agent asks to run."""

    tool: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)
    tool_call_id: str | None = None
    annotations: dict[str, Any] | None = None
    tool_class: ToolClassName | None = None
    cwd: str | None = Field(
        default=None,
        description="the directory the agent's tool runs in (absolute); shell paths and "
        "relative file paths are resolved from it (default: the project root and the "
        "service's own directory, both)",
    )

    def call(self) -> ToolCall:
        return ToolCall(
            tool=self.tool,
            input=self.input,
            tool_call_id=self.tool_call_id,
            annotations=self.annotations,
            cwd=self.cwd,
        )


class RecordRequest(AuthorizeRequest):
    """A tool call and what it returned; ``output_encoding: base64`` carries bytes."""

    output: str = ""
    output_encoding: Literal["utf-8", "base64"] = "utf-8"
    exit_code: int | None = None
    error: str | None = None
    duration_ms: float | None = None
    is_error: bool = False
    cwd: str | None = None  # where the tool ran (default: the project root)
    background_id: str | None = None  # the shell id a run_in_background command was given


class ClassifyRequest(AuthorizeRequest):
    """A tool call to classify (as authorize would, without deciding or journaling)."""


class MoveRequest(_Request):
    """A gate move the agent requests, as a ``gate:`` line would."""

    gate: str = Field(min_length=1, max_length=64)


class FinishRequest(_Request):
    """The agent's final message; the answer says whether it may stop."""

    text: str = ""


class CheckRequest(_Request):
    """Which claim's declared oracle infomark should run itself (an attested run)."""

    claim_id: str = Field(min_length=1, max_length=64)


class ApproveRequest(_Request):
    by: str = "operator"
    note: str = ""
    operator_token: str | None = None  # the operator's, never the service token


class TurnRequest(_Request):
    prompt: str | None = None


class SendRequest(_Request):
    """An operator message for the session's live inbox (``infomark send``)."""

    message: str
    sender: str = "operator"


class ForkRequest(_Request):
    """``POST /v1/sessions/{session}/fork``: the new session, and the seq to fork at."""

    as_session: str = Field(min_length=1, max_length=128, description="The new session")
    upto: int | None = Field(
        default=None, ge=1, description="Fork up to this seq (default: the head)"
    )


class MergeRequest(_Request):
    """``POST /v1/sessions/{session}/merge``: merge the fork ``from_session`` into this one."""

    from_session: str = Field(min_length=1, max_length=128, description="The fork to merge")


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
    call_id: str = ""  # what the record of this call must name (tool_call_id)


class FinishOut(_Response):
    allow: bool
    reason: str
    code: str
    stale: list[str]
    ungrounded: list[Ungrounded]
    completion_claimed: bool
    cap_reached: bool


class CheckOut(_Response):
    """What the attested run showed: the text for the agent, its evidence and the claim's rank
    (``evidence_ref`` null: no run happened, ``text`` says why)."""

    text: str
    evidence_ref: str | None
    outcome: str
    status: str | None


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


class EvidenceOut(_Response):
    """One signed evidence record: its ref, tag, eligibility and the record itself."""

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


class RecordOut(EvidenceOut):
    instructions: str = Field(
        default="", description="Instruction text to deliver with this tool result"
    )


class ClassifyOut(_Response):
    tool_class: str
    families: list[str]
    reasons: list[str]


class MoveOut(_Response):
    from_: str = Field(alias="from")
    to: str
    ok: bool
    reason: str


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


class SendOut(_Response):
    delivered: bool
    session: str
    message_id: int


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


class ForkOut(_Response):
    """The new session and its ``forked_from`` event (docs/fork.md)."""

    session: str
    forked_from: str
    seq: int = Field(description="The seq of the origin the fork holds history up to")
    head_hash: str
    copied: int = Field(description="Events copied from the origin")


class MergeConflict(_Response):
    claim_id: str
    changed: str
    dropped: list[str]


class MergeOut(_Response):
    """What a merge brought (``merged`` false with a ``reason`` when nothing was new)."""

    merged: bool
    from_: str = Field(alias="from")
    into: str
    upto: int
    claims: list[str]
    conflicts: list[MergeConflict]
    seq: int | None = None
    approval: bool | None = None
    reason: str | None = None


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


def model(name: str) -> type[BaseModel]:
    """The model called ``name`` (as the route table spells it)."""
    found = globals().get(name)
    if name not in __all__ or not (isinstance(found, type) and issubclass(found, BaseModel)):
        raise KeyError(f"no API model {name!r}")
    return found

"""The values a policy sees and returns: :class:`TurnContext` in, :class:`HookResult` out.

A policy is a plain object with a ``name`` and one method per phase it cares
about (``after_tool_batch(ctx) -> HookResult | None`` …). It never calls a tool:
it reads what already happened and answers with notes and short instructions.
Standard library only (this runs inside the host's hook process).
"""

from __future__ import annotations

from collections.abc import Mapping

from infomark.gates.decision import Decision, FinishDecision
from infomark.kernel.records import dataclass, field
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence
from infomark.ledger.report import IngestReport
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ALL_PHASES",
    "EXTRA_PHASES",
    "PHASES",
    "FinalizeVerdict",
    "HookResult",
    "PackSettings",
    "ToolResult",
    "TurnContext",
]

#: The four turn hooks of the adaptive runtime, in the order a turn meets them.
PHASES = ("before_model_call", "after_model_response", "after_tool_batch", "before_finalize")
#: infomark's own additions: a denied call, and host-reported usage/compaction.
EXTRA_PHASES = ("after_decision", "host_report")
ALL_PHASES = PHASES + EXTRA_PHASES


@dataclass(frozen=True, slots=True)
class PackSettings:
    """One policy's effective settings: its defaults with ``pack_overrides.<name>`` applied."""

    threshold: float | None = None
    severity: int = 5
    expires_after: int = 2
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One executed call of a tool batch, with the evidence the ledger issued for it."""

    call: ToolCall
    outcome: ToolOutcome
    evidence: Evidence | None = None
    tool_class: str = "unknown"

    @property
    def failed(self) -> bool:
        if self.evidence is not None:
            return self.evidence.outcome.value in ("FAIL", "ERROR")
        return self.outcome.failed


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a hook sees. Callers set the inputs; the runtime fills in the rest.

    Inputs (set by whoever runs the phase): ``prompt`` (a new user request, at
    ``before_model_call``), ``tool_results`` (``after_tool_batch``), ``report``
    (``after_model_response``), ``call``/``decision`` (``after_decision``),
    ``final_text``/``finish`` (``before_finalize``), ``tokens_used``,
    ``context_window``, ``compacted`` (``host_report``), ``meta`` (free task
    metadata). Filled by the runtime: ``phase``, ``state`` (the session's ledger
    projection, read-only), ``metrics``, ``working_set``, ``memory``, ``turn``
    (user prompts so far), ``settings`` (this policy's), ``policy_state``
    (what this policy stored last time through :attr:`HookResult.state`),
    ``recent_messages`` (the last user prompts and agent responses, oldest first, each
    ``{"role", "text", "turn"}`` clipped to 200 characters) and ``pending_turn`` (the user
    request being worked on: ``{"prompt", "turn", "calls", "responses", "finish_attempts"}``,
    None before the first prompt).
    """

    prompt: str | None = None
    tool_results: tuple[ToolResult, ...] = ()
    report: IngestReport | None = None
    response_text: str = ""  # the parsed response (``after_model_response``), when given
    call: ToolCall | None = None
    decision: Decision | None = None
    final_text: str = ""
    finish: FinishDecision | None = None
    tokens_used: int | None = None
    context_window: int | None = None
    compacted: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
    phase: str = ""
    turn: int = 0
    state: SessionState = field(default_factory=lambda: SessionState(session=""))
    metrics: Mapping[str, Any] = field(default_factory=dict)
    working_set: Mapping[str, Any] = field(default_factory=dict)
    memory: Mapping[str, Any] = field(default_factory=dict)
    settings: PackSettings = field(default_factory=PackSettings)
    policy_state: Mapping[str, Any] = field(default_factory=dict)
    recent_messages: tuple[Mapping[str, Any], ...] = ()
    pending_turn: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class HookResult:
    """A policy's answer for one phase.

    ``notes`` are observations kept in state (``last_hook_results``);
    ``instructions`` become the policy's instruction pack (one short text);
    ``events`` are human-readable audit lines; ``continue_=False`` at
    ``before_finalize`` refuses the finish with the instructions as the reason.

    Pack bookkeeping: a result with instructions *fires* the pack; ``key`` says
    which firing it is (the same key as the last firing → nothing new; another
    key → added, or renewed while active). A result without instructions means
    "the condition does not hold now" and re-arms the pack; ``resolved=True``
    also removes it if active. ``None`` instead of a result means "no opinion".
    ``state`` (small JSON) is stored and handed back as ``ctx.policy_state``.
    """

    notes: tuple[str, ...] = ()
    instructions: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    continue_: bool = True
    key: str | None = None
    reason: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    resolved: bool = False
    state: Mapping[str, Any] | None = None

    @property
    def fired(self) -> bool:
        return bool(self.instructions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "notes": list(self.notes),
            "instructions": list(self.instructions),
            "events": list(self.events),
            "continue": self.continue_,
        }


@dataclass(frozen=True, slots=True)
class FinalizeVerdict:
    """The policy layer's view on finishing; the Gatekeeper refuses if it or the ledger refuses.

    ``reason`` is what to tell the agent when ``allow`` is False (the trigger
    prompts, or a custom policy's refusal); ``fired`` names the triggers that
    fired or were repeated; ``packs`` names the instruction packs added or
    renewed, whose text is ``instructions`` (append it to whichever reason the
    agent gets).
    """

    allow: bool
    reason: str
    fired: list[str] = field(default_factory=list)
    instructions: str = ""
    packs: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Reason and instructions together, for a host with one text channel."""
        return "\n\n".join(t for t in (self.reason, self.instructions) if t)

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow": self.allow,
            "reason": self.reason,
            "fired": list(self.fired),
            "instructions": self.instructions,
            "packs": list(self.packs),
        }

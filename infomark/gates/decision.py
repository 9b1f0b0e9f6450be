"""Decisions: the gatekeeper's verdict on one tool call, and on finishing.

Frozen dataclasses built by named constructors; there is no default verdict, so
no code path falls through to allow.
"""

from __future__ import annotations

from infomark.kernel.enums import StrEnum
from infomark.kernel.records import dataclass, field, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Decision", "FinishDecision", "Verdict"]


class Verdict(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str
    tool_class: str
    gate: str
    profile: str
    ungrounded: tuple[tuple[str, str], ...] = ()
    bypass: bool = False
    dryrun: bool = False
    code: str = "allowed"
    families: tuple[str, ...] = ()
    why: tuple[str, ...] = ()  # classification reasons
    decision_id: str = ""
    tool: str = ""
    instructions: str = ""  # instruction packs fired by this decision (policy layer)
    call_id: str = ""  # the id its record must name (the host's tool_use_id when it has one)

    @classmethod
    def allow(cls, code: str, reason: str, **kw: Any) -> Decision:
        return cls(verdict=Verdict.ALLOW, code=code, reason=reason, **kw)

    @classmethod
    def deny(cls, code: str, reason: str, **kw: Any) -> Decision:
        return cls(verdict=Verdict.DENY, code=code, reason=reason, **kw)

    @classmethod
    def ask(cls, code: str, reason: str, **kw: Any) -> Decision:
        return cls(verdict=Verdict.ASK, code=code, reason=reason, **kw)

    def with_id(self, decision_id: str) -> Decision:
        return replace(self, decision_id=decision_id)

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.verdict.value,
            "reason": self.reason,
            "code": self.code,
            "tool": self.tool,
            "tool_class": self.tool_class,
            "families": list(self.families),
            "gate": self.gate,
            "ungrounded": [{"id": i, "status": s} for i, s in self.ungrounded],
            "bypass": self.bypass,
            "dryrun": self.dryrun,
            "profile": self.profile,
            "decision_id": self.decision_id,
            "why": list(self.why),
            "instructions": self.instructions,
            "call_id": self.call_id,
        }


@dataclass(frozen=True, slots=True)
class FinishDecision:
    allow: bool
    reason: str
    code: str
    stale: tuple[str, ...] = ()
    ungrounded: tuple[tuple[str, str], ...] = ()
    completion_claimed: bool = False
    cap_reached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow": self.allow,
            "reason": self.reason,
            "code": self.code,
            "stale": list(self.stale),
            "ungrounded": [{"id": i, "status": s} for i, s in self.ungrounded],
            "completion_claimed": self.completion_claimed,
            "cap_reached": self.cap_reached,
            **self.extra,
        }

"""Read-only views of a session: its ledger and its gate (``gk.ledger()``, ``gk.gate()``)."""

from __future__ import annotations

from infomark.gates.config import Config
from infomark.gates.enforcement import enforced_at
from infomark.gates.machine import loop_budget
from infomark.kernel.graph import DEFAULT_GRAPH
from infomark.kernel.records import dataclass
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GateView", "LedgerView", "gate_view", "ledger_view"]


@dataclass(frozen=True, slots=True)
class LedgerView:
    """A read-only view of the session's ledger."""

    session: str
    claims: tuple[dict[str, Any], ...]
    premises: tuple[str, ...]
    open_questions: tuple[str, ...]
    ungrounded: tuple[tuple[str, str], ...]
    grounded: bool
    gate: str
    has_ledger: bool

    def claim(self, claim_id: str) -> dict[str, Any] | None:
        return next((c for c in self.claims if c["id"] == claim_id), None)

    def status(self, claim_id: str) -> str | None:
        c = self.claim(claim_id)
        return None if c is None else str(c["status"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "claims": list(self.claims),
            "premises": list(self.premises),
            "open_questions": list(self.open_questions),
            "ungrounded": [{"id": i, "status": s} for i, s in self.ungrounded],
            "grounded": self.grounded,
            "gate": self.gate,
            "has_ledger": self.has_ledger,
        }


@dataclass(frozen=True, slots=True)
class GateView:
    """Where the session stands in the gate graph, and what it may do from there."""

    position: str
    allowed_moves: tuple[str, ...]
    loop_budget: int
    budget_used: int
    profile: str
    enforced: str = ""  # what the profile enforces at this gate (gates/enforcement.py)

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "allowed_moves": list(self.allowed_moves),
            "loop_budget": self.loop_budget,
            "budget_used": self.budget_used,
            "profile": self.profile,
            "enforced": self.enforced,
        }


def ledger_view(session: str, state: SessionState) -> LedgerView:
    from infomark.ledger.audit import claim_rows  # off the hook's import path

    return LedgerView(
        session=session,
        claims=tuple(claim_rows(state)),
        premises=tuple(state.premises),
        open_questions=tuple(state.open_questions),
        ungrounded=tuple(state.ungrounded_premises()),
        grounded=state.has_ledger and state.premises_grounded(),
        gate=state.gate,
        has_ledger=state.has_ledger,
    )


def gate_view(state: SessionState, config: Config) -> GateView:
    pos = state.gate
    is_gate = pos in DEFAULT_GRAPH.gate_ids
    return GateView(
        position=pos,
        allowed_moves=DEFAULT_GRAPH.allowed_moves(pos) if is_gate else (),
        loop_budget=loop_budget(pos, config) if is_gate else 0,
        budget_used=state.gate_budget_used.get(pos, 0),
        profile=config.profile,
        enforced=enforced_at(config.profile, pos),
    )

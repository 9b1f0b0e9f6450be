"""Gate moves over one session's journal: agent ``gate:`` lines, runtime tracking, resumes.

The pure rules live in :mod:`infomark.gates.machine` (``plan_move``) and
:mod:`infomark.gates.position` (``derived_position``, ``track``); this module journals
their outcome as ``gate_moved`` / ``gate_refused`` events. Callers hold the ledger's
transaction.
"""

from __future__ import annotations

from infomark.gates.config import Config
from infomark.gates.machine import plan_move
from infomark.gates.position import track
from infomark.kernel.graph import TERMINALS
from infomark.ledger.engine import Ledger
from infomark.ledger.report import IngestReport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["apply_gate_moves", "blocked_reason", "resume", "track"]


def apply_gate_moves(ledger: Ledger, config: Config, report: IngestReport) -> None:
    """Journal the gate moves an ingest found; ``report.gate_moves`` becomes their results."""
    moves = report.gate_moves
    report.gate_moves = []
    for move in moves:
        state = ledger.state
        if move.get("question") is not None:  # a question for the user: lawful anywhere
            ledger.emit(
                "gate_moved",
                {
                    "from": state.gate,
                    "to": "WAITING_APPROVAL",
                    "kind": "question",
                    "by": "agent",
                    "guard": "needs_approval",
                    "question": str(move["question"])[:2000],
                },
            )
            report.gate_moves.append(
                {"from": state.gate, "to": "WAITING_APPROVAL", "ok": True, "reason": "question"}
            )
            continue
        result = plan_move(state, str(move["gate"]), config)
        payload: dict[str, Any] = result.payload("agent")
        if move.get("reason"):
            payload["declared_reason"] = str(move["reason"])[:2000]
        ledger.emit("gate_moved" if result.ok else "gate_refused", payload)
        report.gate_moves.append(
            {"from": result.src, "to": result.dst, "ok": result.ok, "reason": result.reason}
        )


def resume(ledger: Ledger, config: Config) -> None:
    """A new user turn after a terminal: the work resumes (strict: where it stood)."""
    state = ledger.state
    if state.gate not in TERMINALS:
        return
    back = _gate_before_terminal(ledger) if config.profile.walks_graph else None
    ledger.emit(
        "gate_moved",
        {"from": state.gate, "to": back or "G0", "kind": "resume", "by": "user", "guard": ""},
    )
    if back is None:
        track(ledger, config)


def _terminal_move(ledger: Ledger) -> dict[str, Any] | None:
    """The payload of the move that entered the current gate."""
    state = ledger.state
    for row in ledger.journal.events(ledger.session, after=state.gate_seq - 1):
        if row.type == "gate_moved" and row.seq == state.gate_seq:
            return dict(row.payload)
    return None


def _gate_before_terminal(ledger: Ledger) -> str | None:
    move = _terminal_move(ledger)
    src = str(move.get("from", "")) if move else ""
    return src if src and src not in TERMINALS else None


def blocked_reason(ledger: Ledger) -> str:
    """What the agent said when it declared itself blocked (or asked its question)."""
    p = _terminal_move(ledger) or {}
    return str(p.get("declared_reason") or p.get("question") or p.get("reason") or "")[:2000]

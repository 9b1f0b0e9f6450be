"""Held calls and the operator's approval of one (``infomark held``, ``approve --call``).

A call the gate holds (``ask``: a destructive command, a protected file) is journaled as a
``decision`` event with its ``decision_id``, the tool, the input's digest and the input
itself (``held_input``, clipped). Where nobody can answer the host's own prompt (an MCP
client, an unattended run) the operator approves it out of band: :func:`approve_held`
appends a ``call_approved`` event, and the next call of the same tool with exactly the same
input is allowed once (``operator_approved``), then the approval is spent.

Only the operator's CLI calls this: no MCP tool and no HTTP route approves a held call, and
the agent's own attempts to run ``infomark`` are denied by self-protection
(``protected_cli``), so the approval never lives in the agent's reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from infomark.kernel.errors import UserError
from infomark.ledger.state import held_key

if TYPE_CHECKING:
    from infomark.ledger.engine import Ledger

__all__ = ["HeldCall", "approve_held", "held_calls"]


@dataclass(frozen=True)
class HeldCall:
    decision_id: str
    seq: int
    timestamp: str
    tool: str
    input: str  # canonical JSON, clipped
    input_digest: str
    code: str
    reason: str
    status: str  # pending, approved (not yet used), used
    grading: str = ""  # a held change of a grading file (approved with --grading instead)

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision_id": self.decision_id,
            "seq": self.seq,
            "timestamp": self.timestamp,
            "tool": self.tool,
            "input": self.input,
            "input_digest": self.input_digest,
            "code": self.code,
            "reason": self.reason,
            "status": self.status,
        }


def held_calls(ledger: Ledger) -> list[HeldCall]:
    """Every call held in ``ledger``'s session, newest first, with its approval status."""
    held: dict[str, dict[str, Any]] = {}
    approved: set[str] = set()
    used: set[str] = set()
    for row in ledger.journal.events(ledger.session, types=("decision", "call_approved")):
        p = row.payload
        if row.type == "call_approved":
            approved.add(str(p.get("decision_id")))
        elif p.get("approval_of"):
            used.add(str(p["approval_of"]))
        elif p.get("decision") == "ask" and p.get("decision_id"):
            held[str(p["decision_id"])] = {**p, "_seq": row.seq, "_ts": row.timestamp}
    out = []
    for did, p in held.items():
        status = "used" if did in used else "approved" if did in approved else "pending"
        out.append(
            HeldCall(
                decision_id=did,
                seq=int(p["_seq"]),
                timestamp=str(p["_ts"]),
                tool=str(p.get("tool", "")),
                input=str(p.get("held_input", "")),
                input_digest=str(p.get("input_digest", "")),
                code=str(p.get("code", "")),
                reason=str(p.get("reason", "")),
                status=status,
                grading=str(p.get("grading") or ""),
            )
        )
    out.sort(key=lambda h: h.seq, reverse=True)
    return out


def approve_held(ledger: Ledger, decision_id: str, *, by: str, note: str = "") -> HeldCall:
    """Approve the held call ``decision_id`` once; a :class:`UserError` when there is none."""
    with ledger.transaction():
        calls = {h.decision_id: h for h in held_calls(ledger)}
        call = calls.get(decision_id)
        if call is None:
            import difflib

            near = difflib.get_close_matches(decision_id, list(calls), n=3, cutoff=0.5)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise UserError(
                f"no held call {decision_id!r} in session {ledger.session}{hint}; "
                "`infomark held` lists them"
            )
        if call.grading:
            raise UserError(
                f"the held call {decision_id} changes the grading file {call.grading}; approve "
                f"that with `infomark approve --grading {call.grading}`"
            )
        if call.status != "pending":
            raise UserError(
                f"the held call {decision_id} is already {call.status}; "
                "hold it again (the agent retries) to approve it anew"
            )
        if held_key(call.tool, call.input_digest) in ledger.state.approved_calls:
            raise UserError(f"an identical call is already approved and not yet used ({call.tool})")
        ledger.emit(
            "call_approved",
            {
                "decision_id": decision_id,
                "tool": call.tool,
                "input_digest": call.input_digest,
                "by": by,
                "note": note[:500],
            },
        )
    return call

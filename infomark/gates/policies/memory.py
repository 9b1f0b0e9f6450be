"""Working memory: a small runtime-owned scratchpad for the next turn.

Computed from the ledger projection, the metrics and the working set after each
tool batch (and after a prompt or a parsed response), never from a model call.
Bounded: every list is capped and every string clipped. Versioned: ``version``
goes up only when a field changed, and only then is it journaled. Standard
library only.
"""

from __future__ import annotations

from collections.abc import Mapping

from infomark.ledger.state import ClaimState, SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MEMORY_FIELDS", "build_memory", "merge_memory"]

MEMORY_FIELDS = (
    "goal",
    "active_subgoal",
    "evidence",
    "open_questions",
    "recent_failures",
    "pending_verification",
    "next_best_actions",
)
_GOAL_MAX = 240
_TEXT_MAX = 100
_PENDING_CAP = 8
_QUESTIONS_CAP = 5
_ACTIONS_CAP = 3


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pending(state: SessionState) -> list[dict[str, Any]]:
    """Claims awaiting a stamp: ungrounded premises, claims with an oracle, stale ones."""
    stale = set(state.stale_claims())
    premises = set(state.premises)
    out: list[dict[str, Any]] = []
    for c in state.claims.values():
        if c.id in stale:
            out.append({"id": c.id, "status": c.status, "oracle": c.oracle, "why": "stale"})
        elif not c.grounded and (c.id in premises or c.oracle):
            why = "premise" if c.id in premises else "oracle declared"
            out.append({"id": c.id, "status": c.status, "oracle": c.oracle, "why": why})
    for pid, status in state.ungrounded_premises():
        if status == "missing":
            out.append({"id": pid, "status": "missing", "oracle": None, "why": "premise"})
    return out[:_PENDING_CAP]


def _subgoal(state: SessionState, pending: list[dict[str, Any]]) -> str | None:
    for pid, _ in state.ungrounded_premises():
        claim = state.claims.get(pid)
        text = f": {_clip(claim.text, _TEXT_MAX)}" if claim is not None else " (not declared)"
        return f"ground premise {pid}{text}"
    for p in pending:
        claim = state.claims.get(p["id"])
        if claim is not None:
            verb = "re-verify" if p["why"] == "stale" else "verify"
            return f"{verb} {claim.id}: {_clip(claim.text, _TEXT_MAX)}"
    return None


def _action_for(claim: ClaimState | None, cid: str, why: str) -> str:
    if claim is None:
        return f"declare {cid} in a claim_ledger, or drop it from premises_for_plan"
    if claim.oracle:
        verb = "re-run" if why == "stale" else "run"
        return f"{verb} `{_clip(claim.oracle, 80)}` and stamp {cid}"
    return f"declare an oracle for {cid}, or stamp an observation with inference_stamp"


def _actions(
    state: SessionState,
    pending: list[dict[str, Any]],
    metrics: Mapping[str, Any],
    working_set: Mapping[str, Any],
) -> list[str]:
    out: list[str] = []
    failure = metrics.get("last_failure")
    if metrics.get("consecutive_failures") and failure:
        out.append(
            f"read the failure of `{_clip(str(failure['command']), 60)}` "
            f"({_clip(str(failure['first_line']), 60)}) before retrying"
        )
    order = {"stale": 0, "premise": 1, "oracle declared": 2}
    for p in sorted(pending, key=lambda p: order.get(p["why"], 3)):
        out.append(_action_for(state.claims.get(p["id"]), p["id"], p["why"]))
    if not state.has_ledger and (
        working_set.get("files_edited") or working_set.get("files_written")
    ):
        out.append("declare a claim_ledger with the premises of the change and how to check it")
    return list(dict.fromkeys(out))[:_ACTIONS_CAP]


def build_memory(
    state: SessionState,
    *,
    goal: str | None,
    metrics: Mapping[str, Any],
    working_set: Mapping[str, Any],
) -> dict[str, Any]:
    """The memory fields (without ``version``) as of now."""
    pending = _pending(state)
    questions = []
    for q in state.open_questions[:_QUESTIONS_CAP]:
        claim = state.claims.get(q)
        questions.append(
            f"{q}: {_clip(claim.text, _TEXT_MAX)}" if claim is not None else _clip(q, _TEXT_MAX)
        )
    return {
        "goal": _clip(goal, _GOAL_MAX) if goal else None,
        "active_subgoal": _subgoal(state, pending),
        "evidence": [dict(e) for e in working_set.get("evidence", [])],
        "open_questions": questions,
        "recent_failures": [
            {"command": f["command"], "first_line": f["first_line"]}
            for f in working_set.get("failures", [])
        ],
        "pending_verification": pending,
        "next_best_actions": _actions(state, pending, metrics, working_set),
    }


def merge_memory(
    old: Mapping[str, Any] | None, fields: Mapping[str, Any], turn: int
) -> tuple[dict[str, Any], list[str]]:
    """The new memory and the names of the fields that changed (empty: nothing to journal)."""
    prev = dict(old or {})
    changed = [k for k in MEMORY_FIELDS if prev.get(k) != fields.get(k)]
    if not changed:
        return prev, []
    memory = {k: fields.get(k) for k in MEMORY_FIELDS}
    memory["version"] = int(prev.get("version", 0)) + 1
    memory["updated_turn"] = turn
    return memory, changed

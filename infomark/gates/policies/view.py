"""Read-only views of the policy state: the context view and the state document.

:func:`context_view` is what goes into the next model call: the active packs,
the working memory and a short ledger summary, each tagged
(``[infomark:pack NAME]``, ``[infomark:memory]``, ``[infomark:ledger]``) and
together within a character budget. Every memory line and the ledger line carry their
rank and source (:mod:`infomark.ledger.carry`): ``[Inferred summary of seq A–B]`` for what
the runtime derived, ``[execution ev_…]`` (its evidence class, not a rank) for an
evidence handle, and each claim its own rank
and the ref it rests on. :func:`state_document` is the whole runtime
state as one JSON document (seed 000's ``state.json``). Neither emits anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from infomark.gates.policies.memory import MEMORY_FIELDS
from infomark.gates.policies.metrics import new_metrics, new_working_set
from infomark.gates.policies.packs import render_pack
from infomark.gates.policies.triggers import trigger_metrics
from infomark.ledger.carry import claim_tag, evidence_tag, summary_tag
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gates.policies.settings import PolicySettings

__all__ = [
    "STATE_DOCUMENT_VERSION",
    "active_packs",
    "context_view",
    "state_document",
    "view_refs",
]

STATE_DOCUMENT_VERSION = 1


def _clip(text: str, limit: int) -> str:
    if limit <= 0:
        return ""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def active_packs(state: SessionState) -> list[dict[str, Any]]:
    """The active packs, most severe first (newest first on a tie)."""
    packs = (state.policy.get("packs") or {}).get("active", [])
    return sorted(packs, key=lambda p: (-int(p["severity"]), -int(p["order"])))


Handles = Mapping[str, tuple[str, str]]


def _claims_tagged(state: SessionState, ids: Sequence[str], handles: Handles) -> str:
    out = []
    for cid in ids:
        claim = state.claims.get(cid)
        out.append(f"{cid} [missing]" if claim is None else f"{cid} {claim_tag(claim, handles)}")
    return ", ".join(out)


def _ledger_line(state: SessionState, handles: Handles | None = None) -> str:
    h = handles or {}
    parts = [f"[infomark:ledger] {summary_tag(state.ledger_seq or 1, state.seq)} gate {state.gate}"]
    if not state.has_ledger:
        parts.append("no claim_ledger yet")
        return "; ".join(parts)
    grounded = [c.id for c in state.claims.values() if c.grounded]
    parts.append("G: " + (_claims_tagged(state, grounded, h) if grounded else "(none)"))
    ungrounded = state.ungrounded_premises()
    if ungrounded:
        parts.append(
            "ungrounded premises: " + _claims_tagged(state, [cid for cid, _ in ungrounded], h)
        )
    stale = state.stale_claims()
    if stale:
        parts.append("stale evidence: " + ", ".join(stale))
    pending = [
        c.id
        for c in state.claims.values()
        if not c.grounded and c.oracle and c.id not in state.premises
    ]
    if pending:
        parts.append("pending verification: " + _claims_tagged(state, pending, h))
    return "; ".join(parts)


def _evidence_item(e: Mapping[str, Any], handles: Handles) -> str:
    label, why = handles.get(str(e["ref"]), ("evidence", ""))
    return f"{evidence_tag(str(e['ref']), label, why)} {e['tool']} {e['outcome']}"


_WS_FILES = 5


def _working_files(ws: Mapping[str, Any]) -> str:
    """``read a.py, b.py; edited c.py; written d.md``: the last few files of each kind."""
    parts = []
    for key, word in (
        ("files_read", "read"),
        ("files_edited", "edited"),
        ("files_written", "written"),
    ):
        files = [str(f) for f in (ws.get(key) or [])][-_WS_FILES:]
        if files:
            parts.append(f"{word} " + ", ".join(reversed(files)))
    return "; ".join(parts)


def _memory_lines(
    memory: Mapping[str, Any],
    seq: int = 0,
    handles: Handles | None = None,
    working_set: Mapping[str, Any] | None = None,
) -> list[str]:
    """Memory fields as short lines, most useful first, each tagged with rank and source."""
    tag = summary_tag(1, seq) + " "
    lines: list[str] = []
    if memory.get("goal"):
        lines.append(f"{tag}goal: {memory['goal']}")
    if memory.get("active_subgoal"):
        lines.append(f"{tag}subgoal: {memory['active_subgoal']}")
    if memory.get("next_best_actions"):
        lines.append(f"{tag}next: " + "; ".join(memory["next_best_actions"]))
    if memory.get("pending_verification"):
        lines.append(
            f"{tag}pending: "
            + "; ".join(
                f"{p['id']} ({p['status']}, {p['why']})" for p in memory["pending_verification"]
            )
        )
    if working_set:
        files = _working_files(working_set)
        if files:
            lines.append(f"{tag}working set: {files}")
    if memory.get("recent_failures"):
        lines.append(
            f"{tag}failures: "
            + "; ".join(
                f"`{f['command']}`: {f['first_line']}" for f in memory["recent_failures"][-3:]
            )
        )
    if memory.get("open_questions"):
        lines.append(f"{tag}open questions: " + "; ".join(memory["open_questions"]))
    if memory.get("evidence"):
        lines.append(
            "evidence: "
            + ", ".join(_evidence_item(e, handles or {}) for e in memory["evidence"][-4:])
        )
    return lines


def context_view(state: SessionState, budget: int = 1200, handles: Handles | None = None) -> str:
    """Packs, working memory and ledger summary within ``budget`` characters (packs first).

    ``handles`` (ref → (rank, why)) says which evidence refs are live handles; a ref it does
    not list is shown as ``Exact`` (the caller checks the refs it shows).
    """
    room = budget
    packs: list[str] = []
    for p in active_packs(state):
        line = render_pack(p)
        if len(line) + 1 > room:
            break
        packs.append(line)
        room -= len(line) + 1
    ledger = _clip(_ledger_line(state, handles), room - 1)
    room -= len(ledger) + 1 if ledger else 0
    memory: list[str] = []
    lines = _memory_lines(
        state.policy.get("memory") or {},
        state.seq,
        handles,
        state.policy.get("working_set") or {},
    )
    if lines and room > len("[infomark:memory]") + 20:
        memory.append("[infomark:memory]")
        room -= len(memory[0]) + 1
        for line in lines:
            if room < 24:
                break
            clipped = _clip(line, room - 1)
            memory.append(clipped)
            room -= len(clipped) + 1
    return "\n".join(packs + (memory if len(memory) > 1 else []) + ([ledger] if ledger else []))


def view_refs(state: SessionState) -> list[str]:
    """The evidence refs a context view shows (stamps and recent evidence), to rank them."""
    memory = state.policy.get("memory") or {}
    recent = [str(e["ref"]) for e in (memory.get("evidence") or [])[-4:]]
    stamped = [c.stamp.evidence_ref for c in state.claims.values() if c.stamp is not None]
    return list(dict.fromkeys([*stamped, *recent]))


def _claims(state: SessionState) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id,
            "status": c.status,
            "written": c.written,
            "oracle": c.oracle,
            "stamp": None
            if c.stamp is None
            else {
                "kind": c.stamp.kind,
                "evidence_ref": c.stamp.evidence_ref,
                "result": c.stamp.result,
            },
        }
        for c in state.claims.values()
    ]


def state_document(
    state: SessionState,
    settings: PolicySettings | None = None,
    names: Sequence[str] = (),
) -> dict[str, Any]:
    """The policy runtime's state and the ledger view it acts on, as JSON-ready data.

    ``settings`` and ``names`` are the running policy runtime's (its triggers, limits and
    policy names); without them the document holds the journaled state only.
    """
    policy = state.policy
    metrics = {**new_metrics(), **(policy.get("metrics") or {})}
    memory = policy.get("memory") or {}
    triggers = trigger_metrics(policy.get("triggers"))
    if settings is not None:
        triggers["configured"] = [
            {"name": t.name, "when": t.when(), "requires_read": list(t.requires_read)}
            for t in settings.triggers
        ]
    packs = []
    for p in active_packs(state):
        packs.append(
            {
                "name": p["name"],
                "text": p["text"],
                "severity": p["severity"],
                "reason": p["reason"],
                "evidence": p["evidence"],
                "added_turn": p["added_turn"],
                "renewed_turn": p["renewed_turn"],
                "expires_after": p["expires_after"],
                "expires_at_turn": int(p["renewed_turn"]) + int(p["expires_after"]),
                "renewals": p["renewals"],
            }
        )
    doc: dict[str, Any] = {
        "v": STATE_DOCUMENT_VERSION,
        "session": state.session,
        "seq": state.seq,
        "turn": metrics["prompts"],
        "active_instruction_packs": packs,
        "last_hook_results": dict(policy.get("last_hook_results") or {}),
        "working_memory": {k: memory.get(k) for k in (*MEMORY_FIELDS, "version", "updated_turn")},
        "turn_metrics": metrics,
        "working_set": {**new_working_set(), **(policy.get("working_set") or {})},
        "triggers": triggers,
        "recent_messages": list((policy.get("conversation") or {}).get("recent") or []),
        "pending_turn": (policy.get("conversation") or {}).get("pending"),
        "ledger": {
            "has_ledger": state.has_ledger,
            "claims": _claims(state),
            "premises": list(state.premises),
            "open_questions": list(state.open_questions),
            "grounded": [c.id for c in state.claims.values() if c.grounded],
            "ungrounded": [{"id": i, "status": s} for i, s in state.ungrounded_premises()],
            "stale": state.stale_claims(),
        },
        "gate": {
            "position": state.gate,
            "entered_seq": state.gate_seq,
            "budget_used": dict(state.gate_budget_used),
        },
    }
    if settings is not None:
        doc["policies"] = list(names)
        doc["limits"] = {
            "max_active_packs": settings.max_active_packs,
            "pack_budget_chars": settings.pack_budget_chars,
        }
    return doc

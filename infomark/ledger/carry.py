"""Memory ranks: what the runtime shows the model, tagged with its rank and its source.

Everything infomark puts in front of a model is one of two things, and its tag says which:

* a **handle**: something infomark holds verbatim and can show again (a recorded evidence
  whose signed record verifies and whose output blob is present), labelled by its evidence
  class, not by a rank (a handle is not a grade): ``[execution ev_…]``, ``[observation
  ev_…]``, ``[web ev_…]``; a handle whose record or blob is gone is ``[gone ev_… blob
  missing]``;
* a **summary** infomark derived from the journal (the working memory, the ledger line):
  ``[Inferred summary of seq 12–40]``, naming the span of events it was computed from.

A claim is shown with its own rank and what that rank rests on: ``C1 [Exact ev_…]`` (its
stamp), ``C2 [Hypothetical as declared, seq 12]`` (no stamp: the rank the agent wrote,
demoted).

**Across a compaction** (:func:`carry_over`), a claim keeps its rank only while its evidence
is valid: the record verifies, its blob is present and unaltered, and it is not stale (no
modification after it). Otherwise the stamp is revoked and the claim drops to Unknown, with
the reason (a ``divergence`` event, cause ``compaction``). What survives is re-injected
verbatim (:func:`carry_block`): every claim id with its rank and evidence ref, the premises,
and the live evidence refs, so the agent can keep stamping after the host summarised its
context. ``compaction_carried`` journals exactly what was carried. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from infomark.kernel.infomark import InfoMark
from infomark.ledger.state import ClaimState, SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.ledger.stamps.source import SourceContext

__all__ = [
    "GONE",
    "carry_block",
    "carry_over",
    "carry_over_view",
    "claim_tag",
    "evidence_tag",
    "handle_ranks",
    "summary_tag",
]

_LIVE_CAP = 8
GONE = "gone"
"""The label of a handle whose record or blob is no longer there."""
_TEXT_MAX = 100


def summary_tag(first: int, last: int) -> str:
    """``[Inferred summary of seq A–B]``: derived by the runtime from those journal events."""
    if last <= 0:
        return "[Inferred summary of no events yet]"
    first = min(max(1, first), last)
    span = f"seq {first}" if last == first else f"seq {first}–{last}"
    return f"[Inferred summary of {span}]"


def evidence_tag(ref: str, label: str = "evidence", why: str = "") -> str:
    """``[execution ev_…]`` for a live handle (its class); ``[gone ev_… blob missing]``."""
    return f"[{label} {ref}{' ' + why if why else ''}]"


def claim_tag(claim: ClaimState, handles: Mapping[str, tuple[str, str]] | None = None) -> str:
    """A claim's rank and what it rests on: its stamp's ref, or the rank as declared."""
    if claim.stamp is None:
        return f"[{claim.status} as declared, seq {claim.declared_seq}]"
    ref = claim.stamp.evidence_ref
    label, why = (handles or {}).get(ref, ("", ""))
    if label == GONE:  # the stamp's handle is gone: say so, whatever the status
        return f"[{claim.status} {ref}, its evidence {why}]"
    return f"[{claim.status} {ref}]"


def _handle(ctx: SourceContext, ref: str, deep: bool) -> tuple[str, str]:
    """``(label, why)`` of an evidence handle now: its class, or ``gone`` with the reason."""
    ev, why = ctx.verify_ref(ref)
    if ev is None:
        return GONE, (why.value if why is not None else "unknown_evidence").replace("_", " ")
    live = (str(ev.evidence_class), "")
    if not deep:
        return live if ctx.blobs.exists(ev.output_digest) else (GONE, "blob missing")
    ok = ctx.blobs.verify(ev.output_digest)
    if ok is None:
        return GONE, "blob missing"
    if ok is False:
        return GONE, "blob altered"
    return live


def handle_ranks(
    ctx: SourceContext, refs: Iterable[str], *, deep: bool = True
) -> dict[str, tuple[str, str]]:
    """Each evidence handle's label: its class while its record verifies and its blob is
    there, else ``gone``.

    ``deep`` also re-hashes each blob (at a compaction); without it the blob's presence is
    checked (every context view).
    """
    return {ref: _handle(ctx, ref, deep) for ref in dict.fromkeys(refs)}


def _why_invalid(
    state: SessionState, claim: ClaimState, handles: Mapping[str, tuple[str, str]]
) -> str | None:
    stamp = claim.stamp
    if stamp is None or not claim.mark > InfoMark.UNKNOWN:
        return None
    label, why = handles.get(stamp.evidence_ref, ("", ""))
    if label == GONE:
        return f"its evidence {stamp.evidence_ref} is gone ({why})"
    if stamp.evidence_seq < state.last_modify_seq:
        return (
            f"its evidence {stamp.evidence_ref} (seq {stamp.evidence_seq}) is stale: a "
            f"modification at seq {state.last_modify_seq} came after it"
        )
    return None


def _live_refs(state: SessionState) -> list[str]:
    ws = state.policy.get("working_set") or {}
    recent = [str(e["ref"]) for e in ws.get("evidence", []) if isinstance(e, Mapping)]
    stamped = [c.stamp.evidence_ref for c in state.claims.values() if c.stamp is not None]
    return list(dict.fromkeys([*stamped, *recent[-_LIVE_CAP:]]))


def carry_over(ctx: SourceContext, *, trigger: str = "compaction") -> dict[str, Any]:
    """Drop every claim whose evidence is no longer valid to Unknown; journal what is carried.

    Call inside a transaction. Idempotent: a claim already dropped has no stamp left.
    """
    state = ctx.state
    handles = handle_ranks(ctx, _live_refs(state))
    dropped: list[dict[str, Any]] = []
    for claim in list(state.claims.values()):
        why = _why_invalid(state, claim, handles)
        if why is None:
            continue
        assert claim.stamp is not None
        ref = claim.stamp.evidence_ref  # the reducer drops the stamp as the event is applied
        ctx.emit(
            "divergence",
            {
                "claim_id": claim.id,
                "evidence_ref": None,
                "revoked_ref": ref,
                "status": InfoMark.UNKNOWN.label,
                "cause": "compaction",
                "reason": why,
            },
        )
        dropped.append({"claim_id": claim.id, "evidence_ref": ref, "why": why})
    state = ctx.state
    live = [ref for ref, (label, _) in handles.items() if label != GONE]
    carried = {
        "trigger": trigger,
        "claims": [
            {
                "id": c.id,
                "status": c.status,
                "evidence_ref": c.stamp.evidence_ref if c.stamp else None,
            }
            for c in state.claims.values()
        ],
        "premises": list(state.premises),
        "open_questions": list(state.open_questions),
        "live_evidence": live,
        "live_classes": {ref: handles[ref][0] for ref in live},
        "dropped": dropped,
    }
    ctx.emit("compaction_carried", carried)
    return carried


def carry_over_view(ctx: SourceContext) -> dict[str, Any]:
    """What :func:`carry_over` would carry now, without emitting (read-only).

    The ``dropped`` list is the latest compaction's, for the claims still dropped.
    """
    state = ctx.state
    handles = handle_ranks(ctx, _live_refs(state), deep=False)
    dropped: list[dict[str, Any]] = []
    last = None
    for row in ctx.journal.events(ctx.session, types=("compaction_carried",)):
        last = row.payload
    if last is not None:
        dropped = [
            d
            for d in last.get("dropped", [])
            if (c := state.claims.get(str(d.get("claim_id")))) is not None and c.stamp is None
        ]
    live = [ref for ref, (label, _) in handles.items() if label != GONE]
    return {
        "claims": [],
        "live_evidence": live,
        "live_classes": {ref: handles[ref][0] for ref in live},
        "dropped": dropped,
    }


def _clip(text: str, limit: int = _TEXT_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def carry_block(state: SessionState, carried: Mapping[str, Any], describe: Any = None) -> str:
    """The re-injection text after a compaction: ids, ranks and live refs, verbatim.

    ``describe(ref) -> str`` (optional) names what a live ref recorded (tool, command).
    """
    if not state.has_ledger and not carried.get("live_evidence"):
        return ""
    dropped = {d["claim_id"]: d for d in carried.get("dropped", [])}
    lines = [
        f"[infomark:carried] {summary_tag(1, state.seq)} the context was compacted; the "
        "ledger as infomark holds it, verbatim (keep stamping with these ids and refs):"
    ]
    for c in state.claims.values():
        if c.id in dropped:
            d = dropped[c.id]
            lines.append(
                f"- {c.id} [Unknown, dropped at compaction: {d['why']}] {_clip(c.text)!r}"
                + (f"; re-run `{_clip(c.oracle, 80)}` and stamp it again" if c.oracle else "")
            )
            continue
        oracle = f" (oracle `{_clip(c.oracle, 80)}`)" if c.oracle else ""
        lines.append(f"- {c.id} {claim_tag(c)} {_clip(c.text)!r}{oracle}")
    if state.has_ledger:
        lines.append(
            f"premises_for_plan: [{', '.join(state.premises)}]; "
            f"open_questions: [{', '.join(state.open_questions)}]"
        )
    live = list(carried.get("live_evidence", []))
    if live:
        parts = []
        classes = carried.get("live_classes") or {}
        for ref in live:
            what = describe(ref) if describe is not None else ""
            tag = evidence_tag(ref, str(classes.get(ref, "evidence")))
            parts.append(tag + (f" {what}" if what else ""))
        lines.append("live evidence: " + "; ".join(parts))
    return "\n".join(lines)

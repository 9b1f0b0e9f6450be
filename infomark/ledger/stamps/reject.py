"""What every stamp kind shares: its refusal (``stamp_rejected``) and its first checks."""

from __future__ import annotations

from infomark.kernel.reasons import RejectReason

TYPE_CHECKING = False
if TYPE_CHECKING:  # nothing at run time: the hook path stays free of pydantic
    from collections.abc import Callable, Mapping

    from infomark.ledger.blocks import DivergenceBlock, StampBlock
    from infomark.ledger.evidence import Evidence
    from infomark.ledger.report import IngestReport
    from infomark.ledger.state import ClaimState, SessionState

__all__ = ["claim_and_evidence", "reject_stamp"]


def reject_stamp(
    emit: Callable[[str, Mapping[str, object]], int],
    report: IngestReport,
    block: StampBlock | DivergenceBlock,
    reason: RejectReason,
    msg: str,
) -> None:
    """Journal why ``block`` was refused (with its line) and add it to ``report``."""
    emit(
        "stamp_rejected",
        {
            "kind": block.kind,
            "claim_id": block.claim_id,
            "evidence_ref": block.evidence_ref,
            "reason": reason.value,
            "message": msg,
            "line": block.span.line,
        },
    )
    report.stamps_rejected.append(
        {
            "claim_id": block.claim_id,
            "evidence_ref": block.evidence_ref,
            "reason": reason.value,
            "message": msg,
            "kind": block.kind,
        }
    )


def claim_and_evidence(
    state: SessionState,
    verify_ref: Callable[[str], tuple[Evidence | None, RejectReason | None]],
    block: StampBlock,
    reject: Callable[[RejectReason, str], None],
) -> tuple[ClaimState, Evidence] | None:
    """The stamped claim (declared, with a falsifier) and its verified evidence, or None after
    ``reject`` was told why: the checks oracle, inference and source stamps share, in order
    (first: an evidence_ref, which the legacy form never has)."""
    claim_id, evidence_ref = block.claim_id, block.evidence_ref
    if block.legacy or not evidence_ref:
        reject(
            RejectReason.MISSING_EVIDENCE,
            f"{block.kind} for {claim_id} has no evidence_ref; "
            f"{RejectReason.MISSING_EVIDENCE.hint}",
        )
        return None
    claim = state.claims.get(claim_id or "")
    if claim is None:
        reject(
            RejectReason.UNKNOWN_CLAIM,
            f"no claim {claim_id!r} in the active ledger; {RejectReason.UNKNOWN_CLAIM.hint}",
        )
        return None
    if not (claim.falsifier or "").strip():
        reject(
            RejectReason.MISSING_FALSIFIER,
            f"claim {claim.id} has no falsifier; {RejectReason.MISSING_FALSIFIER.hint}",
        )
        return None
    ev, why = verify_ref(evidence_ref)
    if ev is None:
        assert why is not None
        reject(why, f"{evidence_ref}: {why.hint}")
        return None
    return claim, ev


def predates_reopening(
    claim: ClaimState, ev: Evidence, ref: str, redo: str
) -> tuple[RejectReason, str] | None:
    """Why evidence ``ref`` cannot back ``claim``: it was recorded before the divergence that
    re-opened the claim (``redo`` tells the agent what to do instead); None when it was not."""
    if not (claim.reopened_seq and ev.seq < claim.reopened_seq):
        return None
    return (
        RejectReason.EVIDENCE_PREDATES_CLAIM,
        f"{ref} (seq {ev.seq}) predates the divergence that re-opened claim {claim.id} "
        f"(seq {claim.reopened_seq}); {redo}",
    )

"""One way to refuse a stamp: journal ``stamp_rejected`` and tell the ingest report."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # nothing at run time: the hook path stays free of pydantic
    from collections.abc import Callable, Mapping

    from infomark.kernel.reasons import RejectReason
    from infomark.ledger.blocks import DivergenceBlock, StampBlock
    from infomark.ledger.report import IngestReport

__all__ = ["reject_stamp"]


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

"""Ledger semantics: how parsed blocks change a session's claims.

Each function judges one block against the current state and emits events; the
reducer in :mod:`infomark.ledger.state` applies them. Only the runtime raises a
claim into G, and only through a stamp bound to evidence it issued.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from infomark.kernel.infomark import InfoMark
from infomark.kernel.reasons import RejectReason
from infomark.kernel.tools import ToolClass
from infomark.ledger.canonical import normalize_command, sha256_hex
from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
from infomark.ledger.report import IngestReport
from infomark.ledger.sources import SourceRules
from infomark.ledger.state import ClaimState, SessionState

if TYPE_CHECKING:
    from infomark.ledger.blocks import DivergenceBlock, LedgerBlock, StampBlock

__all__ = [
    "LedgerContext",
    "LedgerRules",
    "apply_divergence",
    "apply_ledger",
    "apply_stamp",
    "artifact_digest",
    "check_artifacts",
    "text_hash",
]


@dataclass(frozen=True, slots=True)
class LedgerRules:
    require_declared_oracle: bool = True
    reject_evidence_predating_claim: bool = True
    source_rules: SourceRules | None = None  # [sources]: None is the defaults


class LedgerContext(Protocol):
    """What the semantics need from the engine."""

    @property
    def state(self) -> SessionState: ...
    @property
    def rules(self) -> LedgerRules: ...
    @property
    def root(self) -> Path: ...
    def emit(self, type_: str, payload: Mapping[str, Any]) -> int: ...
    def verify_ref(self, ref: str) -> tuple[Evidence | None, RejectReason | None]: ...


def text_hash(text: str) -> str:
    return sha256_hex(text.strip().encode("utf-8", "surrogatepass"))


def artifact_digest(root: Path, artifact: str) -> str | None:
    """``sha256:<hex>`` of the artifact file now, or None when it cannot be read."""
    path = Path(artifact)
    if not path.is_absolute():
        path = root / path
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                h.update(chunk)
    except (OSError, ValueError):
        return None
    return "sha256:" + h.hexdigest()


def _demote(written: InfoMark) -> InfoMark:
    return InfoMark.HYPOTHETICAL if written.grounded else written


def _oracle_norm(oracle: str | None) -> str | None:
    return normalize_command(oracle) if oracle and oracle.strip() else None


def _warn(report: IngestReport, line: int, column: int, message: str) -> None:
    report.diagnostics.append(
        {"line": line, "column": column, "message": message, "severity": "warning"}
    )


# -- claim_ledger -----------------------------------------------------------------


def apply_ledger(ctx: LedgerContext, block: LedgerBlock, report: IngestReport) -> None:
    """A new ledger replaces the active one; stamped claims survive when omitted."""
    state = ctx.state
    if not block.claims and not block.premises_for_plan:
        _warn(
            report,
            block.span.line,
            block.span.column,
            "empty claim_ledger ignored: it has no claims and no premises_for_plan",
        )
        return
    claims_out: dict[str, dict[str, Any]] = {}  # by id: a repeated id is O(1), later wins
    revoked: dict[str, str] = {}
    demoted: dict[str, None] = {}
    for cb in block.claims:
        if cb.id in claims_out:
            _warn(
                report,
                cb.span.line,
                cb.span.column,
                f"claim id {cb.id!r} repeated; the later entry wins",
            )
            del claims_out[cb.id]
            demoted.pop(cb.id, None)
            revoked.pop(cb.id, None)
        text = (cb.text or "").strip()
        th = text_hash(text)
        written = InfoMark.parse(cb.status)
        old = state.claims.get(cb.id)
        oracle = _oracle_norm(cb.oracle)
        keep = False
        status = _demote(written)
        cause = "ledger"
        if old is not None and old.stamp is not None:
            same = old.text_hash == th and _falsifier_same(old, cb.falsifier)
            if same and (old.oracle == oracle or old.stamp.kind == "inference_stamp"):
                keep = True
                status = InfoMark.parse(old.status)
                cause = "carried"
            else:
                revoked[cb.id] = old.stamp.evidence_ref
                cause = "statement_changed"
        if written.grounded and not keep:
            demoted[cb.id] = None
        restated = old is not None and old.text_hash != th
        # A changed oracle, or a changed statement, re-declares the claim: evidence
        # produced before this point no longer speaks for it.
        oracle_new = oracle is not None and (old is None or old.oracle != oracle or restated)
        declared = None
        if oracle is not None and old is not None and not oracle_new:
            declared = old.oracle_declared_seq
        claims_out[cb.id] = {
            "id": cb.id,
            "text": text,
            "text_hash": th,
            "written": written.label,
            "status": status.label,
            "falsifier": cb.falsifier,
            "oracle": oracle,
            "oracle_new": oracle_new,
            "oracle_declared_seq": declared,
            "keep_stamp": keep,
            "cause": cause,
            "reopen": restated,
        }
    report.demoted.extend(demoted)
    carried = [
        cid for cid, c in state.claims.items() if cid not in claims_out and c.stamp is not None
    ]
    for cid, ref in revoked.items():
        old = state.claims[cid]
        ctx.emit(
            "statement_changed",
            {
                "claim_id": cid,
                "revoked_ref": ref,
                "status": _demote(InfoMark.parse(old.written)).label,
                "cause": "statement_changed",
                "reopen": False,
            },
        )
        report.invalidated.append(
            {"claim_id": cid, "evidence_ref": ref, "cause": "statement_changed"}
        )
    ctx.emit(
        "ledger_replaced",
        {
            "claims": list(claims_out.values()),
            "premises": list(dict.fromkeys(block.premises_for_plan)),
            "open_questions": list(dict.fromkeys(block.open_questions)),
            "carried": carried,
            "demoted": list(report.demoted),
            "line": block.span.line,
        },
    )
    report.ledger_updated = True


def _falsifier_same(old: ClaimState, falsifier: str | None) -> bool:
    # A falsified (FAIL-stamped) claim re-opens only with a new falsifier.
    if old.stamp is not None and old.stamp.result == "FAIL":
        return (old.falsifier or "").strip() == (falsifier or "").strip()
    return True


# -- stamps -------------------------------------------------------------------------


def _reject(
    ctx: LedgerContext,
    report: IngestReport,
    block: StampBlock | DivergenceBlock,
    reason: RejectReason,
    msg: str,
) -> None:
    ctx.emit(
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


def apply_stamp(ctx: LedgerContext, block: StampBlock, report: IngestReport) -> None:
    """Judge one oracle_stamp / inference_stamp; exactly one reason code on rejection."""

    def reject(reason: RejectReason, msg: str) -> None:
        _reject(ctx, report, block, reason, msg)

    state = ctx.state
    if block.legacy or not block.evidence_ref:
        return reject(
            RejectReason.MISSING_EVIDENCE,
            f"{block.kind} for {block.claim_id} has no evidence_ref; "
            f"{RejectReason.MISSING_EVIDENCE.hint}",
        )
    claim = state.claims.get(block.claim_id or "")
    if claim is None:
        return reject(
            RejectReason.UNKNOWN_CLAIM,
            f"no claim {block.claim_id!r} in the active ledger; {RejectReason.UNKNOWN_CLAIM.hint}",
        )
    if not (claim.falsifier or "").strip():
        return reject(
            RejectReason.MISSING_FALSIFIER,
            f"claim {claim.id} has no falsifier; {RejectReason.MISSING_FALSIFIER.hint}",
        )
    ev, why = ctx.verify_ref(block.evidence_ref)
    if ev is None:
        assert why is not None
        return reject(why, f"{block.evidence_ref}: {why.hint}")
    if ev.tool_class == ToolClass.DELEGATION:
        return reject(
            RejectReason.DELEGATED_EVIDENCE,
            f"{block.evidence_ref} is the result of {ev.tool} (delegation); "
            f"{RejectReason.DELEGATED_EVIDENCE.hint}",
        )
    oracle = block.kind == "oracle_stamp"
    allowed = (
        (EvidenceClass.EXECUTION,)
        if oracle
        else (EvidenceClass.EXECUTION, EvidenceClass.OBSERVATION)
    )
    if ev.evidence_class not in allowed:
        return reject(
            RejectReason.INELIGIBLE_EVIDENCE,
            f"{block.evidence_ref} is {ev.evidence_class.value} evidence from {ev.tool}; "
            f"{RejectReason.INELIGIBLE_EVIDENCE.hint}",
        )
    undeclared = False
    if oracle:
        if claim.oracle is None:
            if ctx.rules.require_declared_oracle:
                return reject(
                    RejectReason.MISSING_ORACLE,
                    f"claim {claim.id} declares no oracle; {RejectReason.MISSING_ORACLE.hint}",
                )
            undeclared = True
        elif normalize_command(ev.command) != claim.oracle:
            return reject(
                RejectReason.ORACLE_MISMATCH,
                f"{block.evidence_ref} ran `{ev.command}`, but claim {claim.id} declares "
                f"oracle `{claim.oracle}`; {RejectReason.ORACLE_MISMATCH.hint}",
            )
        if (
            ctx.rules.reject_evidence_predating_claim
            and claim.oracle_declared_seq is not None
            and ev.seq < claim.oracle_declared_seq
        ):
            return reject(
                RejectReason.EVIDENCE_PREDATES_CLAIM,
                f"{block.evidence_ref} (seq {ev.seq}) predates the declaration of claim "
                f"{claim.id}'s oracle (seq {claim.oracle_declared_seq}); "
                f"{RejectReason.EVIDENCE_PREDATES_CLAIM.hint}",
            )
    if claim.reopened_seq and ev.seq < claim.reopened_seq:
        return reject(
            RejectReason.EVIDENCE_PREDATES_CLAIM,
            f"{block.evidence_ref} (seq {ev.seq}) predates the divergence that re-opened claim "
            f"{claim.id} (seq {claim.reopened_seq}); produce new evidence",
        )
    result = (block.result or ("PASS" if oracle else "OBSERVED")).upper()
    if oracle:
        if result not in ("PASS", "FAIL", "EXPECTED_FAIL"):
            return reject(
                RejectReason.FAILED_EVIDENCE,
                f"result {block.result!r} is not PASS, FAIL or EXPECTED_FAIL",
            )
        needed = Outcome.PASS if result == "PASS" else Outcome.FAIL
        if ev.outcome is not needed:
            return reject(
                RejectReason.FAILED_EVIDENCE,
                f"{block.evidence_ref} has outcome {ev.outcome.value}, which cannot back "
                f"result={result}; {RejectReason.FAILED_EVIDENCE.hint}",
            )
        new_status = InfoMark.UNKNOWN if result == "FAIL" else InfoMark.EXACT
    else:
        if ev.outcome not in (Outcome.PASS, Outcome.OBSERVED):
            return reject(
                RejectReason.FAILED_EVIDENCE,
                f"{block.evidence_ref} has outcome {ev.outcome.value}; an inference needs a "
                "successful observation",
            )
        result = ev.outcome.value
        new_status = InfoMark.INFERRED
    art_digest: str | None = None
    if block.artifact:
        art_digest = artifact_digest(ctx.root, block.artifact)
        if art_digest is None:
            return reject(
                RejectReason.CONTENT_MISMATCH,
                f"artifact {block.artifact} cannot be read; stamp an existing file",
            )
        if block.content_hash and _norm_hash(block.content_hash) != art_digest:
            return reject(
                RejectReason.CONTENT_MISMATCH,
                f"content_hash {block.content_hash} differs from {block.artifact} now "
                f"({art_digest}); {RejectReason.CONTENT_MISMATCH.hint}",
            )
    elif block.content_hash:
        return reject(
            RejectReason.CONTENT_MISMATCH,
            "content_hash given without artifact=PATH; name the file it digests",
        )
    ctx.emit(
        "stamp_applied",
        {
            "kind": block.kind,
            "claim_id": claim.id,
            "evidence_ref": ev.ref,
            "evidence_seq": ev.seq,
            "result": result,
            "status": new_status.label,
            "artifact": block.artifact,
            "artifact_digest": art_digest,
            "layer": block.layer,
            "undeclared_oracle": undeclared,
        },
    )
    report.stamps_applied.append(
        {"claim_id": claim.id, "evidence_ref": ev.ref, "status": new_status.label}
    )


def _norm_hash(value: str) -> str:
    v = value.strip().lower()
    return v if v.startswith("sha256:") else "sha256:" + v


# -- divergence ------------------------------------------------------------------------


def apply_divergence(ctx: LedgerContext, block: DivergenceBlock, report: IngestReport) -> None:
    """A divergence bound to valid evidence revokes the stamp and sets the claim Unknown."""
    if not block.evidence_ref:
        return _reject(
            ctx,
            report,
            block,
            RejectReason.MISSING_EVIDENCE,
            f"divergence_event for {block.claim_id} has no evidence_ref",
        )
    claim = ctx.state.claims.get(block.claim_id or "")
    if claim is None:
        return _reject(
            ctx,
            report,
            block,
            RejectReason.UNKNOWN_CLAIM,
            f"no claim {block.claim_id!r} in the active ledger",
        )
    ev, why = ctx.verify_ref(block.evidence_ref)
    if ev is None:
        assert why is not None
        return _reject(ctx, report, block, why, f"{block.evidence_ref}: {why.hint}")
    revoked = claim.stamp.evidence_ref if claim.stamp else None
    ctx.emit(
        "divergence",
        {
            "claim_id": claim.id,
            "evidence_ref": ev.ref,
            "revoked_ref": revoked,
            "status": InfoMark.UNKNOWN.label,
            "cause": "divergence_event",
        },
    )
    report.invalidated.append(
        {"claim_id": claim.id, "evidence_ref": revoked, "cause": "divergence_event", "by": ev.ref}
    )


# -- artifacts ------------------------------------------------------------------------------


def check_artifacts(ctx: LedgerContext) -> list[dict[str, Any]]:
    """Re-digest stamped artifacts; a changed or missing one revokes its stamp (divergence)."""
    out: list[dict[str, Any]] = []
    for claim in list(ctx.state.claims.values()):
        stamp = claim.stamp
        if stamp is None or not stamp.artifact:
            continue
        now = artifact_digest(ctx.root, stamp.artifact)
        if now == stamp.artifact_digest:
            continue
        cause = "artifact_missing" if now is None else "artifact_changed"
        ctx.emit(
            "divergence",
            {
                "claim_id": claim.id,
                "evidence_ref": None,
                "revoked_ref": stamp.evidence_ref,
                "status": InfoMark.UNKNOWN.label,
                "cause": cause,
                "artifact": stamp.artifact,
                "digest": now,
            },
        )
        out.append({"claim_id": claim.id, "evidence_ref": stamp.evidence_ref, "cause": cause})
    return out

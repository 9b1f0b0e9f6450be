"""claim_ledger: a new ledger replaces the active one; stamped claims survive when omitted.

:func:`apply_ledger` judges one ``claim_ledger`` block against the session's state (a claim
re-declared differently loses its stamp; an oracle that cannot fail is refused at
declaration) and emits ``statement_changed`` and ``ledger_replaced``. Loaded when a block is
ingested (:mod:`infomark.ledger.semantics` holds what the judges share).
"""

from __future__ import annotations

from infomark.kernel.infomark import InfoMark
from infomark.ledger.report import IngestReport
from infomark.ledger.semantics import LedgerContext, demote, shell_text, text_hash
from infomark.ledger.state import ClaimState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.ledger.blocks import LedgerBlock

__all__ = ["apply_ledger"]


def _oracle_norm(oracle: str | None) -> str | None:
    return shell_text(oracle) if oracle and oracle.strip() else None


def _field(block: Any, name: str) -> Any:
    """A parsed field, or the same key kept in ``extra`` by an older parser."""
    value = getattr(block, name, None)
    if value is None:
        extra = getattr(block, "extra", None) or {}
        value = extra.get(name)
    return value


def _id_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.strip().strip("[]").split(",")
    return [str(v).strip().strip("\"'") for v in value if str(v).strip()]


def _warn(report: IngestReport, line: int, column: int, message: str) -> None:
    report.diagnostics.append(
        {"line": line, "column": column, "message": message, "severity": "warning"}
    )


def apply_ledger(ctx: LedgerContext, block: LedgerBlock, report: IngestReport) -> None:
    """A new ledger replaces the active one; stamped claims survive when omitted.

    Each claim is read by :func:`_claim_entry` (its oracle judged by :func:`_refused`, its
    stamp carried or revoked by :func:`_carried`); the revocations are emitted before the
    ledger that causes them (:func:`_emit_revocations`)."""
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
        entry, revoked_ref, demote_it = _claim_entry(ctx, cb, report)
        if revoked_ref is not None:
            revoked[cb.id] = revoked_ref
        if demote_it:
            demoted[cb.id] = None
        claims_out[cb.id] = entry
    report.demoted.extend(demoted)
    carried = [
        cid for cid, c in state.claims.items() if cid not in claims_out and c.stamp is not None
    ]
    _emit_revocations(ctx, revoked, report)
    ctx.emit(
        "ledger_replaced",
        {
            "claims": list(claims_out.values()),
            "premises": list(dict.fromkeys(block.premises_for_plan)),
            "open_questions": list(dict.fromkeys(block.open_questions)),
            "done_when": list(dict.fromkeys(_id_list(_field(block, "done_when")))),
            "carried": carried,
            "demoted": list(report.demoted),
            "line": block.span.line,
        },
    )
    report.ledger_updated = True


def _claim_entry(
    ctx: LedgerContext, cb: Any, report: IngestReport
) -> tuple[dict[str, Any], str | None, bool]:
    """One claim of the new ledger: its ``ledger_replaced`` entry, the evidence ref of the
    stamp it revokes (None: none), and whether its written rank was demoted."""
    text = (cb.text or "").strip()
    th = text_hash(text)
    written = InfoMark.parse(cb.status)
    old = ctx.state.claims.get(cb.id)
    oracle = _oracle_norm(cb.oracle)
    expect = str(_field(cb, "expect") or "").strip().upper() or None
    observe = str(_field(cb, "observe") or "").strip() or None
    refused = _refused(ctx, cb, oracle, report)
    keep, status, cause, revoked_ref = _carried(old, cb, written, (th, oracle, expect, observe))
    restated = old is not None and old.text_hash != th
    # A changed oracle, or a changed statement, re-declares the claim: evidence
    # produced before this point no longer speaks for it.
    oracle_new = oracle is not None and (old is None or old.oracle != oracle or restated)
    declared = None
    if oracle is not None and old is not None and not oracle_new:
        declared = old.oracle_declared_seq
    entry = {
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
        "expect": expect,
        "observe": observe,
        "oracle_refused": refused,
    }
    return entry, revoked_ref, written.grounded and not keep


def _refused(ctx: LedgerContext, cb: Any, oracle: str | None, report: IngestReport) -> str | None:
    """The reason code the rules refuse ``oracle`` with (an error diagnostic), else None."""
    if oracle is None or ctx.rules.judge_oracle is None:
        return None
    verdict = ctx.rules.judge_oracle(oracle)
    if verdict is None:
        return None
    refused = verdict[0].value
    report.diagnostics.append(
        {
            "line": cb.span.line,
            "column": cb.span.column,
            "message": f"claim {cb.id}: oracle `{oracle}` refused ({refused}): {verdict[1]}",
            "severity": "error",
            "code": refused,
        }
    )
    return refused


def _carried(
    old: ClaimState | None,
    cb: Any,
    written: InfoMark,
    now: tuple[str, str | None, str | None, str | None],
) -> tuple[bool, InfoMark, str, str | None]:
    """``(keep_stamp, status, cause, revoked ref)``: a stamped claim restated unchanged
    (text, falsifier, expect, observe, and oracle unless inference-stamped) keeps its stamp
    and rank; changed, its stamp is revoked; an unstamped one gets its written rank,
    demoted. ``now``: the new text hash, oracle, expect and observe."""
    if old is None or old.stamp is None:
        return False, demote(written), "ledger", None
    th, oracle, expect, observe = now
    same = (
        old.text_hash == th
        and _falsifier_same(old, cb.falsifier)
        and old.expect == expect
        and old.observe == observe
    )
    if same and (old.oracle == oracle or old.stamp.kind == "inference_stamp"):
        return True, InfoMark.parse(old.status), "carried", None
    return False, demote(written), "statement_changed", old.stamp.evidence_ref


def _emit_revocations(ctx: LedgerContext, revoked: dict[str, str], report: IngestReport) -> None:
    for cid, ref in revoked.items():
        old = ctx.state.claims[cid]
        ctx.emit(
            "statement_changed",
            {
                "claim_id": cid,
                "revoked_ref": ref,
                "status": demote(InfoMark.parse(old.written)).label,
                "cause": "statement_changed",
                "reopen": False,
            },
        )
        report.invalidated.append(
            {"claim_id": cid, "evidence_ref": ref, "cause": "statement_changed"}
        )


def _falsifier_same(old: ClaimState, falsifier: str | None) -> bool:
    # A falsified (FAIL-stamped) claim re-opens only with a new falsifier.
    if old.stamp is not None and old.stamp.result == "FAIL":
        return (old.falsifier or "").strip() == (falsifier or "").strip()
    return True

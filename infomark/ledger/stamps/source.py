"""The ``source_stamp`` rules: a claim resting on a web page, graded by the page's authority.

:func:`apply_source_stamp` judges one ``source_stamp: claim_id=C evidence_ref=ev_…
authority=primary|secondary``. The evidence must be web evidence infomark recorded (a
``WebFetch``, an MCP ``fetch``, a shell ``curl``/``wget`` of a URL); infomark decides the
authority from its domain rules (:mod:`infomark.ledger.stamps.sources`), an agent's claimed class
above that is demoted with the reason codes, and the class caps the rank: primary → at
most Inferred, secondary → at most Hypothetical, a search result → nothing (rejected as
``ineligible_evidence``, like any evidence that fetched no page). A source stamp never
lowers a claim another stamp ranks higher: it then changes nothing, with a warning.

:func:`guard_web` keeps web pages out of the other stamps: an ``oracle_stamp`` or
``inference_stamp`` on a page fetched by a shell command (``curl https://…`` is a run, but
of a web page), or on a ``Read`` of a local copy a fetch of this session wrote, is rejected
as ``ineligible_evidence``, like a web tool's result (``WebFetch``).

:func:`recheck_sources` re-fetches the pages the premises rest on (when the host can) and
revokes the stamp of a claim whose page changed (``divergence``, cause ``source_changed``).
Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from infomark.kernel.digest import sha256
from infomark.kernel.infomark import InfoMark
from infomark.kernel.reasons import RejectReason
from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
from infomark.ledger.report import IngestReport
from infomark.ledger.semantics import LedgerContext, demote
from infomark.ledger.stamps.sources import (
    CEILINGS,
    SourceRules,
    WebSource,
    authority_of,
    fetched_files,
    is_fetch_command,
    web_source,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from infomark.ledger.blocks import StampBlock
    from infomark.ledger.state import ClaimState
    from infomark.ledger.store.base import BaseJournal
    from infomark.ledger.store.blobs import Blobs

__all__ = [
    "Refetch",
    "SourceContext",
    "apply_source_stamp",
    "guard_web",
    "recheck_sources",
    "source_of",
]

#: ``refetch(tool, input) -> output`` re-runs a fetch the way the host ran it; None when the
#: page cannot be fetched now (that counts as changed: it can no longer be confirmed).
Refetch = Callable[[str, Mapping[str, object]], "str | bytes | None"]

if not TYPE_CHECKING:  # the hook path imports no ``typing``; the protocol is for checkers
    SourceContext = object
else:

    class SourceContext(LedgerContext, Protocol):
        """What the source rules need from the engine (a ``Ledger``): the semantics'
        context, and the session's name, blobs and journal."""

        @property
        def session(self) -> str: ...
        @property
        def blobs(self) -> Blobs: ...
        @property
        def journal(self) -> BaseJournal: ...


def _rules(ctx: SourceContext) -> SourceRules:
    rules = ctx.rules
    return SourceRules.from_config(rules.source_primary, defaults=rules.source_defaults)


def source_of(ctx: SourceContext, ev: Evidence) -> WebSource | None:
    """The page ``ev`` stands for (reading its output for a reported redirect), or None."""
    if web_source(ev.record) is None:
        return None
    data = ctx.blobs.get(ev.output_digest)
    text = data[:2000].decode("utf-8", "replace") if data is not None else None
    return web_source(ev.record, text)


def _reject(
    ctx: SourceContext, report: IngestReport, block: StampBlock, reason: RejectReason, msg: str
) -> None:
    from infomark.ledger.stamps.reject import reject_stamp  # only when a stamp is refused

    reject_stamp(ctx.emit, report, block, reason, msg)


def _local_copy(ctx: SourceContext, ev: Evidence) -> tuple[str, str] | None:
    """``(path, ref of the fetch)`` when ``ev`` reads a file a fetch of this session wrote."""
    inp = ev.record.get("input")
    if not isinstance(inp, Mapping):
        return None
    target = next(
        (v for k in ("file_path", "path", "notebook_path") if isinstance(v := inp.get(k), str)),
        None,
    )
    if not target:
        return None
    want = _resolve(ctx.root_dir, target)
    for row in ctx.journal.events(ctx.session, types=("evidence_recorded",)):
        if row.seq >= ev.seq:
            break
        record = row.payload.get("record") or {}
        command = str((record.get("input") or {}).get("command") or "")
        if not command or not is_fetch_command(command):
            continue
        cwd = str(record.get("cwd") or ctx.root_dir)
        if any(_resolve(cwd, f) == want for f in fetched_files(command)):
            return target, str(row.payload.get("ref"))
    return None


def _resolve(base: str, path: str) -> str:
    return os.path.realpath(os.path.join(base, path))  # an absolute path stays itself


def guard_web(ctx: SourceContext, block: StampBlock, report: IngestReport) -> bool:
    """Reject an oracle/inference stamp on a web page or a local copy of one (True: rejected)."""
    if block.legacy or not block.evidence_ref:
        return False
    ev, _ = ctx.verify_ref(block.evidence_ref)
    if ev is None:
        return False  # apply_stamp names why
    hint = "a fetched page backs a claim only through source_stamp"
    if ev.evidence_class is EvidenceClass.WEB:
        return False  # web-class tools: apply_stamp rejects them as ineligible_evidence
    if web_source(ev.record) is not None:
        _reject(
            ctx,
            report,
            block,
            RejectReason.INELIGIBLE_EVIDENCE,
            f"{ev.ref} fetched a web page (`{ev.command[:80]}`); {hint}",
        )
        return True
    copy = _local_copy(ctx, ev)
    if copy is not None:
        _reject(
            ctx,
            report,
            block,
            RejectReason.INELIGIBLE_EVIDENCE,
            f"{ev.ref} reads {copy[0]}, a local copy of a page fetched in {copy[1]}; {hint}",
        )
        return True
    return False


def apply_source_stamp(ctx: SourceContext, block: StampBlock, report: IngestReport) -> None:
    """Judge one source_stamp by :data:`SOURCE_CHECKS`, in order; exactly one reason code
    on rejection. A page never lowers a claim: one above the page's ceiling stays, with a
    warning."""

    def reject(reason: RejectReason, msg: str) -> None:
        _reject(ctx, report, block, reason, msg)

    from infomark.ledger.stamps.reject import claim_and_evidence

    found = claim_and_evidence(ctx.state, ctx.verify_ref, block, reject)
    if found is None:
        return None
    claim, ev = found
    sources: list[WebSource | None] = []  # source_of, once, when a check first needs it
    for check in SOURCE_CHECKS:
        rejection = check(ctx, claim, ev, sources)
        if rejection is not None:
            return reject(*rejection)
    source = sources[0]
    assert source is not None  # _a_page_fetch refused the others
    _apply_source(ctx, block, report, (claim, ev, source))
    return None


def _source(ctx: SourceContext, ev: Evidence, sources: list[WebSource | None]) -> WebSource | None:
    if not sources:
        sources.append(source_of(ctx, ev))
    return sources[0]


def _not_before_reopening(
    ctx: SourceContext, claim: ClaimState, ev: Evidence, sources: list[WebSource | None]
) -> tuple[RejectReason, str] | None:
    from infomark.ledger.stamps.reject import predates_reopening  # loaded by the stamp rules

    return predates_reopening(claim, ev, ev.ref, "fetch the page again")


def _a_page_fetch(
    ctx: SourceContext, claim: ClaimState, ev: Evidence, sources: list[WebSource | None]
) -> tuple[RejectReason, str] | None:
    if _source(ctx, ev, sources) is not None:
        return None
    copy = _local_copy(ctx, ev)
    where = (
        f"; it reads {copy[0]}, a local copy of the page fetched in {copy[1]}: stamp {copy[1]}"
        if copy is not None
        else ""
    )
    return (
        RejectReason.INELIGIBLE_EVIDENCE,
        f"{ev.ref} is {ev.evidence_class.value} evidence from {ev.tool}, not a page infomark "
        f"saw fetched{where}; a source_stamp binds a page fetch (WebFetch, fetch, curl URL)",
    )


def _not_a_search(
    ctx: SourceContext, claim: ClaimState, ev: Evidence, sources: list[WebSource | None]
) -> tuple[RejectReason, str] | None:
    source = _source(ctx, ev, sources)
    if source is None or not source.search:
        return None
    return (
        RejectReason.INELIGIBLE_EVIDENCE,
        f"{ev.ref} is a search result ({ev.tool}): snippets ground nothing; fetch the page "
        "and stamp that fetch",
    )


def _page_fetched(
    ctx: SourceContext, claim: ClaimState, ev: Evidence, sources: list[WebSource | None]
) -> tuple[RejectReason, str] | None:
    if ev.outcome in (Outcome.OBSERVED, Outcome.PASS):
        return None
    return (
        RejectReason.FAILED_EVIDENCE,
        f"{ev.ref} has outcome {ev.outcome.value}: the page was not fetched",
    )


#: The rules a source_stamp must pass, in the order they are judged; the first refusal
#: decides its one reason code.
SOURCE_CHECKS: tuple[
    Callable[
        [SourceContext, ClaimState, Evidence, list[WebSource | None]],
        tuple[RejectReason, str] | None,
    ],
    ...,
] = (_not_before_reopening, _a_page_fetch, _not_a_search, _page_fetched)


def _apply_source(
    ctx: SourceContext,
    block: StampBlock,
    report: IngestReport,
    judged: tuple[ClaimState, Evidence, WebSource],
) -> None:
    """Record a source_stamp that passed every check, at the page's authority's ceiling
    (``authority=primary`` on a page that is not one is demoted, with a warning)."""
    claim, ev, source = judged
    decided, codes = authority_of(source, _rules(ctx))
    claimed = (block.authority or decided).lower()
    authority = decided
    if claimed == "secondary" and decided == "primary":
        authority, codes = "secondary", ["claimed_secondary"]
    demoted = claimed == "primary" and decided != "primary"
    ceiling = CEILINGS[authority]
    assert ceiling is not None  # search pages were rejected above
    current = claim.mark if claim.stamp is not None else InfoMark.UNKNOWN
    if claim.stamp is not None and current > ceiling:  # a page never lowers a claim
        report.diagnostics.append(
            {
                "line": block.span.line,
                "column": block.span.column,
                "message": f"source_stamp for {claim.id} changes nothing: it is already "
                f"{current.label} ({claim.stamp.kind} {claim.stamp.evidence_ref}) and a "
                f"{authority} page gives at most {ceiling.label}",
                "severity": "warning",
            }
        )
        return
    detail = {
        **source.to_dict(),
        "authority": authority,
        "claimed": block.authority,
        "demoted": codes if (demoted or authority != decided or codes) else [],
    }
    ctx.emit(
        "stamp_applied",
        {
            "kind": "source_stamp",
            "claim_id": claim.id,
            "evidence_ref": ev.ref,
            "evidence_seq": ev.seq,
            "result": Outcome.OBSERVED.value,
            "status": ceiling.label,
            "artifact": None,
            "artifact_digest": None,
            "layer": None,
            "undeclared_oracle": False,
            "source": detail,
        },
    )
    applied: dict[str, Any] = {
        "claim_id": claim.id,
        "evidence_ref": ev.ref,
        "status": ceiling.label,
        "authority": authority,
    }
    if demoted:
        applied["demoted"] = codes
        reasons = ", ".join(codes) or "not_primary"
        report.diagnostics.append(
            {
                "line": block.span.line,
                "column": block.span.column,
                "message": f"source_stamp for {claim.id}: authority=primary demoted to "
                f"{authority} ({reasons}); the page gives at most {ceiling.label}",
                "severity": "warning",
            }
        )
    report.stamps_applied.append(applied)


def _digest(data: str | bytes) -> str:
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    return "sha256:" + sha256(raw).hexdigest()


def web_premises(ctx: SourceContext) -> list[tuple[str, Evidence]]:
    """``(claim id, evidence)`` of each grounded premise that rests on a source_stamp."""
    out: list[tuple[str, Evidence]] = []
    for pid in ctx.state.premises:
        claim = ctx.state.claims.get(pid)
        if claim is None or claim.stamp is None or claim.stamp.kind != "source_stamp":
            continue
        if not claim.grounded:
            continue
        ev, _ = ctx.verify_ref(claim.stamp.evidence_ref)
        if ev is not None:
            out.append((pid, ev))
    return out


def recheck_sources(
    ctx: SourceContext, fetched: Mapping[str, str | bytes | None]
) -> list[dict[str, Any]]:
    """Revoke the stamp of each premise whose page changed (``fetched``: ref → new output).

    Call inside a transaction, after fetching outside it. A page that could not be fetched
    (None) can no longer be confirmed and counts as changed.
    """
    out: list[dict[str, Any]] = []
    for cid, ev in web_premises(ctx):
        if ev.ref not in fetched:
            continue
        got = fetched[ev.ref]
        now = None if got is None else _digest(got)
        if now == ev.output_digest:
            continue
        claim = ctx.state.claims[cid]
        status = demote(InfoMark.parse(claim.written))
        cause = "source_unreachable" if now is None else "source_changed"
        ctx.emit(
            "divergence",
            {
                "claim_id": cid,
                "evidence_ref": None,
                "revoked_ref": ev.ref,
                "status": status.label,
                "cause": cause,
                "url": (web_source(ev.record) or WebSource(None, None, "", False)).url,
                "was": ev.output_digest,
                "digest": now,
            },
        )
        out.append({"claim_id": cid, "evidence_ref": ev.ref, "cause": cause, "digest": now})
    return out

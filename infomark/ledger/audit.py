"""Audit: report each claim's rank and why, over a verified journal.

``build_audit`` renders the projection (rebuilt by the verification pass of
:mod:`infomark.ledger.verify`, not read from a snapshot) with every bypassed decision.
``verify_session`` (which recomputes the hash chain and MACs from the stored rows and
names the first bad event) and ``Problem`` live in :mod:`infomark.ledger.verify` and are
re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from infomark.kernel.records import dataclass, field
from infomark.ledger.engine import Ledger
from infomark.ledger.state import SessionState
from infomark.ledger.verify import LISTED, Problem, RowFeed, _Replay, _verify, verify_session

__all__ = ["AuditReport", "Problem", "build_audit", "claim_rows", "verify_session"]


def claim_rows(state: SessionState) -> list[dict[str, Any]]:
    rows = []
    for c in state.claims.values():
        stamp = c.stamp
        rows.append(
            {
                "id": c.id,
                "text": c.text,
                "status": c.status,
                "written": c.written,
                "stamped": stamp is not None,
                "stamp_kind": stamp.kind if stamp else None,
                "evidence_ref": stamp.evidence_ref if stamp else None,
                "undeclared_oracle": bool(stamp and stamp.undeclared_oracle),
                "artifact": stamp.artifact if stamp else None,
                "falsifier": c.falsifier,
                "oracle": c.oracle,
                "stale": stamp is not None and stamp.evidence_seq < state.last_modify_seq,
                "history": list(c.history),
            }
        )
    return rows


@dataclass(slots=True)
class AuditReport:
    session: str
    claims: list[dict[str, Any]]
    premises: list[dict[str, Any]]
    open_questions: list[str]
    grounded: bool
    verified: bool | None
    events: int
    problems: list[dict[str, Any]] = field(default_factory=list)
    bypasses: list[dict[str, Any]] = field(default_factory=list)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    gate: str = "G0"
    key_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def first_problem(self) -> dict[str, Any] | None:
        return self.problems[0] if self.problems else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "claims": self.claims,
            "premises": self.premises,
            "open_questions": self.open_questions,
            "grounded": self.grounded,
            "verified": self.verified,
            "events": self.events,
            "problems": self.problems,
            "bypasses": self.bypasses,
            "rejections": self.rejections,
            "gate": self.gate,
            "key_id": self.key_id,
            **self.extra,
        }


def build_audit(
    ledger: Ledger,
    *,
    verify: bool = True,
    progress: Callable[[int, int], None] | None = None,
    feed: RowFeed | None = None,
    wants: Collection[str] = (),
) -> AuditReport:
    """The audit of the ledger's session; with ``verify``, one pass verifies and replays.

    ``feed``: called with every row of that pass, ``(seq, type, payload, timestamp)``, with
    ``verify`` only, so a caller can build more from the same read (the CLI's story);
    ``wants``: the types whose payload ``feed`` reads (any other may come unparsed, as an
    empty mapping).

    The whole report is read in one snapshot of the store: a live session is reported as
    of one committed head, never half before and half after a concurrent write."""
    with ledger.journal.snapshot():
        return _build_audit(ledger, verify, progress, _Replay(ledger.session, feed, wants))


def _build_audit(
    ledger: Ledger,
    verify: bool,
    progress: Callable[[int, int], None] | None,
    rep: _Replay,
) -> AuditReport:
    if verify:  # the rows the report lists are taken on the way (no second read)
        problems = _verify(ledger, ledger.session, progress, rep)
        state = rep.state
    else:
        problems = []
        state = ledger.replay()
        for row in ledger.journal.events(ledger.session, types=LISTED):
            rep.listed[row.type].append({"seq": row.seq, **row.payload})
        written = rep.listed["files_written"]
        written[:] = [w for w in written if w.get("scratch")]
    listed = rep.listed
    claims = claim_rows(state)
    for crow in claims:  # each grounded claim with its oracle and the command its evidence ran
        ev = ledger.evidence(crow["evidence_ref"]) if crow["evidence_ref"] else None
        crow["ran"] = ev.command if ev is not None else None
        crow["ran_in"] = ev.record.get("cwd") if ev is not None else None
    premises = []
    for pid in state.premises:
        c = state.claims.get(pid)
        premises.append(
            {"id": pid, "status": c.status if c else "missing", "grounded": bool(c and c.grounded)}
        )
    return AuditReport(
        session=ledger.session,
        claims=claims,
        premises=premises,
        open_questions=list(state.open_questions),
        grounded=state.has_ledger and state.premises_grounded(),
        verified=(not problems) if verify else None,
        events=state.seq,
        problems=[p.to_dict() for p in problems],
        bypasses=listed["bypass"],
        rejections=listed["stamp_rejected"],
        gate=state.gate,
        key_id=ledger.key.key_id,
        # what a person must see first: finishes that were not verified, refused records,
        # grading files that changed behind the oracle's back; and gate coverage (issue 12):
        # scratch writes and changes made by running code
        extra={
            "unverified_finishes": listed["finished_unverified"],
            "blocked_finishes": listed["finished_blocked"],
            "refused_records": listed["record_refused"],
            "grading_changes": listed["grading_changed"],
            "scratch": listed["files_written"],
            "unannounced_mutations": listed["unannounced_mutation"],
        },
    )

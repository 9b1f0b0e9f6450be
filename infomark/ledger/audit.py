"""Audit: verify the journal and evidence, and report each claim's rank and why.

``verify_session`` recomputes the hash chain and MACs from the stored rows and
names the first bad event. ``build_audit`` renders the projection (rebuilt by
replay, not read from a snapshot) with every bypassed decision.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass, field
from typing import Any

from infomark.ledger.canonical import canonical_json
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import ref_for
from infomark.ledger.journal import GENESIS, event_hash, loads_object
from infomark.ledger.lineage import issued_in
from infomark.ledger.state import SessionState

__all__ = ["AuditReport", "Problem", "build_audit", "claim_rows", "verify_session"]


@dataclass(frozen=True, slots=True)
class Problem:
    session: str
    seq: int | None
    # edited | missing | inserted | reordered | bad_mac | key_mismatch | head | evidence | blob
    code: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "seq": self.seq,
            "code": self.code,
            "message": self.message,
        }


def verify_session(ledger: Ledger, session: str | None = None) -> list[Problem]:
    """Every problem found in one session's journal, in seq order (first bad first)."""
    sess = session or ledger.session
    j = ledger.journal
    key = ledger.key
    problems: list[Problem] = []
    rows = j.raw_rows(sess)
    prev = GENESIS
    expected = 1
    other_key: set[str] = set()
    ours = False  # an event signed by this key was seen
    foreign: list[tuple[int, str]] = []
    for _rowid, s, seq, type_, payload, ts, prev_hash, h, mac, kid in rows:
        if seq != expected:
            if seq > expected:
                problems.append(
                    Problem(sess, expected, "missing", f"event {expected} is missing (deleted)")
                )
            else:
                problems.append(Problem(sess, seq, "inserted", f"event {seq} appears twice"))
            expected = seq
        if prev_hash != prev:
            problems.append(
                Problem(
                    sess,
                    seq,
                    "reordered",
                    f"event {seq} does not chain to the event before it "
                    "(deleted, inserted or reordered)",
                )
            )
        recomputed = event_hash(prev_hash, s, seq, type_, payload, ts, kid)
        if not hmac.compare_digest(recomputed, h):
            problems.append(Problem(sess, seq, "edited", f"event {seq} ({type_}) was edited"))
        elif kid != key.key_id:
            other_key.add(kid)
            foreign.append((seq, kid))
        elif not key.verify(h.encode(), mac):
            problems.append(
                Problem(sess, seq, "bad_mac", f"event {seq} has a MAC this key did not make")
            )
        else:
            ours = True
        prev = h
        expected = seq + 1
    if ours:  # a mixed chain: the foreign-key events were rewritten without the key
        problems.extend(
            Problem(
                sess,
                seq,
                "bad_mac",
                f"event {seq} claims key id {kid}, but the rest of the chain is signed by this "
                f"key ({key.key_id}): it was rewritten without the key",
            )
            for seq, kid in foreign
        )
    elif other_key:
        problems.append(
            Problem(
                sess,
                None,
                "key_mismatch",
                f"the chain is intact but was signed with key id(s) {sorted(other_key)}, "
                f"not this key ({key.key_id}): the key changed or the ledger was copied",
            )
        )
    head = j.head_row(sess)
    last_seq = rows[-1][2] if rows else 0
    if rows and head is None:
        problems.append(Problem(sess, None, "head", "the session head record is missing"))
    elif head is not None:
        hseq, hhash, hmac_ = head
        if hseq != last_seq or hhash != prev:
            problems.append(
                Problem(
                    sess,
                    min(hseq, last_seq) + 1,
                    "missing",
                    f"the head says seq {hseq} but the journal ends at {last_seq}: "
                    "events were removed from the end or appended outside infomark",
                )
            )
        elif (ours or not other_key) and not hmac.compare_digest(
            j.head_mac(sess, hseq, hhash), hmac_
        ):
            problems.append(Problem(sess, hseq, "head", "the head record's MAC does not verify"))
    problems.extend(_verify_evidence(ledger, sess, {r[2]: r for r in rows}))
    problems.extend(_verify_merged(ledger, sess, {r[2]: r for r in rows}))
    problems.sort(key=lambda p: (p.seq is None, p.seq or 0))
    return problems


def _verify_evidence(
    ledger: Ledger, sess: str, by_seq: dict[int, tuple[Any, ...]]
) -> list[Problem]:
    out: list[Problem] = []
    indexed: dict[str, int] = {}
    for ref, _s, seq, record_json, mac in ledger.journal.evidence_rows(sess):
        indexed[ref] = seq
        try:
            record = json.loads(record_json)
        except (ValueError, RecursionError):
            record = None
        if not isinstance(record, dict):
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} record is garbled"))
            continue
        exp_ref, exp_mac = ref_for(ledger.key, record)
        if record.get("key_id") == ledger.key.key_id and not (
            hmac.compare_digest(exp_ref, ref) and hmac.compare_digest(exp_mac, mac)
        ):
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} record was altered"))
            continue
        row = by_seq.get(seq)
        if row is None or row[3] != "evidence_recorded":
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} has no journal event"))
            continue
        payload = loads_object(row[4])
        if payload.get("ref") != ref or canonical_json(payload.get("record")) != canonical_json(
            record
        ):
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} differs from its event"))
            continue
        ok = ledger.blobs.verify(str(record["output_digest"]))
        if ok is False:
            out.append(Problem(sess, seq, "blob", f"output blob of {ref} was altered"))
        elif ok is None:
            out.append(Problem(sess, seq, "blob", f"output blob of {ref} is missing"))
    for seq, row in sorted(by_seq.items()):
        if row[3] != "evidence_recorded":
            continue
        event = loads_object(row[4])
        event_ref = event.get("ref")
        if _inherited(ledger, sess, event):
            continue  # a fork's copy of its origin's evidence: the origin's own row holds it
        if not isinstance(event_ref, str) or indexed.get(event_ref) != seq:
            elsewhere = (
                ledger.journal.evidence_row(event_ref) if isinstance(event_ref, str) else None
            )
            where = "is missing" if elsewhere is None else "was moved"
            msg = f"the evidence index row of {event_ref} {where}"
            out.append(Problem(sess, seq, "evidence", msg))
    return out


def _inherited(ledger: Ledger, sess: str, event: dict[str, Any]) -> bool:
    record = event.get("record")
    if not isinstance(record, dict) or record.get("session") == sess:
        return False
    ref, origin, seq = event.get("ref"), record.get("session"), record.get("seq")
    if not (isinstance(ref, str) and isinstance(origin, str) and isinstance(seq, int)):
        return False
    return ledger.verify_ref_in(ref, sess)[0] is not None


def _verify_merged(ledger: Ledger, sess: str, by_seq: dict[int, tuple[Any, ...]]) -> list[Problem]:
    """Every stamp a ``merged_from`` brought in must still verify against its fork's chain."""
    out: list[Problem] = []
    for seq, row in sorted(by_seq.items()):
        if row[3] != "merged_from":
            continue
        payload = loads_object(row[4])
        fork = str(payload.get("session", ""))
        for claim in payload.get("claims", []):
            stamp = claim.get("stamp") if isinstance(claim, dict) else None
            if not isinstance(stamp, dict):
                continue
            ref = str(stamp.get("evidence_ref", ""))
            ev = ledger.verify_ref_in(ref, fork)[0]
            if ev is None or not issued_in(ledger.journal, ev.session, ev.seq, ref):
                msg = f"merged evidence {ref} (from {fork}) does not verify against {fork}'s chain"
                out.append(Problem(sess, seq, "evidence", msg))
    return out


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


def build_audit(ledger: Ledger, *, verify: bool = True) -> AuditReport:
    problems = verify_session(ledger) if verify else []
    state = ledger.replay()
    bypasses: list[dict[str, Any]] = []
    rejections: list[dict[str, Any]] = []
    for row in ledger.journal.events(ledger.session, types=("bypass", "stamp_rejected")):
        item = {"seq": row.seq, **row.payload}
        (bypasses if row.type == "bypass" else rejections).append(item)
    premises = []
    for pid in state.premises:
        c = state.claims.get(pid)
        premises.append(
            {"id": pid, "status": c.status if c else "missing", "grounded": bool(c and c.grounded)}
        )
    return AuditReport(
        session=ledger.session,
        claims=claim_rows(state),
        premises=premises,
        open_questions=list(state.open_questions),
        grounded=state.has_ledger and state.premises_grounded(),
        verified=(not problems) if verify else None,
        events=state.seq,
        problems=[p.to_dict() for p in problems],
        bypasses=bypasses,
        rejections=rejections,
        gate=state.gate,
        key_id=ledger.key.key_id,
    )

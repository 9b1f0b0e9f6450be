"""Fork a session's journal into a new session, and merge what the fork settled back.

**Fork** (``fork_session``): the new session ``S2`` begins with
``forked_from {session, seq, head_hash, shift_until, logical_seq, copied_until}`` and then
holds S's events up to ``seq``, re-chained and re-MACed under S2 (same types, payloads and
timestamps; evidence records keep naming S, blobs are content-addressed and never copied).

*Seqs.* The reducer derives fields such as ``last_modify_seq`` from the row seq, while stamps
carry ``evidence_seq`` from payloads. So that S2's state equals the replay of S's prefix
exactly, ``forked_from`` sets ``state.shift_until``: rows ``2..shift_until`` (the copies) are
reduced at ``row - 1``, their seq in S; rows after it at their own seq (one unused seq marks
the fork). Every session of one lineage therefore shares one seq frame up to its fork point,
new evidence in S2 is recorded at ``row == logical seq`` as before, and evidence S issued up to
the fork point stays valid in S2 (``lineage.inherits``, checked against S's own journal).
A fork of a fork copies the rows after its parent's ``forked_from`` at the same row numbers.

**Merge** (``merge_session``): brings into S what S2 settled after the fork point (claims
declared, stamps applied, divergences, approvals) as one ``merged_from`` event whose payload
holds the resulting claims and each one's provenance. Rules: a merge is refused while S2
fails verification, and every stamp's evidence ref is verified against S2's chain before
anything is merged; a revoked stamp wins over a live one; the same claim id with a changed
statement or oracle drops both stamps and is reported as a conflict; metrics, budgets and
pack state never cross; merging again merges only what S2 settled since, so merging the same
fork twice changes nothing the second time. See docs/fork.md.
"""

from __future__ import annotations

from typing import Any

from infomark.kernel.errors import UserError, VerificationError
from infomark.kernel.infomark import InfoMark
from infomark.kernel.records import asdict
from infomark.kernel.session_id import check_session_id
from infomark.ledger.audit import verify_session
from infomark.ledger.engine import Ledger
from infomark.ledger.lineage import fork_origin, issued_in
from infomark.ledger.state import ClaimState, SessionState, apply
from infomark.ledger.store.journal import EventRow

__all__ = ["comparable_state", "fork_session", "merge_session", "replay_session"]

_SETTLE = ("ledger_replaced", "stamp_applied", "divergence", "statement_changed")
_REVOKE = ("divergence", "statement_changed")


def comparable_state(state: SessionState) -> dict[str, Any]:
    """The state without what names the session or its rows (for fork equality)."""
    out = state.to_dict()
    for k in ("session", "seq", "shift_until"):
        out.pop(k, None)
    return out


def replay_session(ledger: Ledger, session: str, upto: int | None = None) -> SessionState:
    """A fresh projection of any session of the home (up to row ``upto``)."""
    state = SessionState(session=session)
    for row in ledger.journal.events(session):
        if upto is not None and row.seq > upto:
            break
        apply(state, row.seq, row.type, row.payload)
    return state


def _refuse_tampered(ledger: Ledger, session: str, what: str) -> None:
    problems = verify_session(ledger, session)
    if problems:
        first = problems[0]
        raise VerificationError(
            f"cannot {what}: session {session!r} does not verify (first problem: event "
            f"{first.seq}, {first.code}: {first.message}); run `infomark audit --verify`"
        )


def fork_session(ledger: Ledger, as_session: str, upto: int | None = None) -> dict[str, Any]:
    """Fork ``ledger.session`` up to row ``upto`` (default: its head) into ``as_session``."""
    src = ledger.session
    check_session_id(as_session)
    journal = ledger.journal
    if as_session == src:
        raise UserError(f"cannot fork {src!r} into itself; name a new session with --as")
    if as_session in journal.known_sessions():
        raise UserError(f"cannot fork into {as_session!r}: that session already exists")
    head = journal.last_seq(src)
    if head == 0:
        raise UserError(f"cannot fork {src!r}: the session has no events")
    point = head if upto is None else upto
    origin = fork_origin(journal, src)
    low = 2 if origin is not None else 1
    if not low <= point <= head:
        raise UserError(
            f"cannot fork {src!r} at seq {point}: use a seq from {low} to {head} (its head)"
            + ("; seq 1 of a fork is its forked_from event" if low == 2 else "")
        )
    _refuse_tampered(ledger, src, "fork")
    rows = [r for r in journal.events(src) if r.seq <= point]
    if origin is None:
        copies, shift_until, logical, copied_until = rows, point + 1, point, point + 1
    else:
        m = int(origin["shift_until"])
        copies, shift_until = rows[1:], min(point, m)
        logical = point - 1 if point <= m else point
        copied_until = point
    payload = {
        "session": src,
        "seq": point,
        "head_hash": rows[-1].hash,
        "shift_until": shift_until,
        "logical_seq": logical,
        "copied_until": copied_until,
    }
    with journal.write(as_session) as db:
        if journal.last_seq(as_session):
            raise UserError(f"cannot fork into {as_session!r}: that session already exists")
        journal.append(as_session, "forked_from", payload)
        for row in copies:
            journal.append(as_session, row.type, row.payload, timestamp=row.timestamp)
        db.execute(
            "UPDATE sessions SET parent = ?, fork_seq = ? WHERE session = ?",
            (src, point, as_session),
        )
    return {"session": as_session, "forked_from": src, "copied": len(copies), **payload}


# -- merge ----------------------------------------------------------------------------------


def _claim_payload(claim: ClaimState) -> dict[str, Any]:
    out = asdict(claim)
    out.pop("history", None)
    return out


def _anchor(value: int | None, point: int, at: int) -> int | None:
    """A fork-side seq after the fork point means nothing in S: re-anchor it at the merge."""
    return at if value is not None and value > point else value


def merge_session(ledger: Ledger, fork: str) -> dict[str, Any]:
    """Merge what ``fork`` settled after its fork point into ``ledger.session``: each claim
    the fork touched is decided by the first of :data:`MERGE_RULES` that takes it."""
    into = ledger.session
    journal = ledger.journal
    origin, fork_row, point = _fork_point(ledger, fork)
    verified = journal.head_row(fork)
    with ledger.transaction():  # the home's write lock: S2 cannot move while it is read
        fork_rows = list(journal.events(fork))
        head = fork_rows[-1]
        if verified is None or (head.seq, head.hash) != verified[:2]:
            raise VerificationError(
                f"cannot merge {fork!r}: it changed while it was verified; run the merge again"
            )
        since = int(origin.get("copied_until", fork_row + 1))
        for row in journal.events(into, types=("merged_from",)):
            if row.payload.get("session") == fork:
                since = max(since, int(row.payload.get("upto", 0)))
        result: dict[str, Any] = {
            "merged": False,
            "from": fork,
            "into": into,
            "upto": head.seq,
            "claims": [],
            "conflicts": [],
        }
        news = [r for r in fork_rows if r.seq > since]
        if not news:
            result["reason"] = f"nothing new: {fork!r} settled nothing since seq {since}"
            return result
        touched, f_revoked = _touched(news)
        m = _Merge(ledger, fork, fork_row, point, f_revoked)
        for cid in touched:
            fc = m.fstate.claims.get(cid)
            if fc is None:
                continue  # dropped from the fork's ledger: nothing settled to bring
            sc = m.sstate.claims.get(cid)
            for rule in MERGE_RULES:
                if rule(m, cid, sc, fc):
                    break
        approval = any(r.type == "approval" for r in news)
        ledger.emit(
            "merged_from",
            {
                "session": fork,
                "head_hash": head.hash,
                "upto": head.seq,
                "fork_seq": fork_row,
                "claims": m.claims,
                "provenance": m.provenance,
                "conflicts": m.conflicts,
                "approval": approval,
            },
        )
    result.update(
        merged=True,
        seq=m.at,
        claims=[c["id"] for c in m.claims],
        conflicts=m.conflicts,
        approval=approval,
    )
    return result


def _fork_point(ledger: Ledger, fork: str) -> tuple[dict[str, Any], int, int]:
    """``(origin, fork row, logical fork point)`` of ``fork``, a verified fork of
    ``ledger.session`` whose fork point the session still holds; else a refusal."""
    into = ledger.session
    journal = ledger.journal
    check_session_id(fork)
    if fork in journal.known_sessions():  # a tampered fork is refused before it is read
        _refuse_tampered(ledger, fork, "merge")  # (its own read snapshot: outside the write)
    origin = fork_origin(journal, fork)
    if origin is None or origin.get("session") != into:
        raise UserError(
            f"cannot merge {fork!r} into {into!r}: {fork!r} is not a fork of {into!r} "
            "(merge a fork into the session it was forked from)"
        )
    fork_row = int(origin["seq"])
    point = int(origin["logical_seq"])
    at_point = [r for r in journal.events(into) if r.seq == fork_row]
    if not at_point or at_point[0].hash != origin.get("head_hash"):
        raise VerificationError(
            f"cannot merge {fork!r}: {into!r} no longer holds the event {fork_row} it was "
            "forked at (its hash differs); run `infomark audit --verify`"
        )
    return origin, fork_row, point


class _Merge:
    """One merge under way (inside the write transaction): both sides' states, and the
    claims, provenance and conflicts the ``merged_from`` event will carry."""

    def __init__(
        self, ledger: Ledger, fork: str, fork_row: int, point: int, f_revoked: set[str]
    ) -> None:
        journal = ledger.journal
        self.ledger, self.fork, self.point, self.f_revoked = ledger, fork, point, f_revoked
        self.fstate = replay_session(ledger, fork)
        self.sstate = ledger.state
        # the merged_from event's seq (past any fork copies)
        self.at = journal.last_seq(ledger.session) + 1
        self.s_revoked = {
            str(r.payload.get("claim_id"))
            for r in journal.events(ledger.session, after=fork_row, types=_REVOKE)
        }
        self.s_fresh = self.sstate.last_modify_seq <= point
        self.claims: list[dict[str, Any]] = []
        self.provenance: dict[str, dict[str, Any]] = {}
        self.conflicts: list[dict[str, Any]] = []


def _conflict(m: _Merge, cid: str, sc: ClaimState | None, fc: ClaimState) -> bool:
    """Both sides restated the claim differently: neither stamp stands."""
    if sc is None or (sc.text_hash == fc.text_hash and sc.oracle == fc.oracle):
        return False
    what = "statement" if sc.text_hash != fc.text_hash else "oracle"
    dropped = [c.stamp.evidence_ref for c in (sc, fc) if c.stamp is not None]
    m.conflicts.append({"claim_id": cid, "changed": what, "dropped": dropped})
    sc_out = _claim_payload(sc)
    sc_out["stamp"] = None
    sc_out["status"] = _demote(sc.written)
    m.claims.append(sc_out)
    m.provenance[cid] = {"from_session": m.fork, "conflict": what}
    return True


def _revoked_in_fork(m: _Merge, cid: str, sc: ClaimState | None, fc: ClaimState) -> bool:
    """The fork revoked a stamp the session holds: revoked beats live."""
    if not (sc is not None and sc.stamp is not None and fc.stamp is None and cid in m.f_revoked):
        return False
    sc_out = _claim_payload(sc)
    sc_out.update(stamp=None, status=InfoMark.UNKNOWN.label, reopened_seq=m.at)
    m.claims.append(sc_out)
    m.provenance[cid] = {"from_session": m.fork, "revoked": sc.stamp.evidence_ref}
    return True


def _settled_in_session(m: _Merge, cid: str, sc: ClaimState | None, fc: ClaimState) -> bool:
    """The session's own stamp stands, or the session revoked it (revoked beats live)."""
    return sc is not None and (sc.stamp is not None or cid in m.s_revoked)


def _brought_from_fork(m: _Merge, cid: str, sc: ClaimState | None, fc: ClaimState) -> bool:
    """The fork's claim, its seqs anchored in the session; a stamp only with evidence that
    verifies against its chain (else nothing is merged)."""
    out = _claim_payload(fc)
    for k in ("declared_seq", "oracle_declared_seq", "reopened_seq"):
        out[k] = _anchor(out[k], m.point, m.at)
    if sc is not None:
        out["declared_seq"] = sc.declared_seq
    prov: dict[str, Any] = {"from_session": m.fork}
    if fc.stamp is not None:
        ev, why = m.ledger.verify_ref_in(fc.stamp.evidence_ref, m.fork)
        if ev is None or not issued_in(m.ledger.journal, ev.session, ev.seq, ev.ref):
            raise VerificationError(
                f"cannot merge {m.fork!r}: the evidence {fc.stamp.evidence_ref} of claim "
                f"{cid} does not verify against its chain ({why or 'no event'}); "
                "nothing was merged"
            )
        fresh = m.s_fresh and fc.stamp.evidence_seq >= m.fstate.last_modify_seq
        out["stamp"].update(seq=m.at, evidence_seq=m.at if fresh else -1)
        prov.update(
            from_seq=fc.stamp.seq,
            evidence_ref=ev.ref,
            evidence_session=ev.session,
            evidence_seq=ev.seq,
        )
    m.claims.append(out)
    m.provenance[cid] = prov
    return True


#: How a claim the fork touched is merged: the first rule that takes it decides.
MERGE_RULES = (_conflict, _revoked_in_fork, _settled_in_session, _brought_from_fork)


def _touched(rows: list[EventRow]) -> tuple[list[str], set[str]]:
    touched: dict[str, None] = {}
    revoked: set[str] = set()
    for row in rows:
        if row.type not in _SETTLE:
            continue
        if row.type == "ledger_replaced":
            for c in row.payload.get("claims", []):
                touched[str(c["id"])] = None
            continue
        cid = str(row.payload.get("claim_id"))
        touched[cid] = None
        if row.type in _REVOKE:
            revoked.add(cid)
    return list(touched), revoked


def _demote(written: str) -> str:
    mark = InfoMark.parse(written)
    return (InfoMark.HYPOTHETICAL if mark.grounded else mark).label

"""Verification: the journal's hash chain, MACs, head and evidence, recomputed from the rows.

``verify_session`` streams one session's rows once, checks each link and MAC, re-hashes
the evidence blobs, and names the first bad event; the projection it rebuilds on the way
(``_Replay``, the same reducer as live state) feeds the audit report
(:mod:`infomark.ledger.audit`, which re-exports ``verify_session`` and ``Problem``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Collection
from typing import Any

from infomark.kernel.digest import hmac_hex_many, hmac_pads
from infomark.kernel.jsonc import loads_compact, scan_once
from infomark.kernel.records import asdict, dataclass
from infomark.ledger.canonical import canonical_json
from infomark.ledger.engine import Ledger
from infomark.ledger.lineage import issued_in
from infomark.ledger.state import REDUCERS, SessionState
from infomark.ledger.store.base import _STR, GENESIS, event_hash, loads_object

__all__ = ["Problem", "verify_session"]


@dataclass(frozen=True, slots=True)
class Problem:
    session: str
    seq: int | None
    # edited | missing | inserted | reordered | bad_mac | key_mismatch | head | evidence | blob
    code: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # every field, in order


def verify_session(
    ledger: Ledger,
    session: str | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[Problem]:
    """Every problem found in one session's journal, in seq order (first bad first)."""
    return _verify(ledger, session or ledger.session, progress, None)


def _safe_hash(prev: str, s: Any, seq: Any, type_: Any, payload: Any, ts: Any, kid: Any) -> str:
    """event_hash() of a row whose values may be garbled (never raises)."""
    try:
        return event_hash(prev, s, seq, type_, payload, ts, kid)
    except (TypeError, ValueError, AttributeError):
        return ""


try:  # json's C string escaping, without jsonc's wrapper (this loop calls it twice a row)
    from _json import encode_basestring as _ESC
except ImportError:  # pragma: no cover - CPython has it
    _ESC = _STR

_UNCHAINED = "event {} does not chain to the event before it (deleted, inserted or reordered)"
_NONE: list[tuple[Any, ...]] = []  # shared, never appended to
_BLOB_CACHE = 256  # digests already verified in this pass (bounded: memory stays flat)


def _verify(
    ledger: Ledger,
    sess: str,
    progress: Callable[[int, int], None] | None,
    replay: _Replay | None,
) -> list[Problem]:
    """One streaming pass: chain, MACs, head, evidence index and blobs (and the replay).

    Everything is read in one snapshot of the store (:meth:`BaseJournal.snapshot`), so a
    session that is live while it is verified is verified up to the head that snapshot
    holds: rows committed meanwhile are neither seen nor missed. Rows and the evidence
    index are read as two seq-ordered streams and merged, so memory is flat in the number
    of events; each payload is parsed at most once and each blob is read once.
    """
    with ledger.journal.snapshot():
        return _verify_pass(ledger, sess, progress, replay)


class _Pass:
    """One verification pass over a session: what the row walk (:func:`_walk_rows`) leaves
    for the checks of :data:`END_CHECKS`, and the problems found."""

    __slots__ = (
        "blobs_ok",
        "foreign",
        "index",
        "last_seq",
        "ledger",
        "mac_of",
        "n",
        "other_key",
        "ours",
        "pending",
        "prev",
        "problems",
        "sess",
    )

    def __init__(self, ledger: Ledger, sess: str) -> None:
        self.ledger, self.sess = ledger, sess
        self.mac_of = hmac_hex_many(ledger.key.secret)  # HMAC-SHA256 under this key, hex
        self.problems: list[Problem] = []
        self.prev = GENESIS  # the last row's hash
        self.last_seq = 0
        self.n = 0  # rows read
        self.other_key: set[str] = set()
        self.ours = False  # an event signed by this key was seen
        self.foreign: list[tuple[int, str]] = []
        self.index = ledger.journal.evidence_stream(sess)
        self.pending: tuple[Any, ...] | None = next(self.index, None)
        self.blobs_ok: dict[str, None] = {}  # blob digests verified in this pass


def _verify_pass(
    ledger: Ledger,
    sess: str,
    progress: Callable[[int, int], None] | None,
    replay: _Replay | None,
) -> list[Problem]:
    """Walk the rows once (:func:`_walk_rows`), then judge what is left by
    :data:`END_CHECKS`, in order; the home manifest's problems come last."""
    p = _Pass(ledger, sess)
    _walk_rows(p, progress, replay)
    for check in END_CHECKS:
        check(p)
    problems = p.problems
    problems.sort(key=lambda q: (q.seq is None, q.seq or 0))
    # The home manifest: a head put back, a session deleted, ledger.db replaced (after this
    # session's own problems, so the first one named is still this session's first bad event).
    home = [Problem(s_ or "(home)", q, c, m) for s_, q, c, m in ledger.journal.verify_home()]
    home.sort(key=lambda q: (q.session != sess, q.seq is None, q.seq or 0))
    problems.extend(home)
    return problems


def _walk_rows(
    p: _Pass, progress: Callable[[int, int], None] | None, replay: _Replay | None
) -> None:
    """Each row, in seq order: no seq missing or repeated, chained to the row before it, its
    hash recomputed, its MAC this key's (a foreign key id is noted for :func:`_one_key`),
    then what it says of the evidence (:func:`_row_evidence`). The rows come a page at a
    time (:meth:`~BaseJournal.stream_pages`); the replay, when there is one, takes each
    row once it is checked, with its payload if the checks parsed it."""
    ledger, sess, problems = p.ledger, p.sess, p.problems
    j = ledger.journal
    ours_kid, (new_inner, new_outer) = ledger.key.key_id, hmac_pads(ledger.key.secret)
    prev, expected, last_seq, n, ours = GENESIS, 1, 0, 0, False
    other_key, foreign = p.other_key, p.foreign
    total = j.last_seq(sess) if progress is not None else 0
    pending = p.pending
    esc, sha256, compare = _ESC, hashlib.sha256, hmac.compare_digest
    escaped: dict[Any, str] = {}  # bounded by the distinct types
    ours_head, ours_tail = f"[{esc(sess)},", f",{esc(ours_kid)}]"
    take = replay.apply if replay is not None else None
    for page in j.stream_pages(sess):
        for _rowid, s, seq, type_, payload, ts, prev_hash, h, mac, kid in page:
            if seq != expected:
                if seq > expected:
                    msg = f"event {expected} is missing (deleted)"
                    problems.append(Problem(sess, expected, "missing", msg))
                else:
                    problems.append(Problem(sess, seq, "inserted", f"event {seq} appears twice"))
                expected = seq
            if prev_hash != prev:
                problems.append(Problem(sess, seq, "reordered", _UNCHAINED.format(seq)))
            try:  # event_hash() and event_body(), inlined: this loop is the verification's cost
                if type(seq) is not int:
                    raise TypeError(seq)
                # the session and this key's id open and close every row's body (each row
                # is compared, not hashed again); a type is escaped once
                e_t = escaped.get(type_)
                if e_t is None or s != sess or kid != ours_kid:
                    e_t = esc(type_)
                    if len(escaped) < 256:  # a garbled journal's odd values stay uncached
                        escaped[type_] = e_t
                    head, tail = f"[{esc(s)},", f",{esc(kid)}]"
                else:
                    head, tail = ours_head, ours_tail
                text = f"{prev_hash}\n{head}{seq},{e_t},{esc(payload)},{esc(ts)}{tail}"
                recomputed = sha256(text.encode()).hexdigest()
            except (UnicodeEncodeError, TypeError, ValueError):
                recomputed = _safe_hash(prev_hash, s, seq, type_, payload, ts, kid)
            if recomputed != h:  # a public hash: plain comparison
                problems.append(Problem(sess, seq, "edited", f"event {seq} ({type_}) was edited"))
            elif kid != ours_kid:
                other_key.add(kid)
                foreign.append((seq, kid))
            else:  # HMAC-SHA256 of the hash, hmac_hex_many() inlined
                inner, outer = new_inner(), new_outer()
                inner.update(h.encode())
                outer.update(inner.digest())
                if compare(outer.hexdigest(), mac):
                    ours = True
                else:
                    msg = f"event {seq} has a MAC this key did not make"
                    problems.append(Problem(sess, seq, "bad_mac", msg))
            here: list[tuple[Any, ...]] = _NONE
            if pending is not None and pending[1] <= seq:
                here, pending = _index_rows(p, seq, pending)
            parsed: dict[str, Any] | None = None
            if here or type_ == "evidence_recorded" or type_ == "merged_from":
                parsed = _row_evidence(p, here, seq, type_, payload)
            if take is not None:
                take(seq, type_, payload, ts, parsed)
            prev, expected, last_seq = h, seq + 1, seq
        n += len(page)
        if progress is not None:
            progress(n, total)
    p.prev, p.last_seq, p.n, p.ours, p.pending = prev, last_seq, n, ours, pending


def _index_rows(
    p: _Pass, seq: int, pending: tuple[Any, ...] | None
) -> tuple[list[tuple[Any, ...]], tuple[Any, ...] | None]:
    """The evidence index rows of this seq, and the next pending one (an earlier one names
    no event)."""
    here = []
    while pending is not None and pending[1] <= seq:
        if pending[1] < seq:
            msg = f"evidence {pending[0]} has no journal event"
            p.problems.append(Problem(p.sess, pending[1], "evidence", msg))
        else:
            here.append(pending)
        pending = next(p.index, None)
    return here, pending


def _row_evidence(
    p: _Pass, here: list[tuple[Any, ...]], seq: int, type_: str, payload: str
) -> dict[str, Any] | None:
    """This row's evidence index rows against its event (:func:`_check_evidence`), a
    ``merged_from``'s stamps against their fork (:func:`_check_merged`); the payload, if it
    had to be parsed for that (else None)."""
    ledger, sess, problems, blobs_ok = p.ledger, p.sess, p.problems, p.blobs_ok
    parsed: dict[str, Any] | None = None
    if (here or type_ == "evidence_recorded") and not (
        len(here) == 1 and _evidence_ok(p, type_, payload, here[0])
    ):
        parsed = loads_object(payload)
        problems.extend(_check_evidence(ledger, sess, seq, type_, parsed, here, blobs_ok))
    if type_ == "merged_from":
        parsed = parsed if parsed is not None else loads_object(payload)
        problems.extend(_check_merged(ledger, sess, seq, parsed))
    return parsed


def _index_rows_have_events(p: _Pass) -> None:
    """No evidence index row is left past the journal's last event."""
    while p.pending is not None:
        pending = p.pending
        msg = f"evidence {pending[0]} has no journal event"
        p.problems.append(Problem(p.sess, pending[1], "evidence", msg))
        p.pending = next(p.index, None)


def _one_key(p: _Pass) -> None:
    """The chain is signed by this key: in a mixed chain each foreign-key event was rewritten
    without it; a chain signed by another key alone was copied, or the key changed."""
    key_id = p.ledger.key.key_id
    if p.ours:
        p.problems.extend(
            Problem(
                p.sess,
                seq,
                "bad_mac",
                f"event {seq} claims key id {kid}, but the rest of the chain is signed by this "
                f"key ({key_id}): it was rewritten without the key",
            )
            for seq, kid in p.foreign
        )
    elif p.other_key:
        p.problems.append(
            Problem(
                p.sess,
                None,
                "key_mismatch",
                f"the chain is intact but was signed with key id(s) {sorted(p.other_key)}, "
                f"not this key ({key_id}): the key changed or the ledger was copied",
            )
        )


def _head_matches(p: _Pass) -> None:
    """The session's head record exists, names the last event and its hash, and its MAC
    verifies (when the chain is this key's)."""
    j, sess, last_seq = p.ledger.journal, p.sess, p.last_seq
    head = j.head_row(sess)
    if p.n and head is None:
        p.problems.append(Problem(sess, None, "head", "the session head record is missing"))
    elif head is not None:
        hseq, hhash, hmac_ = head
        if hseq != last_seq or hhash != p.prev:
            p.problems.append(
                Problem(
                    sess,
                    min(hseq, last_seq) + 1,
                    "missing",
                    f"the head says seq {hseq} but the journal ends at {last_seq}: "
                    "events were removed from the end or appended outside infomark",
                )
            )
        elif (p.ours or not p.other_key) and not hmac.compare_digest(
            j.head_mac(sess, hseq, hhash), hmac_
        ):
            p.problems.append(Problem(sess, hseq, "head", "the head record's MAC does not verify"))


#: What is judged after the last row, in order (before the problems are sorted by seq).
END_CHECKS: tuple[Callable[[_Pass], None], ...] = (
    _index_rows_have_events,
    _one_key,
    _head_matches,
)


_HEAD, _TAIL = '{"mac":"', ',"ref":"'
_DIGEST = '"output_digest":"'


def _evidence_ok(p: _Pass, type_: str, payload: str, index_row: tuple[Any, ...]) -> bool:
    """The common case without parsing: an event exactly as record() writes it, its one
    index row equal to it, the MAC ours and the blob intact. Anything else: False, and the
    slow path names the problem."""
    ref, _seq, record_text, mac = index_row
    if (
        type_ != "evidence_recorded"
        or not isinstance(payload, str)
        or not payload.startswith(_HEAD)
        or payload[72:83] != '","record":'
        or payload[-37:-29] != _TAIL
        or payload[8:72] != mac
        or payload[-29:-2] != ref
        or payload[83:-37] != record_text
        or ref != "ev_" + mac[:24]
    ):
        return False
    if not hmac.compare_digest(p.mac_of(record_text.encode("utf-8")), mac):
        return False  # altered, or another key's record: the slow path says which
    at = record_text.rfind(_DIGEST)  # the top-level key: sorted after "input"
    if at < 0:
        return False
    digest = record_text[at + 17 : at + 17 + 71]
    blobs_ok = p.blobs_ok
    if digest in blobs_ok:
        return True
    if p.ledger.blobs.verify(digest) is not True:
        return False
    if len(blobs_ok) >= _BLOB_CACHE:
        blobs_ok.pop(next(iter(blobs_ok)))
    blobs_ok[digest] = None
    return True


def _check_evidence(
    ledger: Ledger,
    sess: str,
    seq: int,
    type_: str,
    payload: dict[str, Any],
    here: list[tuple[Any, ...]],
    blobs_ok: dict[str, None],
) -> list[Problem]:
    """The event at ``seq`` against the evidence index rows that name that seq."""
    out: list[Problem] = []
    event_ref = payload.get("ref") if type_ == "evidence_recorded" else None
    event_record = payload.get("record")
    event_text = (
        canonical_json(event_record).decode("utf-8") if isinstance(event_record, dict) else None
    )
    matched = False
    for ref, _seq, record_text, mac in here:
        if type_ != "evidence_recorded":
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} has no journal event"))
            continue
        if record_text == event_text and event_record is not None:
            record: Any = event_record  # the common case: the index holds the event's record
        else:
            try:
                record = json.loads(record_text)
            except (ValueError, RecursionError, TypeError):
                record = None
        if not isinstance(record, dict):
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} record is garbled"))
            continue
        text = record_text if record is event_record else canonical_json(record).decode()
        exp_mac = ledger.key.mac(text.encode("utf-8"))
        if record.get("key_id") == ledger.key.key_id and not (
            hmac.compare_digest("ev_" + exp_mac[:24], ref) and hmac.compare_digest(exp_mac, mac)
        ):
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} record was altered"))
            continue
        if event_ref != ref or text != event_text:
            out.append(Problem(sess, seq, "evidence", f"evidence {ref} differs from its event"))
            continue
        matched = True
        digest = str(record.get("output_digest"))
        if digest in blobs_ok:
            continue
        ok = ledger.blobs.verify(digest)
        if ok is False:
            out.append(Problem(sess, seq, "blob", f"output blob of {ref} was altered"))
        elif ok is None:
            out.append(Problem(sess, seq, "blob", f"output blob of {ref} is missing"))
        else:
            if len(blobs_ok) >= _BLOB_CACHE:
                blobs_ok.pop(next(iter(blobs_ok)))
            blobs_ok[digest] = None
    if type_ == "evidence_recorded" and not matched and not any(r[0] == event_ref for r in here):
        if _inherited(ledger, sess, payload):
            return out  # a fork's copy of its origin's evidence: the origin's own row holds it
        elsewhere = ledger.journal.evidence_row(event_ref) if isinstance(event_ref, str) else None
        where = "is missing" if elsewhere is None else "was moved"
        out.append(Problem(sess, seq, "evidence", f"the evidence index row of {event_ref} {where}"))
    return out


def _inherited(ledger: Ledger, sess: str, event: dict[str, Any]) -> bool:
    record = event.get("record")
    if not isinstance(record, dict) or record.get("session") == sess:
        return False
    ref = event.get("ref")
    return isinstance(ref, str) and ledger.verify_ref_in(ref, sess)[0] is not None


def _check_merged(ledger: Ledger, sess: str, seq: int, payload: dict[str, Any]) -> list[Problem]:
    """Every stamp a ``merged_from`` brought in must still verify against its fork's chain."""
    out: list[Problem] = []
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


#: The rows the audit lists, by type (each as ``{"seq": …, **payload}``, in seq order).
LISTED = (
    "bypass",
    "stamp_rejected",
    "finished_unverified",
    "finished_blocked",
    "record_refused",
    "grading_changed",
    "files_written",  # only those of scratch files
    "unannounced_mutation",
)

#: What the replay hands on, per row: ``(seq, type, payload, timestamp)``; the payload of a
#: type that neither the reducer, the listing nor the feed (its ``wants``) reads is left
#: unparsed (an empty mapping).
RowFeed = Callable[[int, str, dict[str, Any], str], None]

_UNREAD: dict[str, Any] = {}  # the payload of a row no one reads (shared, never written)
_REDUCED = frozenset(REDUCERS)


class _Replay:
    """The projection rebuilt during the verification pass (the same reducer as live), the
    rows of the :data:`LISTED` types, and each row handed on to ``feed`` (the audit's story),
    all from the one read. A payload is parsed at most once, and only when its type is one
    the reducer, the listing or ``wants`` (the feed's types) reads: with one call of the C
    scanner in :meth:`apply` (:func:`_parse` decides anything else), ~1,400 instructions a
    row fewer than calling :func:`_parse` (callgrind, the bench's 10⁵-event session)."""

    def __init__(
        self, session: str, feed: RowFeed | None = None, wants: Collection[str] = ()
    ) -> None:
        self.state = SessionState(session=session)
        self.feed = feed  # each row, as read and parsed once (the audit's timeline)
        self.listed: dict[str, list[dict[str, Any]]] = {t: [] for t in LISTED}
        self.read = _REDUCED | frozenset(LISTED) | frozenset(wants if feed is not None else ())

    @property
    def bypasses(self) -> list[dict[str, Any]]:
        return self.listed["bypass"]

    @property
    def rejections(self) -> list[dict[str, Any]]:
        return self.listed["stamp_rejected"]

    def apply(
        self, seq: int, type_: str, payload: Any, ts: str, parsed: dict[str, Any] | None
    ) -> None:
        """One checked row, in seq order: ``payload`` as stored, ``parsed`` if the checks
        parsed it (else None). Reduced as :func:`~infomark.ledger.state.apply` does."""
        if parsed is None:
            if type_ not in self.read:
                parsed = _UNREAD
            else:  # _parse() inlined: the C scanner's one call in the common case
                try:
                    parsed, end = scan_once(payload, 0)
                except Exception:  # not a str, not JSON: _parse() decides
                    end = -1
                if end < 0 or end != len(payload) or type(parsed) is not dict:
                    parsed = _parse(payload)
        rows = self.listed.get(type_)
        if rows is not None and (type_ != "files_written" or parsed.get("scratch")):
            rows.append({"seq": seq, **parsed})
        state = self.state
        fn = REDUCERS.get(type_)
        if fn is not None:
            # a fork's copied prefix is reduced at its origin's seq (as apply() does); a
            # garbled row only advances seq (verification names it); suppress() would cost
            # a context manager a row
            try:  # noqa: SIM105
                fn(state, seq - 1 if 1 < seq <= state.shift_until else seq, parsed)
            except (KeyError, TypeError, ValueError, AttributeError):
                pass
        state.seq = seq
        if self.feed is not None:
            self.feed(seq, type_, parsed, ts)


def _parse(payload: Any) -> dict[str, Any]:
    """A stored payload (:func:`loads_object`): the C scanner's one call in the common case."""
    try:
        parsed = loads_compact(payload) if type(payload) is str else None
    except (ValueError, RecursionError):
        parsed = None
    return parsed if type(parsed) is dict else loads_object(payload)

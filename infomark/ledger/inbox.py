"""The steering inbox: operator messages to a live session, and the lease that makes it live.

A session is *live* while some runtime holds its inbox lease (a row in ``inbox_leases``
whose heartbeat is younger than its ttl and that was not released). :meth:`Inbox.send`
delivers a message only to a live session; otherwise it refuses at once, with the reason
(``never_had_inbox``, ``finished``, ``lease_expired``), and never reports a delivery. The
runtime that holds the lease takes pending messages with :meth:`Inbox.read` at its next
model call. Every delivery, read, refusal, lease opening and release is a journal event of
the target session (``inbox_delivered``, ``inbox_read``, ``inbox_refused``,
``inbox_opened``, ``inbox_closed``), written in the same SQLite transaction as the table
rows, so a crash never leaves a message delivered without its event or the reverse.

The two tables live in the ledger's own ``ledger.db`` (created idempotently, outside the
journal's schema version); any number of processes may send, one holder reads. Heartbeats
are table updates only (not journaled: they would flood the journal). The clock is
injectable; lease times are wall-clock seconds so that several processes agree on them.
Standard library only: the Claude Code hook uses it on its hot path.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from infomark.kernel.digest import sha256
from infomark.kernel.errors import UserError
from infomark.kernel.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.ledger.store.base import BaseJournal
    from infomark.ledger.store.conn import Conn

__all__ = [
    "MAX_MESSAGE_CHARS",
    "REFUSAL_REASONS",
    "Delivery",
    "Inbox",
    "InboxRefused",
    "Lease",
    "LeaseLost",
    "Message",
    "new_holder",
]

MAX_MESSAGE_CHARS = 8000
REFUSAL_REASONS = (
    "never_had_inbox",
    "finished",
    "lease_expired",
    "empty",
    "too_large",
    "invalid_text",
)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS inbox_leases ("
    " session TEXT PRIMARY KEY, holder TEXT NOT NULL, kind TEXT NOT NULL, host TEXT NOT NULL,"
    " pid INTEGER NOT NULL, acquired REAL NOT NULL, heartbeat REAL NOT NULL, ttl REAL NOT NULL,"
    " released REAL, release_reason TEXT, parent TEXT)",
    "CREATE TABLE IF NOT EXISTS inbox_messages ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, sender TEXT NOT NULL,"
    " text TEXT NOT NULL, sent REAL NOT NULL, seq INTEGER NOT NULL, read_at REAL,"
    " read_by TEXT)",
    "CREATE INDEX IF NOT EXISTS inbox_unread ON inbox_messages(session, read_at)",
)


class InboxRefused(UserError):
    """A send to a session with no live inbox (or an unusable message); nothing was delivered."""

    code = "inbox_refused"
    exit_code = 3

    def __init__(self, session: str, reason: str, detail: str) -> None:
        super().__init__(f"not delivered to session {session!r}: {reason}: {detail}")
        self.session = session
        self.reason = reason
        self.detail = detail


class LeaseLost(UserError):
    """The caller no longer holds the lease (another runtime took it over, or it was released)."""

    code = "inbox_lease_lost"


@dataclass(frozen=True, slots=True)
class Lease:
    session: str
    holder: str
    kind: str
    host: str
    pid: int
    acquired: float
    heartbeat: float
    ttl: float
    released: float | None
    release_reason: str | None
    parent: str | None

    def state(self, now: float) -> str:
        """``live``, ``finished`` (released; the reason says why) or ``lease_expired``."""
        if self.released is not None:
            return "finished"
        if now - self.heartbeat > self.ttl:
            return "lease_expired"
        return "live"

    def holder_dead(self) -> bool:
        """Whether the holder is a process of this host that no longer exists."""
        if self.host != _hostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


@dataclass(frozen=True, slots=True)
class Message:
    id: int
    session: str
    sender: str
    text: str
    sent: float
    seq: int  # the journal seq of its ``inbox_delivered`` event


@dataclass(frozen=True, slots=True)
class Delivery:
    message_id: int
    session: str
    seq: int
    holder: str


def _hostname() -> str:
    """``socket.gethostname()`` without importing socket (hook start-up): the same uname field."""
    return os.uname().nodename


def new_holder(kind: str = "runner") -> str:
    """A holder id unique to this process and call: ``kind:host:pid:random``."""
    return f"{kind}:{_hostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def _lease(row: tuple[Any, ...] | None) -> Lease | None:
    if row is None:
        return None
    return Lease(
        session=str(row[0]),
        holder=str(row[1]),
        kind=str(row[2]),
        host=str(row[3]),
        pid=int(row[4]),
        acquired=float(row[5]),
        heartbeat=float(row[6]),
        ttl=float(row[7]),
        released=None if row[8] is None else float(row[8]),
        release_reason=None if row[9] is None else str(row[9]),
        parent=None if row[10] is None else str(row[10]),
    )


_SELECT_LEASE = (
    "SELECT session, holder, kind, host, pid, acquired, heartbeat, ttl, released, "
    "release_reason, parent FROM inbox_leases WHERE session = ?"
)
_UPSERT_LEASE = (
    "INSERT INTO inbox_leases(session, holder, kind, host, pid, acquired, heartbeat, ttl, "
    "released, release_reason, parent) VALUES (?,?,?,?,?,?,?,?,NULL,NULL,?) "
    "ON CONFLICT(session) DO UPDATE SET holder=excluded.holder, kind=excluded.kind, "
    "host=excluded.host, pid=excluded.pid, acquired=excluded.acquired, "
    "heartbeat=excluded.heartbeat, ttl=excluded.ttl, released=NULL, "
    "release_reason=NULL, parent=COALESCE(excluded.parent, inbox_leases.parent)"
)


class Inbox:
    """The inbox tables of one ledger home, over its journal (one per process or thread)."""

    def __init__(self, journal: BaseJournal, *, clock: Callable[[], float] = time.time) -> None:
        self.journal = journal
        self.clock = clock
        # A second connection for lock-free peeks (WAL readers never wait for the writer).
        self._peek: Any = journal.reader()
        if journal.managed_schema:
            return  # PostgreSQL: the versioned migrations created the inbox tables
        have = self._peek.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'inbox_%'"
        ).fetchone()[0]
        if have < 2:
            with journal.write() as db:
                for stmt in _SCHEMA:
                    db.execute(stmt)

    def close(self) -> None:
        self._peek.close()

    # -- leases ---------------------------------------------------------------------------
    def lease(self, session: str, conn: Conn | None = None) -> Lease | None:
        row = (conn or self._peek).execute(_SELECT_LEASE, (session,)).fetchone()
        return _lease(row)

    def liveness(self, session: str, conn: Conn | None = None) -> tuple[str, str]:
        """``(state, detail)``: state is ``live`` or one of the refusal reasons."""
        lease = self.lease(session, conn)
        now = self.clock()
        if lease is None:
            return "never_had_inbox", "no runtime ever held an inbox for this session"
        state = lease.state(now)
        if state == "finished":
            return state, f"its runtime released the inbox ({lease.release_reason or 'finished'})"
        if state == "lease_expired":
            age = now - lease.heartbeat
            return state, (
                f"the last heartbeat of {lease.holder} is {age:.0f}s old (ttl {lease.ttl:g}s); "
                "the runtime is gone: resume it (infomark run --resume) to reopen the inbox"
            )
        if lease.holder_dead():
            return "lease_expired", (
                f"its holder {lease.holder} (pid {lease.pid}) is gone; resume the run "
                "(infomark run --resume) to reopen the inbox"
            )
        return "live", f"held by {lease.holder}"

    def acquire(
        self,
        session: str,
        *,
        holder: str,
        kind: str = "runner",
        ttl: float = 60.0,
        parent: str | None = None,
        pid: int | None = None,
    ) -> Lease:
        """Hold the inbox of ``session``; a live lease of another holder refuses (UserError).

        A lease whose holder is a dead process of this host, an expired one or a released
        one is taken over (journaled with the previous holder). ``pid`` 0 says the holder is
        no single process (Claude Code's hooks: a process per event); it then lives by its
        heartbeat alone.
        """
        now = self.clock()
        host = _hostname()
        pid = os.getpid() if pid is None else pid
        with self.journal.write(session) as db:
            old = self.lease(session, db)
            if (
                old is not None
                and old.holder != holder
                and old.state(now) == "live"
                and not old.holder_dead()
            ):
                raise UserError(
                    f"session {session!r} is already run by {old.holder} (heartbeat "
                    f"{now - old.heartbeat:.0f}s ago); stop it first or pick another session"
                )
            db.execute(
                _UPSERT_LEASE,
                (session, holder, kind, host, pid, now, now, ttl, parent),
            )
            self.journal.append(
                session,
                "inbox_opened",
                {
                    "holder": holder,
                    "kind": kind,
                    "ttl": ttl,
                    "parent": parent,
                    "previous": None if old is None else old.holder,
                    "previous_state": None if old is None else old.state(now),
                },
            )
        lease = self.lease(session)
        assert lease is not None
        return lease

    def heartbeat(self, session: str, holder: str) -> None:
        """Keep the lease alive; LeaseLost if another runtime holds it now."""
        with self.journal.write(session) as db:
            cur = db.execute(
                "UPDATE inbox_leases SET heartbeat = ? "
                "WHERE session = ? AND holder = ? AND released IS NULL",
                (self.clock(), session, holder),
            )
            if cur.rowcount != 1:
                raise LeaseLost(f"{holder} no longer holds the inbox of session {session!r}")

    def release(self, session: str, holder: str, reason: str = "finished") -> None:
        """Give the inbox up: later sends are refused with ``finished`` (journaled)."""
        with self.journal.write(session) as db:
            cur = db.execute(
                "UPDATE inbox_leases SET released = ?, release_reason = ? "
                "WHERE session = ? AND holder = ? AND released IS NULL",
                (self.clock(), reason[:200], session, holder),
            )
            if cur.rowcount == 1:
                unread = db.execute(
                    "SELECT COUNT(*) FROM inbox_messages WHERE session = ? AND read_at IS NULL",
                    (session,),
                ).fetchone()[0]
                self.journal.append(
                    session,
                    "inbox_closed",
                    {"holder": holder, "reason": reason[:200], "unread": int(unread)},
                )

    # -- messages ---------------------------------------------------------------------------
    def send(self, session: str, text: str, *, sender: str = "operator") -> Delivery:
        """Deliver ``text`` to a live session, or raise :class:`InboxRefused` (journaled)."""
        sender = (sender or "operator")[:200].encode("utf-8", "replace").decode("utf-8")
        with self.journal.write(session) as db:
            reason, detail = self._check(db, session, text)
            raw = text.encode("utf-8", "replace") if isinstance(text, str) else b""
            digest = sha256(raw).hexdigest()[:32]
            if reason != "live":
                self.journal.append(
                    session,
                    "inbox_refused",
                    {"sender": sender, "reason": reason, "detail": detail, "digest": digest},
                )
            else:
                lease = self.lease(session, db)
                assert lease is not None
                seq = self.journal.head(session)[0] + 1
                mid = int(
                    db.execute(
                        "INSERT INTO inbox_messages(session, sender, text, sent, seq) "
                        "VALUES (?, ?, ?, ?, ?) RETURNING id",
                        (session, sender, text, self.clock(), seq),
                    ).fetchone()[0]
                )
                self.journal.append(
                    session,
                    "inbox_delivered",
                    {
                        "message_id": mid,
                        "sender": sender,
                        "text": text,
                        "digest": digest,
                        "holder": lease.holder,
                    },
                )
                return Delivery(mid, session, seq, lease.holder)
        raise InboxRefused(session, reason, detail)

    def _check(self, db: Conn, session: str, text: str) -> tuple[str, str]:
        if not isinstance(text, str) or not text.strip():
            return "empty", "the message is empty"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return "invalid_text", f"the message is not valid Unicode text ({exc.reason})"
        if len(text) > MAX_MESSAGE_CHARS:
            return "too_large", (
                f"the message has {len(text)} characters, more than {MAX_MESSAGE_CHARS}; "
                "send a shorter one (or a path to a file)"
            )
        return self.liveness(session, db)

    def pending(self, session: str) -> int:
        """Unread messages for ``session`` (a lock-free peek; nothing journaled)."""
        row = self._peek.execute(
            "SELECT COUNT(*) FROM inbox_messages WHERE session = ? AND read_at IS NULL",
            (session,),
        ).fetchone()
        return int(row[0])

    def read(
        self,
        session: str,
        holder: str,
        *,
        where: str = "before_model_call",
        max_chars: int | None = None,
    ) -> list[Message]:
        """Take the unread messages (oldest first); journals one ``inbox_read`` if any.

        ``max_chars`` bounds the total text taken (at least one message is); the rest stay
        unread for the next read, so a size limit never drops a message.
        """
        if not self.pending(session):
            return []
        with self.journal.write(session) as db:
            rows = db.execute(
                "SELECT id, session, sender, text, sent, seq FROM inbox_messages "
                "WHERE session = ? AND read_at IS NULL ORDER BY id",
                (session,),
            ).fetchall()
            if max_chars is not None:
                total = 0
                keep: list[Any] = []
                for r in rows:
                    total += len(r[3])
                    if keep and total > max_chars:
                        break
                    keep.append(r)
                rows = keep
            if not rows:
                return []
            now = self.clock()
            ids = [int(r[0]) for r in rows]
            db.executemany(
                "UPDATE inbox_messages SET read_at = ?, read_by = ? WHERE id = ?",
                [(now, holder, i) for i in ids],
            )
            self.journal.append(
                session, "inbox_read", {"message_ids": ids, "holder": holder, "where": where}
            )
        return [
            Message(int(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4]), int(r[5]))
            for r in rows
        ]

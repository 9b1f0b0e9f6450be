"""The store seam: what every journal backend provides (standard library only).

A backend is a subclass of :class:`BaseJournal`. Two exist: SQLite
(:class:`infomark.ledger.store.journal.Journal`, the embedded default, one file in the home) and
PostgreSQL (:class:`infomark.ledger.store.pg.PgJournal`, one shared ledger for a team).
Everything above the journal (the engine, the inbox, fork and merge, audit, the hook)
talks to this interface only:

* :meth:`BaseJournal.write` is one serialised write transaction that yields a
  :class:`Conn` (``execute`` / ``executemany`` with ``?`` placeholders, in the SQL both
  engines accept); :meth:`append` chains, MACs and indexes inside it;
* reads (``events``, ``raw_rows``, ``stream_rows``, ``head_row``, ``evidence_*``,
  ``sessions``) see what is committed; :meth:`reader` is a second connection for
  lock-free peeks; :meth:`reopen` another handle on the same store (a thread of its own);
* :meth:`snapshot` holds one read transaction, so a verification reads rows, heads,
  evidence and the manifest as one committed state while writers go on;
* :meth:`verify_home` checks the home manifest in one consistent read snapshot.

The hash chain, the MACs, the heads and the home manifest are computed here, once, for
both backends: the bytes they cover are the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping

from infomark.kernel import jsonc
from infomark.kernel.digest import sha256
from infomark.kernel.errors import StoreError
from infomark.kernel.records import dataclass
from infomark.ledger import manifest
from infomark.ledger.canonical import canonical_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager
    from typing import Any, TypeVar

    from _typeshed import StrPath

    from infomark.ledger.keys import Key
    from infomark.ledger.store.conn import Conn

    _T = TypeVar("_T")

__all__ = [
    "GENESIS",
    "BaseJournal",
    "EventRow",
    "event_body",
    "event_hash",
    "loads_object",
]

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class EventRow:
    session: str
    seq: int
    type: str
    payload: dict[str, Any]
    timestamp: str
    prev_hash: str
    hash: str
    mac: str
    key_id: str

    def public(self) -> dict[str, Any]:
        """The stable JSON shape of ``infomark events``."""
        return {
            "session": self.session,
            "seq": self.seq,
            "type": self.type,
            "payload": self.payload,
            "timestamp": self.timestamp,
            "hash": self.hash,
        }


_ENCODE = jsonc.encoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)  # canonical_json's settings, built once (verification calls this per row)


_STR = jsonc.encode_basestring  # that encoder's string escaping (C)


def event_body(
    session: object, seq: object, type_: object, payload_json: object, ts: object, key_id: object
) -> str:
    """``canonical_json([session, seq, type, payload, ts, key_id])`` as text, the hashed body.

    Rows are strings and one int, so the list is written directly with the encoder's own
    string escaping (a third of the generic encoder's time: verification does this per
    row); any other value goes through the generic encoder. A test pins the two equal.
    """
    if (
        type(seq) is int
        and type(session) is str
        and type(type_) is str
        and type(payload_json) is str
        and type(ts) is str
        and type(key_id) is str
    ):
        return (
            f"[{_STR(session)},{seq},{_STR(type_)},{_STR(payload_json)},{_STR(ts)},{_STR(key_id)}]"
        )
    return _ENCODE([session, seq, type_, payload_json, ts, key_id])


def event_hash(
    prev_hash: str, session: str, seq: int, type_: str, payload_json: str, ts: str, key_id: str
) -> str:
    """``sha256(prev ‖ "\\n" ‖ canonical_json([session, seq, type, payload, ts, key_id]))``."""
    text = event_body(session, seq, type_, payload_json, ts, key_id)
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: canonical_json escapes them
        body = canonical_json([session, seq, type_, payload_json, ts, key_id])
    return sha256(prev_hash.encode() + b"\n" + body).hexdigest()


def loads_object(text: object) -> dict[str, Any]:
    """A stored JSON object; a garbled one reads as ``{"__garbled__": True}``, never raises.

    Verification reports the row (its hash no longer matches); readers skip it.
    """
    try:
        if type(text) is str:
            value = jsonc.loads_compact(text)  # a stored payload: compact JSON
        else:
            value = jsonc.loads(text) if isinstance(text, str | bytes) else None
    except (ValueError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {"__garbled__": True}


class _NoScope:
    """A context manager that does nothing (``contextlib.nullcontext`` without its import)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SCOPE = _NoScope()


def _now() -> str:
    """UTC, ISO 8601 with milliseconds (``datetime.isoformat``'s format; no datetime import)."""
    ns = time.time_ns()
    secs, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rest // 1_000_000:03d}+00:00"


class BaseJournal(ABC):
    """The journal of one ledger home on some backend; one handle per process or thread.

    ``path`` anchors the home-level marker (``manifest.marker_path``); ``where`` names the
    store in messages (never a password). ``kind`` is ``sqlite`` or ``postgresql``.
    ``managed_schema`` is True where every table comes from the versioned migrations (the
    inbox then creates none of its own).
    """

    kind = "base"
    managed_schema = False
    path: StrPath
    key: Key
    _db: Conn

    def _init_state(self, path: StrPath, key: Key) -> None:
        self.path = path
        self.key = key
        self._in_tx = False
        self._reading = False  # inside snapshot()
        self._touched: manifest.Touched = {}  # sessions appended to in this transaction
        self.rows_read = 0  # event rows this handle read for projections (tests pin O(1))

    @property
    def where(self) -> str:
        """The store, for messages: the SQLite file, or the PostgreSQL URL without secrets."""
        return str(self.path)

    def relax_next(self) -> None:
        """Let the next transaction commit without waiting for the disk (SQLite: its WAL
        frames reach it with the next durable commit). Here: a no-op, every commit waits."""
        return None

    def require_sync(self) -> None:
        """The open transaction needs the disk after all (after :meth:`relax_next`)."""
        return None

    def defer_checkpoints(self) -> bool:
        """Leave WAL checkpoints to a background checkpointer (the HTTP service's); True
        where the backend has them (SQLite). Here: nothing to defer."""
        return False

    def group_commits(self) -> bool:
        """Share the write lock and the fsyncs of concurrent commits with this process's other
        handles of the store; True where the backend needs it (SQLite). Here: nothing to do."""
        return False

    def writer_busy(self) -> bool:
        """Whether another process holds the store's write lock now, as far as this backend
        can tell without waiting (SQLite: its writer queue); here it cannot: False."""
        return False

    def foreign_commits(self) -> int | None:
        """Under :meth:`group_commits`, a count that moves whenever something other than this
        process's grouped writers committed; None where the backend cannot tell (then a
        pooled tail check compares every row it verified)."""
        return None

    def sync_once(
        self,
        *,
        before_wait: Callable[[], None] | None = None,
        settle: Callable[[Callable[[], None]], None] | None = None,
    ) -> AbstractContextManager[None]:
        """The durable commits inside wait for the disk once, when the scope ends (SQLite
        under :meth:`group_commits`; ``before_wait`` is called before that wait, or the wait
        is handed to ``settle`` to run later). Here every commit is durable when it returns:
        nothing is owed, ``settle`` is never called."""
        return _NO_SCOPE

    @property
    def store_url(self) -> str | None:
        """What selects this store again (None: the home's own SQLite file)."""
        return None

    # -- what each backend implements --------------------------------------------------
    @abstractmethod
    def write(self, session: str | None = None) -> AbstractContextManager[Conn]:
        """One serialised write transaction; ``session`` is the session it will append to
        (PostgreSQL locks it before the first read; SQLite's lock is the whole file)."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def verify_home(self) -> list[tuple[str | None, int | None, str, str]]:
        """Home-level problems (manifest, marker), read in one consistent snapshot."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """Every read inside sees one committed state of the store (one read transaction),
        however many writers commit meanwhile: what verification needs, so that rows and
        heads read at different moments never look like a truncated journal. Re-entrant;
        no write may open inside it."""

    @abstractmethod
    def reader(self) -> Any:
        """A second connection for lock-free peeks (``execute`` and ``close``)."""

    @abstractmethod
    def reopen(self) -> BaseJournal:
        """Another handle on the same store (for a thread of its own)."""

    @abstractmethod
    def _retry(
        self,
        op: Callable[[], _T],
        deadline: float | None = None,
        what: str = "the ledger failed at",
    ) -> _T: ...

    def join(self) -> None:
        """A host joins a shared store (PostgreSQL); a home's own file has nothing to join."""
        return None

    def _write_marker(self) -> None:
        row = self._one("SELECT value FROM meta WHERE key = 'db_id'")
        created = self._one("SELECT value FROM meta WHERE key = 'created'")
        if row is not None:
            manifest.write_marker(
                self.path, self.key, str(row[0]), str(created[0]) if created else _now()
            )

    # -- appends (inside write()) ------------------------------------------------
    def head(self, session: str) -> tuple[int, str]:
        if self._in_tx:  # under the write lock, what this transaction appended is the head
            touched = self._touched.get(session)
            if touched is not None:
                return touched[2], touched[3]
        row = self._one("SELECT seq, hash FROM heads WHERE session = ?", (session,))
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)

    def append(
        self,
        session: str,
        type_: str,
        payload: Mapping[str, Any],
        *,
        timestamp: str | None = None,
        payload_json: str | None = None,
    ) -> EventRow:
        """Append one event; must run inside :meth:`write`.

        ``payload_json``, when given, is ``canonical_json(payload)`` already encoded.
        """
        if not self._in_tx:
            raise StoreError("append outside a write transaction")
        seq, prev = self.head(session)
        seq += 1
        if seq == 1:
            self._db.execute(
                "INSERT OR IGNORE INTO sessions(session, created) VALUES (?, ?)", (session, _now())
            )
        if payload_json is None:
            payload_json = canonical_json(dict(payload)).decode("utf-8")
        ts = timestamp or _now()
        kid = self.key.key_id
        h = event_hash(prev, session, seq, type_, payload_json, ts, kid)
        mac = self.key.mac(h.encode())
        first = self._touched.get(session)
        self._touched[session] = (first[0], first[1], seq, h) if first else (seq - 1, prev, seq, h)
        self._db.execute(
            "INSERT INTO events(session, seq, type, payload, ts, prev_hash, hash, mac, key_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session, seq, type_, payload_json, ts, prev, h, mac, kid),
        )
        self._db.execute(
            "INSERT INTO heads(session, seq, hash, mac) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(session) DO UPDATE SET seq=excluded.seq, hash=excluded.hash, "
            "mac=excluded.mac",
            (session, seq, h, self.head_mac(session, seq, h)),
        )
        return EventRow(session, seq, type_, dict(payload), ts, prev, h, mac, kid)

    def index_evidence(
        self, ref: str, session: str, seq: int, record: Mapping[str, Any] | str, mac: str
    ) -> None:
        """Index an evidence record (a mapping, or its canonical JSON text)."""
        text = record if isinstance(record, str) else canonical_json(dict(record)).decode("utf-8")
        self._db.execute(
            "INSERT INTO evidence(ref, session, seq, record, mac) VALUES (?, ?, ?, ?, ?)",
            (ref, session, seq, text, mac),
        )

    def save_snapshot(self, session: str, seq: int, state: Mapping[str, Any]) -> None:
        body = canonical_json(dict(state)).decode("utf-8")
        mac = self.key.mac(canonical_json(["snapshot", session, seq, body]))
        self._db.execute(
            "INSERT INTO snapshots(session, seq, state, mac) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(session) DO UPDATE SET seq=excluded.seq, state=excluded.state, "
            "mac=excluded.mac",
            (session, seq, body, mac),
        )

    # -- reads -----------------------------------------------------------------
    def _one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """One row, read inside the bounded retry (a reader may meet a checkpoint)."""
        return self._retry(lambda: self._db.execute(sql, args).fetchone())

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._retry(lambda: self._db.execute(sql, args).fetchall())

    def load_snapshot(self, session: str) -> tuple[int, dict[str, Any]] | None:
        row = self._one("SELECT seq, state, mac FROM snapshots WHERE session = ?", (session,))
        if not row:
            return None
        seq, body, mac = int(row[0]), str(row[1]), str(row[2])
        if not self.key.verify(canonical_json(["snapshot", session, seq, body]), mac):
            return None  # not ours or tampered: fall back to a full replay
        state: dict[str, Any] = jsonc.loads(body)
        return seq, state

    def events(
        self, session: str | None = None, *, after: int = 0, types: tuple[str, ...] = ()
    ) -> Iterator[EventRow]:
        sql = "SELECT session, seq, type, payload, ts, prev_hash, hash, mac, key_id FROM events"
        args: list[Any] = []
        where = []
        if session is not None:
            where.append("session = ?")
            args.append(session)
            if after:
                where.append("seq > ?")
                args.append(after)
        if types:
            where.append("type IN (" + ",".join("?" * len(types)) + ")")
            args.extend(types)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY session, seq" if session is None else " ORDER BY seq"
        rows = self._all(sql, args)
        self.rows_read += len(rows)
        for r in rows:
            yield EventRow(r[0], r[1], r[2], loads_object(r[3]), r[4], r[5], r[6], r[7], r[8])

    def raw_rows(self, session: str) -> list[tuple[Any, ...]]:
        """Rows as stored, for verification."""
        return self._all(
            "SELECT rowid, session, seq, type, payload, ts, prev_hash, hash, mac, key_id "
            "FROM events WHERE session = ? ORDER BY seq, rowid",
            (session,),
        )

    def stream_rows(self, session: str) -> Iterator[tuple[Any, ...]]:
        """:meth:`raw_rows` as a stream (a cursor): memory flat in the number of events."""
        cur = self._retry(
            lambda: self._db.execute(
                "SELECT rowid, session, seq, type, payload, ts, prev_hash, hash, mac, key_id "
                "FROM events WHERE session = ? ORDER BY seq, rowid",
                (session,),
            )
        )
        return iter(cur)

    def stream_pages(self, session: str, size: int = 128) -> Iterator[list[tuple[Any, ...]]]:
        """:meth:`stream_rows` in lists of at most ``size`` rows, from one cursor
        (``fetchmany``): what a pass over every row takes, a page at a time."""
        cur = self._retry(
            lambda: self._db.execute(
                "SELECT rowid, session, seq, type, payload, ts, prev_hash, hash, mac, key_id "
                "FROM events WHERE session = ? ORDER BY seq, rowid",
                (session,),
            )
        )
        while page := cur.fetchmany(size):
            yield page

    def evidence_stream(self, session: str) -> Iterator[tuple[Any, ...]]:
        """``(ref, seq, record, mac)`` of one session's evidence index, in seq order."""
        cur = self._retry(
            lambda: self._db.execute(
                "SELECT ref, seq, record, mac FROM evidence WHERE session = ? ORDER BY seq, ref",
                (session,),
            )
        )
        return iter(cur)

    def head_row(self, session: str) -> tuple[int, str, str] | None:
        row = self._one("SELECT seq, hash, mac FROM heads WHERE session = ?", (session,))
        return (int(row[0]), str(row[1]), str(row[2])) if row else None

    def head_mac(self, session: str, seq: int, hash_: str) -> str:
        return self.key.mac(canonical_json(["head", session, seq, hash_]))

    def evidence_row(self, ref: str) -> tuple[str, int, dict[str, Any], str] | None:
        row = self._one("SELECT session, seq, record, mac FROM evidence WHERE ref = ?", (ref,))
        if not row:
            return None
        return str(row[0]), int(row[1]), loads_object(row[2]), str(row[3])

    def evidence_rows(self, session: str | None = None) -> list[tuple[str, str, int, str, str]]:
        sql = "SELECT ref, session, seq, record, mac FROM evidence"
        args: tuple[Any, ...] = ()
        if session is not None:
            sql += " WHERE session = ?"
            args = (session,)
        rows = self._all(sql + " ORDER BY session, seq", args)
        return [(r[0], r[1], int(r[2]), r[3], r[4]) for r in rows]

    def sessions(self) -> list[str]:
        return [r[0] for r in self._all("SELECT session FROM heads ORDER BY session")]

    def known_sessions(self) -> list[str]:
        """Every session any table names: a session whose rows were deleted still counts
        (the home manifest keeps its name, so its audit can say what is missing)."""
        rows = self._db.execute(
            "SELECT session FROM heads UNION SELECT session FROM sessions "
            "UNION SELECT DISTINCT session FROM events UNION SELECT session FROM manifest "
            "ORDER BY 1"
        )
        return [r[0] for r in rows]

    def last_seq(self, session: str) -> int:
        return self.head(session)[0]

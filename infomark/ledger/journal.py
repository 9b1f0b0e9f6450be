"""The append-only, tamper-evident journal on SQLite (plain ``sqlite3``: hot path).

One ``events`` table holds every event of every session: ``(session, seq)`` is the
order (per session, gap-free), the timestamp is for display only. Each row is
chained (``hash = sha256(prev_hash ‖ canonical row)``) and MACed with the ledger
key; ``heads`` holds the MACed last hash of each session, so deleting the tail is
caught too. Evidence records are indexed by ref in ``evidence`` (a projection,
written in the same transaction as their event). Snapshots of the per-session
projection let a new process skip most of the replay; they are MACed and ignored
when they do not verify.

Writers serialise on ``BEGIN IMMEDIATE``; ``busy_timeout`` plus a bounded retry
turns a lock that outlives the bound into :class:`StoreBusyError`, never a raw
"database is locked". ``sessions`` keeps a parent pointer and fork seq so a
session can later be forked and merged; the schema version lives in
``PRAGMA user_version``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from infomark.kernel.contexts import contextmanager
from infomark.kernel.errors import StoreBusyError, StoreError
from infomark.kernel.records import dataclass
from infomark.ledger import manifest
from infomark.ledger.canonical import canonical_json
from infomark.ledger.keys import Key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "GENESIS",
    "SCHEMA_VERSION",
    "EventRow",
    "Journal",
    "bound_store_waits",
    "event_hash",
    "loads_object",
]

SCHEMA_VERSION = 3  # 2: evidence_by_seq (streamed verification); 3: the home manifest
GENESIS = "0" * 64
_BUSY_MS = 10_000
_RETRIES = 5
_OPEN = "cannot open the ledger at"
_pause = time.sleep  # the back-off between retries (a test observes it)


def bound_store_waits(total_seconds: float) -> None:
    """Bound every later lock wait of this process's journals to about ``total_seconds``.

    The Claude Code hook calls it at start-up: a lock held by another process must turn
    into a :class:`StoreBusyError` (and a fail-closed answer) well before the host's hook
    timeout, not after the default 50 s.
    """
    global _BUSY_MS
    _BUSY_MS = max(50, int(total_seconds * 1000 / _RETRIES))


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


_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode  # canonical_json's settings, built once (verification calls this per row)
_STR = json.encoder.encode_basestring  # that encoder's string escaping (C)


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
    return hashlib.sha256(prev_hash.encode() + b"\n" + body).hexdigest()


_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY, parent TEXT, fork_seq INTEGER, created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL,
    ts TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL, mac TEXT NOT NULL,
    key_id TEXT NOT NULL, PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS heads (
    session TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evidence (
    ref TEXT PRIMARY KEY, session TEXT NOT NULL, seq INTEGER NOT NULL,
    record TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    session TEXT PRIMARY KEY, seq INTEGER NOT NULL, state TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_by_seq ON evidence(session, seq);
"""
    + manifest.SCHEMA
)


def loads_object(text: object) -> dict[str, Any]:
    """A stored JSON object; a garbled one reads as ``{"__garbled__": True}``, never raises.

    Verification reports the row (its hash no longer matches); readers skip it.
    """
    try:
        value = json.loads(text) if isinstance(text, str | bytes) else None
    except (ValueError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {"__garbled__": True}


def _now() -> str:
    """UTC, ISO 8601 with milliseconds (``datetime.isoformat``'s format; no datetime import)."""
    ns = time.time_ns()
    secs, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rest // 1_000_000:03d}+00:00"


def _deadline() -> float:
    return time.monotonic() + _RETRIES * _BUSY_MS / 1000


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class Journal:
    """The SQLite journal of one ledger home. Cheap to open; one per process is enough."""

    def __init__(self, path: Path, key: Key) -> None:
        self.path = path
        self.key = key
        self._in_tx = False
        self._touched: manifest.Touched = {}  # sessions appended to in this transaction
        self.rows_read = 0  # event rows this handle read for projections (tests pin O(1))
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(
                path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False
            )
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the ledger at {path}: {exc}") from exc
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        """Every statement of the open path runs inside the same bounded retry as writes."""
        deadline = _deadline()
        self._retry(lambda: self._db.execute(f"PRAGMA busy_timeout={_BUSY_MS}"), deadline, _OPEN)
        mode = self._retry(
            lambda: self._db.execute("PRAGMA journal_mode").fetchone(), deadline, _OPEN
        )
        if str(mode[0]).lower() != "wal":
            # Switching a new file to WAL needs an exclusive lock that busy_timeout does not
            # always wait for (two openers both holding SHARED): retried here, not raised.
            got = self._retry(
                lambda: self._db.execute("PRAGMA journal_mode=WAL").fetchone(), deadline, _OPEN
            )
            if str(got[0]).lower() != "wal":
                raise StoreError(
                    f"cannot open the ledger at {self.path}: it cannot use WAL mode "
                    f"(got {got[0]!r}); put the home on a local filesystem"
                )
        self._retry(lambda: self._db.execute("PRAGMA synchronous=FULL"), deadline, _OPEN)
        version = self._retry(
            lambda: int(self._db.execute("PRAGMA user_version").fetchone()[0]), deadline, _OPEN
        )
        migrated = False
        if version != SCHEMA_VERSION:
            try:
                migrated = self._migrate(version)
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{_OPEN} {self.path}: {exc}") from exc
        # The marker is written by whoever created (or upgraded) the ledger, or on the first
        # open of a ledger with no events yet; one deleted later is reported by verification.
        if not manifest.marker_path(self.path).exists() and (
            migrated or self._one("SELECT 1 FROM events LIMIT 1") is None
        ):
            self._write_marker()

    def _write_marker(self) -> None:
        row = self._one("SELECT value FROM meta WHERE key = 'db_id'")
        created = self._one("SELECT value FROM meta WHERE key = 'created'")
        if row is not None:
            manifest.write_marker(
                self.path, self.key, str(row[0]), str(created[0]) if created else _now()
            )

    def _retry(
        self,
        op: Callable[[], _T],
        deadline: float | None = None,
        what: str = "the ledger failed at",
    ) -> _T:
        """Run ``op``; a busy/locked error is retried (with backoff) until the bound, then
        :class:`StoreBusyError`. Any other database error is a :class:`StoreError`."""
        deadline = _deadline() if deadline is None else deadline
        pause = 0.001
        while True:
            try:
                return op()
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise StoreError(f"{what} {self.path}: {exc}") from exc
                if time.monotonic() >= deadline:
                    raise self._busy_error(exc) from exc
                _pause(pause * (0.5 + os.urandom(1)[0] / 256))  # jitter
                pause = min(pause * 2, 0.05)
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{what} {self.path}: {exc}") from exc

    def _busy_error(self, exc: BaseException) -> StoreBusyError:
        return StoreBusyError(
            f"the ledger at {self.path} stayed locked by other writers past the "
            f"retry bound ({_RETRIES} x {_BUSY_MS / 1000:g}s: {exc}); retry, or stop "
            "the process holding it"
        )

    # -- schema ---------------------------------------------------------------
    def _migrate(self, version: int) -> bool:
        """Create or upgrade the schema (once, by whoever takes the lock first)."""
        migrated = False
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema {version}, newer than this infomark ({SCHEMA_VERSION}); "
                "upgrade infomark"
            )
        self._begin()
        try:
            if self._db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self._db.execute(stmt)
                self._db.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('created', ?)", (_now(),)
                )
                manifest.init_manifest(self._db, self.key)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                migrated = True
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return migrated

    def close(self) -> None:
        self._db.close()

    # -- transactions ----------------------------------------------------------
    def _begin(self) -> None:
        """``BEGIN IMMEDIATE`` with a bounded retry on top of ``busy_timeout``."""
        self._retry(lambda: self._db.execute("BEGIN IMMEDIATE"), what="ledger write failed at")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A serialised write transaction (``BEGIN IMMEDIATE``); commits or rolls back whole."""
        if self._in_tx:
            raise StoreError("nested write transaction")
        self._begin()
        self._in_tx = True
        self._touched = {}
        try:
            yield self._db
            if self._touched:
                manifest.flush(self._db, self.key, self._touched)
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"ledger write failed: {exc}") from exc
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        finally:
            self._in_tx = False

    # -- appends (inside write()) ------------------------------------------------
    def head(self, session: str) -> tuple[int, str]:
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
        state: dict[str, Any] = json.loads(body)
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
        cur: Iterator[tuple[Any, ...]] = self._retry(
            lambda: self._db.execute(
                "SELECT rowid, session, seq, type, payload, ts, prev_hash, hash, mac, key_id "
                "FROM events WHERE session = ? ORDER BY seq, rowid",
                (session,),
            )
        )
        return cur

    def evidence_stream(self, session: str) -> Iterator[tuple[Any, ...]]:
        """``(ref, seq, record, mac)`` of one session's evidence index, in seq order."""
        cur: Iterator[tuple[Any, ...]] = self._retry(
            lambda: self._db.execute(
                "SELECT ref, seq, record, mac FROM evidence WHERE session = ? ORDER BY seq, ref",
                (session,),
            )
        )
        return cur

    def verify_home(self) -> list[tuple[str | None, int | None, str, str]]:
        """Home-level problems (manifest, marker), read in one consistent snapshot."""

        def check() -> list[tuple[str | None, int | None, str, str]]:
            self._db.execute("BEGIN")
            try:
                return manifest.verify_home(self._db, self.path, self.key)
            finally:
                self._db.execute("COMMIT")

        return self._retry(check)

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

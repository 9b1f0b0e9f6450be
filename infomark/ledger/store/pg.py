"""The journal on PostgreSQL: one shared ledger for many hosts (psycopg 3 + psycopg_pool).

Selected by a ``postgresql://`` store URL (:mod:`infomark.ledger.store.select`). The chain, the
MACs, the heads and the home manifest are :class:`~infomark.ledger.store.base.BaseJournal`'s,
byte for byte the same as on SQLite; this module supplies the transactions, the locks and
the connection.

**Ordering: per-session advisory locks.** A write transaction runs at READ COMMITTED and
takes ``pg_advisory_xact_lock`` on each session before it reads that session's head (the
engine names its session when the transaction opens, before it catches its projection
up), and on the home manifest just before it updates it, at the end. So appends to one
session are strictly ordered (gap-free seqs, each ``prev_hash`` the committed head), the
manifest row is updated by one transaction at a time, and different sessions write in
parallel up to that last step. SERIALIZABLE with retries was not chosen: a command is not
re-runnable (a tool already ran, a blob was written, a decision was returned to a host),
so a serialization failure could only be reported, not retried; advisory locks wait
instead, as SQLite's ``BEGIN IMMEDIATE`` does. Every wait is bounded (``lock_timeout``),
and a deadlock or lock timeout is a :class:`StoreBusyError`. READ COMMITTED is required:
each statement after the lock sees what the previous holder committed.

**Connections.** One :class:`psycopg_pool.ConnectionPool` per store URL and process
(autocommit connections: a transaction is an explicit ``BEGIN`` … ``COMMIT``), shared by
every handle; a handle borrows a connection per read and per write transaction. An
abandoned transaction (a host stopped mid-write) is ended by the server after
``idle_in_transaction_session_timeout``; a killed client's is rolled back at once.

The MAC key is never sent to the database: rows carry MACs and a key id only.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolTimeout

from infomark.kernel.errors import StoreBusyError, StoreError
from infomark.ledger import manifest
from infomark.ledger.keys import Key
from infomark.ledger.store import journal as _sqlite
from infomark.ledger.store import pg_schema
from infomark.ledger.store.base import BaseJournal, _now
from infomark.ledger.store.conn import Conn
from infomark.ledger.store.pg_schema import redact

__all__ = ["PgJournal", "close_pools", "init_store", "redact", "store_version"]

_T = TypeVar("_T")
_NS = 1231963757  # advisory lock namespace ("InFm"): sessions
_NS_MANIFEST = _NS + 1  # the home manifest row
_NS_SCHEMA = _NS + 2  # migrations
_POOL_MAX = 32
_lock = threading.Lock()
_pools: dict[str, tuple[ConnectionPool, int]] = {}
_sql_cache: dict[str, str] = {}


def _translate(sql: str) -> str:
    """The shared SQL (``?``, ``INSERT OR IGNORE``) in PostgreSQL's spelling (cached)."""
    got = _sql_cache.get(sql)
    if got is None:
        got = sql.replace("%", "%%").replace("?", "%s")
        if got.lstrip().upper().startswith("INSERT OR IGNORE"):
            got = got.replace("INSERT OR IGNORE", "INSERT", 1) + " ON CONFLICT DO NOTHING"
        _sql_cache[sql] = got
    return got


class _Result:
    """A finished statement's rows (its connection is already back in the pool)."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return list(self._rows)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


class _Router:
    """:class:`~infomark.ledger.store.conn.Conn` over the pool: inside a transaction every
    statement goes to its connection; outside, each borrows one (autocommit)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.tx: psycopg.Connection[Any] | None = None

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        q = _translate(sql)
        if self.tx is not None:
            return self.tx.execute(q, parameters)
        with self.pool.connection() as conn:
            cur = conn.execute(q, parameters)
            rows = cur.fetchall() if cur.description is not None else []
            return _Result(rows, cur.rowcount)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        q = _translate(sql)
        if self.tx is not None:
            cur = self.tx.cursor()
            cur.executemany(q, parameters)
            return cur
        with self.pool.connection() as conn:
            cur = conn.cursor()
            cur.executemany(q, parameters)
            return _Result([], cur.rowcount)

    def close(self) -> None:
        """Nothing to close: connections belong to the pool."""


def _configure(conn: psycopg.Connection[Any]) -> None:
    wait_ms = _sqlite._BUSY_MS * _sqlite._RETRIES
    conn.execute(f"SET lock_timeout = {int(wait_ms)}")
    conn.execute("SET idle_in_transaction_session_timeout = 60000")


def _pool(url: str) -> ConnectionPool:
    with _lock:
        got = _pools.get(url)
        if got is not None:
            _pools[url] = (got[0], got[1] + 1)
            return got[0]
        try:  # one direct connection first: a wrong URL says why, at once
            psycopg.connect(url, connect_timeout=5).close()
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to the store {redact(url)}: {exc}") from exc
        size = int(os.environ.get("INFOMARK_PG_POOL_MAX", _POOL_MAX))
        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, size),
            kwargs={"autocommit": True},
            configure=_configure,
            timeout=_sqlite._BUSY_MS * _sqlite._RETRIES / 1000,
            name=f"infomark:{redact(url)}",
            open=True,
        )
        _pools[url] = (pool, 1)
        return pool


def _release(url: str) -> None:
    with _lock:
        got = _pools.get(url)
        if got is None:
            return
        if got[1] > 1:
            _pools[url] = (got[0], got[1] - 1)
            return
        del _pools[url]
    got[0].close()


def close_pools() -> None:
    """Close every pool of this process (tests, and a process about to exit)."""
    with _lock:
        pools = [p for p, _n in _pools.values()]
        _pools.clear()
    for p in pools:
        p.close()


def _after_fork() -> None:  # a forked child must not share its parent's sockets or locks
    global _lock
    _lock = threading.Lock()
    _pools.clear()


os.register_at_fork(after_in_child=_after_fork)


def _version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT to_regclass('infomark_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    got = conn.execute("SELECT max(version) FROM infomark_schema").fetchone()
    return int(got[0] or 0) if got else 0


def store_version(url: str) -> int:
    """The schema version of the store at ``url`` (0: none yet)."""
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            return _version(conn)
    except psycopg.Error as exc:
        raise StoreError(f"cannot read the store {redact(url)}: {exc}") from exc


def init_store(url: str) -> dict[str, Any]:
    """Create the schema of a new store, or apply the migrations an older one lacks.

    One transaction, under the migrations' advisory lock: concurrent inits of one store
    apply each migration once. No key is involved: the first host that opens the new
    store gives it its ``db_id`` and MACs its home manifest (:meth:`PgJournal._open`).
    """
    from infomark._version import __version__

    try:
        with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
            conn.execute("BEGIN")
            try:
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_NS_SCHEMA,))
                before = _version(conn)
                todo = pg_schema.plan(before, redact(url), upgrade=True)
                if before == 0:
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS infomark_schema (version INTEGER PRIMARY KEY, "
                        "what TEXT NOT NULL, applied TEXT NOT NULL, by_infomark TEXT NOT NULL)"
                    )
                for version, what, ddl in todo:
                    for stmt in ddl.split(";"):
                        if stmt.strip():
                            conn.execute(stmt.encode())
                    conn.execute(
                        "INSERT INTO infomark_schema VALUES (%s, %s, %s, %s)",
                        (version, what, _now(), __version__),
                    )
                conn.execute("COMMIT")
            except BaseException:
                with suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
                raise
    except psycopg.Error as exc:
        raise StoreError(f"cannot initialise the store {redact(url)}: {exc}") from exc
    return {
        "store": redact(url),
        "schema_from": before,
        "schema": pg_schema.SCHEMA_VERSION,
        "applied": [v for v, _w, _d in todo],
    }


def _busy(exc: BaseException) -> bool:
    return isinstance(
        exc,
        psycopg.errors.LockNotAvailable
        | psycopg.errors.DeadlockDetected
        | psycopg.errors.SerializationFailure
        | PoolTimeout,
    )


class PgJournal(BaseJournal):
    """The journal of a ledger home whose store is a PostgreSQL database (or schema)."""

    kind = "postgresql"
    managed_schema = True
    _db: _Router

    def __init__(self, home: Path, key: Key, url: str) -> None:
        # The marker beside the key names this store (one per store a home has used).
        self._init_state(home / f"store-{pg_schema.fingerprint(url)}", key)
        self._url = url
        self._locked: set[str] = set()
        home.mkdir(parents=True, exist_ok=True)
        self._db = _Router(_pool(url))
        try:
            self._open()
        except BaseException:
            _release(url)
            raise

    @property
    def where(self) -> str:
        return redact(self._url)

    @property
    def store_url(self) -> str:
        return self._url

    def _open(self) -> None:
        found = self._retry(lambda: self._with_conn(_version), what="cannot open the store")
        pg_schema.plan(found, self.where, upgrade=False)
        if self._one("SELECT 1 FROM home_manifest") is None:
            self._first_open()
        # The marker beside the key, as on SQLite: written on an open while the store holds
        # no event; a host joining a store that has some writes it with `init` (join()).
        if not os.path.exists(manifest.marker_path(self.path)) and (
            self._one("SELECT 1 FROM events LIMIT 1") is None
        ):
            self._write_marker()

    def join(self) -> None:
        """A host joins a shared store (``infomark init --store``): its key must be the one
        that MACed the store's home manifest; the marker beside the key then names the
        store, and witnesses it from now on."""
        if not self._manifest_is_ours():
            raise StoreError(
                f"the store {self.where} was not signed by this home's key (id "
                f"{self.key.key_id}): every host of a shared store needs the deployment's "
                "key (INFOMARK_KEY or <home>/key; docs/deploy.md)"
            )
        if not os.path.exists(manifest.marker_path(self.path)):
            self._write_marker()

    def _manifest_is_ours(self) -> bool:
        row = self._one(
            "SELECT db_id, sessions, events, digest, key_id, mac FROM home_manifest WHERE id = 1"
        )
        return row is not None and manifest.signed_by(self.key, tuple(row))

    def _first_open(self) -> None:
        """A new store's first opener gives it a ``db_id`` and a MACed home manifest.
        Only while it holds no event: a manifest deleted later stays missing (verify says so)."""
        with self.write() as db:
            db.execute(
                "SELECT pg_advisory_xact_lock(?, hashtext(current_schema()))", (_NS_MANIFEST,)
            )
            if (
                db.execute("SELECT 1 FROM home_manifest").fetchone() is None
                and db.execute("SELECT 1 FROM events LIMIT 1").fetchone() is None
            ):
                db.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('created', ?)", (_now(),)
                )
                manifest.init_manifest(db, self.key)

    def _with_conn(self, fn: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        with self._db.pool.connection() as conn:
            return fn(conn)

    def _retry(
        self,
        op: Callable[[], _T],
        deadline: float | None = None,
        what: str = "the ledger failed at",
    ) -> _T:
        """Run ``op``; a lost connection is tried once more, a lock wait past the bound is
        :class:`StoreBusyError`, any other database error a :class:`StoreError`."""
        for attempt in (1, 2):
            try:
                return op()
            except (psycopg.OperationalError, PoolTimeout) as exc:
                if _busy(exc):
                    raise self._busy_error(exc) from exc
                if attempt == 2 or self._in_tx or self._reading:
                    raise StoreError(f"{what} {self.where}: {exc}") from exc
                time.sleep(0.05)
            except psycopg.Error as exc:
                if _busy(exc):
                    raise self._busy_error(exc) from exc
                raise StoreError(f"{what} {self.where}: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _busy_error(self, exc: BaseException) -> StoreBusyError:
        return StoreBusyError(
            f"the store {self.where} stayed locked by other writers past the retry bound "
            f"({_sqlite._RETRIES} x {_sqlite._BUSY_MS / 1000:g}s: {type(exc).__name__}); "
            "retry, or find the stuck host in pg_stat_activity"
        )

    def close(self) -> None:
        if self._db.pool is not None:
            _release(self._url)
            self._db.pool = None  # type: ignore[assignment]

    def reader(self) -> _Router:
        return _Router(self._db.pool)

    def reopen(self) -> PgJournal:
        return PgJournal(Path(self.path).parent, self.key, self._url)

    # -- transactions ----------------------------------------------------------------------
    def _lock(self, session: str) -> None:
        if session not in self._locked and self._db.tx is not None:
            self._db.tx.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(current_schema() || '/' || %s))",
                (_NS, session),
            )
            self._locked.add(session)

    @contextmanager
    def write(self, session: str | None = None) -> Iterator[Conn]:
        """One READ COMMITTED transaction; ``session`` is locked before anything is read."""
        if self._in_tx or self._reading:
            raise StoreError("nested write transaction")
        try:
            with self._db.pool.connection() as conn:
                conn.execute("BEGIN")
                self._db.tx = conn
                self._in_tx = True
                self._touched = {}
                self._locked = set()
                try:
                    if session is not None:
                        self._lock(session)
                    yield self._db
                    if self._touched:
                        conn.execute(
                            "SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))",
                            (_NS_MANIFEST,),
                        )
                        manifest.flush(self._db, self.key, self._touched)
                    conn.execute("COMMIT")
                except BaseException:
                    with suppress(psycopg.Error):  # a lost connection: the server rolled back
                        conn.execute("ROLLBACK")
                    raise
                finally:
                    self._db.tx = None
                    self._in_tx = False
                    self._locked = set()
        except (psycopg.Error, PoolTimeout) as exc:
            if _busy(exc):
                raise self._busy_error(exc) from exc
            raise StoreError(f"ledger write failed at {self.where}: {exc}") from exc

    def head(self, session: str) -> tuple[int, str]:
        if self._in_tx:
            self._lock(session)
        return super().head(session)

    # -- reads -------------------------------------------------------------------------------
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One REPEATABLE READ, READ ONLY transaction on one connection: every read inside
        sees the snapshot its first statement took; re-entrant."""
        if self._db.tx is not None:
            yield
            return
        try:
            with self._db.pool.connection() as conn:
                self._retry(lambda: conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))
                self._db.tx = conn  # every read routes to this connection
                self._reading = True  # and no write may open in it
                try:
                    yield
                finally:
                    self._db.tx = None
                    self._reading = False
                    with suppress(psycopg.Error):  # a lost connection ended it already
                        conn.execute("COMMIT")
        except PoolTimeout as exc:
            raise self._busy_error(exc) from exc

    def verify_home(self) -> list[tuple[str | None, int | None, str, str]]:
        with self.snapshot():
            return self._retry(lambda: manifest.verify_home(self._db, self.path, self.key))

    def stream_rows(self, session: str) -> Iterator[tuple[Any, ...]]:
        """Pages of 1000 rows by seq: memory flat in the number of events."""
        for page in self.stream_pages(session):
            yield from page

    def stream_pages(self, session: str, size: int = 1000) -> Iterator[list[tuple[Any, ...]]]:
        """Lists of at most ``size`` rows by seq (one query each, keyed on the last seq)."""
        last = -1
        while True:
            page = self._all(
                "SELECT rowid, session, seq, type, payload, ts, prev_hash, hash, mac, key_id "
                "FROM events WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session, last, size),
            )
            if page:
                yield page
            if len(page) < size:
                return
            last = int(page[-1][2])

    def evidence_stream(self, session: str) -> Iterator[tuple[Any, ...]]:
        last: tuple[int, str] = (-1, "")
        while True:
            page = self._all(
                "SELECT ref, seq, record, mac FROM evidence WHERE session = ? "
                "AND (seq, ref) > (?, ?) ORDER BY seq, ref LIMIT 1000",
                (session, last[0], last[1]),
            )
            yield from page
            if len(page) < 1000:
                return
            last = (int(page[-1][1]), str(page[-1][0]))

"""The PostgreSQL store's schema, as numbered migrations (no driver import here).

Each migration is one transaction of DDL (PostgreSQL's DDL is transactional, so a
migration is applied whole or not at all) and a row in ``infomark_schema``. The
current version is the highest row. :func:`plan` says what an open or an
``infomark init --store`` must do with a store of a given version:

* 0 (no ``infomark_schema`` table): a new store; ``init`` creates it;
* lower than :data:`SCHEMA_VERSION`: ``init`` applies the missing migrations in order;
  a plain open refuses, so that no host upgrades a shared store by accident;
* higher: refused everywhere, with the versions named (upgrade infomark first).

Text columns that are keys or sort orders use ``COLLATE "C"``: the same byte order as
SQLite's, whatever the database's locale (``infomark events`` lists sessions alike).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit

from infomark.kernel.errors import StoreError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "TABLES", "fingerprint", "plan", "redact"]

_V1 = """
CREATE TABLE meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    session TEXT COLLATE "C" PRIMARY KEY, parent TEXT COLLATE "C", fork_seq BIGINT,
    created TEXT NOT NULL
);
CREATE TABLE events (
    rowid BIGSERIAL NOT NULL, session TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL,
    type TEXT NOT NULL, payload TEXT NOT NULL, ts TEXT NOT NULL, prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL, mac TEXT NOT NULL, key_id TEXT NOT NULL, PRIMARY KEY (session, seq)
);
CREATE TABLE heads (
    session TEXT COLLATE "C" PRIMARY KEY, seq BIGINT NOT NULL, hash TEXT NOT NULL,
    mac TEXT NOT NULL
);
CREATE TABLE evidence (
    ref TEXT COLLATE "C" PRIMARY KEY, session TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL,
    record TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE INDEX evidence_by_seq ON evidence(session, seq);
CREATE TABLE snapshots (
    session TEXT COLLATE "C" PRIMARY KEY, seq BIGINT NOT NULL, state TEXT NOT NULL,
    mac TEXT NOT NULL
);
CREATE TABLE manifest (
    session TEXT COLLATE "C" PRIMARY KEY, seq BIGINT NOT NULL, hash TEXT NOT NULL
);
CREATE TABLE home_manifest (
    id INTEGER PRIMARY KEY CHECK (id = 1), db_id TEXT NOT NULL, sessions BIGINT NOT NULL,
    events BIGINT NOT NULL, digest TEXT NOT NULL, key_id TEXT NOT NULL, mac TEXT NOT NULL
);
CREATE TABLE inbox_leases (
    session TEXT COLLATE "C" PRIMARY KEY, holder TEXT NOT NULL, kind TEXT NOT NULL,
    host TEXT NOT NULL, pid BIGINT NOT NULL, acquired DOUBLE PRECISION NOT NULL,
    heartbeat DOUBLE PRECISION NOT NULL, ttl DOUBLE PRECISION NOT NULL,
    released DOUBLE PRECISION, release_reason TEXT, parent TEXT
);
CREATE TABLE inbox_messages (
    id BIGSERIAL PRIMARY KEY, session TEXT COLLATE "C" NOT NULL, sender TEXT NOT NULL,
    text TEXT NOT NULL, sent DOUBLE PRECISION NOT NULL, seq BIGINT NOT NULL,
    read_at DOUBLE PRECISION, read_by TEXT
);
CREATE INDEX inbox_unread ON inbox_messages(session, read_at);
CREATE TABLE blobs (digest TEXT COLLATE "C" PRIMARY KEY, size BIGINT NOT NULL, data BYTEA NOT NULL)
"""

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "the journal, heads, evidence, snapshots, home manifest, inbox and blobs", _V1),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
TABLES = (
    "meta",
    "sessions",
    "events",
    "heads",
    "evidence",
    "snapshots",
    "manifest",
    "home_manifest",
    "inbox_leases",
    "inbox_messages",
    "blobs",
)


def plan(found: int, where: str, *, upgrade: bool) -> list[tuple[int, str, str]]:
    """The migrations to apply to a store at version ``found`` (raises when refused)."""
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the store {where} has schema version {found}, newer than this infomark's "
            f"({SCHEMA_VERSION}); upgrade infomark on this host (every host of a shared "
            "store must run a version that knows its schema)"
        )
    todo = [m for m in MIGRATIONS if m[0] > found]
    if todo and not upgrade:
        if found == 0:
            raise StoreError(
                f"the store {where} has no infomark schema yet; create it with "
                "`infomark init --store <url>` (once, from one host)"
            )
        raise StoreError(
            f"the store {where} has schema version {found}, older than this infomark's "
            f"({SCHEMA_VERSION}); migrate it with `infomark init --store <url>` (once, from "
            "one host, after every host runs this version)"
        )
    return todo


def redact(url: str) -> str:
    """``postgresql://user@host:port/db`` (+ ``?schema=…``): never the password."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port or 5432
    except ValueError:
        return "postgresql://(unparsable url)"
    user = f"{unquote(parts.username)}@" if parts.username else ""
    db = parts.path.lstrip("/") or "(default db)"
    schema = _schema_of(url)
    return f"postgresql://{user}{host}:{port}/{db}" + (f"?schema={schema}" if schema else "")


def _schema_of(url: str) -> str | None:
    for k, v in parse_qsl(urlsplit(url).query):
        if k == "options" and "search_path=" in v:
            return v.split("search_path=", 1)[1].split()[0]
    return None


def fingerprint(url: str) -> str:
    """A short name for a store (its redacted URL hashed): the marker beside the key is
    ``store-<fingerprint>.created``."""
    import hashlib

    return hashlib.sha256(redact(url).encode()).hexdigest()[:12]

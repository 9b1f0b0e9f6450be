"""The home manifest: history cannot be rewritten quietly (standard library only).

Every session's head is MACed on its own (``heads``), so a single row can be put back from
an earlier, validly MACed state. The manifest closes that hole for the whole home:

* ``manifest`` lists every session with its head (seq, hash);
* ``home_manifest`` holds one MACed row over all of them: the number of sessions, the
  number of events (the sum of the head seqs: seqs are gap-free), and an order-free
  digest (the sum, mod 2**256, of sha256(session, seq, hash) over the sessions), plus
  the ledger's ``db_id``. It is updated in the same transaction as every append, in O(1)
  per touched session, so no head can move back without the MAC noticing;
* ``ledger.created`` beside the key names the ``db_id`` (MACed, 0600): a deleted or
  replaced ledger.db next to an existing key is named as such.

:func:`verify_home` recomputes all of it from the journal and names what is missing.
A rollback of the whole home (ledger.db and marker restored from a copy) stays consistent
and needs a witness outside the home (docs/security.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from infomark.kernel import jsonc
from infomark.kernel.digest import compare_digest, sha256
from infomark.ledger.keys import Key, write_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

    from infomark.ledger.store.conn import Conn

__all__ = [
    "SCHEMA",
    "Touched",
    "flush",
    "init_manifest",
    "marker_path",
    "signed_by",
    "verify_home",
    "write_marker",
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS manifest (
    session TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS home_manifest (
    id INTEGER PRIMARY KEY CHECK (id = 1), db_id TEXT NOT NULL, sessions INTEGER NOT NULL,
    events INTEGER NOT NULL, digest TEXT NOT NULL, key_id TEXT NOT NULL, mac TEXT NOT NULL
)
"""
_MOD = 1 << 256

Touched = dict[str, tuple[int, str, int, str]]  # session -> (old seq, old hash, new seq, new hash)


def _term(session: str, seq: int, hash_: str) -> int:
    return int.from_bytes(
        sha256(f"{session}\x00{seq}\x00{hash_}".encode("utf-8", "surrogatepass")).digest()
    )


def _body(db_id: str, sessions: int, events: int, digest: str, key_id: str) -> bytes:
    return jsonc.dumps(["home_manifest", db_id, sessions, events, digest, key_id]).encode()


def signed_by(key: Key, row: tuple[Any, ...]) -> bool:
    """Whether a ``home_manifest`` row (db_id, sessions, events, digest, key_id, mac) is
    MACed by ``key``."""
    db_id, sessions, events, digest, kid, mac = row
    return bool(kid == key.key_id) and key.verify(
        _body(str(db_id), int(sessions), int(events), str(digest), str(kid)), str(mac)
    )


def marker_path(db_path: StrPath) -> str:
    """``ledger.created`` beside ``ledger.db`` (``store-<id>.created`` for a store)."""
    return os.path.splitext(os.fspath(db_path))[0] + ".created"


def _marker_body(db_id: str, created: str, key_id: str) -> bytes:
    return jsonc.dumps(["created", db_id, created, key_id]).encode()


def init_manifest(db: Conn, key: Key) -> str:
    """Inside the schema transaction: give the ledger a db_id and a manifest of its heads."""
    row = db.execute("SELECT value FROM meta WHERE key = 'db_id'").fetchone()
    db_id = str(row[0]) if row else os.urandom(8).hex()
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('db_id', ?)", (db_id,))
    if db.execute("SELECT 1 FROM home_manifest").fetchone() is None:
        db.execute(
            "INSERT OR IGNORE INTO manifest(session, seq, hash) "
            "SELECT session, seq, hash FROM heads"
        )
        rows = db.execute("SELECT session, seq, hash FROM manifest").fetchall()
        digest = f"{sum(_term(s, q, h) for s, q, h in rows) % _MOD:064x}"
        events = sum(int(q) for _s, q, _h in rows)
        mac = key.mac(_body(db_id, len(rows), events, digest, key.key_id))
        db.execute(
            "INSERT INTO home_manifest(id, db_id, sessions, events, digest, key_id, mac) "
            "VALUES (1, ?, ?, ?, ?, ?, ?)",
            (db_id, len(rows), events, digest, key.key_id, mac),
        )
    return db_id


def write_marker(db_path: StrPath, key: Key, db_id: str, created: str) -> None:
    """``ledger.created`` beside the key, once: an existing marker is never replaced."""
    path = marker_path(db_path)
    if os.path.exists(path):
        return
    mac = key.mac(_marker_body(db_id, created, key.key_id))
    doc = {"db_id": db_id, "created": created, "key_id": key.key_id, "mac": mac}
    write_private(path, jsonc.dumps(doc).encode())


def flush(db: Conn, key: Key, touched: Touched) -> None:
    """Before COMMIT: move the touched sessions' manifest rows and re-MAC the home row.

    A home row that does not verify under this key is left alone (never re-MACed: that
    would launder a rewrite); verification reports it.
    """
    row = db.execute(
        "SELECT db_id, sessions, events, digest, key_id, mac FROM home_manifest WHERE id = 1"
    ).fetchone()
    if row is None:
        return
    db_id, sessions, events, digest, kid, mac = row
    if kid != key.key_id or not key.verify(_body(db_id, sessions, events, digest, kid), mac):
        return
    acc = int(digest, 16)
    for session, (old_seq, old_hash, new_seq, new_hash) in touched.items():
        if old_seq:
            acc -= _term(session, old_seq, old_hash)
        else:
            sessions += 1
        acc += _term(session, new_seq, new_hash)
        events += new_seq - old_seq
        db.execute(
            "INSERT INTO manifest(session, seq, hash) VALUES (?, ?, ?) ON CONFLICT(session) "
            "DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
            (session, new_seq, new_hash),
        )
    digest = f"{acc % _MOD:064x}"
    mac = key.mac(_body(db_id, sessions, events, digest, kid))
    db.execute(
        "UPDATE home_manifest SET sessions = ?, events = ?, digest = ?, mac = ? WHERE id = 1",
        (sessions, events, digest, mac),
    )


def _read_marker(path: str) -> Mapping[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            doc = jsonc.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def verify_home(
    db: Conn, db_path: StrPath, key: Key
) -> list[tuple[str | None, int | None, str, str]]:
    """Every home-level problem as ``(session, seq, code, message)``; [] when consistent."""
    out: list[tuple[str | None, int | None, str, str]] = []
    meta = db.execute("SELECT value FROM meta WHERE key = 'db_id'").fetchone()
    db_id = str(meta[0]) if meta else None
    created = db.execute("SELECT value FROM meta WHERE key = 'created'").fetchone()
    marker_name = os.path.basename(marker_path(db_path))
    marker = _read_marker(marker_path(db_path))
    if marker is None:
        out.append(
            (
                None,
                None,
                "replaced",
                f"the marker {marker_name} beside the "
                "key is missing: it was deleted, or the home was assembled by hand",
            )
        )
    elif not marker:
        out.append((None, None, "replaced", f"{marker_name} is garbled"))
    else:
        body = _marker_body(
            str(marker.get("db_id")), str(marker.get("created")), str(marker.get("key_id"))
        )
        if marker.get("key_id") == key.key_id and not key.verify(body, str(marker.get("mac"))):
            out.append(
                (
                    None,
                    None,
                    "replaced",
                    f"{marker_name} was altered (its MAC does not verify)",
                )
            )
        elif marker.get("db_id") != db_id:
            out.append(
                (
                    None,
                    None,
                    "replaced",
                    (
                        f"ledger.db was deleted or replaced: the key's marker names the ledger "
                        f"{marker.get('db_id')} created {marker.get('created')}, "
                        "but this ledger.db is "
                        f"{db_id} created {created[0] if created else '?'}; every session of the "
                        "original ledger is missing"
                    ),
                )
            )
    home = db.execute(
        "SELECT db_id, sessions, events, digest, key_id, mac FROM home_manifest WHERE id = 1"
    ).fetchone()
    listed = {
        str(s): (int(q), str(h))
        for s, q, h in db.execute("SELECT session, seq, hash FROM manifest")
    }
    actual = {
        str(s): (int(q), str(h))
        for s, q, h in db.execute(
            "SELECT e.session, e.seq, e.hash FROM events e JOIN (SELECT session, max(seq) AS m "
            "FROM events GROUP BY session) t ON e.session = t.session AND e.seq = t.m"
        )
    }
    if home is None:
        out.append((None, None, "manifest", "the home manifest is missing (deleted)"))
    else:
        h_db_id, sessions, events, digest, kid, mac = home
        if kid == key.key_id and not compare_digest(
            key.mac(_body(h_db_id, sessions, events, digest, kid)), str(mac)
        ):
            out.append(
                (
                    None,
                    None,
                    "manifest",
                    "the home manifest's MAC does not verify: it was rewritten",
                )
            )
        elif h_db_id != db_id:
            out.append((None, None, "replaced", "the home manifest belongs to another ledger.db"))
        else:
            got = f"{sum(_term(s, q, h) for s, (q, h) in listed.items()) % _MOD:064x}"
            total = sum(q for q, _h in listed.values())
            if got != digest or len(listed) != sessions or total != events:
                out.append(
                    (
                        None,
                        None,
                        "manifest",
                        (
                            f"the home manifest lists {len(listed)} session(s) with {total} "
                            "event(s), but "
                            f"its MAC covers {sessions} session(s) with {events} event(s): "
                            "sessions were "
                            "deleted or heads rolled back together with the manifest"
                        ),
                    )
                )
    for session, (seq, hash_) in sorted(listed.items()):
        have = actual.get(session)
        if have is None:
            out.append(
                (
                    session,
                    1,
                    "missing",
                    (
                        f"session {session} is in the home manifest (head seq {seq}) "
                        "but all its events "
                        "are gone: the session was deleted"
                    ),
                )
            )
        elif have != (seq, hash_):
            if have[0] < seq:
                msg = (
                    f"the home manifest says session {session} reached seq {seq}, but its "
                    f"journal ends at {have[0]}: events {have[0] + 1}..{seq} were removed"
                )
                out.append((session, have[0] + 1, "missing", msg))
            else:
                out.append(
                    (
                        session,
                        seq + 1,
                        "missing",
                        (
                            f"session {session} ends at seq {have[0]} "
                            f"but the home manifest says {seq}: "
                            "events were appended or rewritten outside infomark"
                        ),
                    )
                )
    for session in sorted(set(actual) - set(listed)):
        out.append(
            (
                session,
                None,
                "manifest",
                (
                    f"session {session} is not in the home manifest: its events were added outside "
                    "infomark"
                ),
            )
        )
    return out

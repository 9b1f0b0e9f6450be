"""Tampering with a ledger home, one row or one blob at a time, and what the audit says.

:func:`build_pristine` writes a realistic session (ledger, decisions, evidence with
distinct outputs, a stamp, a divergence) next to a second session in the same
home. :func:`all_tampers` lists every single-row edit, deletion, reordering and
insertion of the ``events``, ``heads`` and ``evidence`` tables and every blob edit,
each with the event the audit must name first. :func:`apply_tamper` performs one on
a copy of the home (plain SQL, as an attacker with file or database access would: on
SQLite the copied ``ledger.db``, on PostgreSQL a copy of the store's schema, which the
copied home's ``store`` file names);
:func:`audit_inprocess` and :func:`audit_cli` (the real ``infomark audit --verify
--json``) report the problems. :func:`campaign` runs them all for ``bench.soak``.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rel_support import ORACLE, ledger_block, read_file, run_cli, run_command, stamp_line
from store_backends import RawDb, clone_schema

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.audit import verify_session
from infomark.ledger.calls import ToolCall
from infomark.ledger.canonical import canonical_json
from infomark.ledger.engine import Ledger
from infomark.ledger.store.journal import event_hash
from infomark.ledger.store.pg_schema import fingerprint
from infomark.ledger.store.select import remember_store

__all__ = [
    "FAKE_KID",
    "SESSION",
    "Outcome",
    "Pristine",
    "Tamper",
    "all_tampers",
    "apply_tamper",
    "audit_cli",
    "audit_inprocess",
    "build_pristine",
    "campaign",
    "copy_home",
    "judge",
    "raw_db",
]

SESSION = "victim"
_COLS = "session, seq, type, payload, ts, prev_hash, hash, mac, key_id"
FAKE_KID = "f00dfacef00dface"


@dataclass(frozen=True)
class Pristine:
    home: Path
    root: Path
    events: int  # last seq of SESSION
    evidence: dict[int, str]  # seq -> output digest, for SESSION
    types: dict[int, str]  # seq -> event type
    store: str | None = None  # the PostgreSQL store (None: the home's SQLite file)


@dataclass(frozen=True)
class Tamper:
    table: str  # events | heads | evidence | blobs
    op: str
    seq: int | None  # the targeted event (evidence seq for evidence rows and blobs)
    expect: int | None  # the event the audit must name first; None: any problem will do

    @property
    def name(self) -> str:
        return f"{self.table}.{self.op}@{self.seq}"


def build_pristine(base: Path, store: str | None = None) -> Pristine:
    """A victim session with every kind of event, plus another session in the same home.

    ``store`` a PostgreSQL URL: the home's journal is there (and ``<home>/store`` names it).
    """
    root = base / "project"
    root.mkdir(parents=True)
    home = root / ".infomark"
    if store is not None:
        home.mkdir(mode=0o700)
        remember_store(home, store)
    with (
        Gatekeeper.open(home, SESSION, root=root, store=store) as gk,
        Gatekeeper.open(home, "bystander", root=root, store=store) as other,
    ):
        gk.new_turn("fix the parser")
        gk.ingest(ledger_block())
        gk.authorize(ToolCall("Edit", {"file_path": "p.py", "old_string": "a", "new_string": "b"}))
        run_command(other, output="bystander run")
        ev = run_command(gk, ORACLE, output="3 passed (victim)")
        gk.ingest(stamp_line("C1", ev.ref))
        read_file(gk, output="x = 1 (victim read)")
        gk.authorize(ToolCall("Edit", {"file_path": "p.py", "old_string": "a", "new_string": "b"}))
        bad = run_command(gk, ORACLE, exit_code=1, output="1 failed (victim)")
        gk.ingest(f"divergence_event: claim_id=C1 evidence_ref={bad.ref}\n")
        gk.can_finish("Done.")
        run_command(other, output="bystander run 2")
        events = gk.store.journal.last_seq(gk.session)
        evidence = {
            seq: json.loads(record)["output_digest"]
            for _ref, _s, seq, record, _mac in gk.store.journal.evidence_rows(gk.session)
        }
        types = {e.seq: e.type for e in gk.events()}
    assert len(set(evidence.values())) == len(evidence), "outputs must be distinct"
    return Pristine(home, root, events, evidence, types, store)


def copy_home(p: Pristine, dest: Path) -> Path:
    """``cp -r`` of the pristine home (and, on PostgreSQL, of its store) under ``dest``."""
    home = dest / ".infomark"
    shutil.copytree(p.home, home)
    if p.store is not None:
        url = clone_schema(p.store)
        (home / f"store-{fingerprint(p.store)}.created").rename(
            home / f"store-{fingerprint(url)}.created"
        )
        remember_store(home, url)
    return home


def raw_db(home: Path) -> RawDb:
    """Plain SQL on a home's store (no key): its ledger.db, or the store its file names."""
    path = home / "store"
    if path.exists():
        return RawDb("pg", path.read_text().strip())
    return RawDb("sqlite", home / "ledger.db")


def all_tampers(p: Pristine) -> list[Tamper]:
    """Every single-row / single-blob tamper of SESSION, with the event to be named first."""
    n = p.events
    out: list[Tamper] = []
    event_ops = (
        "payload", "payload_garbage", "type", "ts", "prev_hash", "hash", "mac", "key_id",
        "rehash", "rehash_foreign_kid", "delete", "move_session",
    )  # fmt: skip
    for seq in range(1, n + 1):
        out.extend(Tamper("events", op, seq, seq) for op in event_ops)
        if seq < n:
            out.append(Tamper("events", "swap_next", seq, seq))
    out.append(Tamper("events", "append_copy", n, n + 1))
    out.append(Tamper("events", "append_forged", n, n + 1))
    out.extend(Tamper("heads", op, n, None) for op in ("seq", "hash", "mac", "delete"))
    ev_ops = ("record", "record_garbage", "mac", "ref", "seq", "session", "delete", "insert_copy")
    for seq in sorted(p.evidence):
        out.extend(Tamper("evidence", op, seq, seq) for op in ev_ops)
        out.extend(Tamper("blobs", op, seq, seq) for op in ("edit", "delete", "truncate"))
    return out


def _flip(text: str) -> str:
    last = text[-1]
    return text[:-1] + ("0" if last != "0" else "1")


def _edited_payload(payload: str) -> str:
    data = json.loads(payload)
    data["injected"] = True
    return canonical_json(data).decode()


def _rehash(db: RawDb, seq: int, kid: str | None) -> None:
    row = db.execute(
        "SELECT session, seq, type, payload, ts, prev_hash, key_id FROM events "
        "WHERE session = ? AND seq = ?",
        (SESSION, seq),
    ).fetchone()
    payload = _edited_payload(row[3])
    key_id = kid or row[6]
    h = event_hash(row[5], row[0], row[1], row[2], payload, row[4], key_id)
    db.execute(
        "UPDATE events SET payload = ?, hash = ?, key_id = ? WHERE session = ? AND seq = ?",
        (payload, h, key_id, SESSION, seq),
    )


def _event(db: RawDb, t: Tamper) -> None:
    where = " WHERE session = 'victim' AND seq = ?"
    seq = t.seq
    simple = {
        "type": "UPDATE events SET type = type || 'x'",
        "ts": "UPDATE events SET ts = '1999-01-01T00:00:00.000+00:00'",
        "delete": "DELETE FROM events",
        "move_session": "UPDATE events SET session = 'intruder'",
    }
    if t.op in simple:
        db.execute(simple[t.op] + where, (seq,))
        return
    if t.op in ("prev_hash", "hash", "mac", "key_id", "payload", "payload_garbage"):
        col = "payload" if t.op.startswith("payload") else t.op
        (value,) = db.execute(f"SELECT {col} FROM events" + where, (seq,)).fetchone()
        if t.op == "payload":
            new = _edited_payload(value)
        elif t.op == "payload_garbage":
            new = value[: len(value) // 2]
        else:
            new = _flip(value)
        db.execute(f"UPDATE events SET {col} = ?" + where, (new, seq))
    elif t.op == "rehash":
        _rehash(db, int(seq or 0), None)
    elif t.op == "rehash_foreign_kid":
        _rehash(db, int(seq or 0), FAKE_KID)
    elif t.op == "swap_next":
        db.execute("UPDATE events SET seq = -1" + where, (seq,))
        db.execute("UPDATE events SET seq = ?" + where, (seq, int(seq or 0) + 1))
        db.execute("UPDATE events SET seq = ?" + where, (int(seq or 0) + 1, -1))
    elif t.op in ("append_copy", "append_forged"):
        row = db.execute(f"SELECT {_COLS} FROM events" + where, (seq,)).fetchone()
        cols = list(row)
        cols[1] = int(seq or 0) + 1
        if t.op == "append_forged":
            cols[3] = canonical_json({"forged": True}).decode()
            cols[5] = row[6]  # chains to the real last event
            cols[6] = event_hash(row[6], SESSION, cols[1], cols[2], cols[3], cols[4], cols[8])
        db.execute(f"INSERT INTO events({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", cols)


def _head(db: RawDb, t: Tamper) -> None:
    where = " WHERE session = 'victim'"
    if t.op == "delete":
        db.execute("DELETE FROM heads" + where)
    elif t.op == "seq":
        db.execute("UPDATE heads SET seq = seq - 1" + where)
    else:
        (value,) = db.execute(f"SELECT {t.op} FROM heads" + where).fetchone()
        db.execute(f"UPDATE heads SET {t.op} = ?" + where, (_flip(value),))


def _evidence(db: RawDb, t: Tamper) -> None:
    where = " WHERE session = 'victim' AND seq = ?"
    row = db.execute("SELECT ref, session, seq, record, mac FROM evidence" + where, (t.seq,))
    ref, _session, seq, record, mac = row.fetchone()
    if t.op == "record":
        data = json.loads(record)
        data["output_size"] = int(data["output_size"]) + 1
        db.execute("UPDATE evidence SET record = ?" + where, (canonical_json(data).decode(), seq))
    elif t.op == "record_garbage":
        db.execute("UPDATE evidence SET record = ?" + where, (record[: len(record) // 2], seq))
    elif t.op in ("mac", "ref"):
        db.execute(
            f"UPDATE evidence SET {t.op} = ?" + where, (_flip(mac if t.op == "mac" else ref), seq)
        )
    elif t.op == "seq":
        db.execute("UPDATE evidence SET seq = seq + 1" + where, (seq,))
    elif t.op == "session":
        db.execute("UPDATE evidence SET session = 'intruder'" + where, (seq,))
    elif t.op == "delete":
        db.execute("DELETE FROM evidence" + where, (seq,))
    elif t.op == "insert_copy":
        db.execute(
            "INSERT INTO evidence(ref, session, seq, record, mac) VALUES (?, ?, ?, ?, ?)",
            ("ev_" + f"{random.Random(seq).getrandbits(96):024x}", SESSION, seq, record, mac),
        )


def _blob(p: Pristine, home: Path, t: Tamper) -> None:
    digest = p.evidence[int(t.seq or 0)].removeprefix("sha256:")
    path = home / "blobs" / digest[:2] / digest[2:]
    if p.store is not None or not path.exists():  # rows: PostgreSQL's, SQLite's small ones
        sql = {
            "edit": ("UPDATE blobs SET data = ? WHERE digest = ?", (b"forged output", digest)),
            "delete": ("DELETE FROM blobs WHERE digest = ?", (digest,)),
            "truncate": ("UPDATE blobs SET data = substr(data, 1, 3) WHERE digest = ?",
                         (digest,)),
        }[t.op]  # fmt: skip
        with raw_db(home) as db:
            assert db.execute(*sql).rowcount == 1
            db.commit()
        return
    if t.op == "edit":
        path.write_bytes(b"forged output")
    elif t.op == "delete":
        path.unlink()
    elif t.op == "truncate":
        path.write_bytes(path.read_bytes()[:3])


def apply_tamper(p: Pristine, t: Tamper, dest: Path) -> Path:
    """Copy the pristine home to ``dest`` and apply ``t`` there; return the copy."""
    home = copy_home(p, dest)
    if t.table == "blobs":
        _blob(p, home, t)
        return home
    with raw_db(home) as db:
        {"events": _event, "heads": _head, "evidence": _evidence}[t.table](db, t)
        db.commit()
    return home


def audit_inprocess(home: Path) -> list[dict[str, Any]]:
    """``verify_session`` on a fresh engine; an exception is reported as a problem too."""
    try:
        with Ledger(home, SESSION) as led:
            return [p.to_dict() for p in verify_session(led)]
    except Exception as exc:  # the audit itself crashed: recorded, judged by the caller
        return [{"seq": None, "code": "crash", "message": f"{type(exc).__name__}: {exc}"}]


def audit_cli(home: Path) -> tuple[int, list[dict[str, Any]], str]:
    """The real ``infomark audit --verify --json``: (exit code, problems, stderr)."""
    proc = run_cli("audit", "--verify", "--json", "--home", str(home), "--session", SESSION)
    err = proc.stderr.decode("utf-8", "replace")
    try:
        problems = list(json.loads(proc.stdout)["problems"])
    except (ValueError, KeyError, TypeError):
        problems = []
    return proc.returncode, problems, err


@dataclass(frozen=True)
class Outcome:
    tamper: Tamper
    detected: bool
    named: int | None  # seq of the first problem
    ok: bool  # detected and (no expectation or the expected event named first)
    detail: str


def judge(t: Tamper, problems: list[dict[str, Any]]) -> Outcome:
    real = [x for x in problems if x.get("code") != "crash"]
    crashed = [x for x in problems if x.get("code") == "crash"]
    first = real[0] if real else None
    named = first.get("seq") if first else None
    detected = bool(real)
    ok = detected and not crashed and (t.expect is None or named == t.expect)
    detail = (
        "; ".join(f"{x['code']}@{x['seq']}" for x in problems[:4]) if problems else "no problem"
    )
    return Outcome(t, detected, named, ok, detail)


def campaign(base: Path, *, cli_every: int = 1, store: str | None = None) -> dict[str, Any]:
    """Every tamper in process; every ``cli_every``-th one through the real CLI too."""
    started = time.perf_counter()
    p = build_pristine(base / "pristine", store)
    tampers = all_tampers(p)
    results: list[Outcome] = []
    cli_runs = cli_agree = 0
    for i, t in enumerate(tampers):
        home = apply_tamper(p, t, base / f"t{i}")
        outcome = judge(t, audit_inprocess(home))
        results.append(outcome)
        if i % cli_every == 0:
            code, problems, _err = audit_cli(home)
            cli_runs += 1
            cli_ok = code == 1 and judge(t, problems).ok
            cli_agree += int(cli_ok)
        shutil.rmtree(base / f"t{i}")
    missed = [r for r in results if not r.detected]
    misnamed = [r for r in results if r.detected and not r.ok]
    return {
        "tampers": len(results),
        "events": p.events,
        "detected": sum(r.detected for r in results),
        "named_correctly": sum(r.ok for r in results),
        "missed": [f"{r.tamper.name}: {r.detail}" for r in missed],
        "misnamed": [f"{r.tamper.name}: {r.detail}" for r in misnamed],
        "cli_runs": cli_runs,
        "cli_agree": cli_agree,
        "seconds": time.perf_counter() - started,
    }

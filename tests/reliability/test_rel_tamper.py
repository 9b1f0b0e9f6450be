"""Tamper evidence: any single edited, deleted, reordered or inserted row or blob is caught,
and the audit names the first bad event; a changed key is reported as key_mismatch.

The fast part tries every tamper on a sample of events (every op on every evidence row,
blob and head) in process, and a sample through the real CLI; the ``slow`` test and
``bench.soak`` try every tamper on every event, each through the CLI too.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
from pathlib import Path

import pytest
from rel_support import run_cli, run_command
from rel_tamper import (
    FAKE_KID,
    SESSION,
    Pristine,
    Tamper,
    all_tampers,
    apply_tamper,
    audit_cli,
    audit_inprocess,
    build_pristine,
    campaign,
    copy_home,
    judge,
    raw_db,
)
from store_backends import Backend

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.audit import verify_session
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.canonical import canonical_json
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import EvidenceClass, build_record
from infomark.ledger.store.journal import GENESIS, event_hash


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, module_backend: Backend) -> Pristine:
    """Once per backend: every test that tampers runs on SQLite and on PostgreSQL."""
    return build_pristine(tmp_path_factory.mktemp("pristine"), module_backend.url)


def _sample(p: Pristine) -> set[int]:
    """First, last, middle, and one event of each interesting type."""
    wanted = {
        "evidence_recorded",
        "decision",
        "stamp_applied",
        "divergence",
        "ledger_replaced",
        "baseline_recorded",
    }
    picks = {1, 2, p.events // 2, p.events}
    for t in wanted:
        picks.add(min(s for s, ty in p.types.items() if ty == t))
    return picks


def _ops(p: Pristine) -> list[tuple[str, str]]:
    return sorted({(t.table, t.op) for t in all_tampers(p)})


# The op list is fixed by rel_tamper; it is spelled out so each op is its own test id.
OPS = [
    ("blobs", "delete"), ("blobs", "edit"), ("blobs", "truncate"),
    ("events", "append_copy"), ("events", "append_forged"), ("events", "delete"),
    ("events", "hash"), ("events", "key_id"), ("events", "mac"), ("events", "move_session"),
    ("events", "payload"), ("events", "payload_garbage"), ("events", "prev_hash"),
    ("events", "rehash"), ("events", "rehash_foreign_kid"), ("events", "swap_next"),
    ("events", "ts"), ("events", "type"),
    ("evidence", "delete"), ("evidence", "insert_copy"), ("evidence", "mac"),
    ("evidence", "record"), ("evidence", "record_garbage"), ("evidence", "ref"),
    ("evidence", "seq"), ("evidence", "session"),
    ("heads", "delete"), ("heads", "hash"), ("heads", "mac"), ("heads", "seq"),
]  # fmt: skip


def test_the_op_list_is_complete(pristine: Pristine) -> None:
    assert _ops(pristine) == sorted(OPS)


def test_control_the_pristine_home_verifies(pristine: Pristine, tmp_path: Path) -> None:
    home = copy_home(pristine, tmp_path)
    assert audit_inprocess(home) == []
    code, problems, err = audit_cli(home)
    assert (code, problems) == (0, []), err


@pytest.mark.parametrize(("table", "op"), OPS, ids=[f"{t}.{o}" for t, o in OPS])
def test_single_tamper_is_detected_and_names_the_first_bad_event(
    pristine: Pristine, tmp_path: Path, table: str, op: str
) -> None:
    """Known failures: events.payload_garbage and evidence.record_garbage (D7),
    events.rehash_foreign_kid (D4), evidence.delete / evidence.session / evidence.seq (D3)."""
    sample = _sample(pristine)
    chosen = [
        t
        for t in all_tampers(pristine)
        if (t.table, t.op) == (table, op) and (table != "events" or t.seq in sample)
    ]
    assert chosen
    bad = []
    for i, t in enumerate(chosen):
        outcome = judge(t, audit_inprocess(apply_tamper(pristine, t, tmp_path / str(i))))
        if not outcome.ok:
            bad.append(f"{t.name} (expected seq {t.expect}): {outcome.detail}")
    assert not bad, "\n".join(bad)


CLI_SAMPLE = [
    Tamper("events", "payload", 8, 8),  # the first decision
    Tamper("events", "delete", 13, 13),  # the policy_updated after the first record
    Tamper("events", "swap_next", 3, 3),  # the ledger
    Tamper("events", "payload", 7, 7),  # the baseline the attested runs compare against
    Tamper("events", "append_forged", 34, 35),
    Tamper("heads", "mac", 34, None),
    Tamper("evidence", "record", 12, 12),  # each record follows its authorization (issue 11)
    Tamper("blobs", "edit", 20, 20),
    Tamper("blobs", "delete", 25, 25),
]


@pytest.mark.parametrize("t", CLI_SAMPLE, ids=[t.name for t in CLI_SAMPLE])
def test_cli_audit_verify_names_the_first_bad_event(
    pristine: Pristine, tmp_path: Path, t: Tamper
) -> None:
    # 34: each record follows its decision (issue 11), the grounded Edit journals files_written,
    # the working memory travels in policy_updated alone (issue 13), and the session records
    # its baseline before the first decision (attested runs are the default)
    assert pristine.events == 34 and sorted(pristine.evidence) == [12, 20, 25], (
        "the sample assumes this layout"
    )
    assert pristine.types[7] == "baseline_recorded", "the sample assumes this layout"
    code, problems, err = audit_cli(apply_tamper(pristine, t, tmp_path))
    assert code == 1, err
    outcome = judge(t, problems)
    assert outcome.ok, outcome.detail
    assert f"verification FAILED at seq {outcome.named}" in err


def test_changed_key_is_reported_as_key_mismatch(pristine: Pristine, tmp_path: Path) -> None:
    home = copy_home(pristine, tmp_path)
    env = {"INFOMARK_KEY": secrets.token_hex(32)}
    proc = run_cli("audit", "--verify", "--json", "--home", str(home), "--session", SESSION,
                   env=env)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    problems = json.loads(proc.stdout)["problems"]
    assert [p["code"] for p in problems] == ["key_mismatch"], problems
    assert "key" in problems[0]["message"]


def test_tampered_snapshot_is_ignored_and_state_equals_replay(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"
    with Gatekeeper.open(home, "s", root=tmp_path) as gk:
        for i in range(70):  # past the snapshot interval (64)
            run_command(gk, f"echo {i}", output=str(i))
    db = sqlite3.connect(home / "ledger.db")
    (state,) = db.execute("SELECT state FROM snapshots WHERE session = 's'").fetchone()
    forged = json.loads(state)
    forged["evidence_count"] = 0
    forged["gate"] = "G7"
    db.execute("UPDATE snapshots SET state = ? WHERE session = 's'", (json.dumps(forged),))
    db.commit()
    db.close()
    with Ledger(home, "s") as led:
        assert led.state.to_dict() == led.replay().to_dict()
        assert led.state.evidence_count == 70


@pytest.mark.slow
def test_tamper_soak_every_event_through_the_cli(tmp_path: Path) -> None:
    figures = campaign(tmp_path, cli_every=1)
    assert figures["missed"] == [] and figures["misnamed"] == [], figures
    assert figures["cli_agree"] == figures["cli_runs"]


def test_regression_d4_keyless_rewrite_is_not_reported_as_a_key_change(
    pristine: Pristine, tmp_path: Path
) -> None:
    """D4: without the key, turn the first denial into an allow, re-chain the tail under a
    made-up key id and point the head at it: the audit must name the edited event, not
    call the whole thing an intact chain signed with another key."""
    home = copy_home(pristine, tmp_path)
    target = min(s for s, t in pristine.types.items() if t == "decision")
    db = raw_db(home)
    rows = db.execute(
        "SELECT seq, type, payload, ts, prev_hash FROM events WHERE session = ? AND seq >= ? "
        "ORDER BY seq",
        (SESSION, target),
    ).fetchall()
    prev = rows[0][4]
    for seq, type_, payload, ts, _ in rows:
        if seq == target:
            data = json.loads(payload)
            assert data["decision"] == "deny"
            data["decision"] = "allow"
            payload = canonical_json(data).decode()
        h = event_hash(prev, SESSION, seq, type_, payload, ts, FAKE_KID)
        db.execute(
            "UPDATE events SET payload = ?, prev_hash = ?, hash = ?, key_id = ? "
            "WHERE session = ? AND seq = ?",
            (payload, prev, h, FAKE_KID, SESSION, seq),
        )
        prev = h
    db.execute("UPDATE heads SET hash = ? WHERE session = ?", (prev, SESSION))
    db.commit()
    db.close()
    problems = audit_inprocess(home)
    assert problems, "the rewrite went unnoticed"
    assert problems[0]["seq"] == target, problems


def _utf8_json(obj: object) -> str:
    """canonical_json as infomark 0.1.0 wrote it: sorted keys, compact, UTF-8 (not escaped)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_regression_d12_journals_with_utf8_canonical_json_still_verify(tmp_path: Path) -> None:
    """D12: rows written while canonical JSON was UTF-8 (every home created before the switch
    to ASCII escapes) must still verify, and their evidence refs must still be valid."""
    home = tmp_path / ".infomark"
    session = "s"
    with Ledger(home, session) as led:
        key = led.key
        call = ToolCall("bash", {"command": "echo héllo — “quoted” …"})
        outcome = ToolOutcome("ok é", 0)
        execution = EvidenceClass.EXECUTION
        record = build_record(session=session, seq=2, call=call, outcome=outcome,
                              evidence_class=execution, key_id=key.key_id)  # fmt: skip
        led.blobs.put("ok é".encode())
    mac = key.mac(_utf8_json(record).encode())
    ref = "ev_" + mac[:24]
    events = [("note", {"text": "café — naïve …"}),
              ("evidence_recorded", {"ref": ref, "record": record, "mac": mac})]  # fmt: skip
    db = sqlite3.connect(home / "ledger.db")
    prev = GENESIS
    for seq, (type_, payload) in enumerate(events, 1):
        body = _utf8_json(payload)
        ts = "2026-01-01T00:00:00.000+00:00"
        line = _utf8_json([session, seq, type_, body, ts, key.key_id]).encode()
        h = hashlib.sha256(prev.encode() + b"\n" + line).hexdigest()
        db.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session, seq, type_, body, ts, prev, h, key.mac(h.encode()), key.key_id),
        )
        prev = h  # fmt: skip
    head_mac = key.mac(_utf8_json(["head", session, len(events), prev]).encode())
    db.execute("INSERT INTO heads VALUES (?, ?, ?, ?)", (session, len(events), prev, head_mac))
    db.execute("INSERT INTO evidence VALUES (?, ?, ?, ?, ?)",
               (ref, session, 2, _utf8_json(record), mac))  # fmt: skip
    # such homes also predate the home manifest (schema 1): the upgrade builds it
    for sql in ("DROP TABLE manifest", "DROP TABLE home_manifest",
                "DELETE FROM meta WHERE key = 'db_id'", "PRAGMA user_version = 1"):  # fmt: skip
        db.execute(sql)
    db.commit()
    db.close()
    (home / "ledger.created").unlink()
    with Ledger(home, session) as led:
        assert [p.to_dict() for p in verify_session(led)] == []
        evidence, why = led.verify_ref(ref)
        assert why is None and evidence is not None

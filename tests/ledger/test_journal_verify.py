"""Tamper evidence: any single edited, deleted, reordered or inserted event is caught."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from helpers import record_paired, tamper_output
from hypothesis import given
from hypothesis import strategies as st

from infomark.ledger.audit import verify_session
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.keys import Key

N = 12
EVENTS = 2 * N  # each record is paired with the decision that authorized it


def _build(home: Path) -> None:
    with Ledger(home, "s") as led:
        for i in range(N):
            record_paired(
                led, ToolCall("bash", {"command": f"echo {i}"}), ToolOutcome(f"{i}", i % 2)
            )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One clean journal (with its key and blobs), copied for each example: ``cp -r``."""
    home = tmp_path_factory.mktemp("built")
    _build(home)
    copy = tmp_path_factory.mktemp("control") / "home"
    shutil.copytree(home, copy)
    assert _problems(copy) == []  # an untampered copy verifies: a problem below is the tamper
    return home


def _problems(home: Path) -> list[dict[str, object]]:
    with Ledger(home, "s") as led:
        return [p.to_dict() for p in verify_session(led)]


def test_clean_journal_verifies(tmp_path: Path) -> None:
    _build(tmp_path)
    assert _problems(tmp_path) == []


@given(
    op=st.sampled_from(["edit", "delete", "swap", "insert", "edit_ts", "truncate_tail"]),
    seq=st.integers(1, N).map(lambda i: 2 * i),  # an evidence event
)
def test_any_single_tamper_is_caught(
    tmp_path_factory: pytest.TempPathFactory, built: Path, op: str, seq: int
) -> None:
    home = tmp_path_factory.mktemp("j") / "home"
    shutil.copytree(built, home)
    db = sqlite3.connect(home / "ledger.db")
    other = seq % EVENTS + 1
    if op == "edit":
        db.execute(
            "UPDATE events SET payload = replace(payload, '\"outcome\"', '\"outcomE\"') "
            "WHERE seq = ?",
            (seq,),
        )
    elif op == "edit_ts":
        db.execute("UPDATE events SET ts = '1999-01-01' WHERE seq = ?", (seq,))
    elif op == "delete":
        db.execute("DELETE FROM events WHERE seq = ?", (seq,))
    elif op == "swap":
        db.execute("UPDATE events SET seq = -1 WHERE seq = ?", (seq,))
        db.execute("UPDATE events SET seq = ? WHERE seq = ?", (seq, other))
        db.execute("UPDATE events SET seq = ? WHERE seq = -1", (other,))
    elif op == "insert":
        db.execute(
            "INSERT INTO events SELECT session, ?, type, payload, ts, prev_hash, hash, mac, key_id "
            "FROM events WHERE seq = ?",
            (EVENTS + 1, seq),
        )
    elif op == "truncate_tail":
        db.execute("DELETE FROM events WHERE seq >= ?", (seq,))
    db.commit()
    db.close()
    problems = _problems(home)
    assert problems, f"{op} at {seq} went unnoticed"
    first = problems[0]
    assert first["seq"] is not None


def test_edit_names_the_first_bad_event(tmp_path: Path) -> None:
    _build(tmp_path)
    db = sqlite3.connect(tmp_path / "ledger.db")
    db.execute("UPDATE events SET type = 'x' WHERE seq = 5")
    db.commit()
    problems = _problems(tmp_path)
    assert problems[0]["seq"] == 5 and problems[0]["code"] == "edited"


def test_changed_key_is_reported_as_such(tmp_path: Path) -> None:
    _build(tmp_path)
    with Ledger(tmp_path, "s", key=Key.from_bytes(b"k" * 32)) as led:
        codes = {p.code for p in verify_session(led)}
    assert "key_mismatch" in codes
    assert "edited" not in codes


def test_evidence_blob_tamper_is_caught(tmp_path: Path) -> None:
    _build(tmp_path)
    with sqlite3.connect(tmp_path / "ledger.db") as db:  # the outputs are small: rows
        (digest,) = db.execute("SELECT digest FROM blobs ORDER BY digest LIMIT 1").fetchone()
    tamper_output(tmp_path, digest, "edit", b"forged output")
    assert any(p["code"] == "blob" for p in _problems(tmp_path))

"""History cannot be rewritten quietly (issue 10): the home manifest and the created marker.

Each reproduction from the issue, done as the hostile agent would (plain SQL on the
store, no key), is caught by ``audit --verify`` — in process and through the real
CLI — and the problem names what is missing. Every test runs on both backends (SQLite's
file, a PostgreSQL schema); what only a file can suffer is marked ``sqlite_only``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import record_paired
from store_backends import Backend

from infomark.ledger.audit import verify_session
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.keys import load_key

EXE = str(Path(sys.executable).with_name("infomark"))


def _session(home: Path, session: str, n: int) -> None:
    led = Ledger(home, session, root=home)
    for i in range(n):
        with led.transaction():
            led.emit("decision", {"decision": "deny" if i % 2 else "allow", "i": i})
    record_paired(led, ToolCall("bash", {"command": "pytest"}), ToolOutcome("ok", 0))
    led.close()


def _problems(home: Path, session: str = "s") -> list[dict[str, Any]]:
    led = Ledger(home, session, key=load_key(home), root=home)
    try:
        return [p.to_dict() for p in verify_session(led)]
    finally:
        led.close()


def _cli(home: Path, session: str = "s") -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [EXE, "audit", "--verify", "--json", "--home", str(home), "--session", session],
        capture_output=True,
        cwd=home.parent,
        timeout=120,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout)["problems"], proc.stderr.decode()


pytestmark = pytest.mark.usefixtures("backend")


def test_a_pristine_home_verifies(tmp_path: Path, backend: Backend) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 5)
    _session(home, "t", 3)
    assert _problems(home) == []
    assert _problems(home, "t") == []
    assert backend.marker(home).stat().st_mode & 0o077 == 0


def test_a_truncated_tail_with_an_earlier_valid_head_is_named(
    tmp_path: Path, backend: Backend
) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 4)
    old_head = backend.rows(home, "SELECT session, seq, hash, mac FROM heads WHERE session='s'")[0]
    _session(home, "s", 6)  # the denials the agent wants gone
    backend.sql(
        home,
        ("DELETE FROM events WHERE session='s' AND seq > ?", (old_head[1],)),
        ("DELETE FROM evidence WHERE session='s' AND seq > ?", (old_head[1],)),
        ("UPDATE heads SET seq=?, hash=?, mac=? WHERE session='s'", old_head[1:]),
    )
    code, problems, err = _cli(home)
    assert code == 1
    assert problems[0]["code"] == "missing" and problems[0]["seq"] == old_head[1] + 1
    assert f"events {old_head[1] + 1}..14 were removed" in problems[0]["message"]
    assert f"verification FAILED at seq {old_head[1] + 1}" in err


def test_restoring_the_manifest_row_too_breaks_the_home_mac(
    tmp_path: Path, backend: Backend
) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 4)
    old_head = backend.rows(home, "SELECT session, seq, hash, mac FROM heads WHERE session='s'")[0]
    _session(home, "s", 6)
    backend.sql(
        home,
        ("DELETE FROM events WHERE session='s' AND seq > ?", (old_head[1],)),
        ("DELETE FROM evidence WHERE session='s' AND seq > ?", (old_head[1],)),
        ("UPDATE heads SET seq=?, hash=?, mac=? WHERE session='s'", old_head[1:]),
        ("UPDATE manifest SET seq=?, hash=? WHERE session='s'", old_head[1:3]),
    )
    problems = _problems(home)
    assert [p["code"] for p in problems] == ["manifest"]
    assert "lists 1 session(s) with 6 event(s)" in problems[0]["message"]
    assert "covers 1 session(s) with 14 event(s)" in problems[0]["message"]


def test_restoring_the_whole_manifest_is_caught_when_another_session_moved_on(
    tmp_path: Path, backend: Backend
) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 4)
    _session(home, "other", 1)
    old_head = backend.rows(home, "SELECT session, seq, hash, mac FROM heads WHERE session='s'")[0]
    old_home = backend.rows(home, "SELECT sessions, events, digest, mac FROM home_manifest")[0]
    _session(home, "s", 6)
    _session(home, "other", 1)
    backend.sql(
        home,
        ("DELETE FROM events WHERE session='s' AND seq > ?", (old_head[1],)),
        ("DELETE FROM evidence WHERE session='s' AND seq > ?", (old_head[1],)),
        ("UPDATE heads SET seq=?, hash=?, mac=? WHERE session='s'", old_head[1:]),
        ("UPDATE manifest SET seq=?, hash=? WHERE session='s'", old_head[1:3]),
        ("UPDATE home_manifest SET sessions=?, events=?, digest=?, mac=?", old_home),
    )
    assert [p["code"] for p in _problems(home)] == ["manifest"]
    assert _problems(home, "other")[0]["code"] == "manifest"


def test_a_deleted_session_is_named_from_any_session(tmp_path: Path, backend: Backend) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 3)
    _session(home, "victim", 5)
    backend.sql(
        home,
        *(
            (f"DELETE FROM {table} WHERE session='victim'", ())
            for table in ("events", "evidence", "heads", "snapshots", "sessions")
        ),
    )
    code, problems, _err = _cli(home, "victim")  # its own audit: 0 events, yet it fails
    assert code == 1
    assert any(
        p["session"] == "victim" and "all its events are gone" in p["message"] for p in problems
    )
    assert any("victim" in p["message"] for p in _problems(home, "s"))
    # deleting its manifest row too leaves the home MAC counting it
    backend.sql(home, ("DELETE FROM manifest WHERE session='victim'", ()))
    problems = _problems(home, "s")
    assert [p["code"] for p in problems] == ["manifest"]
    assert "lists 1 session(s)" in problems[0]["message"]
    assert "covers 2 session(s)" in problems[0]["message"]


@pytest.mark.sqlite_only
def test_a_deleted_ledger_db_next_to_its_key_is_named(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 3)
    for name in ("ledger.db", "ledger.db-wal", "ledger.db-shm"):
        (home / name).unlink(missing_ok=True)
    assert _problems(home)[0]["code"] == "replaced"  # the next open makes a fresh ledger.db
    _session(home, "s", 1)  # and the agent carries on in it
    code, problems, err = _cli(home)
    assert code == 1
    assert problems[0]["code"] == "replaced"
    assert "ledger.db was deleted or replaced" in problems[0]["message"]
    assert "every session of the original ledger is missing" in problems[0]["message"]
    assert "verification FAILED" in err


@pytest.mark.sqlite_only
def test_a_ledger_db_from_another_home_with_the_same_key_is_named(tmp_path: Path) -> None:
    home, other = tmp_path / "a", tmp_path / "b"
    _session(home, "s", 3)
    other.mkdir(mode=0o700)
    shutil.copy2(home / "key", other / "key")
    _session(other, "s", 7)  # same key, its own ledger.db
    for name in ("ledger.db", "ledger.db-wal", "ledger.db-shm"):
        (home / name).unlink(missing_ok=True)
        if (other / name).exists():
            shutil.copy2(other / name, home / name)
    problems = _problems(home)
    assert [p["code"] for p in problems] == ["replaced"]


def test_a_deleted_marker_is_named(tmp_path: Path, backend: Backend) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 2)
    marker = backend.marker(home)
    marker.unlink()
    problems = _problems(home)  # the open does not quietly write a new one
    assert [p["code"] for p in problems] == ["replaced"]
    assert f"{marker.name} beside the key is missing" in problems[0]["message"]
    assert not marker.exists()


def test_a_forged_marker_is_named(tmp_path: Path, backend: Backend) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 2)
    path = backend.marker(home)
    marker = json.loads(path.read_text())
    marker["db_id"] = "0" * 16
    path.write_text(json.dumps(marker))
    assert [p["code"] for p in _problems(home)] == ["replaced"]
    assert "was altered" in _problems(home)[0]["message"]


@pytest.mark.sqlite_only
def test_a_home_from_before_the_manifest_is_upgraded_and_verifies(
    tmp_path: Path, backend: Backend
) -> None:
    home = tmp_path / ".infomark"
    _session(home, "s", 3)
    backend.sql(
        home,
        ("DROP TABLE manifest", ()),
        ("DROP TABLE home_manifest", ()),
        ("DELETE FROM meta WHERE key='db_id'", ()),
        ("PRAGMA user_version=1", ()),
    )
    (home / "ledger.created").unlink()
    assert _problems(home) == []
    _session(home, "s", 2)
    assert _problems(home) == []


@pytest.mark.postgres_only
def test_an_emptied_and_recreated_store_next_to_its_key_is_named(
    tmp_path: Path, backend: Backend
) -> None:
    """PostgreSQL's "deleted ledger.db": the tables emptied, a fresh manifest made by the
    next open (a new db_id); the marker beside the key still names the original store."""
    home = tmp_path / ".infomark"
    _session(home, "s", 3)
    from infomark.ledger.store.pg_schema import TABLES

    backend.sql(home, *((f"DELETE FROM {t}", ()) for t in TABLES))
    _session(home, "s", 1)  # the next open makes a fresh manifest; the agent carries on
    code, problems, _err = _cli(home)
    assert code == 1
    assert problems[0]["code"] == "replaced"
    assert "every session of the original ledger is missing" in problems[0]["message"]


def test_verify_shows_a_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    import os

    home = tmp_path / ".infomark"
    _session(home, "s", 3)
    argv = [EXE, "audit", "--verify", "--home", str(home), "--session", "s"]
    master, slave = os.openpty()
    try:
        proc = subprocess.run(
            argv, stderr=slave, stdout=subprocess.DEVNULL, timeout=120, check=False
        )
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the pty's other end is closed: all read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0
    assert b"verifying 5/5 events [" in seen
    piped = subprocess.run(argv, capture_output=True, timeout=120, check=False)
    assert piped.returncode == 0 and b"verifying" not in piped.stderr

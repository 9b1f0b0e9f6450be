"""Concurrency: 8 processes appending to one ledger (one shared session, four own ones):
no lost or duplicated seq, and no "database is locked" escaping to a caller; parallel
hook processes on one session; a service closing and reopening sessions under load."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from rel_crash import BAD_STDERR, race
from rel_hook import HookSession
from rel_load import run_load
from rel_service import start_service
from rel_support import EXE, child_env, ledger_block
from store_backends import Backend

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import VerificationError
from infomark.ledger.calls import ToolCall
from infomark.tools.hooks.failsafe import check_tail


@pytest.mark.usefixtures("backend")  # on SQLite and on PostgreSQL
def test_eight_writers_on_one_home(tmp_path: Path) -> None:
    figures = race(tmp_path, writers=8, ops=20, shared=4)
    assert figures["problems"] == []
    assert figures["calls"] == 160


@pytest.mark.usefixtures("backend")
def test_eight_writers_on_one_session(tmp_path: Path) -> None:
    figures = race(tmp_path, writers=8, ops=10, shared=8, seed=5)
    assert figures["problems"] == []


@pytest.mark.slow
def test_concurrency_soak(tmp_path: Path) -> None:
    figures = race(tmp_path, writers=8, ops=400, shared=4, seed=99)
    assert figures["problems"] == [], figures["problems"][:5]


def test_parallel_hooks_on_one_session(tmp_path: Path) -> None:
    """Claude Code runs hooks of parallel tool calls at the same time, on one session."""
    cc = HookSession(tmp_path)
    cc.say(ledger_block())
    for i in range(0, 8, 2):  # each result pairs with its PreToolUse (issue 11)
        command = {"command": f"echo {i}"}
        cc.tool_use(f"tu_{i}", "Bash", command)
        allowed = cc.hook("PreToolUse", tool_name="Bash", tool_input=command, tool_use_id=f"tu_{i}")
        assert allowed.silent_allow, allowed  # an unpaired result below would hide a denial
    procs = []
    for i in range(8):
        if i % 2:
            payload = cc.payload("PreToolUse", tool_name="Read", tool_input={"file_path": f"{i}"})
        else:
            payload = cc.payload("PostToolUse", tool_name="Bash", tool_use_id=f"tu_{i}",
                                 tool_input={"command": f"echo {i}"},
                                 tool_response={"stdout": f"{i}", "stderr": ""})  # fmt: skip
        proc = subprocess.Popen([EXE, "hook", "claude-code"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=tmp_path, env=child_env())  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        procs.append(proc)
    for proc in procs:
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None and proc.stdout is not None
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        assert not any(bad.encode() in err for bad in BAD_STDERR), err
    with Gatekeeper.open(cc.home, cc.sid, root=tmp_path) as gk:
        types = [e.type for e in gk.events()]
        assert types.count("ledger_replaced") == 1  # the transcript text is applied once
        assert types.count("evidence_recorded") == 4
        assert gk.audit().verified


class _AppendAfterRowsRead:
    """A journal's connection on which another writer commits right after each read of the
    tail's rows (the first ``rounds`` of them): the interleaving of parallel hooks, pinned."""

    def __init__(self, journal: Any, other: Gatekeeper, rounds: int) -> None:
        self.db, self.other, self.rounds, self.appended = journal._db, other, rounds, 0

    def execute(self, sql: str, args: Any = ()) -> Any:
        cursor = self.db.execute(sql, args)
        if not sql.startswith("SELECT seq, type, payload") or self.appended == self.rounds:
            return cursor
        rows = cursor.fetchall()  # read in full before the other writer commits
        self.other.authorize(ToolCall(tool="Read", input={"file_path": f"f{self.appended}"}))
        self.appended += 1
        return _Fetched(rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


class _Fetched:
    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows

    def fetchall(self) -> list[Any]:
        return self.rows

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None


def test_regression_d15_the_tail_check_keeps_up_with_appends_between_its_reads(
    tmp_path: Path, backend: Backend
) -> None:
    """The hook checks the rows, then the head; a parallel hook that commits in between used
    to look like a truncated journal ("the head (seq 12) does not match its last event (seq
    10)"), so a harmless call was denied and a Stop refused. Here another writer commits right
    after each read of the rows; a head rolled back behind its rows still fails."""
    home = tmp_path / ".infomark"
    with (
        Gatekeeper.open(home, "s", root=tmp_path) as hook,
        Gatekeeper.open(home, "s", root=tmp_path) as other,
    ):
        hook.ingest(ledger_block())
        journal = hook.store.journal
        old_head = journal.head_row("s")
        assert old_head is not None
        interleaved = _AppendAfterRowsRead(journal, other, rounds=3)
        journal._db = interleaved
        try:
            check_tail(journal, "s")
        finally:
            journal._db = interleaved.db
        assert interleaved.appended == 3  # three commits landed between its reads
    backend.sql(home, ("UPDATE heads SET seq = ?, hash = ?, mac = ? WHERE session = 's'", old_head))
    with Gatekeeper.open(home, "s", root=tmp_path) as hook, pytest.raises(VerificationError):
        check_tail(hook.store.journal, "s")


def test_threaded_load_with_sessions_closed_and_reopened(tmp_path: Path) -> None:
    """More sessions than the service keeps open: least recently used ones are closed and
    reopened under load, and nothing is lost."""
    svc = start_service(tmp_path, "--max-open-sessions", "2")
    try:
        result = run_load(svc, threads=8, shared=2, rounds=6, prefix="lru")
        assert result.errors == []
        with httpx.Client(base_url=svc.url, headers=svc.headers, timeout=60) as h:
            for session in result.sessions:
                assert h.get(f"/v1/sessions/{session}/audit").json()["verified"] is True
    finally:
        svc.stop()
    assert "Traceback" not in svc.log()

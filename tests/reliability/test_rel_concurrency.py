"""Concurrency: 8 processes appending to one ledger (one shared session, four own ones):
no lost or duplicated seq, and no "database is locked" escaping to a caller; parallel
hook processes on one session; a service closing and reopening sessions under load."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from rel_crash import BAD_STDERR, race
from rel_hook import HookSession
from rel_load import run_load
from rel_service import start_service
from rel_support import EXE, child_env, ledger_block

from infomark.gatekeeper import Gatekeeper


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
        cc.hook("PreToolUse", tool_name="Bash", tool_input={"command": f"echo {i}"},
                tool_use_id=f"tu_{i}")  # fmt: skip
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

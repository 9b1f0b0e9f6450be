"""The service's pooled sessions commit through one group-commit gate (issue 28, warm path).

Three clients on three sessions: their commits queue on the process's write lock (never in
SQLite's busy handler, whose sleeps were the three-client p99) and every durable one
returns after a WAL fsync that began after it. Real gatekeepers on a real SQLite home, the
pool's own threads; SQLite's busy handler is off (``busy_timeout=0``), so a conflict between
two of the pool's writers would show as a retry of the journal's back-off.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.ledger.calls import ToolCall
from infomark.ledger.store import journal as journal_mod
from infomark.ledger.store.journal import Journal
from infomark.tools.checkpointer import Checkpointer
from infomark.tools.protocol import SessionLike
from infomark.tools.service_pool import SessionPool

pytestmark = pytest.mark.sqlite_only


def _pool(tmp_path: Path) -> SessionPool:
    home = tmp_path / ".infomark"

    def opener(session: str, root: Path, config: Config) -> SessionLike:
        return Gatekeeper.open(home, session, root=root, config=config)

    pool = SessionPool(home, tmp_path, load_config(tmp_path, home), opener, max_open=8)
    pool.checkpointer = Checkpointer(home / "ledger.db", every=10**9)  # never runs here
    return pool


def _journal(gk: SessionLike) -> Journal:
    journal = gk.store.journal
    assert isinstance(journal, Journal)
    return journal


def durable_and_read(
    order: list[str], ran: threading.Event
) -> tuple[Callable[[SessionLike], None], Callable[[SessionLike], None]]:
    """Two sessions' calls: A, a durable decision (its commit waits for the disk); B, a read
    that says it ran (``ran``). Each notes itself in ``order``."""

    def a(gk: SessionLike) -> None:
        assert gk.authorize(ToolCall("Bash", {"command": "echo a"})).allowed  # durable
        order.append("a committed")

    def b(gk: SessionLike) -> None:
        gk.gate()
        order.append("b ran")
        ran.set()

    return a, b


def test_three_sessions_commit_concurrently_without_busy_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(journal_mod, "_pause", pauses.append)
    pool = _pool(tmp_path)
    sessions = ("c0", "c1", "c2")
    synced: list[bool] = []
    inside: list[bool] = []

    def no_busy_handler(gk: SessionLike) -> None:
        _journal(gk)._db.execute("PRAGMA busy_timeout=0")

    def bash(gk: SessionLike, i: int) -> SessionLike:
        decision = gk.authorize(ToolCall("Bash", {"command": f"echo {i}"}))  # durable
        assert decision.allowed
        inside.append(_journal(gk).last_commit_synced)  # synced when the call returns
        return gk

    async def client(s: str) -> None:
        for i in range(25):
            gk = await pool.run(s, lambda gk, i=i: bash(gk, i))
            synced.append(_journal(gk).last_commit_synced)

    async def main() -> None:
        for s in sessions:
            await pool.run(s, no_busy_handler)
        async with anyio.create_task_group() as tg:
            for s in sessions:
                tg.start_soon(client, s)

    try:
        anyio.run(main)
        journals = [_journal(pool._slots[(str(tmp_path), s)].gk) for s in sessions]  # type: ignore[arg-type]
        gate = journals[0]._gate
        assert gate is not None and all(j._gate is gate for j in journals)
        assert all(j._db.execute("PRAGMA synchronous").fetchone()[0] == 1 for j in journals)
        assert pauses == [], "two of the pool's writers met on the SQLite lock"
        assert synced == [True] * 75
        assert inside == [False] * 75
        assert 1 <= gate.fsyncs <= 75
    finally:
        pool.close()
    for s in sessions:
        with Gatekeeper.open(tmp_path / ".infomark", s, root=tmp_path) as gk:
            assert gk.audit(verify=True).verified is True
            assert sum(1 for r in gk.events() if r.type == "decision") == 25


def test_a_pooled_post_tool_use_waits_for_the_disk_once_before_it_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostToolUse on a pooled session: its output's blob is fsync'd before the record
    that points to it commits, and the record and the policy layer's bookkeeping commit
    together and wait for one WAL fsync, which has finished when the answer comes back."""
    import os

    from infomark.tools.hooks.claude_code import handle

    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    pool = _pool(tmp_path)
    home = tmp_path / ".infomark"

    def hook(event: str, use: str) -> SessionLike:
        def go(gk: SessionLike) -> SessionLike:
            payload = {"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path),
                       "hook_event_name": event, "tool_name": "Bash",
                       "tool_input": {"command": f"echo {use}"}, "tool_use_id": use,
                       "tool_response": {"stdout": f"{use}\n", "stderr": ""}}  # fmt: skip
            answer = handle(payload, home=home, root=tmp_path, gatekeeper=gk)  # type: ignore[arg-type]
            if event == "PostToolUse":
                context = answer.stdout["hookSpecificOutput"]["additionalContext"]
                assert "evidence_ref=ev_" in context
            return gk

        return anyio.run(lambda: pool.run("s1", go))

    try:
        for i in range(3):
            seen = sum(1 for _ in hook("PreToolUse", f"u{i}").events())
            synced.clear()
            gk = hook("PostToolUse", f"u{i}")
            journal = _journal(gk)
            gate = journal._gate
            assert gate is not None
            wal = [p for p in synced if p.endswith("ledger.db-wal")]
            # the output is a row committed with its event: the WAL's fsync is the only one
            assert synced == wal and len(wal) == 1, synced
            assert gate._synced == gate._written and journal.last_commit_synced is True
            rows = [r.type for r in gk.events()][seen:]
            assert rows[0] == "evidence_recorded" and "policy_updated" in rows
            assert ("inbox_opened" in rows) is (i == 0)  # a third commit, the same fsync
    finally:
        pool.close()


def test_a_call_waiting_for_the_disk_lets_another_session_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow disk (the gate has measured slow fsyncs): session A's durable commit waits in
    the WAL's fsync. The lane (here with a lease no call reaches) must let session B's call
    run and answer meanwhile, or the sessions' fsyncs would queue one behind the other
    instead of sharing."""
    import os
    import threading

    from infomark.tools.service_lane import Lane

    in_fsync, disk_done = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("ledger.db-wal") and (
            threading.current_thread().name != "MainThread"
        ):
            in_fsync.set()
            assert disk_done.wait(30), "B never ran while A waited for the disk"
        real_fsync(fd)

    pool = _pool(tmp_path)
    pool.lane = Lane(lease=30.0)
    order: list[str] = []

    a, b = durable_and_read(order, disk_done)

    async def main() -> None:
        await pool.run("sa", lambda gk: gk.gate())  # open both sessions first
        gate = await pool.run("sb", lambda gk: _journal(gk)._gate)
        assert gate is not None
        gate.fsync_seconds = 0.05  # as measured on a slow disk
        monkeypatch.setattr(os, "fsync", slow_fsync)
        async with anyio.create_task_group() as tg:
            tg.start_soon(pool.run, "sa", a)
            assert await anyio.to_thread.run_sync(in_fsync.wait, 30)
            await pool.run("sb", b)
        order.append("a answered")

    try:
        anyio.run(main)
    finally:
        pool.close()
    assert order == ["a committed", "b ran", "a answered"]


def test_the_gate_measures_its_fsyncs_and_calls_a_slow_disk_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``WriteGate.slow`` follows how long the WAL's fsyncs take: instant ones keep it False
    (the lane stays with the call); a disk whose fsync takes 5 ms turns it True within a
    few. (The real fsync's time is the machine's, so both disks are simulated.)"""
    import os
    import time

    from infomark.ledger.store.group_commit import SLOW_FSYNC, WriteGate

    db = tmp_path / "x.db"
    (tmp_path / "x.db-wal").write_bytes(b"frames")
    gate = WriteGate(str(db))
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    for _ in range(3):
        gate.sync(gate.committed())
    assert gate.fsyncs == 3 and not gate.slow(), gate.fsync_seconds

    def slow_disk(fd: int) -> None:
        until = time.perf_counter() + 5 * SLOW_FSYNC
        while time.perf_counter() < until:  # the disk, busy: no sleep, no GIL games
            pass

    monkeypatch.setattr(os, "fsync", slow_disk)
    for _ in range(6):
        gate.sync(gate.committed())
    assert gate.slow(), gate.fsync_seconds


def test_a_failing_step_aside_never_skips_the_fsync(tmp_path: Path) -> None:
    """``before_wait`` (the lane's step aside) runs before the WAL's fsync; if it raises (its
    event loop closed at shutdown), the commits still reach the disk before the error does."""

    def fail() -> None:
        raise RuntimeError("Event loop is closed")

    with Gatekeeper.open(tmp_path / ".infomark", "s", root=tmp_path) as gk:
        journal = _journal(gk)
        journal.group_commits()
        gate = journal._gate
        assert gate is not None
        gate.fsync_seconds = 1.0  # a slow disk: before_wait is called
        before = gate.fsyncs
        with pytest.raises(RuntimeError, match="closed"), journal.sync_once(before_wait=fail):
            assert gk.authorize(ToolCall("Bash", {"command": "echo x"})).allowed
            assert not journal.last_commit_synced  # owed, not yet on the disk
        assert gate.fsyncs == before + 1 and journal.last_commit_synced

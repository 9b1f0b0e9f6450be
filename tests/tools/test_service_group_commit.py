"""The service's pooled sessions commit through one group-commit gate (issue 28, warm path).

Three clients on three sessions: their commits queue on the process's write lock (never in
SQLite's busy handler, whose sleeps were the three-client p99) and every durable one
returns after a WAL fsync that began after it. Real gatekeepers on a real SQLite home, the
pool's own threads; SQLite's busy handler is off (``busy_timeout=0``), so a conflict between
two of the pool's writers would show as a retry of the journal's back-off.
"""

from __future__ import annotations

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


def test_three_sessions_commit_concurrently_without_busy_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(journal_mod, "_pause", pauses.append)
    pool = _pool(tmp_path)
    sessions = ("c0", "c1", "c2")
    synced: list[bool] = []

    def no_busy_handler(gk: SessionLike) -> None:
        _journal(gk)._db.execute("PRAGMA busy_timeout=0")

    def bash(gk: SessionLike, i: int) -> None:
        decision = gk.authorize(ToolCall("Bash", {"command": f"echo {i}"}))  # durable
        assert decision.allowed
        synced.append(_journal(gk).last_commit_synced)

    async def client(s: str) -> None:
        for i in range(25):
            await pool.run(s, lambda gk, i=i: bash(gk, i))

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
        assert 1 <= gate.fsyncs <= 75
    finally:
        pool.close()
    for s in sessions:
        with Gatekeeper.open(tmp_path / ".infomark", s, root=tmp_path) as gk:
            assert gk.audit(verify=True).verified is True
            assert sum(1 for r in gk.events() if r.type == "decision") == 25

"""The service's WAL checkpoints run off the request path (issue 28).

The pool's sessions commit with automatic checkpoints off; the checkpointer thread runs
them after every ``every`` requests, and once more when it stops. Real gatekeepers on a real
SQLite home; what SQLite reports (``wal_autocheckpoint``, the WAL's frames) is the evidence.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.ledger.calls import ToolCall
from infomark.tools.checkpointer import Checkpointer
from infomark.tools.protocol import SessionLike
from infomark.tools.service_pool import SessionPool


def _pool(tmp_path: Path, every: int) -> SessionPool:
    home = tmp_path / ".infomark"

    def opener(session: str, root: Path, config: Config) -> SessionLike:
        return Gatekeeper.open(home, session, root=root, config=config)

    pool = SessionPool(home, tmp_path, load_config(tmp_path, home), opener, max_open=8)
    pool.checkpointer = Checkpointer(home / "ledger.db", every=every)
    return pool


def _edits(pool: SessionPool, n: int) -> None:
    def one(gk: SessionLike, i: int) -> object:
        return gk.authorize(ToolCall("Bash", {"command": f"echo {i}"}))  # a durable commit

    async def calls() -> None:
        for i in range(n):
            await pool.run("s", lambda gk, i=i: one(gk, i))

    anyio.run(calls)


def test_pooled_sessions_do_not_checkpoint_in_their_commits(tmp_path: Path) -> None:
    pool = _pool(tmp_path, every=10**9)  # the thread never runs: only commits could
    try:
        _edits(pool, 1)
        journal = pool._slots[(str(tmp_path), "s")].gk.store.journal  # type: ignore[union-attr]
        assert journal._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        _edits(pool, 400)  # ~7 pages each: twice past SQLite's 1,000-page automatic checkpoint
        wal = tmp_path / ".infomark" / "ledger.db-wal"
        assert wal.stat().st_size > 2000 * 4096, "a commit checkpointed and restarted the WAL"
    finally:
        pool.close()


def test_the_checkpointer_runs_every_n_requests_and_bounds_the_wal(tmp_path: Path) -> None:
    pool = _pool(tmp_path, every=25)
    checkpointer = pool.checkpointer
    assert checkpointer is not None
    checkpointer.start()
    wal = tmp_path / ".infomark" / "ledger.db-wal"
    try:
        _edits(pool, 30)
        assert checkpointer.wait_runs(1), "25 requests did not start a checkpoint"
        for _ in range(4):  # 400 more durable commits, a checkpoint after each 100
            _edits(pool, 100)
            assert checkpointer.flush()
        # each checkpoint let the next commit restart the WAL from its start: it stays a
        # round of 100 commits long (the same 400 without one: far past 1,000 pages, above)
        assert wal.stat().st_size < 1000 * 4096, wal.stat().st_size
    finally:
        pool.close()
        checkpointer.stop()
    with Gatekeeper.open(tmp_path / ".infomark", "s", root=tmp_path) as gk:
        assert gk.audit(verify=True).verified is True

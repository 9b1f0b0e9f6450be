"""Opening a home is as robust as writing to it (issue 20).

Many processes start on one new home at the same instant (a multiprocessing barrier, no
sleeps): every open statement retries within the write bound, the schema is created once,
and nobody sees "database is locked" or "cannot open". The same for snapshot writes, cursor
moves and readers racing a checkpoint. A lock that outlives the bound is a StoreBusyError.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
import traceback
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from infomark.kernel.errors import StoreBusyError, StoreError
from infomark.ledger.audit import verify_session
from infomark.ledger.engine import Ledger
from infomark.ledger.keys import Key
from infomark.ledger.store import journal as journal_mod
from infomark.ledger.store.journal import SCHEMA_VERSION, Journal

KEY = Key.from_bytes(b"s" * 32)
_CTX = mp.get_context("fork")  # cheap children: 8 processes x many rounds stays fast

Job = Callable[[Path, int], object]


def _child(job: Job, home: Path, i: int, barrier: Barrier, out: Any) -> None:
    try:
        barrier.wait(timeout=60)
        job(home, i)
        out.put((os.getpid(), "ok"))
    except BaseException:  # report everything: the parent asserts on it
        out.put((os.getpid(), traceback.format_exc()))


def _together(job: Job, home: Path, n: int = 8) -> list[str]:
    """Run ``job(home, i)`` in ``n`` processes released at once; their failures."""
    barrier = _CTX.Barrier(n)
    out = _CTX.Queue()
    procs = [_CTX.Process(target=_child, args=(job, home, i, barrier, out)) for i in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return [msg for _i, msg in results if msg != "ok"]


def _open_and_append(home: Path, i: int) -> None:
    j = Journal(home / "ledger.db", KEY)
    with j.write():
        j.append("s", "opened", {"by": i})
    j.close()


def _check_home(home: Path, events: int = 8) -> None:
    db = sqlite3.connect(home / "ledger.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("SELECT count(*) FROM meta WHERE key='created'").fetchone()[0] == 1
    seqs = [r[0] for r in db.execute("SELECT seq FROM events ORDER BY seq")]
    assert seqs == list(range(1, events + 1))
    db.close()


def test_openers_meeting_a_lock_on_a_new_home_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic: the new file's write lock is held while 8 processes open it.

    Switching a new file to WAL needs that lock and SQLite does not call the busy handler
    for it, so the old open path failed at once in every process ("cannot open the
    ledger ...: database is locked"). Each child reports when it first backs off; the lock
    is released only once all of them have, and then every one must open and append.
    """
    monkeypatch.setattr(journal_mod, "_BUSY_MS", 50)
    monkeypatch.setattr(journal_mod, "_RETRIES", 400)  # a 20 s bound, far past the release
    out = _CTX.Queue()
    real_pause = journal_mod.__dict__.get("_pause")

    def pause(seconds: float) -> None:  # runs in the children (fork keeps the patch)
        out.put((os.getpid(), "backed off"))
        if real_pause is not None:
            real_pause(seconds)

    monkeypatch.setattr(journal_mod, "_pause", pause, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    barrier = _CTX.Barrier(9)
    procs = [
        _CTX.Process(target=_child, args=(_open_and_append, home, os.getpid(), barrier, out))
        for _ in range(8)
    ]
    for p in procs:
        p.start()  # forked before the parent opens anything: they inherit no SQLite state
    holder = sqlite3.connect(home / "ledger.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a write lock on the new, still rollback-mode file
    barrier.wait(timeout=60)
    waiting: set[int] = set()
    done: list[str] = []
    while len(waiting) + len(done) < 8:  # every child is inside the retry, or gave up
        who, msg = out.get(timeout=60)
        if msg == "backed off":
            waiting.add(who)
        else:
            done.append(msg)
    holder.execute("ROLLBACK")
    holder.close()
    while len(done) < 8:
        who, msg = out.get(timeout=60)
        if msg != "backed off":
            done.append(msg)
    for p in procs:
        p.join(timeout=60)
    assert [m for m in done if m != "ok"] == []
    _check_home(home)


def test_many_processes_open_one_new_home_at_once(tmp_path: Path) -> None:
    """The plain race: eight openers released together on a new home, many times."""
    for rnd in range(20):
        home = tmp_path / f"h{rnd}"
        home.mkdir()
        failures = _together(_open_and_append, home)
        assert failures == [], f"round {rnd}: {failures[0]}"
        _check_home(home)


def _ledger_work(home: Path, i: int) -> None:
    """Enough events from every process that snapshots are written while others append."""
    led = Ledger(home, "shared", key=KEY, root=home)
    for k in range(40):
        with led.transaction():
            led.emit("note", {"by": i, "k": k})
        if k % 10 == 0:
            led.move_cursor(f"c{i}", k)
    led.close()


def test_snapshot_writes_and_cursor_moves_race_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for _ in range(2):
        assert _together(_ledger_work, home) == []
    led = Ledger(home, "shared", key=KEY, root=home)
    assert verify_session(led) == []
    assert led.state.seq == 2 * 8 * (40 + 4)
    assert led.journal.load_snapshot("shared") is not None
    assert led.state.to_dict() == led.replay().to_dict()
    assert led.state.cursors == {f"c{i}": 30 for i in range(8)}
    led.close()


def _checkpointer_or_reader(home: Path, i: int) -> None:
    if i == 0:  # a writer that truncates the WAL after every append
        led = Ledger(home, "s", key=KEY, root=home)
        db = sqlite3.connect(home / "ledger.db", timeout=30)
        for k in range(60):
            with led.transaction():
                led.emit("note", {"k": k})
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        db.close()
        led.close()
        return
    for _ in range(15):  # readers: open, replay, read heads while the WAL is truncated
        led = Ledger(home, "s", key=KEY, root=home)
        # the writer may append between loading the state and the replay: never behind it
        assert led.replay().seq >= led.state.seq
        led.journal.head_row("s")
        led.close()


def test_readers_during_a_checkpoint(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Ledger(home, "s", key=KEY, root=home).close()
    assert _together(_checkpointer_or_reader, home, n=6) == []


def test_a_lock_that_outlives_the_bound_is_store_busy_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_mod, "_BUSY_MS", 100)
    monkeypatch.setattr(journal_mod, "_RETRIES", 2)
    path = tmp_path / "ledger.db"
    holder = sqlite3.connect(path, isolation_level=None)  # a new file, not yet WAL
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(StoreBusyError, match="stayed locked by other writers past the retry"):
        Journal(path, KEY)
    holder.execute("ROLLBACK")
    holder.close()
    j = Journal(path, KEY)  # once the lock is gone, the same home opens
    j.close()


def test_a_lock_that_outlives_the_bound_is_store_busy_on_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_mod, "_BUSY_MS", 100)
    monkeypatch.setattr(journal_mod, "_RETRIES", 2)
    j = Journal(tmp_path / "ledger.db", KEY)
    holder = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(StoreBusyError, match="stayed locked"), j.write():
        pass
    holder.execute("ROLLBACK")
    holder.close()
    j.close()


def test_a_file_that_is_not_a_database_is_a_clear_store_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open the ledger at") as info:
        Journal(path, KEY)
    assert not isinstance(info.value, StoreBusyError)

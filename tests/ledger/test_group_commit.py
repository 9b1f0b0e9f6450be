"""Group commit: a process's sessions of one home queue on one write lock and share fsyncs.

Under three concurrent clients the HTTP service's writers waited in SQLite's busy handler,
which sleeps 1, 2, 5, 10, 15… ms between tries (its p99), and each held the lock through
its own fsync. With :meth:`Journal.group_commits` they queue on the process's
:class:`~infomark.ledger.store.group_commit.WriteGate` instead, and a durable commit returns
after an fsync that began after it. Real SQLite files and real threads; SQLite's busy
handler is turned off (``busy_timeout=0``), so any wait it would have done surfaces as a
retry of the journal's own back-off, which the tests observe.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from sqlite3 import connect as sqlite_connect

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import StoreBusyError
from infomark.ledger.engine import Ledger
from infomark.ledger.store import journal as journal_mod
from infomark.ledger.store.group_commit import WriteGate, gate_for
from infomark.ledger.store.journal import Journal

pytestmark = pytest.mark.sqlite_only


def _ledgers(home: Path, root: Path, n: int) -> list[Gatekeeper]:
    gks = [Gatekeeper.open(home, f"s{i}", root=root) for i in range(n)]
    for gk in gks:
        journal = gk.store.journal
        assert isinstance(journal, Journal) and journal.group_commits() is True
        journal._db.execute("PRAGMA busy_timeout=0")  # a lock conflict is an error at once
    return gks


def _gate(led: Ledger) -> WriteGate:
    journal = led.journal
    assert isinstance(journal, Journal) and journal._gate is not None
    return journal._gate


def test_concurrent_writers_never_wait_in_sqlites_busy_handler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(journal_mod, "_pause", pauses.append)
    gks = _ledgers(tmp_path / ".infomark", tmp_path, 3)
    synced: list[bool] = []
    go = threading.Barrier(len(gks))

    def writer(gk: Gatekeeper) -> None:
        led = gk.store
        go.wait()
        for _ in range(40):
            with led.transaction():  # durable
                led.emit("turn_started", {"prompt_digest": None})
            synced.append(led.journal.last_commit_synced)

    threads = [threading.Thread(target=writer, args=(gk,)) for gk in gks]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert pauses == [], "a writer found the SQLite lock taken by a writer of its process"
        assert synced == [True] * 120
        gate = _gate(gks[0].store)
        assert all(_gate(gk.store) is gate for gk in gks)
        assert 1 <= gate.fsyncs <= 120  # shared when commits wait together, never more
    finally:
        for gk in gks:
            gk.close()
    with Gatekeeper.open(tmp_path / ".infomark", "s2", root=tmp_path) as gk:
        assert gk.store.journal.last_seq(gk.session) >= 40
        assert gk.audit(verify=True).verified is True


def test_commits_written_before_an_fsync_share_it(tmp_path: Path) -> None:
    [gk] = _ledgers(tmp_path / ".infomark", tmp_path, 1)
    try:
        with gk.store.transaction(durable=False):  # the WAL exists, unsynced
            gk.store.emit("turn_started", {"prompt_digest": None})
        gate = gate_for(str(tmp_path / ".infomark" / "ledger.db"))
        assert gate is _gate(gk.store)
        before = gate.fsyncs
        first, second = gate.committed(), gate.committed()  # both written, neither synced
        gate.sync(first)
        assert gate.fsyncs == before + 1
        gate.sync(second)  # the fsync for the first began after the second was written
        assert gate.fsyncs == before + 1
        gate.sync(gate.committed())  # written after that fsync: needs its own
        assert gate.fsyncs == before + 2
    finally:
        gk.close()


def test_which_commits_wait_for_the_disk(tmp_path: Path) -> None:
    [gk] = _ledgers(tmp_path / ".infomark", tmp_path, 1)
    led = gk.store
    try:
        gate = _gate(led)
        assert led.journal._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        before = gate.fsyncs
        with led.transaction():
            led.emit("turn_started", {"prompt_digest": None})
        assert (gate.fsyncs, led.journal.last_commit_synced) == (before + 1, True)
        with led.transaction(durable=False):  # a read's decision: no fsync
            led.emit("turn_started", {"prompt_digest": None})
        assert (gate.fsyncs, led.journal.last_commit_synced) == (before + 1, False)
        with led.transaction(durable=False):
            led.emit("turn_started", {"prompt_digest": None})
            led.require_sync()  # ... unless it turns out to need the disk
        assert (gate.fsyncs, led.journal.last_commit_synced) == (before + 2, True)
        with led.journal.write(gk.session):  # wrote nothing: nothing to sync
            pass
        assert (gate.fsyncs, led.journal.last_commit_synced) == (before + 2, True)
        with pytest.raises(RuntimeError), led.transaction():  # rolled back: no fsync
            led.emit("turn_started", {"prompt_digest": None})
            raise RuntimeError("rolled back")
        assert gate.fsyncs == before + 2
        assert not gate.lock.locked()
    finally:
        gk.close()


def test_a_wait_for_the_processs_write_lock_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As SQLite's own wait is: a writer that never gets the lock (here the test holds it,
    as a writer of the same thread would) gets a StoreBusyError, not a hang."""
    [gk] = _ledgers(tmp_path / ".infomark", tmp_path, 1)
    monkeypatch.setattr(journal_mod, "_BUSY_MS", 10)
    gate = _gate(gk.store)
    try:
        with (
            gate.lock,
            pytest.raises(StoreBusyError, match="stayed locked"),
            gk.store.transaction(),
        ):
            gk.store.emit("turn_started", {"prompt_digest": None})
        with gk.store.transaction():  # released: the next one commits
            gk.store.emit("turn_started", {"prompt_digest": None})
        assert gk.store.journal.last_commit_synced is True
    finally:
        gk.close()


def _on_disk(home: Path, session: str) -> int:
    """The session's events as another connection sees them."""
    import sqlite3

    db = sqlite3.connect(home / "ledger.db")
    try:
        row = db.execute("SELECT count(*) FROM events WHERE session = ?", (session,)).fetchone()
        return int(row[0])
    finally:
        db.close()


def test_sync_once_syncs_a_scopes_durable_commits_once_when_it_ends(tmp_path: Path) -> None:
    """The service's pooled sessions answer a request only after one fsync that covers every
    durable commit the request made (the record and the policy layer's bookkeeping of a
    PostToolUse, a transcript's ingest and a decision): each commit is visible at once, and
    the scope ends (the answer goes out) only once the last of them is on the disk."""
    home = tmp_path / ".infomark"
    [gk] = _ledgers(home, tmp_path, 1)
    led = gk.store
    try:
        gate = _gate(led)
        before, seen = gate.fsyncs, _on_disk(home, gk.session)
        with led.journal.sync_once():
            for _ in range(3):
                with led.transaction():  # durable, each visible to others at once
                    led.emit("turn_started", {"prompt_digest": None})
                assert led.journal.last_commit_synced is False
            with led.journal.sync_once(), led.transaction():  # nested: the outermost syncs
                led.emit("turn_started", {"prompt_digest": None})
            assert gate.fsyncs == before
            assert _on_disk(home, gk.session) == seen + 4
        assert (gate.fsyncs, led.journal.last_commit_synced) == (before + 1, True)
        assert gate._synced == gate._written  # every commit of the scope is on the disk

        # a read's decision only: nothing to wait for
        with led.journal.sync_once(), led.transaction(durable=False):
            led.emit("turn_started", {"prompt_digest": None})
        assert (gate.fsyncs, led.journal.last_commit_synced) == (before + 1, False)

        with pytest.raises(RuntimeError), led.journal.sync_once():  # an error: still synced
            with led.transaction():
                led.emit("turn_started", {"prompt_digest": None})
            raise RuntimeError("the request failed after it committed")
        assert (gate.fsyncs, led.journal.last_commit_synced) == (before + 2, True)
        assert gate._synced == gate._written
    finally:
        gk.close()


def test_sync_once_without_group_commit_syncs_every_commit(tmp_path: Path) -> None:
    """A journal that is not the service's (the command hook, the Python API): the scope
    changes nothing, every durable commit waits for the disk when it returns."""
    gk = Gatekeeper.open(tmp_path / ".infomark", "s", root=tmp_path)
    try:
        led = gk.store
        with led.journal.sync_once():
            with led.transaction():
                led.emit("turn_started", {"prompt_digest": None})
            assert led.journal.last_commit_synced is True
    finally:
        gk.close()


def _open_files(home: Path) -> int:
    """The process's open descriptors of the home's database, its WAL and its -shm (the
    writer queue's lock file stays open for the process by design: writer_queue.py)."""
    names = {str(home / "ledger.db") + end for end in ("", "-wal", "-shm")}
    return sum(1 for fd in Path("/proc/self/fd").iterdir() if os.path.realpath(fd) in names)


def test_the_gates_observer_lives_as_long_as_its_journals(tmp_path: Path) -> None:
    """The gate's observer (the connection that tells the process's own commits from
    anyone else's) opens with the first look and closes with the last gated journal: a
    service that opens and closes many homes keeps no file of theirs open."""
    home = tmp_path / ".infomark"
    before = _open_files(home)
    gks = _ledgers(home, tmp_path, 2)
    with gks[0].store.transaction():
        gks[0].store.emit("turn_started", {"prompt_digest": None})
    gate = _gate(gks[0].store)
    counted = gate.foreign_commits()
    assert gate.foreign_commits() == counted  # nothing new: the count holds
    for gk in gks:
        gk.close()
    assert _open_files(home) == before
    with sqlite_connect(home / "ledger.db") as other:  # a commit while nobody watches
        other.execute("UPDATE heads SET seq = seq")
    again = _ledgers(home, tmp_path, 1)
    try:
        assert gate_for(str(home / "ledger.db")) is gate
        assert gate.foreign_commits() != counted  # the gap is not taken for ours
    finally:
        again[0].close()

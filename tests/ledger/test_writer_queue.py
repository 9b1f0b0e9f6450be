"""Writers of one SQLite ledger in different processes queue on ``<db>-writer``
(:mod:`infomark.ledger.store.writer_queue`), never in SQLite's busy handler, whose sleeps
(up to 100 ms a try) were the tail of parallel hook calls."""

from __future__ import annotations

import multiprocessing as mp
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import StoreBusyError
from infomark.ledger.calls import ToolCall
from infomark.ledger.store import journal as journal_mod
from infomark.ledger.store.writer_queue import WriterQueue

pytestmark = pytest.mark.sqlite_only

PROCS, WRITES = 3, 60


def _writer(home: Path, root: Path, k: int, go: Any, out: Any) -> None:
    """One process: durable decisions on its own session; SQLite's busy handler off, so a
    meeting on SQLite's lock would show as a back-off of the journal's retry."""
    pauses: list[float] = []
    journal_mod._pause = pauses.append  # this child's own module
    with Gatekeeper.open(home, f"w{k}", root=root) as gk:
        journal = gk.store.journal
        journal._db.execute("PRAGMA busy_timeout=0")
        go.wait()
        for i in range(WRITES):
            assert gk.authorize(ToolCall("Bash", {"command": f"echo {k} {i}"})).allowed
        out.put((len(pauses), journal._queue.waits))


def test_writers_in_other_processes_queue_instead_of_meeting_on_sqlites_lock(
    tmp_path: Path,
) -> None:
    home = tmp_path / ".infomark"
    Gatekeeper.open(home, "init", root=tmp_path).close()
    ctx = mp.get_context("fork")
    go, out = ctx.Barrier(PROCS), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(home, tmp_path, k, go, out)) for k in range(PROCS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sum(pauses for pauses, _ in results) == 0, results  # never in SQLite's handler
    assert sum(waits for _, waits in results) > 0, results  # and they did meet, in the queue
    for k in range(PROCS):
        with Gatekeeper.open(home, f"w{k}", root=tmp_path) as gk:
            assert gk.audit(verify=True).verified is True
            assert sum(1 for r in gk.events() if r.type == "decision") == WRITES
    mode = stat.S_IMODE(os.stat(home / "ledger.db-writer").st_mode)
    assert mode == 0o600


def _hold(db: str, held: Any, done: Any) -> None:
    """Another process: take the queue, say so, keep it until told, then exit."""
    queue = WriterQueue(db)
    queue.acquire(time.monotonic() + 30)
    held.set()
    done.wait(30)


def _holder(db: str) -> tuple[Any, Any]:
    ctx = mp.get_context("fork")
    held, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold, args=(db, held, done))
    proc.start()
    assert held.wait(30)
    return proc, done


def test_the_wait_is_bounded_and_a_dead_holder_frees_the_lock(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    proc, done = _holder(db)
    waiter = WriterQueue(db)
    with pytest.raises(TimeoutError, match="another writer"):
        waiter.acquire(time.monotonic() + 0.02)
    assert waiter.waits > 0
    done.set()  # the holder exits without letting go: the kernel drops its lock
    proc.join(30)
    waiter.acquire(time.monotonic() + 5)
    waiter.release()
    assert stat.S_IMODE(os.stat(db + "-writer").st_mode) == 0o600


def test_held_elsewhere_tells_another_processs_hold_from_this_ones(tmp_path: Path) -> None:
    """``held_elsewhere`` (the service's look before it runs a call on its loop): this
    process's own hold is not "elsewhere"; another process's is, until it dies."""
    db = str(tmp_path / "x.db")
    mine = WriterQueue(db)
    assert not mine.held_elsewhere()
    mine.acquire(time.monotonic() + 5)
    assert not mine.held_elsewhere()  # F_TEST: a lock of this process does not count
    mine.release()
    proc, done = _holder(db)
    assert WriterQueue(db).held_elsewhere()
    done.set()
    proc.join(30)
    assert not WriterQueue(db).held_elsewhere()


def test_a_ledger_whose_queue_stays_held_answers_busy_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / ".infomark"
    with Gatekeeper.open(home, "s", root=tmp_path) as gk:
        proc, done = _holder(str(home / "ledger.db"))  # a writer that holds it and hangs
        monkeypatch.setattr(journal_mod, "_deadline", lambda: time.monotonic() + 0.05)
        try:
            with pytest.raises(StoreBusyError, match="stayed locked"), gk.store.transaction():
                gk.store.emit("turn_started", {})
        finally:
            done.set()
            proc.join(30)
        with gk.store.transaction():  # free again: writes go through
            gk.store.emit("turn_started", {})


@pytest.mark.parametrize("tool", ["Read", "Edit"])
def test_a_hook_call_facing_a_held_queue_fails_closed_in_the_default_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    """An agent's process that takes the queue and keeps it (the attack a lock file invites,
    as SQLite's own lock always did): the hook cannot journal its decision, so it answers as
    the failsafe does for a store it cannot judge with (the default profile enforces): a
    mutation is denied, naming why; a read, which changes nothing, goes on, and the user is
    told why on stderr."""
    from infomark.tools.hooks.claude_code import handle

    home = tmp_path / ".infomark"
    Gatekeeper.open(home, "s1", root=tmp_path).close()
    payload = {"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": str(tmp_path),
               "transcript_path": "", "tool_use_id": "u1", "tool_name": tool,
               "tool_input": {"file_path": str(tmp_path / "a.py"), "old_string": "a",
                              "new_string": "b"}}  # fmt: skip
    proc, done = _holder(str(home / "ledger.db"))
    monkeypatch.setattr(journal_mod, "_deadline", lambda: time.monotonic() + 0.05)
    try:
        answer = handle(payload, home=home, root=tmp_path)
    finally:
        done.set()
        proc.join(30)
    assert "stayed locked" in answer.stderr, answer
    if tool == "Edit":
        out = answer.stdout["hookSpecificOutput"] if answer.stdout else {}
        assert out.get("permissionDecision") == "deny", answer
        assert "stayed locked" in out["permissionDecisionReason"], answer
    else:
        assert answer.stdout is None and answer.exit_code == 0, answer


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_process_that_opens_many_homes_keeps_no_descriptor_of_the_closed_ones(
    tmp_path: Path,
) -> None:
    """The lock file's descriptor lives while a queue of it is open: a long process that
    opens and closes homes one after another (the test suite, an eval harness) stays flat,
    where it once kept one per home until ``select`` could no longer watch its sockets."""
    root = tmp_path / "project"
    root.mkdir()
    with Gatekeeper.open(tmp_path / "h", "s", root=root) as gk:  # what a first open imports
        gk.authorize(ToolCall("Read", {}))
    before = _open_fds()
    for k in range(40):
        with Gatekeeper.open(tmp_path / f"h{k}", "s", root=root) as gk:
            gk.authorize(ToolCall("Read", {}))  # a write: the queue took its lock file
            assert os.path.exists(tmp_path / f"h{k}" / "ledger.db-writer")
    assert _open_fds() == before


def test_closing_one_queue_keeps_the_lock_another_of_this_process_holds(tmp_path: Path) -> None:
    """POSIX drops every lock a process holds on a file when any descriptor of it closes:
    the last queue closes the descriptor only when none of this process holds the lock."""
    db = str(tmp_path / "x.db")
    holder, other = WriterQueue(db), WriterQueue(db)
    holder.acquire(time.monotonic() + 5)
    other.close()  # not the last: the descriptor stays
    assert _outside_view(db)  # another process sees it held still
    holder.close()  # the last, and it lets go first: now the descriptor closes
    assert not _outside_view(db)
    again = WriterQueue(db)  # a new queue opens it afresh and works
    again.acquire(time.monotonic() + 5)
    assert _outside_view(db)
    again.close()


def test_a_queue_used_after_its_close_keeps_its_lock_when_another_closes(
    tmp_path: Path,
) -> None:
    """A queue that takes the lock after its own close (a journal used after ``close()``)
    is no longer counted as open; the last counted queue to close must still not close the
    descriptor under its lock."""
    db = str(tmp_path / "x.db")
    late = WriterQueue(db)
    late.close()
    late.close()  # twice: counted once
    late.acquire(time.monotonic() + 5)
    WriterQueue(db).close()  # the only counted queue closes while ``late`` holds the lock
    assert _outside_view(db)
    late.release()
    assert not _outside_view(db)


def _outside_view(db: str) -> bool:
    """Whether another process finds the queue of ``db`` held (``lockf`` ``F_TEST``)."""
    code = (
        "import os, sys\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
        "try:\n    os.lockf(fd, os.F_TEST, 0)\nexcept OSError:\n    sys.exit(1)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, db + "-writer"], timeout=30, check=False)
    return done.returncode == 1

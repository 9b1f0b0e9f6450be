"""A pooled session's tail check (the HTTP service keeps one Gatekeeper open per session).

The pooled hook remembers what it verified of the journal's tail and checks only what is new
(``failsafe.check_tail`` with a ``TailMemo``). These are the attacks on that memory: another
process rewrites, deletes or rolls back rows the pooled session verified on an earlier call.
Each must still fail closed (a mutation denied, Stop refused), on every later call too, and the
pooled check must fail wherever the cold hook's full check fails.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_support import ledger_block
from store_backends import Backend

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import VerificationError
from infomark.ledger.calls import ToolCall
from infomark.tools.hooks.claude_code import handle
from infomark.tools.hooks.failsafe import TailMemo, TailRewrittenError, check_tail

WRITE = {"file_path": "app.py", "content": "x = 1\n"}
READ = {"file_path": "app.py"}
CANNOT_JUDGE = "infomark cannot judge this call"


def _payload(root: Path, event: str, tool: str = "", tool_input: Any = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"session_id": "s", "transcript_path": "", "cwd": str(root),
                               "hook_event_name": event, "tool_use_id": "t"}  # fmt: skip
    if tool:
        payload |= {"tool_name": tool, "tool_input": tool_input}
    return payload


def _pre(gk: Gatekeeper, root: Path, tool: str, tool_input: Any) -> tuple[str | None, str]:
    """A pooled PreToolUse: (the verdict, or None for allow; its reason or stderr)."""
    answer = handle(_payload(root, "PreToolUse", tool, tool_input), home=gk.home, root=root,
                    gatekeeper=gk)  # fmt: skip
    out = (answer.stdout or {}).get("hookSpecificOutput") or {}
    return out.get("permissionDecision"), out.get("permissionDecisionReason") or answer.stderr


def _stop_refused(gk: Gatekeeper, root: Path) -> bool:
    payload = _payload(root, "Stop") | {"last_assistant_message": "Done."}
    answer = handle(payload, home=gk.home, root=root, gatekeeper=gk)
    return answer.exit_code == 2 or (answer.stdout or {}).get("decision") == "block"


def _other_process(db: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    """Plain SQL from another process, as an agent's shell would run it (no key)."""
    script = (
        "import json, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1])\n"
        "for sql, args in json.loads(sys.argv[2]):\n"
        "    db.execute(sql, args)\n"
        "db.commit()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db), json.dumps(statements)], check=True)


@pytest.fixture
def pooled(tmp_path: Path) -> Any:
    (tmp_path / "app.py").write_text("x = 0\n")
    gk = Gatekeeper.open(tmp_path / ".infomark", "s", root=tmp_path)
    gk.ingest("Starting.\n\n" + ledger_block(status="Exact"))
    yield gk
    gk.close()


def _verified_calls(gk: Gatekeeper, root: Path) -> TailMemo:
    """Three pooled calls: the memo covers every row before the last call's, the denial's too."""
    for tool, tool_input in (("Read", READ), ("Write", WRITE), ("Read", READ)):
        _, reason = _pre(gk, root, tool, tool_input)
        assert CANNOT_JUDGE not in reason, reason
    memo = gk._tail_memo
    assert isinstance(memo, TailMemo)
    assert memo.start < memo.last < gk.store.journal.last_seq(gk.session)
    return memo


def _assert_fails_closed(gk: Gatekeeper, root: Path) -> None:
    for _ in range(2):  # and keeps failing: a failed check does not replace the memo
        verdict, reason = _pre(gk, root, "Write", WRITE)
        assert verdict == "deny" and CANNOT_JUDGE in reason, reason
        assert _stop_refused(gk, root)
    verdict, reason = _pre(gk, root, "Read", READ)
    assert verdict is None and "read-only call may proceed" in reason, reason


def test_another_process_rewrites_a_verified_row_between_two_calls(
    pooled: Gatekeeper, tmp_path: Path
) -> None:
    """The first denial rewritten as an allow, in place, between two pooled calls."""
    _verified_calls(pooled, tmp_path)
    seq, payload = sqlite3.connect(pooled.home / "ledger.db").execute(
        "SELECT seq, payload FROM events WHERE session = ? AND type = 'decision' "
        "AND payload LIKE '%\"deny\"%' ORDER BY seq LIMIT 1", (pooled.session,)
    ).fetchone()  # fmt: skip
    forged = payload.replace('"deny"', '"allow"')
    sql = "UPDATE events SET payload = ? WHERE session = ? AND seq = ?"
    _other_process(pooled.home / "ledger.db", (sql, (forged, pooled.session, seq)))
    _assert_fails_closed(pooled, tmp_path)
    _, reason = _pre(pooled, tmp_path, "Write", WRITE)
    assert f"event {seq} of session" in reason, reason


def test_another_process_rewrites_the_verified_head_row(pooled: Gatekeeper, tmp_path: Path) -> None:
    """The last row the pooled session verified, edited with its hash column left alone."""
    last = _verified_calls(pooled, tmp_path).last
    sql = "UPDATE events SET ts = '2020-01-01' WHERE session = ? AND seq = ?"
    _other_process(pooled.home / "ledger.db", (sql, (pooled.session, last)))
    _assert_fails_closed(pooled, tmp_path)


def test_a_rollback_to_an_older_valid_head_fails_closed_in_the_pool(
    pooled: Gatekeeper, tmp_path: Path
) -> None:
    """Rows deleted and the heads row put back to an older, validly MACed head (a copy the
    attacker kept): the rows and the head agree again, so a cold full check passes; the
    pooled session verified the deleted rows, so it refuses."""
    last = _verified_calls(pooled, tmp_path).last
    db = pooled.home / "ledger.db"
    journal, session = pooled.store.journal, pooled.session
    seq, hash_ = (
        sqlite3.connect(db)
        .execute("SELECT seq, hash FROM events WHERE session = ? AND seq = ?", (session, last - 1))
        .fetchone()
    )
    old_head = (seq, hash_, journal.head_mac(session, seq, hash_))  # as copied earlier
    _other_process(db, ("DELETE FROM events WHERE session = ? AND seq > ?", (session, seq)),
                   ("UPDATE heads SET seq = ?, hash = ?, mac = ? WHERE session = ?",
                    (*old_head, session)))  # fmt: skip
    with Gatekeeper.open(pooled.home, "s", root=tmp_path) as cold:
        check_tail(cold.store.journal, cold.session)  # what a fresh process sees: consistent
    _assert_fails_closed(pooled, tmp_path)
    with pytest.raises(TailRewrittenError):
        check_tail(journal, session, pooled._tail_memo)  # type: ignore[arg-type]


def test_parallel_writers_are_verified_not_refused(pooled: Gatekeeper, tmp_path: Path) -> None:
    """Other hooks of the session (parallel tool calls) append between two pooled calls, past
    a snapshot too: their rows are verified and the calls go on."""
    _verified_calls(pooled, tmp_path)
    with Gatekeeper.open(pooled.home, "s", root=tmp_path) as other:
        for i in range(150):  # more than one snapshot interval
            other.authorize(ToolCall(tool="Read", input={"file_path": f"f{i}"}))
            if i % 40 == 0:
                verdict, reason = _pre(pooled, tmp_path, "Read", READ)
                assert verdict is None and CANNOT_JUDGE not in reason, reason
    verdict, reason = _pre(pooled, tmp_path, "Read", READ)
    assert verdict is None and not reason, reason
    memo = pooled._tail_memo
    assert isinstance(memo, TailMemo) and memo.start > 0  # past a snapshot
    assert memo.last == pooled.store.journal.last_seq(pooled.session) - 1  # all but its own


# -- the property: the pooled check fails wherever the cold check does ------------------------
_EDITS = {
    "payload": "UPDATE events SET payload = payload || ' ' WHERE session = ? AND seq = ?",
    "hash": "UPDATE events SET hash = '" + "0" * 64 + "' WHERE session = ? AND seq = ?",
    "prev_hash": "UPDATE events SET prev_hash = '" + "1" * 64 + "' WHERE session = ? AND seq = ?",
    "mac": "UPDATE events SET mac = 'forged' WHERE session = ? AND seq = ?",
    "type": "UPDATE events SET type = 'note' WHERE session = ? AND seq = ?",
    "ts": "UPDATE events SET ts = '2020-01-01T00:00:00.000+00:00' WHERE session = ? AND seq = ?",
    "delete": "DELETE FROM events WHERE session = ? AND seq = ?",
    "head mac": "UPDATE heads SET mac = 'forged' WHERE session = ? AND ? > 0",
    "head seq": "UPDATE heads SET seq = seq - 1 WHERE session = ? AND ? > 0",
}


def _grow(gk: Gatekeeper, n: int) -> None:
    for i in range(n):
        gk.authorize(ToolCall(tool="Read", input={"file_path": f"g{i}"}))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=st.integers(0, 140),
    between=st.integers(0, 70),
    edit=st.sampled_from(sorted(_EDITS)),
    pick=st.floats(0, 1),
)
def test_the_pooled_check_fails_wherever_the_cold_check_fails(
    backend: Backend, before: int, between: int, edit: str, pick: float
) -> None:
    """A session of ``before`` events, checked (the memo); another writer appends
    ``between`` more (maybe past a snapshot); the attacker edits one thing the cold check
    covers. The pooled check raises, and raises again; without the edit it passes."""
    sid = "s" + uuid.uuid4().hex[:12]  # one PostgreSQL schema serves every example
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        with (
            Gatekeeper.open(root / ".infomark", sid, root=root) as gk,
            Gatekeeper.open(root / ".infomark", sid, root=root) as other,
        ):
            _grow(gk, before)
            journal, session = gk.store.journal, gk.session
            memo = check_tail(journal, session)
            _grow(other, between)
            with Gatekeeper.open(root / ".infomark", sid, root=root) as probe:
                cold = check_tail(probe.store.journal, probe.session)  # what it would verify
            if not cold.last:
                return  # an empty session: nothing to edit
            covered = [r[0] for r in cold.rows] or [cold.start]
            target = covered[min(len(covered) - 1, int(pick * len(covered)))]
            if not cold.rows and edit not in ("hash", "delete") and not edit.startswith("head"):
                edit = "hash"  # of the row the chain continues from: the cold check reads it
            assert check_tail(journal, session, memo).last == cold.last  # no edit: it passes
            backend.sql(root / ".infomark", (_EDITS[edit], (session, target)))
            with (
                Gatekeeper.open(root / ".infomark", sid, root=root) as probe,
                pytest.raises(VerificationError),
            ):
                check_tail(probe.store.journal, probe.session)  # the cold check fails
            for _ in range(2):
                with pytest.raises(VerificationError):
                    check_tail(journal, session, memo)


# -- the HTTP service's sessions: siblings under one write gate ------------------------------
# The pool's sessions of one home share the process's write gate (group commit), which tells
# their appends from anyone else's commits (``WriteGate.foreign_commits``): a sibling's commit
# does not make a session compare every row it verified; a commit from outside the gate, at any
# moment, still does.


@contextlib.contextmanager
def _siblings(root: Path) -> Iterator[tuple[Gatekeeper, Gatekeeper]]:
    """Two pooled sessions of one home under the process's write gate."""
    a, b = (Gatekeeper.open(root / ".infomark", f"sib{i}", root=root) for i in range(2))
    try:
        assert a.store.journal.group_commits() and b.store.journal.group_commits()
        yield a, b
    finally:
        a.close()
        b.close()


_APPEND_SPACE = "UPDATE events SET payload = payload || ' ' WHERE session = ? AND seq = ?"


def _rewrite_from_outside(gk: Gatekeeper, seq: int) -> None:
    """Another process edits row ``seq`` of ``gk``'s session (its payload, one space more)."""
    _other_process(gk.home / "ledger.db", (_APPEND_SPACE, (gk.session, seq)))


def _caught_from_now_on(gk: Gatekeeper, memo: TailMemo) -> None:
    for _ in range(2):  # and again: a failed check does not replace the memo
        with pytest.raises(TailRewrittenError):
            check_tail(gk.store.journal, gk.session, memo)


def _full_comparisons(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the checks that compare every verified row (the only path that reads the row
    the chain continues from, ``_start_hash``, on a memo)."""
    import infomark.tools.hooks.failsafe as failsafe

    seen: list[int] = []
    real = failsafe._start_hash

    def counting(journal: Any, session: str, start: int) -> str:
        seen.append(start)
        return real(journal, session, start)

    monkeypatch.setattr(failsafe, "_start_hash", counting)
    return seen


def test_a_siblings_commits_do_not_force_a_full_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _siblings(tmp_path) as (a, b):
        _grow(a, 5)
        memo = check_tail(a.store.journal, a.session)
        full = _full_comparisons(monkeypatch)
        for _ in range(10):  # the sibling commits between every two checks of ``a``
            _grow(b, 1)
            _grow(a, 1)
            memo = check_tail(a.store.journal, a.session, memo)
        assert full == []
        assert memo.last == a.store.journal.last_seq(a.session)


@pytest.mark.parametrize("who", ["another process", "an ungated connection of this process"])
def test_a_commit_from_outside_the_gate_forces_it_and_a_rewrite_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, who: str
) -> None:
    with _siblings(tmp_path) as (a, b):
        _grow(a, 5)
        memo = check_tail(a.store.journal, a.session)
        full = _full_comparisons(monkeypatch)
        _grow(b, 1)
        if who == "another process":
            _rewrite_from_outside(a, 2)
        else:
            with sqlite3.connect(a.home / "ledger.db") as conn:
                conn.execute(_APPEND_SPACE, (a.session, 2))
        _grow(b, 1)  # a sibling's commit after it: the outside one is still counted
        _caught_from_now_on(a, memo)
        assert full, "the outside commit did not force a comparison of every verified row"


def test_a_rewrite_that_lands_right_after_a_siblings_commit_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The narrowest window: another process commits between a sibling's ``COMMIT`` and the
    gate's second look (which takes that commit as the sibling's). The sibling's own
    ``data_version`` moved, so the commit is counted as foreign all the same."""
    from infomark.ledger.store.group_commit import WriteGate

    with _siblings(tmp_path) as (a, b):
        _grow(a, 5)
        memo = check_tail(a.store.journal, a.session)
        real = WriteGate.ended

        def raced(gate: WriteGate, conn: sqlite3.Connection, version: int | None) -> None:
            _rewrite_from_outside(a, 3)
            real(gate, conn, version)

        monkeypatch.setattr(WriteGate, "ended", raced)
        _grow(b, 1)
        monkeypatch.setattr(WriteGate, "ended", real)
        _caught_from_now_on(a, memo)


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(
        st.sampled_from(["a", "b", "check", "outside", "outside edit"]), min_size=1, max_size=14
    ),
    edit=st.sampled_from(sorted(k for k in _EDITS if not k.startswith("head"))),
)
def test_siblings_interleaved_with_outside_commits(steps: list[str], edit: str) -> None:
    """Any interleaving of the two siblings' appends, pooled checks of ``a`` and commits from
    outside the gate (harmless, or an edit of a row ``a`` verified): once a row ``a`` verified
    is edited, every later check raises; without an edit every check passes."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        db = root / ".infomark" / "ledger.db"
        with _siblings(root) as (a, b):
            _grow(a, 3)
            memo = check_tail(a.store.journal, a.session)
            edited = False
            for step in steps:
                if step == "a":
                    _grow(a, 1)
                elif step == "b":
                    _grow(b, 1)
                elif step == "outside":
                    _other_process(db, ("UPDATE heads SET seq = seq WHERE session = ?", ("x",)))
                elif step == "outside edit" and not edited:
                    target = memo.rows[0][0] if memo.rows else memo.last
                    _other_process(db, (_EDITS[edit], (a.session, target)))
                    edited = True
                if step == "check" or step == steps[-1]:
                    if edited:
                        with pytest.raises(VerificationError):
                            check_tail(a.store.journal, a.session, memo)
                    else:
                        memo = check_tail(a.store.journal, a.session, memo)


def test_an_outside_rewrite_between_the_checks_two_reads_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check reads this connection's ``data_version``, then asks the gate for its count of
    outside commits. Another process rewrites a verified row between the two reads (nothing
    else committed since the last check): the count takes that commit in, the
    ``data_version`` read before it does not. Neither read alone may then vouch for the rows:
    the rewrite is caught at the latest by the next check, and keeps being caught."""
    from infomark.ledger.store.group_commit import WriteGate

    with _siblings(tmp_path) as (a, _b):
        _grow(a, 5)
        memo = check_tail(a.store.journal, a.session)
        memo = check_tail(a.store.journal, a.session, memo)  # nothing committed since
        real = WriteGate.foreign_commits

        def raced(gate: WriteGate) -> int:
            _rewrite_from_outside(a, 2)
            return real(gate)

        monkeypatch.setattr(WriteGate, "foreign_commits", raced)
        with contextlib.suppress(TailRewrittenError):  # caught at once, or by the next
            memo = check_tail(a.store.journal, a.session, memo)
        monkeypatch.setattr(WriteGate, "foreign_commits", real)
        _caught_from_now_on(a, memo)

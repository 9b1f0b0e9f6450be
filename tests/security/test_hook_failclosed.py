"""Issue 10, "fail closed everywhere it matters", through the real hook process.

Each test breaks the ledger home the way a hostile agent with a shell could (or feeds the
hook a payload Claude Code could never parse) and checks that a mutating PreToolUse is
denied, Stop is refused, read-only calls still work, ``observe`` fails open and says so,
and the hook answers within its time bound.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rel_hook import HookResult, HookSession, denial_reason
from rel_support import ledger_block

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.store.blobs import SMALL

WRITE = {"file_path": "app.py", "content": "x = 1\n"}
RM = {"command": "rm -rf build"}
STRICT = 'profile = "strict"\n'
OBSERVE = 'profile = "observe"\n'
BOUND_S = 5.0


def _timed(fn: Callable[[], HookResult]) -> tuple[HookResult, float]:
    start = time.monotonic()
    result = fn()
    return result, time.monotonic() - start


def _not_allowed(result: HookResult) -> bool:
    """Denied, held or blocked: anything but Claude Code's "no opinion"."""
    if result.code == 2:
        return True
    spec = (result.out or {}).get("hookSpecificOutput") or {}
    return spec.get("permissionDecision") in ("deny", "ask")


def _stop_refused(result: HookResult) -> bool:
    return result.code == 2 or (result.out or {}).get("decision") == "block"


@pytest.fixture
def cc(tmp_path: Path) -> HookSession:
    session = HookSession(tmp_path)
    (tmp_path / "app.py").write_text("x = 0\n")
    assert session.hook("SessionStart", source="startup").code == 0  # creates the home
    return session


def _chmod_key(cc: HookSession) -> None:
    (cc.home / "key").chmod(0o644)


def _replace_key(cc: HookSession) -> None:
    (cc.home / "key").write_bytes(secrets.token_bytes(32))


def _delete_key(cc: HookSession) -> None:
    (cc.home / "key").unlink()


def _corrupt_db(cc: HookSession) -> None:
    (cc.home / "ledger.db").write_bytes(os.urandom(8192))
    for suffix in ("-wal", "-shm"):
        (cc.home / f"ledger.db{suffix}").unlink(missing_ok=True)


def _garble_ledger_row(cc: HookSession) -> None:
    """Edit the claim_ledger event in place (no key needed): the row no longer verifies."""
    with sqlite3.connect(cc.home / "ledger.db") as db:
        db.execute("UPDATE events SET payload = '{' WHERE type = 'ledger_declared'")
        db.execute("UPDATE events SET payload = '{' WHERE type LIKE 'ledger%'")


def _drop_tail(cc: HookSession) -> None:
    """Delete the last events (the denials) and leave the heads row as it was."""
    with sqlite3.connect(cc.home / "ledger.db") as db:
        db.execute("DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)")


BREAKS: dict[str, Callable[[HookSession], None]] = {
    "key mode 0644": _chmod_key,
    "key replaced": _replace_key,
    "key deleted": _delete_key,
    "ledger.db garbage": _corrupt_db,
    "ledger row edited": _garble_ledger_row,
    "journal tail deleted": _drop_tail,
}


@pytest.mark.parametrize("profile", ["ledger", "strict"])
@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_broken_home_denies_mutations_and_refuses_stop(
    cc: HookSession, name: str, profile: str
) -> None:
    if profile == "strict":
        (cc.project / "infomark.toml").write_text(STRICT)
    cc.say("Starting.\n\n" + ledger_block(status="Exact"))
    assert denial_reason(cc.pre("Write", WRITE)) is not None  # a ledger row exists now
    BREAKS[name](cc)
    for tool, tool_input in (("Write", WRITE), ("Bash", RM), ("Edit", {
        "file_path": "infomark.toml", "old_string": "x", "new_string": 'profile = "observe"'
    })):  # fmt: skip
        result, took = _timed(lambda t=tool, i=tool_input: cc.pre(t, i))  # type: ignore[misc]
        assert _not_allowed(result), f"{name}: {tool} allowed: {result.err[-400:]}"
        assert took < BOUND_S
    reason = denial_reason(cc.pre("Write", WRITE)) or ""
    assert "infomark cannot judge this call" in reason or "held" in reason, reason
    stop = cc.hook("Stop", last_assistant_message="Done.", stop_hook_active=False)
    assert _stop_refused(stop), f"{name}: Stop allowed: {stop.err[-400:]}"


def test_the_reason_says_what_broke_and_how_to_fix_it(cc: HookSession) -> None:
    _chmod_key(cc)
    reason = denial_reason(cc.pre("Write", WRITE)) or ""
    assert "chmod 600" in reason and "key" in reason, reason
    _replace_key_after = cc.home / "key"
    _replace_key_after.chmod(0o600)
    cc.say(ledger_block())
    cc.pre("Write", WRITE)  # journals under the original key
    _replace_key(cc)
    reason = denial_reason(cc.pre("Write", WRITE)) or ""
    assert "not the key that signed the journal" in reason, reason


def test_read_only_calls_proceed_while_the_home_is_broken(cc: HookSession) -> None:
    _chmod_key(cc)
    result = cc.pre("Read", {"file_path": str(cc.project / "app.py")})
    assert result.silent_allow, result
    assert "read-only call may proceed" in result.err
    # ... but not a read of the home itself
    assert _not_allowed(cc.pre("Read", {"file_path": str(cc.home / "key")}))


def test_observe_fails_open_and_says_so(cc: HookSession) -> None:
    (cc.project / "infomark.toml").write_text(OBSERVE)
    _chmod_key(cc)
    result = cc.pre("Write", WRITE)
    assert result.silent_allow, result
    assert "failing open (observe profile)" in result.err


@pytest.fixture
def locked(cc: HookSession) -> Iterator[HookSession]:
    """A writer holding ``BEGIN EXCLUSIVE`` on ledger.db for as long as the test runs."""
    cc.say(ledger_block())
    assert denial_reason(cc.pre("Write", WRITE)) is not None
    db = sqlite3.connect(cc.home / "ledger.db", isolation_level=None, timeout=0)
    db.execute("BEGIN EXCLUSIVE")
    try:
        yield cc
    finally:
        db.execute("ROLLBACK")
        db.close()


@pytest.mark.parametrize("profile", ["ledger", "strict"])
def test_a_held_exclusive_lock_denies_within_the_bound(locked: HookSession, profile: str) -> None:
    if profile == "strict":
        (locked.project / "infomark.toml").write_text(STRICT)
    result, took = _timed(lambda: locked.pre("Write", WRITE))
    assert _not_allowed(result), result
    reason = denial_reason(result) or ""
    # The store's bounded wait names the lock; on a machine so loaded that start-up plus that
    # wait passes the 4 s watchdog, the watchdog answers first. Both deny and say what broke.
    assert "locked by another process" in reason or "did not finish within 4 s" in reason, reason
    assert took < BOUND_S, f"the hook took {took:.2f} s"
    stop, took = _timed(
        lambda: locked.hook("Stop", last_assistant_message="Done.", stop_hook_active=False)
    )
    assert _stop_refused(stop) and took < BOUND_S


def test_a_fifo_as_transcript_reads_as_nothing_and_the_write_is_still_denied(
    cc: HookSession,
) -> None:
    """A FIFO as transcript would block open() forever (the watchdog used to answer after
    4 s; in the HTTP service it held the event loop). It is never opened for a blocking read
    now: the transcript reads as nothing, and the Write, with no ledger, is denied at once."""
    fifo = cc.project / "fifo.jsonl"
    os.mkfifo(fifo)
    raw = json.dumps(
        cc.payload("PreToolUse", tool_name="Write", tool_input=WRITE, transcript_path=str(fifo))
    ).encode()
    result, took = _timed(lambda: cc.raw(raw))
    assert _not_allowed(result), result
    assert (denial_reason(result) or "").startswith("[infomark no_ledger]"), result
    assert took < BOUND_S, f"the hook took {took:.2f} s"


def _pre_raw(cc: HookSession, **over: Any) -> bytes:
    payload = cc.payload("PreToolUse", tool_name="Write", tool_input=WRITE)
    payload.update(over)
    return json.dumps(payload).encode()


MALFORMED: dict[str, Callable[[HookSession], bytes]] = {
    "tool_input nested 1000 deep": lambda cc: _pre_raw(cc, tool_input={}).replace(
        b'"tool_input": {}', b'"tool_input": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1000
    ),
    "tool_input 100k deep": lambda cc: _pre_raw(cc, tool_input={}).replace(
        b'"tool_input": {}', b'"tool_input": ' + b"[" * 100_000 + b"]" * 100_000
    ),
    "truncated json": lambda cc: _pre_raw(cc)[:-5],
    "tool_input a list": lambda cc: _pre_raw(cc, tool_input=["rm", "-rf", "/"]),
    "tool_input a string": lambda cc: _pre_raw(cc, tool_input="rm -rf build"),
    "tool_name a number": lambda cc: _pre_raw(cc, tool_name=7),
    "tool_name missing": lambda cc: _pre_raw(cc, tool_name=None),
    "session_id an object": lambda cc: _pre_raw(cc, session_id={"a": 1}),
    "not an object": lambda cc: b"[1, 2, 3]",
    "empty stdin": lambda cc: b"",
}


@pytest.mark.parametrize("profile", ["ledger", "strict"])
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_pretooluse_is_never_allowed(cc: HookSession, name: str, profile: str) -> None:
    if profile == "strict":
        (cc.project / "infomark.toml").write_text(STRICT)
    result, took = _timed(lambda: cc.raw(MALFORMED[name](cc)))
    assert _not_allowed(result), f"{name}: {result}"
    assert result.code in (0, 2) and took < BOUND_S


def test_a_broken_config_is_enforcing_even_when_it_said_observe(cc: HookSession) -> None:
    (cc.project / "infomark.toml").write_text('profile = "observe"\nbroken = = =\n')
    _chmod_key(cc)
    assert _not_allowed(cc.pre("Write", WRITE))


def test_hook_errors_are_journaled_when_the_journal_still_works(cc: HookSession) -> None:
    cc.say(ledger_block())
    shutil.rmtree(cc.home / "blobs", ignore_errors=True)  # the session's baseline is there
    (cc.home / "blobs").write_text("not a directory")
    result = cc.hook(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "ls"},  # too large for a row of the ledger: a blob file
        tool_response={"stdout": "x" * (SMALL + 1), "stderr": "", "interrupted": False},
    )
    assert result.code == 0 and "cannot use its home" in result.err
    with Gatekeeper.open(cc.home, cc.sid, root=cc.project) as gk:
        errors = [e.payload for e in gk.events() if e.type == "hook_error"]
    assert errors and errors[-1]["event"] == "PostToolUse"

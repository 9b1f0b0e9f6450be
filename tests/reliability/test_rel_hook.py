"""The Claude Code hook under hostile input and internal faults.

Never a crash: the exit code is 0 (allow / an answer on stdout) or 2 (blocking), stdout
is empty or one JSON object. An internal error fails closed on PreToolUse in both
enforcing profiles (ledger and strict): a deny with the reason; when the ledger can
still be written it journals a ``hook_error`` event.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_hook import HookResult, HookSession, denial_reason
from rel_support import examples, ledger_block

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.store.blobs import SMALL
from infomark.tools.hooks.claude_code import handle

EDIT = {"file_path": "p.py", "old_string": "a", "new_string": "b"}
STRICT = 'profile = "strict"\n'


def _sane(result: HookResult) -> None:
    assert result.code in (0, 2), f"exit {result.code}: {result.err[-1500:]}"
    assert result.out is None or isinstance(result.out, dict), result.out


@pytest.fixture
def cc(tmp_path: Path) -> HookSession:
    return HookSession(tmp_path)


def _pre_raw(cc: HookSession, **over: Any) -> bytes:
    payload = cc.payload("PreToolUse", tool_name="Edit", tool_input=EDIT)
    payload.update(over)
    return json.dumps(payload).encode()


HOSTILE_STDIN: dict[str, Any] = {
    "empty": lambda cc: b"",
    "not json": lambda cc: b"{broken",
    "invalid utf-8": lambda cc: b'{"hook_event_name": "PreToolUse", "x": "\xff\xfe"}',
    "nul bytes": lambda cc: b'{"hook_event_name": "Pre\x00ToolUse"}\x00',
    "json array": lambda cc: b"[1, 2, 3]",
    "json string": lambda cc: b'"PreToolUse"',
    "event not a string": lambda cc: b'{"hook_event_name": {"a": 1}}',
    "windows newlines": lambda cc: _pre_raw(cc).replace(b", ", b",\r\n"),
    "giant session id": lambda cc: _pre_raw(cc, session_id="s" * 100_000),
    "session id with NUL": lambda cc: _pre_raw(cc, session_id="a\x00b"),
    "tool_input not an object": lambda cc: _pre_raw(cc, tool_input=[1, "x", None]),
    "1 MB tool input": lambda cc: _pre_raw(cc, tool_input={"new_string": "x" * 1_000_000}),
    "transcript is a directory": lambda cc: _pre_raw(cc, transcript_path=str(cc.project)),
    "surrogate escape in input": lambda cc: _pre_raw(cc).replace(b'"b"', b'"\\ud800"'),
    "deeply nested json": lambda cc: _pre_raw(cc, tool_input={}).replace(
        b'"tool_input": {}', b'"tool_input": ' + b"[" * 100_000 + b"]" * 100_000
    ),
}


STRICT_SAMPLE = {"empty", "not json", "invalid utf-8", "json array", "giant session id",
                 "surrogate escape in input", "deeply nested json"}  # fmt: skip
CASES = [(n, "ledger") for n in sorted(HOSTILE_STDIN)] + [
    (n, "strict") for n in sorted(STRICT_SAMPLE)
]


@pytest.mark.parametrize(("name", "profile"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_hostile_stdin_never_crashes_the_hook(cc: HookSession, name: str, profile: str) -> None:
    """Known failure: 'deeply nested json' (D1: RecursionError escapes, exit 1)."""
    if profile == "strict":
        (cc.project / "infomark.toml").write_text(STRICT)
    result = cc.raw(HOSTILE_STDIN[name](cc))
    _sane(result)
    if profile == "strict" and result.code == 0 and result.out is None:
        # strict allows silently only a well-formed, allowed call: these are all edits or junk
        pytest.fail(f"strict allowed hostile input {name!r}: {result.err[-500:]}")


@pytest.mark.parametrize("profile", ["ledger", "strict"])
def test_regression_d1_deep_json_fails_closed(cc: HookSession, profile: str) -> None:
    if profile == "strict":
        (cc.project / "infomark.toml").write_text(STRICT)
    result = cc.raw(b'{"hook_event_name": "PreToolUse", "x": ' + b"[" * 50_000 + b"]" * 50_000)
    assert denial_reason(result) is not None, f"exit {result.code}: {result.err[-300:]}"


# --------------------------------------------------------------------------- fail-safe


def _corrupt_db(cc: HookSession) -> None:
    cc.hook("SessionStart", source="startup")  # creates the home
    (cc.home / "ledger.db").write_bytes(os.urandom(4096))
    for suffix in ("-wal", "-shm"):
        (cc.home / f"ledger.db{suffix}").unlink(missing_ok=True)


def _loose_key(cc: HookSession) -> None:
    cc.hook("SessionStart", source="startup")
    (cc.home / "key").chmod(0o644)


FAULTS = {"corrupt ledger.db": _corrupt_db, "key file 0644": _loose_key}


@pytest.mark.parametrize("profile", ["ledger", "strict"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_internal_error_fails_closed_with_the_reason(
    cc: HookSession, fault: str, profile: str
) -> None:
    FAULTS[fault](cc)
    if profile == "strict":
        (cc.project / "infomark.toml").write_text(STRICT)
    reason = denial_reason(cc.pre("Edit", EDIT))
    assert reason is not None and f"profile {profile}" in reason
    assert ("key" in reason) if fault == "key file 0644" else ("ledger" in reason)
    read = cc.pre("Read", {"file_path": "p.py"})  # read-only calls may proceed
    assert read.silent_allow and "failing closed" not in read.err


def test_ledger_profile_internal_error_is_journaled(cc: HookSession) -> None:
    """An error after the ledger opened (the blob store is a file) becomes a hook_error event."""
    cc.hook("SessionStart", source="startup")
    cc.hook("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="tu_e")
    blobs = cc.home / "blobs"
    blobs.mkdir(exist_ok=True)
    shutil.rmtree(blobs)
    blobs.write_text("not a directory")
    result = cc.hook(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_use_id="tu_e",  # an output too large for a row of the ledger: a blob file
        tool_response={"stdout": "x" * (SMALL + 1), "stderr": "", "interrupted": False},
    )
    assert result.code == 0 and "cannot use its home" in result.err
    with Gatekeeper.open(cc.home, cc.sid, root=cc.project) as gk:
        errors = [e.payload for e in gk.events() if e.type == "hook_error"]
    assert len(errors) == 1
    assert errors[0]["event"] == "PostToolUse" and errors[0]["failed_closed"] is False
    assert "Not a directory" in errors[0]["error"]


def test_regression_d8_hook_error_records_what_the_hook_did(cc: HookSession) -> None:
    """D8: a strict PostToolUse error allows (exit 0) but is journaled failed_closed=True."""
    (cc.project / "infomark.toml").write_text(STRICT)
    cc.hook("SessionStart", source="startup")
    cc.hook("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="tu_e")
    shutil.rmtree(cc.home / "blobs", ignore_errors=True)
    (cc.home / "blobs").write_text("not a directory")
    result = cc.hook("PostToolUse", tool_name="Bash", tool_input={"command": "ls"},
                     tool_use_id="tu_e", tool_response={"stdout": "x" * (SMALL + 1)})  # fmt: skip
    assert result.code == 0
    with Gatekeeper.open(cc.home, cc.sid, root=cc.project) as gk:
        (error,) = [e.payload for e in gk.events() if e.type == "hook_error"]
    assert error["failed_closed"] is False, error


def test_regression_d9_broken_config_does_not_downgrade_strict(cc: HookSession) -> None:
    """D9: a strict project whose infomark.toml stops parsing must not allow everything."""
    (cc.project / "infomark.toml").write_text(STRICT)
    cc.say(ledger_block())
    assert denial_reason(cc.pre("Edit", EDIT)) is not None
    (cc.project / "infomark.toml").write_text(STRICT + "this is = = not toml\n")
    result = cc.pre("Edit", EDIT)
    assert not result.silent_allow, f"allowed: {result.err[-300:]}"


def test_regression_d2_surrogate_in_transcript_does_not_open_the_gate(cc: HookSession) -> None:
    """D2 via the hook: one claim text with a \\ud800 escape made every later PreToolUse an
    'internal error, allowing' (ledger profile), so an ungrounded Edit ran."""
    cc.say(ledger_block())
    assert denial_reason(cc.pre("Edit", EDIT)) is not None
    cc.say(ledger_block(text="x \\ud800 y"))
    result = cc.pre("Edit", EDIT)
    assert denial_reason(result) is not None, f"ungrounded Edit allowed: {result.err[-300:]}"


# --------------------------------------------------------------------------- in-process fuzz

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12,
)  # fmt: skip
_EVENTS = st.sampled_from(
    ["PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "SessionStart",
     "UserPromptSubmit", "PreCompact", "PostCompact", "Notification", "", "PreToolUse\x00"]
)  # fmt: skip
_FIELDS = st.fixed_dictionaries(
    {"hook_event_name": _EVENTS},
    optional={
        "tool_name": st.sampled_from(["Edit", "Bash", "Read", "mcp__a__b", ""]) | _JSON,
        "tool_input": _JSON,
        "tool_response": _JSON,
        "tool_use_id": _JSON,
        "session_id": st.sampled_from(["s1", "s2"]) | _JSON,
        "error": _JSON,
        "prompt": _JSON,
        "last_assistant_message": _JSON,
        "duration_ms": _JSON,
        "source": _JSON,
        "is_interrupt": _JSON,
    },
)


def test_handle_fuzz_never_raises(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"

    @settings(max_examples=examples(80), suppress_health_check=list(HealthCheck), deadline=None)
    @given(payload=_FIELDS)
    def check(payload: dict[str, Any]) -> None:
        answer = handle(payload, home=home, root=tmp_path)
        assert answer.exit_code in (0, 2)
        assert answer.exit_code == 0 or payload["hook_event_name"] == "PreToolUse"
        assert "internal error" not in answer.stderr, answer.stderr
        unreadable = not isinstance(payload.get("tool_input"), dict) or not isinstance(
            payload.get("tool_name"), str
        )
        if payload["hook_event_name"] == "PreToolUse" and answer.exit_code == 0 and unreadable:
            assert answer.stdout is not None, payload  # never waved through

    check()


def test_regression_d13_a_huge_transcript_line_does_not_stop_ingestion(cc: HookSession) -> None:
    """D13: the transcript reader reads at most 8 MiB per call and only up to the last
    newline in it, so one longer line (a big tool result) is never passed: nothing the
    agent writes after it is ever ingested, and ungrounded edits are allowed."""
    cc.tool_result("toolu_big", "x" * 9_000_000)
    cc.say(ledger_block())
    assert denial_reason(cc.pre("Edit", EDIT)) is not None, "the ledger after it was never read"


@pytest.mark.parametrize("profile", ["ledger", "strict"])
def test_regression_d14_a_surrogate_in_a_claim_cannot_crash_the_hook_output(
    cc: HookSession, profile: str
) -> None:
    """D14: since lone surrogates are storable (the D2 fix), a denial that quotes a claim's
    oracle written as "\\ud800" makes the hook crash while printing it (exit 1, a
    non-blocking error): the denied Edit runs, in the strict profile too."""
    if profile == "strict":
        (cc.project / "infomark.toml").write_text(STRICT)
    cc.say(ledger_block(oracle="pytest -q \\ud800"))
    result = cc.pre("Edit", EDIT)
    _sane(result)
    assert result.code == 2 or denial_reason(result) is not None, result.err[-300:]
    start = cc.hook("SessionStart", source="resume")
    _sane(start)

"""The Claude Code command hook, run as the installed executable on real JSON payloads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hook_session import EXE, LEDGER, ORACLE, Session

from infomark.gatekeeper import Gatekeeper


@pytest.fixture
def cc(project: Path) -> Session:
    return Session(project)


def _deny(out: Any) -> str:
    assert out is not None
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse" and spec["permissionDecision"] == "deny"
    return str(spec["permissionDecisionReason"])


def test_session_start_injects_the_protocol(cc: Session) -> None:
    code, out, _ = cc.hook("SessionStart", source="startup")
    assert code == 0
    ctx = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "claim_ledger" in ctx and "oracle_stamp" in ctx


@pytest.mark.parametrize("attested", [True, False])
def test_session_start_in_verify_asks_no_protocol_and_names_the_checks(
    project: Path, attested: bool
) -> None:
    """The verify profile asks no protocol: the agent is told how its finish is judged."""
    (project / "infomark.toml").write_text(
        f'profile = "verify"\n[attest]\nrequired = {str(attested).lower()}\n'
    )
    (project / "test_calc.py").write_text("def test_one():\n    assert True\n")
    code, out, _ = Session(project).hook("SessionStart", source="startup")
    assert code == 0
    ctx = out["hookSpecificOutput"]["additionalContext"]
    assert "claim_ledger" not in ctx and "oracle_stamp" not in ctx
    assert ctx.startswith("infomark is on (verify profile)")
    assert "`pytest -q`" in ctx
    assert ("infomark runs them itself" in ctx) is attested
    assert ("run them after your last change" in ctx) is not attested


def test_ungrounded_edit_is_denied_with_the_exact_shape(cc: Session) -> None:
    cc.say(LEDGER, tool_use_id="tu_1")
    code, out, _ = cc.tool(
        "Edit",
        {"file_path": str(cc.project / "p.py"), "old_string": "a", "new_string": "b"},
        "tu_1",
    )
    assert code == 0
    assert set(out) == {"hookSpecificOutput"}
    assert set(out["hookSpecificOutput"]) == {
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
    }
    reason = _deny(out)
    assert "C1 (Hypothetical" in reason and ORACLE in reason


def test_bash_sed_i_is_denied_while_ungrounded(cc: Session) -> None:
    cc.say(LEDGER, tool_use_id="tu_1")
    _, out, _ = cc.tool("Bash", {"command": "sed -i 's/a/b/' parser.py"}, "tu_1")
    assert "C1" in _deny(out)


def test_read_is_allowed_silently(cc: Session) -> None:
    cc.say(LEDGER, tool_use_id="tu_1")
    code, out, _err = cc.tool("Read", {"file_path": str(cc.project / "p.py")}, "tu_1")
    assert (code, out) == (0, None)


def _post_bash(cc: Session, command: str, use_id: str, failed: bool = False) -> str:
    # PreToolUse first, as Claude Code sends it: the record pairs with it by tool_use_id.
    pre, _, _ = cc.hook(
        "PreToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=use_id
    )
    assert pre == 0
    if failed:
        code, out, _ = cc.hook(
            "PostToolUseFailure",
            tool_name="Bash",
            tool_input={"command": command},
            tool_use_id=use_id,
            error="Exit code 1\nFAILED tests/test_p.py::test_x",
        )
    else:
        code, out, _ = cc.hook(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": command},
            tool_use_id=use_id,
            tool_response={
                "stdout": "3 passed",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            },
        )
    assert code == 0
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == ("PostToolUseFailure" if failed else "PostToolUse")
    ctx = str(spec["additionalContext"])
    assert ctx.startswith("[infomark evidence_ref=ev_")
    return ctx.split("evidence_ref=")[1].split()[0]


def test_post_tool_use_records_pass_and_failure_records_fail(cc: Session) -> None:
    ok = _post_bash(cc, ORACLE, "tu_1")
    bad = _post_bash(cc, ORACLE, "tu_2", failed=True)
    with Gatekeeper.open(cc.project / ".infomark", cc.sid, root=cc.project) as gk:
        assert gk.evidence(ok).outcome.value == "PASS"  # type: ignore[union-attr]
        failed = gk.evidence(bad)
        assert failed is not None and failed.outcome.value == "FAIL" and failed.exit_code == 1


def test_full_loop_stamp_unblocks_then_stale_stop_then_allowed(cc: Session) -> None:
    from helpers import OWN_RUNS_TOML

    # the hook's stamp / stale / finish loop on the agent's own runs (the opt-out); under the
    # default, tests/security/test_attest_default.py
    (cc.project / "infomark.toml").write_text(OWN_RUNS_TOML)
    cc.say(LEDGER, tool_use_id="tu_1")
    assert _deny(cc.tool("Edit", {"file_path": "p.py"}, "tu_1")[1])
    cc.say("Running the oracle.", tool_use_id="tu_2")
    assert cc.tool("Bash", {"command": ORACLE}, "tu_2")[1] is None
    ref = _post_bash(cc, ORACLE, "tu_2")
    cc.say(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS", tool_use_id="tu_3")
    code, out, _ = cc.tool(
        "Edit", {"file_path": "p.py", "old_string": "a", "new_string": "b"}, "tu_3"
    )
    assert (code, out) == (0, None)  # grounded: allowed, silently
    cc.hook(
        "PostToolUse",
        tool_name="Edit",
        tool_input={"file_path": "p.py", "old_string": "a", "new_string": "b"},  # as authorized
        tool_use_id="tu_3",
        tool_response={"filePath": "p.py", "success": True},
    )
    code, out, _ = cc.hook("Stop", stop_hook_active=False, last_assistant_message="Done.")
    assert code == 0 and out["decision"] == "block" and "re-run" in out["reason"]
    cc.say("Re-running.", tool_use_id="tu_4")
    assert cc.tool("Bash", {"command": ORACLE}, "tu_4")[1] is None
    ref2 = _post_bash(cc, ORACLE, "tu_4")
    final = f"Done.\n\noracle_stamp: claim_id=C1 evidence_ref={ref2} result=PASS"
    code, out, _ = cc.hook("Stop", stop_hook_active=True, last_assistant_message=final)
    assert (code, out) == (0, None)


def test_stop_block_cap_never_traps_the_session(cc: Session) -> None:
    answers = [
        cc.hook("Stop", stop_hook_active=i > 0, last_assistant_message="Done.")[1] for i in range(4)
    ]
    assert [a is not None and a.get("decision") == "block" for a in answers] == [
        True,
        True,
        True,
        False,
    ]


def test_user_prompt_approval_phrase_records_approval(cc: Session) -> None:
    code, _out, _ = cc.hook("UserPromptSubmit", prompt="approve — go ahead")
    assert code == 0
    with Gatekeeper.open(cc.project / ".infomark", cc.sid, root=cc.project) as gk:
        assert any(e.type == "approval" and e.payload["by"] == "user" for e in gk.events())


@pytest.mark.parametrize("raw", ["", "not json", "[1, 2]", '{"hook_event_name": 3}', "\x00\xff"])
def test_malformed_stdin_fails_closed_with_a_message_not_a_crash(cc: Session, raw: str) -> None:
    """Unreadable input: the event is unknown, so exit 2 blocks whatever can be blocked."""
    code, out, err = cc.hook("PreToolUse", raw=raw)
    assert (code, out) == (2, None)
    assert "not a usable Claude Code payload" in err and "Traceback" not in err


def test_observe_profile_ignores_bad_input_and_says_so(cc: Session) -> None:
    (cc.project / "infomark.toml").write_text('profile = "observe"\n')
    code, out, err = cc.hook("PreToolUse", raw="{broken")
    assert (code, out) == (0, None) and "failing open (observe profile)" in err


def test_a_broken_payload_whose_event_is_visible_gets_a_deny(cc: Session) -> None:
    code, out, _ = cc.hook("PreToolUse", raw='{"hook_event_name": "PreToolUse", "tool_in')
    assert code == 0 and out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "not usable JSON" in out["hookSpecificOutput"]["permissionDecisionReason"]


def test_unknown_event_is_no_opinion(cc: Session) -> None:
    assert cc.hook("Notification", message="hi")[:2] == (0, None)


def test_transcript_text_is_ingested_once(cc: Session) -> None:
    cc.say(LEDGER, tool_use_id="tu_1")
    cc.tool("Read", {"file_path": "x"}, "tu_1")
    cc.tool("Read", {"file_path": "y"}, "tu_1")
    with Gatekeeper.open(cc.project / ".infomark", cc.sid, root=cc.project) as gk:
        ledgers = [e for e in gk.events() if e.type == "ledger_replaced"]
    assert len(ledgers) == 1


def test_broken_config_denies_mutations_instead_of_failing_open(cc: Session) -> None:
    (cc.project / "infomark.toml").write_text('profile = "off"\n')
    _, out, err = cc.tool("Edit", {"file_path": "p.py"}, "tu_1")
    assert "configuration is invalid" in _deny(out) and "profile" in _deny(out)
    code, out, err = cc.tool("Read", {"file_path": "p.py"}, "tu_2")
    assert (code, out) == (0, None) and "invalid configuration" in err


def test_explicit_root_wins_over_payload_cwd(cc: Session, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    payload = {
        "session_id": "r",
        "transcript_path": "",
        "cwd": str(other),
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "x"},
        "tool_use_id": "t",
    }
    subprocess.run(
        [EXE, "hook", "claude-code", "--root", str(cc.project)],
        input=json.dumps(payload),
        text=True,
        capture_output=True,
        check=True,
        cwd=other,
    )
    assert (cc.project / ".infomark" / "ledger.db").exists()
    assert not (other / ".infomark").exists()


def test_non_finite_numbers_in_a_tool_input_are_recorded_as_strings(
    tmp_path: Path,
) -> None:
    """json.loads accepts Infinity/NaN; evidence is strict JSON (found by the hook fuzz test)."""
    from infomark.tools.hooks.claude_code import handle

    payload = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"x": float("inf")},
    }
    answer = handle(payload, home=tmp_path / ".infomark", root=tmp_path)
    assert answer.exit_code == 0 and "internal error" not in answer.stderr, answer.stderr

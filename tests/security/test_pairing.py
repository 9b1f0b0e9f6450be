"""§1: evidence exists only for tool calls infomark saw authorized and completed.

Reproduced on main: the agent ran `infomark record …` from its own Bash tool (or POSTed
/record with the token it read) and got a PASS ref for a suite that never ran.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import OWN_RUNS_TOML, ledger_text, observed, stamp
from hook_session import EXE, Session

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import RecordRefused
from infomark.ledger.calls import ToolCall, ToolOutcome

PYTEST = ToolCall("Bash", {"command": "pytest -q"})
PASSED = ToolOutcome("3 passed", exit_code=0)


def _types(gk: Gatekeeper) -> list[str]:
    return [e.type for e in gk.events()]


def test_a_record_without_an_authorization_is_refused_and_journaled(gk: Gatekeeper) -> None:
    with pytest.raises(RecordRefused) as info:
        gk.record(PYTEST, PASSED)
    assert info.value.code == "unpaired_record"
    assert "evidence_recorded" not in _types(gk)
    refused = [e.payload for e in gk.events() if e.type == "record_refused"]
    assert refused and refused[0]["reason"] == "unpaired_record"
    assert refused[0]["tool"] == "Bash" and refused[0]["exit_code"] == 0


@pytest.mark.parametrize("call_id", ["made-up", "", "call_0000000000000000", "toolu_01ABC"])
def test_a_guessed_call_id_is_refused(gk: Gatekeeper, call_id: str) -> None:
    gk.authorize(ToolCall("Bash", {"command": "ls"}))  # a real, different pending call
    with pytest.raises(RecordRefused):
        gk.record(PYTEST, PASSED, call_id=call_id)
    assert "evidence_recorded" not in _types(gk)


def test_the_record_must_match_the_authorized_tool_and_input(gk: Gatekeeper) -> None:
    decision = gk.authorize(ToolCall("Bash", {"command": "ls"}))
    for forged in (PYTEST, ToolCall("Read", {"command": "ls"})):
        with pytest.raises(RecordRefused) as info:
            gk.record(forged, PASSED, call_id=decision.call_id)
        assert info.value.code == "unpaired_record"
    # the legitimate result still pairs afterwards
    ev = gk.record(ToolCall("Bash", {"command": "ls"}), PASSED, call_id=decision.call_id)
    assert ev.ref.startswith("ev_")


def test_a_call_is_recorded_once(gk: Gatekeeper) -> None:
    decision = gk.authorize(PYTEST)
    gk.record(PYTEST, ToolOutcome("1 failed", exit_code=1), call_id=decision.call_id)
    with pytest.raises(RecordRefused) as info:  # a forged PASS racing the real FAIL
        gk.record(PYTEST, PASSED, call_id=decision.call_id)
    assert info.value.code == "repeated_record"
    assert _types(gk).count("evidence_recorded") == 1


def test_a_denied_call_cannot_be_recorded(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",)))
    edit = ToolCall("Edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"})
    decision = gk.authorize(edit)
    assert not decision.allowed
    with pytest.raises(RecordRefused):
        gk.record(edit, ToolOutcome("edited"), call_id=decision.call_id)
    assert gk.state.last_modify_seq == 0


def test_the_host_tool_use_id_is_the_call_id(gk: Gatekeeper) -> None:
    call = ToolCall("Bash", {"command": "pytest -q"}, tool_call_id="toolu_42")
    assert gk.authorize(call).call_id == "toolu_42"
    assert gk.record(call, PASSED).record["call_id"] == "toolu_42"


def _cli(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args, "--home", str(home), "--session", "s1"],
        capture_output=True,
        text=True,
        cwd=home.parent,
        env={**os.environ, **(env or {})},
        input="3 passed",
        check=False,
    )


def test_the_cli_record_forgery_yields_no_evidence(gk: Gatekeeper, home: Path) -> None:
    gk.ingest(ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",)))
    proc = _cli(
        home, "record", "--tool", "Bash", "--input", '{"command":"pytest -q"}', "--exit-code", "0"
    )
    assert proc.returncode == 2 and "unpaired_record" not in proc.stdout
    assert "never authorized" in proc.stderr or "names no authorized call" in proc.stderr
    assert "Traceback" not in proc.stderr
    with Gatekeeper.open(home, "s1", root=home.parent) as again:
        assert [e.type for e in again.events()].count("evidence_recorded") == 0
        assert [e.type for e in again.events()].count("record_refused") == 1


def test_the_cli_pairs_authorize_and_record(home: Path) -> None:
    home.parent.mkdir(exist_ok=True)
    decided = _cli(
        home, "authorize", "--tool", "Bash", "--input", '{"command":"pytest -q"}', "--json"
    )
    call_id = json.loads(decided.stdout)["call_id"]
    rec = _cli(
        home,
        "record",
        "--tool",
        "Bash",
        "--input",
        '{"command":"pytest -q"}',
        "--call-id",
        call_id,
        "--exit-code",
        "0",
        "--json",
    )
    assert rec.returncode == 0, rec.stderr
    assert json.loads(rec.stdout)["outcome"] == "PASS"


def test_approve_is_refused_inside_an_agent_tool_call(home: Path) -> None:
    home.parent.mkdir(exist_ok=True)
    for env in ({"CLAUDECODE": "1"}, {}):  # Claude Code's Bash tool; or simply no terminal
        proc = _cli(home, "approve", env=env)
        assert proc.returncode == 2
        assert "operator act" in proc.stderr and "Traceback" not in proc.stderr
    with Gatekeeper.open(home, "s1", root=home.parent) as gk:
        assert "approval" not in [e.type for e in gk.events()]


# -- through the real hook command ---------------------------------------------------------


def test_a_post_tool_use_without_its_pre_tool_use_is_no_evidence(project: Path) -> None:
    cc = Session(project)
    code, out, _ = cc.hook(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "pytest -q"},
        tool_use_id="toolu_forged",
        tool_response={"stdout": "3 passed", "stderr": "", "interrupted": False},
    )
    assert code == 0
    ctx = out["hookSpecificOutput"]["additionalContext"]
    assert "no evidence" in ctx and "unpaired_record" in ctx and "evidence_ref=ev_" not in ctx


def test_a_background_run_has_no_outcome(project: Path) -> None:
    cc = Session(project)
    cc.say(ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",)), tool_use_id="tu_1")
    cmd = {"command": "pytest -q", "run_in_background": True}
    assert cc.tool("Bash", cmd, "tu_1")[1] is None
    _, out, _ = cc.hook(
        "PostToolUse",
        tool_name="Bash",
        tool_input=cmd,
        tool_use_id="tu_1",
        tool_response={"stdout": "", "stderr": "", "backgroundTaskId": "bash_1"},
    )
    tag = out["hookSpecificOutput"]["additionalContext"]
    assert "eligible=none" in tag  # the suite is still running: nothing to stamp yet
    ref = tag.split("evidence_ref=")[1].split()[0]
    cc.say(stamp("C1", ref), tool_use_id="tu_2")
    cc.tool("Read", {"file_path": "x"}, "tu_2")
    with Gatekeeper.open(project / ".infomark", cc.sid, root=project) as gk:
        rejected = [e.payload for e in gk.events() if e.type == "stamp_rejected"]
        assert [r["reason"] for r in rejected] == ["background_run"]
        assert gk.ledger().status("C1") == "Guess"


def test_wrap_pairs_every_call(gk: Gatekeeper) -> None:
    calls: list[ToolCall] = []

    def executor(call: ToolCall) -> ToolOutcome:
        calls.append(call)
        return PASSED

    ran = gk.wrap(executor)(PYTEST)
    assert "evidence_ref=ev_" in str(ran.output)
    evidence = [e.payload["record"] for e in gk.events() if e.type == "evidence_recorded"]
    decisions = [e.payload for e in gk.events() if e.type == "decision"]
    assert evidence[0]["call_id"] == decisions[0]["call_id"] != ""
    assert observed(gk, PYTEST, PASSED).record["call_id"] != evidence[0]["call_id"]
    assert EXE  # the hook executable the Session tests drive exists


@pytest.mark.parametrize(("code", "outcome"), [(1, "FAIL"), (0, "PASS")])
def test_a_background_run_is_graded_by_its_observed_exit_status(
    project: Path, code: int, outcome: str
) -> None:
    (project / "infomark.toml").write_text(OWN_RUNS_TOML)  # the pairing, not attested grounding
    cc = Session(project)
    cc.say(ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",)), tool_use_id="tu_1")
    cmd = {"command": "pytest -q", "run_in_background": True}
    cc.tool("Bash", cmd, "tu_1")
    cc.hook(
        "PostToolUse",
        tool_name="Bash",
        tool_input=cmd,
        tool_use_id="tu_1",
        tool_response={"stdout": "", "stderr": "", "backgroundTaskId": "bash_7"},
    )
    read = {"bash_id": "bash_7"}
    cc.tool("BashOutput", read, "tu_2")
    _, out, _ = cc.hook(
        "PostToolUse",
        tool_name="BashOutput",
        tool_input=read,
        tool_use_id="tu_2",
        tool_response={"status": "completed", "exitCode": code, "stdout": "1 failed"},
    )
    tag = out["hookSpecificOutput"]["additionalContext"]
    assert f"outcome={outcome} eligible=oracle_stamp" in tag
    ref = tag.split("evidence_ref=")[1].split()[0]
    cc.say(stamp("C1", ref), tool_use_id="tu_3")
    cc.tool("Read", {"file_path": "x"}, "tu_3")
    with Gatekeeper.open(project / ".infomark", cc.sid, root=project) as gk:
        assert gk.evidence(ref) is not None and gk.evidence(ref).command == "pytest -q"  # type: ignore[union-attr]
        assert gk.ledger().status("C1") == ("Exact" if code == 0 else "Guess")

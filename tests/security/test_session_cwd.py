"""Issue 12: shell paths resolve from the session's cwd (the host's), not this process's.

Every test here runs with this process's cwd (the repository) different from the session's
cwd (a directory inside a temp project), through the real hook process and the Python API.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rel_hook import HookSession, denial_reason, run_hook

from infomark.gatekeeper import Gatekeeper
from infomark.gates.classify import classify_tool
from infomark.ledger.calls import ToolCall


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "sub" / "deeper").mkdir(parents=True)
    return root


def test_the_process_cwd_is_not_the_session_cwd(project: Path) -> None:
    assert Path.cwd().resolve() != (project / "sub").resolve()


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", {"command": "cat ../.infomark/key"}),
        ("Bash", {"command": "cd .. && cat .infomark/key"}),
        ("Bash", {"command": "cat ../../.infomark/key"}),  # from sub/deeper below
        ("Bash", {"command": "grep -r key .."}),
        ("Read", {"file_path": "../.infomark/key"}),
    ],
)
def test_the_home_is_found_from_the_session_cwd(
    project: Path, tool: str, tool_input: dict[str, str]
) -> None:
    cwd = project / "sub" / ("deeper" if "../../" in str(tool_input) else "")
    with Gatekeeper.open(project / ".infomark", "cwd", root=project) as gk:
        decision = gk.authorize(ToolCall(tool, tool_input, cwd=str(cwd)))
        assert decision.code == "protected_home", (tool_input, decision.reason)


def test_a_name_that_is_the_home_only_from_the_root_is_not_denied(project: Path) -> None:
    """`cat .infomark/key` in sub/ names sub/.infomark/key, not the home: no false alarm once
    the host says where the shell is."""
    with Gatekeeper.open(project / ".infomark", "cwd", root=project) as gk:
        call = ToolCall("Bash", {"command": "cat .infomark/key"}, cwd=str(project / "sub"))
        assert gk.authorize(call).code != "protected_home"
        unknown = ToolCall("Bash", {"command": "cat .infomark/key"})  # no cwd: root counts too
        assert gk.authorize(unknown).code == "protected_home"


def test_classify_tool_resolves_shell_paths_from_cwd(project: Path) -> None:
    c = classify_tool("Bash", {"command": "cat ../a.txt"}, cwd=str(project / "sub"))
    assert str(project / "a.txt") in c.paths
    assert not any(p.startswith(os.getcwd() + os.sep) for p in c.paths)


def test_an_unusable_cwd_falls_back_to_both_readings(project: Path) -> None:
    with Gatekeeper.open(project / ".infomark", "cwd", root=project) as gk:
        for cwd in ("relative/dir", "/bad\x00path", ""):
            call = ToolCall("Bash", {"command": "cat .infomark/key"}, cwd=cwd)
            assert gk.authorize(call).code == "protected_home", cwd


def test_the_hook_takes_the_payload_cwd(tmp_path: Path) -> None:
    """Claude Code sets $CLAUDE_PROJECT_DIR for hooks; the payload's cwd is where the Bash
    tool's shell is (it follows the agent's `cd`)."""
    cc = HookSession(tmp_path)
    assert cc.hook("SessionStart", source="startup").code == 0
    sub = tmp_path / "sub"
    sub.mkdir()
    command = {"command": "cat ../.infomark/key"}
    payload = cc.payload("PreToolUse", tool_name="Bash", tool_input=command, cwd=str(sub))
    result = run_hook(json.dumps(payload).encode(), tmp_path, CLAUDE_PROJECT_DIR=str(tmp_path))
    reason = denial_reason(result)
    assert reason is not None and "ledger home" in reason, result
    # the same command from the project root names a file outside it
    payload = cc.payload("PreToolUse", tool_name="Bash", tool_input=command)
    result = run_hook(json.dumps(payload).encode(), tmp_path, CLAUDE_PROJECT_DIR=str(tmp_path))
    assert "ledger home" not in (denial_reason(result) or "")

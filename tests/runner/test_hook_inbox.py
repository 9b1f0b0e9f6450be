"""Claude Code sessions get an inbox: the real hook command, fed real JSON, checks the session
in and delivers `infomark send` messages as additionalContext; SessionEnd closes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.runner.conftest import events
from tests.tools.hook_session import Session


def _send(project: Path, session: str, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infomark", "send", "--session", session, text],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _context(out: object) -> str:
    assert isinstance(out, dict)
    return str(out["hookSpecificOutput"]["additionalContext"])


def test_claude_code_session_inbox_delivers_at_the_next_prompt_and_tool_result(
    project: Path, home: Path
) -> None:
    s = Session(project, "cc-1")
    assert _send(project, "cc-1", "too early").returncode == 3  # no hook has checked in yet
    code, out, _ = s.hook("SessionStart", source="startup")
    assert code == 0
    assert _send(project, "cc-1", "please also update the changelog").returncode == 0
    code, out, _ = s.hook("UserPromptSubmit", prompt="fix the parser")
    assert code == 0 and "please also update the changelog" in _context(out)
    assert "[operator message from operator via infomark send" in _context(out)

    assert _send(project, "cc-1", "and run the slow tests").returncode == 0
    code, out, _ = s.tool("Read", {"file_path": "a.py"}, "tu1")
    assert code == 0 and out is None  # PreToolUse: the decision path is unchanged
    code, out, _ = s.hook(
        "PostToolUse", tool_name="Read", tool_input={"file_path": "a.py"}, tool_use_id="tu1",
        tool_response={"type": "text", "file": {"content": "x"}},
    )  # fmt: skip
    text = _context(out)
    assert "evidence_ref=" in text and "and run the slow tests" in text  # tag kept, note added

    code, out, _ = s.hook("SessionEnd", reason="exit")
    refused = _send(project, "cc-1", "after the end")
    assert refused.returncode == 3 and "finished" in refused.stderr
    rows = events(home, "cc-1")
    kinds = [t for _, t, _ in rows]
    assert kinds.count("inbox_delivered") == 2 and kinds.count("inbox_read") == 2
    assert [p["reason"] for _, t, p in rows if t == "inbox_refused"] == [
        "never_had_inbox",
        "finished",
    ]
    assert [p["where"] for _, t, p in rows if t == "inbox_read"] == [
        "UserPromptSubmit",
        "PostToolUse",
    ]

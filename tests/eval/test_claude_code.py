"""The translation between Claude Code's Messages API requests and the scripted agent's chat
turns (``--agent claude-code``), on requests shaped as Claude Code 2.1.328 sends them; the run
through the real binary is ``tests/e2e/test_eval_claude_code_e2e.py``."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from infomark.kernel.errors import UserError
from infomark.tools.eval.agents import Feedback
from infomark.tools.eval.anthropic_stub import MessagesRequest
from infomark.tools.eval.claude_code import Translator, allowed_commands, claude_binary
from infomark.tools.eval.suite import load_suite
from infomark.tools.runner.scripted import Request, call, reply

SUITE = Path(__file__).resolve().parents[2] / "evals" / "suite"
REF1, REF2 = "ev_" + "1" * 24, "ev_" + "2" * 24


def _req(messages: list[dict[str, Any]], system: str = "You are Claude Code.") -> MessagesRequest:
    return MessagesRequest(0, "POST", "/v1/messages", {}, {"system": system, "messages": messages})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _result(use_id: str, content: str, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content, "is_error": is_error}


def _user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _tag(ref: str, outcome: str) -> str:
    return f"[infomark evidence_ref={ref} tool=Bash outcome={outcome} eligible=oracle_stamp]"


class _Agent:
    def __init__(self, *answers: Mapping[str, Any]) -> None:
        self.answers = list(answers)
        self.seen: list[Request] = []

    def __call__(self, req: Request) -> Mapping[str, Any]:
        self.seen.append(req)
        return self.answers.pop(0)


def test_hook_answers_reach_the_agent_as_the_runner_would_give_them(tmp_path: Path) -> None:
    agent = _Agent(reply("ok"))
    t = Translator(tmp_path, "s1", agent)
    uses = [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "python3 t.py"}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "grep -n x a"}},
        {"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "/p/a"}},
    ]
    contexts = (
        f"PostToolUseFailure:Bash hook additional context: {_tag(REF1, 'FAIL')}\n\n"
        f"PostToolUse:Bash hook additional context: {_tag(REF2, 'PASS')}\n"
        "[infomark:pack repeated_failures] Stop repeating."
    )
    denied = "PreToolUse:Edit hook error: modify denied: premises outside G"
    req = _req(
        [
            _user(_text("Fix it."), _text("SessionStart hook additional context: # infomark")),
            {"role": "assistant", "content": [_text("claim_ledger: …"), *uses]},
            # results and the hook contexts come as separate user messages, two contexts in
            # one text block
            _user(
                _result("t1", "Exit code 1", True),
                _result("t2", "1:x"),
                _result("t3", denied, True),
            ),
            _user(_text(contexts)),
            _user(_text("Stop hook feedback:\nRun the test.")),
        ]
    )
    assert t(req).text == "ok"
    (seen,) = agent.seen
    fb = Feedback.of(seen)
    assert fb.refs == [REF1, REF2] and fb.outcomes == ["FAIL", "PASS"] and not fb.passed
    assert fb.results[0].startswith("Exit code 1\n[infomark evidence_ref=" + REF1)
    assert fb.results[2] == "[infomark denied: pre_tool_use] modify denied: premises outside G"
    assert fb.denied and fb.packs() == {"repeated_failures"}
    assert fb.refused == "stop_hook" and fb.operator[-1].endswith("Run the test.")
    assert "# infomark" in fb.system and "You are Claude Code." in fb.system
    calls = [c["function"]["name"] for c in seen.messages[2]["tool_calls"]]
    assert calls == ["bash", "bash", "edit"] and seen.messages[1]["content"] == "Fix it."


def test_replies_become_claude_code_tools_and_an_unread_file_is_read_first(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text("return a - b\n")
    edit = call("edit", file_path="calc.py", old_string="a - b", new_string="a + b")
    agent = _Agent(
        reply("", call("read", file_path=".")),
        reply("stamp", edit, call("bash", command="python3 t.py")),
        reply("", call("read", file_path="calc.py")),
        reply("again", edit),
    )
    t = Translator(tmp_path, "s1", agent)
    first = t(_req([{"role": "user", "content": "Fix it."}]))
    assert [(c.name, dict(c.input)) for c in first.tool_calls] == [
        ("Glob", {"pattern": "*", "path": str(tmp_path)})
    ]
    extra = t(_req([]))  # the edit of an unread file: Claude Code refuses it unless read first
    assert [(c.name, c.input["file_path"]) for c in extra.tool_calls] == [
        ("Read", str(tmp_path / "calc.py"))
    ]
    queued = t(_req([]))  # answered without asking the agent again
    assert len(agent.seen) == 2 and queued.text == "stamp"
    assert [c.name for c in queued.tool_calls] == ["Edit", "Bash"]
    assert dict(queued.tool_calls[0].input) == {
        "file_path": str(tmp_path / "calc.py"),
        "old_string": "a - b",
        "new_string": "a + b",
    }
    assert queued.tool_calls[1].input["command"] == "python3 t.py"
    assert t(_req([])).tool_calls[0].name == "Read"
    assert t(_req([])).text == "again" and len(agent.seen) == 4  # read already: no extra turn


def test_the_allowed_commands_are_exactly_the_scripts() -> None:
    (task,) = load_suite(SUITE, only=("py-add",)).tasks
    rules = allowed_commands(task)
    assert "Bash(python3 test_calc.py)" in rules and "Bash(python3 test_calc.py || true)" in rules
    assert "Bash(grep -n 'def add' calc.py)" in rules and "Bash(make test)" in rules
    assert len(rules) == len(set(rules)) and all(r.startswith("Bash(") for r in rules)
    assert json.dumps(rules).count("*") == 0  # no wildcard admits other commands


def test_the_binary_must_be_an_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INFOMARK_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="no Claude Code binary"):
        claude_binary("claude-code")
    plain = tmp_path / "claude"
    plain.write_text("#!/bin/sh\n")
    with pytest.raises(UserError, match="not an executable file"):
        claude_binary(f"claude-code:{plain}")
    plain.chmod(plain.stat().st_mode | stat.S_IXUSR)
    assert claude_binary("claude-code") == plain  # found on PATH
    monkeypatch.setenv("INFOMARK_CLAUDE_BIN", os.devnull)
    with pytest.raises(UserError, match="INFOMARK_CLAUDE_BIN"):
        claude_binary("claude-code")

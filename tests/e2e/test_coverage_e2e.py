"""Gate coverage through the real Claude Code CLI (issue 12): a script the agent wrote edits a
tracked file while the premise is ungrounded, and an MCP tool infomark does not know."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper

from .anthropic_stub import AnthropicStub, MessagesRequest, Reply, Step, ToolCall
from .claude_harness import result_json, run_claude
from .scripts_infomark import BUGGY_BODY, FIXED_BODY, install_hooks, oracle_env, write_project

_UNGROUNDED = """I suspect the split is the problem.

claim_ledger:
  claims:
    - id: C1
      text: "parse() keeps the blanks because it only splits"
      status: Guess
      falsifier: "parse(' a') returns ['a']"
      oracle: "python3 test_parser.py"
  premises_for_plan: [C1]
"""
_FIX = f"""from pathlib import Path

p = Path("parser.py")
p.write_text(p.read_text().replace({BUGGY_BODY!r}, {FIXED_BODY!r}))
"""
_GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def _git_project(project: Path) -> Path:
    parser = write_project(project)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=project, env=_GIT_ENV, check=True, capture_output=True)
    return parser


def _stop_replies(n: int) -> list[Step]:
    """Answers to Stop refusals (the premise stays ungrounded) until the refusal cap lets go."""
    return [Reply(text=f"I could not ground C1 ({i}).") for i in range(n)]


@pytest.mark.e2e
def test_a_script_that_edits_a_tracked_file_while_ungrounded_is_caught_and_reported(
    claude_bin: Path, tmp_path: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    parser = _git_project(project)
    install_hooks(project)
    seen: dict[str, MessagesRequest] = {}

    def after_run(request: MessagesRequest) -> Reply:
        seen["after_run"] = request
        return Reply(
            text="Let me look at the parser.",
            tool_calls=(ToolCall("Read", {"file_path": str(parser)}, id="toolu_read"),),
        )

    def after_read(request: MessagesRequest) -> Reply:
        edit = {"file_path": str(parser), "old_string": FIXED_BODY, "new_string": BUGGY_BODY}
        return Reply(text="Editing.", tool_calls=(ToolCall("Edit", edit, id="toolu_edit"),))

    def after_edit(request: MessagesRequest) -> Reply:
        seen["after_edit"] = request
        return Reply(text="The edit was denied; stopping here.")

    script: list[Step] = [
        Reply(
            text=_UNGROUNDED,
            tool_calls=(
                ToolCall(
                    "Write", {"file_path": str(project / "fix.py"), "content": _FIX}, id="toolu_w"
                ),
            ),
        ),
        Reply(
            text="Running my script.",
            tool_calls=(ToolCall("Bash", {"command": "python3 fix.py"}, id="toolu_run"),),
        ),
        after_run,
        after_read,
        after_edit,
        *_stop_replies(3),
    ]
    with AnthropicStub(script) as stub:
        proc = run_claude(
            project,
            "Fix parse() so fields lose surrounding blanks.",
            stub,
            claude_bin=claude_bin,
            home=home,
            extra_env=oracle_env(),
            extra_args=["--allowedTools", "Bash(python3 fix.py)"],
        )
    stub.check(complete=True)
    result = result_json(proc)
    assert proc.returncode == 0, proc.stderr

    # the script ran (scratch run: the agent's own file, watched) and did edit parser.py ...
    assert FIXED_BODY in parser.read_text(encoding="utf-8")
    # ... and the model was told, in the Bash result's hook context, with the way back
    told = "\n".join(seen["after_run"].texts())
    assert "unannounced_mutation" in told and "parser.py" in told, told
    assert "git checkout -- parser.py" in told
    # the next mutation was denied for that reason
    (denied,) = seen["after_edit"].tool_results()
    assert denied.tool_use_id == "toolu_edit" and denied.is_error
    assert "unannounced_mutation" in denied.content or "earlier run changed" in denied.content
    assert [d["tool_use_id"] for d in result["permission_denials"]] == ["toolu_edit"]

    with Gatekeeper.open(project / ".infomark", str(result["session_id"]), root=project) as gk:
        events = [(e.type, e.payload) for e in gk.events()]
    decisions = [(p["tool"], p["code"]) for t, p in events if t == "decision"]
    assert decisions[:4] == [
        ("Write", "scratch"),
        ("Bash", "scratch"),
        ("Read", "allowed"),
        ("Edit", "unannounced_mutation"),
    ], decisions
    (mutation,) = [p for t, p in events if t == "unannounced_mutation"]
    assert mutation["files"] == ["parser.py"] and mutation["violation"] is True


@pytest.mark.e2e
def test_an_unknown_mcp_tool_is_denied_while_ungrounded(claude_bin: Path, tmp_path: Path) -> None:
    project, home, notes = tmp_path / "project", tmp_path / "home", tmp_path / "notes"
    for d in (project, home, notes):
        d.mkdir()
    install_hooks(project)
    server = Path(__file__).resolve().parents[1] / "tools" / "mcp_downstream_server.py"
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {"command": sys.executable, "args": [str(server), str(notes)]}
                }
            }
        ),
        encoding="utf-8",
    )
    seen: dict[str, MessagesRequest] = {}

    def after_call(request: MessagesRequest) -> Reply:
        seen["after_call"] = request
        return Reply(text="Denied; I will ground C1 first.")

    call = ToolCall("mcp__notes__write_note", {"name": "a.txt", "text": "x"}, id="toolu_mcp")
    with AnthropicStub(
        [Reply(text=_UNGROUNDED, tool_calls=(call,)), after_call, *_stop_replies(3)]
    ) as stub:
        proc = run_claude(
            project,
            "Write a note.",
            stub,
            claude_bin=claude_bin,
            home=home,
            extra_args=[
                "--mcp-config",
                str(config),
                "--strict-mcp-config",
                "--allowedTools",
                "mcp__notes__write_note",
            ],
        )
    stub.check(complete=True)
    result = result_json(proc)
    assert proc.returncode == 0, proc.stderr
    (denied,) = seen["after_call"].tool_results()
    assert denied.tool_use_id == "toolu_mcp" and denied.is_error
    assert "[tools]" in denied.content and "C1" in denied.content, denied.content
    assert not (notes / "a.txt").exists()
    with Gatekeeper.open(project / ".infomark", str(result["session_id"]), root=project) as gk:
        (decision,) = [e.payload for e in gk.events() if e.type == "decision"]
    assert decision["tool_class"] == "unknown" and decision["code"] == "ungrounded_premises"

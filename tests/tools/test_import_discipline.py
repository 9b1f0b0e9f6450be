"""The decision path imports only the standard library (plus tree-sitter for shell)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "lark",
    "pydantic",
    "sqlite_utils",
    "httpx",
    "click",
    "rich",
    "starlette",
    "uvicorn",
    "mcp",
    "cryptography",
    "anyio",
)

_SCRIPT = """
import io, json, sys
payload = json.loads(sys.argv[1])
sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode()))
from infomark.cli.entry import main
out = io.StringIO(); real = sys.stdout; sys.stdout = out
code = main(["hook", "claude-code"])
sys.stdout = real
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run(project: Path, payload: dict[str, object]) -> dict[str, object]:
    payload = {"session_id": "imp", "cwd": str(project), "transcript_path": "", **payload}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(payload)],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _heavy(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "a"}},
        {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"file_path": "a"}},
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "a"},
            "tool_response": {"type": "text"},
        },
        {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "ok"},
    ],
)
def test_hook_decision_path_imports_no_heavy_dependency(
    project: Path, payload: dict[str, object]
) -> None:
    result = _run(project, payload)
    assert result["code"] == 0
    assert _heavy(result["modules"]) == []


def test_bash_adds_only_tree_sitter(project: Path) -> None:
    result = _run(
        project,
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "sed -i s/a/b/ x.py"},
        },
    )
    modules = result["modules"]
    assert _heavy(modules) == []
    assert isinstance(modules, list) and "tree_sitter_bash" in modules


def test_parser_loads_only_when_text_holds_a_block(project: Path) -> None:
    transcript = project / "t.jsonl"
    text = (
        "claim_ledger:\n  claims:\n    - id: C1\n      status: Guess\n  premises_for_plan: [C1]\n"
    )
    transcript.write_text(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "content": [{"type": "text", "text": text}, {"type": "tool_use", "id": "t1"}]
                },
            }
        )
        + "\n"
    )
    result = _run(
        project,
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "a"},
            "tool_use_id": "t1",
            "transcript_path": str(transcript),
        },
    )
    assert "lark" in _heavy(result["modules"])  # needed, so loaded: the lazy path works

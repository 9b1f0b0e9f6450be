"""Self-protection sees a command line wherever a tool takes one (issue 14 §3): an MCP shell
tool annotated as modifying keeps what its command names (the stricter class used to drop
the families and paths), and a tool the table does not know that takes ``cmd`` / ``script``
is read as a shell too, for self-protection only."""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gates.classify import classify_tool
from infomark.gates.protect import protected

MODIFY = {"readOnlyHint": False}


@pytest.mark.parametrize(
    ("tool", "tool_input", "code"),
    [
        ("run_command", {"command": "infomark approve --call dec_1"}, "protected_cli"),
        ("mcp__box__run_command", {"command": "python -m infomark approve"}, "protected_cli"),
        ("shell", {"cmd": "cat .infomark/key"}, "protected_home"),
        ("exec_in_box", {"cmd": "infomark record --tool bash"}, "protected_cli"),
        ("exec_in_box", {"script": "cp .infomark/token /tmp/t"}, "protected_home"),
        ("exec_in_box", {"command_line": "base64 < .infomark/key"}, "protected_home"),
    ],
)
def test_a_command_argument_counts_for_self_protection(
    tmp_path: Path, tool: str, tool_input: dict[str, object], code: str
) -> None:
    home = tmp_path / ".infomark"
    home.mkdir()
    c = classify_tool(tool, tool_input, mcp_annotations=MODIFY)
    verdict = protected(tool, tool_input, c, home=home, root=tmp_path)
    assert verdict is not None and verdict[:2] == ("deny", code)


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("run_command", {"command": "ls -la"}),
        ("exec_in_box", {"cmd": "pytest -q"}),
        ("notes_add", {"text": "infomark approve --call x"}),  # not a command argument
    ],
)
def test_ordinary_commands_are_not_touched(
    tmp_path: Path, tool: str, tool_input: dict[str, object]
) -> None:
    home = tmp_path / ".infomark"
    home.mkdir()
    c = classify_tool(tool, tool_input, mcp_annotations=MODIFY)
    assert protected(tool, tool_input, c, home=home, root=tmp_path) is None


def test_the_stricter_annotation_keeps_the_shell_families() -> None:
    c = classify_tool("run_command", {"command": "infomark approve"}, mcp_annotations=MODIFY)
    assert c.tool_class.value == "modify" and "infomark" in c.families

"""Seed 001's content-writer walk-through, end to end through the Claude Code command hook."""

from __future__ import annotations

from pathlib import Path

from hook_session import Session

PROMPT = (
    "You just saved a new piece to writing/. Re-read voice.md, check the piece against it, "
    "revise, and update voice.md with any new pattern."
)
CONFIG = f"""
[[triggers]]
name = "voice-review"
when = {{ file_written = "writing/*.md" }}
prompt = "{PROMPT}"
requires_read = ["voice.md"]
"""


def _post(cc: Session, tool: str, tool_input: dict[str, object], use_id: str) -> None:
    # PreToolUse first, as Claude Code sends it: the record pairs with it by tool_use_id.
    cc.hook("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=use_id)
    code, _, _ = cc.hook(
        "PostToolUse",
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id=use_id,
        tool_response={"success": True},
    )
    assert code == 0


def test_voice_review_refuses_once_then_lets_the_writer_finish(project: Path) -> None:
    (project / "infomark.toml").write_text(CONFIG)
    (project / "voice.md").write_text("short sentences; no jargon\n")
    cc = Session(project, sid="writer")
    assert cc.hook("UserPromptSubmit", prompt="Turn this into a LinkedIn post")[0] == 0
    piece = str(project / "writing" / "2026-03-29-linkedin-ai-tooling.md")
    _post(cc, "Write", {"file_path": piece, "content": "draft"}, "t1")

    code, out, _ = cc.hook(
        "Stop", stop_hook_active=False, last_assistant_message="Here is your LinkedIn post."
    )
    assert code == 0 and out["decision"] == "block"
    assert (
        "[infomark:trigger voice-review]" in out["reason"] and "Re-read voice.md" in out["reason"]
    )

    _post(cc, "Read", {"file_path": str(project / "voice.md")}, "t2")
    _post(cc, "Edit", {"file_path": piece, "old_string": "draft", "new_string": "post"}, "t3")
    _post(
        cc,
        "Edit",
        {"file_path": str(project / "voice.md"), "old_string": "a", "new_string": "b"},
        "t4",
    )
    code, out, _ = cc.hook(
        "Stop", stop_hook_active=True, last_assistant_message="Revised to match your voice."
    )
    assert (code, out) == (0, None)  # fired once per prompt; its obligation (read voice.md) met


def test_a_file_written_in_an_earlier_prompt_does_not_refire(project: Path) -> None:
    (project / "infomark.toml").write_text(CONFIG)
    cc = Session(project, sid="writer2")
    cc.hook("UserPromptSubmit", prompt="write the post")
    _post(cc, "Write", {"file_path": str(project / "writing" / "a.md"), "content": "x"}, "t1")
    assert cc.hook("Stop", stop_hook_active=False, last_assistant_message="ok")[1] is not None
    _post(cc, "Read", {"file_path": str(project / "voice.md")}, "t2")
    assert cc.hook("Stop", stop_hook_active=True, last_assistant_message="ok")[1] is None
    for i in range(3):  # ten turns later, nothing new was written: no re-fire
        cc.hook("UserPromptSubmit", prompt=f"unrelated question {i}")
        _post(cc, "Read", {"file_path": str(project / "notes.txt")}, f"r{i}")
        assert cc.hook("Stop", stop_hook_active=False, last_assistant_message="answer")[1] is None

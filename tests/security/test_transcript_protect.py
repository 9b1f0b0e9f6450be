"""Issue 10: the host's transcript witnesses the journal, so the agent may not change it.

Claude Code's transcript (the payload's ``transcript_path``) carries the ``head=SEQ:HASH8``
witness; an agent that could edit it could forge or remove the witness. Through the real
hook process: writes, moves and deletions of the transcript (or of a directory that holds it
and not the project) are denied in every profile; reading it is not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import grounded
from rel_hook import HookSession

from infomark.gatekeeper import Gatekeeper


def _decision(result: object) -> tuple[str, str]:
    out = getattr(result, "out", None) or {}
    spec = out.get("hookSpecificOutput") or {}
    return str(spec.get("permissionDecision")), str(spec.get("permissionDecisionReason"))


@pytest.fixture
def cc(tmp_path: Path) -> HookSession:
    project = tmp_path / "proj"
    project.mkdir()
    session = HookSession(project)
    claude = tmp_path / "dot-claude" / "projects" / "-proj"
    claude.mkdir(parents=True)
    session.transcript = claude / "rel-1.jsonl"  # where Claude Code keeps it: outside
    session.transcript.touch()
    assert session.hook("SessionStart", source="startup").code == 0
    with Gatekeeper.open(session.home, session.sid, root=project) as gk:
        grounded(gk)  # grounded: only the protection speaks
    return session


def _attacks(t: Path) -> list[tuple[str, dict[str, str]]]:
    return [
        ("Write", {"file_path": str(t), "content": "{}\n"}),
        ("Edit", {"file_path": str(t), "old_string": "head=", "new_string": "x"}),
        ("Bash", {"command": f"echo '{{}}' >> {t}"}),
        ("Bash", {"command": f"sed -i '$d' {t}"}),
        ("Bash", {"command": f"truncate -s 0 {t}"}),
        ("Bash", {"command": f"mv {t} {t}.bak"}),
        ("Bash", {"command": f"cp /dev/null {t}"}),
        ("Bash", {"command": f"rm -rf {t.parent}"}),
        ("Bash", {"command": f"cd {t.parent} && rm *.jsonl"}),
        ("Bash", {"command": f"ln -sf /dev/null {t}"}),
    ]


def test_changes_of_the_transcript_are_denied(cc: HookSession) -> None:
    for tool, tool_input in _attacks(cc.transcript):
        decision, reason = _decision(cc.pre(tool, tool_input))
        assert decision == "deny" and "transcript" in reason, (tool, tool_input, reason)


def test_denied_in_observe_too(cc: HookSession) -> None:
    (cc.project / "infomark.toml").write_text('profile = "observe"\n')
    decision, reason = _decision(cc.pre("Write", {"file_path": str(cc.transcript), "content": ""}))
    assert decision == "deny" and "transcript" in reason


def test_reading_the_transcript_and_writing_elsewhere_are_not_denied(cc: HookSession) -> None:
    for tool, tool_input in [
        ("Read", {"file_path": str(cc.transcript)}),
        ("Bash", {"command": f"tail -n 5 {cc.transcript}"}),
        ("Write", {"file_path": str(cc.project / "notes.md"), "content": "x"}),
        ("Bash", {"command": f"cd {cc.project.parent} && ls"}),
    ]:
        decision, reason = _decision(cc.pre(tool, tool_input))
        assert "transcript" not in reason, (tool, tool_input, reason)
        assert decision != "deny" or tool == "Write", (tool, reason)


def test_the_transcript_of_the_payload_is_the_one_protected(cc: HookSession) -> None:
    other = cc.transcript.with_name("other-session.jsonl")
    other.touch()
    _, reason = _decision(cc.pre("Write", {"file_path": str(other), "content": "x"}))
    assert "transcript" not in reason

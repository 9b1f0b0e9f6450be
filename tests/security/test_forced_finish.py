"""§5: a forced finish (the refusal cap let the agent out) is never quiet.

Reproduced on main: after the cap let an unverified finish through, the Stop hook said
nothing and `infomark audit` said "grounded: True, gate G9". Here the real hook command
and the real CLI: the Stop output names the unverified finish, and the audit shows it
before anything else.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from rel_hook import HookSession, denial_reason
from rel_support import EXE, ORACLE, ledger_block, stamp_line

from infomark.gatekeeper import Gatekeeper
from infomark.tools.hooks.claude_code import handle


def _forced(tmp_path: Path) -> tuple[HookSession, list[dict[str, object] | None]]:
    project = tmp_path / "p"
    project.mkdir()
    (project / "app.py").write_text("x = 0\n")  # from before the session: not scratch
    (project / "infomark.toml").write_text("finish_refusal_cap = 2\n")
    cc = HookSession(project)
    cc.say(ledger_block())
    cc.say(stamp_line("C1", cc.post_bash(ORACLE)))
    write = {"file_path": "app.py", "content": "x = 1\n"}
    pre = cc.hook("PreToolUse", tool_name="Write", tool_input=write, tool_use_id="toolu_wr")
    assert denial_reason(pre) is None, pre
    post = cc.hook(
        "PostToolUse", tool_name="Write", tool_input=write, tool_use_id="toolu_wr",
        tool_response={"type": "update", "filePath": "app.py"},
    )  # fmt: skip
    assert post.code == 0, post.err
    cc.say("All set.")
    outs = []
    for _ in range(3):  # no fresh evidence after the write: refused, refused, forced
        stop = cc.hook("Stop", last_assistant_message="All set.", stop_hook_active=True)
        assert stop.code == 0, stop.err
        outs.append(stop.out)
    return cc, outs


def test_the_stop_output_names_a_forced_finish(tmp_path: Path) -> None:
    _, outs = _forced(tmp_path)
    assert [(o or {}).get("decision") for o in outs] == ["block", "block", None]
    shown = str((outs[2] or {}).get("systemMessage", ""))
    assert shown.startswith("infomark: ") and "UNVERIFIED" in shown, outs[2]


def test_the_audit_shows_a_forced_finish_first(tmp_path: Path) -> None:
    cc, _ = _forced(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
    proc = subprocess.run(
        [EXE, "audit", "--home", str(cc.home), "--session", cc.sid],
        capture_output=True, text=True, cwd=cc.project, env={**env, "COLUMNS": "200"},
        timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr  # a forced finish fails CI by default (--fail-on)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines[0].startswith("verdict: finished through the refusal cap"), proc.stdout
    forced = next(i for i, line in enumerate(lines) if line.startswith("FINISHED UNVERIFIED"))
    table = next(i for i, line in enumerate(lines) if "infomark audit: session" in line)
    assert forced < table and "refusal cap 2" in lines[forced], proc.stdout


def test_a_stop_the_hook_cannot_judge_goes_through_once_and_the_audit_says_unverified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal still takes writes (an internal error, not a broken store): the stop the
    failsafe lets through (the host's stop_hook_active) is recorded as finished unverified."""
    project = tmp_path / "p"
    project.mkdir()
    home = project / ".infomark"

    def broken(self: Gatekeeper, final_text: str = "") -> None:
        raise RuntimeError("a bug in the finish")

    stop = {"session_id": "s-1", "cwd": str(project), "hook_event_name": "Stop",
            "last_assistant_message": "Done."}  # fmt: skip
    monkeypatch.setattr(Gatekeeper, "can_finish", broken)
    first = handle({**stop, "stop_hook_active": False}, home=home, root=project)
    second = handle({**stop, "stop_hook_active": True}, home=home, root=project)
    assert (first.stdout or {}).get("decision") == "block"
    assert "finished UNVERIFIED" in str((second.stdout or {}).get("systemMessage")), second
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
    proc = subprocess.run(
        [EXE, "audit", "--home", str(home), "--session", "s-1", "--json"],
        capture_output=True, text=True, cwd=project, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "finished_unverified"

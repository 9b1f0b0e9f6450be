"""Issue 27 through the real hook process: a call that asks to leave Claude Code's OS sandbox is
denied, and Claude Code's file tools (not in its sandbox) cannot reach the home through
``/proc`` links of any process. In every profile, observe included, like all self-protection.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rel_hook import HookResult, HookSession


def _verdict(result: HookResult) -> tuple[str, str]:
    spec = (result.out or {}).get("hookSpecificOutput") or {}
    return str(spec.get("permissionDecision")), str(spec.get("permissionDecisionReason"))


@pytest.fixture
def cc(tmp_path: Path) -> HookSession:
    session = HookSession(tmp_path)
    assert session.hook("SessionStart", source="startup").code == 0
    return session


@pytest.mark.parametrize("value", [True, "true", 1, "yes"])
def test_dangerously_disable_sandbox_is_denied(cc: HookSession, value: object) -> None:
    decision, reason = _verdict(
        cc.pre("Bash", {"command": "ls", "dangerouslyDisableSandbox": value})
    )
    assert decision == "deny"
    assert "dangerouslyDisableSandbox" in reason and "without" in reason


@pytest.mark.parametrize("value", [False, "false", None])
def test_the_switch_off_is_no_escape(cc: HookSession, value: object) -> None:
    decision, _ = _verdict(cc.pre("Bash", {"command": "ls", "dangerouslyDisableSandbox": value}))
    assert decision != "deny"


def test_observe_denies_it_too(tmp_path: Path) -> None:
    (tmp_path / "infomark.toml").write_text('profile = "observe"\n')
    session = HookSession(tmp_path)
    assert session.hook("SessionStart", source="startup").code == 0  # the home is made here
    decision, _ = _verdict(
        session.pre("Bash", {"command": "ls", "dangerouslyDisableSandbox": True})
    )
    assert decision == "deny"


def test_a_file_tool_cannot_go_through_proc_fd_links(cc: HookSession, tmp_path: Path) -> None:
    home = next(p for p in tmp_path.rglob("key") if p.parent.name == ".infomark").parent
    with (home / "key").open("rb") as held:  # a process (this one) holding the key open
        for path in (
            f"/proc/{os.getpid()}/fd/{held.fileno()}",
            f"/proc/{os.getpid()}/root{home}/key",
            "/proc/1/root/etc/passwd",
            "/proc/self/task/1/fd/0",
        ):
            decision, reason = _verdict(cc.pre("Read", {"file_path": path}))
            assert decision == "deny", (path, reason)
    decision, _ = _verdict(cc.pre("Read", {"file_path": "/proc/cpuinfo"}))
    assert decision != "deny"  # an ordinary /proc file stays readable

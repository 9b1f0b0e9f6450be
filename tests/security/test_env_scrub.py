"""Issue 10: ``INFOMARK_*`` variables never reach a process infomark starts for the agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.ledger.calls import ToolCall
from infomark.tools.builtin import agent_env, make_builtins


def test_the_builtin_bash_sees_no_infomark_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFOMARK_KEY", "00" * 32)
    monkeypatch.setenv("INFOMARK_TOKEN", "secret-token")
    monkeypatch.setenv("infomark_home", str(tmp_path))
    monkeypatch.setenv("KEEP_ME", "1")
    out = make_builtins(tmp_path)["bash"](ToolCall("bash", {"command": "env"})).output
    assert "KEEP_ME=1" in out
    names = {line.split("=", 1)[0].upper() for line in out.splitlines() if "=" in line}
    assert not {n for n in names if n.startswith("INFOMARK")} and "secret-token" not in out


def test_agent_env_drops_every_spelling() -> None:
    env = agent_env({"INFOMARK_KEY": "k", "Infomark_Bypass_Grounding": "1", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}

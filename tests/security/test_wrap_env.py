"""Issue 10: processes infomark starts get agent_env(); wrap() hands it to executors that
take an ``env`` keyword (a user's executor runs in the caller's process: infomark cannot
scrub what it starts otherwise)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import grounded

import infomark
from infomark.gatekeeper import Gatekeeper
from infomark.kernel.environ import agent_env, child_env
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools import builtin


def test_there_is_one_agent_env() -> None:
    assert builtin.agent_env is agent_env is child_env is infomark.agent_env


def _env_of(output: str) -> set[str]:
    return {line.split("=", 1)[0].upper() for line in output.splitlines() if "=" in line}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_wrap_passes_agent_env_to_an_executor_that_takes_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("INFOMARK_KEY", "00" * 32)
    monkeypatch.setenv("KEEP_ME", "1")
    seen: list[dict[str, str]] = []

    def run(call: ToolCall, *, env: dict[str, str]) -> ToolOutcome:
        seen.append(env)
        proc = subprocess.run(["env"], capture_output=True, text=True, env=env, check=False)
        return ToolOutcome(proc.stdout, exit_code=proc.returncode)

    async def arun(call: ToolCall, *, env: dict[str, str]) -> ToolOutcome:
        return run(call, env=env)

    with Gatekeeper.open(tmp_path / ".infomark", "env", root=tmp_path) as gk:
        grounded(gk)
        call = ToolCall("bash", {"command": "env"})
        if kind == "sync":
            out = gk.wrap(run)(call)
        else:
            import asyncio

            out = asyncio.run(gk.wrap(arun)(call))
    names = _env_of(str(out.output))
    assert "KEEP_ME" in names and not {n for n in names if n.startswith("INFOMARK")}
    assert seen and not any(k.upper().startswith("INFOMARK") for k in seen[0])


def test_an_executor_without_env_is_called_as_before(tmp_path: Path) -> None:
    calls: list[ToolCall] = []

    def run(call: ToolCall) -> ToolOutcome:
        calls.append(call)
        return ToolOutcome("ok", exit_code=0)

    with Gatekeeper.open(tmp_path / ".infomark", "env", root=tmp_path) as gk:
        gk.wrap(run)(ToolCall("bash", {"command": "true"}))
    assert len(calls) == 1


def test_the_fingerprint_runs_git_without_infomark_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git` started by the fingerprint gets agent_env() too (a spy on subprocess.run)."""
    from infomark.gates import fingerprint

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("INFOMARK_KEY", "00" * 32)
    envs: list[dict[str, str] | None] = []
    real = subprocess.run

    def spy(*args: object, **kw: object) -> object:
        envs.append(kw.get("env"))  # type: ignore[arg-type]
        return real(*args, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", spy)
    (tmp_path / "a.txt").write_text("x")
    fingerprint.still_modified(tmp_path, ["a.txt"])
    fingerprint._ls_files(tmp_path)
    assert len(envs) == 2
    assert all(e is not None and not any(k.startswith("INFOMARK") for k in e) for e in envs)

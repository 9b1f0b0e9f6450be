"""Approving a held call out of the agent's reach (issue 14 §3).

The operator lists held calls (``infomark held``) and approves one (``infomark approve
--call DECISION_ID``): the agent's next call of the same tool with exactly the same input is
allowed once. The attacks: the agent running the approval through its shell (the Claude Code
hook's Bash, an MCP server's shell tool) or through an MCP tool of the proxy is refused, and
no approval event is written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from helpers import grounded
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import UserError
from infomark.ledger.calls import ToolCall
from infomark.ledger.holds import approve_held, held_calls

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
DOWNSTREAM = Path(__file__).with_name("mcp_downstream_server.py")
SESSION = "ops"
RM = ToolCall("Bash", {"command": "rm -rf build"})


def cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The operator at a terminal: stdin is a pty (``approve`` refuses without one)."""
    operator, terminal = os.openpty()
    try:
        return subprocess.run(
            [EXE, *args, "--home", str(home), "--session", SESSION],
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=home.parent,
            env={**os.environ, **env},
        )
    finally:
        os.close(operator)
        os.close(terminal)


def approvals(home: Path, project: Path) -> list[dict[str, Any]]:
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        return [e.payload for e in gk.events() if e.type == "call_approved"]


@pytest.fixture
def held(home: Path, project: Path) -> str:
    """A grounded session with ``rm -rf build`` held; returns its decision id."""
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        grounded(gk)
        decision = gk.authorize(RM)
    assert decision.verdict.value == "ask"
    return decision.decision_id


# --------------------------------------------------------------------------- the operator CLI


def test_the_operator_approves_one_held_call_once(home: Path, project: Path, held: str) -> None:
    listed = json.loads(cli(home, "held", "--json").stdout)
    assert [(h["decision_id"], h["status"], h["tool"]) for h in listed] == [
        (held, "pending", "Bash")
    ]
    assert json.loads(listed[0]["input"]) == {"command": "rm -rf build"}  # what is approved
    proc = cli(home, "approve", "--call", held)
    assert proc.returncode == 0, proc.stderr
    assert held in proc.stdout and "once" in proc.stdout
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        other = gk.authorize(ToolCall("Bash", {"command": "rm -rf src"}))
        assert other.verdict.value == "ask"  # only the approved input
        ran = gk.authorize(RM)
        assert (ran.verdict.value, ran.code) == ("allow", "operator_approved")
        assert held in ran.reason
        again = gk.authorize(RM)
        assert again.verdict.value == "ask"  # spent
        assert gk.store.replay().to_dict() == gk.state.to_dict()  # replay == live
    listed = json.loads(cli(home, "held", "--all", "--json").stdout)
    statuses = {h["decision_id"]: h["status"] for h in listed}
    assert statuses[held] == "used"


def test_an_approval_cannot_be_given_twice_or_for_an_unknown_call(
    home: Path, project: Path, held: str
) -> None:
    assert cli(home, "approve", "--call", held).returncode == 0
    twice = cli(home, "approve", "--call", held)
    assert twice.returncode == 2 and "already approved" in twice.stderr
    unknown = cli(home, "approve", "--call", held[:-1] + "x", "--json")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert json.loads(unknown.stdout)["error"]["code"] == "user_error"
    assert len(approvals(home, project)) == 1


def test_approve_call_is_refused_without_a_terminal_or_inside_claude_code(
    home: Path, project: Path, held: str
) -> None:
    no_tty = subprocess.run(
        [EXE, "approve", "--call", held, "--home", str(home), "--session", SESSION],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert no_tty.returncode == 2 and "operator act" in no_tty.stderr
    in_agent = cli(home, "approve", "--call", held, CLAUDECODE="1")
    assert in_agent.returncode == 2 and "operator act" in in_agent.stderr
    assert approvals(home, project) == []


def test_a_denied_call_is_not_approvable(home: Path, project: Path) -> None:
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        grounded(gk)
        denied = gk.authorize(ToolCall("Read", {"file_path": str(home / "key")}))
    assert (denied.verdict.value, denied.code) == ("deny", "protected_home")
    proc = cli(home, "approve", "--call", denied.decision_id)
    assert proc.returncode == 2 and "no held call" in proc.stderr
    assert approvals(home, project) == []


@settings(max_examples=25)
@given(
    st.lists(st.sampled_from(["build", "dist", "src", "a b", "*", "."]), min_size=2, max_size=4),
    st.data(),
)
def test_an_approval_lets_through_exactly_its_own_call(
    tmp_path_factory: pytest.TempPathFactory, targets: list[str], data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("p")
    calls = [ToolCall("Bash", {"command": f"rm -rf '{t}'"}) for t in dict.fromkeys(targets)]
    with Gatekeeper.open(root / ".infomark", "prop", root=root) as gk:
        grounded(gk)
        ids = [gk.authorize(c).decision_id for c in calls]
        chosen = data.draw(st.sampled_from(range(len(calls))))
        approve_held(gk.store, ids[chosen], by="operator")
        for i, call in enumerate(calls):
            if i != chosen:
                assert gk.authorize(call).verdict.value == "ask"
        assert gk.authorize(calls[chosen]).verdict.value == "allow"
        assert all(gk.authorize(c).verdict.value == "ask" for c in calls)
        with pytest.raises(UserError):
            approve_held(gk.store, ids[chosen], by="operator")
        assert {h.decision_id: h.status for h in held_calls(gk.store)}[ids[chosen]] == "used"


# --------------------------------------------------------------------------- the attacks


def test_the_agent_cannot_approve_through_the_claude_code_hook(
    home: Path, project: Path, held: str
) -> None:
    for command in (
        f"infomark approve --call {held}",
        f"{EXE} approve --call {held} --home {home}",
        f"python -m infomark approve --call {held}",
        f"sh -c 'infomark approve --call {held}'",
        f"sqlite3 {home}/ledger.db .dump",
    ):
        payload = {
            "session_id": SESSION,
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
        }
        proc = subprocess.run(
            [EXE, "hook", "claude-code", "--home", str(home)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=project,
            timeout=60,
            check=False,
        )
        out = json.loads(proc.stdout)["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny", command
    assert approvals(home, project) == []


def _proxy(project: Path, home: Path, notes: Path) -> StdioServerParameters:
    args = ["-m", "infomark.tools.mcp_proxy", "--home", str(home), "--session", SESSION, "--"]
    down = [sys.executable, str(DOWNSTREAM), str(notes), "--shell"]
    return StdioServerParameters(command=sys.executable, args=[*args, *down], cwd=project)


@asynccontextmanager
async def _client(params: StdioServerParameters, errlog: Path) -> AsyncIterator[ClientSession]:
    with errlog.open("a", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(60):
                await session.initialize()
            yield session


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def test_a_held_mcp_call_runs_after_the_operator_approves_it_and_the_agent_cannot(
    project: Path, home: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("a")
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        grounded(gk)
    seen: dict[str, str] = {}

    async def scenario() -> None:
        async with _client(_proxy(project, home, notes), tmp_path / "err") as s:
            await s.list_tools()
            first = await s.call_tool("wipe", {})
            assert first.is_error and "You cannot approve it yourself" in _text(first)
            (pending,) = json.loads(cli(home, "held", "--json").stdout)
            did = pending["decision_id"]
            assert did in _text(first)
            # the attacks, through the agent's MCP tools
            for name, arguments in (
                ("infomark_approve", {"call": did}),
                ("run_command", {"command": f"infomark approve --call {did}"}),
                ("run_command", {"command": f"{EXE} approve --call {did} --home {home}"}),
                ("run_command", {"command": f"cat {home}/key"}),
            ):
                attempt = await s.call_tool(name, arguments)
                assert attempt.is_error, (name, arguments, _text(attempt))
                seen[f"{name} {arguments}"] = _text(attempt)
            assert approvals(home, project) == []
            still = await s.call_tool("wipe", {})
            assert still.is_error and (notes / "a.txt").exists()
            # the operator, from their own terminal
            latest = json.loads(cli(home, "held", "--json").stdout)[0]["decision_id"]
            assert cli(home, "approve", "--call", latest).returncode == 0
            done = await s.call_tool("wipe", {})
            assert not done.is_error, _text(done)
            assert "removed 1 notes" in _text(done)
            assert not (notes / "a.txt").exists()

    anyio.run(scenario)
    refused = [t for k, t in seen.items() if k.startswith("run_command")]
    assert all("infomark denied: protected_" in t for t in refused), refused
    assert len(approvals(home, project)) == 1

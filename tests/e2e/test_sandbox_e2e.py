"""Issue 27 through the real Claude Code binary: the installer turns on Claude Code's own Bash
sandbox with infomark's policy, and the attacks of the issue fail at the OS level.

Observed with Claude Code 2.1.328 on Linux (bubblewrap and socat installed):

* ``sandbox.filesystem.denyRead`` of a directory makes it look empty to a Bash command
  (``cat .infomark/key``: "No such file or directory");
* ``sandbox.filesystem.denyWrite`` and everything outside the project are read-only
  ("Read-only file system");
* with ``allowUnsandboxedCommands: false`` a ``dangerouslyDisableSandbox: true`` call still
  runs sandboxed; infomark's PreToolUse hook refuses it anyway (``protected_sandbox``), so a
  user setting that re-allows it does not open the door either;
* the hooks themselves run outside the sandbox (they read the home as before).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.tools.launcher import search_paths

from .anthropic_stub import AnthropicStub, Reply, ToolCall
from .claude_harness import result_json, run_claude
from .scripts_infomark import ORACLE, install_hooks, oracle_env, write_project

if sys.platform.startswith("linux") and not (shutil.which("bwrap") and shutil.which("socat")):
    pytest.skip(
        "SKIPPED LOUDLY: Claude Code's Linux sandbox needs bubblewrap and socat "
        "(apt-get install -y bubblewrap socat)",
        allow_module_level=True,
    )

PY = sys.executable
MINT = """\
import sys
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
gk = Gatekeeper.open(".infomark", session="agent")
call = ToolCall("Bash", {"command": "python3 test_parser.py"})
ref = gk.record(call, ToolOutcome("ok", exit_code=0), call_id=gk.authorize(call).call_id).ref
print("MINTED", ref)
"""


def _bash(command: str, n: int, **extra: object) -> ToolCall:
    return ToolCall("Bash", {"command": command, "description": "run", **extra}, id=f"toolu_{n}")


def _results(stub: AnthropicStub) -> dict[str, tuple[bool, str]]:
    out = {}
    for q in stub.model_requests:
        for r in q.tool_results():
            out[r.tool_use_id] = (r.is_error, r.content)
    return out


def _session(tmp_path: Path) -> tuple[Path, Path, Path]:
    project, claude_home = tmp_path / "project", tmp_path / "claude-home"
    claude_home.mkdir()
    write_project(project)
    home = project / ".infomark"
    Gatekeeper.open(home, session="setup", root=project).close()
    return project, claude_home, install_hooks(project, user_home=claude_home)


def _evidence(home: Path, project: Path) -> int:
    gk = Gatekeeper.open(home, session="count", root=project)
    try:
        return len(gk.store.journal.evidence_rows())
    finally:
        gk.close()


def test_the_installer_writes_the_sandbox_policy_and_uninstall_removes_it(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"sandbox": {"enabled": False, "filesystem": {"denyRead": ["~/secrets"]}}, "x": 1}
    settings.write_text(json.dumps(mine))
    install_hooks(project)
    box = json.loads(settings.read_text())["sandbox"]
    assert box["enabled"] is True and box["failIfUnavailable"] is True
    assert box["allowUnsandboxedCommands"] is False
    deny_read = box["filesystem"]["denyRead"]
    assert deny_read[0] == "~/secrets" and str((project / ".infomark").resolve()) in deny_read
    assert str((project / ".claude" / "infomark-hook").resolve()) in box["filesystem"]["denyWrite"]
    assert os.path.realpath(sys.prefix) in box["filesystem"]["denyWrite"]
    first = settings.read_text()
    install_hooks(project)  # idempotent
    assert settings.read_text() == first
    from infomark.tools.install import uninstall_claude_code

    uninstall_claude_code(root=project)
    assert json.loads(settings.read_text()) == mine
    assert not (project / ".claude" / "infomark-sandbox.json").exists()


def test_the_attacks_fail_at_the_os_level(claude_bin: Path, tmp_path: Path) -> None:
    project, claude_home, _ = _session(tmp_path)
    home = project / ".infomark"
    (project / "mint.py").write_text(MINT)
    (project / "peek.sh").write_text(
        "cat .infomark/key | od -An -tx1\n"
    )  # the hook sees `bash peek.sh`
    key = (home / "key").read_bytes()
    before = _evidence(home, project)
    site = next(p for p in search_paths() if (Path(p) / "tree_sitter").is_dir())
    probe = Path(site) / "tree_sitter" / f"infomark-e2e-probe-{os.getpid()}"
    path = os.pathsep.join(search_paths())
    (project / "poison.sh").write_text(f"touch {probe}\n")
    token = claude_home / ".config" / "infomark" / "operator-token"  # where serve reads it
    token.parent.mkdir(parents=True)
    token.write_text("OPERATOR-TOKEN-e2e-secret\n")
    token.chmod(0o600)
    calls = [
        _bash("bash peek.sh", 1),
        _bash(f"PYTHONPATH={path} {PY} mint.py", 2),
        _bash("bash poison.sh", 3),
        _bash("cat .infomark/key", 4, dangerouslyDisableSandbox=True),
        _bash("head -1 parser.py", 5),
        _bash("cat ~/.config/infomark/operator-token", 6),
    ]
    try:
        with AnthropicStub(
            [Reply(text="Trying.", tool_calls=tuple(calls)), Reply(text="Done.")]
        ) as stub:
            proc = run_claude(
                project, "go", stub, claude_bin=claude_bin, home=claude_home,
                extra_env=oracle_env(), extra_args=["--allowedTools", "Bash"],
            )  # fmt: skip
        result_json(proc)
        results = _results(stub)
        assert not probe.exists(), "a Bash command wrote into the hook's environment"
    finally:
        probe.unlink(missing_ok=True)
    text = json.dumps(results)
    print(json.dumps(results, indent=1))
    assert key.hex() not in text.replace(" ", "").replace("\\n", "")
    assert (home / "key").read_bytes() == key
    assert "No such file" in results["toolu_1"][1], results["toolu_1"]
    # Inside Claude Code's sandbox the hidden home is an empty directory: the script can only
    # open a fresh ledger there, whose ref the real home never signed nor stored.
    minted = results["toolu_2"][1].split()[-1]
    assert "Read-only file system" in results["toolu_3"][1], results["toolu_3"]
    assert results["toolu_4"][0], results["toolu_4"]
    assert "dangerouslyDisableSandbox asks to run this command outside" in results["toolu_4"][1]
    assert results["toolu_5"] == (False, "def parse(line):"), results["toolu_5"]
    assert "OPERATOR-TOKEN" not in text and "No such file" in results["toolu_6"][1]
    # nothing the mint script did reached the journal: every evidence row is a hook's
    gk = Gatekeeper.open(home, session="count", root=project)
    try:
        rows = gk.store.journal.evidence_rows()
    finally:
        gk.close()
    assert all(session != "agent" for _ref, session, *_ in rows)
    assert minted not in {ref for ref, *_ in rows}
    # the hook read the installed settings at SessionStart: the agent's commands are sandboxed
    sessions = {session for _ref, session, *_ in rows} - {"setup", "count"}
    assert sessions
    for sid in sessions:
        with Gatekeeper.open(home, session=sid, root=project) as seen:
            assert seen.state.agent_sandbox["sandboxed"] is True, seen.state.agent_sandbox
    assert _evidence(home, project) >= before


def test_with_the_sandbox_off_the_agents_runs_ground_nothing(
    claude_bin: Path, tmp_path: Path
) -> None:
    """``install --no-sandbox``: the SessionStart context tells the model its commands are not
    sandboxed, with the fix, and a stamp on its own run of the oracle is refused."""
    project, claude_home = tmp_path / "project", tmp_path / "claude-home"
    claude_home.mkdir()
    write_project(project)
    exe = Path(sys.executable).with_name("infomark")
    installed = subprocess.run(
        [str(exe), "install", "claude-code", "--root", str(project), "--profile", "ledger",
         "--no-sandbox"],
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(claude_home)},
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    ledger = (
        "claim_ledger:\n  claims:\n    - id: C1\n      text: the tests pass\n"
        f'      status: Hypothetical\n      falsifier: "x"\n      oracle: "{ORACLE}"\n'
        "  premises_for_plan: [C1]\n"
    )
    with AnthropicStub(
        [Reply(text=ledger, tool_calls=(_bash(ORACLE, 1),)), Reply(text="Ran it.")]
    ) as stub:
        proc = run_claude(
            project, "go", stub, claude_bin=claude_bin, home=claude_home,
            extra_env=oracle_env(), extra_args=["--allowedTools", "Bash"],
        )  # fmt: skip
    result_json(proc)
    first = json.dumps(stub.model_requests[0].body)
    assert "commands are NOT sandboxed" in first and "infomark install claude-code" in first
    home = project / ".infomark"
    gk = Gatekeeper.open(home, session="count", root=project)
    try:
        rows = gk.store.journal.evidence_rows()
    finally:
        gk.close()
    (ref, sid, *_rest) = next(r for r in rows if r[1] != "count")
    with Gatekeeper.open(home, session=sid, root=project) as seen:
        assert seen.state.agent_sandbox["sandboxed"] is False
        report = seen.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS")
        assert [r["reason"] for r in report.stamps_rejected] == ["unsandboxed_run"]

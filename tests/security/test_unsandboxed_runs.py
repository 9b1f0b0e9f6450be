"""Issue 27: when the agent's commands run outside an OS sandbox, its own runs ground nothing.

The integration records the status (``agent_sandbox``); in an enforcing profile a stamp on
the agent's own execution evidence made while unsandboxed is refused (``unsandboxed_run``)
with the fix, the verify profile's checks do not count it, and the hook says so loudly at
SessionStart and at the first decision. The observe profile refuses nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import OWN_RUNS_TOML, claude_sandbox_on, ledger_text, read, run, stamp

from infomark.gatekeeper import Gatekeeper
from infomark.tools.hooks import sandboxed
from infomark.tools.hooks.sandboxed import agent_sandbox
from infomark.tools.install_sandbox import SWITCHES

ORACLE = "pytest -q"
FIX = "run `infomark install claude-code` and restart Claude Code"


def _claims(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Hypothetical", ORACLE), premises=("C1",)))


def _off(gk: Gatekeeper) -> None:
    gk.record_sandbox(False, host="claude-code", detail="settings say no", fix=FIX)


@pytest.mark.parametrize("profile", ["ledger", "strict", "verify"])
def test_an_unsandboxed_run_grounds_nothing_in_an_enforcing_profile(
    project: Path, home: Path, profile: str
) -> None:
    with Gatekeeper.open(home, "s", root=project, profile=profile) as gk:
        _claims(gk)
        _off(gk)
        ev = run(gk, ORACLE)
        report = gk.ingest(stamp("C1", ev.ref))
        (rejected,) = report.stamps_rejected
        assert rejected["reason"] == "unsandboxed_run"
        assert FIX in rejected["message"] and "infomark check C1" in rejected["message"]
        assert gk.state.claims["C1"].status == "Hypothetical"
        inferred = gk.ingest(stamp("C1", ev.ref, kind="inference_stamp"))
        assert [r["reason"] for r in inferred.stamps_rejected] == ["unsandboxed_run"]


def test_the_rule_follows_the_span_the_run_was_made_in(project: Path, home: Path) -> None:
    with Gatekeeper.open(home, "s", root=project) as gk:
        _claims(gk)
        before = run(gk, ORACLE)  # never determined: the library's caller vouches for it
        _off(gk)
        assert not gk.record_sandbox(False, host="claude-code", detail="settings say no", fix=FIX)
        during = run(gk, ORACLE)
        gk.record_sandbox(True, host="claude-code", detail="on")
        after = run(gk, ORACLE)
        assert gk.state.unsandboxed_at(during.seq)
        assert not gk.state.unsandboxed_at(before.seq) and not gk.state.unsandboxed_at(after.seq)
        assert gk.ingest(stamp("C1", during.ref)).stamps_rejected
        assert not gk.ingest(stamp("C1", before.ref)).stamps_rejected
        assert not gk.ingest(stamp("C1", after.ref)).stamps_rejected
        assert gk.state.claims["C1"].grounded
        assert gk.store.replay().to_dict() == gk.state.to_dict()  # replay == live


def test_the_observe_profile_refuses_nothing(project: Path, home: Path) -> None:
    with Gatekeeper.open(home, "s", root=project, profile="observe") as gk:
        _claims(gk)
        _off(gk)
        assert not gk.ingest(stamp("C1", run(gk, ORACLE).ref)).stamps_rejected


def test_the_verify_profile_does_not_count_an_unsandboxed_check(project: Path, home: Path) -> None:
    # the agent's own checks count only under the operator's opt-out of attested runs
    verify = 'profile = "verify"\n[oracles]\nrequire = ["make"]\n'
    (project / "infomark.toml").write_text(verify + OWN_RUNS_TOML)
    with Gatekeeper.open(home, "s", root=project) as gk:
        _off(gk)
        run(gk, "sed -i s/a/b/ a.py")
        run(gk, "make", output="1 passed")
        fin = gk.can_finish("Done.")
        assert fin.code == "required_oracle" and "no OS sandbox" in fin.reason
        assert FIX in fin.reason and "run `make` again" not in fin.reason
        gk.record_sandbox(True, host="claude-code", detail="on")
        run(gk, "make", output="1 passed")
        assert gk.can_finish("Done.").allow


def test_a_read_still_backs_an_inference_while_unsandboxed(project: Path, home: Path) -> None:
    with Gatekeeper.open(home, "s", root=project) as gk:
        gk.ingest(
            "claim_ledger:\n  claims:\n    - id: C3\n      text: t\n      status: Guess\n"
            '      falsifier: "x"\n      observe: "a.py"\n  premises_for_plan: [C3]\n'
        )
        _off(gk)
        ev = read(gk, "a.py")
        assert not gk.ingest(stamp("C3", ev.ref, kind="inference_stamp")).stamps_rejected
        assert gk.state.claims["C3"].status == "Inferred"


# -- what the hook reads ---------------------------------------------------------------------
def test_switches_are_the_installers(project: Path) -> None:
    assert dict(sandboxed.CLAUDE_SWITCHES) == dict(SWITCHES)


def test_claude_settings_precedence(project: Path, home: Path, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "user")}
    found = agent_sandbox("claude-code", project, home, env)
    assert not found.sandboxed and "sandbox.enabled" in found.detail
    assert "infomark install claude-code" in found.fix
    claude_sandbox_on(project)
    assert agent_sandbox("claude-code", project, home, env).sandboxed
    local = project / ".claude" / "settings.local.json"  # the user's local file wins
    local.write_text(json.dumps({"sandbox": {"allowUnsandboxedCommands": True}}))
    found = agent_sandbox("claude-code", project, home, env)
    assert not found.sandboxed and found.detail.endswith("(sandbox.allowUnsandboxedCommands)")
    local.unlink()
    user = tmp_path / "user" / ".claude"
    user.mkdir(parents=True)  # the user's file is beneath the project's
    (user / "settings.json").write_text(json.dumps({"sandbox": {"enabled": False}}))
    assert agent_sandbox("claude-code", project, home, env).sandboxed


def test_other_hosts(project: Path, home: Path, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "user")}
    gem = agent_sandbox("gemini", project, home, env)  # a project .env would reach its shell
    assert not gem.sandboxed and "advanced.ignoreLocalEnv" in gem.detail
    assert "infomark install gemini" in gem.fix
    gemini = project / ".gemini"
    gemini.mkdir()
    (gemini / "settings.json").write_text(json.dumps({"advanced": {"ignoreLocalEnv": True}}))
    # no .gemini/.env: Gemini would go on to a folder above, which the agent may write
    gem = agent_sandbox("gemini", project, home, env)
    assert not gem.sandboxed and ".gemini/.env" in gem.detail
    (gemini / ".env").write_text("# stop\n")
    gem = agent_sandbox("gemini", project, home, env)  # infomark's hook wraps its commands
    assert gem.sandboxed is sandboxed.bwrap_usable(home)[0]
    system = tmp_path / "system.json"  # the system file overrides the project's
    system.write_text(json.dumps({"advanced": {"ignoreLocalEnv": False}}))
    env_system = {**env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system)}
    assert not agent_sandbox("gemini", project, home, env_system).sandboxed
    assert not agent_sandbox("opencode", project, home, env).sandboxed
    assert not agent_sandbox("codex", project, home, env).sandboxed
    from infomark.tools.hosts.codex_sandbox import write_policy

    write_policy(project, None)
    assert agent_sandbox("codex", project, home, env).sandboxed
    assert not agent_sandbox("codex", project, tmp_path / "elsewhere", env).sandboxed
    codex_home = tmp_path / "user" / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    assert not agent_sandbox("codex", project, home, env).sandboxed


def test_the_bwrap_probe_is_kept_in_the_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from infomark.tools import sandbox

    if sandbox.shutil.which("bwrap") is None:
        pytest.skip("BUBBLEWRAP NOT INSTALLED: the probe cache needs the binary")
    home.mkdir(parents=True)
    calls = []
    real = sandbox.probe_bwrap

    def counted() -> sandbox.SandboxStatus:
        calls.append(1)
        return real()

    monkeypatch.setattr(sandbox, "probe_bwrap", counted)
    first = sandboxed.bwrap_usable(home)
    assert sandboxed.bwrap_usable(home) == first and len(calls) == 1
    kept = json.loads((home / sandboxed.PROBE_FILE).read_text())
    kept["key"][3] = "another kernel"
    (home / sandboxed.PROBE_FILE).write_text(json.dumps(kept))
    assert sandboxed.bwrap_usable(home) == first and len(calls) == 2
    assert sandboxed.bwrap_usable(home, now=kept["at"] + 2 * 86400) == first and len(calls) == 3


# -- the real hook process -------------------------------------------------------------------
def test_the_hook_records_warns_and_refuses(project: Path) -> None:
    from hook_session import LEDGER, Session

    cc = Session(project, sandbox=False)
    _code, out, _ = cc.hook("SessionStart", source="startup")
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("infomark WARNING: the agent's commands are NOT sandboxed")
    assert "infomark install claude-code" in text
    cc.say(LEDGER, tool_use_id="tu_1")
    bash = {"command": "pytest -q"}
    _code, out, _ = cc.tool("Bash", bash, "tu_1")
    assert "NOT sandboxed" in out["systemMessage"]  # the first decision, allowed: to the user
    _code, out, _ = cc.hook(
        "PostToolUse", tool_name="Bash", tool_input=bash, tool_use_id="tu_1",
        tool_response={"stdout": "1 passed", "stderr": "", "interrupted": False},
    )  # fmt: skip
    ref = out["hookSpecificOutput"]["additionalContext"].split("evidence_ref=")[1].split()[0]
    cc.say(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS", tool_use_id="tu_2")
    assert cc.tool("Bash", bash, "tu_2")[:2] == (0, None)  # warned once
    with Gatekeeper.open(project / ".infomark", cc.sid, root=project) as gk:
        types = [e.type for e in gk.events()]
        assert types.count("agent_sandbox") == 1
        assert gk.state.agent_sandbox["sandboxed"] is False
        assert gk.state.claims["C1"].status != "Exact"
        (rej,) = [e.payload for e in gk.events() if e.type == "stamp_rejected"]
        assert rej["reason"] == "unsandboxed_run"
    claude_sandbox_on(project)  # the user fixes it and restarts Claude Code
    _code, out, _ = cc.hook("SessionStart", source="resume")
    assert "WARNING" not in out["hookSpecificOutput"]["additionalContext"]
    with Gatekeeper.open(project / ".infomark", cc.sid, root=project) as gk:
        assert gk.state.agent_sandbox["sandboxed"] is True
        assert gk.state.unsandboxed[-1][1] > 0  # the span is closed
    assert os.path.exists(project / ".infomark" / sandboxed.PROBE_FILE) or not os.path.exists(
        "/usr/bin/bwrap"
    )


def test_the_operator_can_accept_unsandboxed_runs(project: Path, home: Path) -> None:
    (project / "infomark.toml").write_text("require_agent_sandbox = false\n")
    with Gatekeeper.open(home, "s", root=project) as gk:
        _claims(gk)
        _off(gk)
        assert not gk.ingest(stamp("C1", run(gk, ORACLE).ref)).stamps_rejected
        # accepted, but Exact still needs infomark's own attested run ([attest] required)
        assert gk.state.claims["C1"].status == "Inferred"
    (project / "infomark.toml").write_text("require_agent_sandbox = false\n" + OWN_RUNS_TOML)
    with Gatekeeper.open(home, "own", root=project) as gk:
        _claims(gk)
        _off(gk)
        assert not gk.ingest(stamp("C1", run(gk, ORACLE).ref)).stamps_rejected
        assert gk.state.claims["C1"].status == "Exact"

"""``infomark hook gemini`` / ``infomark hook codex``: the installed executable on real JSON.

The payloads, transcripts and rollouts have the shapes Gemini CLI 0.61.0 and Codex 0.171.0
were seen to write (tests/e2e/test_gemini_e2e.py and test_codex_e2e.py run the binaries).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hook_session import EXE, LEDGER, ORACLE
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.tools.hooks.answer import HookAnswer
from infomark.tools.hooks.host_transcripts import read_codex, read_gemini
from infomark.tools.hosts.core import load_spec, render


def _run(host: str, payload: Any, cwd: Path) -> tuple[int, Any, str]:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    proc = subprocess.run(
        [EXE, "hook", host], input=raw, capture_output=True, text=True, cwd=cwd, timeout=60
    )
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, out, proc.stderr


class Gemini:
    """A Gemini CLI session as its hooks see it."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.transcript = project / "chat.jsonl"
        self.transcript.write_text(json.dumps({"sessionId": "g-1", "kind": "main"}) + "\n")
        self.n = 0

    def say(self, text: str) -> None:
        self.n += 1
        with self.transcript.open("a") as f:
            f.write(json.dumps({"id": f"m{self.n}", "type": "gemini", "content": text}) + "\n")
            f.write(json.dumps({"$set": {"lastUpdated": "now"}}) + "\n")

    def hook(self, event: str, **fields: Any) -> tuple[int, Any, str]:
        payload = {"session_id": "g-1", "transcript_path": str(self.transcript),
                   "cwd": str(self.project), "hook_event_name": event, **fields}  # fmt: skip
        return _run("gemini", payload, self.project)


@pytest.fixture
def gem(project: Path) -> Gemini:
    return Gemini(project)


def test_gemini_denies_an_ungrounded_edit_in_its_own_shape(gem: Gemini) -> None:
    (gem.project / "p.py").write_text("a\n")
    gem.say(LEDGER)
    edit = {"file_path": str(gem.project / "p.py"), "old_string": "a", "new_string": "b"}
    code, out, _ = gem.hook("BeforeTool", tool_name="replace", tool_input=edit)
    assert code == 0 and set(out) == {"decision", "reason"} and out["decision"] == "deny"
    assert "C1 (Hypothetical" in out["reason"] and ORACLE in out["reason"]


def _as_run(call: dict[str, Any], out: Any) -> dict[str, Any]:
    """The call as Gemini runs it: with the hook's rewrite of its input, when there is one."""
    rewritten = (out or {}).get("hookSpecificOutput", {}).get("tool_input")
    return {**call, "tool_input": rewritten} if rewritten else call


def test_gemini_shell_exit_status_decides_the_evidence(gem: Gemini) -> None:
    gem.say(LEDGER)
    call = {"tool_name": "run_shell_command", "tool_input": {"command": ORACLE}}
    # allowed, and run as Gemini runs the hook's rewrite of it (infomark's sandbox, where
    # bubblewrap runs; tests/security/test_gemini_sandbox.py); AfterTool gets the rewrite
    code, out, _ = gem.hook("BeforeTool", **call)
    assert code == 0
    ran = _as_run(call, out)
    failed = {"llmContent": "Output: 1 failed\nExit Code: 1\nProcess Group PGID: 7"}
    _, out, _ = gem.hook("AfterTool", tool_response=failed, **ran)
    ctx = out["hookSpecificOutput"]
    assert ctx["hookEventName"] == "AfterTool" and "outcome=FAIL" in ctx["additionalContext"]
    code, out, _ = gem.hook("BeforeTool", **call)
    assert code == 0 and "systemMessage" not in (out or {})  # a warning is said once
    ran = _as_run(call, out)
    _code, out, _ = gem.hook("AfterTool", tool_response={"llmContent": "Output: ok"}, **ran)
    assert "outcome=PASS" in out["hookSpecificOutput"]["additionalContext"]
    with Gatekeeper.open(gem.project / ".infomark", "g-1", root=gem.project) as gk:
        recorded = [e.payload for e in gk.events() if e.type == "evidence_recorded"]
    ids = [r["record"]["call_id"] for r in recorded]
    assert len(set(ids)) == 2 and all(i.startswith("gemini-") for i in ids)  # two runs, two calls


def test_gemini_finish_reads_the_last_message_not_the_joined_turn(gem: Gemini) -> None:
    gem.say(LEDGER)
    code, out, _ = gem.hook(
        "AfterAgent", prompt="fix", prompt_response=LEDGER + "\nDone, all tests pass.",
        stop_hook_active=False,
    )  # fmt: skip
    assert code == 0 and out["decision"] == "deny" and "C1" in out["reason"]


def test_gemini_a_refused_finish_sent_back_as_a_prompt_keeps_the_turn(gem: Gemini) -> None:
    """Gemini sends a refused finish's reason back as the next prompt (BeforeAgent): that is
    the same turn going on, so the refusal cap is reached (it was reset by each retry, and a
    session refused again and again looped until Gemini's timeout)."""
    gem.say(LEDGER)
    verdicts = []
    for _ in range(5):
        code, out, _ = gem.hook(
            "AfterAgent", prompt="fix", prompt_response="Done.", stop_hook_active=False
        )
        verdicts.append("deny" if out and out.get("decision") == "deny" else "allow")
        if verdicts[-1] == "allow":
            break
        assert code == 0 and out["reason"].startswith("[infomark "), out
        gem.hook("BeforeAgent", prompt=out["reason"])  # the host's retry, as Gemini sends it
    assert verdicts == ["deny", "deny", "deny", "allow"], verdicts  # the cap (3), then UNVERIFIED
    with Gatekeeper.open(gem.project / ".infomark", "g-1", root=gem.project) as gk:
        assert "finished_unverified" in [e.type for e in gk.events()]
    code, out, _ = gem.hook("BeforeAgent", prompt="now fix the other bug")  # the user's turn
    assert code == 0


def test_gemini_result_for_a_call_it_never_authorized_is_not_evidence(gem: Gemini) -> None:
    call = {"tool_name": "run_shell_command", "tool_input": {"command": "true"}}
    _code, out, _ = gem.hook("AfterTool", tool_response={"llmContent": "Output: ok"}, **call)
    assert "no evidence for this result" in out["hookSpecificOutput"]["additionalContext"]


def test_gemini_unreadable_payload_blocks(project: Path) -> None:
    code, out, err = _run("gemini", '{"hook_event_name": "BeforeTool", ', project)
    assert code == 0 and out["decision"] == "deny" and "cannot judge" in out["reason"]
    code, out, err = _run("gemini", "garbage", project)
    assert code == 2 and out is None and "failing closed" in err  # Gemini blocks on exit 2


def test_unused_events_have_no_opinion(gem: Gemini) -> None:
    assert gem.hook("SessionEnd", reason="exit")[:2] == (0, None)
    assert gem.hook("PreCompress", trigger="auto")[:2] == (0, None)  # fired every request


class Codex:
    """A Codex session as its hooks see it: the rollout JSONL is its transcript."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.rollout = project / "rollout.jsonl"
        self.rollout.write_text(json.dumps({"type": "session_meta", "payload": {}}) + "\n")

    def _item(self, item: dict[str, Any]) -> None:
        with self.rollout.open("a") as f:
            f.write(json.dumps({"type": "response_item", "payload": item}) + "\n")

    def say(self, text: str) -> None:
        content = [{"type": "output_text", "text": text}]
        self._item({"type": "message", "role": "assistant", "content": content})

    def ran(self, call_id: str, cmd: str, code: int, output: str) -> None:
        self._item({"type": "function_call", "name": "exec_command", "call_id": call_id,
                    "arguments": json.dumps({"cmd": cmd})})  # fmt: skip
        text = f"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code {code}\n"
        self._item({"type": "function_call_output", "call_id": call_id,
                    "output": text + f"Original token count: 1\nOutput:\n{output}"})  # fmt: skip

    def hook(self, event: str, **fields: Any) -> tuple[int, Any, str]:
        payload = {"session_id": "c-1", "turn_id": "t", "transcript_path": str(self.rollout),
                   "cwd": str(self.project), "hook_event_name": event, "model": "m",
                   "permission_mode": "bypassPermissions", **fields}  # fmt: skip
        return _run("codex", payload, self.project)

    def bash(self, event: str, cmd: str, cid: str, **fields: Any) -> tuple[int, Any, str]:
        return self.hook(event, tool_name="Bash", tool_input={"command": cmd},
                         tool_use_id=cid, **fields)  # fmt: skip


@pytest.fixture
def cx(project: Path) -> Codex:
    from infomark.tools.hosts.codex_sandbox import write_policy

    write_policy(project, None)  # as `infomark install codex` leaves the project
    return Codex(project)


def _context(out: Any, event: str) -> str:
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return str(out["hookSpecificOutput"]["additionalContext"])


def test_codex_shell_evidence_waits_for_the_rollouts_exit_status(cx: Codex) -> None:
    cx.say(LEDGER)
    assert cx.bash("PreToolUse", ORACLE, "call_1")[:2] == (0, None)
    _, out, _ = cx.bash("PostToolUse", ORACLE, "call_1", tool_response="1 failed\n")
    assert "comes with your next tool call" in _context(out, "PostToolUse")
    assert "evidence_ref" not in _context(out, "PostToolUse")
    cx.ran("call_1", ORACLE, 1, "1 failed\n")  # Codex writes it after the hook answered
    _, out, _ = cx.bash("PreToolUse", "cat p.py", "call_2")
    tag = _context(out, "PreToolUse")
    assert "outcome=FAIL" in tag and "(call call_1)" in tag  # the real status, not the output


def test_codex_rollout_line_for_an_unauthorized_call_is_not_evidence(cx: Codex) -> None:
    cx.say(LEDGER)
    cx.ran("call_9", ORACLE, 0, "ok\n")  # never authorized: nothing pending
    assert cx.bash("PreToolUse", "ls", "call_2")[:2] == (0, None)
    cx.bash("PreToolUse", ORACLE, "call_3")
    cx.ran("call_3", "python3 -c 'print(1)'", 0, "1\n")  # another command under its id
    _, out, _ = cx.bash("PreToolUse", "ls", "call_4")
    assert "no evidence for call_3" in _context(out, "PreToolUse")


def test_codex_denies_and_never_asks(cx: Codex) -> None:
    (cx.project / "p.py").write_text("a\n")
    cx.say(LEDGER)
    patch = "*** Begin Patch\n*** Update File: p.py\n@@\n-a\n+b\n*** End Patch\n"
    _, out, _ = cx.hook("PreToolUse", tool_name="apply_patch", tool_input={"command": patch},
                        tool_use_id="call_1")  # fmt: skip
    spec = out["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny" and "C1" in spec["permissionDecisionReason"]
    _, out, _ = cx.bash("PreToolUse", "rm -rf build", "call_2")  # destructive: held → deny
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_codex_stop_refused_as_block(cx: Codex) -> None:
    cx.say(LEDGER)
    _, out, _ = cx.hook("Stop", stop_hook_active=False, last_assistant_message="Done.")
    assert out["decision"] == "block" and "no claim is Exact" in out["reason"]


def _break_the_home(project: Path) -> None:
    home = project / ".infomark"
    (home / "ledger.db").write_bytes(os.urandom(8192))
    for suffix in ("-wal", "-shm"):
        (home / f"ledger.db{suffix}").unlink(missing_ok=True)


def test_codex_a_broken_home_refuses_one_stop_then_lets_the_next_through_unverified(
    cx: Codex,
) -> None:
    """Issue 31: Codex has no cap of its own on a refused Stop, and the journal's cap cannot
    count when the journal is what broke: the host's stop_hook_active is the cap."""
    cx.say(LEDGER)
    assert cx.bash("PreToolUse", "ls", "call_1")[:2] == (0, None)  # the home exists
    _break_the_home(cx.project)
    code, out, _ = cx.hook("Stop", stop_hook_active=False, last_assistant_message="Done.")
    assert code == 0 and out["decision"] == "block", out
    assert "cannot read its ledger" in out["reason"] and "UNVERIFIED" in out["reason"]
    code, out, err = cx.hook("Stop", stop_hook_active=True, last_assistant_message="Done.")
    assert code == 0 and set(out) == {"systemMessage"}, out  # through, and said so
    assert out["systemMessage"].startswith("infomark: finished UNVERIFIED")
    assert "cannot be read" in out["systemMessage"] and "UNVERIFIED" in err
    _, out, _ = cx.bash("PreToolUse", "rm -rf build", "call_2")  # still closed for mutations
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_gemini_a_broken_home_lets_the_retry_of_a_refused_finish_through(gem: Gemini) -> None:
    gem.say(LEDGER)
    gem.hook("BeforeTool", tool_name="run_shell_command", tool_input={"command": "ls"})
    _break_the_home(gem.project)
    _, out, _ = gem.hook("AfterAgent", prompt="fix", prompt_response="Done.",
                         stop_hook_active=False)  # fmt: skip
    assert out["decision"] == "deny" and "cannot read its ledger" in out["reason"]
    _, out, _ = gem.hook("AfterAgent", prompt="fix", prompt_response="Done.",
                         stop_hook_active=True)  # fmt: skip
    assert set(out) == {"systemMessage"} and "finished UNVERIFIED" in out["systemMessage"]


@pytest.mark.parametrize("host", ["gemini", "codex"])
def test_render_keeps_each_kind_in_the_hosts_shape(host: str) -> None:
    spec = load_spec(host)
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                   "permissionDecisionReason": "held"}}  # fmt: skip
    tool_event = "BeforeTool" if host == "gemini" else "PreToolUse"
    out = render(spec, tool_event, HookAnswer(deny)).stdout
    assert "ask" not in json.dumps(out) and "held" in json.dumps(out)
    ctx = {"hookSpecificOutput": {"hookEventName": "X", "additionalContext": "tag"}}
    stop = "AfterAgent" if host == "gemini" else "Stop"
    silent = render(spec, stop, HookAnswer(ctx))  # no context on a finish: said on stderr
    assert silent.stdout is None and "tag" in silent.stderr


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_transcript_readers_never_raise(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.mktemp("t") / "t.jsonl"
    path.write_bytes(data)
    for read in (read_gemini, read_codex):
        chunk = read(str(path), 0)
        assert 0 <= chunk.offset <= len(data) and all(isinstance(t, str) for t in chunk.texts)


def test_install_merges_is_idempotent_relative_and_uninstalls(project: Path) -> None:
    from infomark.tools.hosts.install import install_host, uninstall_host

    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = {"matcher": "write_file", "hooks": [{"type": "command", "command": "mine.sh"}]}
    settings.write_text(json.dumps({"theme": "dark", "hooks": {"BeforeTool": [mine]}}))
    spec = load_spec("gemini")
    assert install_host(spec, root=project).changed
    before = settings.read_bytes()
    assert not install_host(spec, root=project).changed and settings.read_bytes() == before
    data = json.loads(before)
    assert data["theme"] == "dark" and data["hooks"]["BeforeTool"][0] == mine
    ours = data["hooks"]["BeforeTool"][1]["hooks"][0]
    assert ours["command"] == "$GEMINI_PROJECT_DIR/.gemini/infomark-hook hook gemini"
    assert str(project) not in before.decode()  # a teammate's clone runs the same file
    assert set(data["hooks"]) == {"BeforeTool", "AfterTool", "AfterAgent", "SessionStart",
                                  "BeforeAgent"}  # fmt: skip
    assert data["advanced"] == {"ignoreLocalEnv": True}  # no project .env in Gemini's env
    stop = project / ".gemini" / ".env"  # where Gemini's search for a .env stops
    assert stop.read_text().startswith("# Written by `infomark install gemini`")
    assert stop.stat().st_mode & 0o777 == 0o600
    assert uninstall_host(spec, root=project).changed
    assert not stop.exists()  # still install's comment: removed
    assert json.loads(settings.read_text()) == {"theme": "dark", "hooks": {"BeforeTool": [mine]}}
    assert not (project / ".gemini" / "infomark-hook").exists()
    assert not (project / ".gemini" / "infomark-env.json").exists()
    assert not uninstall_host(spec, root=project).changed
    # the user's own value comes back; one the user changed after the install stays theirs
    settings.write_text(json.dumps({"advanced": {"ignoreLocalEnv": False, "x": 1}}))
    install_host(spec, root=project)
    assert install_host(spec, root=project).changed is False
    assert json.loads(settings.read_text())["advanced"] == {"ignoreLocalEnv": True, "x": 1}
    stop.write_text(stop.read_text() + "GEMINI_API_KEY=mine\n")  # the user's own variables
    uninstall_host(spec, root=project)
    assert json.loads(settings.read_text()) == {"advanced": {"ignoreLocalEnv": False, "x": 1}}
    assert stop.read_text().endswith("GEMINI_API_KEY=mine\n")  # theirs now: kept

    codex = load_spec("codex")
    install_host(codex, root=project)
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == "./.codex/infomark-hook hook codex"
    assert hooks["PreToolUse"][0]["hooks"][0]["timeout"] == 30  # seconds, for Codex


def test_install_refuses_a_broken_file_and_changes_nothing(project: Path) -> None:
    from infomark.kernel.errors import UserError
    from infomark.tools.hosts.install import install_host

    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        install_host(load_spec("gemini"), root=project)
    assert settings.read_text() == "{not json"
    assert not (project / ".gemini" / "infomark-hook").exists()


@pytest.mark.parametrize(
    ("host", "event", "key"),
    [("gemini", "BeforeTool", "reason"), ("gemini", "AfterAgent", "reason"),
     ("codex", "PreToolUse", "hookSpecificOutput"), ("codex", "Stop", "reason")],
)  # fmt: skip
def test_a_launcher_that_cannot_start_refuses_in_the_hosts_shape(
    tmp_path: Path, host: str, event: str, key: str
) -> None:
    import os

    from infomark.tools.launcher import render as render_launcher

    launcher = tmp_path / "infomark-hook"
    launcher.write_text(render_launcher(paths=[str(tmp_path / "gone")]))
    os.chmod(launcher, 0o500)
    proc = subprocess.run(
        [str(launcher), "hook", host], input=json.dumps({"hook_event_name": event}),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and key in out
    assert f"re-run `infomark install {host}`" in json.dumps(out)
    assert out.get("decision") in ("deny", "block", None)


def test_doctor_sees_each_host_mounted_launcher_and_trust(project: Path, tmp_path: Path) -> None:
    from infomark.tools.doctor_agents import agent_findings
    from infomark.tools.hosts.install import install_host

    user = tmp_path / "user"
    user.mkdir()
    assert {(f.area, f.check, f.status) for f in agent_findings(project, user)} == {
        ("gemini", "installed", "info"),
        ("codex", "installed", "info"),
        ("opencode", "installed", "info"),
    }
    install_host(load_spec("gemini"), root=project)
    found = {(f.area, f.check): f.status for f in agent_findings(project, user)}
    assert found[("gemini", "installed")] == "ok" and found[("gemini", "launcher")] == "ok"
    assert found[("gemini", "folder_trusted")] == "warning"
    from infomark.tools import sandbox

    bwrap = sandbox.probe().backend is sandbox.SandboxBackend.BWRAP
    assert found[("gemini", "shell_sandbox")] == ("ok" if bwrap else "problem")
    assert ("gemini", "shell_rewrite") not in found
    (user / ".gemini").mkdir()
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (user / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    settings = project / ".gemini" / "settings.json"
    data = json.loads(settings.read_text())
    del data["hooks"]["AfterAgent"]  # the finish gate unmounted by hand
    data["hooks"]["BeforeTool"].append(
        {"matcher": "run_shell.*", "hooks": [{"type": "command", "command": "./mine.sh"}]}
    )
    settings.write_text(json.dumps(data))
    (project / ".gemini" / "infomark-hook").unlink()
    found = {(f.area, f.check): f.status for f in agent_findings(project, user)}
    assert ("gemini", "folder_trusted") not in found
    assert found[("gemini", "hook_missing")] == "problem"
    assert found[("gemini", "launcher")] == "problem"
    assert found[("gemini", "shell_rewrite")] == "warning"  # it could undo infomark's wrapper


def test_codex_sandbox_profile_is_merged_kept_out_of_the_users_choice_and_removed(
    project: Path,
) -> None:
    import tomllib

    from infomark.tools.hosts.codex_sandbox import remove_policy, write_policy

    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "x"\n\n[mcp_servers.docs]\ncommand = "docs"\n')
    (project / ".infomark").write_text("")  # Codex's placeholder for a missing hidden path
    assert write_policy(project, None) == (True, "")
    data = tomllib.loads(config.read_text())
    assert data["default_permissions"] == "infomark" and data["model"] == "x"
    assert data["mcp_servers"]["docs"]["command"] == "docs"  # still its own table
    assert data["permissions"]["infomark"]["filesystem"][":project_roots"] == {
        ".": "write",
        ".infomark": "none",
    }
    assert (project / ".infomark").is_dir()
    assert write_policy(project, None) == (False, "")  # idempotent
    assert remove_policy(project)
    assert config.read_text() == 'model = "x"\n\n[mcp_servers.docs]\ncommand = "docs"\n'
    config.write_text('sandbox_mode = "workspace-write"\n')  # the user chose a sandbox
    changed, note = write_policy(project, None)
    assert not changed and "chooses its own sandbox" in note
    assert config.read_text() == 'sandbox_mode = "workspace-write"\n'
    config.unlink()
    changed, note = write_policy(project, project.parent / "elsewhere")
    assert not changed and "outside the project" in note and not config.exists()


def test_last_model_message_is_read_from_the_end_of_a_long_recording(tmp_path: Path) -> None:
    from infomark.tools.hooks.host_transcripts import last_gemini_text

    path = tmp_path / "chat.jsonl"
    with path.open("w") as f:
        f.write(json.dumps({"type": "gemini", "id": "a", "content": "first"}) + "\n")
        f.write(json.dumps({"type": "user", "content": "x" * (9 << 20)}) + "\n")  # > 8 MiB
        f.write(json.dumps({"type": "gemini", "id": "b", "content": "last"}) + "\n")
    assert last_gemini_text(str(path)) == "last"
    assert last_gemini_text(str(tmp_path / "missing.jsonl")) is None


@pytest.mark.parametrize("kind", ["deny", "ask", "block"])
def test_a_refusal_a_host_has_no_shape_for_still_blocks(kind: str) -> None:
    """A HostSpec missing an answer template must not turn a refusal into exit 0 (an allow)."""
    import dataclasses

    from infomark.tools.hooks.answer import HookAnswer
    from infomark.tools.hosts import core
    from infomark.tools.hosts.gemini import SPEC

    bare = dataclasses.replace(SPEC, answers={})
    if kind == "block":
        stdout: dict[str, Any] = {"decision": "block", "reason": "not finished"}
    else:
        stdout = {"hookSpecificOutput": {"permissionDecision": kind,
                                         "permissionDecisionReason": "not finished"}}  # fmt: skip
    out = core.render(bare, "BeforeTool", HookAnswer(stdout, 0, ""))
    assert out.stdout is None and out.exit_code == 2
    assert "not finished" in out.stderr


def test_gemini_unwrap_takes_only_infomarks_exact_form() -> None:
    from infomark.tools.hosts.gemini_sandbox import exec_prefix, unwrap, wrap

    prefix = exec_prefix("/p/.infomark", "/p", ["/p/.gemini/infomark-hook"])
    assert prefix == "/p/.gemini/infomark-hook hook sandbox-exec --home /p/.infomark --root /p -- "
    for command in ["pytest -q", "echo 'a b' \"$HOME\"; exit 3", "", "x'y"]:
        assert unwrap(wrap(command, prefix), prefix) == command
    for text in [
        "pytest -q",  # ran as the model wrote it (the hook timed out)
        prefix + "'x'; cat /p/.infomark/key",  # a second command after the wrapped one
        prefix + "'x'&&cat /p/.infomark/key",  # one shlex word, two commands to bash
        prefix + "x y",  # two words: not quoted as infomark quotes
        prefix.replace("/p/.infomark", "/q") + "'x'",  # another home
        prefix + "'unterminated",
        None,
    ]:
        assert unwrap(text, prefix) is None, text


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
@settings(max_examples=200, deadline=None)
def test_gemini_wrap_round_trips_any_command(command: str) -> None:
    from infomark.tools.hosts.gemini_sandbox import unwrap, wrap

    prefix = "/l hook sandbox-exec --home /h --root /r -- "
    assert unwrap(wrap(command, prefix), prefix) == command


def test_sandbox_exec_refuses_what_it_cannot_read(project: Path) -> None:
    for args in (["--home", "h"], ["--home", "h", "--root", "r", "--", "a", "b"], ["--x", "1"]):
        proc = subprocess.run(
            [EXE, "hook", "sandbox-exec", *args], capture_output=True, text=True, timeout=60,
            cwd=project, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 2 and "infomark hook sandbox-exec" in proc.stderr, args

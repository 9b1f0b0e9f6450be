"""``infomark hook opencode`` and the OpenCode plugin ``infomark install opencode`` writes.

The payloads have the shapes the plugin sends (tests/e2e/test_opencode_e2e.py runs the real
OpenCode 1.18.33 with it). The plugin itself runs under the real ``node`` here, with a
launcher that crashes, exits 2 or prints garbage, to prove it fails closed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hook_session import EXE, LEDGER, ORACLE

from infomark.gatekeeper import Gatekeeper
from infomark.tools.hosts.core import load_spec


def _hook(project: Path, event: str, **fields: Any) -> tuple[int, Any, str]:
    payload = {"session_id": "oc-1", "cwd": str(project), "hook_event_name": event, **fields}
    proc = subprocess.run(
        [EXE, "hook", "opencode"], input=json.dumps(payload), capture_output=True, text=True,
        cwd=project, timeout=60,
    )  # fmt: skip
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, out, proc.stderr


def test_an_ungrounded_edit_is_denied_naming_the_claim_sent_with_the_call(project: Path) -> None:
    (project / "p.py").write_text("a\n")
    edit = {"filePath": str(project / "p.py"), "oldString": "a", "newString": "b"}
    code, out, _ = _hook(project, "tool.execute.before", tool_name="edit", tool_input=edit,
                         tool_use_id="call_1", assistant_texts=[LEDGER])  # fmt: skip
    assert code == 0 and set(out) == {"decision", "reason"} and out["decision"] == "deny"
    assert "C1 (Hypothetical" in out["reason"] and ORACLE in out["reason"]


def test_the_shell_exit_status_in_metadata_decides_the_evidence(project: Path) -> None:
    call = {"tool_name": "bash", "tool_input": {"command": ORACLE, "description": "t"}}
    for cid, metadata, outcome in (
        ("c1", {"exit": 1}, "outcome=FAIL"),
        ("c2", {}, "outcome=FAIL"),  # no exit status: never a pass
        ("c3", {"exit": 0}, "outcome=PASS"),
    ):
        before = _hook(project, "tool.execute.before", tool_use_id=cid,
                       assistant_texts=[LEDGER], **call)  # fmt: skip
        if cid == "c1":  # allowed; the session's first decision says the shell is unsandboxed
            assert before[0] == 0 and "commands are NOT sandboxed" in before[1]["message"]
        else:
            assert before[:2] == (0, None)  # allowed: no output
        response = {"output": "1 passed", "metadata": metadata}
        _, out, _ = _hook(project, "tool.execute.after", tool_use_id=cid,
                          tool_response=response, **call)  # fmt: skip
        assert set(out) == {"context"} and outcome in out["context"], out
    with Gatekeeper.open(project / ".infomark", "oc-1", root=project) as gk:
        ids = [e.payload["record"]["call_id"] for e in gk.events() if e.type == "evidence_recorded"]
    assert ids == ["c1", "c2", "c3"]  # OpenCode's own call ids pair each run with its check


def test_a_finish_without_evidence_is_a_block_and_session_start_is_context(
    project: Path,
) -> None:
    code, out, _ = _hook(project, "session.start", source="startup")
    assert code == 0 and "infomark protocol" in out["context"]
    _hook(project, "tool.execute.before", tool_name="read", tool_input={"filePath": "x"},
          tool_use_id="r1", assistant_texts=[LEDGER])  # fmt: skip
    code, out, _ = _hook(project, "text.complete", last_assistant_message="Done, all pass.")
    assert code == 0 and out["decision"] == "block" and "C1" in out["reason"]
    assert _hook(project, "session.idle")[:2] == (0, None)  # not used: no opinion


def test_install_is_idempotent_relative_keeps_a_foreign_file_and_uninstalls(
    project: Path,
) -> None:
    from infomark.kernel.errors import UserError
    from infomark.tools.hosts.install import install_host, uninstall_host

    spec = load_spec("opencode")
    config = project / "opencode.json"
    config.write_text('{"theme": "dark"}')
    assert install_host(spec, root=project).changed
    plugin = project / ".opencode" / "plugins" / "infomark.js"
    text = plugin.read_text()
    assert not install_host(spec, root=project).changed and plugin.read_text() == text
    assert str(project) not in text  # the launcher is found beside the plugin, in any clone
    assert config.read_text() == '{"theme": "dark"}'  # auto-discovered: no config entry
    assert uninstall_host(spec, root=project).changed
    assert not plugin.exists() and not (plugin.parent / "infomark-hook").exists()
    assert not uninstall_host(spec, root=project).changed
    plugin.write_text("export const Mine = async () => ({});\n")
    with pytest.raises(UserError, match="not infomark's plugin"):
        install_host(spec, root=project)
    assert not uninstall_host(spec, root=project).changed and plugin.exists()


def test_doctor_sees_the_plugin_and_its_launcher(project: Path, tmp_path: Path) -> None:
    from infomark.tools.doctor_agents import agent_findings
    from infomark.tools.hosts.install import install_host

    user = tmp_path / "user"
    user.mkdir()
    found = {(f.area, f.check): f.status for f in agent_findings(project, user)}
    assert found[("opencode", "installed")] == "info"
    install_host(load_spec("opencode"), root=project)
    found = {(f.area, f.check): f.status for f in agent_findings(project, user)}
    assert found[("opencode", "installed")] == "ok" and found[("opencode", "launcher")] == "ok"
    plugin = project / ".opencode" / "plugins" / "infomark.js"
    plugin.write_text(plugin.read_text().replace('"experimental.text.complete"', '"x"'))
    (plugin.parent / "infomark-hook").unlink()
    found = {(f.area, f.check): f.status for f in agent_findings(project, user)}
    assert found[("opencode", "hook_missing")] == "problem"
    assert found[("opencode", "launcher")] == "problem"


_DRIVER = """
import { InfomarkPlugin } from "./plugin.mjs";
const prompts = [];
const client = { session: {
  message: async () => ({ data: { parts: [] } }),
  prompt: async (req) => { prompts.push(req.body.parts[0].text); return {}; },
} };
const hooks = await InfomarkPlugin({ client, directory: process.cwd() });
const results = {};
for (const mode of ["crash", "deny", "garbage", "allow", "missing"]) {
  process.env.FAKE_MODE = mode;
  try {
    const call = { tool: "edit", sessionID: "s", callID: mode };
    await hooks["tool.execute.before"](call, { args: {} });
    results[mode] = "ran";
  } catch (e) {
    results[mode] = "threw: " + e.message;
  }
}
process.env.FAKE_MODE = "crash";
const out = { output: "1 passed", metadata: { exit: 0 } };
await hooks["tool.execute.after"]({ tool: "bash", sessionID: "s", callID: "a", args: {} }, out);
results.after = out.output;
for (let i = 0; i < 4; i++) {
  const part = { sessionID: "s", messageID: "m" + i, partID: "p" };
  await hooks["experimental.text.complete"](part, { text: "Done." });
}
results.prompts = prompts;
// an answer that ended with no text is judged at session.idle; an interrupted one is not
process.env.FAKE_MODE = "block";
const resumed = [];
const sent = new Promise((resolve) => {
  client.session.promptAsync = async (req) => {
    resumed.push(req.path.id);
    resolve(req.body.parts[0].text);
    return {};
  };
});
const info = (id, sessionID, extra) =>
  ({ id, sessionID, role: "assistant", finish: "stop", ...extra });
const emit = (type, properties) => hooks.event({ event: { type, properties } });
const aborted = { error: { name: "MessageAbortedError" } };
await emit("message.updated", { info: info("a1", "s1", aborted) });
await emit("session.idle", { sessionID: "s1" });
await emit("message.updated", { info: info("a2", "s2", { finish: "tool-calls" }) });
await emit("session.idle", { sessionID: "s2" });
await emit("message.updated", { info: info("a3", "s3", {}) });
await emit("session.idle", { sessionID: "s3" });
results.idle = await sent;
results.resumed = resumed;
console.log(JSON.stringify(results));
"""
_FAKE = """#!/bin/sh
cat >/dev/null
case "$FAKE_MODE" in
  crash) echo "Traceback: boom" >&2; exit 1 ;;
  deny) echo "denied by the fake" >&2; exit 2 ;;
  garbage) echo "not json" ;;
  allow) exit 0 ;;
  block) echo '{"decision": "block", "reason": "not done: run the oracle"}' ;;
esac
"""


def test_the_plugin_fails_closed_when_the_hook_cannot_answer(tmp_path: Path) -> None:
    from infomark.tools.hosts.opencode_plugin import render_plugin

    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true requires node (OpenCode's plugin runs on a JS runtime)")
        pytest.skip("SKIPPED LOUDLY: node is not on PATH; the plugin cannot be run here")
    (tmp_path / "plugin.mjs").write_text(render_plugin(python=None, extra=[], timeout=30))
    (tmp_path / "driver.mjs").write_text(_DRIVER)
    fake = tmp_path / "infomark-hook"
    fake.write_text(_FAKE)
    fake.chmod(0o700)
    done = subprocess.run([node, "driver.mjs"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "FAKE_MODE": ""})  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert results["crash"].startswith("threw: [infomark] the call is refused")
    assert "exit 1: Traceback: boom" in results["crash"]
    next_step = "run `infomark doctor` and `infomark install opencode` in the project"
    assert results["crash"].endswith(next_step)
    assert results["deny"] == "threw: denied by the fake"
    assert "unreadable answer" in results["garbage"] and results["allow"] == "ran"
    assert results["missing"] == "ran"  # the fake exits 0 silently for an unknown mode
    assert "no evidence recorded" in results["after"] and results["after"].startswith("1 passed")
    assert len(results["prompts"]) == 3  # a crashing finish check: refused 3 times, then let go
    assert all("the finish is refused" in p for p in results["prompts"])
    # idle: only the answer that ended as a finish (not tools, not interrupted) is resumed
    assert results["idle"] == "not done: run the oracle" and results["resumed"] == ["s3"]
    fake.unlink()  # the launcher is gone: the call is refused too
    done = subprocess.run([node, "driver.mjs"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert json.loads(done.stdout)["allow"].startswith("threw: [infomark] the call is refused")

"""Gemini CLI's shell commands in infomark's sandbox, through the real hook process.

``BeforeTool`` answers an allowed ``run_shell_command`` with its command wrapped in
``infomark hook sandbox-exec`` (tools/hosts/gemini_sandbox.py); the wrapped command is run
here with ``bash -c`` as Gemini CLI runs it. An uncooperative agent's script then tries to
read the key, list the home, and switch the hooks off for its next session (rewrite
``.gemini/settings.json``, replace the launcher); its file tools try the same. A command that
reached ``AfterTool`` unwrapped (the hook timed out) makes the session's runs ground nothing.
Where bubblewrap cannot run these tests skip loudly (and fail under CI).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import OWN_RUNS_TOML, ledger_text, stamp
from hook_session import EXE

from infomark.gatekeeper import Gatekeeper
from infomark.tools.hooks.sandboxed import bwrap_usable

ORACLE = "python3 check.py"
SETTINGS = '{"hooks": {}, "advanced": {"ignoreLocalEnv": true}}\n'  # as install leaves it
SID = "g-1"


def _need_bwrap(home: Path) -> None:
    usable, detail, fix = bwrap_usable(home)
    if not usable:
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"CI must run the sandbox tests: {detail}; {fix}")
        pytest.skip(f"SKIPPED LOUDLY: bubblewrap cannot run here ({detail}); {fix}")


class _Gemini:
    def __init__(self, tmp_path: Path) -> None:
        self.project = tmp_path / "project"
        self.project.mkdir()
        self.home = self.project / ".infomark"
        Gatekeeper.open(self.home, SID, root=self.project).close()
        _need_bwrap(self.home)
        (self.project / "infomark.toml").write_text(OWN_RUNS_TOML)  # own runs may be Exact
        (self.project / "check.py").write_text("print('1 passed')\n")
        gemini = self.project / ".gemini"
        gemini.mkdir()
        (gemini / "settings.json").write_text(SETTINGS)
        (gemini / ".env").write_text("# as install leaves it\n")
        (gemini / "infomark-hook").write_text("#!/bin/sh\n")
        self.transcript = self.project / "chat.jsonl"
        self.transcript.write_text(json.dumps({"sessionId": SID, "kind": "main"}) + "\n")
        self.user = tmp_path / "user"
        (self.user / ".config" / "infomark").mkdir(parents=True)
        (self.user / ".config" / "infomark" / "operator-token").write_text("op-secret\n")

    def say(self, text: str) -> None:
        with self.transcript.open("a") as f:
            f.write(json.dumps({"id": "m", "type": "gemini", "content": text}) + "\n")

    def hook(self, event: str, **fields: Any) -> Any:
        payload = {"session_id": SID, "transcript_path": str(self.transcript),
                   "cwd": str(self.project), "hook_event_name": event, **fields}  # fmt: skip
        proc = subprocess.run(
            [EXE, "hook", "gemini"], input=json.dumps(payload), capture_output=True, text=True,
            cwd=self.project, timeout=60, env={**os.environ, "HOME": str(self.user)},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def shell(self, command: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
        """BeforeTool, then the command Gemini runs: the hook's rewrite of it."""
        out = self.hook("BeforeTool", tool_name="run_shell_command",
                        tool_input={"command": command, "description": "d"})  # fmt: skip
        tool_input = out["hookSpecificOutput"]["tool_input"]
        assert tool_input["description"] == "d"  # the whole input goes back
        done = subprocess.run(
            ["bash", "-c", tool_input["command"]], capture_output=True, text=True,
            cwd=self.project, timeout=60, env={**os.environ, "HOME": str(self.user)},
        )  # fmt: skip
        return tool_input, done

    def gk(self) -> Gatekeeper:
        return Gatekeeper.open(self.home, SID, root=self.project)


@pytest.fixture
def gem(tmp_path: Path) -> _Gemini:
    return _Gemini(tmp_path)


ATTACK = """\
import os
for what, act in [
    ("list", lambda: os.listdir(".infomark")),
    ("key", lambda: open(".infomark/key", "rb").read()),
    ("token", lambda: open(os.path.expanduser("~/.config/infomark/operator-token")).read()),
    ("settings", lambda: open(".gemini/settings.json", "w").write('{"hooks": {"x": 1}}')),
    ("launcher", lambda: os.replace("check.py", ".gemini/infomark-hook")),
    ("gemini_env", lambda: open(".gemini/.env", "w").write("BASH_ENV=./x.sh")),
    ("dotenv", lambda: open(".env", "w").write("BASH_ENV=./x.sh")),  # Gemini ignores it
    ("rm_stop", lambda: os.unlink(".gemini/.env")),
]:
    try:
        print(what, "GOT", act())
    except OSError as exc:
        print(what, "refused", type(exc).__name__)
open("made.txt", "w").write("ok")
"""


def test_a_wrapped_command_cannot_reach_the_home_or_switch_the_hooks_off(gem: _Gemini) -> None:
    gem.hook("SessionStart", source="startup")
    (gem.project / "attack.py").write_text(ATTACK)
    _input, done = gem.shell("python3 attack.py")
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["list"] == "GOT []"  # an empty, read-only directory in its place
    for what in ("key", "token", "settings", "launcher", "gemini_env", "rm_stop"):
        assert lines[what].startswith("refused"), done.stdout
    assert lines["dotenv"].startswith("GOT")  # the project's own .env stays the agent's
    assert (gem.project / ".gemini" / "settings.json").read_text() == SETTINGS
    assert (gem.project / ".gemini" / ".env").read_text() == "# as install leaves it\n"
    assert (gem.project / ".gemini" / "infomark-hook").read_text() == "#!/bin/sh\n"
    assert (gem.project / "made.txt").read_text() == "ok"  # the project stays writable
    _input, done = gem.shell("exit 3")
    assert done.returncode == 3  # the exit status passes through


def test_the_file_tools_cannot_switch_the_hooks_off(gem: _Gemini) -> None:
    (gem.project / "infomark.toml").write_text('profile = "observe"\n')  # else allowed
    for tool, path in [("write_file", ".gemini/settings.json"),
                       ("write_file", ".gemini/infomark-hook"),
                       ("write_file", ".gemini/.env"),
                       ("write_file", ".gemini/extensions/x/gemini-extension.json"),
                       ("replace", str(gem.user / ".gemini" / "settings.json"))]:  # fmt: skip
        out = gem.hook("BeforeTool", tool_name=tool,
                       tool_input={"file_path": path, "content": "{}"})  # fmt: skip
        assert out["decision"] == "deny" and "protected_config" in out["reason"], out
        assert "Gemini CLI" in out["reason"], out


def _ref(out: Any) -> str:
    text = out["hookSpecificOutput"]["additionalContext"]
    return text.split("evidence_ref=", 1)[1].split()[0].rstrip(".,;)")


def test_a_wrapped_run_grounds_a_claim_and_an_unwrapped_one_does_not(gem: _Gemini) -> None:
    assert "NOT sandboxed" not in json.dumps(gem.hook("SessionStart", source="startup"))
    gem.say(ledger_text(("C1", "Hypothetical", ORACLE), premises=("C1",)))
    tool_input, done = gem.shell(ORACLE)
    assert done.returncode == 0 and "1 passed" in done.stdout
    out = gem.hook("AfterTool", tool_name="run_shell_command", tool_input=tool_input,
                   tool_response={"llmContent": "Output: 1 passed"})  # fmt: skip
    ref = _ref(out)
    with gem.gk() as gk:
        assert gk.state.agent_sandbox["sandboxed"] is True
        assert gk.ingest(stamp("C1", ref)).stamps_rejected == []
        assert gk.state.claims["C1"].grounded
    # the hook timed out: Gemini ran the command as the model wrote it
    plain = {"command": ORACLE, "description": "d"}
    assert gem.hook("BeforeTool", tool_name="run_shell_command", tool_input=plain)
    out = gem.hook("AfterTool", tool_name="run_shell_command", tool_input=plain,
                   tool_response={"llmContent": "Output: 1 passed"})  # fmt: skip
    late = _ref(out)
    with gem.gk() as gk:
        box = gk.state.agent_sandbox
        assert box["sandboxed"] is False and "outside infomark's sandbox" in box["detail"]
        (rejected,) = gk.ingest(stamp("C1", late)).stamps_rejected
        assert rejected["reason"] == "unsandboxed_run"
    out = gem.hook("BeforeTool", tool_name="run_shell_command", tool_input=plain)
    assert "commands are NOT sandboxed" in out["systemMessage"]  # said once, loudly

"""An agent session driven through the real hook process, with the real tools behind it.

Each tool call goes as Claude Code sends it: ``PreToolUse`` to ``infomark hook claude-code``
(a fresh process, real JSON on stdin); when allowed, the call really runs (a shell command
in the project, a file edit); then ``PostToolUse`` (or ``PostToolUseFailure`` with Claude
Code's ``Exit code N`` text) with its real output. ``stop`` sends ``Stop`` with the final
message. Every answer is kept, so a test can count denials and refusals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import claude_sandbox_on
from hook_session import EXE

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


def make_project(root: Path, config: str | None = 'profile = "verify"\n') -> Path:
    """A git project with a bug in calc.py that tests/test_calc.py::test_add catches."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(BUGGY)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TEST)
    (root / "conftest.py").write_text("")  # the root on sys.path for a bare pytest
    if config is not None:
        (root / "infomark.toml").write_text(config)
    claude_sandbox_on(root)  # as `infomark install claude-code` leaves it: the agent's own
    # runs are sandboxed, so they count (tests/security/test_unsandboxed_runs.py: when not)
    git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    return root


@dataclass
class Answer:
    event: str
    code: int
    out: dict[str, Any] | None
    stderr: str

    @property
    def decision(self) -> str:
        """allow (no output), deny, ask, block (Stop refused), or the answer's own word."""
        if self.out is None:
            return "allow"
        spec = self.out.get("hookSpecificOutput") or {}
        if "permissionDecision" in spec:
            return str(spec["permissionDecision"])
        if self.out.get("decision") == "block":
            return "block"
        return "allow"

    @property
    def reason(self) -> str:
        if self.out is None:
            return ""
        spec = self.out.get("hookSpecificOutput") or {}
        return str(
            spec.get("permissionDecisionReason")
            or self.out.get("reason")
            or spec.get("additionalContext")
            or self.out.get("systemMessage")
            or ""
        )


@dataclass
class Agent:
    """One agent session in ``project`` through the real hook."""

    project: Path
    sid: str = "0b7c6a52-1111-4222-8333-444455556666"
    permission_mode: str = "default"
    env: dict[str, str] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)
    n: int = 0

    def __post_init__(self) -> None:
        self.transcript = self.project.parent / f"{self.project.name}-transcript.jsonl"
        self.transcript.write_text("")

    def hook(self, event: str, **fields: Any) -> Answer:
        payload = {
            "session_id": self.sid,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "hook_event_name": event,
            "permission_mode": self.permission_mode,
            **fields,
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INFOMARK_", "CLAUDE"))}
        proc = subprocess.run(
            [EXE, "hook", "claude-code"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=self.project,
            env={**env, **self.env},
            timeout=120,
            check=False,
        )
        out = json.loads(proc.stdout) if proc.stdout.strip() else None
        answer = Answer(event, proc.returncode, out, proc.stderr)
        self.answers.append(answer)
        return answer

    def say(self, text: str) -> None:
        """The agent writes text (a ledger, a stamp) before its next call, as in a transcript."""
        self.n += 1
        line = {
            "type": "assistant",
            "message": {
                "id": f"msg_{self.n}",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
            },
        }
        with self.transcript.open("a") as f:
            f.write(json.dumps(line) + "\n")

    def _call(self, tool: str, tool_input: dict[str, Any]) -> tuple[Answer, str]:
        self.n += 1
        use_id = f"toolu_{self.n:04d}"
        line = {
            "type": "assistant",
            "message": {
                "id": f"msg_{self.n}",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": use_id, "name": tool, "input": tool_input}],
            },
        }
        with self.transcript.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return self.hook(
            "PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=use_id
        ), use_id

    def _result(self, text: str) -> None:
        line = {"type": "user", "message": {"role": "user", "content": text}}
        with self.transcript.open("a") as f:
            f.write(json.dumps(line) + "\n")

    def bash(self, command: str) -> tuple[Answer, Answer | None, int]:
        """Ask, run when allowed, report. ``(pre, post, exit code)``; post None when not run."""
        tool_input = {"command": command}
        pre, use_id = self._call("Bash", tool_input)
        if pre.decision != "allow":
            return pre, None, -1
        proc = subprocess.run(
            ["/bin/bash", "-c", command],
            capture_output=True,
            text=True,
            cwd=self.project,
            # the project's pytest needs no plugin; this venv's (hypothesis, xdist, anyio,
            # timeout) cost ~1 s of CPU per run to load. (The attested runs are the hook's,
            # in the sandbox's own environment: this does not reach them.)
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            timeout=300,
            check=False,
        )
        output = proc.stdout + proc.stderr
        if proc.returncode == 0:
            post = self.hook(
                "PostToolUse",
                tool_name="Bash",
                tool_input=tool_input,
                tool_use_id=use_id,
                tool_response={"stdout": proc.stdout, "stderr": proc.stderr, "interrupted": False},
            )
        else:
            post = self.hook(
                "PostToolUseFailure",
                tool_name="Bash",
                tool_input=tool_input,
                tool_use_id=use_id,
                error=f"Exit code {proc.returncode}\n{output}",
            )
        self._result(post.reason)
        return pre, post, proc.returncode

    def edit(self, rel: str, old: str, new: str) -> tuple[Answer, Answer | None]:
        path = self.project / rel
        tool_input = {"file_path": str(path), "old_string": old, "new_string": new}
        pre, use_id = self._call("Edit", tool_input)
        if pre.decision != "allow":
            return pre, None
        path.write_text(path.read_text().replace(old, new, 1))
        post = self.hook(
            "PostToolUse",
            tool_name="Edit",
            tool_input=tool_input,
            tool_use_id=use_id,
            tool_response={"filePath": str(path), "success": True},
        )
        self._result(post.reason)
        return pre, post

    def stop(self, final: str) -> Answer:
        self.say(final)
        return self.hook("Stop", last_assistant_message=final, stop_hook_active=False)

    def refusals(self) -> list[Answer]:
        """Every deny, ask and Stop refusal the agent saw."""
        return [a for a in self.answers if a.decision in ("deny", "ask", "block")]

    def last_tag(self) -> str:
        """The evidence ref of the last PostToolUse answer (``ev_…``)."""
        import re

        for a in reversed(self.answers):
            if a.event.startswith("PostToolUse"):
                m = re.search(r"ev_[0-9a-f]{24}", a.reason)
                if m:
                    return m.group(0)
        raise AssertionError("no evidence tag was delivered")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
    return subprocess.run(
        [EXE, *args, "--home", str(project / ".infomark")],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )

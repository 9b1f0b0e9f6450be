"""The Claude Code command hook as Claude Code runs it: a subprocess, JSON on stdin.

:class:`HookSession` writes a transcript the way Claude Code does (assistant text
blocks, tool uses, and tool results as ``user`` entries) and runs
``infomark hook claude-code`` on payloads, returning ``(exit code, stdout JSON or
None, stderr)``. Payloads never carry a ``tool_use_id`` the transcript lacks, so the
hook never waits for one.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rel_support import EXE, child_env

__all__ = ["HookResult", "HookSession", "denial_reason", "run_hook"]


@dataclass(frozen=True)
class HookResult:
    code: int
    out: Any
    err: str

    @property
    def silent_allow(self) -> bool:
        return self.code == 0 and self.out is None


def run_hook(raw: bytes, cwd: Path, *, timeout: float = 60, **env: str) -> HookResult:
    """Run the hook on raw stdin bytes; stdout parsed as JSON when there is any."""
    proc = subprocess.run(
        [EXE, "hook", "claude-code"],
        input=raw,
        capture_output=True,
        cwd=cwd,
        env=child_env(**env),
        timeout=timeout,
        check=False,
    )
    text = proc.stdout.decode("utf-8", "replace")
    out = json.loads(text) if text.strip() else None
    return HookResult(proc.returncode, out, proc.stderr.decode("utf-8", "replace"))


def denial_reason(result: HookResult) -> str | None:
    """The PreToolUse deny reason, or None when the call was not denied."""
    if not isinstance(result.out, dict):
        return None
    spec = result.out.get("hookSpecificOutput") or {}
    if spec.get("permissionDecision") == "deny":
        return str(spec.get("permissionDecisionReason"))
    return None


class HookSession:
    """One Claude Code session in ``project``: its transcript and hook calls."""

    def __init__(self, project: Path, sid: str = "rel-1", *, sandbox: bool = True) -> None:
        if sandbox:  # Claude Code's Bash sandbox on, as `infomark install claude-code` leaves it
            from helpers import claude_sandbox_on

            claude_sandbox_on(project)
        self.project = project
        self.sid = sid
        self.transcript = project / f"{sid}.jsonl"
        self.transcript.touch()
        self.home = project / ".infomark"

    def _append(self, entry: dict[str, Any]) -> None:
        with self.transcript.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def say(self, text: str) -> None:
        """An assistant text block."""
        content = [{"type": "text", "text": text}]
        self._append({"type": "assistant", "message": {"role": "assistant", "content": content}})

    def tool_use(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> None:
        """An assistant ``tool_use`` block, written (as Claude Code does) before its PreToolUse
        hook runs: a payload with this ``tool_use_id`` then finds it and never waits."""
        block = {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}
        self._append({"type": "assistant", "message": {"role": "assistant", "content": [block]}})

    def tool_result(self, tool_use_id: str, text: str) -> None:
        """A tool result as Claude Code writes it: a ``user`` entry (never assistant text)."""
        block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
        self._append({"type": "user", "message": {"role": "user", "content": [block]}})

    def witness(self, result: HookResult, tool_use_id: str = "toolu_w") -> str:
        """Write a PostToolUse answer's context into the transcript as Claude Code does (a
        ``hook_additional_context`` attachment); returns the context text."""
        ctx = str(result.out["hookSpecificOutput"]["additionalContext"])
        attachment = {
            "type": "hook_additional_context",
            "content": [ctx],
            "hookName": "PostToolUse:Bash",
            "toolUseID": tool_use_id,
            "hookEvent": "PostToolUse",
        }
        self._append({"type": "attachment", "attachment": attachment})
        return ctx

    def payload(self, event: str, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": self.sid,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "hook_event_name": event,
            "permission_mode": "default",
            **fields,
        }

    def hook(self, event: str, **fields: Any) -> HookResult:
        raw = json.dumps(self.payload(event, **fields)).encode()
        return run_hook(raw, self.project)

    def raw(self, raw: bytes) -> HookResult:
        return run_hook(raw, self.project)

    def pre(self, tool: str, tool_input: dict[str, Any]) -> HookResult:
        return self.hook("PreToolUse", tool_name=tool, tool_input=tool_input)

    def post_bash(self, command: str, stdout: str = "3 passed") -> str:
        """Record a successful Bash run; return the evidence ref from the tag."""
        self.n_calls = getattr(self, "n_calls", 0) + 1
        use_id = f"toolu_post_{self.n_calls}"
        pre = self.hook(  # as Claude Code does: the record pairs with it by tool_use_id
            "PreToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=use_id
        )
        assert pre.code == 0, pre.err
        result = self.hook(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": command},
            tool_use_id=use_id,
            tool_response={"stdout": stdout, "stderr": "", "interrupted": False},
        )
        assert result.code == 0, result.err
        ctx = str(result.out["hookSpecificOutput"]["additionalContext"])
        return ctx.split("evidence_ref=")[1].split()[0]

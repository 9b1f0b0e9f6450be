"""A Claude Code session as the hook sees it: one project, one transcript, the real executable."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
ORACLE = "pytest -q"
LEDGER = (
    "Plan first.\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
    '      text: "the parser drops the last token"\n      status: Exact\n'
    '      falsifier: "pytest passes on the unmodified parser"\n'
    f'      oracle: "{ORACLE}"\n  premises_for_plan: [C1]\n'
)


class Session:
    """A Claude Code session as the hook sees it: one project, one transcript."""

    def __init__(self, project: Path, sid: str = "sess-1", *, sandbox: bool = True) -> None:
        self.project = project
        if sandbox:  # as `infomark install claude-code` leaves it
            from helpers import claude_sandbox_on

            claude_sandbox_on(project)
        self.sid = sid
        self.transcript = project / "transcript.jsonl"
        self.transcript.write_text("")
        self.n = 0

    def say(self, text: str, tool_use_id: str | None = None) -> None:
        """Append an assistant message (text block, then its tool_use) as Claude Code does."""
        self.n += 1
        mid = f"msg_{self.n}"
        lines = [
            {
                "type": "assistant",
                "message": {
                    "id": mid,
                    "role": "assistant",
                    "content": [{"type": "text", "text": text}],
                },
            }
        ]
        if tool_use_id:
            lines.append(
                {
                    "type": "assistant",
                    "message": {
                        "id": mid,
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": tool_use_id, "name": "x", "input": {}}
                        ],
                    },
                }
            )
        with self.transcript.open("a") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")

    def hook(self, event: str, raw: str | None = None, **fields: Any) -> tuple[int, Any, str]:
        payload = {
            "session_id": self.sid,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "hook_event_name": event,
            "permission_mode": "default",
            **fields,
        }
        proc = subprocess.run(
            [EXE, "hook", "claude-code"],
            input=raw if raw is not None else json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=self.project,
            timeout=60,
            check=False,
        )
        out = json.loads(proc.stdout) if proc.stdout.strip() else None
        return proc.returncode, out, proc.stderr

    def tool(self, name: str, tool_input: dict[str, Any], use_id: str) -> tuple[int, Any, str]:
        return self.hook("PreToolUse", tool_name=name, tool_input=tool_input, tool_use_id=use_id)

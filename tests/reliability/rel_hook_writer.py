"""A live Claude Code session for the live-verification tests (run as a script).

``python rel_hook_writer.py HOME PROJECT SESSION`` drives real hook calls
(:func:`infomark.tools.hooks.claude_code.handle`, what ``infomark hook claude-code`` runs,
one fresh gatekeeper per call as a hook process has) into SESSION: a transcript with a
claim ledger, then, round after round, a Read and a Bash call, each PreToolUse followed by
the PostToolUse of its output. After each call it prints the session's committed head
seq (read afresh from the store) and flushes, so a reader knows a commit happened after
any moment it observed. It stops when its stdin closes or says ``stop``.
"""

from __future__ import annotations

import json
import os
import select
import sys
from pathlib import Path
from typing import Any

from infomark.ledger.keys import load_key
from infomark.ledger.store.select import open_journal
from infomark.tools.hooks.claude_code import handle

__all__ = ["main"]

LEDGER = (
    "Plan.\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
    '      text: "the parser drops the last token"\n      status: Hypothetical\n'
    '      falsifier: "pytest passes"\n      oracle: "pytest -q"\n'
    "  premises_for_plan: [C1]\n"
)


def _stop_requested() -> bool:
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(ready) and sys.stdin.readline().strip() in ("", "stop")


def main(argv: list[str]) -> int:
    home, project, session = Path(argv[0]), Path(argv[1]), argv[2]
    transcript = project / "transcript.jsonl"
    message = {
        "type": "assistant",
        "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": LEDGER}]},
    }
    transcript.write_text(json.dumps(message) + "\n")
    (project / "p.py").write_text("x = 1\n")
    base: dict[str, Any] = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
    }
    calls = [
        ("Read", {"file_path": str(project / "p.py")}, "x = 1\n"),
        ("Bash", {"command": "echo hi"}, {"stdout": "hi\n", "stderr": "", "interrupted": False}),
    ]
    journal = None
    i = 0
    while True:
        tool, tool_input, output = calls[i % 2]
        use = f"toolu_{os.getpid()}_{i}"
        for event, extra in (
            ("PreToolUse", {}),
            ("PostToolUse", {"tool_response": output}),
        ):
            payload = {**base, "hook_event_name": event, "tool_name": tool,
                       "tool_input": tool_input, "tool_use_id": use, **extra}  # fmt: skip
            handle(payload, home=home, root=project)
            if journal is None:
                journal = open_journal(home, load_key(home))
            sys.stdout.write(f"{journal.last_seq(session)}\n")
            sys.stdout.flush()
        i += 1
        if _stop_requested():
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

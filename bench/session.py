"""A session shaped like real Claude Code use, driven through the installed hook launcher.

``RealSession(work)`` makes a project with ``.claude/infomark-hook`` (the launcher
``infomark install claude-code`` writes, ``python -I -S``) and the Bash sandbox settings it
writes beside it, a ledger home, and a Claude Code transcript. :meth:`RealSession.ground`
plays the start of a real session: the agent writes a 5-claim ledger, runs each claim's
oracle (Bash, its output recorded by PostToolUse), stamps each claim with the evidence ref
the hook handed back (a real, applied stamp), reads and edits files.
Every call is a real hook process fed the JSON Claude Code sends.

The cases measured on such a session (:data:`CASES`) are what a heavy user's hook runs
most: PreToolUse of Read, Edit and Bash, PreToolUse right after a new applied stamp, and
PostToolUse of a Bash and a Read result. ``bench.icount`` counts them in instructions,
``tests/tools/test_hook_syscalls.py`` pins their syscalls.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CASES", "RealSession"]

_REF = re.compile(r"ev_[0-9a-f]{24}")
_CLAIMS = 5


def _ledger() -> str:
    lines = ["Plan: fix the tokenizer.", "", "claim_ledger:", "  claims:"]
    for i in range(1, _CLAIMS + 1):
        lines += [
            f"    - id: C{i}",
            f'      text: "check {i} of the tokenizer holds"',
            "      status: Hypothetical",
            f'      falsifier: "python3 check.py {i} exits non-zero"',
            f'      oracle: "python3 check.py {i}"',
        ]
    lines.append("  premises_for_plan: [" + ", ".join(f"C{i}" for i in range(1, _CLAIMS + 1)) + "]")
    return "\n".join(lines) + "\n"


class RealSession:
    """One project, one transcript, the installed launcher; real hook processes."""

    def __init__(self, work: Path, *, sid: str = "real-session", tree: Path | None = None) -> None:
        from infomark.tools.install_sandbox import sandbox_settings
        from infomark.tools.launcher import render, search_paths, write_launcher

        self.project = work / "project"
        self.project.mkdir(parents=True)
        self.home = self.project / ".infomark"
        self.sid = sid
        self.transcript = self.project / "transcript.jsonl"
        self.transcript.write_text("")
        (self.project / "tok.py").write_text("def tokens(s):\n    return s.split()\n" * 40)
        (self.project / "check.py").write_text("import sys\nsys.exit(0)\n")
        paths = search_paths()
        if tree is not None:  # another checkout's infomark, the rest as installed
            paths = [str(tree) if (Path(p) / "infomark").is_dir() else p for p in paths]
        self.launcher = self.project / ".claude" / "infomark-hook"
        write_launcher(self.launcher, render(paths=paths))
        # Claude Code's Bash sandbox on, as `infomark install claude-code` leaves the project
        # (without it the agent's own runs ground nothing in an enforcing profile)
        settings = {"sandbox": sandbox_settings(self.project, self.home)}
        (self.project / ".claude" / "settings.json").write_text(json.dumps(settings))
        self.argv = [str(self.launcher), "hook", "claude-code"]
        self.env = {**os.environ, "INFOMARK_HOME": str(self.home)}
        self.n = 0
        self.refs: dict[str, str] = {}

    # -- the host's side -------------------------------------------------------------
    def say(self, text: str, use_id: str) -> None:
        """An assistant message (its text, then its tool_use) as Claude Code writes it."""
        self.n += 1
        content: list[dict[str, Any]] = [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": use_id, "name": "x", "input": {}},
        ]
        line = {"type": "assistant", "message": {"id": f"m{self.n}", "role": "assistant",
                                                 "content": content}}  # fmt: skip
        with self.transcript.open("a") as f:
            f.write(json.dumps(line) + "\n")

    def payload(self, event: str, tool: str, tool_input: dict[str, Any], use_id: str,
                response: Any = None) -> bytes:  # fmt: skip
        data: dict[str, Any] = {
            "session_id": self.sid,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "permission_mode": "default",
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": use_id,
        }
        if event == "PostToolUse":
            data["tool_response"] = response
        return json.dumps(data).encode()

    def run(self, stdin: bytes, argv: list[str] | None = None) -> dict[str, Any] | None:
        done = subprocess.run(argv or self.argv, input=stdin, capture_output=True,
                              env=self.env, cwd=self.project, check=False)  # fmt: skip
        if done.returncode not in (0, 2):
            raise RuntimeError(f"the hook failed ({done.returncode}): {done.stderr[-600:]!r}")
        out = done.stdout.strip()
        return json.loads(out) if out else None

    def call(self, tool: str, tool_input: dict[str, Any], response: Any, *,
             said: str = "") -> str | None:  # fmt: skip
        """One tool call: (the message before it), PreToolUse, PostToolUse; the ref."""
        self.n += 1
        use = f"toolu_{self.n:04d}"
        if said:
            self.say(said, use)
        answer = self.run(self.payload("PreToolUse", tool, tool_input, use))
        decision = (answer or {}).get("hookSpecificOutput", {}).get("permissionDecision")
        if decision in ("deny", "ask"):
            raise RuntimeError(f"{tool} {tool_input} was refused: {answer}")
        after = self.run(self.payload("PostToolUse", tool, tool_input, use, response))
        text = json.dumps(after or {})
        found = _REF.search(text)
        return found.group(0) if found else None

    # -- a session's first minutes -------------------------------------------------------
    def bash(self, command: str, stdout: str, said: str = "") -> str | None:
        response = {"stdout": stdout, "stderr": "", "interrupted": False}
        return self.call("Bash", {"command": command}, response, said=said)

    def read(self, name: str, said: str = "") -> str | None:
        path = self.project / name
        response = {"type": "text", "file": {"filePath": str(path), "content": path.read_text()}}
        return self.call("Read", {"file_path": str(path)}, response, said=said)

    def edit(self, name: str, old: str, new: str, said: str = "") -> str | None:
        path = self.project / name
        tool_input = {"file_path": str(path), "old_string": old, "new_string": new}
        path.write_text(path.read_text().replace(old, new, 1))
        return self.call("Edit", tool_input, {"filePath": str(path), "oldString": old,
                                              "newString": new}, said=said)  # fmt: skip

    def ground(self) -> None:
        """The ledger, each oracle run and stamped (applied), a read and an edit."""
        self.read("tok.py", said="Let me look at the tokenizer first.")
        for i in range(1, _CLAIMS + 1):
            said = _ledger() if i == 1 else f"Running check {i}."
            ref = self.bash(f"python3 check.py {i}", f"check {i}: ok\n", said=said)
            assert ref is not None, "the oracle's result gave no evidence ref"
            self.refs[f"C{i}"] = ref
        stamps = "\n".join(
            f"oracle_stamp: claim_id={cid} evidence_ref={ref} result=PASS"
            for cid, ref in self.refs.items()
        )
        self.read("tok.py", said="All five checks pass.\n\n" + stamps + "\n")
        self.edit("tok.py", "s.split()", "s.split(None)", said="Now the fix.")
        self.bash("python3 check.py 1", "check 1: ok\n")

    # -- the measured cases ----------------------------------------------------------------
    def next_use(self) -> str:
        self.n += 1
        return f"toolu_{self.n:04d}"


def _pre(tool: str, said: str = "") -> Callable[[RealSession], bytes]:
    """PreToolUse of ``tool``; ``said``: new assistant prose before it (no block: it commits
    with the decision, ``tools/hooks/claude_code.py``), what most calls follow."""

    def make(s: RealSession) -> bytes:
        use = s.next_use()
        if said:
            s.say(said, use)
        if tool == "Read":
            return s.payload("PreToolUse", "Read", {"file_path": str(s.project / "tok.py")}, use)
        if tool == "Edit":
            tool_input = {"file_path": str(s.project / "tok.py"), "old_string": "split(None)",
                          "new_string": "split()"}  # fmt: skip
            return s.payload("PreToolUse", "Edit", tool_input, use)
        return s.payload("PreToolUse", "Bash", {"command": "python3 check.py 2"}, use)

    return make


def _after_stamp(s: RealSession) -> bytes:
    """PreToolUse Read right after a new oracle run stamped in the message before it."""
    ref = s.bash("python3 check.py 3", "check 3: ok\n")
    use = s.next_use()
    s.say(f"Check 3 again.\n\noracle_stamp: claim_id=C3 evidence_ref={ref} result=PASS\n", use)
    return s.payload("PreToolUse", "Read", {"file_path": str(s.project / "tok.py")}, use)


def _post(tool: str) -> Callable[[RealSession], bytes]:
    def make(s: RealSession) -> bytes:
        use = s.next_use()
        if tool == "Bash":
            tool_input: dict[str, Any] = {"command": "python3 check.py 4"}
            response: Any = {"stdout": "check 4: ok\n" * 30, "stderr": "", "interrupted": False}
        else:
            path = s.project / "tok.py"
            tool_input = {"file_path": str(path)}
            response = {"type": "text", "file": {"filePath": str(path),
                                                 "content": path.read_text()}}  # fmt: skip
        s.run(s.payload("PreToolUse", tool, tool_input, use))  # the decision it pairs with
        return s.payload("PostToolUse", tool, tool_input, use, response)

    return make


# name -> (what the next measured call reads on stdin: made after the session is grounded)
CASES: dict[str, Callable[[RealSession], bytes]] = {
    "PreToolUse Read": _pre("Read"),
    "PreToolUse Read after prose": _pre("Read", "The tokenizer splits on spaces; a look."),
    "PreToolUse Edit after prose": _pre("Edit", "Now the fix, as planned."),
    "PreToolUse Edit": _pre("Edit"),
    "PreToolUse Bash": _pre("Bash"),
    "PreToolUse after an applied stamp": _after_stamp,
    "PostToolUse Bash result": _post("Bash"),
    "PostToolUse Read result": _post("Read"),
}


if __name__ == "__main__":  # a quick look: python -m bench.session DIR
    s = RealSession(Path(sys.argv[1]))
    s.ground()
    print(s.home, s.refs)

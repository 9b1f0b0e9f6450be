"""Helpers for the infomark end-to-end sessions: project, installer, what the model saw, timings.

Observed with Claude Code 2.1.328 (in addition to :mod:`.claude_harness`):

* Claude Code validates a tool call before its PreToolUse hooks run: an ``Edit`` of a file the
  session has not ``Read`` (or whose ``old_string`` is absent) fails with a ``tool_use_error``
  and no hook sees it. A scripted edit therefore reads the file first and is always valid.
* In ``-p --permission-mode acceptEdits`` a ``python3 …`` Bash command is refused with "This
  command requires approval"; ``--allowedTools "Bash(<command>)"`` admits exactly that command.
* A hook that answers with a PreToolUse deny shows up in the result's ``permission_denials``.
* ``--debug hooks`` writes ``$HOME/.claude/debug/<session>.txt`` with one line per hook run:
  ``Hooks: <Event>[:<Tool or source>] [<command>] finished with status <N> (<M>ms)``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .anthropic_stub import MessagesRequest

__all__ = [
    "BUGGY_BODY",
    "FIXED_BODY",
    "ORACLE",
    "HookRun",
    "allow_oracle_args",
    "evidence_refs",
    "hook_runs",
    "install_hooks",
    "journal_sessions",
    "oracle_env",
    "write_project",
]

ORACLE = "python3 test_parser.py"
BUGGY_BODY = 'return line.split(",")'
FIXED_BODY = 'return [field.strip() for field in line.split(",")]'

_PARSER = f'''\
def parse(line):
    """Split a comma-separated line into fields, without surrounding blanks."""
    {BUGGY_BODY}
'''
# The oracle holds before and after the fix: it guards the behaviour the fix must keep.
_TEST_PARSER = """\
import unittest

from parser import parse


class ParseTest(unittest.TestCase):
    def test_plain_fields(self):
        self.assertEqual(parse("a,b,c"), ["a", "b", "c"])


if __name__ == "__main__":
    unittest.main()
"""
_CONTEXT = re.compile(
    r"^PostToolUse:Bash hook additional context: \[infomark evidence_ref=(ev_[0-9a-f]{24}) "
)
_HOOK_LINE = re.compile(
    r"Hooks: (?P<event>[A-Za-z]+)(?::(?P<matcher>\S+))? \[(?P<command>[^\]]*)\] "
    r"finished with status (?P<status>-?\d+) \((?P<ms>\d+)ms\)"
)


@dataclass(frozen=True)
class HookRun:
    """One hook command run as Claude Code's debug log reports it."""

    event: str
    matcher: str | None
    command: str
    status: int
    duration_ms: int

    @property
    def label(self) -> str:
        """``Event`` or ``Event:Matcher`` as Claude Code names the run."""
        return self.event if self.matcher is None else f"{self.event}:{self.matcher}"


def write_project(project: Path) -> Path:
    """Write ``parser.py`` (whitespace bug) and its ``test_parser.py``; return ``parser.py``."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "test_parser.py").write_text(_TEST_PARSER, encoding="utf-8")
    parser = project / "parser.py"
    parser.write_text(_PARSER, encoding="utf-8")
    own_runs(project)
    return parser


# The scripted host sessions test the hosts' wiring with a fixed script of own runs and stamps:
# they opt out of attested runs explicitly (the default is tested through the real hook in
# tests/security/test_attest_default.py), so no script step depends on a sandbox.
OWN_RUNS_TOML = "[attest]\nrequired = false\n"


def own_runs(project: Path) -> None:
    """Add the operator's explicit opt-out of attested runs to the project's infomark.toml."""
    config = project / "infomark.toml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    if "[attest]" not in text:
        config.write_text(text + ("\n" if text and not text.endswith("\n") else "") + OWN_RUNS_TOML)


def install_hooks(project: Path, *, user_home: Path | None = None) -> Path:
    """Run the installed ``infomark install claude-code --root PROJECT``; return the settings.

    ``user_home``: the ``$HOME`` Claude Code will run with, so the sandbox's paths under the
    user's home (``~/.config/infomark``, ``~/.claude/projects``) name that one."""
    exe = Path(sys.executable).with_name("infomark")
    env = None if user_home is None else {**os.environ, "HOME": str(user_home)}
    done = subprocess.run(
        [str(exe), "install", "claude-code", "--root", str(project), "--profile", "ledger"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{exe} install claude-code exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
    own_runs(project)
    return project / ".claude" / "settings.json"


def oracle_env() -> dict[str, str]:
    """``PATH`` with this interpreter's directory first, so ``python3`` is a known Python."""
    inherited = os.environ.get("PATH", os.defpath)
    return {"PATH": str(Path(sys.executable).parent) + os.pathsep + inherited}


def allow_oracle_args(*, debug_hooks: bool = True) -> list[str]:
    """CLI arguments that admit the oracle command (and log hook timings)."""
    args = ["--allowedTools", f"Bash({ORACLE})"]
    return [*args, "--debug", "hooks"] if debug_hooks else args


def evidence_refs(request: MessagesRequest) -> list[str]:
    """Evidence refs the PostToolUse:Bash hook context delivered since the last assistant turn."""
    found: list[str] = []
    for text in request.texts():
        match = _CONTEXT.match(text)
        if match:
            found.append(match.group(1))
    return found


def hook_runs(home: Path, session_id: str) -> list[HookRun]:
    """The hook runs in ``--debug hooks`` output for ``session_id`` (empty if no log)."""
    log = home / ".claude" / "debug" / f"{session_id}.txt"
    if not log.is_file():
        return []
    runs: list[HookRun] = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _HOOK_LINE.search(line)
        if match:
            runs.append(
                HookRun(
                    event=match["event"],
                    matcher=match["matcher"],
                    command=match["command"],
                    status=int(match["status"]),
                    duration_ms=int(match["ms"]),
                )
            )
    return runs


def journal_sessions(home: Path) -> list[str]:
    """Session ids with a journal head in ``home/ledger.db`` (opened read-only)."""
    uri = (home / "ledger.db").absolute().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True)
    try:
        return [str(row[0]) for row in db.execute("SELECT session FROM heads ORDER BY session")]
    finally:
        db.close()

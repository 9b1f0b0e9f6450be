"""An agent turns every file of the project into a FIFO: no hook call waits on one.

A plain ``open()`` of a FIFO waits for a writer for ever. The project is the agent's, so it
can put one wherever infomark reads: the configuration, git's index, the host's settings,
the test files the grading rules look at, a script the shell classifier reads. A command hook
then hung until its 4 s watchdog, and the service, which reads these on its event loop for
the short calls, stopped answering every session. This test names no file: it replaces all
of them (the home, the launcher and the transcript aside: the host's and infomark's own)
and runs each kind of call with the watchdog lifted, so a read that waits fails the test by
its timeout instead of being answered by the watchdog. The answers must still be right: the
unreadable configuration is an error that denies mutations and says which file and why.

git itself opens the files of its own directory with a blocking open, so the phase that
replaces those too runs the calls that do not start git (the finish check's ``git diff``
would wait, bounded by its 60 s timeout; the command hook's watchdog answers it first).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.session import RealSession

_GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@x.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@x.invalid",
}
# the hook as the launcher runs it, with the 4 s watchdog lifted (bench.icount's form)
_HOOK = (
    "import sys; sys.argv = ['infomark', 'hook', 'claude-code']\n"
    "import infomark.tools.hooks.dispatch as d; d.DEADLINE_S = 1e6\n"
    "from infomark.cli.entry import main; main()\n"
)
_BOUND_S = 20  # far above any call here (~0.1 s); a FIFO read never returns


def _fifos(s: RealSession, *, git_too: bool) -> list[str]:
    keep = {s.home, s.launcher, s.transcript}
    made = []
    for dirpath, dirs, files in os.walk(s.project):
        d = Path(dirpath)
        if d == s.home or (not git_too and d.name == ".git"):
            dirs[:] = []
            continue
        for name in files:
            p = d / name
            if p not in keep and not p.is_fifo():
                p.unlink()
                os.mkfifo(p)
                made.append(str(p.relative_to(s.project)))
    return made


def _call(s: RealSession, event: dict[str, Any]) -> tuple[dict[str, Any], str]:
    base = {"session_id": s.sid, "transcript_path": str(s.transcript), "cwd": str(s.project)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _HOOK],
            input=json.dumps(base | event).encode(),
            capture_output=True,
            env=s.env,
            cwd=s.project,
            timeout=_BOUND_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{event['hook_event_name']} waited on a FIFO for {_BOUND_S} s")
    assert done.returncode in (0, 2), done.stderr[-2000:]
    out = done.stdout.strip()
    return (json.loads(out) if out else {}), done.stderr.decode()


def _tool(s: RealSession, event: str, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    use = s.next_use()
    if event == "PreToolUse":
        s.say(f"Next, {tool}.", use)
    data: dict[str, Any] = {"hook_event_name": event, "tool_name": tool,
                            "tool_input": tool_input, "tool_use_id": use}  # fmt: skip
    if event == "PostToolUse":
        data["tool_response"] = {"stdout": "ok\n", "stderr": "", "interrupted": False}
    return data


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> RealSession:
    s = RealSession(tmp_path_factory.mktemp("fifos"))
    (s.project / "infomark.toml").write_text('profile = "ledger"\n')
    (s.project / "tests").mkdir()
    (s.project / "tests" / "test_tok.py").write_text("def test_x():\n    assert True\n")
    (s.project / "pytest.ini").write_text("[pytest]\n")
    subprocess.run("git init -q && git add -A . ':!.infomark' ':!transcript.jsonl' && "
                   "git commit -qm init", shell=True, cwd=s.project, env=_GIT_ENV,
                   check=True, capture_output=True)  # fmt: skip
    s.ground()
    return s


def _calls(s: RealSession) -> list[dict[str, Any]]:
    tok = str(s.project / "tok.py")
    return [
        {"hook_event_name": "SessionStart", "source": "resume"},
        _tool(s, "PreToolUse", "Read", {"file_path": tok}),
        _tool(s, "PreToolUse", "Edit", {"file_path": tok, "old_string": "a", "new_string": "b"}),
        _tool(s, "PreToolUse", "Bash", {"command": "python3 check.py 1 && sh tok.py"}),
        _tool(s, "PostToolUse", "Bash", {"command": "python3 check.py 1 && sh tok.py"}),
    ]


def _check(s: RealSession, answers: list[tuple[dict[str, Any], str]]) -> None:
    said = "infomark.toml: cannot be read (a FIFO, not a file)"
    told = [said in err or said in json.dumps(out) for out, err in answers]
    assert all(told), [
        (json.dumps(o)[:300], e[-300:]) for (o, e), t in zip(answers, told, strict=True) if not t
    ]
    edit = answers[2][0]["hookSpecificOutput"]
    assert edit["permissionDecision"] == "deny"
    assert "configuration is invalid" in edit["permissionDecisionReason"]


def test_every_file_of_the_work_tree_a_fifo(session: RealSession) -> None:
    made = _fifos(session, git_too=False)
    assert {"infomark.toml", "pytest.ini", "tests/test_tok.py", "tok.py"} <= set(made)
    answers = [_call(session, c) for c in _calls(session)]
    _check(session, answers)
    _out, err = _call(session, {"hook_event_name": "Stop", "stop_hook_active": False})
    assert "infomark.toml: cannot be read" in err


def test_and_every_file_of_git_too(session: RealSession) -> None:
    made = _fifos(session, git_too=True)
    assert {".git/index", ".git/HEAD", ".git/config"} <= set(made)
    answers = [_call(session, c) for c in _calls(session)]
    _check(session, answers)

"""The service keeps answering when the agent turns every file of the project into a FIFO.

The service runs short hook calls on its event loop: one read that waits on a FIFO there
stops every session, not just the agent's own (``kernel/regular.py``). After a few calls
(the change feed built, the configuration and the index's list cached), every file of the
project, ``.git/`` included, becomes a FIFO, and the calls go on: each must be answered,
the unreadable configuration denying the edit with its reason (a session whose configuration
broke is reopened in a thread, so these calls leave the loop; a read that waited there would
hold that session and its calls). A fresh interpreter with a bound, so that a read that waits
fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sqlite_only

_DRIVE = r"""
import json, os, sys
from pathlib import Path
from starlette.testclient import TestClient
from infomark.gates import feed_local
from infomark.gates import fingerprint as fp
from infomark.tools.service import create_app

home, project, transcript = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
app = create_app(home, root=project)
token = (home / "token").read_text().strip()
answers = []
with TestClient(app, headers={"authorization": f"Bearer {token}"}) as client:
    def hook(event, tool, tool_input, use, response=None):
        if event == "PreToolUse":
            line = {"type": "assistant", "message": {"id": "m" + use, "role": "assistant",
                    "content": [{"type": "tool_use", "id": use, "name": tool, "input": {}}]}}
            with transcript.open("a") as f:
                f.write(json.dumps(line) + "\n")
        payload = {"session_id": "fifo-1", "transcript_path": str(transcript),
                   "cwd": str(project), "hook_event_name": event, "tool_name": tool,
                   "tool_input": tool_input, "tool_use_id": use}
        if response is not None:
            payload["tool_response"] = response
        r = client.post("/v1/hooks/claude-code", json=payload)
        return r.status_code, r.json()

    ran = {"stdout": "ok", "stderr": "", "interrupted": False}
    for i in range(2):
        hook("PreToolUse", "Bash", {"command": "ls"}, f"b{i}")
        hook("PostToolUse", "Bash", {"command": "ls"}, f"b{i}", ran)
        if i == 0:
            assert fp._LOCAL.wait_built(str(project), 30)
    for dirpath, dirs, files in os.walk(project):
        for name in files:
            p = Path(dirpath) / name
            p.unlink()
            os.mkfifo(p)
    tok = str(project / "src" / "m1.py")
    answers.append(hook("PreToolUse", "Read", {"file_path": tok}, "r2"))
    answers.append(hook("PreToolUse", "Edit", {"file_path": tok, "old_string": "v",
                                               "new_string": "w"}, "e2"))
    for i in (3, 4):
        answers.append(hook("PreToolUse", "Bash", {"command": "ls"}, f"b{i}"))
        answers.append(hook("PostToolUse", "Bash", {"command": "ls"}, f"b{i}", ran))
    health = client.get("/v1/health").status_code  # the loop itself still serves
    print(json.dumps({"answers": answers, "health": health}))
"""


def test_every_file_a_fifo_and_the_service_still_answers(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    for i in range(210):  # enough for the service's own change feed
        (project / "src").mkdir(parents=True, exist_ok=True)
        (project / "src" / f"m{i}.py").write_text(f"v = {i}\n")
    (project / "infomark.toml").write_text('profile = "ledger"\n')
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@x.invalid"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run([*git, *argv], cwd=project, check=True, capture_output=True)
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _DRIVE, str(home), str(project), str(transcript)],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the service waited on a FIFO")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    answers = result["answers"]
    assert [status for status, _ in answers] == [200] * 6
    edit = answers[1][1]["hookSpecificOutput"]
    assert edit["permissionDecision"] == "deny"
    assert "configuration is invalid" in edit["permissionDecisionReason"]
    assert "infomark.toml: cannot be read (a FIFO, not a file)" in json.dumps(answers)
    assert result["health"] == 200

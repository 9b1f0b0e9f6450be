"""The service imports the hook path's modules before it serves (``tools/service_warm.py``).

A short hook call runs on the service's event loop; a module it imported on first use held
every other session for the import's length and sent its own session to the threads for
``THREADED_FOR`` seconds (38 ms, the policy runtime, measured with ``python -m
bench.http_concurrent --forward``). Each test runs a fresh interpreter, as ``infomark serve``
is: modules another test imported would hide a missing one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import OWN_RUNS_TOML, claude_sandbox_on

pytestmark = pytest.mark.sqlite_only

# The session of a real agent, every short call kind: a claim ledger in the transcript, reads,
# an edit denied then allowed after a stamp, the oracle run and its output recorded, a
# destructive command held, searches, an MCP tool, a large output stored as a file.
_DRIVE = r"""
import json, sys
from pathlib import Path
from starlette.testclient import TestClient
from infomark.tools.service import create_app

home, project = Path(sys.argv[1]), Path(sys.argv[2])
transcript = project / "transcript.jsonl"
LEDGER = (
    "Plan first.\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
    '      text: "the parser drops the last token"\n      status: Exact\n'
    '      falsifier: "pytest passes on the unmodified parser"\n'
    '      oracle: "pytest -q"\n  premises_for_plan: [C1]\n'
)

def say(text, use):
    for content in ({"type": "text", "text": text},
                    {"type": "tool_use", "id": use, "name": "x", "input": {}}):
        line = {"type": "assistant", "message": {"id": "m" + use, "role": "assistant",
                                                 "content": [content]}}
        with transcript.open("a") as f:
            f.write(json.dumps(line) + "\n")

def ours():
    return {m for m in sys.modules if m == "infomark" or m.startswith("infomark.")}

app = create_app(home, root=project)
token = (home / "token").read_text().strip()
with TestClient(app, headers={"authorization": f"Bearer {token}"}) as client:
    def hook(event, tool, tool_input, use, response=None):
        payload = {"session_id": "warm-1", "transcript_path": str(transcript),
                   "cwd": str(project), "hook_event_name": event, "tool_name": tool,
                   "tool_input": tool_input, "tool_use_id": use}
        if response is not None:
            payload["tool_response"] = response
        r = client.post("/v1/hooks/claude-code", json=payload)
        assert r.status_code == 200, r.text
        return r.json()

    def both(tool, tool_input, use, response):
        say(f"Using {tool}.", use)  # its tool_use line, as Claude Code writes it
        hook("PreToolUse", tool, tool_input, use)
        return hook("PostToolUse", tool, tool_input, use, response)

    started = ours()
    transcript.write_text("")
    both("Read", {"file_path": str(project / "p.py")}, "u1",
         {"type": "text", "file": {"filePath": str(project / "p.py"), "content": "x = 1\n"}})
    edit = {"file_path": "p.py", "old_string": "1", "new_string": "2"}
    say(LEDGER, "u1b")
    early = hook("PreToolUse", "Edit", edit, "u1b")
    post = both("Bash", {"command": "pytest -q"}, "u2",
                {"stdout": "3 passed", "stderr": "", "interrupted": False})
    ref = post["hookSpecificOutput"]["additionalContext"].split("evidence_ref=")[1].split()[0]
    say(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS", "u3")
    grounded = hook("PreToolUse", "Edit", edit, "u3")
    hook("PostToolUse", "Edit", edit, "u3", {"filePath": "p.py", "success": True})
    both("Write", {"file_path": "q.py", "content": "y = 2\n"}, "u4", {"type": "create"})
    say("Cleaning up.", "u5")
    hook("PreToolUse", "Bash", {"command": "rm -rf build && git push --force"}, "u5")
    both("Grep", {"pattern": "def ", "path": str(project)}, "u6", {"filenames": ["p.py"]})
    both("Glob", {"pattern": "**/*.py"}, "u7", {"filenames": ["p.py", "q.py"]})
    both("mcp__docs__search", {"query": "tokens"}, "u8", {"content": "nothing"})
    both("Bash", {"command": "cat big.log"}, "u9",
         {"stdout": "line\n" * 20_000, "stderr": "", "interrupted": False})
    print(json.dumps({"new": sorted(ours() - started), "edits": [early, grounded],
                      "on_loop": app.state.pool.ran_on_loop}))
"""


def _drive(tmp_path: Path, config: str | None) -> dict[str, object]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    claude_sandbox_on(project)
    (project / "p.py").write_text("x = 1\n")
    if config is not None:
        (project / "infomark.toml").write_text(config)
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVE, str(home), str(project)],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize(
    "config", [None, OWN_RUNS_TOML], ids=["attested-default", "agent-own-runs"]
)
def test_no_hook_call_imports_a_module_of_ours_once_the_service_started(
    tmp_path: Path, config: str | None
) -> None:
    result = _drive(tmp_path, config)
    assert result["new"] == []
    early, grounded = result["edits"]  # type: ignore[misc]
    assert "[infomark ungrounded_premises]" in json.dumps(early)  # the ledger was read
    assert grounded == {}  # the stamp applied: the whole path ran
    assert isinstance(result["on_loop"], int) and result["on_loop"] >= 10  # the short calls


_IMPORTED = """
import json, sys
from infomark.tools.service_warm import warm
names = warm(sys.argv[1])
print(json.dumps({"names": names, "psycopg": "psycopg" in sys.modules}))
"""


@pytest.mark.parametrize(("store", "with_pg"), [("sqlite", False), ("postgresql", True)])
def test_warm_leaves_the_postgresql_store_out_of_a_sqlite_service(
    store: str, with_pg: bool
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTED, store],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(proc.stdout)
    names = result["names"]
    assert "infomark.gates.policies.runtime" in names  # the import measured on the loop
    assert "infomark.tools.hooks.claude_code" in names
    assert ("infomark.ledger.store.pg" in names) is with_pg
    assert result["psycopg"] is with_pg

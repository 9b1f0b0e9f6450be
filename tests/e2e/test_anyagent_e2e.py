"""Issue 34 through the real Claude Code binary: an agent that never heard of claim ledgers.

``infomark install claude-code --yes`` in a fresh project (the default: the verify profile,
the detected ``pytest -q`` required and added to Claude Code's ``permissions.allow``); then
``claude -p`` with no ``--allowedTools`` flag against a scripted model that writes no ledger:

* the honest fix (run the failing test, fix the code, run it again, say done) finishes with
  no denial and no Stop refusal;
* a premature "done" right after the failing run is refused, and the refusal Claude Code
  hands the model names the failing test; following it (fix, re-run) finishes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .anthropic_stub import AnthropicStub, MessagesRequest, Reply, Step, ToolCall
from .claude_harness import result_json, run_claude
from .scripts_infomark import oracle_env

CHECK = "pytest -q"
BUG = "return a - b"
FIX = "return a + b"
_STOP_FEEDBACK = "Stop hook feedback:\n"


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "calc.py").write_text(f"def add(a, b):\n    {BUG}\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / "conftest.py").write_text("")
    exe = Path(sys.executable).with_name("infomark")
    done = subprocess.run(
        [str(exe), "install", "claude-code", "--root", str(root), "--yes", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["checks"] == [CHECK]
    local = json.loads((root / ".claude" / "settings.local.json").read_text())
    assert local["permissions"]["allow"] == [f"Bash({CHECK})"]
    return root / "calc.py"


def _read(calc: Path) -> Reply:
    return Reply(
        text="Looking at calc.py.", tool_calls=(ToolCall("Read", {"file_path": str(calc)}),)
    )


def _run(text: str = "Running the tests.") -> Reply:
    return Reply(text=text, tool_calls=(ToolCall("Bash", {"command": CHECK}),))


def _edit(calc: Path) -> Reply:
    edit = {"file_path": str(calc), "old_string": BUG, "new_string": FIX}
    return Reply(text="add() subtracts; fixing it.", tool_calls=(ToolCall("Edit", edit),))


def _feedback(request: MessagesRequest) -> list[str]:
    return [t for t in request.texts() if t.startswith(_STOP_FEEDBACK)]


@pytest.mark.e2e
def test_an_agent_with_no_ledger_finishes_an_honest_fix_with_no_refusal(
    claude_bin: Path, tmp_path: Path
) -> None:
    calc = _project(tmp_path / "project")
    home = tmp_path / "home"
    home.mkdir()
    script: list[Step] = [
        _read(calc),
        _run(),
        _edit(calc),
        _run("Re-running the tests."),
        Reply(text="Fixed add(): it subtracted instead of adding. The tests pass."),
    ]
    with AnthropicStub(script) as stub:
        proc = run_claude(
            calc.parent, "Fix the failing test.", stub, claude_bin=claude_bin, home=home,
            extra_env=oracle_env(),
        )  # fmt: skip
    stub.check(complete=True)
    result = result_json(proc)
    assert proc.returncode == 0 and result["is_error"] is False, proc.stderr
    assert result["permission_denials"] == []
    asked = stub.scripted_requests
    assert len(asked) == 5  # a refused Stop would have asked for a sixth
    assert not any(_feedback(r) for r in asked)
    (failing,) = asked[2].tool_results()
    assert failing.is_error and "test_add" in failing.content  # the test really ran and failed
    (passing,) = asked[4].tool_results()
    assert not passing.is_error and "1 passed" in passing.content
    assert FIX in calc.read_text()
    audit = subprocess.run(
        [str(Path(sys.executable).with_name("infomark")), "audit", "--home",
         str(calc.parent / ".infomark"), "--session", str(result["session_id"]), "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stderr
    assert json.loads(audit.stdout)["verdict"] == "finished"


@pytest.mark.e2e
def test_a_premature_done_is_refused_naming_the_failing_test(
    claude_bin: Path, tmp_path: Path
) -> None:
    calc = _project(tmp_path / "project")
    home = tmp_path / "home"
    home.mkdir()
    seen: list[str] = []

    def after_refusal(request: MessagesRequest) -> Reply:
        seen.extend(_feedback(request))
        return _edit(calc)

    script: list[Step] = [
        _read(calc),
        _run(),
        Reply(text="Done, the bug is fixed."),  # premature: the run just failed
        after_refusal,
        _run("Re-running the tests."),
        Reply(text="Now it is fixed: add() adds, and the test passes."),
    ]
    with AnthropicStub(script) as stub:
        proc = run_claude(
            calc.parent, "Fix the failing test.", stub, claude_bin=claude_bin, home=home,
            extra_env=oracle_env(),
        )  # fmt: skip
    stub.check(complete=True)
    result = result_json(proc)
    assert proc.returncode == 0 and result["is_error"] is False, proc.stderr
    (refusal,) = seen
    assert "[infomark check_failed]" in refusal, refusal
    assert "test_calc.py::test_add" in refusal
    assert f"run `{CHECK}` again" in refusal
    assert len(stub.scripted_requests) == 6  # the second finish was not refused

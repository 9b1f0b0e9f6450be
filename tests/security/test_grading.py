"""§4: test integrity. Grading files are not the agent's to change silently.

Reproduced on main: the agent replaced `assert add(1, 1) == 2` with `assert True` (or added
`@pytest.mark.skip`, a conftest.py with `collect_ignore`, a pytest.ini with
`addopts = -k 'not test_add'`), ran `pytest -q`, stamped the green run and finished as Exact.
Here the files really change on disk (as a shell command would change them: behind every
file tool) and the gatekeeper finds out by itself.
"""

from __future__ import annotations

import os
import pty
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import ledger_text, observed, run, stamp
from rel_support import EXE  # this venv's CLI, never one found on PATH

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.gates.grading import change_summary
from infomark.ledger.calls import ToolCall, ToolOutcome

TEST = "from add import add\n\n\ndef test_add():\n    assert add(1, 1) == 2\n"
LEDGER = ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",))


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "add.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "test_add.py").write_text(TEST)
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n')
    return project


def _grounded_then_edited(gk: Gatekeeper) -> None:
    gk.ingest(LEDGER)
    gk.ingest(stamp("C1", run(gk, "pytest -q").ref))
    assert gk.ledger().status("C1") == "Exact"
    observed(gk, ToolCall("Edit", {"file_path": "add.py"}), ToolOutcome("edited"))


TAMPERS = [
    ("test_add.py", TEST.replace("assert add(1, 1) == 2", "assert True"), "assertion removed"),
    (
        "test_add.py",
        TEST.replace("def test_add", "import pytest\n\n\n@pytest.mark.skip\ndef test_add"),
        "skip marker added",
    ),
    (
        "conftest.py",
        'collect_ignore = ["test_add.py"]\n',
        "conftest.py: test configuration created",
    ),
    (
        "pytest.ini",
        "[pytest]\naddopts = -k 'not test_add'\n",
        "pytest.ini: test configuration created",
    ),
    (
        "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-k nothing"\n',
        "pyproject.toml: test configuration created",
    ),
]


@pytest.mark.parametrize(("name", "content", "summary"), TAMPERS)
def test_a_weakened_grading_surface_refuses_the_finish(
    gk: Gatekeeper, repo: Path, name: str, content: str, summary: str
) -> None:
    _grounded_then_edited(gk)
    (repo / name).write_text(content)  # what `sed -i` / `cat >` from the agent's shell does
    green = run(gk, "pytest -q")  # the run that now passes on the weakened tests
    rejected = gk.ingest(stamp("C1", green.ref)).stamps_rejected
    assert [r["reason"] for r in rejected] == ["self_graded"]
    assert name in rejected[0]["message"]
    fin = gk.can_finish("All set.")
    assert not fin.allow and fin.code == "self_graded"
    assert name in fin.reason and summary in fin.reason
    changed = [e.payload for e in gk.events() if e.type == "grading_changed"]
    assert [c["path"] for c in changed] == [name]


def test_the_summary_names_the_line(repo: Path) -> None:
    new = TEST.replace("assert add(1, 1) == 2", "assert True")
    assert change_summary("test_add.py", TEST, new) == "assertion removed in test_add.py:5"
    assert change_summary("t.py", TEST, None) == "t.py deleted"


def test_deleting_a_test_file_is_tampering(gk: Gatekeeper, repo: Path) -> None:
    _grounded_then_edited(gk)
    (repo / "test_add.py").unlink()
    fin = gk.can_finish("")
    assert not fin.allow and "test_add.py deleted" in fin.reason


def test_adding_a_test_file_is_not_tampering(gk: Gatekeeper, repo: Path) -> None:
    _grounded_then_edited(gk)
    (repo / "test_more.py").write_text("def test_more():\n    assert 1\n")
    gk.ingest(stamp("C1", run(gk, "pytest -q").ref))
    assert gk.can_finish("").allow
    assert "grading_changed" not in [e.type for e in gk.events()]


def test_a_restored_file_ends_it_but_runs_made_meanwhile_stay_tainted(
    gk: Gatekeeper, repo: Path
) -> None:
    _grounded_then_edited(gk)
    (repo / "test_add.py").write_text(TEST.replace("== 2", "== 2 or True"))
    tainted = run(gk, "pytest -q")
    (repo / "test_add.py").write_text(TEST)
    clean = run(gk, "pytest -q")
    assert [r["reason"] for r in gk.ingest(stamp("C1", tainted.ref)).stamps_rejected] == [
        "self_graded"
    ]
    assert gk.ingest(stamp("C1", clean.ref)).stamps_applied
    assert gk.can_finish("").allow


def test_the_user_approves_a_changed_grading_file(gk: Gatekeeper, repo: Path) -> None:
    _grounded_then_edited(gk)
    (repo / "test_add.py").write_text(TEST.replace("(1, 1) == 2", "(2, 2) == 4"))
    assert not gk.can_finish("").allow
    gk.approve_grading("test_add.py", by="user")
    gk.ingest(stamp("C1", run(gk, "pytest -q").ref))
    assert gk.can_finish("").allow
    approved = [e.payload for e in gk.events() if e.type == "grading_approved"]
    assert approved[0]["path"] == "test_add.py" and approved[0]["by"] == "user"


def _approve_in_a_terminal(home: Path, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``infomark approve --grading PATH`` as a person types it: stdin is a terminal."""
    base = {k: v for k, v in os.environ.items() if k != "CLAUDECODE" and "INFOMARK" not in k}
    master, tty = pty.openpty()
    try:
        return subprocess.run(
            [EXE, "approve", "--grading", path, "--home", str(home), "--session", "s1"],
            stdin=tty,
            capture_output=True,
            text=True,
            cwd=home.parent,
            env={**base, **env},
            timeout=60,
            check=False,
        )
    finally:
        os.close(tty)
        os.close(master)


def test_the_operator_approves_a_grading_file_from_a_terminal(
    gk: Gatekeeper, home: Path, repo: Path
) -> None:
    _grounded_then_edited(gk)
    (repo / "test_add.py").write_text(TEST.replace("(1, 1) == 2", "(2, 2) == 4"))
    assert not gk.can_finish("").allow
    inside = _approve_in_a_terminal(home, "test_add.py", CLAUDECODE="1")  # the agent's Bash
    assert inside.returncode == 2 and "operator act" in inside.stderr, inside.stderr
    assert "grading_approved" not in [e.type for e in gk.events()]
    done = _approve_in_a_terminal(home, "test_add.py")
    assert done.returncode == 0 and "approved test_add.py" in done.stdout, done.stderr
    gk.ingest(stamp("C1", run(gk, "pytest -q").ref))
    assert gk.can_finish("").allow
    approved = [e.payload for e in gk.events() if e.type == "grading_approved"]
    assert [(a["path"], a["by"]) for a in approved] == [("test_add.py", "operator")]


def test_a_held_grading_edit_is_denied_when_nobody_can_answer(home: Path, repo: Path) -> None:
    cfg = replace(Config(), unattended=True)  # hold is the default grading_policy
    with Gatekeeper.open(home, "unattended", root=repo, config=cfg) as gk:
        gk.ingest(LEDGER)
        gk.ingest(stamp("C1", run(gk, "pytest -q").ref))
        decision = gk.authorize(EDIT_TEST)
        assert decision.verdict.value == "deny" and decision.code == "grading_edit"
        assert "unattended" in decision.reason and "test_add.py" in decision.reason


EDIT_TEST = ToolCall(
    "Edit", {"file_path": "test_add.py", "old_string": "== 2", "new_string": "== 2 or True"}
)


@pytest.mark.parametrize(
    ("policy", "verdict"), [("hold", "ask"), ("refuse", "deny"), ("allow", "allow")]
)
def test_grading_policy_decides_a_file_tool_edit(
    home: Path, repo: Path, policy: str, verdict: str
) -> None:
    cfg = replace(Config(), grading_policy=policy)
    with Gatekeeper.open(home, f"p-{policy}", root=repo, config=cfg) as gk:
        gk.ingest(LEDGER)
        gk.ingest(stamp("C1", run(gk, "pytest -q").ref))
        decision = gk.authorize(EDIT_TEST)
        assert decision.verdict.value == verdict
        if verdict != "allow":
            assert decision.code == "grading_edit" and "test_add.py" in decision.reason
        # a new test file is never held
        assert gk.authorize(ToolCall("Write", {"file_path": "test_new.py"})).allowed


def test_letting_a_held_edit_run_approves_it(gk: Gatekeeper, repo: Path) -> None:
    """Claude Code's "ask" prompt: the edit runs only if the user says yes."""
    _grounded_then_edited(gk)
    decision = gk.authorize(EDIT_TEST)
    assert decision.verdict.value == "ask"
    (repo / "test_add.py").write_text(TEST.replace("== 2", "== 2 or True"))  # the user said yes
    gk.record(EDIT_TEST, ToolOutcome("edited"), call_id=decision.call_id)
    gk.ingest(stamp("C1", run(gk, "pytest -q").ref))
    assert gk.can_finish("").allow
    approved = [e.payload for e in gk.events() if e.type == "grading_approved"]
    assert approved and approved[0]["by"] == "ask_prompt"


def test_tampering_before_the_first_declaration_is_caught(gk: Gatekeeper, repo: Path) -> None:
    """The surface is digested at the session's first call, before the agent acts."""
    gk.authorize(ToolCall("Read", {"file_path": "add.py"}))
    (repo / "test_add.py").write_text(TEST.replace("assert add(1, 1) == 2", "assert True"))
    gk.ingest(LEDGER)
    assert [
        r["reason"] for r in gk.ingest(stamp("C1", run(gk, "pytest -q").ref)).stamps_rejected
    ] == ["self_graded"]

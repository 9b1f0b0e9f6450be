"""Issue 12: staging the agent's own changes is not a mutation of the working tree.

Checked against real git in a temp repository, through ``gk.wrap(make_builtins(root)["bash"])``
(real bash, the working-tree fingerprint watching every execute-class call): ``git add`` and
``git stage`` write the index only, so they are allowed while the premise is ungrounded and
leave no ``unannounced_mutation``; ``git commit`` changes history and stays a mutation; the
destructive forms stay destructive.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import ledger_text

from infomark.gatekeeper import Gatekeeper
from infomark.gates.shell import classify_shell
from infomark.kernel.environ import agent_env
from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall
from infomark.tools.builtin import make_builtins

_ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
_ID |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=root, env={**agent_env(), **_ID}, check=True, capture_output=True
    )
    return proc.stdout.decode()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for k, v in _ID.items():
        monkeypatch.setenv(k, v)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def f():\n    return 1\n")
    _git(root, "init", "-q")
    _git(root, "add", "app.py")
    _git(root, "commit", "-qm", "start")
    return root


def _events(gk: Gatekeeper, kind: str) -> list[dict[str, object]]:
    return [e.payload for e in gk.events() if e.type == kind]


@pytest.mark.parametrize("command", ["git add -A", "git add .", "git stage app.py", "git add -u"])
def test_staging_is_allowed_while_ungrounded_and_changes_no_tracked_file(
    repo: Path, command: str
) -> None:
    (repo / "app.py").write_text("def f():\n    return 2\n")  # the agent's change, unstaged
    (repo / "repro.py").write_text("print(1)\n")
    before = (repo / "app.py").stat()
    with Gatekeeper.open(repo / ".infomark", "stage", root=repo) as gk:
        gk.ingest(ledger_text(("C1", "Guess", "python -c 'pass'"), premises=("C1",)))
        bash = gk.wrap(make_builtins(repo)["bash"])
        out = bash(ToolCall("bash", {"command": command}, cwd=str(repo)))
        assert not out.is_error, out.output
        assert _events(gk, "unannounced_mutation") == []
        staged = _git(repo, "diff", "--cached", "--name-only")
        assert "app.py" in staged  # it really staged
        after = (repo / "app.py").stat()
        assert (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns)
        commit = gk.authorize(ToolCall("bash", {"command": "git commit -qm fix"}, cwd=str(repo)))
        assert not commit.allowed  # history is a change: it waits for the premise


@pytest.mark.parametrize(
    ("command", "cls"),
    [
        ("git add -A", ToolClass.EXECUTE),
        ("git add -p app.py", ToolClass.EXECUTE),
        ("git stage .", ToolClass.EXECUTE),
        ("git restore --staged app.py", ToolClass.EXECUTE),
        ("git add -A && git commit -m fix", ToolClass.MODIFY),
        ("git commit -am fix", ToolClass.MODIFY),
        ("git commit --amend --no-edit", ToolClass.MODIFY),
        ("git restore app.py", ToolClass.DESTRUCTIVE),
        ("git restore --staged --worktree app.py", ToolClass.DESTRUCTIVE),
        ("git checkout -- .", ToolClass.DESTRUCTIVE),
        ("git reset --hard", ToolClass.DESTRUCTIVE),
        ("git clean -fd", ToolClass.DESTRUCTIVE),
        ("git stash pop", ToolClass.DESTRUCTIVE),
        ("git stash", ToolClass.MODIFY),
        ("git -c alias.a='reset --hard' a", ToolClass.DESTRUCTIVE),
        ("git -c filter.x.clean=cat add .", ToolClass.MODIFY),
    ],
)
def test_git_forms_keep_their_class(repo: Path, command: str, cls: ToolClass) -> None:
    assert classify_shell(command, cwd=str(repo)).tool_class is cls, command


def test_the_destructive_forms_really_destroy_and_add_does_not(repo: Path) -> None:
    """What the classes rest on, in real git: add keeps the working-tree edit, checkout
    discards it."""
    (repo / "app.py").write_text("def f():\n    return 2\n")
    _git(repo, "add", "-A")
    assert "return 2" in (repo / "app.py").read_text()
    (repo / "app.py").write_text("def f():\n    return 3\n")
    _git(repo, "checkout", "--", ".")
    assert "return 3" not in (repo / "app.py").read_text()

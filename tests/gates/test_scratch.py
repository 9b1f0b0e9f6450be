"""Scratch work, taint and the unannounced-mutation violation, on a real git repository."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import grounded, ledger_text

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def f():\n    return 1\n")
    (project / "notes.txt").write_text("untracked, from before the session\n")
    git(project, "init", "-q")
    git(project, "add", "src/app.py")
    git(project, "commit", "-qm", "init")
    return project


@pytest.fixture
def rgk(repo: Path, home: Path) -> Iterator[Gatekeeper]:
    g = Gatekeeper.open(home, "scratch", root=repo)
    g.ingest(ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",)))  # ungrounded
    yield g
    g.close()


def write(path: str, content: str = "print(1)\n") -> ToolCall:
    return ToolCall("Write", {"file_path": path, "content": content})


def edit(path: str) -> ToolCall:
    return ToolCall("Edit", {"file_path": path, "old_string": "1", "new_string": "2"})


def bash(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command})


def do_write(gk: Gatekeeper, root: Path, call: ToolCall) -> None:
    """Authorize, perform and record a write, as a host would."""
    decision = gk.authorize(call)
    assert decision.allowed
    target = root / str(call.input["file_path"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(str(call.input.get("content", "x")))
    gk.record(call, ToolOutcome("ok"), call_id=decision.call_id)


def do_run(gk: Gatekeeper, root: Path, command: str) -> tuple[str, str]:
    """Authorize, really run (in the sandboxed repo) and record a shell command."""
    call = bash(command)
    decision = gk.authorize(call)
    assert decision.allowed, decision
    proc = subprocess.run(
        command, shell=True, cwd=root, capture_output=True, text=True, check=False
    )
    evidence = gk.record(
        call, ToolOutcome(proc.stdout, exit_code=proc.returncode), call_id=decision.call_id
    )
    return decision.code, gk.after_tool_text(call, ToolOutcome(""), evidence)


# -- scratch ---------------------------------------------------------------------------------------


def test_new_untracked_files_and_the_temp_dir_are_scratch(
    rgk: Gatekeeper, repo: Path, tmp_path: Path
) -> None:
    for call in (
        write("repro.py"),
        write("scratch/deep/new.py"),
        write(str(tmp_path / "elsewhere" / "x.py")),
    ):
        d = rgk.authorize(call)
        assert d.allowed and d.code == "scratch", d
    written = [e.payload for e in rgk.events() if e.type == "files_written"]
    assert [w["paths"] for w in written] == [
        ["repro.py"],
        ["scratch/deep/new.py"],
        [os.path.realpath(tmp_path / "elsewhere" / "x.py")],
    ]
    assert written[1]["created"] == ["scratch"]  # the new directory is the agent's own too
    assert {s["paths"][0] for s in rgk.audit().to_dict()["scratch"]} >= {"repro.py"}


@pytest.mark.parametrize(
    "call",
    [
        edit("src/app.py"),  # tracked
        write("src/app.py"),  # tracked, overwritten
        write("notes.txt"),  # existed before the session
        edit("missing.py"),  # an edit creates nothing
        write(".git/hooks/pre-commit"),
        write("conftest.py"),
        write("sub/sitecustomize.py"),
        write(".github/workflows/ci.yml"),
        write("pyproject.toml"),
        write("."),
        ToolCall("mcp__github__create_or_update_file", {"path": "new.py", "content": "x"}),
        ToolCall("delete_file", {"target_file": "src/app.py"}),
        bash("echo x > src/app.py"),
        bash("cat > src/app.py <<'EOF'\nx\nEOF"),
    ],
)
def test_project_files_stay_mutations(rgk: Gatekeeper, call: ToolCall) -> None:
    d = rgk.authorize(call)
    assert not d.allowed and d.code != "scratch", d


@pytest.mark.parametrize(
    "command",
    [
        "echo x > new.txt",
        'printf "%s" x >> new.txt',
        "cat > repro.py <<'EOF'\nimport os\nprint(os.environ['HOME'])\nEOF",
        "cat <<EOF > repro.py\nprint(1)\nEOF",
        "touch a.txt b.txt",
        "mkdir -p scratch/deep",
    ],
)
def test_shell_forms_that_only_create_new_files_are_scratch(
    rgk: Gatekeeper, repo: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(repo)  # as in the hook: the shell runs in the project
    d = rgk.authorize(bash(command))
    assert d.allowed and d.code == "scratch", d


@pytest.mark.parametrize(
    "command",
    [
        # the classifier's words are what a command mentions, not what it writes
        "git stash",
        "git push",
        "git commit -am msg",
        "git checkout -b feature",
        "git reset HEAD~1",
        "npm install",
        "pip install -e .",
        "uv sync",
        "cp /etc/passwd new.txt",
        "mv notes.txt new.txt",
        "ln -s src evil",
        "chmod +x new.sh",
        "tar xf x.tar",
        # forms that could do more than write the named file
        "echo x > new.txt; git stash",
        "echo $(git stash) > new.txt",
        "cat > new.py <<EOF\n$(git stash)\nEOF",
        "echo x > $TARGET",
        "echo x > ~/.bashrc",
        "touch *.py",
        "rm -rf build",  # not the agent's own
        "rm -f notes.txt",
    ],
)
def test_other_shell_writes_stay_mutations(
    rgk: Gatekeeper, repo: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(repo)
    d = rgk.authorize(bash(command))
    assert not d.allowed and d.code != "scratch", (command, d)


def test_deleting_own_files_by_shell_is_scratch(
    rgk: Gatekeeper, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    do_write(rgk, repo, write("repro.py"))
    do_write(rgk, repo, write("scratch/a.py"))
    for command in ("rm -f repro.py", "rm -rf scratch"):
        d = rgk.authorize(bash(command))
        assert d.allowed and d.code == "scratch" and d.tool_class == "destructive", d


def test_a_tracked_file_deleted_from_the_tree_is_not_new(rgk: Gatekeeper, repo: Path) -> None:
    (repo / "src" / "app.py").unlink()
    assert rgk.authorize(write("src/app.py")).code == "ungrounded_premises"


def test_a_symlink_does_not_make_a_tracked_file_new(rgk: Gatekeeper, repo: Path) -> None:
    (repo / "link").symlink_to(repo / "src", target_is_directory=True)
    assert rgk.authorize(write("link/app.py")).code == "ungrounded_premises"
    assert rgk.authorize(write("../project/src/app.py")).code == "ungrounded_premises"


def test_own_files_stay_scratch_edits_and_deletes_included(rgk: Gatekeeper, repo: Path) -> None:
    do_write(rgk, repo, write("repro.py"))
    assert rgk.authorize(write("repro.py", "print(2)\n")).code == "scratch"
    assert rgk.authorize(edit("repro.py")).code == "scratch"
    d = rgk.authorize(ToolCall("delete_file", {"target_file": "repro.py"}))
    assert d.allowed and d.code == "scratch" and d.tool_class == "destructive"


def test_scratch_is_configurable(rgk: Gatekeeper, tmp_path: Path) -> None:
    rgk.config = replace(rgk.config, scratch=False)
    assert rgk.authorize(write("repro.py")).code == "ungrounded_premises"
    rgk.config = replace(rgk.config, scratch=True, scratch_in_project=False)
    assert rgk.authorize(write("repro.py")).code == "ungrounded_premises"
    assert rgk.authorize(write(str(tmp_path / "t.py"))).code == "scratch"
    rgk.config = replace(rgk.config, scratch_in_project=True, scratch_protected=("docs",))
    assert rgk.authorize(write("docs/new.md")).code == "ungrounded_premises"
    assert rgk.authorize(write("new.md")).code == "scratch"


def test_scratch_without_any_ledger(repo: Path, home: Path) -> None:
    with Gatekeeper.open(home, "fresh", root=repo) as gk:
        assert gk.authorize(write("repro.py")).code == "scratch"
        assert gk.authorize(edit("src/app.py")).code == "no_ledger"


# -- taint and the fingerprint ---------------------------------------------------------------------

FIX = (
    "from pathlib import Path\np = Path('src/app.py')\np.write_text(p.read_text() + '# fixed\\n')\n"
)


def test_running_an_own_script_is_a_watched_mutation(rgk: Gatekeeper, repo: Path) -> None:
    do_write(rgk, repo, write("repro.py", "print('repro')\n"))
    code, notice = do_run(rgk, repo, f"{sys.executable} repro.py")
    assert code == "scratch" and notice == ""  # it changed nothing tracked
    last = [e.payload for e in rgk.events() if e.type == "decision"][-1]
    assert last["tool_class"] == "modify" and any("taint" in w for w in last["why"])
    assert not rgk.authorize(bash(f"{sys.executable} repro.py &")).allowed  # may outlive the call
    assert not rgk.authorize(bash("nohup python repro.py")).allowed


def test_a_script_that_edits_a_tracked_file_is_caught(rgk: Gatekeeper, repo: Path) -> None:
    do_write(rgk, repo, write("fix.py", FIX))
    code, notice = do_run(rgk, repo, f"{sys.executable} fix.py")
    assert code == "scratch"
    assert "unannounced_mutation" in notice and "src/app.py" in notice
    assert "git checkout -- src/app.py" in notice
    event = next(e.payload for e in rgk.events() if e.type == "unannounced_mutation")
    assert event["files"] == ["src/app.py"] and event["violation"] is True
    state = rgk.state
    assert state.violation_files == ["src/app.py"]
    assert state.last_modify_seq > 0
    # every mutation, scratch included, is denied until the tree is back
    for call in (write("other.py"), edit("src/app.py"), bash(f"{sys.executable} fix.py")):
        d = rgk.authorize(call)
        assert d.code == "unannounced_mutation" and "src/app.py" in d.reason, d
    assert rgk.audit().to_dict()["unannounced_mutations"][0]["files"] == ["src/app.py"]
    # the revert itself is allowed; afterwards scratch works again
    code, _ = do_run(rgk, repo, "git checkout -- src/app.py")
    assert code == "revert"
    assert rgk.authorize(write("other.py")).code == "scratch"
    assert rgk.state.violation_files == []


def test_an_untainted_run_that_changes_tracked_files_is_caught(rgk: Gatekeeper, repo: Path) -> None:
    (repo / "tool.py").write_text(FIX)  # not the agent's: no taint, but the fingerprint sees it
    code, notice = do_run(rgk, repo, f"{sys.executable} tool.py")
    assert code == "allowed" and "src/app.py" in notice
    assert rgk.authorize(write("x.py")).code == "unannounced_mutation"


def test_grounding_the_premises_lifts_the_violation(rgk: Gatekeeper, repo: Path) -> None:
    do_write(rgk, repo, write("fix.py", FIX))
    do_run(rgk, repo, f"{sys.executable} fix.py")
    assert rgk.authorize(edit("src/app.py")).code == "unannounced_mutation"
    grounded(rgk)
    assert rgk.authorize(edit("src/app.py")).code == "grounded"
    assert rgk.state.violation_files == []


def test_a_change_while_grounded_makes_stamps_stale(rgk: Gatekeeper, repo: Path) -> None:
    grounded(rgk)
    assert rgk.state.stale_claims() == []
    (repo / "tool.py").write_text(FIX)
    _, notice = do_run(rgk, repo, f"{sys.executable} tool.py")
    assert "stale" in notice and "violation" not in notice
    assert rgk.state.stale_claims() == ["G1"]
    assert rgk.state.violation_files == []
    assert not rgk.can_finish("done").allow


def test_observe_journals_the_change_and_tells_nobody(repo: Path, home: Path) -> None:
    with Gatekeeper.open(home, "obs", root=repo, profile="observe") as gk:
        (repo / "tool.py").write_text(FIX)
        _, notice = do_run(gk, repo, f"{sys.executable} tool.py")
        assert notice == ""
        assert [e.type for e in gk.events()].count("unannounced_mutation") == 1
        d = gk.authorize(edit("src/app.py"))
        assert d.allowed and d.dryrun and "unannounced_mutation" in d.reason

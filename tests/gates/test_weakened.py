"""The scan of a change for checks weakened instead of passed (gates/weakened.py)."""

from __future__ import annotations

from pathlib import Path

from infomark.gates.weakened import against_checks, scan_diff

DIFF = """\
--- a/pyproject.toml
+++ b/pyproject.toml
@@ -3,4 +3,3 @@
-strict = true
-fail_under = 90
+fail_under = 50
-select = ["E", "F", "B"]
+ignore = ["B"]
--- a/.github/workflows/ci.yml
+++ b/.github/workflows/ci.yml
@@ -10,1 +10,0 @@
-      - run: mypy src
--- a/src/app.ts
+++ b/src/app.ts
@@ -1,0 +1,2 @@
+// @ts-ignore
+x = 1 // eslint-disable-line
--- a/src/m.py
+++ b/src/m.py
@@ -1,0 +1,1 @@
+import os  # noqa: F401
--- a/tests/test_x.py
+++ b/tests/test_x.py
@@ -1,0 +1,2 @@
+@pytest.mark.xfail
+    pytest.skip("later")
"""


def test_each_form_is_found_with_its_place() -> None:
    found = {(f.kind, f.path, f.text) for f in scan_diff(DIFF)}
    loosened = {t for k, p, t in found if k == "loosened_config"}
    assert "removed: strict = true" in loosened
    assert "fail_under = 50" in loosened
    assert 'removed: select = ["E", "F", "B"]' in loosened and 'ignore = ["B"]' in loosened
    assert "CI step removed: - run: mypy src" in loosened
    suppressions = {(p, t) for k, p, t in found if k == "suppression"}
    assert ("src/app.ts", "// @ts-ignore") in suppressions
    assert ("src/m.py", "import os  # noqa: F401") in suppressions
    assert len([1 for k, p, _ in found if k == "skipped_test" and p == "tests/test_x.py"]) == 2


def test_a_raised_threshold_and_kept_strictness_are_not_findings() -> None:
    diff = (
        "--- a/setup.cfg\n+++ b/setup.cfg\n@@ -1,2 +1,2 @@\n"
        "-fail_under = 80\n+fail_under = 90\n-strict = false\n+strict = true\n"
    )
    assert scan_diff(diff) == []


def test_empty_tests_are_found_by_their_body(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_y.py").write_text(
        "def test_pass():\n    pass\n\n"
        "def test_true():\n    assert True\n\n"
        "def test_call():\n    len([])\n\n"
        "def test_real():\n    assert len([]) == 0\n\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n"
    )
    diff = "--- /dev/null\n+++ b/tests/test_y.py\n@@ -0,0 +1,14 @@\n" + "+x\n" * 14
    empty = [f.text for f in scan_diff(diff, root=str(tmp_path)) if f.kind == "empty_test"]
    assert empty == [
        "def test_pass(): no assertion",
        "def test_true(): no assertion",
        "def test_call(): no assertion",
    ]


def test_what_counts_against_the_checks() -> None:
    found = scan_diff(DIFF)
    kinds = {f.kind for f in against_checks(found, ["pytest -q"])}
    assert kinds == {"skipped_test", "loosened_config"}  # pytest: its config counts, not noqa
    kinds = {f.kind for f in against_checks(found, ["ruff check ."])}
    assert "suppression" in kinds


def test_no_commit_yet_or_no_git_means_no_change_to_read(tmp_path: Path) -> None:
    import subprocess

    from infomark.gates.weakened import scan

    (tmp_path / "test_z.py").write_text("def test_z():\n    pass\n")
    assert scan(tmp_path) == []  # not a repository
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert scan(tmp_path) == []  # no commit: every file would look new
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "s"], check=True)
    (tmp_path / "test_w.py").write_text("def test_w():\n    pass\n")
    assert [f.text for f in scan(tmp_path)] == ["def test_w(): no assertion"]


def test_the_scan_runs_none_of_the_repositorys_own_programs(tmp_path: Path) -> None:
    """The agent owns the repository's configuration: an fsmonitor hook, an external diff and
    a textconv driver it planted would run at every finish if the scan let git use them."""
    import subprocess

    from infomark.gates.weakened import scan

    marker = tmp_path / "ran"
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\n")
    prog.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "test_a.py").write_text("def test_a():\n    assert 1\n")
    (repo / ".gitattributes").write_text("*.py diff=evil\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "s"], check=True)
    for key in ("core.fsmonitor", "diff.external", "diff.evil.textconv"):
        subprocess.run([*git, "config", key, str(prog)], check=True)
    (repo / "test_a.py").write_text("def test_a():\n    pass\n")
    assert [f.text for f in scan(repo)] == ["def test_a(): no assertion"]
    assert not marker.exists()


def test_a_change_the_agent_committed_is_read_from_the_sessions_commit(tmp_path: Path) -> None:
    """`git diff HEAD` is empty once the agent commits its change: the scan reads from the
    commit the session started on (its baseline's head) instead."""
    import subprocess

    from infomark.gates.weakened import scan

    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert 1\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "s"], check=True)
    start = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (tmp_path / "test_a.py").write_text(
        "import pytest\n\n\n@pytest.mark.skip\ndef test_a():\n    assert 1\n"
    )
    (tmp_path / "test_b.py").write_text("def test_b():\n    pass\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "done"], check=True)
    assert scan(tmp_path) == []  # against HEAD: nothing changed
    found = {(f.kind, f.path) for f in scan(tmp_path, base=start)}
    assert found == {("skipped_test", "test_a.py"), ("empty_test", "test_b.py")}
    assert scan(tmp_path, base="0" * 40) == []  # a commit that is gone: HEAD, as before
    assert scan(tmp_path, base="--output=/tmp/x") == []  # never an option to git

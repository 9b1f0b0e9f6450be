"""The project's baseline across sessions (real git, real pytest, real bubblewrap).

Recorded the first time infomark sees the project, it moves only by the user: an approved test
change, or ``infomark approve --baseline``. The attacks (a test change the agent committed, a
forged record, a record taken late) and the honest flows (an approval that later sessions keep,
tests the user changed between sessions) run for real.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.gates import project_baseline
from infomark.kernel.reasons import AttestRefusal
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.attest import check
from tests.security.attested_project import (
    BUGGY,
    FIXED,
    PYTEST,
    TESTS,
    git,
    git_project,
    ledger,
    need_bwrap,
)

SWAPPED = TESTS.replace("== 4", "== 0")  # asserts the bug
MORE = TESTS + "\n\ndef test_three():\n    assert add(1, 2) == 3\n"


@contextmanager
def _session(home: Path, name: str, root: Path) -> Iterator[Gatekeeper]:
    """A session in ``root`` with the claim C1 (``pytest``), after its first action."""
    with Gatekeeper.open(home, name, root=root) as gk:
        gk.ingest(ledger(PYTEST))
        gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))
        yield gk


def _collected(done: Any) -> int:
    assert done.evidence is not None, done.text
    return int(done.evidence.record["attested"]["report"]["collected"])


@pytest.mark.parametrize("commit", [False, True], ids=["left-in-the-tree", "committed"])
def test_a_later_session_does_not_take_an_earlier_sessions_test_change_as_baseline(
    tmp_path: Path, commit: bool
) -> None:
    need_bwrap()
    root = git_project(tmp_path, {"calc.py": BUGGY, "test_calc.py": TESTS})
    home = tmp_path / "home"
    with _session(home, "first", root) as gk:
        (root / "test_calc.py").write_text(SWAPPED)
        assert not gk.can_finish("Done.").allow  # self_graded: the test changed
        if commit:  # HEAD moves: the first sight's commit is still the baseline
            git(root, "commit", "-qam", "tests: fix the expectation")
    with _session(home, "second", root) as gk:
        done = check(gk, "C1")
        assert done.outcome == "FAIL", done.text  # the first sight's test, on the bug
        assert "test_calc.py (grading surface" in done.text, done.text  # the project's is used
        assert not gk.can_finish("Done.").allow


def test_an_approved_test_change_is_the_baseline_of_later_sessions(tmp_path: Path) -> None:
    need_bwrap()
    root = git_project(tmp_path, {"calc.py": BUGGY, "test_calc.py": TESTS})
    home = tmp_path / "home"
    with _session(home, "first", root) as gk:
        (root / "test_calc.py").write_text(MORE)
        gk.approve_grading(str(root / "test_calc.py"), by="operator", note="one more test")
    with _session(home, "second", root) as gk:
        (root / "calc.py").write_text(FIXED)
        done = check(gk, "C1")
        assert done.outcome == "PASS", done.text
        assert _collected(done) == 3  # the approved content, not the first sight's
        assert done.status == "Exact"


def test_tests_the_user_changed_between_sessions_grade_once_the_user_accepts_them(
    tmp_path: Path,
) -> None:
    need_bwrap()
    root = git_project(tmp_path, {"calc.py": BUGGY, "test_calc.py": TESTS})
    home = tmp_path / "home"
    with _session(home, "first", root):
        pass  # the project's first sight
    (root / "test_calc.py").write_text(MORE)  # the user, between sessions
    git(root, "commit", "-qam", "one more test")
    with _session(home, "second", root) as gk:
        (root / "calc.py").write_text(FIXED)
        before = check(gk, "C1")
        assert _collected(before) == 2, before.text  # the first sight's tests
        assert "test_calc.py (grading surface" in before.text  # the user sees which
        gk.approve_baseline(by="operator", note="pulled new tests")
        after = check(gk, "C1")
        assert after.outcome == "PASS", after.text
        assert _collected(after) == 3
    with _session(home, "third", root) as gk:  # and the sessions after it
        assert _collected(check(gk, "C1")) == 3


def test_a_forged_project_record_is_not_used(tmp_path: Path) -> None:
    need_bwrap()
    root = git_project(tmp_path, {"calc.py": BUGGY, "test_calc.py": TESTS})
    home = tmp_path / "home"
    with _session(home, "first", root) as gk:
        where = project_baseline.path(gk.store)
    doc = json.loads(Path(where).read_text())
    body = json.loads(doc["body"])
    body["approved"] = {"test_calc.py": "sha256:" + "0" * 64}  # an approval nobody gave
    doc["body"] = json.dumps(body, sort_keys=True, separators=(",", ":"))
    Path(where).write_text(json.dumps(doc))
    with _session(home, "second", root) as gk:
        done = check(gk, "C1")
        assert done.evidence is None, done.text
        assert "damaged or was not written by this home's key" in done.text
        assert "infomark approve --baseline" in done.text
    assert oct(os.stat(where).st_mode & 0o777) == "0o600"


def test_a_baseline_recorded_after_the_first_change_is_refused_until_accepted(
    tmp_path: Path,
) -> None:
    need_bwrap()
    root = git_project(
        tmp_path,
        {"calc.py": BUGGY, "test_calc.py": TESTS},
        config="[attest]\nrequired = false\n",
        attest=False,
    )
    with Gatekeeper.open(tmp_path / "home", "late", root=root) as gk:
        gk.ingest(ledger(PYTEST))
        write = ToolCall("Write", {"file_path": str(root / "calc.py"), "content": FIXED})
        # no baseline yet (attested runs are not required); the gate let through by its bypass
        decision = gk.authorize(write, bypass=True)
        assert decision.verdict.value == "allow", decision
        (root / "calc.py").write_text(FIXED)
        gk.record(write, ToolOutcome("written"), call_id=decision.call_id)
        done = check(gk, "C1")  # the project's first sight: after the change
        assert done.evidence is None, done.text
        assert "baseline_late" in done.text and "infomark approve --baseline" in done.text
        assert done.refused is AttestRefusal.BASELINE_LATE
        gk.approve_baseline(by="operator", note="looked at it")
        assert check(gk, "C1").evidence is not None  # runs again

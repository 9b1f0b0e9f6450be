"""An oracle no runner reports on (real bubblewrap, real ``sh``): judged by what it does.

``sh check.sh`` grounds a claim when ``check.sh`` is the baseline's and the same oracle failed
on the baseline: the agent's change is what made it pass. A script that passes on the baseline
too, inline code (``sh -c``, ``python3 -c``), a program on PATH and a script the agent wrote or
changed stay ``weak_oracle``, each with the reason naming what was seen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall
from infomark.tools.attest import check
from infomark.tools.attest.baseline_run import EVENT
from infomark.tools.attest.script_oracle import baseline_script
from tests.security.attested_project import git_project, ledger, need_bwrap

CHECK = 'grep -q "VALUE = 2" app.py || { echo "VALUE is not 2"; exit 1; }\n'


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    need_bwrap()


def _session(tmp_path: Path, text: str, *, value: int = 1) -> tuple[Gatekeeper, Path]:
    root = git_project(tmp_path, {"app.py": f"VALUE = {value}\n", "check.sh": CHECK})
    gk = Gatekeeper.open(tmp_path / "home", "script", root=root)
    gk.ingest(text)
    gk.authorize(ToolCall("Read", {"file_path": str(root / "app.py")}))  # the baseline
    return gk, root


def test_a_baseline_script_that_failed_before_the_fix_grounds_it(tmp_path: Path) -> None:
    gk, root = _session(tmp_path, ledger("sh check.sh"))
    with gk:
        before = check(gk, "C1")
        assert before.outcome == "FAIL", before.text
        (root / "app.py").write_text("VALUE = 2\n")
        fixed = check(gk, "C1")
        assert fixed.outcome == "PASS" and fixed.status == "Exact", fixed.text
        assert "exited 1 on the baseline" in fixed.text and "check.sh" in fixed.text
        record = fixed.evidence.record if fixed.evidence else {}
        assert record["attested"]["baseline_run"]["exit_code"] == 1
        assert [r.payload["oracle"] for r in gk.events() if r.type == EVENT] == ["sh check.sh"]
        assert gk.audit(verify=True).verified


def test_a_script_that_passes_on_the_baseline_too_shows_nothing(tmp_path: Path) -> None:
    gk, _root = _session(tmp_path, ledger("sh check.sh"), value=2)
    with gk:
        ran = check(gk, "C1")
        assert ran.outcome == "ERROR" and "(weak_oracle)" in ran.text, ran.text
        assert "exits 0 there too" in ran.text
        assert gk.state.claims["C1"].status not in ("Exact", "Inferred")


def test_a_script_the_agent_changed_or_inline_code_cannot_grade_it(tmp_path: Path) -> None:
    also = (("C2", "sh -c 'grep -q 2 app.py'", False), ("C3", "sh mine.sh", False))
    gk, root = _session(tmp_path, ledger("sh check.sh", also=also))
    with gk:
        (root / "app.py").write_text("VALUE = 2\n")
        (root / "check.sh").write_text("exit 0\n")  # the agent rewrites the grader
        (root / "mine.sh").write_text("exit 0\n")  # or writes its own
        for cid in ("C2", "C3"):
            ran = check(gk, cid)
            assert ran.outcome == "ERROR" and "(weak_oracle)" in ran.text, ran.text
            assert "runs no script of the baseline" in ran.text
        # check.sh is a grading file of the baseline: its own content grades, and passes now
        graded = check(gk, "C1")
        assert graded.outcome == "PASS", graded.text
        assert (root / "check.sh").read_text() == "exit 0\n"  # the agent's copy is untouched


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["sh", "check.sh"], "check.sh"),
        (["python3.12", "tests/t.py", "-v"], "tests/t.py"),
        (["./check.sh"], "check.sh"),
        (["sh", "-c", "exit 0"], None),
        (["python3", "-m", "mod"], None),
        (["python3", "-c", "import app"], None),
        (["git", "status"], None),
        (["test", "-f", "app.py"], None),
        (["sh", "new.sh"], None),  # not in the baseline
        (["sh", "app.py"], None),  # the agent's change replaced it
        (["sh", "/abs/check.sh"], None),
        (["sh", "../check.sh"], None),
        ([], None),
    ],
)
def test_which_oracles_run_a_script_of_the_baseline(argv: list[str], want: str | None) -> None:
    files = {"check.sh": [], "tests/t.py": [], "app.py": []}
    assert baseline_script(argv, files, {"app.py": "sha256:x"}) == want

"""Attested runs outside git: the baseline is a content-addressed copy of the tree.

The same guarantees as in a git work tree (real pytest, real bubblewrap): a configuration
that appears after the baseline is not in the copy, a source fix is, and the evidence names
both; the honest fix becomes Exact on infomark's own run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall
from infomark.tools.attest import check
from tests.security.attested_project import (
    BUGGY,
    FIXED,
    PYTEST,
    PYTEST_TOML,
    TESTS,
    ledger,
    need_bwrap,
)


def test_a_tree_without_git_is_copied_by_content(tmp_path: Path) -> None:
    need_bwrap()
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TESTS)
    (root / "infomark.toml").write_text("[attest]\nrequired = true\n")
    with Gatekeeper.open(tmp_path / "home", "tree", root=root) as gk:
        gk.ingest(ledger(PYTEST))
        gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))
        assert gk.state.baseline["kind"] == "tree"
        (root / "pytest.toml").write_text(PYTEST_TOML)  # would deselect the failing test
        failed = check(gk, "C1")
        assert failed.outcome == "FAIL", failed.text
        assert "pytest.toml" in failed.text
        (root / "calc.py").write_text(FIXED)
        passed = check(gk, "C1")
        assert passed.outcome == "PASS", passed.text
        assert passed.status == "Exact"
        record = passed.evidence.record if passed.evidence else {}
        assert list(record["attested"]["carried"]) == ["calc.py"]
        assert "pytest.toml" in record["attested"]["left_out"]
        assert gk.audit(verify=True).verified


_FIFO_BASELINE = """
import os, sys
from pathlib import Path
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall
root = Path(sys.argv[1])
(root / "a.py").write_text("x = 1\\n")
os.mkfifo(root / "pipe")
with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
    d = gk.authorize(ToolCall("Read", {"file_path": str(root / "a.py")}))
    print(d.verdict.value, gk.baseline_pending)
"""


def test_a_fifo_in_the_project_does_not_hang_the_baseline(tmp_path: Path) -> None:
    """An agent leaves a FIFO in the project: the first action copies the tree for attested
    runs, and an ordinary open of the FIFO would block for ever. It is copied as empty."""
    root = tmp_path / "p"
    root.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _FIFO_BASELINE, str(root)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["allow", "False"]  # decided, and the baseline taken

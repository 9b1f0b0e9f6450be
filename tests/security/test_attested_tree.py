"""Attested runs outside git: the baseline is a content-addressed copy of the tree.

The same guarantees as in a git work tree (real pytest, real bubblewrap): a configuration
that appears after the baseline is not in the copy, a source fix is, and the evidence names
both; the honest fix becomes Exact on infomark's own run.
"""

from __future__ import annotations

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

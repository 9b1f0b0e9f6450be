"""The oracle's run on the baseline (real pytest, real bubblewrap): weak oracles judged by
what they do.

A source change that makes the baseline's tests collect fewer cases passes its own run, but
infomark's run collected more on the baseline: ``fewer_tests``, not a PASS. An ``expect: FAIL``
claim whose oracle passes on the baseline cannot fail: refused (``oracle_cannot_fail``), naming
what the baseline run showed. The baseline run happens only when a verdict depends on it, once
per baseline and oracle.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall
from infomark.tools.attest import check
from infomark.tools.attest.baseline_run import EVENT
from tests.security.attested_project import PYTEST, git_project, ledger, need_bwrap

CALC = "CASES = [(1, 0, 1), (2, 2, 4)]\n\n\ndef add(a, b):\n    return a - b\n"
TESTS = (
    "import pytest\n\nfrom calc import CASES, add\n\n\n"
    '@pytest.mark.parametrize(("a", "b", "want"), CASES)\n'
    "def test_add(a, b, want):\n    assert add(a, b) == want\n"
)


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    need_bwrap()


def _session(tmp_path: Path, text: str) -> tuple[Gatekeeper, Path]:
    root = git_project(tmp_path, {"calc.py": CALC, "test_calc.py": TESTS})
    gk = Gatekeeper.open(tmp_path / "home", "base", root=root)
    gk.ingest(text)
    gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))  # the baseline
    return gk, root


def _baseline_runs(gk: Gatekeeper) -> list[dict[str, object]]:
    return [dict(r.payload) for r in gk.events() if r.type == EVENT]


def test_a_change_that_collects_fewer_tests_than_the_baseline_is_not_a_pass(
    tmp_path: Path,
) -> None:
    gk, root = _session(tmp_path, ledger(PYTEST, also=(("C2", PYTEST, False),)))
    with gk:
        failed = check(gk, "C1")  # the bug: a failing run is judged without the baseline's
        assert failed.outcome == "FAIL", failed.text
        assert _baseline_runs(gk) == []
        # the "fix" drops the failing case from the data the test is parametrized with
        (root / "calc.py").write_text(CALC.replace(", (2, 2, 4)", ""))
        fewer = check(gk, "C1")
        assert fewer.outcome == "ERROR" and "(fewer_tests)" in fewer.text, fewer.text
        assert "1 tests collected, 2 at the baseline" in fewer.text
        assert gk.state.claims["C1"].status not in ("Exact", "Inferred")
        # the honest fix: all of the baseline's cases pass; the baseline run is read back
        (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
        fixed = check(gk, "C2")
        assert fixed.outcome == "PASS" and fixed.status == "Exact", fixed.text
        record = fixed.evidence.record if fixed.evidence else {}
        seen = record["attested"]["baseline_run"]
        assert (seen["collected"], seen["failed"], seen["cached"]) == (2, 1, True)
        runs = _baseline_runs(gk)
        assert len(runs) == 1 and runs[0]["oracle"] == PYTEST
        assert gk.audit(verify=True).verified


def test_an_expect_fail_oracle_that_passes_on_the_baseline_cannot_fail(tmp_path: Path) -> None:
    weak = f"{PYTEST} -k 'not 2-2'"  # selects only the case the bug does not touch
    text = ledger(weak, expect_fail=True, also=(("C2", PYTEST, True),))
    gk, root = _session(tmp_path, text)
    with gk:
        refused = check(gk, "C1")
        assert refused.outcome == "ERROR", refused.text
        assert "oracle_cannot_fail" in refused.text
        assert "on the baseline, before any change, it showed exit status 0" in refused.text
        assert "1 passed of 1 collected" in refused.text
        assert gk.state.claims["C1"].status not in ("Exact", "Inferred")
        # an oracle that reproduces the bug fails, as the claim says: no baseline run needed
        reproduced = check(gk, "C2")
        assert reproduced.outcome == "FAIL", reproduced.text
        assert [r["oracle"] for r in _baseline_runs(gk)] == [weak]
        assert root.joinpath("calc.py").read_text() == CALC

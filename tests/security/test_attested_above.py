"""Files above the project (real pytest, real bubblewrap): pytest finds its rootdir, its
configuration and ``conftest.py`` in parent directories.

What the baseline had above the project is recorded with it and reproduced above the attested
copy; what the agent writes there later (a new ``conftest.py`` between the rootdir and the
project, a changed parent ``conftest.py``) is never taken.
"""

from __future__ import annotations

from pathlib import Path

from infomark.gatekeeper import Gatekeeper
from infomark.gates import baseline
from infomark.gates.baseline import above
from infomark.ledger.calls import ToolCall
from infomark.tools.attest import check
from tests.security.attested_project import BUGGY, FIXED, PYTEST, ledger, need_bwrap

PARENT_INI = "[pytest]\npython_files = check_*.py\n"  # the project's tests only match this
PARENT_CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef want():\n    return 4\n"
CHECK = "from calc import add\n\n\ndef test_add(want):\n    assert add(2, 2) == want\n"
OVERRIDE = "import pytest\n\n\n@pytest.fixture\ndef want():\n    return 0\n"  # 2 - 2


def test_above_names_are_recorded_relative_to_the_root(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b"
    root.mkdir(parents=True)
    (tmp_path / "a" / "pytest.ini").write_text(PARENT_INI)
    (tmp_path / "conftest.py").write_text(PARENT_CONFTEST)
    (tmp_path / "a" / "notes.txt").write_text("not read by pytest")
    (tmp_path / "a" / "tox.ini").mkdir()  # not a file
    stored: dict[str, bytes] = {}

    def put(data: bytes) -> str:
        stored[str(len(stored))] = data
        return str(len(stored) - 1)

    got = above(str(root), put)
    mine = {k: stored[v[0]] for k, v in got.items() if k in ("../pytest.ini", "../../conftest.py")}
    assert mine == {
        "../pytest.ini": PARENT_INI.encode(),
        "../../conftest.py": PARENT_CONFTEST.encode(),
    }
    assert "../notes.txt" not in got and "../tox.ini" not in got


def test_the_baselines_parent_files_are_reproduced_and_later_ones_never_taken(
    off_git: Path,
) -> None:
    need_bwrap()
    outer = off_git / "outer"
    root = outer / "mid" / "proj"
    root.mkdir(parents=True)
    (outer / "pytest.ini").write_text(PARENT_INI)  # the rootdir pytest finds
    (outer / "conftest.py").write_text(PARENT_CONFTEST)
    (root / "calc.py").write_text(BUGGY)
    (root / "check_calc.py").write_text(CHECK)
    (root / "infomark.toml").write_text("[attest]\nrequired = true\n")
    with Gatekeeper.open(off_git / "home", "above", root=root) as gk:
        gk.ingest(ledger(PYTEST))
        gk.authorize(ToolCall("Read", {"file_path": str(root / "calc.py")}))  # the baseline
        manifest = baseline.load(gk.store, gk.store.state.baseline)
        assert {"../../pytest.ini", "../../conftest.py"} <= set(manifest["above"])
        # later, above the project: a new conftest.py between the rootdir and the project,
        # and the recorded one changed; either would make the buggy add pass (2 - 2 == 0)
        (outer / "mid" / "conftest.py").write_text(OVERRIDE)
        (outer / "conftest.py").write_text(OVERRIDE)
        failed = check(gk, "C1")
        assert failed.outcome == "FAIL", failed.text
        report = (failed.evidence.record if failed.evidence else {})["attested"]["report"]
        assert (report["collected"], report["failed"]) == (1, 1)  # found by the parent's ini
        (root / "calc.py").write_text(FIXED)
        passed = check(gk, "C1")  # the fixture comes from the baseline's parent conftest
        assert passed.outcome == "PASS" and passed.status == "Exact", passed.text

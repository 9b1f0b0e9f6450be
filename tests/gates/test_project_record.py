"""The project's baseline record in the home: first recording wins, approvals move it, the MAC
holds it (a real home and key in temp dirs)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from infomark.gates import project_baseline
from infomark.kernel.errors import UserError
from infomark.ledger.engine import Ledger


def _ledger(tmp: Path, session: str = "s1") -> Ledger:
    (tmp / "proj").mkdir(exist_ok=True)
    return Ledger(tmp / "home", session, root=tmp / "proj")


def test_the_first_recording_wins_and_later_ones_read_it(tmp_path: Path) -> None:
    first = _ledger(tmp_path)
    assert project_baseline.load(first) is None
    got = project_baseline.record(first, {"id": "sha256:aa"}, late=False)
    assert got.baseline == {"id": "sha256:aa"}
    again = project_baseline.record(_ledger(tmp_path, "s2"), {"id": "sha256:bb"}, late=True)
    assert again.baseline == {"id": "sha256:aa"} and not again.late and again.session == "s1"
    where = project_baseline.path(first)
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(where)).st_mode) == 0o700
    assert [p for p in os.listdir(os.path.dirname(where)) if p != os.path.basename(where)] == []


def test_approvals_are_kept_and_a_deletion_drops_the_file(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    project_baseline.approve(ledger, "test_a.py", "sha256:01")  # no record yet: nothing moves
    assert project_baseline.load(ledger) is None
    project_baseline.record(ledger, {"id": "sha256:aa"}, late=False)
    project_baseline.approve(ledger, "test_a.py", "sha256:01")
    project_baseline.approve(ledger, "test_b.py", None)
    rec = project_baseline.load(ledger)
    assert rec is not None and rec.approved_blobs() == {"test_a.py": "sha256:01"}
    project_baseline.accept(ledger, {"id": "sha256:cc"})  # the user accepts the tree
    rec = project_baseline.load(ledger)
    assert rec is not None and rec.baseline == {"id": "sha256:cc"} and rec.approved == {}


@pytest.mark.parametrize(
    "forge",
    [
        lambda doc: {**doc, "body": doc["body"].replace("sha256:aa", "sha256:ff")},
        lambda doc: {**doc, "mac": "0" * 64},
        lambda doc: {"body": doc["body"]},
        lambda doc: "not an object",
    ],
)
def test_a_record_the_key_did_not_sign_is_refused_and_kept(tmp_path: Path, forge: object) -> None:
    ledger = _ledger(tmp_path)
    project_baseline.record(ledger, {"id": "sha256:aa"}, late=False)
    where = Path(project_baseline.path(ledger))
    assert callable(forge)
    where.write_text(json.dumps(forge(json.loads(where.read_text()))))
    forged = where.read_text()
    with pytest.raises(UserError, match="damaged or was not written by this home's key"):
        project_baseline.load(ledger)
    project_baseline.approve(ledger, "test_a.py", "sha256:01")  # does not replace it
    assert where.read_text() == forged

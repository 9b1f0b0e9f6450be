"""Fork, merge and signed bundles on both backends (the guarantees of issue 19).

The same scenario on SQLite and on a PostgreSQL store: a fork's stamp merged back with its
provenance, a tampered fork refused, and an exported bundle that ``verify-bundle`` accepts
without the home, the key or the store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from store_backends import Backend

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import VerificationError
from infomark.ledger.fork import comparable_state
from tests.helpers import stamp
from tests.ledger.fork_helpers import ORACLE, call, ground, ledger, open_gk

pytestmark = pytest.mark.usefixtures("backend")
EXE = str(Path(sys.executable).with_name("infomark"))


@pytest.fixture
def gk(tmp_path: Path, backend: Backend) -> Gatekeeper:
    g = open_gk(tmp_path / ".infomark", "S")
    g.ingest(ledger(("C1", "the tests pass", ORACLE)))
    ground(g)
    return g


def _stamped(gk: Gatekeeper) -> str:
    ref = call(gk, "bash", command=ORACLE)
    assert ref is not None and gk.ingest(stamp("C1", ref)).stamps_applied
    return ref


def test_a_forks_stamp_is_merged_with_its_provenance(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    ref = _stamped(g2)
    assert gk.merge_from("S2")["claims"] == ["C1"]
    audit = gk.audit()
    assert audit.verified is True
    row = next(c for c in audit.claims if c["id"] == "C1")
    assert row["status"] == "Exact" and row["history"][-1]["evidence_session"] == "S2"
    assert row["evidence_ref"] == ref
    assert comparable_state(gk.store.replay()) == comparable_state(gk.state)
    assert gk.merge_from("S2")["merged"] is False  # merging again changes nothing


def test_a_tampered_fork_is_not_merged(gk: Gatekeeper, backend: Backend) -> None:
    g2 = gk.fork("S2")
    _stamped(g2)
    backend.sql(
        gk.home,
        ("UPDATE events SET payload = '{\"tampered\":1}' WHERE session='S2' AND seq=2", ()),
    )
    head = gk.state.seq
    with pytest.raises(VerificationError, match="does not verify"):
        gk.merge_from("S2")
    assert gk.store.journal.last_seq("S") == head


def test_an_exported_bundle_verifies_anywhere(gk: Gatekeeper, tmp_path: Path) -> None:
    _stamped(gk)
    home = gk.home
    gk.close()
    bundle = tmp_path / "s.bundle"
    out = subprocess.run(
        [EXE, "audit", "--home", str(home), "--session", "S", "--export", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(bundle.read_text())  # a self-contained JSON document
    ok = subprocess.run(  # no home, no key, no store: only the bundle
        [EXE, "verify-bundle", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={"PATH": str(Path(sys.executable).parent)},
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr

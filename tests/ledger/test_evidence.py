from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from helpers import record_paired
from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel.reasons import RejectReason
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import EvidenceClass, Outcome, evidence_class_for


@pytest.mark.parametrize(
    ("tool", "cls"),
    [
        ("bash", EvidenceClass.EXECUTION),
        ("Bash", EvidenceClass.EXECUTION),
        ("run_command", EvidenceClass.EXECUTION),
        ("PowerShell", EvidenceClass.EXECUTION),
        ("Read", EvidenceClass.OBSERVATION),
        ("code-search", EvidenceClass.OBSERVATION),
        ("NotebookRead", EvidenceClass.OBSERVATION),
        ("WebFetch", EvidenceClass.WEB),
        ("web_search", EvidenceClass.WEB),
        ("Edit", EvidenceClass.INELIGIBLE),
        ("deploy", EvidenceClass.INELIGIBLE),
        ("mcp__files__read", EvidenceClass.OBSERVATION),
    ],
)
def test_evidence_class_by_name(tool: str, cls: EvidenceClass) -> None:
    assert evidence_class_for(tool) is cls


def test_config_override_wins() -> None:
    assert evidence_class_for("my_tool", {"My-Tool": "execution"}) is EvidenceClass.EXECUTION


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (ToolOutcome(exit_code=0), Outcome.PASS),
        (ToolOutcome(exit_code=2), Outcome.FAIL),
        (ToolOutcome(error="timeout"), Outcome.ERROR),
        (ToolOutcome(output="file text"), Outcome.OBSERVED),
    ],
)
def test_outcomes(tmp_path: Path, outcome: ToolOutcome, expected: Outcome) -> None:
    with Ledger(tmp_path, "s") as led:
        assert (
            record_paired(led, ToolCall("bash", {"command": "pytest"}), outcome).outcome is expected
        )


def test_record_stores_output_content_addressed_and_tag(tmp_path: Path) -> None:
    with Ledger(tmp_path, "s") as led:
        ev = record_paired(
            led, ToolCall("bash", {"command": "pytest -q"}, "t1"), ToolOutcome("3 passed", 0)
        )
        assert re.fullmatch(r"ev_[0-9a-f]{24}", ev.ref)
        assert ev.tag == (
            f"[infomark evidence_ref={ev.ref} tool=bash outcome=PASS "
            "eligible=oracle_stamp,inference_stamp]"
        )
        assert led.blobs.get(ev.output_digest) == b"3 passed"
        assert led.verify_ref(ev.ref) == (ev, None)
        raw = sqlite3.connect(tmp_path / "ledger.db").execute("SELECT payload FROM events")
        assert all("3 passed" not in r[0] for r in raw.fetchall())  # digest only


def test_foreign_and_tampered_evidence(tmp_path: Path) -> None:
    with Ledger(tmp_path, "a") as a, Ledger(tmp_path, "b") as b:
        ev = record_paired(a, ToolCall("bash", {"command": "true"}), ToolOutcome(exit_code=0))
        assert b.verify_ref(ev.ref) == (None, RejectReason.FOREIGN_EVIDENCE)
        db = sqlite3.connect(tmp_path / "ledger.db")
        db.execute(
            "UPDATE evidence SET record = replace(record, '\"exit_code\":0', '\"exit_code\":1')"
        )
        db.commit()
        assert a.verify_ref(ev.ref) == (None, RejectReason.TAMPERED_EVIDENCE)


@given(ref=st.from_regex(r"ev_[0-9a-f]{24}", fullmatch=True) | st.text(max_size=40))
def test_no_ref_the_registry_did_not_issue_is_accepted(
    tmp_path_factory: pytest.TempPathFactory, ref: str
) -> None:
    home = tmp_path_factory.mktemp("h")
    with Ledger(home, "s") as led:
        issued = record_paired(led, ToolCall("bash", {"command": "true"}), ToolOutcome(exit_code=0))
        ev, why = led.verify_ref(ref)
        if ref == issued.ref:
            assert ev is not None
        else:
            assert ev is None and why is RejectReason.UNKNOWN_EVIDENCE


def test_seq_is_gap_free_and_projection_survives_reopen(tmp_path: Path) -> None:
    with Ledger(tmp_path, "s") as led:
        refs = [
            record_paired(
                led, ToolCall("bash", {"command": f"echo {i}"}), ToolOutcome(exit_code=0)
            ).ref
            for i in range(150)
        ]
        # each record follows the decision that authorized it
        assert [r.seq for r in led.journal.events("s")] == list(range(1, 301))
        live = led.state.to_dict()
    with Ledger(tmp_path, "s") as again:
        assert again.state.to_dict() == live  # from the snapshot + tail
        assert again.replay().to_dict() == live  # from scratch
        assert again.evidence(refs[-1]) is not None


def test_read_only_mcp_tool_gives_observation_evidence(tmp_path: Path) -> None:
    with Ledger(tmp_path, "s") as led:
        call = ToolCall("mcp__notes__read_note", {"name": "a"}, annotations={"readOnlyHint": True})
        assert (
            record_paired(led, call, ToolOutcome("text")).evidence_class
            is EvidenceClass.OBSERVATION
        )
        plain = ToolCall("mcp__notes__write_note", {"name": "a"}, annotations={})
        assert (
            record_paired(led, plain, ToolOutcome("ok")).evidence_class is EvidenceClass.INELIGIBLE
        )

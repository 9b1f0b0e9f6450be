"""Ledger semantics: demotion, stamps, every rejection reason code, divergence, artifacts."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import record_paired

from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import Evidence
from infomark.ledger.semantics import LedgerRules

ORACLE = "pytest tests/test_x.py -k chars"


def _ledger(
    status: str = "Hypothetical",
    oracle: str | None = ORACLE,
    falsifier: bool = True,
    text: str = "open window uses chars/4",
    cid: str = "C1",
    extra: tuple[str, ...] = (),
) -> str:
    lines = [
        "claim_ledger:",
        "  claims:",
        f"    - id: {cid}",
        f'      text: "{text}"',
        f"      status: {status}",
    ]
    if falsifier:
        lines.append('      falsifier: "read computeOpenWindowTokens"')
    if oracle:
        lines.append(f'      oracle: "{oracle}"')
    lines += [f"      {line}" for line in extra]
    lines += [f"  premises_for_plan: [{cid}]", "  open_questions: []"]
    return "\n".join(lines) + "\n"


def _run(led: Ledger, command: str = ORACLE, code: int | None = 0, tool: str = "bash") -> Evidence:
    return record_paired(led, ToolCall(tool, {"command": command}), ToolOutcome("out", code))


@pytest.fixture
def led(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "home", "s", root=tmp_path)


def _status(led: Ledger, cid: str = "C1") -> str:
    return led.state.claims[cid].status


def test_self_declared_exact_is_demoted(led: Ledger) -> None:
    report = led.ingest(_ledger("Exact"))
    assert report.demoted == ["C1"]
    assert _status(led) == "Hypothetical"
    assert led.state.claims["C1"].written == "Exact"


def test_self_declared_inferred_is_demoted_and_lower_ranks_kept(led: Ledger) -> None:
    led.ingest(_ledger("inferred"))
    assert _status(led) == "Hypothetical"
    led.ingest(_ledger("Guess"))
    assert _status(led) == "Guess"
    led.ingest(_ledger("whatever"))
    assert _status(led) == "Unknown"


def test_oracle_stamp_makes_exact(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    report = led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    assert report.stamps_applied == [{"claim_id": "C1", "evidence_ref": ev.ref, "status": "Exact"}]
    assert _status(led) == "Exact"


def test_inference_stamp_from_observation(led: Ledger) -> None:
    led.ingest(_ledger(oracle=None, extra=("observe: x",)))
    ev = record_paired(led, ToolCall("Read", {"file_path": "x"}), ToolOutcome("text"))
    led.ingest(f"inference_stamp: claim_id=C1 evidence_ref={ev.ref}")
    assert _status(led) == "Inferred"


def test_expected_fail_and_fail(led: Ledger) -> None:
    led.ingest(_ledger(extra=("expect: FAIL",)))
    failing = _run(led, code=1)
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={failing.ref} result=EXPECTED_FAIL")
    assert _status(led) == "Exact"
    led.ingest(_ledger(text="a different statement"))
    failing2 = _run(led, code=1)
    report = led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={failing2.ref} result=FAIL")
    assert report.stamps_applied[0]["status"] == "Unknown"
    assert _status(led) == "Unknown"  # falsified: recorded, not discarded
    assert any(h["cause"] == "oracle_stamp" for h in led.state.claims["C1"].history)


def _rejected(led: Ledger, text: str) -> str:
    report = led.ingest(text)
    assert len(report.stamps_rejected) == 1, report.to_dict()
    return str(report.stamps_rejected[0]["reason"])


def test_missing_evidence_legacy_form(led: Ledger) -> None:
    led.ingest(_ledger())
    assert _rejected(led, "oracle_stamp: C1 PASS") == "missing_evidence"


def test_unknown_evidence(led: Ledger) -> None:
    led.ingest(_ledger())
    text = "oracle_stamp: claim_id=C1 evidence_ref=ev_0123456789abcdef01234567 result=PASS"
    assert _rejected(led, text) == "unknown_evidence"


def test_foreign_evidence(tmp_path: Path) -> None:
    a = Ledger(tmp_path / "h", "a", root=tmp_path)
    b = Ledger(tmp_path / "h", "b", root=tmp_path)
    b.ingest(_ledger())
    ev = _run(a)
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(b, text) == "foreign_evidence"


def test_tampered_evidence(led: Ledger) -> None:
    import sqlite3

    led.ingest(_ledger())
    ev = _run(led, code=1)
    db = sqlite3.connect(led.journal.path)
    db.execute("UPDATE evidence SET record = replace(record, '\"exit_code\":1', '\"exit_code\":0')")
    db.execute("UPDATE evidence SET record = replace(record, '\"FAIL\"', '\"PASS\"')")
    db.commit()
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, text) == "tampered_evidence"


@pytest.mark.parametrize("tool", ["Read", "WebFetch", "Edit"])
def test_ineligible_evidence_for_oracle(led: Ledger, tool: str) -> None:
    led.ingest(_ledger())
    ev = _run(led, tool=tool, code=None)
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, text) == "ineligible_evidence"


def test_web_cannot_back_inference(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = record_paired(led, ToolCall("WebFetch", {"url": "https://x"}), ToolOutcome("page"))
    assert _rejected(led, f"inference_stamp: claim_id=C1 evidence_ref={ev.ref}") == (
        "ineligible_evidence"
    )


def test_failed_evidence(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led, code=3)
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, text) == "failed_evidence"


def test_unknown_claim(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    assert _rejected(led, f"oracle_stamp: claim_id=C9 evidence_ref={ev.ref} result=PASS") == (
        "unknown_claim"
    )


def test_missing_falsifier(led: Ledger) -> None:
    led.ingest(_ledger(falsifier=False))
    ev = _run(led)
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, text) == "missing_falsifier"


def test_missing_oracle(led: Ledger) -> None:
    led.ingest(_ledger(oracle=None))
    ev = _run(led)
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, text) == "missing_oracle"


def test_oracle_mismatch_quotes_the_declared_command(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led, command="true")
    report = led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    assert report.stamps_rejected[0]["reason"] == "oracle_mismatch"
    assert ORACLE in report.stamps_rejected[0]["message"]


def test_oracle_match_normalises_whitespace(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led, command="  pytest   tests/test_x.py\t-k chars ")
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    assert _status(led) == "Exact"


def test_evidence_predates_claim(led: Ledger) -> None:
    ev = _run(led)  # run first, declare later: the run cannot be the oracle's verdict
    led.ingest(_ledger())
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, text) == "evidence_predates_claim"


def test_changing_the_oracle_resets_its_declaration(led: Ledger) -> None:
    led.ingest(_ledger(oracle="make a"))
    ev = _run(led, command="make b")
    led.ingest(_ledger(oracle="make b"))
    assert _rejected(led, f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS") == (
        "evidence_predates_claim"
    )


def test_predating_check_can_be_disabled(tmp_path: Path) -> None:
    led = Ledger(tmp_path, "s", rules=LedgerRules(reject_evidence_predating_claim=False))
    ev = _run(led)
    led.ingest(_ledger())
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    assert _status(led) == "Exact"


def test_undeclared_oracle_compat_mode(tmp_path: Path) -> None:
    led = Ledger(tmp_path, "s", rules=LedgerRules(require_declared_oracle=False))
    led.ingest(_ledger(oracle=None))
    ev = _run(led, command="true")
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    assert _status(led) == "Exact"
    assert led.state.claims["C1"].stamp is not None
    assert led.state.claims["C1"].stamp.undeclared_oracle


def test_content_mismatch_and_artifact_revocation(led: Ledger, tmp_path: Path) -> None:
    art = tmp_path / "src.py"
    art.write_text("v1")
    led.ingest(_ledger())
    ev = _run(led)
    bad = (
        f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS artifact=src.py "
        f"content_hash=sha256:{'0' * 64}"
    )
    assert _rejected(led, bad) == "content_mismatch"
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS artifact=src.py")
    assert _status(led) == "Exact"
    assert led.check_artifacts() == []  # unchanged: nothing revoked
    art.write_text("v2")
    revoked = led.check_artifacts()
    assert revoked == [{"claim_id": "C1", "evidence_ref": ev.ref, "cause": "artifact_changed"}]
    assert _status(led) == "Unknown"


def test_divergence_revokes_and_blocks_replay(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    later = _run(led, command="cat log", code=0)
    report = led.ingest(f"divergence_event: claim_id=C1 evidence_ref={later.ref}")
    assert report.invalidated[0]["evidence_ref"] == ev.ref
    assert _status(led) == "Unknown"
    # replaying the revoked ref cannot restore the claim
    again = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, again) == "evidence_predates_claim"
    fresh = _run(led)
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={fresh.ref} result=PASS")
    assert _status(led) == "Exact"


def test_divergence_needs_valid_evidence(led: Ledger) -> None:
    led.ingest(_ledger())
    report = led.ingest("divergence_event: claim_id=C1 evidence_ref=ev_ffffffffffffffffffffffff")
    assert report.stamps_rejected[0]["reason"] == "unknown_evidence"


def test_changed_text_drops_the_stamp(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    report = led.ingest(_ledger("Exact", text="open window uses chars/3"))
    assert report.invalidated == [
        {"claim_id": "C1", "evidence_ref": ev.ref, "cause": "statement_changed"}
    ]
    assert _status(led) == "Hypothetical"
    assert any(e.type == "statement_changed" for e in led.journal.events("s"))


def test_stamped_claims_survive_a_new_ledger_that_omits_them(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    led.ingest(_ledger(cid="C2", oracle=None))
    assert set(led.state.claims) == {"C1", "C2"}
    assert _status(led, "C1") == "Exact"
    assert led.state.premises == ["C2"]


def test_restating_a_stamped_claim_keeps_it(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    report = led.ingest(_ledger("Hypothetical"))
    assert report.demoted == [] and _status(led) == "Exact"


def test_malformed_block_is_not_applied_but_the_rest_is(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    text = (
        "claim_ledger:\n  claims:\n    - id: bad id!\n      status: Exact\n\n"
        f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS\n"
    )
    report = led.ingest(text)
    assert any(d["severity"] == "error" for d in report.diagnostics)
    assert not report.ledger_updated
    assert _status(led) == "Exact"


def test_replay_equals_live_state(led: Ledger) -> None:
    led.ingest(_ledger("Exact"))
    ev = _run(led)
    led.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    led.ingest("oracle_stamp: C1 PASS")
    assert led.replay().to_dict() == led.state.to_dict()


def test_evidence_from_before_a_restatement_cannot_stamp_the_new_statement(led: Ledger) -> None:
    led.ingest(_ledger())
    ev = _run(led)
    led.ingest(_ledger(text="a stronger statement than the run showed"))
    text = f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS"
    assert _rejected(led, text) == "evidence_predates_claim"
    read_ev = record_paired(led, ToolCall("Read", {"file_path": "x"}), ToolOutcome("t"))
    led.ingest(_ledger(oracle=None, text="yet another statement", extra=("observe: x",)))
    assert _rejected(led, f"inference_stamp: claim_id=C1 evidence_ref={read_ev.ref}") == (
        "evidence_predates_claim"
    )

"""Fork and merge: the rules of issue 17, one behaviour per test, attacks included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import UserError, VerificationError
from infomark.ledger.fork import comparable_state
from tests.helpers import stamp
from tests.ledger.fork_helpers import (
    FIXER,
    ORACLE,
    call,
    ground,
    ledger,
    open_gk,
    prefix_state,
)


@pytest.fixture
def gk(tmp_path: Path) -> Gatekeeper:
    g = open_gk(tmp_path / ".infomark", "S")
    g.ingest(ledger(("C1", "the tests pass", ORACLE)))
    ground(g)
    return g


def _stamped(gk: Gatekeeper, cid: str, command: str = ORACLE) -> str:
    ref = call(gk, "bash", command=command)
    assert ref is not None
    report = gk.ingest(stamp(cid, ref))
    assert report.stamps_applied, report.stamps_rejected
    return ref


def test_fork_begins_with_forked_from_and_equals_the_prefix(gk: Gatekeeper) -> None:
    _stamped(gk, "C1")
    head = gk.state.seq
    g2 = gk.fork("S2")
    first = next(iter(g2.events()))
    assert first.type == "forked_from"
    assert first.payload["session"] == "S" and first.payload["seq"] == head
    assert first.payload["head_hash"] == list(gk.events())[-1].hash
    assert comparable_state(g2.store.replay()) == prefix_state(gk, head)
    assert g2.ledger().status("C1") == "Exact"
    assert g2.audit().verified is True and gk.audit().verified is True


def test_a_stamped_mutation_stays_fresh_in_the_fork(gk: Gatekeeper) -> None:
    """The edge case: the stamped run is itself the last modification."""
    gk.ingest(ledger(("C1", "the fix applies", FIXER)))
    _stamped(gk, "C1", FIXER)
    assert gk.state.last_modify_seq == gk.state.claims["C1"].stamp.evidence_seq  # type: ignore[union-attr]
    assert "C1" not in gk.state.stale_claims()
    g2 = gk.fork("S2")
    assert "C1" not in g2.state.stale_claims()
    assert g2.state.stale_claims() == gk.state.stale_claims()
    assert comparable_state(g2.state) == comparable_state(gk.state)


def test_fork_at_an_earlier_seq(gk: Gatekeeper) -> None:
    upto = gk.state.seq
    _stamped(gk, "C1")
    g2 = gk.fork("S2", upto=upto)
    assert g2.ledger().status("C1") != "Exact"
    assert comparable_state(g2.state) == prefix_state(gk, upto)


def test_prefix_evidence_is_usable_in_the_fork_later_evidence_is_not(gk: Gatekeeper) -> None:
    early = call(gk, "bash", command=ORACLE)
    g2 = gk.fork("S2")
    late = call(gk, "bash", command=ORACLE)  # issued to S after the fork point
    assert early is not None and late is not None
    rejected = g2.ingest(stamp("C1", late)).stamps_rejected
    assert [r["reason"] for r in rejected] == ["foreign_evidence"]
    assert g2.ingest(stamp("C1", early)).stamps_applied
    assert g2.audit().verified is True


def test_a_sibling_forks_evidence_is_foreign(gk: Gatekeeper) -> None:
    a, b = gk.fork("A"), gk.fork("B")
    ref = call(a, "bash", command=ORACLE)
    assert ref is not None
    assert [r["reason"] for r in b.ingest(stamp("C1", ref)).stamps_rejected] == ["foreign_evidence"]
    assert [r["reason"] for r in gk.ingest(stamp("C1", ref)).stamps_rejected] == [
        "foreign_evidence"
    ]


def test_fork_of_a_fork_inherits_the_whole_lineage(gk: Gatekeeper) -> None:
    root_ref = call(gk, "bash", command=ORACLE)
    g2 = gk.fork("S2")
    mid_ref = call(g2, "bash", command=ORACLE)
    g3 = g2.fork("S3")
    assert comparable_state(g3.state) == comparable_state(g2.state)
    assert root_ref is not None and mid_ref is not None
    assert g3.ingest(stamp("C1", root_ref)).stamps_applied
    assert g3.ingest(stamp("C1", mid_ref)).stamps_applied
    assert all(g.audit().verified for g in (gk, g2, g3))


def test_merge_brings_the_forks_stamp_with_provenance(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    ref = _stamped(g2, "C1")
    result = gk.merge_from("S2")
    assert result["merged"] is True and result["claims"] == ["C1"]
    audit = gk.audit()
    assert audit.verified is True
    row = next(c for c in audit.claims if c["id"] == "C1")
    assert row["status"] == "Exact" and row["evidence_ref"] == ref and not row["stale"]
    last = row["history"][-1]
    assert last["cause"] == "merged" and last["from_session"] == "S2"
    assert last["evidence_ref"] == ref and last["evidence_session"] == "S2"
    assert comparable_state(gk.store.replay()) == comparable_state(gk.state)


def test_merging_twice_changes_nothing(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    _stamped(g2, "C1")
    gk.merge_from("S2")
    head, state = gk.state.seq, gk.state.to_dict()
    again = gk.merge_from("S2")
    assert again["merged"] is False
    assert gk.state.seq == head and gk.state.to_dict() == state


def test_changed_statement_drops_both_stamps(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    _stamped(gk, "C1")
    g2.ingest(ledger(("C1", "the tests pass quickly", ORACLE)))
    _stamped(g2, "C1")
    result = gk.merge_from("S2")
    assert [c["claim_id"] for c in result["conflicts"]] == ["C1"]
    assert result["conflicts"][0]["changed"] == "statement"
    assert len(result["conflicts"][0]["dropped"]) == 2
    assert gk.state.claims["C1"].stamp is None
    assert gk.state.claims["C1"].text == "the tests pass"
    assert not gk.state.claims["C1"].grounded


def test_changed_oracle_is_a_conflict(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    g2.ingest(ledger(("C1", "the tests pass", "pytest -x")))
    result = gk.merge_from("S2")
    assert [(c["claim_id"], c["changed"]) for c in result["conflicts"]] == [("C1", "oracle")]


def test_a_revoked_stamp_wins_over_a_live_one(gk: Gatekeeper) -> None:
    _stamped(gk, "C1")
    g2 = gk.fork("S2")
    ref = call(g2, "bash", command="pytest -q --fail")
    assert ref is not None
    g2.ingest(f"divergence_event: claim_id=C1 evidence_ref={ref}\n")
    assert g2.state.claims["C1"].stamp is None
    gk.merge_from("S2")
    assert gk.state.claims["C1"].stamp is None and gk.ledger().status("C1") == "Unknown"
    assert gk.audit().verified is True


def test_a_revoked_stamp_in_the_target_is_not_revived(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    _stamped(gk, "C1")
    ref = call(gk, "bash", command="pytest -q --fail")
    gk.ingest(f"divergence_event: claim_id=C1 evidence_ref={ref}\n")
    _stamped(g2, "C1")
    gk.merge_from("S2")
    assert gk.state.claims["C1"].stamp is None


def test_merge_never_brings_metrics_budgets_or_pack_state(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    g2.ingest(stamp("C1", "ev_" + "0" * 24))  # a rejected stamp counts in S2's metrics
    call(g2, "bash", command=ORACLE)
    assert g2.state.metrics
    before = gk.state
    metrics, budgets, policy = (
        dict(before.metrics),
        dict(before.gate_budget_used),
        dict(before.policy),
    )
    gk.merge_from("S2")
    after = gk.state
    assert (after.metrics, after.gate_budget_used, after.policy) == (metrics, budgets, policy)
    assert after.evidence_count == before.evidence_count


def _tamper(home: Path, session: str, seq: int) -> None:
    db = sqlite3.connect(home / "ledger.db")
    db.execute(
        "UPDATE events SET payload = '{\"tampered\":1}' WHERE session=? AND seq=?",
        (session, seq),
    )
    db.commit()
    db.close()


def test_a_tampered_fork_cannot_be_merged(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    _stamped(g2, "C1")
    _tamper(gk.home, "S2", 2)
    head = gk.state.seq
    with pytest.raises(VerificationError, match="does not verify"):
        gk.merge_from("S2")
    assert gk.store.journal.last_seq("S") == head
    assert gk.audit().verified is True


def test_a_tampered_session_cannot_be_forked(gk: Gatekeeper) -> None:
    _tamper(gk.home, "S", 2)
    with pytest.raises(VerificationError):
        gk.fork("S2")
    assert "S2" not in gk.store.journal.known_sessions()


def test_merge_is_refused_when_the_target_was_rewritten_at_the_fork_point(
    gk: Gatekeeper,
) -> None:
    g2 = gk.fork("S2")
    _stamped(g2, "C1")
    # another fork of someone else, renamed into S's parent slot: its forked_from names S,
    # but S's event at that seq has another hash
    other = open_gk(gk.home, "T")
    other.ingest(ledger(("C9", "x", ORACLE)))
    forged = other.fork("T2")
    db = sqlite3.connect(gk.home / "ledger.db")
    n = db.execute("SELECT count(*) FROM events WHERE session='T2'").fetchone()[0]
    db.close()
    assert n > 0
    with pytest.raises(UserError, match="not a fork of"):
        gk.merge_from("T2")
    assert forged.audit().verified is True


def test_fork_refuses_bad_targets(gk: Gatekeeper) -> None:
    gk.fork("S2")
    with pytest.raises(UserError, match="already exists"):
        gk.fork("S2")
    with pytest.raises(UserError, match="into itself"):
        gk.fork("S")
    with pytest.raises(UserError, match="use a seq from"):
        gk.fork("S3", upto=10_000)
    with pytest.raises(UserError, match="not valid"):
        gk.fork("bad id!")
    with pytest.raises(UserError, match="not a fork of"):
        gk.merge_from("S")


def test_merged_evidence_verifies_in_the_audit_of_the_target(gk: Gatekeeper) -> None:
    g2 = gk.fork("S2")
    ref = _stamped(g2, "C1")
    gk.merge_from("S2")
    db = sqlite3.connect(gk.home / "ledger.db")
    db.execute("UPDATE evidence SET mac = 'x' || substr(mac, 2) WHERE ref = ?", (ref,))
    db.commit()
    db.close()
    problems = gk.audit().problems
    assert any("merged evidence" in p["message"] for p in problems)


@pytest.mark.parametrize(
    "command",
    [
        "infomark merge --from S2 --into S",
        "infomark fork --session S --as S2 --json",
        "python -m infomark merge --from S2 --into S",
    ],
)
def test_the_agent_cannot_fork_or_merge_from_its_own_shell(gk: Gatekeeper, command: str) -> None:
    """A merge brings approvals and stamps: only the operator may run it, never the agent."""
    from infomark.ledger.calls import ToolCall

    decision = gk.authorize(ToolCall("bash", {"command": command}))
    assert not decision.allowed and decision.code == "protected_cli"

"""Memory ranks (issue 18): every item in front of the model is tagged with rank and source;
a compaction carries a claim's rank only while its evidence is valid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import tamper_output

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.carry import evidence_tag, summary_tag
from tests.helpers import OWN_RUNS
from tests.ledger.web_helpers import call, ledger

ORACLE = "pytest -q"


@pytest.fixture
def gk(tmp_path: Path) -> Gatekeeper:
    # memory ranks, not grounding: the agent's own runs stamp Exact here
    g = Gatekeeper.open(tmp_path / ".infomark", "mem", root=tmp_path, config=OWN_RUNS)
    g.ingest(
        "claim_ledger:\n  claims:\n    - id: C1\n      text: the tests pass\n"
        f'      status: Exact\n      falsifier: "pytest fails"\n      oracle: "{ORACLE}"\n'
        "    - id: C2\n      text: a.py exists\n      status: Guess\n"
        '      falsifier: "no a.py"\n  premises_for_plan: [C1]\n'
    )
    return g


def _stamp_c1(gk: Gatekeeper) -> str:
    ref = call(gk, "bash", {"command": ORACLE}, "1 passed", exit_code=0).ref
    assert gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS").stamps_applied
    return ref


def test_tags_spell_rank_and_source() -> None:
    assert summary_tag(12, 40) == "[Inferred summary of seq 12–40]"
    assert summary_tag(5, 5) == "[Inferred summary of seq 5]"
    assert summary_tag(1, 0) == "[Inferred summary of no events yet]"
    # a handle is labelled by its evidence class, never by a rank: it is not a grade
    assert evidence_tag("ev_" + "a" * 24, "execution") == f"[execution ev_{'a' * 24}]"
    assert evidence_tag("ev_x", "gone", "blob missing") == "[gone ev_x blob missing]"


def test_the_context_view_tags_claims_memory_and_evidence(gk: Gatekeeper) -> None:
    ref = _stamp_c1(gk)
    read = call(gk, "Read", {"file_path": "a.py"}, "x = 1").ref
    view = gk.context_view()
    seq = gk.state.seq
    ledger_line = view.splitlines()[-1]
    assert ledger_line.startswith(f"[infomark:ledger] [Inferred summary of seq 1–{seq}]")
    assert f"G: C1 [Exact {ref}]" in ledger_line
    memory = [line for line in view.splitlines() if not line.startswith("[infomark:")]
    assert memory and all(
        line.startswith((f"[Inferred summary of seq 1–{seq}] ", "evidence: ")) for line in memory
    ), memory
    evidence = next(line for line in memory if line.startswith("evidence: "))
    assert f"[execution {ref}] bash PASS" in evidence
    assert f"[observation {read}] Read OBSERVED" in evidence
    assert "[Exact ev_" not in evidence  # a handle does not read as a grade


def test_a_handle_whose_blob_is_gone_is_shown_gone(gk: Gatekeeper) -> None:
    ref = _stamp_c1(gk)
    ev = gk.evidence(ref)
    assert ev is not None
    tamper_output(gk.store.home_dir, ev.output_digest, "delete")
    view = gk.context_view()
    assert f"[gone {ref} blob missing] bash PASS" in view
    assert f"C1 [Exact {ref}, its evidence blob missing]" in view


def test_compaction_keeps_valid_ranks_and_drops_the_rest_with_a_reason(gk: Gatekeeper) -> None:
    ref = _stamp_c1(gk)
    assert gk.host_report(compacted=True) == ""  # nothing to drop: C1's evidence is valid
    assert gk.ledger().status("C1") == "Exact"
    call(gk, "Edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, "ok")
    gk.host_report(compacted=True)  # now C1's evidence predates the edit: stale
    assert gk.ledger().status("C1") == "Unknown"
    history = gk.state.claims["C1"].history[-1]
    assert history["cause"] == "compaction" and history["revoked_ref"] == ref
    text = gk.compaction_context()
    assert re.search(rf"- C1 \[Unknown, dropped at compaction: its evidence {ref} .* stale", text)
    assert "- C2 [Guess as declared, seq 1] 'a.py exists'" in text
    assert gk.store.replay().to_dict() == gk.state.to_dict()  # replay == live


def test_a_tampered_blob_drops_the_claim_at_compaction(gk: Gatekeeper) -> None:
    ref = _stamp_c1(gk)
    ev = gk.evidence(ref)
    assert ev is not None
    # an agent with a shell rewrites the stored output
    tamper_output(gk.store.home_dir, ev.output_digest, "edit", b"1 failed")
    gk.host_report(compacted=True)
    assert gk.ledger().status("C1") == "Unknown"
    assert "blob altered" in gk.compaction_context()


def test_compaction_context_is_read_only_and_empty_on_a_fresh_session(tmp_path: Path) -> None:
    fresh = Gatekeeper.open(tmp_path / ".infomark", "fresh", root=tmp_path)
    assert fresh.compaction_context() == ""
    fresh.ingest(ledger(("C1", "x")))
    before = fresh.state.seq
    assert "- C1 [Guess as declared, seq 1]" in fresh.compaction_context()
    assert fresh.state.seq == before

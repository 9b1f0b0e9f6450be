"""Seed 002's gated spine, per profile: what ``strict``, ``ledger`` and ``observe`` enforce
of G0–G9 is data (``infomark.gates.enforcement``), shown by ``infomark gate`` and rendered in
docs/gates.md; the rows that say "enforced" are checked here against real decisions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from helpers import ledger_text, record_paired

from infomark.gatekeeper import Gatekeeper
from infomark.gates.enforcement import ENFORCEMENT, enforced_at
from infomark.kernel.graph import DEFAULT_GRAPH
from infomark.ledger.calls import ToolCall, ToolOutcome

ROOT = Path(__file__).parents[2]
EDIT = ToolCall("Edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"})


def test_every_profile_says_something_about_every_gate_and_the_docs_show_it() -> None:
    doc = (ROOT / "docs" / "gates.md").read_text(encoding="utf-8")
    for gate in DEFAULT_GRAPH.gates:
        row = (
            f"| {gate.id} {gate.name} | {ENFORCEMENT['ledger'][gate.id]} | "
            f"{ENFORCEMENT['strict'][gate.id]} | {ENFORCEMENT['observe'][gate.id]} |"
        )
        assert row in doc, gate.id
    assert enforced_at("ledger", "SUCCESS") == "" and enforced_at("nope", "G1") == ""


def _grounded(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Hypothetical", "pytest -q"), premises=("C1",)))
    run = record_paired(gk, ToolCall("Bash", {"command": "pytest -q"}), ToolOutcome("ok", 0))
    gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={run.ref} result=PASS")


def test_ledger_enforces_the_premises_and_not_the_position(gk: Gatekeeper) -> None:
    assert gk.authorize(EDIT).code == "no_ledger"  # G3: enforced
    gk.ingest(ledger_text(("C1", "Hypothetical", "pytest -q"), premises=("C1",)))
    assert gk.authorize(EDIT).code == "ungrounded_premises"  # G6: enforced
    _grounded(gk)
    assert gk.authorize(EDIT).allowed  # G7 reached by evidence, no gate: lines, no approval
    view = gk.gate()
    assert view.enforced == ENFORCEMENT["ledger"][view.position]
    assert view.to_dict()["enforced"] == view.enforced


def test_strict_enforces_the_position(gk: Gatekeeper) -> None:
    gk.config = replace(gk.config, profile="strict")
    _grounded(gk)
    denied = gk.authorize(EDIT)
    assert not denied.allowed and denied.code == "gate_position"  # premises in G, not at G7
    assert gk.gate().enforced == ENFORCEMENT["strict"][gk.gate().position]


def test_observe_enforces_nothing_but_journals_it(gk: Gatekeeper) -> None:
    gk.config = replace(gk.config, profile="observe")
    d = gk.authorize(EDIT)
    assert d.allowed and d.code == "dryrun"
    assert gk.gate().enforced == ENFORCEMENT["observe"][gk.gate().position]

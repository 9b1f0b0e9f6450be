"""Finalize: the agent cannot finish on ungrounded premises, stale or missing evidence."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import ledger_text, observed, run, stamp

from infomark.gatekeeper import Gatekeeper
from infomark.gates.finalize import claims_completion
from infomark.ledger.calls import ToolCall, ToolOutcome

ORACLE = "make check"


def _exact(gk: Gatekeeper) -> str:
    gk.ingest(ledger_text(("C1", "Hypothetical", ORACLE), premises=("C1",)))
    ev = run(gk, ORACLE)
    gk.ingest(stamp("C1", ev.ref))
    return ev.ref


def _edit(gk: Gatekeeper) -> None:
    observed(gk, ToolCall("Edit", {"file_path": "a.py"}), ToolOutcome("edited"))


@pytest.mark.parametrize(
    ("text", "claims"),
    [
        ("Done.", True),
        ("All tests pass now.", True),
        ("I will fix the parser next.", False),
        ("Fixed.", True),
        ("This is not done yet.", False),
        ("The fix isn't complete", False),
        ("Still investigating the failure", False),
        ("Implemented the change and it works now", True),
    ],
)
def test_completion_language(text: str, claims: bool) -> None:
    assert claims_completion(text) is claims


def test_ungrounded_premise_refuses(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    fin = gk.can_finish("I looked around.")
    assert (
        not fin.allow and fin.code == "ungrounded_premises" and fin.ungrounded == (("C1", "Guess"),)
    )


def test_stale_evidence_refuses_until_rerun(gk: Gatekeeper) -> None:
    _exact(gk)
    _edit(gk)
    fin = gk.can_finish("Summary of the change.")  # no completion words: evidence decides
    assert not fin.allow and fin.code == "completion_without_evidence"
    assert f"re-run `{ORACLE}` (C1)" in fin.reason
    ev = run(gk, ORACLE)
    gk.ingest(stamp("C1", ev.ref))
    assert gk.can_finish("Done: C1 is Exact.").allow


def test_completion_without_fresh_exact_is_refused(gk: Gatekeeper) -> None:
    fin = gk.can_finish("Done, all tests pass.")
    assert not fin.allow and fin.code == "completion_without_evidence"
    _exact(gk)
    assert gk.can_finish("Done, all tests pass.").allow


def test_healthy_non_completion_text_finishes(gk: Gatekeeper) -> None:
    assert gk.can_finish("I could not reproduce it; here is what I found.").allow


def test_refusals_are_capped_so_the_agent_is_never_trapped(gk: Gatekeeper) -> None:
    gk.config = replace(gk.config, finish_refusal_cap=2)
    results = [gk.can_finish("Done.") for _ in range(3)]
    assert [r.allow for r in results] == [False, False, True]
    assert results[2].cap_reached and results[2].code == "refusal_cap_reached"
    assert any(e.type == "finish_cap_reached" for e in gk.events())
    gk.new_turn("next prompt")
    assert not gk.can_finish("Done.").allow  # the count restarts each user turn


def test_finish_ingests_the_final_text_first(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Hypothetical", ORACLE), premises=("C1",)))
    ev = run(gk, ORACLE)
    assert gk.can_finish("Done.\n\n" + stamp("C1", ev.ref)).allow

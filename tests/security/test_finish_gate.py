"""§5: the finish gate judges evidence, not words.

Reproduced on main: after an edit with no fresh evidence, "All set", "Ready to ship.", … were
allowed; an honest "I'm blocked" was refused (`no edge G3→BLOCKED`); in strict, `gate: G9`
and `gate: SUCCESS` both failed; the "reproduce the bug first" flow trapped the agent until
the refusal cap let it out, and the audit then said "grounded: True, gate G9".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import OWN_RUNS, ledger_text, observed, run, stamp

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome

ORACLE = "pytest -q"
EDIT = ToolCall("Edit", {"file_path": "add.py", "old_string": "-", "new_string": "+"})


def _edit(gk: Gatekeeper) -> None:
    observed(gk, EDIT, ToolOutcome("edited"))


def _grounded(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Guess", ORACLE), premises=("C1",)))
    gk.ingest(stamp("C1", run(gk, ORACLE).ref))


@pytest.mark.parametrize(
    "text",
    [
        "All set",
        "Ready to ship.",
        "The suite is green.",
        "LGTM",
        "Terminé, tout passe.",
        "It is not just done but tested.",
        "",
    ],
)
def test_no_words_finish_after_a_mutation(gk: Gatekeeper, text: str) -> None:
    _grounded(gk)
    _edit(gk)
    fin = gk.can_finish(text)
    assert not fin.allow and fin.code == "completion_without_evidence"


def test_fresh_evidence_after_the_last_mutation_finishes(gk: Gatekeeper) -> None:
    _grounded(gk)
    _edit(gk)
    gk.ingest(stamp("C1", run(gk, ORACLE).ref))
    assert gk.can_finish("anything at all").allow
    _edit(gk)  # a later edit: the same evidence is no longer fresh
    assert not gk.can_finish("anything at all").allow


def test_the_tdd_flow_finishes_without_the_cap(gk: Gatekeeper) -> None:
    gk.config = replace(gk.config, finish_refusal_cap=0)  # never forced: it must really pass
    gk.ingest(
        ledger_text(("C1", "Guess", "pytest -q test_x.py"), premises=("C1",)).replace(
            '      oracle: "pytest -q test_x.py"',
            '      oracle: "pytest -q test_x.py"\n      expect: FAIL',
        )
    )
    failing = run(gk, "pytest -q test_x.py", exit_code=1, output="1 failed")
    gk.ingest(stamp("C1", failing.ref, "EXPECTED_FAIL"))
    assert gk.ledger().status("C1") == "Exact"
    _edit(gk)
    gk.ingest(
        ledger_text(("C1", "Guess", "pytest -q test_x.py"), ("C2", "Guess", "pytest -q test_x.py"))
        .replace(
            '"pytest -q test_x.py"\n    - id: C2',
            '"pytest -q test_x.py"\n      expect: FAIL\n    - id: C2',
            1,
        )
        .replace("premises_for_plan: []", "premises_for_plan: [C1]")
    )
    passing = run(gk, "pytest -q test_x.py", output="1 passed")  # contradicts C1: old code
    gk.ingest(stamp("C2", passing.ref))
    fin = gk.can_finish("Fixed: test_x passes.")
    assert fin.allow and not fin.cap_reached, fin.reason
    assert gk.ledger().status("C1") == "Exact"  # the starting state is not re-stamped


def test_done_when_names_the_claims_that_must_be_fresh(gk: Gatekeeper) -> None:
    text = ledger_text(("C1", "Guess", ORACLE), ("C2", "Guess", "make lint"), premises=("C1",))
    gk.ingest(text + "  done_when: [C1, C2]\n")
    gk.ingest(stamp("C1", run(gk, ORACLE).ref))
    _edit(gk)
    gk.ingest(stamp("C1", run(gk, ORACLE).ref))
    fin = gk.can_finish("")
    assert not fin.allow and "C2 (run `make lint` and stamp it with" in fin.reason
    gk.ingest(stamp("C2", run(gk, "make lint").ref))
    assert gk.can_finish("").allow


def test_a_grounded_premise_does_not_stand_in_for_done_when_in_a_session_without_edits(
    gk: Gatekeeper,
) -> None:
    # Found by the eval harness (issue 16, seed 0): the agent's tamper edit was denied, so it
    # changed nothing; it "verified" with a weak oracle whose stamp was refused, and said done.
    text = ledger_text(("P1", "Guess", ORACLE), ("C2", "Guess", "make test"), premises=("P1",))
    gk.ingest(text + "  done_when: [C2]\n")
    gk.ingest(stamp("P1", run(gk, ORACLE).ref))  # the premise is Exact
    gk.ingest(stamp("C2", run(gk, "make test || true").ref))  # refused: not C2's oracle
    assert gk.ledger().status("C2") != "Exact"
    fin = gk.can_finish("Done: the bug is fixed and the tests pass.")
    assert not fin.allow and fin.code == "completion_without_evidence", fin.reason
    assert "C2" in fin.reason
    gk.ingest(stamp("C2", run(gk, "make test").ref))
    assert gk.can_finish("Done: the bug is fixed and the tests pass.").allow


def test_an_oracle_that_failed_after_its_stamp_blocks(gk: Gatekeeper) -> None:
    # P0 is the premise the edit rests on (grounded first); C1 and C2 are the completion claims
    gk.ingest(
        ledger_text(
            ("P0", "Guess", "make check"),
            ("C1", "Guess", ORACLE),
            ("C2", "Guess", "make lint"),
            premises=("P0",),
        )
    )
    gk.ingest(stamp("P0", run(gk, "make check").ref))
    _edit(gk)
    gk.ingest(stamp("C1", run(gk, ORACLE).ref) + stamp("C2", run(gk, "make lint").ref))
    run(gk, ORACLE, exit_code=1, output="1 failed")  # C1's oracle, run again: it fails now
    fin = gk.can_finish("")
    assert not fin.allow and fin.code == "oracle_failed" and "C1" in fin.reason
    gk.ingest(stamp("C1", run(gk, ORACLE).ref))  # re-stamped on a new passing run
    assert gk.can_finish("").allow


@pytest.mark.parametrize("profile", ["ledger", "strict"])
@pytest.mark.parametrize("at", ["G0", "G3", "G7", "G8"])
def test_an_honest_blocked_stop_is_allowed_and_journaled(
    home: Path, project: Path, profile: str, at: str
) -> None:
    with Gatekeeper.open(home, f"b-{profile}-{at}", root=project, profile=profile) as gk:
        if at != "G0":
            gk.ingest(ledger_text(("C1", "Guess", ORACLE), premises=("C1",)))
        if at in ("G7", "G8"):
            gk.ingest(stamp("C1", run(gk, ORACLE).ref))
            if profile == "strict":
                for g in ("G1", "G2", "G3", "G4"):
                    assert gk.move(g)["ok"], g
                gk.approve(by="user")
                gk.new_turn("approved")
                assert gk.move("G6")["ok"] and gk.move("G7")["ok"]
            _edit(gk)
            if at == "G8" and profile == "strict":
                assert gk.move("G8")["ok"]
        fin = gk.can_finish('I cannot finish.\n\ngate: BLOCKED reason="the API key is missing"\n')
        assert gk.gate().position == "BLOCKED"
        assert fin.allow and fin.code == "finished_blocked", fin.reason
        blocked = [e.payload for e in gk.events() if e.type == "finished_blocked"]
        assert blocked and blocked[0]["gate"] == "BLOCKED"
        assert blocked[0]["reason"] == "the API key is missing"
        gk.new_turn("here is the key")  # the user answered: the session resumes
        assert gk.gate().position != "BLOCKED"


def test_blocked_before_the_last_mutation_does_not_count(gk: Gatekeeper) -> None:
    _grounded(gk)
    gk.ingest("gate: BLOCKED\n")
    gk.new_turn("go on")
    gk.ingest("gate: BLOCKED\n")
    _edit(gk)  # ledger profile: it kept working after saying so
    assert not gk.can_finish("").allow


def test_a_strict_honest_walk_ends_at_success(home: Path, project: Path) -> None:
    # the strict walk (gates, approval), not grounding by attested runs: the operator's opt-out
    with Gatekeeper.open(home, "walk", root=project, profile="strict", config=OWN_RUNS) as gk:
        gk.ingest(
            ledger_text(
                ("C1", "Guess", "grep -n 'def add' add.py"),  # the starting state
                ("C2", "Guess", ORACLE),  # what the work must achieve
                premises=("C1",),
                open_questions=("C2",),
            )
        )
        gk.ingest(stamp("C1", run(gk, "grep -n 'def add' add.py").ref))
        for g in ("G1", "G2", "G3", "G4"):
            assert gk.move(g)["ok"], (g, gk.gate().position)
        gk.approve(by="user")
        gk.new_turn("approved")
        for g in ("G6", "G7"):
            assert gk.move(g)["ok"], g
        _edit(gk)
        assert gk.move("G8")["ok"]
        gk.ingest(stamp("C2", run(gk, ORACLE).ref))
        moved = gk.move("G9")
        assert moved["ok"], moved  # C1 (the starting state) is not re-stamped
        assert gk.can_finish("").allow
        assert gk.move("SUCCESS")["ok"]


def test_a_forced_finish_is_journaled_and_shown_first(gk: Gatekeeper) -> None:
    gk.config = replace(gk.config, finish_refusal_cap=2)
    _grounded(gk)
    _edit(gk)
    results = [gk.can_finish("") for _ in range(3)]
    assert [r.allow for r in results] == [False, False, True]
    assert results[2].cap_reached and "UNVERIFIED" in results[2].reason
    audit = gk.audit().to_dict()
    assert len(audit["unverified_finishes"]) == 1


def test_cap_zero_never_forces(gk: Gatekeeper) -> None:
    gk.config = replace(OWN_RUNS, finish_refusal_cap=0)  # 25 finishes, no attested run each
    _grounded(gk)
    _edit(gk)
    assert not any(gk.can_finish("").allow for _ in range(25))
    assert "finished_unverified" not in [e.type for e in gk.events()]


@pytest.mark.parametrize("profile", ["ledger", "strict"])
def test_a_question_for_the_user_ends_the_turn(home: Path, project: Path, profile: str) -> None:
    with Gatekeeper.open(home, f"q-{profile}", root=project, profile=profile) as gk:
        gk.ingest(ledger_text(("C1", "Guess", ORACLE), premises=("C1",)))
        fin = gk.can_finish('question: "Should add() saturate on overflow?"\n')
        assert fin.allow and fin.code == "finished_blocked", fin.reason
        blocked = [e.payload for e in gk.events() if e.type == "finished_blocked"]
        assert blocked[0]["reason"] == "Should add() saturate on overflow?"

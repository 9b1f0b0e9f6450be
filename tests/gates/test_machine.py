"""The gate machine's pure functions, tested directly on hand-built states (no journal).

``plan_move`` (the graph, the guards, the loop budget), ``loop_budget`` and
``derived_position`` are functions of a :class:`SessionState` and a :class:`Config`; these
tests pin each rule with the smallest state that exercises it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from infomark.gates.config import Config
from infomark.gates.machine import GUARD_PREDICATES, derived_position, loop_budget, plan_move
from infomark.kernel.graph import DEFAULT_GRAPH, GUARDS
from infomark.ledger.state import ClaimState, SessionState, StampState

CFG = Config()


def claim(
    cid: str, status: str = "Hypothetical", *, oracle: str | None = "pytest -q"
) -> ClaimState:
    return ClaimState(
        id=cid,
        text=f"claim {cid}",
        text_hash="h",
        written=status,
        status=status,
        falsifier="it fails",
        oracle=oracle,
    )


def stamped(cid: str, evidence_seq: int) -> ClaimState:
    c = claim(cid, "Exact")
    c.stamp = StampState("oracle_stamp", "ev_" + "0" * 24, "PASS", evidence_seq, evidence_seq, "h")
    return c


def state(gate: str = "G0", **kw: object) -> SessionState:
    s = SessionState(session="m", gate=gate)
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def test_every_kernel_guard_has_exactly_one_predicate() -> None:
    assert set(GUARD_PREDICATES) == set(GUARDS)


@pytest.mark.parametrize(
    ("target", "reason"),
    [("G42", "unknown gate"), ("G0", "already at G0"), ("G3", "no edge G0→G3")],
)
def test_unlawful_targets_are_refused_with_why(target: str, reason: str) -> None:
    move = plan_move(state("G0"), target, CFG)
    assert not move.ok and reason in move.reason


def test_no_edge_lists_the_lawful_moves() -> None:
    move = plan_move(state("G0"), "G7", CFG)
    assert not move.ok
    for dst in DEFAULT_GRAPH.allowed_moves("G0"):
        assert dst in move.reason


def test_a_terminal_is_final() -> None:
    move = plan_move(state("SUCCESS"), "G1", CFG)
    assert not move.ok and "terminal" in move.reason


def test_a_forward_move_needs_its_guard() -> None:
    refused = plan_move(state("G0"), "G1", CFG)
    assert not refused.ok and "has_ledger" in refused.reason
    ok = plan_move(state("G0", has_ledger=True, claims={"C1": claim("C1")}), "G1", CFG)
    assert ok.ok and ok.kind == "forward" and ok.guard == "has_ledger"


def test_g6_to_g7_needs_every_premise_in_g() -> None:
    s = state("G6", has_ledger=True, claims={"C1": claim("C1")}, premises=["C1"])
    assert not plan_move(s, "G7", CFG).ok
    s.claims["C1"] = stamped("C1", 3)
    assert plan_move(s, "G7", CFG).ok


def test_strict_approval_gates_g4_to_g6() -> None:
    strict = replace(CFG, profile="strict")
    s = state("G4", has_ledger=True, claims={"C1": claim("C1")}, premises=["C1"])
    assert not plan_move(s, "G6", strict).ok
    assert plan_move(s, "G6", CFG).ok  # ledger profile: approval is not required
    s.approved_seq = 5
    assert plan_move(s, "G6", strict).ok


def test_a_back_move_without_progress_burns_the_budget() -> None:
    s = state(
        "G2",
        has_ledger=True,
        claims={"C1": claim("C1")},
        open_questions=["C1"],
        gate_measure={"G2": [1, 1]},  # the loop measure was already (1 open, 1 unstamped)
    )
    first = plan_move(s, "G1", CFG)
    assert first.ok and first.kind == "back" and first.burned == 1
    s.gate_budget_used = {"G2": loop_budget("G2", CFG)}
    exhausted = plan_move(s, "G1", CFG)
    assert not exhausted.ok and "loop budget of G2 exhausted" in exhausted.reason


def test_a_back_move_that_reduces_the_measure_is_free() -> None:
    s = state(
        "G2",
        has_ledger=True,
        claims={"C1": claim("C1")},
        gate_measure={"G2": [3, 1]},  # three open questions before, none now
    )
    move = plan_move(s, "G1", CFG)
    assert move.ok and move.burned == 0 and move.measure == (0, 1)


def test_loop_budget_is_configured_or_the_routes_out() -> None:
    assert loop_budget("G8", CFG) == DEFAULT_GRAPH.routes_out("G8")
    assert loop_budget("G8", replace(CFG, loop_budget={"G8": 7})) == 7
    assert loop_budget("SUCCESS", CFG) == 0


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, "G0"),
        ({"seq": 3}, "G1"),
        ({"has_ledger": True, "seq": 3}, "G3"),
        ({"has_ledger": True, "seq": 3, "premises": ["C1"], "claims": {"C1": claim("C1")}}, "G3"),
    ],
)
def test_derived_position_before_grounding(kw: dict[str, object], expected: str) -> None:
    assert derived_position(state("G0", **kw)) == expected


def test_derived_position_follows_runtime_evidence() -> None:
    s = state("G0", has_ledger=True, seq=9, premises=["C1"], claims={"C1": stamped("C1", 2)})
    assert derived_position(s) == "G6"  # grounded, nothing changed yet
    s.last_modify_seq = 5
    assert derived_position(s) == "G7"  # changed, not re-run
    s.last_exec_seq = 8
    assert derived_position(s) == "G8"  # re-run after the change
    assert derived_position(s, finished=True) == "G9"


def test_g2_to_g3_needs_an_oracle_for_every_claim_and_names_the_claims_without_one() -> None:
    """Seed 002, G2 DECOMPOSE: the move's message says "falsifiable and has an oracle"; the
    guard checks exactly that, and the refusal names the claims that lack either."""
    no_oracle = claim("C2", oracle=None)
    bare = replace(claim("C3", oracle=None), falsifier=None)
    s = state("G2", has_ledger=True, claims={"C1": claim("C1"), "C2": no_oracle, "C3": bare})
    move = plan_move(s, "G3", CFG)
    assert not move.ok
    assert "lacking: C2 (no oracle), C3 (no falsifier, no oracle)" in move.reason
    assert "C1" not in move.reason.split("lacking:")[1]
    weak = replace(claim("C1", oracle="true"), oracle_refused="weak_oracle")
    refused = plan_move(state("G2", has_ledger=True, claims={"C1": weak}), "G3", CFG)
    assert not refused.ok and "C1 (oracle refused: weak_oracle)" in refused.reason
    ok = plan_move(state("G2", has_ledger=True, claims={"C1": claim("C1")}), "G3", CFG)
    assert ok.ok and ok.guard == "falsifiable"

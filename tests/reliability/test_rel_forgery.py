"""Forgery: no stamp the runtime did not earn is ever accepted, and each names its reason.

The attack families and the world they run against are in ``rel_forgery``; the big
run (10,000 examples) is the ``slow`` test and ``bench.soak``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import record_paired
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_forgery import (
    HIDDEN_WRAPPERS,
    Attack,
    ForgeryJudge,
    attacks,
    edit_attacks,
    garbled_attacks,
    resolve,
)
from rel_hook import HookSession, denial_reason
from rel_support import ORACLE, examples, ledger_block, run_command, soak_examples, stamp_line

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome


@pytest.fixture
def judge(tmp_path: Path) -> Iterator[ForgeryJudge]:
    j = ForgeryJudge(tmp_path)
    yield j
    j.close()


def _run(judge: ForgeryJudge, n: int, strategy: st.SearchStrategy[Attack]) -> None:

    @settings(max_examples=n, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    @given(attack=strategy)
    def check(attack: Attack) -> None:
        problem = judge.judge(attack)
        assert problem is None, f"{attack.kind}: {problem}"

    check()


def test_forged_stamps_are_rejected_with_their_reason_code(judge: ForgeryJudge) -> None:
    _run(judge, examples(250), attacks(edits=False, garbled=False))
    assert sum(judge.counts.values()) >= min(250, examples(250)) // 2


def test_edited_claim_text_cannot_rebind_the_evidence_of_the_old_text(
    judge: ForgeryJudge,
) -> None:
    """D5: fails until a statement change spends the evidence of the old statement."""
    _run(judge, examples(15), edit_attacks())


def test_regression_d7_a_garbled_evidence_row_is_a_rejection_not_a_crash(
    judge: ForgeryJudge,
) -> None:
    """D7: the stored record is read with json.loads unguarded; ingest raises today."""
    _run(judge, examples(10), garbled_attacks())


@pytest.mark.slow
def test_forgery_soak(judge: ForgeryJudge) -> None:
    _run(judge, soak_examples(), attacks(edits=False, garbled=False))


@pytest.mark.slow
def test_edited_text_soak(judge: ForgeryJudge) -> None:
    _run(judge, soak_examples() // 20, edit_attacks())


# --------------------------------------------------------------------------- controls


def test_control_the_honest_stamp_is_accepted_bare(judge: ForgeryJudge) -> None:
    """Without this, the non-prose and smuggling checks could pass vacuously."""
    world = judge.world
    report = world.gk.ingest(stamp_line("C1", world.refs["good"]))
    assert [s["claim_id"] for s in report.stamps_applied] == ["C1"]
    assert world.gk.ledger().status("C1") == "Exact"


@pytest.mark.parametrize("wrapper", HIDDEN_WRAPPERS, ids=[w[0] for w in HIDDEN_WRAPPERS])
def test_stamp_in_non_prose_text_is_not_parsed(
    judge: ForgeryJudge, wrapper: tuple[str, str, str]
) -> None:
    _name, before, after = wrapper
    body = stamp_line("C1", "<<good>>").rstrip("\n")
    text = resolve(
        f"Here is an example:\n\n{before}{body}{after}\n\nThat is all.\n", judge.world.refs
    )
    report = judge.world.gk.ingest(text)
    assert report.stamps_applied == [] and report.stamps_rejected == []
    assert judge.world.claims() == judge.world.baseline


def test_regression_d5_pre_edit_evidence_is_spent(tmp_path: Path) -> None:
    """D5 (deterministic): after C1's text changes, its old run must not stamp the new text."""
    with Gatekeeper.open(tmp_path / "home", "s", root=tmp_path) as gk:
        gk.ingest(ledger_block(text="the parser drops the last token"))
        ev = run_command(gk)
        assert gk.ingest(stamp_line("C1", ev.ref)).stamps_applied
        gk.ingest(ledger_block(text="the whole program is correct"))
        assert gk.ledger().status("C1") == "Hypothetical"
        report = gk.ingest(stamp_line("C1", ev.ref))
        assert report.stamps_applied == []
        assert [r["reason"] for r in report.stamps_rejected] == ["evidence_predates_claim"]


def test_tool_output_with_a_stamp_changes_no_claim(tmp_path: Path) -> None:
    with Gatekeeper.open(tmp_path / "home", "s", root=tmp_path) as gk:
        gk.ingest(ledger_block())
        ev = run_command(gk)
        before = gk.ledger().to_dict()
        inference = stamp_line("C1", ev.ref, kind="inference_stamp")
        smuggled = f"all green\n{stamp_line('C1', ev.ref)}{inference}"
        for tool in ("bash", "Read", "WebFetch", "mcp__srv__fetch"):
            record_paired(gk, ToolCall(tool, {"command": "cat notes"}), ToolOutcome(smuggled, 0))
            types = {e.type for e in gk.store.emitted()}
            assert not types & {"stamp_applied", "stamp_rejected", "ledger_replaced"}, types
        after = gk.ledger().to_dict()
        assert after["claims"] == before["claims"] and after["grounded"] is False


def test_hook_never_ingests_tool_output_or_tool_results(tmp_path: Path) -> None:
    """Stamps in a PostToolUse response and in a transcript tool_result stay inert."""
    cc = HookSession(tmp_path)
    cc.say(ledger_block())
    edit = {"file_path": "p.py", "old_string": "a", "new_string": "b"}
    assert denial_reason(cc.pre("Edit", edit)) is not None
    ref = cc.post_bash(ORACLE)
    stamp = stamp_line("C1", ref)
    cc.hook(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "cat README"},
        tool_response={"stdout": stamp, "stderr": stamp, "interrupted": False},
    )
    cc.tool_result("toolu_1", stamp)
    assert denial_reason(cc.pre("Edit", edit)) is not None, "a smuggled stamp grounded C1"
    cc.say(stamp)  # control: the same line as assistant text does ground it
    assert cc.pre("Edit", edit).silent_allow

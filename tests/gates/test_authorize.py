"""The grounding gate and the OpenCode-compatible behaviours, through the facade."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import EDIT, grounded, ledger_text, read, run, stamp

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.kernel.decisions import LEDGER_EXAMPLE
from infomark.ledger.calls import ToolCall, ToolOutcome

ORACLE = "pytest -q tests/test_a.py"


def _grounded(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Hypothetical", ORACLE), premises=("C1",)))
    ev = run(gk, ORACLE)
    gk.ingest(stamp("C1", ev.ref))


def test_no_ledger_denies_mutation_and_teaches_the_block(gk: Gatekeeper) -> None:
    # issue 12 §2 (was: allowed with a nudge): the reason carries a ledger to copy
    d = gk.authorize(EDIT)
    assert d.verdict.value == "deny" and d.code == "no_ledger"
    assert LEDGER_EXAMPLE in d.reason and "protocol" in d.reason
    assert "open_questions" not in d.reason
    report = gk.ingest(LEDGER_EXAMPLE)
    assert report.diagnostics == [] or all(x.severity != "error" for x in report.diagnostics)
    assert gk.ledger().premises == ("C1",)


def test_an_empty_premises_list_is_no_ledger(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Guess", None), premises=()))
    d = gk.authorize(EDIT)
    assert d.code == "no_ledger" and "premises_for_plan" in d.reason


def test_ungrounded_premise_denies_edit_and_names_it(gk: Gatekeeper) -> None:
    gk.ingest(
        ledger_text(("C1", "Exact", ORACLE), ("C2", "Inferred", None), premises=("C1", "C2", "C3"))
    )
    d = gk.authorize(EDIT)
    assert d.verdict.value == "deny" and d.code == "ungrounded_premises"
    assert d.ungrounded == (("C1", "Hypothetical"), ("C2", "Hypothetical"), ("C3", "missing"))
    assert f"run `{ORACLE}`" in d.reason
    assert "open_questions" not in d.reason  # never suggested: parking premises is no ground


def test_oracle_stamp_grounds_the_premise_and_unblocks_edit(gk: Gatekeeper) -> None:
    _grounded(gk)
    d = gk.authorize(EDIT)
    assert d.allowed and d.code == "grounded"


def test_reads_and_runs_are_never_blocked_by_grounding(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    for call in (
        ToolCall("Read", {"file_path": "a"}),
        ToolCall("Grep", {"pattern": "x"}),
        ToolCall("WebFetch", {"url": "https://e"}),
    ):
        assert gk.authorize(call).allowed


def test_moving_every_premise_to_open_questions_does_not_unblock(gk: Gatekeeper) -> None:
    # issue 12 §2 (was: it unblocked)
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    assert not gk.authorize(EDIT).allowed
    gk.ingest(ledger_text(("C1", "Guess", None), open_questions=("C1",), premises=()))
    d = gk.authorize(EDIT)
    assert d.verdict.value == "deny" and d.code == "no_ledger"


@pytest.mark.parametrize("value", ["1"])
def test_bypass_with_exactly_one(
    gk: Gatekeeper, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    monkeypatch.setenv("INFOMARK_BYPASS_GROUNDING", value)
    d = gk.authorize(EDIT)
    assert d.allowed and d.bypass and d.code == "bypass"
    audit = gk.audit()
    assert [b["decision_id"] for b in audit.bypasses] == [d.decision_id]


@pytest.mark.parametrize("value", ["true", "yes", "0", " 1", "1 ", "01", "", "TRUE"])
def test_bypass_ignores_any_other_value(
    gk: Gatekeeper, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    monkeypatch.setenv("INFOMARK_BYPASS_GROUNDING", value)
    d = gk.authorize(EDIT)
    assert d.verdict.value == "deny" and not d.bypass
    assert gk.audit().bypasses == []


def test_every_decision_is_journaled(gk: Gatekeeper) -> None:
    gk.authorize(EDIT)
    gk.authorize(ToolCall("Read", {"file_path": "a"}))
    decisions = [e for e in gk.events() if e.type == "decision"]
    assert [e.payload["tool"] for e in decisions] == ["Edit", "Read"]
    assert all(e.payload["decision_id"].startswith("dec_") for e in decisions)


def test_destructive_is_held_unless_its_family_is_allowed(gk: Gatekeeper) -> None:
    call = ToolCall("delete", {"path": "build"})
    grounded(gk)
    d = gk.authorize(call)
    assert d.verdict.value == "ask" and d.code == "destructive"
    gk.config = replace(gk.config, allow_destructive=("file",))
    assert gk.authorize(call).allowed


def test_observe_profile_never_blocks_but_records_dryrun(gk: Gatekeeper) -> None:
    gk.config = replace(gk.config, profile="observe")
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    d = gk.authorize(EDIT)
    assert d.allowed and d.dryrun and "would deny" in d.reason


def test_wrap_returns_denial_as_a_result_not_an_exception(gk: Gatekeeper) -> None:
    calls: list[ToolCall] = []

    def executor(call: ToolCall) -> ToolOutcome:
        calls.append(call)
        return ToolOutcome("edited")

    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    out = gk.wrap(executor)(EDIT)
    assert out.is_error and "ungrounded_premises" in str(out.output)
    assert calls == []  # never executed


def test_wrap_records_and_tags_results(gk: Gatekeeper) -> None:
    wrapped = gk.wrap(lambda call: ToolOutcome("3 passed", exit_code=0))
    out = wrapped(ToolCall("bash", {"command": "pytest"}))
    assert "[infomark evidence_ref=ev_" in str(out.output) and "outcome=PASS" in str(out.output)


def test_wrap_async_executor(gk: Gatekeeper) -> None:
    import asyncio

    async def executor(call: ToolCall) -> ToolOutcome:
        return ToolOutcome("ok", exit_code=0)

    out = asyncio.run(gk.wrap(executor)(ToolCall("bash", {"command": "true"})))
    assert "outcome=PASS" in str(out.output)


def test_wrap_turns_executor_exceptions_into_error_evidence(gk: Gatekeeper) -> None:
    def boom(call: ToolCall) -> ToolOutcome:
        raise RuntimeError("disk on fire")

    out = gk.wrap(boom)(ToolCall("bash", {"command": "x"}))
    assert out.is_error and "outcome=ERROR" in str(out.output)


def test_tool_decorator_with_declared_class(gk: Gatekeeper) -> None:
    @gk.tool(tool_class="modify")
    def save_note(text: str) -> str:
        return f"saved {text}"

    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    assert save_note(text="x").is_error
    grounded(gk)
    assert "saved x" in str(save_note(text="x").output)


def test_strict_profile(home: Path, project: Path) -> None:
    gk = Gatekeeper.open(home, "strict", root=project, config=Config(profile="strict"))
    assert gk.authorize(EDIT).code == "no_ledger"
    assert gk.authorize(ToolCall("mystery_tool", {})).verdict.value == "deny"  # unknown = modify
    _grounded(gk)
    d = gk.authorize(EDIT)
    assert d.code == "gate_position" and "G0" in d.reason
    for target in ("G1", "G2", "G3", "G4"):
        assert gk.move(target)["ok"], target
    refused = gk.move("G6")
    assert not refused["ok"] and "approved" in refused["reason"]
    gk.approve(by="user")
    assert gk.move("G6")["ok"] and gk.move("G7")["ok"]
    assert gk.authorize(EDIT).code == "approval_turn"  # nothing mutates in the approval turn
    gk.new_turn("go on")
    assert gk.authorize(EDIT).allowed


def test_decisions_do_not_depend_on_the_wall_clock(home: Path, project: Path) -> None:
    outs = []
    for i in range(2):
        g = Gatekeeper.open(home, f"clock{i}", root=project)
        g.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
        read(g)
        d = g.authorize(EDIT)
        outs.append((d.verdict, d.code, d.reason, d.ungrounded))
    assert outs[0] == outs[1]

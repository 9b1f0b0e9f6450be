"""Each default instruction pack: fires from a scripted session, stays quiet on a healthy one,
renews, resolves and expires, with every change journaled."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers import EDIT, ledger_text, stamp
from policies_support import Session, healthy

from infomark.gatekeeper import Gatekeeper
from infomark.gates.policies import DEFAULT_PACKS

BAD_REF = "ev_" + "0" * 24
TAG = "[infomark:pack {}]"


def _fails(s: Session, n: int) -> list[str]:
    return [
        s.bash("pytest -q", exit_code=1, output=f"E   AssertionError: boom {i}\nmore")
        for i in range(n)
    ]


# -- a healthy session ----------------------------------------------------------------------------


def test_healthy_short_task_gets_no_pack_and_no_refusal(gk: Gatekeeper) -> None:
    s = Session(gk)
    texts = healthy(s)
    assert texts == [""] * len(texts)
    assert s.events("instruction_pack_added", "instruction_pack_removed") == []
    assert s.active() == []
    assert s.events("trigger_fired") == []


# -- repeated_failures ----------------------------------------------------------------------------


def test_repeated_failures_fires_on_the_third_failure_quoting_its_first_line(
    gk: Gatekeeper,
) -> None:
    s = Session(gk)
    s.prompt("make the tests pass")
    texts = _fails(s, 3)
    assert texts[:2] == ["", ""]
    assert texts[2].startswith(TAG.format("repeated_failures"))
    assert "3 tool calls failed in a row" in texts[2]
    assert '"E AssertionError: boom 2"' in texts[2]  # the last failure's first line
    added = s.events("instruction_pack_added")
    assert len(added) == 1
    ev = added[0]
    assert ev["name"] == "repeated_failures" and ev["renewed"] is False
    assert ev["evidence"]["consecutive_failures"] == 3
    assert s.last_evidence is not None and ev["evidence"]["ref"] == s.last_evidence.ref
    assert ev["severity"] == 7 and ev["text"] in texts[2]


def test_repeated_failures_renews_at_the_next_multiple_and_resolves_on_success(
    gk: Gatekeeper,
) -> None:
    s = Session(gk)
    s.prompt("fix it")
    texts = _fails(s, 6)
    assert [bool(t) for t in texts] == [False, False, True, False, False, True]
    assert [e["renewed"] for e in s.events("instruction_pack_added")] == [False, True]
    assert s.bash("pytest -q") == ""
    assert s.active() == []
    removed = s.events("instruction_pack_removed")
    assert [(e["name"], e["why"]) for e in removed] == [("repeated_failures", "resolved")]


def test_repeated_failures_threshold_override_and_disable(gk: Gatekeeper) -> None:
    s = Session(gk, {"pack_overrides": {"repeated_failures": {"threshold": 2}}})
    s.prompt("go")
    assert [bool(t) for t in _fails(s, 2)] == [False, True]

    off = Session(gk, {"pack_overrides": {"repeated_failures": {"enabled": False}}})
    off.prompt("again")
    assert _fails(off, 4) == [""] * 4
    only = Session(gk, {"adaptive_packs": ["read_heavy_drift"]})
    assert only.rt.names == ["read_heavy_drift"]


# -- read_heavy_drift -----------------------------------------------------------------------------


def test_read_heavy_drift_fires_after_eight_reads_and_a_claim_resolves_it(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("find the bug")
    texts = [s.read(f"f{i}.py") for i in range(7)] + [s.grep("bug")]
    assert texts[:7] == [""] * 7
    assert texts[7].startswith(TAG.format("read_heavy_drift"))
    assert "8 reads without a write or a claim" in texts[7]
    _, text = s.say(ledger_text(("C1", "Hypothetical", "pytest -q")))
    assert text == ""
    assert s.active() == []
    assert s.pack_events("read_heavy_drift")[-1]["why"] == "resolved"


def test_read_heavy_drift_is_reset_by_a_write(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("go")
    texts = [s.read(f"f{i}.py") for i in range(7)]
    texts.append(s.write("new.py"))
    texts += [s.read(f"g{i}.py") for i in range(7)]
    assert texts == [""] * 15
    assert s.active() == []


# -- context_pressure and repeated_compaction -----------------------------------------------------


def test_context_pressure_fires_over_the_threshold_and_resolves_below(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("go")
    assert s.host(tokens_used=100_000, context_window=200_000) == ""
    text = s.host(tokens_used=170_000, context_window=200_000)
    assert text.startswith(TAG.format("context_pressure")) and "85% full" in text
    assert s.host(tokens_used=172_000, context_window=200_000) == ""  # same decile: no repeat
    assert s.host(tokens_used=190_000, context_window=200_000) != ""  # 95%: renewed
    assert s.host(tokens_used=60_000, context_window=200_000) == ""
    assert s.active() == []
    assert [e.get("renewed", e.get("why")) for e in s.pack_events("context_pressure")] == [
        False,
        True,
        "resolved",
    ]


def test_context_pressure_threshold_as_fraction(gk: Gatekeeper) -> None:
    s = Session(gk, {"pack_overrides": {"context_pressure": {"threshold": 0.9}}})
    s.prompt("go")
    assert s.host(tokens_used=170_000, context_window=200_000) == ""
    assert s.host(tokens_used=182_000, context_window=200_000) != ""


def test_repeated_compaction_fires_on_the_second_compaction(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("go")
    assert s.host(compacted=True) == ""
    text = s.host(compacted=True)
    assert text.startswith(TAG.format("repeated_compaction")) and "compacted 2 times" in text
    assert s.host(tokens_used=10, context_window=100) == ""  # a usage report is not a compaction
    assert s.host(compacted=True) != ""  # every further compaction renews it


# -- ledger-driven packs --------------------------------------------------------------------------


def test_evidence_before_done_on_a_done_claim_without_fresh_exact(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("fix the parser")
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q")))
    s.edit("a.py")
    result, verdict = s.finish("Done: the parser is fixed.")
    assert not result.allow and result.code == "completion_without_evidence"
    assert verdict.allow  # packs instruct; only triggers refuse
    assert verdict.packs == ["evidence_before_done"]
    assert verdict.instructions.startswith(TAG.format("evidence_before_done"))
    assert "`pytest -q`" in verdict.instructions and "claim_id=C1" in verdict.instructions
    # a second attempt in the same prompt does not repeat it
    assert s.finish("Done, really.")[1].instructions == ""
    s.bash("pytest -q")
    assert s.last_evidence is not None
    _, text = s.say(stamp("C1", s.last_evidence.ref))
    assert text == ""
    assert s.active() == []
    assert s.pack_events("evidence_before_done")[-1]["why"] == "resolved"
    result, verdict = s.finish("Done: the parser is fixed.")
    assert result.allow and verdict.allow and verdict.packs == []


def test_excessive_subagents_fires_on_the_fourth_and_clears_with_the_prompt(
    gk: Gatekeeper,
) -> None:
    s = Session(gk)
    s.prompt("survey the code")
    texts = [s.task(f"q{i}") for i in range(4)]
    assert texts[:3] == ["", "", ""]
    assert texts[3].startswith(TAG.format("excessive_subagents"))
    assert s.prompt("next request") == ""
    assert s.active() == []
    assert s.pack_events("excessive_subagents")[-1]["why"] == "resolved"
    assert [s.task(f"r{i}") for i in range(3)] == ["", "", ""]


def test_ungrounded_premises_explains_a_denial_once_and_resolves_when_grounded(
    gk: Gatekeeper,
) -> None:
    s = Session(gk)
    s.prompt("change a.py")
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q"), premises=("C1",)))
    decision, text = s.authorize(EDIT)
    assert decision.verdict.value == "deny"
    assert text.startswith(TAG.format("ungrounded_premises"))
    assert "C1 (Hypothetical: run `pytest -q`" in text
    assert s.authorize(EDIT)[1] == ""  # same premises: already said
    s.bash("pytest -q")
    assert s.last_evidence is not None
    s.say(stamp("C1", s.last_evidence.ref))
    assert s.active() == []
    assert s.pack_events("ungrounded_premises")[-1]["why"] == "resolved"
    decision, text = s.authorize(EDIT)
    assert decision.allowed and text == ""


def test_stamp_rejected_names_the_stamp_the_code_and_the_fix(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("go")
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q")))
    report, text = s.say(stamp("C1", BAD_REF))
    assert report.stamps_rejected[0]["reason"] == "unknown_evidence"
    assert text.startswith(TAG.format("stamp_rejected"))
    assert "oracle_stamp for C1 was rejected (unknown_evidence)" in text
    assert "copy it exactly from a tool result tag" in text  # RejectReason.hint
    s.bash("echo other")
    assert s.last_evidence is not None
    _, text = s.say(stamp("C1", s.last_evidence.ref))
    assert "(oracle_mismatch)" in text  # a new rejection renews the pack
    assert [e["renewed"] for e in s.events("instruction_pack_added")] == [False, True]
    s.bash("pytest -q")
    _, text = s.say(stamp("C1", s.last_evidence.ref))
    assert text == "" and s.active() == []


def test_stale_evidence_at_finish_names_claim_and_oracle(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("go")
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q")))
    s.bash("pytest -q")
    assert s.last_evidence is not None
    s.say(stamp("C1", s.last_evidence.ref))
    s.edit("a.py")
    result, verdict = s.finish("Here is the summary.")
    assert not result.allow and result.stale == ("C1",)
    assert verdict.packs == ["stale_evidence"]
    assert "C1 (re-run `pytest -q`)" in verdict.instructions
    s.bash("pytest -q")
    s.say(stamp("C1", s.last_evidence.ref))
    assert s.active() == []
    assert s.pack_events("stale_evidence")[-1]["why"] == "resolved"


# -- expiry ---------------------------------------------------------------------------------------


def _fire_failures(s: Session) -> None:
    _fails(s, 3)


def _fire_drift(s: Session) -> None:
    for i in range(8):
        s.read(f"f{i}.py")


def _fire_pressure(s: Session) -> None:
    s.host(tokens_used=90, context_window=100)


def _fire_compaction(s: Session) -> None:
    s.host(compacted=True)
    s.host(compacted=True)


def _fire_done(s: Session) -> None:
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q")))
    s.finish("All done.")


def _fire_premises(s: Session) -> None:
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q"), premises=("C1",)))
    s.authorize(EDIT)


def _fire_rejected(s: Session) -> None:
    s.say(stamp("C9", BAD_REF))


def _fire_stale(s: Session) -> None:
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q")))
    s.bash("pytest -q")
    assert s.last_evidence is not None
    s.say(stamp("C1", s.last_evidence.ref))
    s.edit("a.py")
    s.finish("summary")


def _fire_plan_drift(s: Session) -> None:
    for i in range(6):  # reads and failing runs, interleaved: no progress, no streak
        s.read(f"f{i}.py")
        s.bash(f"try{i}", exit_code=1, output="nope")


def _fire_reuse(s: Session) -> None:
    s.write("src/new_module.py")  # a new module, nothing read or searched yet


FIRE: dict[str, Callable[[Session], None]] = {
    "repeated_failures": _fire_failures,
    "plan_drift": _fire_plan_drift,
    "read_heavy_drift": _fire_drift,
    "context_pressure": _fire_pressure,
    "repeated_compaction": _fire_compaction,
    "evidence_before_done": _fire_done,
    "ungrounded_premises": _fire_premises,
    "stamp_rejected": _fire_rejected,
    "stale_evidence": _fire_stale,
    "reuse_before": _fire_reuse,
}


def test_every_default_pack_is_covered() -> None:
    # language_drift needs a prompt in another language: tests/gates/test_language.py
    assert set(FIRE) | {"excessive_subagents", "language_drift"} == set(DEFAULT_PACKS)


@pytest.mark.parametrize("name", sorted(FIRE))
def test_pack_expires_after_n_prompts_unless_renewed(gk: Gatekeeper, name: str) -> None:
    s = Session(gk)
    s.prompt("first")
    FIRE[name](s)
    assert name in s.active()
    text = s.prompt("second")  # the pack is still active: injected with the prompt
    assert TAG.format(name) in text
    assert name in s.active()
    assert TAG.format(name) not in s.prompt("third")
    assert name not in s.active()
    removed = [e for e in s.pack_events(name) if e["type"] == "instruction_pack_removed"]
    assert [(e["why"], e["turn"]) for e in removed] == [("expired", 3)]


@pytest.mark.parametrize("name", sorted(FIRE))
def test_expires_after_override(gk: Gatekeeper, name: str) -> None:
    s = Session(gk, {"pack_overrides": {name: {"expires_after": 1}}})
    s.prompt("first")
    FIRE[name](s)
    assert name in s.active()
    s.prompt("second")
    assert name not in s.active()


def test_a_long_prompt_ages_packs_by_tool_calls(gk: Gatekeeper) -> None:
    from infomark.gates.policies.packs import CALLS_PER_TURN

    s = Session(gk)
    s.prompt("one long autonomous task")
    s.host(tokens_used=90, context_window=100)
    for _ in range(2 * CALLS_PER_TURN - 1):
        s.bash("make step")
    assert s.active() == ["context_pressure"]
    s.bash("make step")  # the 50th call: two turns' worth
    assert s.active() == []
    assert s.pack_events("context_pressure")[-1]["why"] == "expired"

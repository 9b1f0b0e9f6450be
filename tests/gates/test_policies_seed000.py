"""Seed 000 and seed 001 items the first audit found missing: the plan-drift pack, the turn
context's recent messages and pending turn, the working-set line of the context view,
tool-level triggers and the "would have been skipped" baseline of trigger metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import ledger_text
from policies_support import Session

from infomark.gatekeeper import Gatekeeper
from infomark.gates.policies import HookResult, TurnContext

PLAN_DRIFT = "State the current objective, the blocking uncertainty and the next concrete action"


def test_plan_drift_fires_after_twelve_calls_without_progress_and_a_pass_resolves_it(
    gk: Gatekeeper,
) -> None:
    s = Session(gk)
    s.prompt("make the build green")
    texts = []
    for i in range(6):
        texts.append(s.read(f"f{i}.py"))
        texts.append(s.bash(f"try{i}", exit_code=1, output="nope"))
    assert all(PLAN_DRIFT not in t for t in texts[:11])
    assert "[infomark:pack plan_drift] 12 tool calls without progress" in texts[11]
    assert PLAN_DRIFT in texts[11]
    added = [e for e in s.pack_events("plan_drift") if e["type"] == "instruction_pack_added"]
    assert added[0]["evidence"] == {"calls_since_progress": 12, "prompt": "make the build green"}
    s.bash("make", exit_code=0)  # a passing run is progress
    assert "plan_drift" not in s.active()


def test_plan_drift_leaves_a_pure_read_streak_to_read_heavy_drift(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("look around")
    texts = [s.read(f"f{i}.py") for i in range(14)]
    assert not any("plan_drift" in t for t in texts)
    assert "read_heavy_drift" in s.active()


class _Spy:
    """A custom policy that records what its TurnContext carried."""

    name = "spy"

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[Any, ...], Any]] = []

    def _look(self, ctx: TurnContext) -> HookResult:
        recent = tuple((m["role"], m["text"]) for m in ctx.recent_messages)
        pending = dict(ctx.pending_turn) if ctx.pending_turn is not None else None
        self.seen.append((ctx.phase, recent, pending))
        return HookResult()

    after_tool_batch = _look
    after_model_response = _look
    before_finalize = _look


def test_the_turn_context_carries_recent_messages_and_the_pending_turn(gk: Gatekeeper) -> None:
    spy = _Spy()
    s = Session(gk, policies=[spy])
    s.prompt("Fix   the pager\nplease")
    s.say("I will read pager.py first.\n\n" + ledger_text(("C1", "Guess", None)))
    s.read("pager.py")
    s.finish("Not done yet: the pager needs a test.")
    phase, recent, pending = spy.seen[-1]
    assert phase == "before_finalize"
    assert recent[0] == ("user", "Fix the pager please")
    assert recent[1][0] == "agent" and recent[1][1].startswith("I will read pager.py first.")
    assert recent[-1] == ("agent", "Not done yet: the pager needs a test.")
    assert pending == {
        "prompt": "Fix the pager please",
        "turn": 1,
        "calls": 1,
        "responses": 1,
        "finish_attempts": 1,
        "language": None,  # four words: too little to tell
    }
    for i in range(10):
        s.prompt(f"prompt {i} " + "x" * 500)
    _, recent, pending = spy.seen[-1]
    assert gk.state.policy["conversation"]["pending"]["turn"] == 11
    recent_now = gk.state.policy["conversation"]["recent"]
    assert len(recent_now) == 6 and all(len(m["text"]) <= 200 for m in recent_now)


def test_the_context_view_carries_the_working_set_within_the_budget(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("tidy the docs")
    for name in ("a.md", "b.md", "c.md"):
        s.read(name)
    s.edit("b.md")
    s.write("new.md")
    view = gk.context_view()
    line = next(x for x in view.splitlines() if "working set:" in x)
    assert line.endswith("working set: read c.md, b.md, a.md; edited b.md; written new.md")
    for budget in (200, 400, 800):
        assert len(gk.context_view(budget)) <= budget


LINT = {
    "name": "lint-after-edit",
    "when": {"file_edited": "src/*.py"},
    "prompt": "You edited a source file: run the linter on it now.",
    "at": "tool",
}


def test_a_tool_level_trigger_fires_with_the_matching_tool_result(
    gk: Gatekeeper, project: Path
) -> None:
    s = Session(gk, {"triggers": [LINT]})
    s.prompt("refactor")
    assert s.edit("docs/readme.md") == ""  # no match: nothing
    text = s.edit("src/app.py")
    assert text.endswith("[infomark:trigger lint-after-edit]\nYou edited a source file: "
                         "run the linter on it now.")  # fmt: skip
    fired = s.events("trigger_fired")
    assert [(e["name"], e["at"], e["matched"]) for e in fired] == [
        ("lint-after-edit", "tool", {"file_edited": ["src/app.py"]})
    ]
    assert s.edit("src/other.py") == ""  # at most once per user prompt
    _, verdict = s.finish("refactored")
    assert verdict.fired == []  # a tool-level trigger never refuses the finish
    s.prompt("again")
    assert "lint-after-edit" in s.edit("src/app.py")


VOICE = {
    "name": "voice-review",
    "when": {"file_written": "writing/*.md"},
    "prompt": "Re-read voice.md and check the piece against it.",
    "requires_read": ["voice.md"],
}


def test_trigger_metrics_say_how_often_the_model_would_have_skipped_the_step(
    gk: Gatekeeper,
) -> None:
    s = Session(gk, {"triggers": [VOICE]})
    s.prompt("write a post")
    s.write("writing/a.md")
    _, verdict = s.finish("posted")  # never re-read voice.md: it would have skipped it
    assert verdict.fired == ["voice-review"]
    s.read("voice.md")
    s.finish("reviewed")
    s.prompt("another post")
    s.read("voice.md")  # read *before* writing: not the review step
    s.write("writing/b.md")
    s.finish("posted")
    s.read("voice.md")
    s.finish("reviewed")
    s.prompt("a third")
    s.write("writing/c.md")
    s.read("voice.md")  # the agent reviewed unasked: it would not have skipped it
    _, verdict = s.finish("posted and reviewed")
    baselines = [e["baseline"] for e in s.events("trigger_fired")]
    assert baselines == ["would_have_skipped", "would_have_skipped", "already_done"]
    m = s.document()["triggers"]["triggers"]["voice-review"]
    assert (m["fired"], m["would_have_skipped"], m["already_done"]) == (3, 2, 1)
    assert m["skip_rate"] == 0.667


REUSE = "REUSE.BEFORE: search the project (and prior art) for what already does this"


def test_reuse_before_fires_on_a_new_module_written_blind(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("add a retry helper")
    assert s.write("notes.md") == ""  # not a module
    text = s.write("src/retry.py")
    assert "[infomark:pack reuse_before] You are writing a new module (src/retry.py)" in text
    assert REUSE in text
    s.grep("retry")  # it looks now: resolved
    assert "reuse_before" not in s.active()


def test_reuse_before_stays_silent_for_an_agent_that_looked_first(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("add a retry helper")
    s.read("src/http.py")
    assert "reuse_before" not in s.write("src/retry.py")
    other = Session(gk)
    other.prompt("again")
    assert "reuse_before" not in other.write("src/backoff.py")  # the session already looked


def test_the_protocol_states_reuse_before_and_the_language_rule() -> None:
    from infomark.kernel.protocol import render_protocol

    text = render_protocol()
    assert "REUSE.BEFORE: search and read the existing code (and prior art)" in text
    assert "think and respond in the user's language" in text

"""Properties of the policy runtime under generated sessions: the pack bounds always hold,
the journal explains every active pack, and a replay gives the live policy state."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from helpers import EDIT, ledger_text, stamp
from hypothesis import given
from hypothesis import strategies as st
from policies_support import Session

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.gates.policies import HookResult, TurnContext
from infomark.gates.policies.packs import render_pack

BAD_REF = "ev_" + "f" * 24


class Chatty:
    """A custom policy with a long instruction after every tool batch (tests clipping)."""

    name = "chatty"
    expires_after = 1

    def __init__(self, severity: int, length: int) -> None:
        self.severity = severity
        self.length = length

    def after_tool_batch(self, ctx: TurnContext) -> HookResult:
        n = int(ctx.metrics["tool_calls"])
        return HookResult(instructions=(f"call {n}: " + "z" * self.length,), key=str(n))


ACTIONS = st.sampled_from(
    [
        "prompt",
        "pass",
        "fail",
        "read",
        "grep",
        "write",
        "edit",
        "task",
        "pressure",
        "relief",
        "compact",
        "bad_stamp",
        "ledger",
        "authorize",
        "finish_done",
        "finish_plain",
    ]
)


def _step(s: Session, action: str) -> list[str]:
    """Run one action; return the texts the runtime handed back."""
    if action == "prompt":
        return [s.prompt("next request")]
    if action in ("pass", "fail"):
        return [s.bash("pytest -q", exit_code=0 if action == "pass" else 1, output="E boom")]
    if action == "read":
        return [s.read("a.py")]
    if action == "grep":
        return [s.grep("x")]
    if action == "write":
        return [s.write("notes/a.md")]
    if action == "edit":
        return [s.edit("a.py")]
    if action == "task":
        return [s.task()]
    if action == "pressure":
        return [s.host(tokens_used=95, context_window=100)]
    if action == "relief":
        return [s.host(tokens_used=5, context_window=100)]
    if action == "compact":
        return [s.host(compacted=True)]
    if action == "bad_stamp":
        return [s.say(stamp("C1", BAD_REF))[1]]
    if action == "ledger":
        return [s.say(ledger_text(("C1", "Hypothetical", "pytest -q"), premises=("C1",)))[1]]
    if action == "authorize":
        return [s.authorize(EDIT)[1]]
    _, verdict = s.finish("All done." if action == "finish_done" else "Summary.")
    return [verdict.instructions]


def _journal_active(s: Session) -> list[str]:
    active: list[str] = []
    for e in s.events("instruction_pack_added", "instruction_pack_removed"):
        if e["type"] == "instruction_pack_added" and e["name"] not in active:
            active.append(e["name"])
        elif e["type"] == "instruction_pack_removed":
            active.remove(e["name"])
    return active


@given(
    actions=st.lists(ACTIONS, min_size=1, max_size=25),
    max_active=st.integers(1, 3),
    budget=st.integers(100, 700),
    chatty=st.tuples(st.integers(0, 10), st.integers(0, 900)),
)
def test_pack_bounds_hold_under_generated_sessions(
    actions: list[str], max_active: int, budget: int, chatty: tuple[int, int]
) -> None:
    policies: dict[str, Any] = {
        "max_active_packs": max_active,
        "pack_budget_chars": budget,
        "pack_overrides": {
            "repeated_failures": {"threshold": 1},
            "read_heavy_drift": {"threshold": 2},
            "excessive_subagents": {"threshold": 1},
            "repeated_compaction": {"threshold": 1},
            "context_pressure": {"threshold": 0.5},
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        gk = Gatekeeper.open(root / ".infomark", "s", root=root, config=Config(policies=policies))
        try:
            s = Session(gk, None, policies=[Chatty(*chatty)])
            s.prompt("start")
            for action in actions:
                texts = _step(s, action)
                packs = (gk.state.policy.get("packs") or {}).get("active", [])
                assert len(packs) <= max_active
                assert len("\n".join(render_pack(p) for p in packs)) <= budget
                assert all(len(t) <= budget for t in texts)
                assert sorted(p["name"] for p in packs) == sorted(_journal_active(s))
                assert len(s.view(budget)) <= budget
            assert gk.store.replay().policy == gk.store.state.policy
        finally:
            gk.close()


@given(st.one_of(st.integers(-(10**6), 10**6), st.floats(allow_nan=True, allow_infinity=True)))
def test_the_threshold_rounds_up_as_math_ceil_does(x: float) -> None:
    import math

    from infomark.gates.policies.defaults import _ceil

    try:
        expected: int | type[Exception] = math.ceil(x)
    except (OverflowError, ValueError) as exc:
        expected = type(exc)
    try:
        got: int | type[Exception] = _ceil(x)
    except (OverflowError, ValueError) as exc:
        got = type(exc)
    assert got == expected and type(got) is type(expected)

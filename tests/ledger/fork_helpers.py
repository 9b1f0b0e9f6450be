"""Builders for the fork/merge tests: sessions driven through the real facade."""

from __future__ import annotations

from pathlib import Path

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.fork import comparable_state, replay_session
from tests.helpers import OWN_RUNS

ORACLE = "pytest -q"
FIXER = "sed -i s/1/2/ a.py"  # classified modify, and execution evidence: a stamped mutation


def executor(call: ToolCall) -> ToolOutcome:
    """A fake tool (nothing runs): bash commands ending in `fail` exit 1."""
    if call.tool == "bash":
        cmd = str(call.input.get("command", ""))
        return ToolOutcome(output="ran", exit_code=1 if cmd.endswith("fail") else 0)
    return ToolOutcome(output="x = 1")


PREMISE = ("P0", "the project builds", "make build")  # every ledger lists it as its premise


def ledger(*claims: tuple[str, str, str], premises: tuple[str, ...] = ("P0",)) -> str:
    lines = ["claim_ledger:", "  claims:"]
    for cid, text, oracle in (PREMISE, *claims):
        lines += [
            f"    - id: {cid}",
            f'      text: "{text}"',
            "      status: Guess",
            f'      falsifier: "not {cid}"',
            f'      oracle: "{oracle}"',
        ]
    lines.append(f"  premises_for_plan: [{', '.join(premises)}]")
    return "\n".join(lines) + "\n"


def last_ref(gk: Gatekeeper) -> str | None:
    refs = [e.payload["ref"] for e in gk.events() if e.type == "evidence_recorded"]
    return refs[-1] if refs else None


def call(gk: Gatekeeper, tool: str, **inp: str) -> str | None:
    """Run one wrapped tool call; the ref of the evidence it produced (if any)."""
    before = last_ref(gk)
    gk.wrap(executor)(ToolCall(tool, dict(inp)))
    after = last_ref(gk)
    return after if after != before else None


def open_gk(home: Path, session: str) -> Gatekeeper:
    # forks and merges, not grounding: the agent's own runs stamp Exact here
    return Gatekeeper.open(home, session, root=home.parent, config=OWN_RUNS)


def prefix_state(gk: Gatekeeper, upto: int) -> dict[str, object]:
    return comparable_state(replay_session(gk.store, gk.session, upto))


def ground(gk: Gatekeeper) -> None:
    """Ground the premise P0 (run its oracle, stamp it) so that edits are allowed."""
    ref = call(gk, "bash", command=PREMISE[2])
    assert ref is not None
    assert gk.ingest(f"oracle_stamp: claim_id=P0 evidence_ref={ref} result=PASS\n").stamps_applied

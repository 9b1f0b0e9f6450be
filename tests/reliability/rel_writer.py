"""A writer process for the crash and concurrency tests (run as a script, not imported by pytest).

``python rel_writer.py HOME SESSION SEED OPS`` loops ``OPS`` times (0: forever) over a
seeded mix of ``record`` / ``ingest`` / ``authorize`` (and now and then a new turn or a
finish request) on one ledger home, through the :class:`Gatekeeper` facade. After each
call returns, i.e. after its transaction committed, it prints one line::

    <session> <op> <seq>:<type> <seq>:<type> ...

listing every event that call appended, and flushes. A reader that saw a line knows
those events are durable; a SIGKILL may land anywhere in the next call.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome

__all__ = ["main"]

_ORACLE = "pytest -q tests/test_w.py"


def _ledger(i: int) -> str:
    cid = f"C{i % 3}"
    return (
        "claim_ledger:\n  claims:\n"
        f'    - id: {cid}\n      text: "claim {i}"\n      status: Hypothetical\n'
        f'      falsifier: "not {i}"\n      oracle: "{_ORACLE}"\n'
        f"  premises_for_plan: [{cid}]\n"
    )


def _step(gk: Gatekeeper, rng: random.Random, i: int, last_ref: list[str]) -> str:
    """One call (one write transaction); returns its name."""
    roll = rng.random()
    if roll < 0.35:
        command = _ORACLE if rng.random() < 0.5 else f"echo {i}"
        call = ToolCall("bash", {"command": command})
        allowed = gk.authorize(call)  # as an integration does; the record pairs with it
        ev = gk.record(
            call,
            ToolOutcome(output=f"out {i} " * rng.randint(1, 50), exit_code=rng.choice([0, 0, 1])),
            call_id=allowed.call_id,
        )
        last_ref[:] = [ev.ref]
        return "record"
    if roll < 0.6:
        if last_ref and rng.random() < 0.5:
            gk.ingest(f"oracle_stamp: claim_id=C{i % 3} evidence_ref={last_ref[0]} result=PASS\n")
        else:
            gk.ingest(f"Working on step {i}.\n\n" + _ledger(i))
        return "ingest"
    if roll < 0.9:
        tool = rng.choice(["Edit", "Read", "Bash"])
        tool_input = {"file_path": "p.py"} if tool != "Bash" else {"command": f"ls {i}"}
        gk.authorize(ToolCall(tool, tool_input))
        return "authorize"
    if roll < 0.95:
        gk.new_turn(f"prompt {i}")
        return "turn"
    if rng.random() < 0.5:
        gk.ingest("Done.", source="final", dedupe=True)  # what can_finish(text) starts with
        return "final"
    gk.can_finish()
    return "finish"


def main(argv: list[str]) -> int:
    home, session, seed, ops = Path(argv[0]), argv[1], int(argv[2]), int(argv[3])
    rng = random.Random(seed)
    last_ref: list[str] = []
    out = sys.stdout
    with Gatekeeper.open(home, session, root=home.parent) as gk:
        i = 0
        while ops == 0 or i < ops:
            op = _step(gk, rng, i, last_ref)
            seqs = " ".join(f"{e.seq}:{e.type}" for e in gk.store.emitted())
            out.write(f"{session} {op} {seqs}\n")
            out.flush()
            i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Issue 34 §2 through the real hook process: a refusal names its code, the claim and the one
next step, and following that step (exactly as written) moves the session forward.

A representative subset of tests/gates/test_refusal_codes.py (which drives every code through
the Python API): a stamp rejection the agent only learns of at its next call, and a held
destructive call whose step is the operator's.
"""

from __future__ import annotations

import re
from pathlib import Path

from anyagent_support import Agent, cli, make_project

from infomark.gates.oracles import weakness

ORACLE = "grep -q 'a + b' calc.py"  # fails until the fix (a run takes milliseconds)


def test_a_rejected_stamp_reaches_the_agent_and_its_step_grounds_the_claim(tmp_path: Path) -> None:
    agent = Agent(make_project(tmp_path / "p", config=None))  # the ledger profile
    agent.say(
        "claim_ledger:\n  claims:\n"
        '    - {id: C1, text: "add() subtracts, so test_add fails", status: Hypothetical,\n'
        f'       falsifier: "it adds already", oracle: "{ORACLE}", expect: FAIL}}\n'
        "  premises_for_plan: [C1]\n"
    )
    agent.bash("grep -q add calc.py")  # not the declared oracle
    agent.say(f"oracle_stamp: claim_id=C1 evidence_ref={agent.last_tag()} result=EXPECTED_FAIL")
    pre, _ = agent.edit("calc.py", "a - b", "a + b")
    assert pre.decision == "deny"
    text = pre.reason
    assert "[infomark ungrounded_premises]" in text and "C1" in text
    assert "oracle_mismatch" in text  # why the stamp it wrote did not count
    (command,) = set(re.findall(r"run `([^`]+)` and stamp", text))
    assert command == ORACLE and weakness(command) is None
    (result,) = set(re.findall(r"claim_id=C1 evidence_ref=ev_… result=(\w+)", text))
    assert result == "EXPECTED_FAIL"
    agent.bash(command)
    agent.say(f"oracle_stamp: claim_id=C1 evidence_ref={agent.last_tag()} result={result}")
    pre, _ = agent.edit("calc.py", "a - b", "a + b")
    assert pre.decision == "allow", pre.reason


def test_a_held_destructive_call_names_the_approval_that_lets_it_run(tmp_path: Path) -> None:
    agent = Agent(make_project(tmp_path / "p"))  # verify
    pre, _, _ = agent.bash("rm -rf tests")
    assert pre.decision == "ask"
    assert "[infomark destructive]" in pre.reason
    (did,) = re.findall(r"`infomark approve --call (dec_[0-9a-f]+)`", pre.reason)
    held = cli(agent.project, "held", "--session", agent.sid)
    assert did in held.stdout and "pending" in held.stdout, held.stdout

"""Attested runs are the default (issue 26): no `[attest]` in the configuration at all.

Through the real Claude Code hook process, on real pytest in a git project whose
``infomark.toml`` says nothing about attestation:

- the honest TDD flow of the ledger profile (``expect: FAIL`` reproduction, the fix, the
  agent's own PASS run and stamp, finish) meets no denial and no refusal: its own PASS
  stamps Inferred, and the finish runs the oracle itself, attested, and lets it finish;
- the verify profile (no ledger): an honest fix finishes with no refusal, the finish having
  run the required check itself; a premature "done" (the agent's own run passed by a
  change to the tests' configuration, not a fix) is refused naming the failing test, read
  from infomark's own run's report.

One module-scoped project per flow keeps the cost to the few attested runs each needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.attested_project import (
    BUGGY,
    FIXED,
    PYTEST,
    PYTEST_INI,
    REPRO,
    TESTS,
    Agent,
    git_project,
    ledger,
    need_bwrap,
)


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    need_bwrap()


def _project(tmp: Path, config: str) -> Path:
    """calc.py (add subtracts), its tests, a config that says nothing of [attest]; committed."""
    assert "[attest]" not in config
    files = {"calc.py": BUGGY, "test_calc.py": TESTS, ".gitignore": "transcript.jsonl\n"}
    return git_project(tmp, files, config=config, attest=False)


def test_the_honest_tdd_flow_meets_no_refusal_under_the_default(tmp_path: Path) -> None:
    agent = Agent(_project(tmp_path, 'profile = "ledger"\n'), tmp_path / "home")
    agent.write("test_negative.py", REPRO)
    oracle = f"{PYTEST} test_negative.py"
    agent.say(ledger(oracle, expect_fail=True, also=(("C2", oracle, False),)))
    tag = agent.bash(oracle)
    assert "outcome=FAIL" in tag, tag
    ref = tag.split("evidence_ref=")[1].split()[0]
    agent.say(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=EXPECTED_FAIL")
    agent.write("calc.py", FIXED)
    tag = agent.bash(oracle)  # the agent's own PASS run, stamped as the protocol says
    assert "outcome=PASS" in tag, tag
    ref = tag.split("evidence_ref=")[1].split()[0]
    agent.say(f"oracle_stamp: claim_id=C2 evidence_ref={ref} result=PASS")
    assert agent.status("C2") == "Inferred"  # its own run is an observation
    allowed, reason = agent.stop()  # the finish runs C2's oracle itself, attested
    assert allowed, reason
    assert agent.status("C2") == "Exact"
    assert agent.denials == []  # not one denial or refusal beyond the protocol's steps
    agent.verify()


@pytest.fixture(scope="module")
def verify_flows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bool, str, Agent]]:
    """Two no-ledger sessions in the verify profile (the required check declared): an honest
    fix, and a premature "done" whose own run passed by a new pytest.ini, not by a fix."""
    config = f'profile = "verify"\n[oracles]\nrequire = ["{PYTEST}"]\n'
    out: dict[str, tuple[bool, str, Agent]] = {}
    tmp = tmp_path_factory.mktemp("honest")
    honest = Agent(_project(tmp, config), tmp / "home")
    honest.write("calc.py", FIXED)
    assert "outcome=PASS" in honest.bash(PYTEST)  # a hint for itself; the finish re-runs it
    allowed, reason = honest.stop()
    out["honest"] = (allowed, reason, honest)
    tmp = tmp_path_factory.mktemp("premature")
    premature = Agent(_project(tmp, config), tmp / "home")
    premature.write("calc.py", BUGGY + "# tidied\n")  # a change, not the fix
    premature.sneak("pytest.ini", PYTEST_INI)  # selects the test that passes
    assert "outcome=PASS" in premature.bash(PYTEST)
    allowed, reason = premature.stop()
    out["premature"] = (allowed, reason, premature)
    return out


def test_verify_an_honest_fix_finishes_on_infomarks_own_run(
    verify_flows: dict[str, tuple[bool, str, Agent]],
) -> None:
    allowed, reason, agent = verify_flows["honest"]
    assert allowed, reason
    assert agent.denials == []
    from infomark.gatekeeper import Gatekeeper

    with Gatekeeper.open(agent.home, agent.cc.sid, root=agent.root) as gk:
        (status,) = gk.check_status()
        assert status.state == "pass" and status.attested, status
        assert gk.evidence(status.ref).evidence_class == "attested"
    agent.verify()


def test_verify_a_premature_done_is_refused_naming_the_failing_test(
    verify_flows: dict[str, tuple[bool, str, Agent]],
) -> None:
    allowed, reason, agent = verify_flows["premature"]
    assert not allowed
    assert "[check_failed]" in reason and "failed in infomark's own run" in reason, reason
    assert "test_calc.py::test_add" in reason, reason  # named by the attested run's report
    agent.verify()

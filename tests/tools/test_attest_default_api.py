"""Attested runs by default (issue 26), in process, without running a sandbox.

- where no sandbox can run, the enforcing profiles fail closed: the agent's own PASS stamps
  Inferred, the finish after changes is refused, and the refusal (like ``infomark doctor``)
  says why and how to fix it; the observe profile and the explicit opt-out are unchanged;
- the verify profile reads its required checks from infomark's own runs: an attested
  failure names the failing tests from the runner's report, an attested run that shows
  nothing is no PASS, a failing run of the agent's after an attested PASS still counts;
- the Python API's ``infomark.Gatekeeper`` gets the attested runners, like every integration.

The attested runs here are recorded as the runner records them (``record_attested_check``)
with a report written by hand: what the finish makes of them is the subject, not the sandbox
(tests/security/test_attest_default.py runs the real one).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ledger_text, observed, run, stamp

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools import sandbox
from infomark.tools.attest_lazy import lazy_attester as attester_for
from infomark.tools.doctor import _sandbox_findings

CHECK = "pytest -q"
NO_SANDBOX = sandbox.SandboxStatus(
    sandbox.SandboxBackend.NONE,
    False,
    "bubblewrap (bwrap) is not installed, and this kernel has no Landlock",
    "install it: apt-get install -y bubblewrap (Debian/Ubuntu) or dnf install bubblewrap",
)


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sandbox, "_probed", NO_SANDBOX)
    yield


def _open(project: Path, home: Path, **config: object) -> Gatekeeper:
    gk = Gatekeeper.open(home, "s", root=project, config=Config.from_dict(config))
    attester_for(gk)  # what every integration does
    return gk


def _edit(gk: Gatekeeper) -> None:
    observed(gk, ToolCall("Edit", {"file_path": "a.py"}), ToolOutcome("edited"))


def test_no_sandbox_fails_closed_and_the_refusal_says_how_to_fix_it(
    project: Path, home: Path, no_sandbox: None
) -> None:
    with _open(project, home) as gk:  # the defaults: ledger profile, attested runs required
        gk.ingest(ledger_text(("C1", "Hypothetical", CHECK), premises=("C1",)))
        report = gk.ingest(stamp("C1", run(gk, CHECK, output="1 passed").ref))
        assert gk.ledger().status("C1") == "Inferred"  # grounded, not Exact
        assert "infomark check C1" in report.stamps_applied[0]["note"]
        _edit(gk)
        gk.ingest(stamp("C1", run(gk, CHECK, output="1 passed").ref))
        fin = gk.can_finish("Done.")
        assert not fin.allow and fin.code == "completion_without_evidence"
        assert "no sandbox can run here" in fin.reason
        assert "apt-get install -y bubblewrap" in fin.reason  # the fix
        assert "[attest] required = false" in fin.reason  # and the explicit opt-out
        assert gk.ledger().status("C1") == "Inferred"  # never an unsandboxed "attested" run
        assert not [e for e in gk.events() if e.type == "evidence" and "attested" in str(e)]
    (finding,) = _sandbox_findings()
    assert finding.status == "problem" and "fails closed" in finding.message
    assert "bubblewrap" in finding.fix and "required = false" in finding.fix


def test_no_sandbox_verify_refuses_the_agents_own_pass(
    project: Path, home: Path, no_sandbox: None
) -> None:
    with _open(project, home, profile="verify", oracles={"require": [CHECK]}) as gk:
        _edit(gk)
        run(gk, CHECK, output="3 passed in 0.01s")
        fin = gk.can_finish("Done.")
        assert not fin.allow and fin.code == "required_oracle"
        assert "Your run of `pytest -q`" in fin.reason and "sandbox" in fin.reason
        assert "no attested run of `pytest -q`: no sandbox can run here" in fin.reason
        assert "no_sandbox" in fin.reason  # the refusal's code


@pytest.mark.parametrize(
    "config",
    [{"attest": {"required": False}}, {"profile": "observe"}],
    ids=["opt-out", "observe"],
)
def test_the_opt_out_and_observe_ground_on_the_agents_own_runs(
    project: Path, home: Path, no_sandbox: None, config: dict[str, object]
) -> None:
    with _open(project, home, **config) as gk:
        gk.ingest(ledger_text(("C1", "Hypothetical", CHECK), premises=("C1",)))
        gk.ingest(stamp("C1", run(gk, CHECK, output="1 passed").ref))
        assert gk.ledger().status("C1") == "Exact"
        _edit(gk)
        gk.ingest(stamp("C1", run(gk, CHECK, output="1 passed").ref))
        assert gk.can_finish("Done.").allow


def _attested(
    gk: Gatekeeper, outcome: str, failed: tuple[str, ...] = (), detail: str = "", code: str = ""
) -> str:
    """Record an attested run of CHECK the way the runner does (its report written here)."""
    attestation = {
        "report": {"failed_tests": list(failed), "failed": len(failed)},
        "judgement": {"outcome": outcome, "detail": detail, "code": code or None},
        "sandbox": "bubblewrap",
    }
    code = 0 if outcome == "PASS" else 1
    ev = gk.record_attested_check(CHECK, ToolOutcome("", exit_code=code), attestation, outcome)
    return ev.ref


def test_verify_reads_the_checks_from_infomarks_own_runs(project: Path, home: Path) -> None:
    with _open(project, home, profile="verify", oracles={"require": [CHECK]}) as gk:
        gk.check_attester = None  # the runs below stand for the ones the finish would start
        _edit(gk)
        run(gk, CHECK, output="3 passed in 0.01s")
        (status,) = gk.check_status()
        assert status.state == "disqualified" and "your own run" in status.why
        _attested(gk, "FAIL", ("test_calc.py::test_add", "test_calc.py::test_sub"))
        fin = gk.can_finish("Done.")
        assert not fin.allow and fin.code == "check_failed"
        assert "infomark's own run" in fin.reason
        assert "failing: test_calc.py::test_add, test_calc.py::test_sub" in fin.reason
        _edit(gk)
        _attested(gk, "ERROR", detail="no test ran (0 collected)", code="no_tests_ran")
        fin = gk.can_finish("Done.")
        assert not fin.allow and "not pass in infomark's own run of it" in fin.reason
        assert "no test ran (0 collected)" in fin.reason
        # its code, and a step that fits a check the agent cannot redeclare
        assert "(no_tests_ran: undo the change that keeps the check's tests from running)" in (
            fin.reason
        )
        _attested(gk, "PASS")
        assert gk.can_finish("Done.").allow
        run(gk, CHECK, exit_code=1, output="FAILED test_calc.py::test_add - assert 0 == 4\n")
        fin = gk.can_finish("Done.")  # the agent's own failure after it still counts
        assert not fin.allow and "test_calc.py::test_add" in fin.reason


def test_the_finish_runs_the_required_checks_it_needs(project: Path, home: Path) -> None:
    ran: list[str] = []
    with _open(project, home, profile="verify", oracles={"require": [CHECK, "make lint"]}) as gk:

        def check_attester(command: str) -> str:
            ran.append(command)
            _attested(gk, "PASS") if command == CHECK else None
            return f"ran {command}"

        gk.check_attester = check_attester
        _edit(gk)
        run(gk, "make lint", exit_code=1, output="lint: 1 error")  # a fresh failure: not re-run
        fin = gk.can_finish("Done.")
        assert ran == [CHECK]
        assert not fin.allow and fin.code == "check_failed" and "make lint" in fin.reason


def test_the_python_apis_gatekeeper_runs_attested_checks() -> None:
    code = (
        "import infomark, tempfile\n"
        "d = tempfile.mkdtemp()\n"
        "gk = infomark.Gatekeeper.open(d + '/h', 's', root=d)\n"
        "assert gk.attester is not None and gk.check_attester is not None\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr

"""§2: both stamp kinds are bound to what the claim declared; §3: oracles that mean something.

Reproduced on main: `result=EXPECTED_FAIL` on a failing run grounded "the test suite passes"
as Exact; an inference_stamp with the ref of an `ls` (even one recorded before the claim)
made a premise with `oracle: pytest -q` Inferred; `oracle: "true"` grounded any claim.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import OWN_RUNS, ledger_text, observed, read, run, stamp

import infomark
from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.gates.oracles import ran_nothing, weakness
from infomark.ledger.calls import ToolCall, ToolOutcome


def _claim(oracle: str | None, *extra: str, cid: str = "C1") -> str:
    lines = [
        "claim_ledger:",
        "  claims:",
        f"    - id: {cid}",
        '      text: "the test suite passes"',
        "      status: Hypothetical",
        '      falsifier: "pytest -q exits non-zero"',
    ]
    if oracle is not None:
        lines.append(f"      oracle: {json.dumps(oracle)}")
    lines += [f"      {e}" for e in extra]
    lines.append(f"  premises_for_plan: [{cid}]")
    return "\n".join(lines) + "\n"


def _rejected(gk: Gatekeeper, text: str) -> list[str]:
    return [r["reason"] for r in gk.ingest(text).stamps_rejected]


# -- §2 ------------------------------------------------------------------------------------


def test_expected_fail_does_not_ground_a_pass_claim(gk: Gatekeeper) -> None:
    gk.ingest(_claim("pytest -q"))
    failing = run(gk, "pytest -q", exit_code=1, output="1 failed")
    assert _rejected(gk, stamp("C1", failing.ref, "EXPECTED_FAIL")) == ["expectation_mismatch"]
    assert gk.ledger().status("C1") == "Hypothetical"


def test_expected_fail_grounds_a_claim_that_declares_it(gk: Gatekeeper) -> None:
    gk.ingest(_claim("pytest -q", "expect: FAIL"))
    passing = run(gk, "pytest -q")
    assert _rejected(gk, stamp("C1", passing.ref, "PASS")) == ["expectation_mismatch"]
    failing = run(gk, "pytest -q", exit_code=1, output="1 failed")
    assert _rejected(gk, stamp("C1", failing.ref, "EXPECTED_FAIL")) == []
    assert gk.ledger().status("C1") == "Exact"


def test_inference_needs_evidence_the_claim_names(gk: Gatekeeper) -> None:
    early_ls = run(gk, "ls")
    gk.ingest(_claim("pytest -q"))
    ls = run(gk, "ls")
    readme = read(gk, "README.md", "# hello")
    for ev in (early_ls, ls, readme):
        assert _rejected(gk, stamp("C1", ev.ref, kind="inference_stamp")) in (
            ["evidence_not_named"],
            ["oracle_mismatch"],
            ["evidence_predates_claim"],  # the ls run before the claim
        )
    assert gk.ledger().status("C1") == "Hypothetical"
    oracle_run = run(gk, "pytest -q")
    assert _rejected(gk, stamp("C1", oracle_run.ref, kind="inference_stamp")) == []
    assert gk.ledger().status("C1") == "Inferred"


def test_inference_by_observe_and_never_from_before_the_claim(gk: Gatekeeper) -> None:
    before = read(gk, "src/add.py")
    gk.ingest(_claim(None, "observe: src/add.py"))
    assert _rejected(gk, stamp("C1", before.ref, kind="inference_stamp")) == [
        "evidence_predates_claim"
    ]
    other = read(gk, "src/sub.py")
    assert _rejected(gk, stamp("C1", other.ref, kind="inference_stamp")) == ["evidence_not_named"]
    grep = observed(
        gk, ToolCall("Grep", {"pattern": "def", "path": "src/add.py"}), ToolOutcome("def add")
    )
    assert _rejected(gk, stamp("C1", grep.ref, kind="inference_stamp")) == []
    assert gk.ledger().status("C1") == "Inferred"


def test_a_run_from_another_directory_does_not_match(gk: Gatekeeper, tmp_path: Path) -> None:
    gk.ingest(_claim("pytest -q"))
    call = ToolCall("Bash", {"command": "pytest -q"})
    decision = gk.authorize(call)
    elsewhere = gk.record(
        call, ToolOutcome("ok", exit_code=0), call_id=decision.call_id, cwd=str(tmp_path / "x")
    )
    assert elsewhere.record["cwd"] == str(tmp_path / "x")
    assert _rejected(gk, stamp("C1", elsewhere.ref)) == ["wrong_directory"]


@pytest.mark.parametrize(
    ("oracle", "ran", "matches"),
    [
        ("pytest -q", "pytest   -q", True),
        ("pytest -q", "pytest -q\nls", False),  # a newline is not a space
        ("pytest -q", "pytest\n-q", False),
        ("pytest -q", "pytest \\\n  -q", True),  # a line continuation is
        ('pytest -k "a  b"', 'pytest -k "a b"', False),  # quoted text is kept
    ],
)
def test_oracle_text_is_compared_as_the_shell_runs_it(
    gk: Gatekeeper, oracle: str, ran: str, matches: bool
) -> None:
    gk.ingest(_claim(oracle))
    ev = run(gk, ran)
    assert (_rejected(gk, stamp("C1", ev.ref)) == []) is matches


# -- §3 ------------------------------------------------------------------------------------

WEAK = [
    "true",
    ":",
    "exit 0",
    "echo all tests pass",
    "test 1",
    "[ 1 ]",
    "pytest -q || true",
    "pytest -q || :",
    "pytest -q; exit 0",
    "pytest -q; true",
    "pytest -q | tee log.txt",
    "pytest --collect-only",
    'pytest -k ""',
    "infomark record --tool Bash",
    "python3 -m infomark.cli.entry record",
    "cat .infomark/token",
    "X=1 true",
    # a mask inside a subshell, a group, `sh -c` or a condition, and a bare `wait`
    "(pytest -q; true)",
    "{ pytest -q; true; } && echo ok",
    "sh -c 'pytest -q; exit 0'",
    "bash -c 'pytest -q || true'",
    "if pytest -q; then :; fi",
    "pytest -q & wait",
]
STRONG = [
    "pytest -q",
    "python -m pytest tests/test_add.py",
    "npm test",
    "go test ./...",
    "cargo test",
    "make test",
    "test -f README.md",
    "set -o pipefail; pytest -q | tee log.txt",
    "grep -n 'def add' calc.py",
    # a checkout or venv that lives in a directory named infomark is not infomark itself
    "/home/dev/src/infomark/.venv/bin/python check.py",
    "/tmp/ci/infomark/.venv/bin/pytest -q tests/",
    "(cd sub && pytest -q)",
    "sh -c 'pytest -q'",
    'pytest -k "a or (b)"',
    "pytest -q & wait $!",
]


@pytest.mark.parametrize("oracle", WEAK)
def test_weak_oracles_are_refused_at_declaration(gk: Gatekeeper, oracle: str) -> None:
    assert weakness(oracle) is not None
    report = gk.ingest(_claim(oracle))
    codes = [d.get("code") for d in report.diagnostics]
    assert "weak_oracle" in codes
    assert any("weak_oracle" in d["message"] for d in report.diagnostics)
    call = ToolCall("bash", {"command": oracle})
    decision = gk.authorize(call)
    if decision.allowed:  # even its own run cannot ground the claim
        ev = gk.record(call, ToolOutcome("ok", exit_code=0), call_id=decision.call_id)
        assert _rejected(gk, stamp("C1", ev.ref)) == ["weak_oracle"]
    else:  # a write, or a call into infomark: it does not even run
        assert decision.code in ("ungrounded_premises", "self_invocation", "protected_path") or (
            "infomark" in decision.reason or "ledger home" in decision.reason
        )
    assert gk.ledger().status("C1") == "Hypothetical"


def test_an_oracle_that_runs_the_installed_package_files_is_weak() -> None:
    """Spelling infomark's own files by their installed path is still calling infomark."""
    package = Path(infomark.__file__).resolve().parent
    assert weakness(f"python3 {package / 'cli' / 'entry.py'} record") is not None
    assert weakness(f"cat {package / 'kernel' / 'reasons.py'}") is not None


@pytest.mark.parametrize("oracle", STRONG)
def test_real_oracles_are_accepted(oracle: str) -> None:
    assert weakness(oracle) is None


@pytest.mark.parametrize(
    "output",
    [
        "no tests ran in 0.01s",
        "collected 0 items\n\n=== no tests ran ===",
        "running 0 tests\ntest result: ok. 0 passed",
        "Ran 0 tests in 0.000s\n\nOK",
        "ok  \texample\t[no test files]",
        "No tests found, exiting with code 0",
    ],
)
def test_a_pass_that_ran_no_test_grounds_nothing(gk: Gatekeeper, output: str) -> None:
    assert ran_nothing(output)
    gk.ingest(_claim("pytest -q"))
    ev = run(gk, "pytest -q", output=output)
    assert _rejected(gk, stamp("C1", ev.ref)) == ["weak_oracle"]
    assert not ran_nothing("3 passed in 0.02s")


def test_pytest_exit_5_is_a_fail(gk: Gatekeeper) -> None:
    gk.ingest(_claim("pytest -q -k nothing"))
    ev = run(gk, "pytest -q -k nothing", exit_code=5, output="5 deselected")
    assert ev.outcome.value == "FAIL"
    assert _rejected(gk, stamp("C1", ev.ref)) == ["failed_evidence"]


def test_the_operator_allow_list_pins_the_oracles(home: Path, project: Path) -> None:
    cfg = replace(Config(), oracle_allow=("pytest*",))
    with Gatekeeper.open(home, "pinned", root=project, config=cfg) as gk:
        report = gk.ingest(_claim("make check"))
        assert [d.get("code") for d in report.diagnostics] == ["oracle_not_allowed"]
        ev = run(gk, "make check")
        assert _rejected(gk, stamp("C1", ev.ref)) == ["oracle_not_allowed"]
        gk.ingest(_claim("pytest -q", cid="C2"))
        assert _rejected(gk, stamp("C2", run(gk, "pytest -q").ref)) == []


def test_the_operator_require_list_decides_the_finish(home: Path, project: Path) -> None:
    # the require list, not attested grounding: the operator's opt-out (helpers.OWN_RUNS)
    cfg = replace(OWN_RUNS, oracle_require=("pytest -q",))
    with Gatekeeper.open(home, "req", root=project, config=cfg) as gk:
        ledger = ledger_text(
            ("P0", "Guess", "make check"), ("C1", "Guess", "make lint"), premises=("P0",)
        )
        gk.ingest(ledger)
        gk.ingest(stamp("P0", run(gk, "make check").ref))  # the premise the edit rests on
        observed(gk, ToolCall("Edit", {"file_path": "a.py"}), ToolOutcome("edited"))
        gk.ingest(stamp("C1", run(gk, "make lint").ref))
        fin = gk.can_finish("")
        assert not fin.allow and fin.code == "required_oracle" and "`pytest -q`" in fin.reason
        gk.ingest(
            ledger_text(
                ("P0", "Guess", "make check"),
                ("C1", "Guess", "make lint"),
                ("C2", "Guess", "pytest -q"),
                premises=("P0",),
            )
        )
        gk.ingest(stamp("C2", run(gk, "pytest -q").ref))
        assert gk.can_finish("").allow


def test_the_audit_shows_each_grounded_claim_with_the_command_it_ran(gk: Gatekeeper) -> None:
    gk.ingest(_claim("pytest -q"))
    gk.ingest(stamp("C1", run(gk, "pytest   -q").ref))
    row = gk.audit().claims[0]
    assert (row["oracle"], row["ran"]) == ("pytest -q", "pytest -q")
    assert row["ran_in"] == str(gk.store.root)

"""Every refusal names its code and the one next step, and that step is one infomark accepts.

For each refusal code: drive a real session (a git project, real runs) into it, check the
message names the code and a fix, follow the fix exactly as written, and check the session
moved forward (the refusal is gone, or a later one stands in its place). And for any ledger an
agent may write (weak oracles, ``expect: FAIL`` claims): every command a refusal tells it to
run passes infomark's own oracle judge, and every ``result=`` it tells it to stamp is the one
the claim's expectation needs.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from helpers import OWN_RUNS_TOML
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.gates.oracles import weakness
from infomark.ledger.calls import ToolCall, ToolOutcome

STRONG = ("python3 check.py", "sh check.sh")
# the oracles here are scripts, not test runners: the refusals are graded on the agent's own
# runs (the operator's explicit opt-out of attested runs; their default is tested in
# tests/tools/test_attest_default_api.py and tests/security/test_attest_default.py)
VERIFY_SH = 'profile = "verify"\n[oracles]\nrequire = ["sh check.sh"]\n' + OWN_RUNS_TOML
WEAK = ("python3 check.py || true", "true", "python3 check.py | tail -1", "echo ok")


def project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text("VALUE = 1\n")
    (root / "check.py").write_text("import app, sys\nsys.exit(0 if app.VALUE == 2 else 1)\n")
    (root / "check.sh").write_text("python3 check.py\n")
    (root / "infomark.toml").write_text(OWN_RUNS_TOML)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "s"], check=True)
    return root


def run(gk: Gatekeeper, root: Path, command: str) -> str:
    call = ToolCall("Bash", {"command": command}, cwd=str(root))
    decision = gk.authorize(call)
    assert decision.allowed, decision.reason
    proc = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True)
    outcome = ToolOutcome(proc.stdout + proc.stderr, exit_code=proc.returncode)
    return gk.record(call, outcome, call_id=decision.call_id).ref


def edit(gk: Gatekeeper, root: Path, value: int = 2) -> str:
    call = ToolCall(
        "Edit",
        {"file_path": str(root / "app.py"), "old_string": "VALUE", "new_string": "VALUE"},
        cwd=str(root),
    )
    decision = gk.authorize(call)
    if decision.allowed:
        (root / "app.py").write_text(f"VALUE = {value}\n")
        gk.record(call, ToolOutcome("ok"), call_id=decision.call_id)
    return f"[{decision.code}] {decision.reason}" if not decision.allowed else ""


def ledger(*claims: tuple[str, str, str | None], premises: str = "C1", done: str = "") -> str:
    rows = []
    for cid, oracle, expect in claims:
        tail = f", expect: {expect}" if expect else ""
        rows.append(
            f'    - {{id: {cid}, text: "claim {cid}", status: Hypothetical, '
            f'falsifier: "it fails", oracle: "{oracle}"{tail}}}'
        )
    text = "claim_ledger:\n  claims:\n" + "\n".join(rows) + f"\n  premises_for_plan: [{premises}]\n"
    return text + (f"  done_when: [{done}]\n" if done else "")


def suggested_runs(text: str) -> list[str]:
    return re.findall(r"(?:run|re-run) `([^`]+)`", text)


def suggested_results(text: str) -> dict[str, str]:
    return dict(re.findall(r"claim_id=(\w+) evidence_ref=ev_… result=(\w+)", text))


# -- every suggestion passes infomark's own checks ------------------------------------------
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    oracles=st.lists(st.sampled_from(STRONG + WEAK), min_size=1, max_size=3),
    expects=st.lists(st.sampled_from([None, "FAIL"]), min_size=3, max_size=3),
)
def test_every_suggested_oracle_and_result_passes_infomarks_own_checks(
    tmp_path_factory: object, oracles: list[str], expects: list[str | None]
) -> None:
    import tempfile

    root = project(Path(tempfile.mkdtemp()) / "p")
    gk = Gatekeeper.open(root / ".infomark", "prop", root=root)
    claims = [(f"C{i + 1}", o, expects[i]) for i, o in enumerate(oracles)]
    ids = ", ".join(c[0] for c in claims)
    gk.ingest(ledger(*claims, premises=ids, done=ids))
    texts = [edit(gk, root), gk.can_finish("Done.").reason]
    expect = {cid: e for cid, _, e in claims}
    for text in texts:
        for command in suggested_runs(text):
            assert weakness(command) is None, (command, text)
        for cid, result in suggested_results(text).items():
            assert result == ("EXPECTED_FAIL" if expect[cid] == "FAIL" else "PASS"), text
    gk.close()


# -- each refusal code: named, with a fix that moves the session forward -----------------
def test_no_ledger_then_ungrounded_premises_then_grounded(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        denied = edit(gk, root)
        assert denied.startswith("[no_ledger]") and "claim_ledger:" in denied
        gk.ingest(ledger(("C1", "python3 check.py", "FAIL")))  # the template, filled in
        denied = edit(gk, root)
        assert denied.startswith("[ungrounded_premises]")  # moved on: a later refusal
        (command,) = suggested_runs(denied)
        ref = run(gk, root, command)
        result = suggested_results(denied)["C1"]
        assert result == "EXPECTED_FAIL"
        gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result={result}")
        assert edit(gk, root) == ""  # allowed: the fix worked


def test_expectation_mismatch_tells_the_result_that_works(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        gk.ingest(ledger(("C1", "python3 check.py", "FAIL")))
        ref = run(gk, root, "python3 check.py")
        report = gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS")
        (rejected,) = report.stamps_rejected
        assert rejected["reason"] == "expectation_mismatch"
        assert "result=EXPECTED_FAIL" in rejected["message"]
        assert "a passing run" not in rejected["message"]  # the run failed
        report = gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=EXPECTED_FAIL")
        assert report.stamps_applied and gk.ledger().status("C1") == "Exact"


def test_weak_oracle_is_never_suggested_and_redeclaring_moves_forward(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        gk.ingest(ledger(("C1", "python3 check.py || true", None)))
        denied = edit(gk, root)
        assert "weak_oracle" in denied and "re-declare C1" in denied
        assert suggested_runs(denied) == []
        gk.ingest(ledger(("C1", "python3 check.py", "FAIL")))
        denied = edit(gk, root)
        assert suggested_runs(denied) == ["python3 check.py"]


def _grounded_and_edited(gk: Gatekeeper, root: Path) -> None:
    gk.ingest(ledger(("C1", "python3 check.py", "FAIL"), ("C2", "sh check.sh", None), done="C2"))
    ref = run(gk, root, "python3 check.py")
    gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=EXPECTED_FAIL")
    assert edit(gk, root) == ""


def test_completion_without_evidence_then_stale_then_allowed(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        _grounded_and_edited(gk, root)
        fin = gk.can_finish("Done.")
        assert not fin.allow and fin.code == "completion_without_evidence"
        assert "[completion_without_evidence]" in fin.reason
        (command,) = suggested_runs(fin.reason)
        ref = run(gk, root, command)
        result = suggested_results(fin.reason)["C2"]
        gk.ingest(f"oracle_stamp: claim_id=C2 evidence_ref={ref} result={result}")
        assert edit(gk, root, value=2) == ""  # another edit: the stamp goes stale
        fin = gk.can_finish("Done.")
        assert not fin.allow and "[stale_evidence]" in fin.reason
        (command,) = [c for c in suggested_runs(fin.reason) if c == "sh check.sh"][:1]
        ref = run(gk, root, command)
        gk.ingest(f"oracle_stamp: claim_id=C2 evidence_ref={ref} result=PASS")
        assert gk.can_finish("Done.").allow


def test_check_failed_and_required_oracle_in_the_verify_profile(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "infomark.toml").write_text(
        'profile = "verify"\n[oracles]\nrequire = ["sh check.sh"]\n' + OWN_RUNS_TOML
    )
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        assert edit(gk, root, value=3) == ""  # no ledger, no premises: allowed
        fin = gk.can_finish("Done.")
        assert fin.code == "required_oracle" and "run `sh check.sh`" in fin.reason
        run(gk, root, "sh check.sh")
        fin = gk.can_finish("Done.")
        assert fin.code == "check_failed" and "[check_failed]" in fin.reason
        assert edit(gk, root, value=2) == ""
        (command,) = suggested_runs(gk.can_finish("Done.").reason)
        run(gk, root, command)
        assert gk.can_finish("Done.").allow


def test_self_graded_names_the_file_and_restoring_it_moves_forward(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "infomark.toml").write_text(
        'profile = "verify"\n[oracles]\nrequire = ["python3 check.py"]\n' + OWN_RUNS_TOML
    )
    (root / "test_app.py").write_text("import app\n\ndef test_v():\n    assert app.VALUE == 2\n")
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        assert edit(gk, root, value=2) == ""
        original = (root / "test_app.py").read_text()
        run(gk, root, "sed -i 's/== 2/== 9/' test_app.py")
        run(gk, root, "python3 check.py")
        fin = gk.can_finish("Done.")
        assert not fin.allow and "[self_graded]" in fin.reason and "test_app.py" in fin.reason
        (root / "test_app.py").write_text(original)  # "Restore them"
        run(gk, root, "python3 check.py")
        assert gk.can_finish("Done.").allow


def test_the_parsers_diagnostic_reaches_the_python_api_and_its_denial(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    bad = (
        "claim_ledger:\n  claims:\n    - id: C1\n"
        '      text: "the tests pass\n      status: Guess\n  premises_for_plan: [C1]\n'
    )
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        report = gk.ingest(bad)
        (diag,) = [d for d in report.diagnostics if d["severity"] == "error"]
        assert (diag["line"], diag["column"]) == (4, 13) and diag["expected"]
        denied = edit(gk, root)
        assert denied.startswith("[no_ledger]") and "line 4, column 13" in denied
        assert '      text: "the tests pass\n' + " " * 16 + "^" in denied  # the caret
        fixed = 'pass"\n      falsifier: "x"\n      oracle: "sh check.sh"\n'
        gk.ingest(bad.replace("pass\n", fixed))
        assert "could not be read" not in edit(gk, root)  # fixed: the next refusal is another


def test_a_ledger_written_in_the_verify_profile_is_graded_as_usual(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "infomark.toml").write_text(VERIFY_SH)
    with Gatekeeper.open(root / ".infomark", "s", root=root) as gk:
        gk.ingest(ledger(("C1", "sh check.sh", None), premises="C1", done="C1"))
        assert edit(gk, root, value=3) == ""  # premises are not asked for in verify
        ref = run(gk, root, "sh check.sh")  # fails: VALUE is 3
        report = gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS")
        assert [r["reason"] for r in report.stamps_rejected] == ["failed_evidence"]
        fin = gk.can_finish("Done.")
        assert not fin.allow and "[check_failed]" in fin.reason
        assert "[completion_without_evidence]" in fin.reason  # the ledger's done_when too
        assert edit(gk, root, value=2) == ""
        ref = run(gk, root, "sh check.sh")
        gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS")
        fin = gk.can_finish("Done.")
        assert fin.allow and fin.extra["basis"] == "verified", fin.reason

"""``infomark demo``: a scripted agent walks through the gates on a real temp project.

Every tool call runs for real (subprocess, file edits) through ``gk.wrap``; the
agent's text is ingested exactly as an integration would. Each step checks the
verdict it expects, so the demo doubles as a smoke test (exit 1 if one differs).
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from infomark.kernel.errors import InfomarkError

__all__ = ["run_demo"]

_CALC = "def add(a, b):\n    return a - b  # bug\n"
_CHECK = "import sys\nfrom calc import add\n\nsys.exit(0 if add(2, 3) == 5 else 1)\n"


# The demo grades on the agent's own runs, and says so: its oracles (a grep, a script) are no
# test runner infomark's sandboxed runner reads a report from, and the demo runs on a machine
# with no sandbox too. A real project keeps the default (docs/security.md#attested-runs).
_CONFIG = """\
# The demo opts out of attested runs: its oracles are a grep and a script, not a test runner.
# The default ([attest] required) has infomark run each claim's oracle itself, sandboxed,
# before a claim is Exact; the agent's own runs then stamp Inferred at most.
[attest]
required = false
"""
_OPT_OUT = (
    "This demo opts out of attested runs ([attest] required = false in its infomark.toml): "
    "the agent's own runs ground its claims here. By default infomark runs a claim's oracle "
    "itself, sandboxed, before the claim is Exact (docs/security.md#attested-runs)."
)


class DemoFailed(InfomarkError):
    code = "demo_failed"
    exit_code = 1


def _ref(outcome: Any) -> str:
    m = re.search(r"evidence_ref=(ev_[0-9a-f]{24})", str(outcome.output))
    if not m:
        raise DemoFailed("no evidence tag on a tool result")
    return m.group(1)


def _prepare(project: Path) -> None:
    """The demo's project: the bug, its check, and a configuration that says how it grades."""
    from rich.markup import escape

    from infomark.cli.render import console

    project.mkdir()
    (project / "infomark.toml").write_text(_CONFIG)
    (project / "calc.py").write_text(_CALC)
    (project / "check.py").write_text(_CHECK)
    console.print(escape(_OPT_OUT))


def run_demo(*, keep: bool = False) -> None:
    from rich.markup import escape

    from infomark.cli.render import console, print_audit
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.calls import ToolCall
    from infomark.tools.builtin import make_builtins

    base = Path(tempfile.mkdtemp(prefix="infomark-demo-"))
    project = base / "project"
    home = project / ".infomark"
    _prepare(project)
    py = shlex.quote(sys.executable)
    oracle_c1 = "grep -n 'def add' calc.py"
    oracle_c2 = f"{py} check.py"
    step_no = 0

    def step(title: str) -> None:
        nonlocal step_no
        step_no += 1
        console.print(f"\n[bold cyan]{step_no:2}. {escape(title)}[/]")

    def expect(cond: bool, what: str) -> None:
        if not cond:
            raise DemoFailed(f"demo step {step_no} did not behave as expected: {what}")

    try:
        with Gatekeeper.open(home, "demo", root=project) as gk:
            tools = {name: gk.wrap(fn) for name, fn in make_builtins(project).items()}

            def call(tool: str, **inp: Any) -> Any:
                out = tools[tool](ToolCall(tool=tool, input=inp))
                lines = str(out.output).strip().splitlines()
                head = "[red]error[/] " if out.is_error else ""
                target = inp.get("command") or inp.get("file_path")
                console.print(f"   {tool} {escape(str(target))}: {head}{escape(lines[0][:110])}")
                if len(lines) > 1:
                    console.print(f"   {escape(lines[-1])}")
                return out

            def say(text: str) -> Any:
                report = gk.ingest(text)
                for d in report.demoted:
                    console.print(f"   [yellow]demoted[/] {d}: self-graded without a stamp")
                for s in report.stamps_applied:
                    console.print(f"   [green]stamp applied[/] {s['claim_id']} → {s['status']}")
                for s in report.stamps_rejected:
                    console.print(f"   [red]stamp rejected[/] {s['claim_id']}: {s['reason']}")
                for i in report.invalidated:
                    console.print(f"   [red]revoked[/] {i['claim_id']} ({i['cause']}) → Unknown")
                return report

            step("The agent declares its ledger and self-grades C1 as Exact")
            r = say(
                "I'll fix add().\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
                '      text: "add() is defined in calc.py"\n      status: Exact\n'
                '      falsifier: "grep finds no def add"\n'
                f'      oracle: "{oracle_c1}"\n    - id: C2\n'
                '      text: "check.py passes after the fix"\n      status: Hypothetical\n'
                '      falsifier: "check.py exits non-zero"\n'
                f'      oracle: "{oracle_c2}"\n    - id: C3\n'
                '      text: "calc.py carries a bug marker"\n      status: Guess\n'
                "      falsifier: \"no '# bug' in calc.py\"\n"
                "      observe: calc.py\n"
                "  premises_for_plan: [C1]\n  open_questions: [C2]\n"
            )
            expect(r.demoted == ["C1"], f"C1 demoted (got {r.demoted}, {r.diagnostics})")

            step("An edit while premise C1 is outside G is denied")
            out = call("edit", file_path="calc.py", old_string="a - b", new_string="a + b")
            expect(out.is_error and "ungrounded_premises" in str(out.output), "edit denied")

            step("A shell write (`echo x > calc.py`) is classified modify and denied too")
            out = call("bash", command="echo x > calc.py")
            expect(out.is_error, "bash write denied")

            step("The agent runs C1's declared oracle; the runtime issues signed evidence")
            ev_c1 = _ref(call("bash", command=oracle_c1))

            step("It binds the evidence with an oracle_stamp: C1 becomes Exact")
            say(f"oracle_stamp: claim_id=C1 evidence_ref={ev_c1} result=PASS")
            expect(gk.ledger().status("C1") == "Exact", "C1 Exact")

            step("A forged record (a result infomark never authorized) yields no evidence")
            from infomark.kernel.errors import RecordRefused
            from infomark.ledger.calls import ToolOutcome

            forged = ToolCall(tool="bash", input={"command": oracle_c2})
            try:
                gk.record(forged, ToolOutcome("ok", exit_code=0), call_id="made-up")
            except RecordRefused as exc:
                console.print(f"   [red]refused[/] ({exc.code}): {escape(str(exc)[:90])}")
            else:
                expect(False, "forged record refused")

            step("An inference_stamp from a read of the file C3 observes makes C3 Inferred")
            ev_read = _ref(call("read", file_path="calc.py"))
            say(f"inference_stamp: claim_id=C3 evidence_ref={ev_read}")
            expect(gk.ledger().status("C3") == "Inferred", "C3 Inferred")

            step("The edit is now allowed")
            out = call("edit", file_path="calc.py", old_string="a - b  # bug", new_string="a + b")
            expect(not out.is_error, "edit allowed")

            step("Divergence: a new read shows the bug marker is gone; C3 is revoked")
            ev_read2 = _ref(call("read", file_path="calc.py"))
            say(f"divergence_event: claim_id=C3 evidence_ref={ev_read2}")
            expect(gk.ledger().status("C3") == "Unknown", "C3 Unknown")

            step("Forged stamps are rejected, each with its reason code")
            r = say(
                "oracle_stamp: claim_id=C2 evidence_ref=ev_0123456789abcdef01234567 result=PASS\n"
                "\n"
                f"oracle_stamp: claim_id=C2 evidence_ref={ev_c1} result=PASS\n"
                "\n"
                "oracle_stamp: C2 PASS\n"
            )
            reasons = [s["reason"] for s in r.stamps_rejected]
            expect(
                reasons == ["unknown_evidence", "oracle_mismatch", "missing_evidence"],
                f"forgeries rejected ({reasons})",
            )

            step("Any stop after the edit is refused: nothing is Exact on evidence newer than it")
            fin = gk.can_finish("Done, all tests pass.")
            console.print(f"   [red]refused[/]: {escape(fin.reason[:160])}…")
            expect(not fin.allow and fin.code == "completion_without_evidence", "finish refused")

            step("The agent re-runs both oracles and stamps the fresh evidence")
            ev_c2 = _ref(call("bash", command=oracle_c2))
            ev_c1b = _ref(call("bash", command=oracle_c1))
            say(
                f"oracle_stamp: claim_id=C2 evidence_ref={ev_c2} result=PASS\n\n"
                f"oracle_stamp: claim_id=C1 evidence_ref={ev_c1b} result=PASS\n"
            )

            step("Now it may finish")
            fin = gk.can_finish("Done: check.py passes (C2 is Exact).")
            console.print(f"   [green]allowed[/]: {escape(fin.reason)}")
            expect(fin.allow, "finish allowed")

            step("Audit: every claim's rank and why; the journal verifies")
            report = gk.audit(verify=True)
            print_audit(report.to_dict())
            expect(report.verified is True, "journal verifies")
    finally:
        if keep:
            console.print(f"\nkept: {base}  (try: infomark audit --home {home} --session demo)")
        else:
            shutil.rmtree(base, ignore_errors=True)

"""``infomark demo``: a scripted agent walks through the gates on a real temp project.

Every tool call runs for real (subprocess, file edits) through ``gk.wrap``; the
agent's text is ingested exactly as an integration would. Each step checks the
verdict it expects, so the demo doubles as a smoke test (exit 1 if one differs).
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from infomark.cli.render import console
from infomark.kernel.decisions import DecisionCode, FinishCode
from infomark.kernel.errors import InfomarkError
from infomark.kernel.infomark import InfoMark
from infomark.ledger.evidence import TAGGED_REF

if TYPE_CHECKING:  # annotations only
    from infomark.gatekeeper import Gatekeeper

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
    m = TAGGED_REF.search(str(outcome.output))
    if not m:
        raise DemoFailed("no evidence tag on a tool result")
    return m.group(1)


def _prepare(project: Path) -> None:
    """The demo's project: the bug, its check, and a configuration that says how it grades."""
    project.mkdir()
    (project / "infomark.toml").write_text(_CONFIG)
    (project / "calc.py").write_text(_CALC)
    (project / "check.py").write_text(_CHECK)
    console.print(escape(_OPT_OUT))


def run_demo(*, keep: bool = False) -> None:
    """The demo: :data:`SCENES` in order, in one session on a fresh temp project (removed
    after, unless ``keep``)."""
    from infomark.gatekeeper import Gatekeeper

    base = Path(tempfile.mkdtemp(prefix="infomark-demo-"))
    project = base / "project"
    home = project / ".infomark"
    _prepare(project)
    try:
        with Gatekeeper.open(home, "demo", root=project) as gk:
            demo = _Demo(gk, project)
            for title, scene in SCENES:
                demo.step(title)
                scene(demo)
    finally:
        if keep:
            console.print(f"\nkept: {base}  (try: infomark audit --home {home} --session demo)")
        else:
            shutil.rmtree(base, ignore_errors=True)


class _Demo:
    """The demo's session: the gatekeeper, its wrapped tools, the step being shown, and the
    evidence refs a later scene stamps."""

    def __init__(self, gk: Gatekeeper, project: Path) -> None:
        from infomark.tools.builtin import make_builtins

        self.gk = gk
        self.tools = {name: gk.wrap(fn) for name, fn in make_builtins(project).items()}
        self.step_no = 0
        self.oracle_c1 = "grep -n 'def add' calc.py"
        self.oracle_c2 = f"{shlex.quote(sys.executable)} check.py"
        self.refs: dict[str, str] = {}

    def step(self, title: str) -> None:
        self.step_no += 1
        console.print(f"\n[bold cyan]{self.step_no:2}. {escape(title)}[/]")

    def expect(self, cond: bool, what: str) -> None:
        if not cond:
            raise DemoFailed(f"demo step {self.step_no} did not behave as expected: {what}")

    def call(self, tool: str, **inp: Any) -> Any:
        """Run ``tool`` through the gatekeeper; show the first and last line of its result."""
        from infomark.ledger.calls import ToolCall

        out = self.tools[tool](ToolCall(tool=tool, input=inp))
        lines = str(out.output).strip().splitlines()
        head = "[red]error[/] " if out.is_error else ""
        target = inp.get("command") or inp.get("file_path")
        console.print(f"   {tool} {escape(str(target))}: {head}{escape(lines[0][:110])}")
        if len(lines) > 1:
            console.print(f"   {escape(lines[-1])}")
        return out

    def say(self, text: str) -> Any:
        """Ingest the agent's ``text``; show what the ledger did with it."""
        report = self.gk.ingest(text)
        for d in report.demoted:
            console.print(f"   [yellow]demoted[/] {d}: self-graded without a stamp")
        for s in report.stamps_applied:
            console.print(f"   [green]stamp applied[/] {s['claim_id']} → {s['status']}")
        for s in report.stamps_rejected:
            console.print(f"   [red]stamp rejected[/] {s['claim_id']}: {s['reason']}")
        for i in report.invalidated:
            console.print(f"   [red]revoked[/] {i['claim_id']} ({i['cause']}) → Unknown")
        return report


def _declare_ledger(d: _Demo) -> None:
    """The ledger: C1 self-graded Exact (demoted), C2 an open question, C3 observes calc.py."""
    r = d.say(
        "I'll fix add().\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
        '      text: "add() is defined in calc.py"\n      status: Exact\n'
        '      falsifier: "grep finds no def add"\n'
        f'      oracle: "{d.oracle_c1}"\n    - id: C2\n'
        '      text: "check.py passes after the fix"\n      status: Hypothetical\n'
        '      falsifier: "check.py exits non-zero"\n'
        f'      oracle: "{d.oracle_c2}"\n    - id: C3\n'
        '      text: "calc.py carries a bug marker"\n      status: Guess\n'
        "      falsifier: \"no '# bug' in calc.py\"\n"
        "      observe: calc.py\n"
        "  premises_for_plan: [C1]\n  open_questions: [C2]\n"
    )
    d.expect(r.demoted == ["C1"], f"C1 demoted (got {r.demoted}, {r.diagnostics})")


def _edit_denied(d: _Demo) -> None:
    out = d.call("edit", file_path="calc.py", old_string="a - b", new_string="a + b")
    d.expect(out.is_error and DecisionCode.UNGROUNDED_PREMISES in str(out.output), "edit denied")


def _shell_write_denied(d: _Demo) -> None:
    out = d.call("bash", command="echo x > calc.py")
    d.expect(out.is_error, "bash write denied")


def _run_c1s_oracle(d: _Demo) -> None:
    d.refs["c1"] = _ref(d.call("bash", command=d.oracle_c1))


def _stamp_c1(d: _Demo) -> None:
    d.say(f"oracle_stamp: claim_id=C1 evidence_ref={d.refs['c1']} result=PASS")
    d.expect(d.gk.ledger().status("C1") == InfoMark.EXACT.label, "C1 Exact")


def _forged_record(d: _Demo) -> None:
    from infomark.kernel.errors import RecordRefused
    from infomark.ledger.calls import ToolCall, ToolOutcome

    forged = ToolCall(tool="bash", input={"command": d.oracle_c2})
    try:
        d.gk.record(forged, ToolOutcome("ok", exit_code=0), call_id="made-up")
    except RecordRefused as exc:
        console.print(f"   [red]refused[/] ({exc.code}): {escape(str(exc)[:90])}")
    else:
        d.expect(False, "forged record refused")


def _infer_c3(d: _Demo) -> None:
    ev_read = _ref(d.call("read", file_path="calc.py"))
    d.say(f"inference_stamp: claim_id=C3 evidence_ref={ev_read}")
    d.expect(d.gk.ledger().status("C3") == InfoMark.INFERRED.label, "C3 Inferred")


def _edit_allowed(d: _Demo) -> None:
    out = d.call("edit", file_path="calc.py", old_string="a - b  # bug", new_string="a + b")
    d.expect(not out.is_error, "edit allowed")


def _diverge_c3(d: _Demo) -> None:
    ev_read2 = _ref(d.call("read", file_path="calc.py"))
    d.say(f"divergence_event: claim_id=C3 evidence_ref={ev_read2}")
    d.expect(d.gk.ledger().status("C3") == InfoMark.UNKNOWN.label, "C3 Unknown")


def _forged_stamps(d: _Demo) -> None:
    """An unknown ref, another claim's evidence, and no ref at all."""
    r = d.say(
        "oracle_stamp: claim_id=C2 evidence_ref=ev_0123456789abcdef01234567 result=PASS\n"
        "\n"
        f"oracle_stamp: claim_id=C2 evidence_ref={d.refs['c1']} result=PASS\n"
        "\n"
        "oracle_stamp: C2 PASS\n"
    )
    reasons = [s["reason"] for s in r.stamps_rejected]
    d.expect(
        reasons == ["unknown_evidence", "oracle_mismatch", "missing_evidence"],
        f"forgeries rejected ({reasons})",
    )


def _stop_refused(d: _Demo) -> None:
    fin = d.gk.can_finish("Done, all tests pass.")
    console.print(f"   [red]refused[/]: {escape(fin.reason[:160])}…")
    d.expect(not fin.allow and fin.code == FinishCode.COMPLETION_WITHOUT_EVIDENCE, "finish refused")


def _rerun_and_stamp(d: _Demo) -> None:
    ev_c2 = _ref(d.call("bash", command=d.oracle_c2))
    ev_c1b = _ref(d.call("bash", command=d.oracle_c1))
    d.say(
        f"oracle_stamp: claim_id=C2 evidence_ref={ev_c2} result=PASS\n\n"
        f"oracle_stamp: claim_id=C1 evidence_ref={ev_c1b} result=PASS\n"
    )


def _finish_allowed(d: _Demo) -> None:
    fin = d.gk.can_finish("Done: check.py passes (C2 is Exact).")
    console.print(f"   [green]allowed[/]: {escape(fin.reason)}")
    d.expect(fin.allow, "finish allowed")


def _audit(d: _Demo) -> None:
    from infomark.cli.render import print_audit

    report = d.gk.audit(verify=True)
    print_audit(report.to_dict())
    d.expect(report.verified is True, "journal verifies")


#: ``(title, scene)``: the demo, in order; each scene checks the verdict it shows
SCENES: tuple[tuple[str, Callable[[_Demo], None]], ...] = (
    ("The agent declares its ledger and self-grades C1 as Exact", _declare_ledger),
    ("An edit while premise C1 is outside G is denied", _edit_denied),
    ("A shell write (`echo x > calc.py`) is classified modify and denied too", _shell_write_denied),
    ("The agent runs C1's declared oracle; the runtime issues signed evidence", _run_c1s_oracle),
    ("It binds the evidence with an oracle_stamp: C1 becomes Exact", _stamp_c1),
    ("A forged record (a result infomark never authorized) yields no evidence", _forged_record),
    ("An inference_stamp from a read of the file C3 observes makes C3 Inferred", _infer_c3),
    ("The edit is now allowed", _edit_allowed),
    ("Divergence: a new read shows the bug marker is gone; C3 is revoked", _diverge_c3),
    ("Forged stamps are rejected, each with its reason code", _forged_stamps),
    (
        "Any stop after the edit is refused: nothing is Exact on evidence newer than it",
        _stop_refused,
    ),
    ("The agent re-runs both oracles and stamps the fresh evidence", _rerun_and_stamp),
    ("Now it may finish", _finish_allowed),
    ("Audit: every claim's rank and why; the journal verifies", _audit),
)

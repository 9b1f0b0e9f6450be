"""``infomark run --demo``: the runner against the scripted model, offline, on a temp project.

The script is a whole session: a ledger with a self-graded premise, an edit denied while
it is outside G, a premature "done" refused, the oracle run and stamped, the edit allowed,
both oracles re-run and stamped, a post-turn trigger fired at the first honest finish, the
review it asks for, and the finish allowed. The scripted server is a real HTTP server on
127.0.0.1; no other network. The steps assert what the runtime must have answered, so
a regression fails the demo (exit 1) instead of printing a wrong story.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infomark.kernel.decisions import DecisionCode
from infomark.kernel.errors import InfomarkError
from infomark.tools.runner.agentfile import AgentSpec, ModelSpec
from infomark.tools.runner.scripted import (
    Request,
    ScriptedModelServer,
    Step,
    call,
    evidence_refs,
    reply,
    tool_results,
)

__all__ = ["TRIGGER_TOML", "DemoFailed", "fix_script", "prepare_project", "run_runner_demo"]

CALC = "def add(a, b):\n    return a - b  # bug\n"
CHECK = "import sys\nfrom calc import add\n\nsys.exit(0 if add(2, 3) == 5 else 1)\n"
TRIGGER_TOML = """\
# The demo's oracles are a grep and a script, not a test runner: it grades on the agent's own
# runs and says so. By default infomark runs each oracle itself, sandboxed, before a claim is
# Exact (docs/security.md#attested-runs); `required = false` is the explicit opt-out.
[attest]
required = false

[[triggers]]
name = "review-edit"
when = {file_edited = "calc.py"}
prompt = "You edited calc.py: read it once more and confirm the change is the one you meant."
requires_read = ["calc.py"]
"""


class DemoFailed(InfomarkError):
    code = "demo_failed"
    exit_code = 1


def prepare_project(project: Path) -> None:
    project.mkdir(parents=True, exist_ok=True)
    (project / "calc.py").write_text(CALC)
    (project / "check.py").write_text(CHECK)
    (project / "infomark.toml").write_text(TRIGGER_TOML)


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise DemoFailed(f"the runtime did not answer as the script expects: {what}")


def fix_script(python: str = sys.executable) -> list[Step]:
    """The scripted model's side of the demo session (a list of steps for one session)."""
    py = shlex.quote(python)
    grep = "grep -n 'def add' calc.py"
    check = f"{py} check.py"
    ledger = (
        "I'll fix add().\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
        '      text: "add() is defined in calc.py"\n      status: Exact\n'
        '      falsifier: "grep finds no def add"\n'
        f'      oracle: "{grep}"\n    - id: C2\n'
        '      text: "check.py passes after the fix"\n      status: Hypothetical\n'
        '      falsifier: "check.py exits non-zero"\n'
        f'      oracle: "{check}"\n'
        "  premises_for_plan: [C1]\n  open_questions: [C2]\n"
    )
    fix = {"file_path": "calc.py", "old_string": "a - b  # bug", "new_string": "a + b"}

    def after_denial(req: Request) -> dict[str, Any]:
        denied = any(DecisionCode.UNGROUNDED_PREMISES in t for t in tool_results(req))
        _expect(denied, "the edit was denied")
        return reply("Done, all tests pass.")

    def after_refusal(req: Request) -> dict[str, Any]:
        last = str(req.last.get("content") or "")
        _expect("finish refused" in last, "the early finish was refused")
        return reply("", call("bash", command=grep))

    def stamp_and_edit(req: Request) -> dict[str, Any]:
        refs = evidence_refs(req)
        _expect(len(refs) == 1, "the oracle run carries an evidence_ref")
        return reply(
            f"oracle_stamp: claim_id=C1 evidence_ref={refs[0]} result=PASS", call("edit", **fix)
        )

    def rerun(req: Request) -> dict[str, Any]:
        _expect(
            not any("denied" in t for t in tool_results(req)),
            "the edit was allowed once C1 is Exact",
        )
        return reply("", call("bash", command=check), call("bash", command=grep))

    def stamp_both(req: Request) -> dict[str, Any]:
        refs = evidence_refs(req)
        _expect(len(refs) == 2, "both oracle runs carry evidence refs")
        return reply(
            f"oracle_stamp: claim_id=C2 evidence_ref={refs[0]} result=PASS\n\n"
            f"oracle_stamp: claim_id=C1 evidence_ref={refs[1]} result=PASS\n\n"
            "Done: check.py passes (C2 is Exact)."
        )

    def review(req: Request) -> dict[str, Any]:
        last = str(req.last.get("content") or "")
        _expect("review-edit" in last or "read it once more" in last, "the trigger fired")
        return reply("", call("read", file_path="calc.py"))

    return [
        reply(ledger, call("edit", **fix)),
        after_denial,
        after_refusal,
        stamp_and_edit,
        rerun,
        stamp_both,
        review,
        reply("Done: check.py passes (C2 is Exact); I re-read calc.py and the change is right."),
    ]


def run_runner_demo(*, keep: bool = False, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the demo session; returns the run result as a dict (DemoFailed if it went wrong)."""
    from infomark.tools.runner.loop import Runner

    base = Path(tempfile.mkdtemp(prefix="infomark-run-demo-"))
    project = base / "project"
    prepare_project(project)
    try:
        with ScriptedModelServer({"demo": fix_script()}) as server:
            spec = AgentSpec(
                name="demo",
                instructions="Fix add() in calc.py so that check.py passes.",
                model=ModelSpec(url=server.url, name="scripted", retries=0, timeout_seconds=30),
            )
            runner = Runner(
                spec, home=project / ".infomark", session="demo", root=project, echo=echo
            )
            try:
                result = runner.start("Fix add() in calc.py; check.py must pass.")
                audit = runner.gk.audit(verify=True)
            finally:
                runner.close()
            errors = [r for r in server.requests if r.session != "demo"]
            _expect(not errors, "every request came from the demo session")
        _expect(result.reason == "finished" and bool(result.finish.get("allow")), "finish allowed")
        _expect(audit.verified is True, "the journal verifies")
        _expect((project / "calc.py").read_text().count("a + b") == 1, "calc.py is fixed")
        echo(
            f"finished: {result.finish.get('reason')}; journal verified; "
            f"{result.working_calls} model calls"
        )
        return result.to_dict()
    finally:
        if keep:
            echo(
                f"kept: {base}  (try: infomark audit --home {project / '.infomark'} --session demo)"
            )
        else:
            shutil.rmtree(base, ignore_errors=True)

"""A Chat Completions agent loop under infomark, in about 20 lines (docs/python-api.md).

``python examples/openai_chat_loop.py`` runs it offline: a scripted OpenAI-compatible model on
127.0.0.1 (infomark's test server) fixes a bug in a scratch project. Point ``BASE_URL`` at a real
OpenAI-compatible API (and set ``API_KEY``) to drive a real model with the same loop.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from infomark import Gatekeeper, make_builtins
from infomark.tools.adapters import OpenAIChat
from infomark.tools.runner.scripted import (
    Request,
    ScriptedModelServer,
    call,
    evidence_refs,
    reply,
    tool_results,
)

TOOLS = [  # the schema the model sees; the executors come from make_builtins
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command in the project.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit",
            "description": "Replace old_string with new_string in file_path.",
            "parameters": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                },
                "required": ["file_path", "old_string", "new_string"],
            },
        },
    },
]


# -- the loop (this block is the one shown in docs/python-api.md) -------------------------------
def run_agent(project: Path, base_url: str, task: str, api_key: str = "", model: str = "m") -> Any:
    gk = Gatekeeper.open(project / ".infomark", session="chat-loop", root=project)
    builtins = make_builtins(project)
    agent = OpenAIChat(gk, {"bash": builtins["bash"], "edit": builtins["edit"]})
    messages = [
        {"role": "system", "content": agent.system_prompt("You fix bugs. Prove what you claim.")},
        agent.user(task),
    ]
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
        for _ in range(20):
            body = {"model": model, "messages": messages, "tools": TOOLS}
            response = http.post("/chat/completions", json=body).raise_for_status().json()
            turn = agent.handle(response)  # ingest → gate each tool call → or the finish gate
            messages += turn.messages
            if turn.done:
                break
    gk.close()
    return turn


# -- end of the loop ----------------------------------------------------------------------------

CALC = "def add(a, b):\n    return a - b  # bug\n"
CHECK = "import sys\nfrom calc import add\n\nsys.exit(0 if add(2, 3) == 5 else 1)\n"


def script(python: str = sys.executable) -> list[Any]:
    """The scripted model's side: each step checks what infomark answered, then replies."""
    grep, check = "grep -n 'def add' calc.py", f"{shlex.quote(python)} check.py"
    ledger = (
        "I'll fix add().\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
        '      text: "add() is defined in calc.py"\n      status: Exact\n'
        f'      falsifier: "grep finds no def add"\n      oracle: "{grep}"\n    - id: C2\n'
        '      text: "check.py passes after the fix"\n      status: Hypothetical\n'
        f'      falsifier: "check.py exits non-zero"\n      oracle: "{check}"\n'
        "  premises_for_plan: [C1]\n  open_questions: [C2]\n"
    )
    fix = {"file_path": "calc.py", "old_string": "a - b  # bug", "new_string": "a + b"}

    def expect(cond: bool, what: str) -> None:
        if not cond:
            raise AssertionError(f"infomark did not answer as expected: {what}")

    def after_denial(req: Request) -> dict[str, Any]:
        expect(any("ungrounded_premises" in t for t in tool_results(req)), "edit denied")
        return reply("Done, all tests pass.")  # a premature finish

    def after_refusal(req: Request) -> dict[str, Any]:
        expect("finish refused" in str(req.messages[-1].get("content")), "finish refused")
        return reply("", call("bash", command=grep))

    def stamp_and_edit(req: Request) -> dict[str, Any]:
        (ref,) = evidence_refs(req)
        return reply(
            f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS", call("edit", **fix)
        )

    def rerun(req: Request) -> dict[str, Any]:
        expect(not any("denied" in t for t in tool_results(req)), "edit allowed once C1 is Exact")
        return reply("", call("bash", command=check), call("bash", command=grep))

    def stamp_both(req: Request) -> dict[str, Any]:
        c2, c1 = evidence_refs(req)
        return reply(
            f"oracle_stamp: claim_id=C2 evidence_ref={c2} result=PASS\n\n"
            f"oracle_stamp: claim_id=C1 evidence_ref={c1} result=PASS\n\n"
            "Done: check.py passes (C2 is Exact)."
        )

    return [reply(ledger, call("edit", **fix)), after_denial, after_refusal, stamp_and_edit,
            rerun, stamp_both]  # fmt: skip


# The example grades on the agent's own runs, and says so: its oracles are a grep and a script,
# not a test runner infomark's sandboxed runner reads a report from. A real project keeps the
# default, where infomark runs each oracle itself before a claim is Exact (docs/security.md).
OPT_OUT = "# the agent's own runs ground claims here (see above)\n[attest]\nrequired = false\n"


def prepare(project: Path) -> None:
    project.mkdir(parents=True, exist_ok=True)
    (project / "infomark.toml").write_text(OPT_OUT)
    (project / "calc.py").write_text(CALC)
    (project / "check.py").write_text(CHECK)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer({"": script()}) as server:
        project = Path(tmp) / "project"
        prepare(project)
        turn = run_agent(project, server.url, "Fix add() in calc.py; check.py must pass.")
        fixed = "a + b" in (project / "calc.py").read_text()
        print(f"finish allowed: {turn.done} ({turn.finish.code}); calc.py fixed: {fixed}")
        return 0 if turn.done and fixed else 1


if __name__ == "__main__":
    raise SystemExit(main())

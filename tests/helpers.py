"""Small builders shared by tests (plain functions, not fixtures)."""

from __future__ import annotations

import itertools

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger, call_digest
from infomark.ledger.evidence import Evidence

_IDS = itertools.count(1)

#: The operator's explicit opt-out of attested runs (``[attest] required = false``), for tests
#: whose subject is not grounding itself (finish rules, policies, hosts, the journal …): the
#: agent's own runs ground claims, and no test pays for a sandboxed run it does not test.
#: The default (attested runs required) is tested where grounding is the subject
#: (tests/tools/test_attest_default_api.py, tests/security/test_attest_default.py).
OWN_RUNS = Config(attest={"required": False})
#: the same, as infomark.toml text (append it to a test's own configuration)
OWN_RUNS_TOML = "[attest]\nrequired = false\n"


def pair(led: Ledger | Gatekeeper, call: ToolCall) -> str:
    """Journal an allow decision for ``call`` (what authorize() writes) and return its call id.

    For tests whose subject is what happens after a result is recorded, not the decision.
    """
    ledger = led.store if isinstance(led, Gatekeeper) else led
    cid = call.tool_call_id or f"test_call_{next(_IDS)}"
    with ledger.transaction():
        ledger.emit(
            "decision",
            {
                "decision": "allow",
                "tool": call.tool,
                "call_id": cid,
                "input_digest": call_digest(call),
            },
        )
    return cid


def record_paired(
    led: Ledger | Gatekeeper,
    call: ToolCall,
    outcome: ToolOutcome,
    *,
    tool_class: str | None = None,
) -> Evidence:
    """Pair ``call`` with an allow decision, then record its result."""
    cid = pair(led, call)
    return led.record(call, outcome, tool_class=tool_class, call_id=cid)


def ledger_text(
    *claims: tuple[str, str, str | None],
    premises: tuple[str, ...] = (),
    open_questions: tuple[str, ...] = (),
    falsifier: bool = True,
) -> str:
    """A claim_ledger block; each claim is (id, status, oracle)."""
    lines = ["claim_ledger:", "  claims:"]
    for cid, status, oracle in claims:
        lines.append(f"    - id: {cid}")
        lines.append(f'      text: "claim {cid} holds"')
        lines.append(f"      status: {status}")
        if falsifier:
            lines.append(f'      falsifier: "observe not-{cid}"')
        if oracle:
            lines.append(f'      oracle: "{oracle}"')
    lines.append(f"  premises_for_plan: [{', '.join(premises)}]")
    lines.append(f"  open_questions: [{', '.join(open_questions)}]")
    return "\n".join(lines) + "\n"


def observed(
    gk: Gatekeeper, call: ToolCall, outcome: ToolOutcome, *, tool_class: str | None = None
) -> Evidence:
    """What an integration does: authorize the call, then record its result under that id."""
    decision = gk.authorize(call, tool_class=tool_class)
    assert decision.verdict.value != "deny", decision.reason
    return gk.record(call, outcome, tool_class=tool_class, call_id=decision.call_id)


def run(gk: Gatekeeper, command: str, exit_code: int = 0, output: str = "ok") -> Evidence:
    return observed(
        gk,
        ToolCall(tool="bash", input={"command": command}),
        ToolOutcome(output=output, exit_code=exit_code),
    )


def read(gk: Gatekeeper, path: str = "a.py", output: str = "x = 1") -> Evidence:
    return observed(
        gk, ToolCall(tool="Read", input={"file_path": path}), ToolOutcome(output=output)
    )


def stamp(claim: str, ref: str, result: str = "PASS", kind: str = "oracle_stamp") -> str:
    if kind == "inference_stamp":
        return f"inference_stamp: claim_id={claim} evidence_ref={ref}\n"
    return f"{kind}: claim_id={claim} evidence_ref={ref} result={result}\n"


EDIT = ToolCall(tool="Edit", input={"file_path": "a.py", "old_string": "1", "new_string": "2"})


GROUND_ORACLE = "pytest -q tests/test_ground.py"


def grounded(gk: Gatekeeper, claim: str = "G1") -> None:
    """Declare one premise and ground it with a recorded PASS of its oracle (mutations allowed)."""
    gk.ingest(ledger_text((claim, "Hypothetical", GROUND_ORACLE), premises=(claim,)))
    gk.ingest(stamp(claim, run(gk, GROUND_ORACLE).ref))


def claude_sandbox_on(project: object) -> None:
    """Turn Claude Code's Bash sandbox on in ``project`` as `infomark install claude-code`
    does (its three switches): the hook then records the agent's commands as sandboxed."""
    import json
    from pathlib import Path

    from infomark.tools.install_sandbox import SWITCHES

    settings = Path(str(project)) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(settings.read_text()) if settings.exists() else {}
    data.setdefault("sandbox", {}).update(SWITCHES)
    settings.write_text(json.dumps(data))


def tamper_output(home: object, digest: str, how: str = "edit", data: bytes = b"forged") -> None:
    """What an agent with a shell does to a stored tool output in a SQLite home: ``edit``
    (write ``data`` in its place) or ``delete`` it, a row of ``ledger.db`` (a small output)
    or a file under ``blobs/``, whichever holds it."""
    import sqlite3
    from pathlib import Path

    hexd = digest.removeprefix("sha256:")
    path = Path(str(home)) / "blobs" / hexd[:2] / hexd[2:]
    if path.exists():
        if how == "delete":
            path.unlink()
        else:
            path.chmod(0o600)
            path.write_bytes(data)
        return
    db = sqlite3.connect(Path(str(home)) / "ledger.db")
    try:
        if how == "delete":
            cur = db.execute("DELETE FROM blobs WHERE digest = ?", (hexd,))
        else:
            cur = db.execute("UPDATE blobs SET data = ? WHERE digest = ?", (data, hexd))
        assert cur.rowcount == 1, f"no stored output {digest}"
        db.commit()
    finally:
        db.close()

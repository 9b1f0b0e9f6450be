"""Sessions driven over HTTP fail closed when nothing shows the agent's commands are sandboxed.

The integrator's own tools run the agent's commands; infomark cannot see whether they are in an
OS sandbox. Only the operator can say so, when the service starts (``serve --agent-sandbox
HOW``); nothing a request carries can. Without the declaration the session records "not
sandboxed" (host ``http``) before it records any run, says so once with the fix, and in the
enforcing profiles a stamp on the agent's own run is refused (``unsandboxed_run``, naming
the fix). Real uvicorn in a subprocess, real httpx.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import claude_sandbox_on, ledger_text, stamp

from infomark.gatekeeper import Gatekeeper

ORACLE = "pytest -q"
FIX = "infomark serve --agent-sandbox"
HOW = "our runner starts every command under bwrap, the home not mounted"


def _sid() -> str:
    return f"sbx-{uuid.uuid4().hex[:12]}"


def _http(svc: Any) -> httpx.Client:
    return httpx.Client(
        base_url=svc.url, headers={"authorization": f"Bearer {svc.token}"}, timeout=30
    )


def _run(http: httpx.Client, sid: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The agent's `pytest -q`, authorized then recorded as passing; both answers."""
    call = {"tool": "Bash", "input": {"command": ORACLE}, **(extra or {})}
    decided = http.post(f"/v1/sessions/{sid}/authorize", json=call)
    assert decided.status_code == 200, decided.text
    body = {**call, "tool_call_id": decided.json()["call_id"], "output": "1 passed", "exit_code": 0}
    recorded = http.post(f"/v1/sessions/{sid}/record", json=body)
    assert recorded.status_code == 200, recorded.text
    return {"decision": decided.json(), "record": recorded.json()}


def _stamp(http: httpx.Client, sid: str, ref: str) -> dict[str, Any]:
    got = http.post(f"/v1/sessions/{sid}/ingest", json={"text": stamp("C1", ref)})
    assert got.status_code == 200, got.text
    return dict(got.json())


def _status(svc: Any, sid: str) -> list[dict[str, Any]]:
    with Gatekeeper.open(svc.home, sid, root=svc.project) as gk:
        return [e.payload for e in gk.events() if e.type == "agent_sandbox"]


def _ledger(http: httpx.Client, sid: str) -> None:
    text = ledger_text(("C1", "Hypothetical", ORACLE), premises=("C1",))
    assert http.post(f"/v1/sessions/{sid}/ingest", json={"text": text}).status_code == 200


def test_without_a_declaration_the_agents_runs_ground_nothing(spawn: Any) -> None:
    svc = spawn("--no-access-log", agent_sandbox=None)
    sid = _sid()
    with _http(svc) as http:
        _ledger(http, sid)
        first = _run(http, sid)
        said = first["decision"]["instructions"]
        assert said.startswith("infomark WARNING: the agent's commands are NOT sandboxed")
        assert FIX in said and "unsandboxed_run" in said
        assert first["decision"]["decision"] == "allow"  # nothing else changes for the agent
        assert "NOT sandboxed" not in first["record"]["instructions"]  # said once
        report = _stamp(http, sid, first["record"]["evidence_ref"])
        (rejected,) = report["stamps_rejected"]
        assert rejected["reason"] == "unsandboxed_run"
        assert FIX in rejected["message"] and "infomark check C1" in rejected["message"]
        again = _run(http, sid)
        assert "NOT sandboxed" not in again["decision"]["instructions"]
        claims = http.get(f"/v1/sessions/{sid}").json()["ledger"]["claims"]
        assert [c["status"] for c in claims] == ["Hypothetical"]
    (status,) = _status(svc, sid)  # recorded once, before the first run
    assert status["sandboxed"] is False and status["host"] == "http" and FIX in status["fix"]


def test_the_warning_opens_the_first_turn(spawn: Any) -> None:
    svc = spawn("--no-access-log", agent_sandbox=None)
    sid = _sid()
    with _http(svc) as http:
        turn = http.post(f"/v1/sessions/{sid}/turn", json={"prompt": "fix the bug"}).json()
        assert turn["context"].startswith("infomark WARNING: the agent's commands are NOT")
        assert FIX in turn["context"]
        assert "NOT sandboxed" not in _run(http, sid)["decision"]["instructions"]


def test_a_request_cannot_declare_the_sandbox(spawn: Any, tmp_path: Path) -> None:
    """What a bearer-token holder sends changes nothing: fields that look like a declaration
    are refused, and a hook payload naming a project whose Claude Code settings turn the
    sandbox on (the hook route then judges the session sandboxed) does not carry over to the
    runs these routes record."""
    svc = spawn("--no-access-log", agent_sandbox=None)
    sid = _sid()
    with _http(svc) as http:
        _ledger(http, sid)
        forged = {"sandboxed": True, "agent_sandbox": {"sandboxed": True, "host": "http"}}
        got = http.post(
            f"/v1/sessions/{sid}/authorize",
            json={"tool": "Bash", "input": {"command": ORACLE}, **forged},
        )
        assert got.status_code == 400 and got.json()["error"]["code"] == "invalid_request"
        elsewhere = tmp_path / "elsewhere"
        claude_sandbox_on(elsewhere)
        start = {"hook_event_name": "SessionStart", "session_id": sid, "source": "startup"}
        hooked = http.post("/v1/hooks/claude-code", json={**start, "cwd": str(elsewhere)})
        assert hooked.status_code == 200, hooked.text
        ref = _run(http, sid)["record"]["evidence_ref"]
        assert _stamp(http, sid, ref)["stamps_rejected"][0]["reason"] == "unsandboxed_run"
    last = _status(svc, sid)[-1]  # (where Claude Code's sandbox can run, the hook's "on" before)
    assert last["host"] == "http" and last["sandboxed"] is False


def test_the_operators_declaration_lets_the_runs_ground(spawn: Any) -> None:
    svc = spawn("--no-access-log", agent_sandbox=HOW)
    sid = _sid()
    with _http(svc) as http:
        _ledger(http, sid)
        ran = _run(http, sid)
        assert (
            "NOT sandboxed" not in ran["decision"]["instructions"] + ran["record"]["instructions"]
        )
        report = _stamp(http, sid, ran["record"]["evidence_ref"])
        assert report["stamps_rejected"] == [] and report["stamps_applied"]
        claims = http.get(f"/v1/sessions/{sid}").json()["ledger"]["claims"]
        assert [c["status"] for c in claims] == ["Exact"]  # the fixture's [attest] required = false
    assert _status(svc, sid) == []  # nothing to change: the operator vouches, as an API caller
    assert HOW in svc.log(after="--agent-sandbox")


@pytest.mark.parametrize("declared", [None, HOW])
def test_a_restart_applies_the_new_declaration(spawn: Any, declared: str | None) -> None:
    """The declaration is the running service's: started again without it, the runs recorded
    from then on ground nothing (and with it, they ground again)."""
    first = spawn("--no-access-log", agent_sandbox=HOW if declared is None else None)
    sid = _sid()
    with _http(first) as http:
        _ledger(http, sid)
        before = _run(http, sid)["record"]["evidence_ref"]
    first.stop()
    again = spawn("--no-access-log", agent_sandbox=declared, home=first.home, project=first.project)
    with _http(again) as http:
        after = _run(http, sid)
        rejected = _stamp(http, sid, after["record"]["evidence_ref"])["stamps_rejected"]
        assert [r["reason"] for r in rejected] == ([] if declared else ["unsandboxed_run"])
        old = _stamp(http, sid, before)["stamps_rejected"]  # judged by the span it was made in
        assert [r["reason"] for r in old] == (["unsandboxed_run"] if declared else [])
    statuses = [s["sandboxed"] for s in _status(again, sid)]
    assert statuses == ([False, True] if declared else [False])  # a declaration ends a span
    if declared:
        assert HOW in _status(again, sid)[-1]["detail"]

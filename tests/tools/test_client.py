"""``infomark.client``: a remote ledger used exactly like a local one (real uvicorn, real httpx)."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import ledger_text

from infomark.client import AsyncClient, Client, ServiceError, ServiceUnavailable
from infomark.gatekeeper import Gatekeeper, GateView, LedgerView
from infomark.gates.decision import Decision, FinishDecision, Verdict
from infomark.kernel.errors import InfomarkError, UserError
from infomark.ledger.audit import AuditReport
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
from infomark.ledger.report import IngestReport

if TYPE_CHECKING:
    from conftest import Service

EDIT = ToolCall(tool="Edit", input={"file_path": "a.py", "old_string": "1", "new_string": "2"})
PYTEST = ToolCall(tool="Bash", input={"command": "pytest -q"})
PASSED = ToolOutcome(output="1 passed in 0.01s", exit_code=0)
LEDGER = ledger_text(("C1", "Exact", "pytest -q"), premises=("C1",))


def _run(c: Client | Gatekeeper, call: ToolCall, outcome: ToolOutcome) -> Evidence:
    """Authorize, then record under the call id the decision returned (as integrations do)."""
    decision = c.authorize(call)
    return c.record(call, outcome, call_id=decision.call_id)


def _stamp(ref: str) -> str:
    return f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS"


def test_demo_scenario_end_to_end(client: Client, service: Service) -> None:
    report = client.ingest(LEDGER)
    assert isinstance(report, IngestReport) and report.ledger_updated
    assert report.demoted == ["C1"]  # self-graded Exact without a runtime stamp

    denied = client.authorize(EDIT)
    assert isinstance(denied, Decision)
    assert denied.verdict is Verdict.DENY and "C1" in denied.reason

    ev = _run(client, PYTEST, PASSED)
    assert isinstance(ev, Evidence)
    assert ev.outcome is Outcome.PASS and ev.evidence_class is EvidenceClass.EXECUTION
    assert ev.tag.startswith(f"[infomark evidence_ref={ev.ref} ")

    stamped = client.ingest(_stamp(ev.ref))
    assert [s["claim_id"] for s in stamped.stamps_applied] == ["C1"]
    assert client.ledger().status("C1") == "Exact"
    assert client.authorize(EDIT).allowed

    _run(client, EDIT, ToolOutcome(output="edited a.py"))  # the edit makes C1's evidence stale
    refused = client.can_finish("Done, all tests pass.")
    assert isinstance(refused, FinishDecision)
    # C1 was grounded before the edit (a premise about the starting state): the finish asks
    # for fresh evidence after the edit and names the oracle to re-run
    assert not refused.allow and refused.code == "completion_without_evidence"
    assert "`pytest -q` (C1)" in refused.reason

    fresh = _run(client, PYTEST, PASSED)
    client.ingest(_stamp(fresh.ref))
    done = client.can_finish("Done, all tests pass.")
    assert done.allow, done.reason

    audit = client.audit(verify=True)
    assert isinstance(audit, AuditReport)
    assert audit.verified is True and audit.problems == []
    assert {c["id"]: c["status"] for c in audit.claims} == {"C1": "Exact"}

    # The remote views are the local facade's, value for value.
    with Gatekeeper.open(service.home, client.session, root=service.project) as local:
        assert client.ledger() == local.ledger()
        assert client.gate() == local.gate()
        assert client.audit().to_dict() == local.audit().to_dict()


def test_remote_and_local_answer_alike(client: Client, service: Service) -> None:
    """The same calls on a remote session and a local one (same home) give equal results."""
    local_session = client.session + "-local"
    with Gatekeeper.open(service.home, local_session, root=service.project) as local:
        for remote_r, local_r in (
            (client.ingest(LEDGER), local.ingest(LEDGER)),
            (client.authorize(EDIT), local.authorize(EDIT)),
        ):
            a, b = remote_r.to_dict(), local_r.to_dict()
            for key in ("decision_id", "call_id"):  # they name session and seq
                a.pop(key, None), b.pop(key, None)
            assert a == b
            assert type(remote_r) is type(local_r)
        ev_r, ev_l = _run(client, PYTEST, PASSED), _run(local, PYTEST, PASSED)
        assert (ev_r.seq, ev_r.outcome, ev_r.evidence_class, ev_r.output_digest) == (
            ev_l.seq,
            ev_l.outcome,
            ev_l.evidence_class,
            ev_l.output_digest,
        )
        assert ev_r.tag == ev_l.tag.replace(ev_l.ref, ev_r.ref)
        fin_r, fin_l = client.can_finish("Done."), local.can_finish("Done.")
        assert fin_r == fin_l


def test_wrap_gates_an_executor_like_the_facade(client: Client) -> None:
    ran: list[str] = []

    def run(call: ToolCall) -> ToolOutcome:
        ran.append(call.tool)
        return ToolOutcome(output="ok", exit_code=0 if call.tool == "Bash" else None)

    gated = client.wrap(run)
    client.ingest(LEDGER)
    denied = gated(EDIT)
    assert denied.denied and denied.code == "ungrounded_premises" and denied.is_error
    assert ran == []  # a denied call never reaches the executor
    passed = gated(PYTEST)
    assert passed.passed and passed.ref is not None and not passed.is_error
    assert client.evidence(passed.ref) == passed.evidence
    client.ingest(_stamp(passed.ref))
    edited = gated(EDIT)
    assert edited.allowed and edited.text.endswith(edited.evidence.tag)
    assert ran == ["Bash", "Edit"]


def test_a_declared_class_decides_the_evidence_class_over_http(client: Client) -> None:
    @client.tool(name="frobnicate", tool_class="execute")
    def check() -> ToolOutcome:
        return ToolOutcome("1 failed", exit_code=1)

    result = check()
    assert result.evidence is not None and result.evidence.evidence_class.value == "execution"
    assert result.outcome is not None and result.outcome.value == "FAIL"


def test_policy_channels_match_the_facade(client: Client, service: Service) -> None:
    with Gatekeeper.open(service.home, client.session + "-local", root=service.project) as local:
        for gk in (client, local):
            gk.ingest(LEDGER)
            gk.authorize(EDIT)
        assert client.new_turn("fix add()") == local.new_turn("fix add()")
        report = {"tokens_used": 190_000, "context_window": 200_000}
        assert client.host_report(**report) == local.host_report(**report)
        assert client.context_view(800) == local.context_view(800).replace(
            local.session, client.session
        )
        state = client.state_document()
        expected = local.state_document()
        assert state["session"] == client.session and state["seq"] == expected["seq"]
        assert set(state) == set(expected)


def test_views_have_the_facade_types(client: Client) -> None:
    client.ingest(LEDGER)
    view = client.ledger()
    assert isinstance(view, LedgerView)
    assert view.premises == ("C1",) and view.ungrounded == (("C1", "Hypothetical"),)
    gate = client.gate()
    assert isinstance(gate, GateView) and gate.position == view.gate
    assert gate.to_dict()["profile"] == "ledger"


def test_bytes_output_is_recorded_byte_for_byte(client: Client) -> None:
    data = bytes(range(256))
    ev = _run(client, PYTEST, ToolOutcome(output=data, exit_code=0))
    assert ev.output_digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert ev.record["output_size"] == 256


def test_events_come_back_in_order(client: Client) -> None:
    client.authorize(EDIT)
    _run(client, PYTEST, PASSED)
    events = list(client.events())
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == "decision" and events[0].payload["tool"] == "Edit"
    assert [e.seq for e in client.events(after=1)] == [e.seq for e in events[1:]]
    assert events[0].public()["hash"] == events[0].hash


def test_follow_yields_new_events_until_the_caller_stops(client: Client, service: Service) -> None:
    client.authorize(ToolCall("Read", {"file_path": "a.py"}))
    stream = client.events(follow=True)
    assert next(stream).seq == 1
    with Client(service.url, token=service.token, session=client.session) as writer:
        _run(writer, PYTEST, PASSED)
    assert [next(stream).type, next(stream).type] == ["decision", "evidence_recorded"]
    stream.close()  # ends the request; the service notices the disconnect
    assert client.gate().position


def test_concurrent_sessions_lose_nothing(service: Service) -> None:
    threads, per_thread, n_sessions = 8, 25, 4
    base = f"conc-{uuid.uuid4().hex[:8]}"
    sessions = [f"{base}-{i}" for i in range(n_sessions)]
    seqs: dict[int, list[int]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def agent(t: int) -> None:
        try:
            with Client(service.url, token=service.token, session=sessions[t % n_sessions]) as c:
                start.wait(timeout=30)
                mine = []
                for i in range(per_thread):
                    call = ToolCall("Bash", {"command": f"echo {t}-{i}"}, tool_call_id=f"{t}-{i}")
                    c.authorize(call)  # paired by its tool_call_id
                    mine.append(c.record(call, ToolOutcome(output=f"{t}-{i}", exit_code=0)).seq)
                seqs[t] = mine
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    workers = [threading.Thread(target=agent, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors, errors
    assert not any(w.is_alive() for w in workers)
    for t, mine in seqs.items():  # each agent's own calls stay in its order
        assert mine == sorted(mine) and len(set(mine)) == per_thread, t
    per_session = threads // n_sessions * per_thread
    with Client(service.url, token=service.token) as c:
        for s in sessions:
            remote = c.with_session(s)
            events = list(remote.events())
            assert [e.seq for e in events] == list(range(1, len(events) + 1)), s
            kinds = Counter(e.type for e in events)
            assert kinds["evidence_recorded"] == per_session, s
            ids = {
                e.payload["record"]["tool_call_id"] for e in events if e.type == "evidence_recorded"
            }
            assert len(ids) == per_session
            assert remote.audit(verify=True).verified is True


def test_async_client_runs_the_scenario(service: Service) -> None:
    async def scenario() -> None:
        sid = f"async-{uuid.uuid4().hex[:8]}"
        async with AsyncClient(service.url, token=service.token, session=sid) as c:
            assert (await c.health())["status"] == "ok"
            await c.ingest(LEDGER)
            assert (await c.authorize(EDIT)).verdict is Verdict.DENY
            d = await c.authorize(PYTEST)
            ev = await c.record(PYTEST, PASSED, call_id=d.call_id)
            await c.ingest(_stamp(ev.ref))
            assert (await c.authorize(EDIT)).allowed
            assert (await c.can_finish("Done, all tests pass.")).allow
            assert (await c.audit()).verified is True
            seqs = [e.seq async for e in c.events()]
            assert seqs == list(range(1, len(seqs) + 1))
            assert sid in {s["session"] for s in await c.sessions()}

    asyncio.run(scenario())


# -- tokens and errors -----------------------------------------------------------------------
def test_token_from_env_and_from_home(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFOMARK_TOKEN", service.token)
    with Client(service.url) as c:
        assert c.gate().position == "G0"
    monkeypatch.delenv("INFOMARK_TOKEN")
    with Client(service.url, home=service.home) as c:
        assert c.gate().position == "G0"


def test_proxy_variables_never_see_a_loopback_token(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a proxy address where nothing listens
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(var, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with Client(service.url, token=service.token) as c:
        assert c.gate().position == "G0"


def test_wrong_token_raises_service_error(service: Service) -> None:
    with Client(service.url, token="wrong") as c, pytest.raises(ServiceError) as info:
        c.ledger()
    assert info.value.code == "unauthorized" and info.value.status == 401
    assert isinstance(info.value, InfomarkError)


def test_no_token_says_where_to_get_one(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INFOMARK_TOKEN", raising=False)
    with Client(service.url, home=str(tmp_path)) as c, pytest.raises(ServiceError) as info:
        c.gate()
    assert "INFOMARK_TOKEN" in str(info.value)


def test_bad_input_raises_service_error_with_code(client: Client) -> None:
    with pytest.raises(UserError) as bad:  # the shared session-id rule, before any request
        client.with_session("../etc")
    assert bad.value.code == "invalid_session"
    with pytest.raises(ServiceError) as info:
        client.move("")  # the service refuses the body: an error with the service's code
    assert info.value.status == 400 and info.value.code == "invalid_request"
    with pytest.raises(UserError):
        client.authorize(EDIT, bypass=True)
    with pytest.raises(UserError):
        client.authorize(ToolCall("Edit", {"when": object()}))


def test_nothing_listening_raises_service_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with (
        Client(url, token="t", home="/srv/proj/.infomark") as c,
        pytest.raises(ServiceUnavailable) as info,
    ):
        c.authorize(EDIT)
    assert "infomark serve --home /srv/proj/.infomark" in str(info.value)
    assert isinstance(info.value, InfomarkError)


# -- the methods the clients gained: evidence, classify, move ------------------------------------
def test_evidence_classify_and_move_answer_like_the_facade(
    client: Client, service: Service
) -> None:
    ev = _run(client, PYTEST, PASSED)
    found = client.evidence(ev.ref)
    assert found is not None and found.ref == ev.ref and found.record == ev.record
    assert client.evidence("ev_" + "0" * 24) is None  # unknown: None, as the facade says
    with Gatekeeper.open(service.home, client.session + "-local", root=service.project) as local:
        for call, declared in ((EDIT, None), (PYTEST, None), (EDIT, "read")):
            assert client.classify(call, declared) == local.classify(call, declared)
        assert local.evidence(ev.ref) is None  # evidence belongs to its own session
        _run(local, PYTEST, PASSED)  # the same history on both sides
        for gate in ("G1", "G9", "nowhere"):
            assert client.move(gate) == local.move(gate)
        assert client.gate() == local.gate()


def test_async_client_has_the_same_methods(service: Service) -> None:
    async def scenario() -> None:
        sid = f"async-{uuid.uuid4().hex[:8]}"
        async with AsyncClient(service.url, token=service.token, session=sid) as c:
            d = await c.authorize(PYTEST)
            ev = await c.record(PYTEST, PASSED, call_id=d.call_id)
            assert (await c.evidence(ev.ref)) == ev
            assert (await c.classify(EDIT))[0] == "modify"
            moved = await c.move("G1")
            assert set(moved) == {"from", "to", "ok", "reason"}
            await c.ingest(LEDGER)
            ran: list[str] = []

            async def run(call: ToolCall) -> ToolOutcome:
                ran.append(call.tool)
                return ToolOutcome(output="ok", exit_code=0)

            gated = c.wrap(run)
            denied = await gated(EDIT)
            assert denied.is_error and ran == []
            passed = await gated(PYTEST)
            assert "[infomark evidence_ref=" in str(passed.output) and ran == ["Bash"]

            @c.tool(tool_class="execute")
            def check() -> ToolOutcome:
                return ToolOutcome("1 passed", exit_code=0)

            out = await check()
            assert out.passed and out.ref and "outcome=PASS" in out.text
            await c.close()

    asyncio.run(scenario())

"""Fork and merge over HTTP (real uvicorn, real httpx): the facade's rules, remotely."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from typing import TYPE_CHECKING

import httpx
import pytest
from helpers import ledger_text

from infomark.client import AsyncClient, Client, ServiceError
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome

if TYPE_CHECKING:
    from conftest import Service

LEDGER = ledger_text(("P0", "Guess", "make build"), ("C1", "Guess", "pytest -q"), premises=("P0",))
BUILD = ToolCall(tool="Bash", input={"command": "make build"})
PYTEST = ToolCall(tool="Bash", input={"command": "pytest -q"})
OK = ToolOutcome(output="ok", exit_code=0)
FAILED = ToolOutcome(output="1 failed", exit_code=1)


def _sid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


_ids = iter(range(1, 1 << 30))


def _paired(call: ToolCall) -> ToolCall:
    """The call with a fresh tool_call_id: each record pairs with its own authorization."""
    return ToolCall(call.tool, dict(call.input), tool_call_id=f"toolu_{next(_ids)}")


def _stamp(client: Client, cid: str, call: ToolCall, outcome: ToolOutcome) -> bool:
    call = _paired(call)
    assert client.authorize(call).allowed
    ev = client.record(call, outcome)
    result = "PASS" if outcome.exit_code == 0 else "FAIL"
    report = client.ingest(f"oracle_stamp: claim_id={cid} evidence_ref={ev.ref} result={result}")
    return bool(report.stamps_applied)


def _origin(service: Service) -> Client:
    client = Client(service.url, token=service.token, session=_sid("origin"))
    client.ingest(LEDGER)
    assert _stamp(client, "P0", BUILD, OK)
    return client


def test_two_forks_try_two_fixes_and_the_passing_one_merges_back(service: Service) -> None:
    with _origin(service) as origin:
        a = origin.fork(_sid("fix-a"))
        b = origin.fork(_sid("fix-b"))
        assert isinstance(a, Client) and a.session != origin.session
        assert a.ledger().status("P0") == "Exact"  # the fork holds the origin's history
        assert _stamp(b, "C1", PYTEST, FAILED)  # fix b: the oracle fails
        assert b.ledger().status("C1") == "Unknown"
        assert _stamp(a, "C1", PYTEST, OK)  # fix a: the oracle passes

        merged = origin.merge_from(a.session)
        assert merged["merged"] is True and merged["claims"] == ["C1"]
        assert merged["from"] == a.session and merged["into"] == origin.session
        assert origin.ledger().status("C1") == "Exact"
        again = origin.merge_from(a.session)  # idempotent: nothing new the second time
        assert again["merged"] is False and "nothing new" in again["reason"]

        audit = origin.audit()
        assert audit.verified is True
        history = next(c for c in audit.claims if c["id"] == "C1")["history"]
        assert any(h["cause"] == "merged" and h.get("from_session") == a.session for h in history)
        # The remote answer is the local facade's.
        with Gatekeeper.open(service.home, origin.session, root=service.project) as local:
            assert origin.ledger() == local.ledger()
        a.close()
        b.close()


def test_fork_route_answers_the_fork_event(service: Service) -> None:
    with _origin(service) as origin:
        head = origin.state_document()["seq"]
        name = _sid("f")
        headers = {"authorization": f"Bearer {service.token}"}
        url = f"{service.url}/v1/sessions/{origin.session}/fork"
        body = httpx.post(url, json={"as_session": name, "upto": head}, headers=headers).json()
        assert body["session"] == name and body["forked_from"] == origin.session
        assert body["seq"] == head and body["copied"] == head and len(body["head_hash"]) == 64
        sessions = {s["session"] for s in origin.sessions()}
        assert name in sessions


@pytest.mark.parametrize(
    ("body", "code", "fragment"),
    [
        ({"as_session": "../x"}, "invalid_session", "session id"),
        ({"as_session": "x", "upto": 0}, "invalid_request", "upto"),
        ({"as_session": "x", "extra": 1}, "invalid_request", "extra"),
        ({}, "invalid_request", "as_session"),
    ],
)
def test_bad_fork_requests_are_400_naming_the_field(
    service: Service, body: dict[str, object], code: str, fragment: str
) -> None:
    with _origin(service) as origin:
        headers = {"authorization": f"Bearer {service.token}"}
        url = f"{service.url}/v1/sessions/{origin.session}/fork"
        got = httpx.post(url, json=body, headers=headers)
        assert got.status_code == 400, got.text
        err = got.json()["error"]
        assert fragment in err["message"] and "Traceback" not in got.text
        assert err["code"] in (code, "user_error", "invalid_session")


def test_fork_into_an_existing_session_is_refused(service: Service) -> None:
    with _origin(service) as origin:
        name = _sid("f")
        origin.fork(name)
        with pytest.raises(ServiceError, match="already exists") as exc:
            origin.fork(name)
        assert exc.value.status == 400
        with pytest.raises(ServiceError, match="at seq 9999"):
            origin.fork(_sid("g"), upto=9999)


def test_merging_a_session_that_is_no_fork_is_refused(service: Service) -> None:
    with _origin(service) as origin, _origin(service) as stranger:
        with pytest.raises(ServiceError, match="is not a fork of") as exc:
            origin.merge_from(stranger.session)
        assert exc.value.status == 400
        before = origin.state_document()["seq"]
        assert origin.state_document()["seq"] == before  # nothing was written


def test_a_tampered_fork_is_refused_with_409_and_nothing_merges(service: Service) -> None:
    with _origin(service) as origin:
        fork = origin.fork(_sid("t"))
        assert _stamp(fork, "C1", PYTEST, OK)
        before = origin.state_document()["seq"]
        with sqlite3.connect(service.home / "ledger.db") as db:  # an agent with a shell
            db.execute(
                "UPDATE events SET payload = '{\"tampered\":1}' WHERE session=? AND seq=2",
                (fork.session,),
            )
        with pytest.raises(ServiceError, match="does not verify") as exc:
            origin.merge_from(fork.session)
        assert exc.value.status == 409 and exc.value.code == "verification_failed"
        assert origin.state_document()["seq"] == before
        assert origin.ledger().status("C1") != "Exact"
        fork.close()


def test_async_client_forks_and_merges(service: Service) -> None:
    async def go() -> None:
        async with AsyncClient(service.url, token=service.token, session=_sid("as")) as origin:
            await origin.ingest(LEDGER)
            build = _paired(BUILD)
            assert (await origin.authorize(build)).allowed
            ev = await origin.record(build, OK)
            await origin.ingest(f"oracle_stamp: claim_id=P0 evidence_ref={ev.ref} result=PASS")
            fork = await origin.fork(_sid("af"))
            assert isinstance(fork, AsyncClient)
            run = _paired(PYTEST)
            assert (await fork.authorize(run)).allowed
            ran = await fork.record(run, OK)
            await fork.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ran.ref} result=PASS")
            merged = await origin.merge_from(fork.session)
            assert merged["merged"] and merged["claims"] == ["C1"]
            assert (await origin.ledger()).status("C1") == "Exact"

    asyncio.run(go())

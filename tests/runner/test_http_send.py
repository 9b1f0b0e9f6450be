"""`POST /v1/sessions/{session}/send` on the real HTTP service (a uvicorn subprocess)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from infomark.ledger.engine import Ledger
from infomark.ledger.inbox import Inbox
from tests.runner.conftest import events
from tests.tools.conftest import Service, start_service, stop_service


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    s = start_service(tmp_path)
    yield s
    stop_service(s)


def test_send_route_delivers_to_a_live_inbox_and_refuses_with_409_otherwise(svc: Service) -> None:
    auth = {"Authorization": f"Bearer {svc.token}"}
    with httpx.Client(base_url=svc.url, headers=auth, timeout=30) as http:
        r = http.post("/v1/sessions/h1/send", json={"message": "hello"})
        assert r.status_code == 409
        err = r.json()["error"]
        assert err["code"] == "inbox_refused" and err["details"][0]["msg"] == "never_had_inbox"
        with Ledger(svc.home, "h1") as ledger:  # a runtime takes the session's inbox
            inbox = Inbox(ledger.journal)
            inbox.acquire("h1", holder="rt")
            r = http.post("/v1/sessions/h1/send", json={"message": "steer", "sender": "ops"})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["delivered"] is True and body["session"] == "h1"
            got = inbox.read("h1", "rt")
            assert [(m.id, m.sender, m.text) for m in got] == [(body["message_id"], "ops", "steer")]
            inbox.release("h1", "rt")
            inbox.close()
        r = http.post("/v1/sessions/h1/send", json={"message": "late"})
        assert r.status_code == 409 and r.json()["error"]["details"][0]["msg"] == "finished"
        assert http.post("/v1/sessions/h1/send", json={"msg": "x"}).status_code == 400
        assert (
            httpx.post(svc.url + "/v1/sessions/h1/send", json={"message": "x"}).status_code == 401
        )
    reasons = [p["reason"] for _, t, p in events(svc.home, "h1") if t == "inbox_refused"]
    assert reasons == ["never_had_inbox", "finished"]

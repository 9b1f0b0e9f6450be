"""The HTTP service over the wire: auth, errors, streaming, hooks, OpenAPI (real uvicorn).

Every test that talks to a server runs twice: on a home with its SQLite file, and on a
PostgreSQL store (``module_backend``: one schema for the module's shared server).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import logging
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from store_backends import Backend, drop_schema, new_schema

from infomark.tools.serve import _bind, is_loopback
from infomark.tools.service import (
    API_PREFIX,
    OPERATIONS,
    _guarded,
    hook_http_body,
    openapi_document,
    openapi_json,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Service

REPO = Path(__file__).resolve().parents[2]
OPENAPI_FILE = REPO / "docs" / "openapi.json"
REGENERATE = ".venv/bin/python -m infomark.tools.service openapi docs/openapi.json"
HAS_HOOK = importlib.util.find_spec("infomark.tools.hooks.claude_code") is not None


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, module_backend: Backend) -> Iterator[Service]:
    """One server per module and backend; tests keep apart by their own session ids."""
    from conftest import start_service, stop_service

    svc = start_service(tmp_path_factory.mktemp("svc"), store=module_backend.url)
    yield svc
    stop_service(svc)


@pytest.fixture
def spawn(tmp_path: Path, module_backend: Backend) -> Iterator[Callable[..., Service]]:
    """A private server with extra ``serve`` flags, on the module's backend (a store of its
    own: a fresh schema on PostgreSQL)."""
    from conftest import start_service, stop_service

    started: list[Service] = []
    schemas: list[str] = []

    def start(*extra: str) -> Service:
        url = None
        if module_backend.pg:
            schema, url = new_schema()
            schemas.append(schema)
        svc = start_service(tmp_path / f"svc{len(started)}", *extra, store=url)
        started.append(svc)
        return svc

    yield start
    for svc in started:
        if svc.proc.poll() is None:
            stop_service(svc)
    for schema in schemas:
        drop_schema(schema)


@pytest.fixture
def anon(service: Service) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.url, timeout=30) as h:
        yield h


def _sid() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert "Traceback" not in response.text
    err: dict[str, Any] = body["error"]
    return err


def _concrete(path: str) -> str:
    return API_PREFIX + path.replace("{session}", "probe")


# -- auth -----------------------------------------------------------------------------------
def test_health_needs_no_token(anon: httpx.Client) -> None:
    r = anon.get("/v1/health")
    assert r.status_code == 200
    assert r.json()["status"] == "ok" and r.json()["service"] == "infomark"


def test_missing_token_is_401_json(anon: httpx.Client) -> None:
    err = _error(anon.get("/v1/sessions"), 401, "unauthorized")
    assert "Bearer" in err["message"]
    assert anon.get("/v1/sessions").headers["www-authenticate"] == "Bearer"


def test_wrong_token_is_401(service: Service) -> None:
    for value in (
        "Bearer " + service.token[:-1] + ("A" if service.token[-1] != "A" else "B"),
        "Bearer " + service.token + "x",
        "Bearer",
        "Basic " + service.token,
        service.token,
    ):
        r = httpx.get(service.url + "/v1/sessions", headers={"authorization": value})
        _error(r, 401, "unauthorized")


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
def test_every_route_but_health_needs_the_token(anon: httpx.Client, op: Any) -> None:
    r = anon.request(op.method, _concrete(op.path), json={})
    if op.auth:
        _error(r, 401, "unauthorized")
    else:
        assert r.status_code == 200


@settings(max_examples=60)
@given(
    token=st.text(
        alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=60
    )
)
def test_any_other_token_is_refused(service: Service, token: str) -> None:
    if token == service.token:
        return
    r = httpx.get(service.url + "/v1/sessions", headers={"authorization": f"Bearer {token}"})
    assert r.status_code == 401


def test_the_token_never_reaches_the_log(service: Service, http: httpx.Client) -> None:
    sid = _sid()
    assert http.post(f"/v1/sessions/{sid}/authorize", json={"tool": "Read"}).status_code == 200
    # the access line is written per request; the reader thread may lag the pipe, and the
    # service is shared by the module's tests, so wait for this test's own line
    log = service.log(after=f"/v1/sessions/{sid}/authorize")
    assert f"/v1/sessions/{sid}/authorize" in log  # the access log is on
    assert service.token not in log
    assert "authorization" not in log.lower() and "bearer" not in log.lower()


# -- errors --------------------------------------------------------------------------------
def test_unknown_route_is_404_json(http: httpx.Client) -> None:
    _error(http.get("/v1/no-such-route"), 404, "not_found")
    _error(http.get("/elsewhere"), 404, "not_found")


def test_wrong_method_is_405_json(http: httpx.Client) -> None:
    r = http.delete("/v1/sessions")
    _error(r, 405, "method_not_allowed")
    assert "GET" in r.headers["allow"]


def test_bad_json_is_400(http: httpx.Client) -> None:
    r = http.post(
        f"/v1/sessions/{_sid()}/authorize",
        content=b'{"tool": "Edit", ',
        headers={"content-type": "application/json"},
    )
    _error(r, 400, "bad_json")
    r = http.post(f"/v1/sessions/{_sid()}/authorize", content=b'{"tool": "Edit", "x": NaN}')
    _error(r, 400, "bad_json")
    r = http.post(f"/v1/sessions/{_sid()}/authorize", content=b"\xff\xfe")
    _error(r, 400, "bad_json")


@pytest.mark.parametrize(
    ("route", "body", "loc"),
    [
        ("authorize", {"tool": "Edit", "input": [1, 2]}, "input"),
        ("authorize", {"input": {}}, "tool"),
        ("authorize", {"tool": ""}, "tool"),
        ("authorize", {"tool": "Edit", "tool_class": "harmless"}, "tool_class"),
        ("authorize", {"tool": "Edit", "inptu": {}}, "inptu"),
        ("record", {"tool": "Bash", "exit_code": "zero"}, "exit_code"),
        ("ingest", {"text": "x", "cursor": ["transcript", "far"]}, "cursor.1"),
        ("ingest", {}, "text"),
        ("finish", [1], "(body)"),
        ("move", {}, "gate"),
        ("move", {"gate": ""}, "gate"),
        ("classify", {"input": {}}, "tool"),
    ],
)
def test_invalid_fields_are_400_with_the_field_path(
    http: httpx.Client, route: str, body: Any, loc: str
) -> None:
    err = _error(http.post(f"/v1/sessions/{_sid()}/{route}", json=body), 400, "invalid_request")
    assert loc in [d["loc"] for d in err["details"]]
    assert loc in err["message"]


def test_bad_query_and_session_are_400(http: httpx.Client) -> None:
    _error(
        http.get(f"/v1/sessions/{_sid()}/events", params={"after": "-1"}), 400, "invalid_request"
    )
    _error(
        http.get(f"/v1/sessions/{_sid()}/audit", params={"verify": "maybe"}), 400, "invalid_request"
    )
    _error(http.get("/v1/sessions/.hidden"), 400, "invalid_session")
    _error(http.get("/v1/sessions/" + "a" * 129), 400, "invalid_session")


def test_bad_base64_output_is_400(http: httpx.Client) -> None:
    body = {"tool": "Bash", "output": "not base64!", "output_encoding": "base64"}
    _error(http.post(f"/v1/sessions/{_sid()}/record", json=body), 400, "invalid_request")


def test_body_over_the_cap_is_413(http: httpx.Client) -> None:
    big = b'{"text": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    _error(http.post(f"/v1/sessions/{_sid()}/ingest", content=big), 413, "body_too_large")

    def chunks() -> Iterator[bytes]:  # no content-length: the cap holds while streaming
        yield b'{"text": "'
        for _ in range(11):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    r = http.post(f"/v1/sessions/{_sid()}/ingest", content=chunks())
    _error(r, 413, "body_too_large")
    assert http.get("/v1/health").status_code == 200


@settings(max_examples=60)
@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    ["tool", "input", "tool_call_id", "annotations", "tool_class", "x"]
                ),
                inner,
                max_size=5,
            )
        ),
        max_leaves=12,
    )
)
def test_arbitrary_json_never_breaks_authorize(service: Service, body: Any) -> None:
    headers = {"authorization": f"Bearer {service.token}"}
    r = httpx.post(service.url + "/v1/sessions/fuzz/authorize", json=body, headers=headers)
    assert r.status_code in (200, 400), r.text
    if r.status_code == 400:
        assert r.json()["error"]["code"] == "invalid_request"
    else:
        assert r.json()["decision"] in ("allow", "deny", "ask")


def test_an_unexpected_error_is_500_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def boom(request: Request) -> Response:
        raise RuntimeError("secret internals")

    app = Starlette(routes=[Route("/boom", _guarded(boom))])
    transport = httpx.ASGITransport(app=app)

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as h:
            return await h.get("/boom")

    import asyncio

    with caplog.at_level(logging.ERROR, logger="infomark.service"):
        r = asyncio.run(go())
    err = _error(r, 500, "internal_error")
    assert "secret internals" not in err["message"]
    assert any("secret internals" in str(rec.exc_info[1]) for rec in caplog.records if rec.exc_info)


# -- sessions and views -------------------------------------------------------------------------
def test_sessions_are_created_on_first_use_and_listed(http: httpx.Client) -> None:
    sid = _sid()
    view = http.get(f"/v1/sessions/{sid}").json()
    assert view["session"] == sid
    assert view["ledger"]["has_ledger"] is False and view["gate"]["position"] == "G0"
    assert http.post(f"/v1/sessions/{sid}/authorize", json={"tool": "Read"}).status_code == 200
    listed = {s["session"]: s for s in http.get("/v1/sessions").json()["sessions"]}
    assert listed[sid]["events"] == 1 and listed[sid]["open"] is True


def test_record_answers_ref_tag_and_eligibility(http: httpx.Client) -> None:
    sid = _sid()
    call = {"tool": "Bash", "input": {"command": "pytest -q"}}
    decided = http.post(f"/v1/sessions/{sid}/authorize", json=call).json()
    body = {**call, "tool_call_id": decided["call_id"], "output": "1 passed", "exit_code": 0}
    ev = http.post(f"/v1/sessions/{sid}/record", json=body).json()
    assert ev["evidence_ref"].startswith("ev_") and len(ev["evidence_ref"]) == 27
    assert ev["outcome"] == "PASS" and ev["evidence_class"] == "execution"
    assert ev["eligible_for"] == ["oracle_stamp", "inference_stamp"]
    assert ev["tag"] == (
        f"[infomark evidence_ref={ev['evidence_ref']} tool=Bash outcome=PASS "
        "eligible=oracle_stamp,inference_stamp]"
    )
    assert ev["output_digest"].startswith("sha256:")


def test_a_record_with_the_token_but_no_authorized_call_is_refused(http: httpx.Client) -> None:
    """Issue 11 §1: the agent read the token and POSTs /record for a suite that never ran."""
    sid = _sid()
    forged = {"tool": "Bash", "input": {"command": "pytest -q"}, "output": "3 passed"}
    _error(http.post(f"/v1/sessions/{sid}/record", json={**forged, "exit_code": 0}), 400,
           "unpaired_record")  # fmt: skip
    guessed = {**forged, "exit_code": 0, "tool_call_id": "call_0000000000000000"}
    _error(http.post(f"/v1/sessions/{sid}/record", json=guessed), 400, "unpaired_record")
    cid = http.post(f"/v1/sessions/{sid}/authorize", json={"tool": "Bash", "input": {
        "command": "ls"}}).json()["call_id"]  # fmt: skip
    other = {**forged, "exit_code": 0, "tool_call_id": cid}  # a real id, another input
    _error(http.post(f"/v1/sessions/{sid}/record", json=other), 400, "unpaired_record")
    lines = http.get(f"/v1/sessions/{sid}/events").text.splitlines()
    types = [json.loads(line)["type"] for line in lines if line.strip()]
    assert types.count("record_refused") == 3 and "evidence_recorded" not in types


def test_unknown_evidence_is_404_json_and_known_evidence_is_its_record(
    http: httpx.Client,
) -> None:
    sid = _sid()
    call = {"tool": "Bash", "input": {"command": "pytest -q"}}
    cid = http.post(f"/v1/sessions/{sid}/authorize", json=call).json()["call_id"]
    body = {**call, "tool_call_id": cid, "output": "1 passed", "exit_code": 0}
    ev = http.post(f"/v1/sessions/{sid}/record", json=body).json()
    got = http.get(f"/v1/sessions/{sid}/evidence/{ev['evidence_ref']}").json()
    assert got == {k: v for k, v in ev.items() if k != "instructions"}
    err = _error(http.get(f"/v1/sessions/{sid}/evidence/ev_{'0' * 24}"), 404, "unknown_evidence")
    assert "ev_" in err["message"]
    _error(
        http.get(f"/v1/sessions/{_sid()}/evidence/{ev['evidence_ref']}"), 404, "unknown_evidence"
    )


def test_classify_journals_nothing(http: httpx.Client) -> None:
    sid = _sid()
    r = http.post(f"/v1/sessions/{sid}/classify", json={"tool": "Edit", "input": {}})
    assert r.status_code == 200 and r.json()["tool_class"] == "modify"
    assert http.get(f"/v1/sessions/{sid}/events").text == ""


# -- events ------------------------------------------------------------------------------------
def test_events_stream_json_lines(http: httpx.Client) -> None:
    sid = _sid()
    for tool in ("Read", "Grep", "Glob"):
        assert http.post(f"/v1/sessions/{sid}/authorize", json={"tool": tool}).status_code == 200
    r = http.get(f"/v1/sessions/{sid}/events")
    assert r.headers["content-type"].startswith("application/x-ndjson")
    rows = [json.loads(line) for line in r.text.splitlines()]
    assert [row["seq"] for row in rows] == [1, 2, 3]
    assert {row["type"] for row in rows} == {"decision"}
    assert set(rows[0]) == {"session", "seq", "type", "payload", "timestamp", "hash"}
    after = http.get(f"/v1/sessions/{sid}/events", params={"after": 2}).text.splitlines()
    assert [json.loads(line)["seq"] for line in after] == [3]


def test_events_follow_streams_new_events(service: Service, http: httpx.Client) -> None:
    sid = _sid()
    http.post(f"/v1/sessions/{sid}/authorize", json={"tool": "Read"})
    params = {"after": 0, "follow": 1}
    with (
        httpx.Client(base_url=service.url, headers=http.headers, timeout=20) as follower,
        follower.stream("GET", f"/v1/sessions/{sid}/events", params=params) as r,
    ):
        lines = r.iter_lines()
        assert json.loads(next(lines))["seq"] == 1
        # Written after the stream started: it arrives on the open stream.
        http.post(f"/v1/sessions/{sid}/authorize", json={"tool": "Grep"})
        row = json.loads(next(lines))
        assert row["seq"] == 2 and row["payload"]["tool"] == "Grep"
    # The follower is gone; the session still answers.
    assert http.get(f"/v1/sessions/{sid}/gate").status_code == 200


# -- Claude Code HTTP hook -----------------------------------------------------------------------
def test_hook_body_maps_exit_codes() -> None:
    pre = {"hook_event_name": "PreToolUse"}
    assert hook_http_body(pre, None, 0, "") == {}
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}
    assert hook_http_body(pre, out, 0, "") == out
    deny = hook_http_body(pre, None, 2, "strict: denied\n")
    assert deny == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "strict: denied",
        }
    }
    assert hook_http_body({"hook_event_name": "Stop"}, None, 2, "not yet") == {
        "decision": "block",
        "reason": "not yet",
    }
    perm = hook_http_body({"hook_event_name": "PermissionRequest"}, None, 2, "no")
    assert perm["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "no"}
    assert hook_http_body(pre, None, 1, "oops") == {"systemMessage": "oops"}
    assert hook_http_body(None, None, 1, "") == {}


@pytest.mark.skipif(not HAS_HOOK, reason="infomark.tools.hooks.claude_code is not there yet")
def test_claude_code_hook_answers_like_the_command_hook(
    service: Service, http: httpx.Client
) -> None:
    sid = _sid()
    ledger = (
        'claim_ledger:\n  claims:\n    - id: C1\n      text: "a.py defines f"\n'
        '      status: Hypothetical\n      falsifier: "grep finds no f"\n'
        '      oracle: "pytest -q"\n  premises_for_plan: [C1]\n  open_questions: []\n'
    )
    assert http.post(f"/v1/sessions/{sid}/ingest", json={"text": ledger}).status_code == 200
    payload = {
        "session_id": sid,
        "hook_event_name": "PreToolUse",
        "cwd": str(service.project),
        "tool_name": "Edit",
        "tool_input": {"file_path": "a.py", "old_string": "1", "new_string": "2"},
        "tool_use_id": "toolu_1",
    }
    r = http.post("/v1/hooks/claude-code", json=payload)
    assert r.status_code == 200
    out = r.json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "C1" in out["permissionDecisionReason"]
    # An event the hook has no opinion on: an empty object.
    r = http.post(
        "/v1/hooks/claude-code", json={"session_id": sid, "hook_event_name": "Notification"}
    )
    assert r.status_code == 200 and r.json() == {}
    # Not JSON at all: handled like the command hook (an enforcing profile fails closed:
    # the blocking answer), never a 400.
    r = http.post("/v1/hooks/claude-code", content=b"not json")
    assert r.status_code == 200
    assert r.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


# -- OpenAPI -------------------------------------------------------------------------------------
def test_openapi_is_served_and_names_every_route(http: httpx.Client) -> None:
    doc = http.get("/v1/openapi.json").json()
    assert doc == openapi_document()
    for op in OPERATIONS:
        assert op.method.lower() in doc["paths"][API_PREFIX + op.path]
    refs = json.dumps(doc).count("#/components/schemas/")
    assert refs > 0
    for name in doc["components"]["schemas"]:
        assert isinstance(doc["components"]["schemas"][name], dict)


def test_checked_in_openapi_matches_the_app() -> None:
    current = OPENAPI_FILE.read_text(encoding="utf-8") if OPENAPI_FILE.exists() else ""
    assert current == openapi_json(), (
        f"{OPENAPI_FILE} is out of date with the service's routes and models; "
        f"regenerate it with:\n    {REGENERATE}"
    )


# -- serving ----------------------------------------------------------------------------------
def test_port_file_readiness_and_clean_shutdown(spawn: Any, tmp_path: Path) -> None:
    port_file = tmp_path / "port.json"
    svc = spawn("--port-file", str(port_file), "--no-access-log")
    info = json.loads(port_file.read_text())  # written before the readiness line
    assert info["url"] == svc.url and info["pid"] == svc.proc.pid
    assert info["host"] == "127.0.0.1" and svc.url.endswith(f":{info['port']}")
    with httpx.Client(base_url=svc.url, headers={"authorization": f"Bearer {svc.token}"}) as h:
        assert h.post("/v1/sessions/one/authorize", json={"tool": "Read"}).status_code == 200
    assert svc.stop() in (0, -signal.SIGTERM)
    log = svc.log()
    assert "Application shutdown complete" in log  # the lifespan closed every Gatekeeper
    assert "Traceback" not in log
    assert "POST /v1/sessions" not in log  # --no-access-log


def test_stopping_the_server_ends_follow_streams_cleanly(spawn: Any) -> None:
    svc = spawn("--no-access-log")
    auth = {"authorization": f"Bearer {svc.token}"}
    with httpx.Client(base_url=svc.url, headers=auth, timeout=20) as h:
        h.post("/v1/sessions/f/authorize", json={"tool": "Read"})
        with h.stream("GET", "/v1/sessions/f/events", params={"follow": 1}) as r:
            lines = r.iter_lines()
            assert json.loads(next(lines))["seq"] == 1
            svc.proc.terminate()
            assert list(lines) == []  # the stream ends properly: not cut, not left hanging
    assert svc.stop() in (0, -signal.SIGTERM)
    log = svc.log()
    assert "Traceback" not in log and "graceful shutdown exceeded" not in log


def test_idle_sessions_are_closed_and_reopened_intact(spawn: Any) -> None:
    svc = spawn("--max-open-sessions", "2", "--no-access-log")
    names = [f"lru-{i}" for i in range(5)]
    with httpx.Client(base_url=svc.url, headers={"authorization": f"Bearer {svc.token}"}) as h:
        for turn in range(3):
            for name in names:
                body = {"tool": "Read", "tool_call_id": f"{name}-{turn}"}
                assert h.post(f"/v1/sessions/{name}/authorize", json=body).status_code == 200
        listed = {s["session"]: s for s in h.get("/v1/sessions").json()["sessions"]}
        assert sum(s["open"] for s in listed.values()) <= 2
        for name in names:
            assert listed[name]["events"] == 3
            rows = [
                json.loads(line) for line in h.get(f"/v1/sessions/{name}/events").text.splitlines()
            ]
            assert [r["seq"] for r in rows] == [1, 2, 3]
            assert [r["payload"]["tool_call_id"] for r in rows] == [f"{name}-{t}" for t in range(3)]
            assert h.get(f"/v1/sessions/{name}/audit").json()["verified"] is True


def test_bound_socket_lets_asyncio_disable_nagle() -> None:
    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY only then
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.close()


def test_keep_alive_requests_do_not_wait_for_delayed_acks(http: httpx.Client) -> None:
    # With Nagle on, EVERY response on a kept-alive connection waited ~40 ms (the client's
    # delayed ACK), so even the fastest of 30 did. The fastest, not the median: a loaded
    # machine slows some requests for reasons of its own, never all 30 by 20 ms each.
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        assert http.get("/v1/health").status_code == 200
        times.append(time.perf_counter() - t0)
    assert min(times) < 0.02, times


# -- binding ----------------------------------------------------------------------------------
@given(st.ip_addresses())
def test_is_loopback_matches_the_address_class(
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    assert is_loopback(str(addr)) == addr.is_loopback


def test_is_loopback_names() -> None:
    assert is_loopback("localhost") and is_loopback("127.0.0.1") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")

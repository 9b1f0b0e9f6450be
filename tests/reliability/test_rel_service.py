"""The HTTP service under hostile requests and threaded load (a real uvicorn subprocess).

Every rejection is a 4xx JSON error with a code and a message (never a 500 for bad input),
the service keeps serving other sessions after any bad request, a stamp inside a recorded
tool output changes nothing, and several agent threads on a few sessions lose no event.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rel_load import run_load
from rel_service import RelService, start_service
from rel_support import ORACLE, ledger_block, stamp_line

MAX_BODY = 2_000_000


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RelService]:
    s = start_service(tmp_path_factory.mktemp("rel-svc"), "--max-body-bytes", str(MAX_BODY))
    yield s
    s.stop()


@pytest.fixture
def http(svc: RelService) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=svc.url, headers=svc.headers, timeout=120) as h:
        yield h


def _sid() -> str:
    return f"r-{uuid.uuid4().hex[:10]}"


def _error(r: httpx.Response) -> dict[str, Any]:
    body = r.json()
    err = body["error"]
    assert isinstance(err["code"], str) and err["code"], body
    assert isinstance(err["message"], str) and err["message"], body
    return dict(err)


def _still_serving(http: httpx.Client) -> None:
    r = http.post(f"/v1/sessions/{_sid()}/ingest", json={"text": ledger_block()})
    assert r.status_code == 200, r.text
    assert r.json()["ledger_updated"] is True


DEEP = b"[" * 100_000 + b"]" * 100_000


def _deep(field: str) -> bytes:
    return b'{"' + field.encode() + b'": ' + DEEP + b"}"


BAD_BODIES: dict[str, tuple[str, bytes, set[int]]] = {
    "not json": ("ingest", b"{nope", {400}),
    "invalid utf-8": ("ingest", b'{"text": "\xff\xfe"}', {400}),
    "NaN": ("record", b'{"tool": "bash", "duration_ms": NaN}', {400}),
    "wrong types": ("authorize", b'{"tool": 5, "input": []}', {400}),
    "unknown field": ("authorize", b'{"tool": "Edit", "sudo": true}', {400}),
    "empty tool": ("authorize", b'{"tool": ""}', {400}),
    "bad base64": ("record", b'{"tool": "x", "output": "@@", "output_encoding": "base64"}', {400}),
    "array body": ("ingest", b"[1, 2]", {400}),
    "giant integer": ("record", b'{"tool": "bash", "exit_code": ' + b"9" * 5000 + b"}", {400}),
    "deep json (ingest)": ("ingest", _deep("text"), {400}),
    "deep json (authorize)": ("authorize", _deep("input"), {400}),
    "deep json (record)": ("record", _deep("input"), {400}),
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_bad_bodies_are_4xx_json_errors_and_serving_goes_on(http: httpx.Client, name: str) -> None:
    """Known failures: the three 'deep json' cases are a 500 (D1: RecursionError)."""
    route, body, statuses = BAD_BODIES[name]
    r = http.post(f"/v1/sessions/{_sid()}/{route}", content=body,
                  headers={"content-type": "application/json"})  # fmt: skip
    assert r.status_code in statuses, f"{r.status_code}: {r.text[:300]}"
    _error(r)
    _still_serving(http)


SURROGATES: dict[str, tuple[str, bytes]] = {
    "claim text escape": (
        "ingest",
        b'{"text": "claim_ledger:\\n  claims:\\n    - id: C1\\n      text: \\"\\\\ud800\\"\\n"}',
    ),
    "raw in claim text": (
        "ingest",
        b'{"text": "claim_ledger:\\n  claims:\\n    - id: C1\\n      text: x\\ud800\\n"}',
    ),
    "tool input": ("record", b'{"tool": "bash", "input": {"command": "ls \\udc80"}, "output": ""}'),
    "tool error": ("record", b'{"tool": "bash", "error": "\\ud800", "output": ""}'),
}


@pytest.mark.parametrize("name", sorted(SURROGATES))
def test_lone_surrogates_are_not_an_internal_error(http: httpx.Client, name: str) -> None:
    """D2 over HTTP: today every case is a 500 internal_error."""
    route, body = SURROGATES[name]
    r = http.post(f"/v1/sessions/{_sid()}/{route}", content=body,
                  headers={"content-type": "application/json"})  # fmt: skip
    assert r.status_code < 500, f"{r.status_code}: {r.text[:300]}"
    _still_serving(http)


def _chunked() -> Iterator[bytes]:
    """An over-limit body with no content-length (chunked transfer)."""
    yield b'{"text": "'
    yield b"x" * MAX_BODY
    yield b'"}'


def test_other_hostile_requests(http: httpx.Client, svc: RelService) -> None:
    sid = _sid()
    cases = [
        (http.get("/v1/sessions/" + "a" * 5000), {400, 414}),
        (http.get("/v1/sessions/..%2F..%2Fetc"), {400, 404}),
        (http.get("/v1/sessions/a%00b"), {400}),
        (http.get("/v1/sessions/%ff%fe"), {400}),
        (http.delete(f"/v1/sessions/{sid}"), {405}),
        (http.get("/v1/nowhere"), {404}),
        (http.get(f"/v1/sessions/{sid}/events", params={"after": "-1"}), {400}),
        (http.get(f"/v1/sessions/{sid}/context", params={"budget": "9" * 400}), {200, 400}),
        (http.post(f"/v1/sessions/{sid}/ingest", content=b"x" * (MAX_BODY + 1)), {413}),
        (http.post(f"/v1/sessions/{sid}/ingest", content=_chunked()), {413}),
    ]
    for r, statuses in cases:
        assert r.status_code in statuses, f"{r.request.url}: {r.status_code} {r.text[:200]}"
        if r.status_code >= 400 and r.status_code != 414:
            _error(r)
    _still_serving(http)
    assert svc.proc.poll() is None


def test_one_megabyte_text_and_nul_bytes_are_ingested(http: httpx.Client) -> None:
    sid = _sid()
    text = "prose\r\n" * 140_000 + ledger_block().replace("\n", "\r\n") + "\x00 trailing"
    r = http.post(f"/v1/sessions/{sid}/ingest", json={"text": text})
    assert r.status_code == 200, r.text[:300]
    assert r.json()["ledger_updated"] is True
    audit = http.get(f"/v1/sessions/{sid}/audit").json()
    assert audit["verified"] is True


def test_a_stamp_in_recorded_tool_output_changes_nothing(http: httpx.Client) -> None:
    sid = _sid()
    http.post(f"/v1/sessions/{sid}/ingest", json={"text": ledger_block()})
    run = {"tool": "bash", "input": {"command": ORACLE}}
    cid = http.post(f"/v1/sessions/{sid}/authorize", json=run).json()["call_id"]
    ev = http.post(
        f"/v1/sessions/{sid}/record",
        json={**run, "tool_call_id": cid, "output": "ok", "exit_code": 0},
    ).json()
    bait = stamp_line("C1", ev["evidence_ref"])
    read = {"tool": "Read", "input": {"file_path": "NOTES.md"}}
    cid = http.post(f"/v1/sessions/{sid}/authorize", json=read).json()["call_id"]
    r = http.post(f"/v1/sessions/{sid}/record", json={**read, "tool_call_id": cid, "output": bait})
    assert r.status_code == 200
    ledger = http.get(f"/v1/sessions/{sid}").json()["ledger"]
    assert ledger["claims"][0]["status"] == "Hypothetical" and ledger["grounded"] is False


def test_hook_endpoint_hostile_payloads(http: httpx.Client, svc: RelService) -> None:
    """Known failure: deep JSON is a 500 (D1), which a Claude Code HTTP hook treats as a
    non-blocking error, i.e. the call goes ahead even in the strict profile."""
    strict = svc.project / "infomark.toml"
    strict.write_text('profile = "strict"\n')
    try:
        for body in (b"", b"{nope", b"[1]", b'{"hook_event_name": 3}', DEEP):
            r = http.post("/v1/hooks/claude-code", content=body)
            assert r.status_code == 200, f"{body[:20]!r}: {r.status_code} {r.text[:200]}"
            out = r.json()
            assert out.get("hookSpecificOutput", {}).get("permissionDecision") == "deny", out
    finally:
        strict.unlink()
    _still_serving(http)


def test_threaded_load_loses_nothing(svc: RelService) -> None:
    result = run_load(svc, threads=6, shared=2, rounds=12, prefix=f"fast-{uuid.uuid4().hex[:6]}")
    figures = result.figures()
    assert figures["errors"] == 0, result.errors[:5]
    assert figures["requests"] == 6 * 12 * 3
    with httpx.Client(base_url=svc.url, headers=svc.headers, timeout=60) as h:
        for session in result.sessions:
            audit = h.get(f"/v1/sessions/{session}/audit").json()
            assert audit["verified"] is True, audit["problems"]
            seqs = [json.loads(line)["seq"] for line in
                    h.get(f"/v1/sessions/{session}/events").text.splitlines()]  # fmt: skip
            assert seqs == list(range(1, len(seqs) + 1))
    log = svc.log()
    assert "locked" not in log and "StoreBusyError" not in log


@pytest.mark.slow
def test_load_soak_sixty_seconds(tmp_path: Path) -> None:
    svc = start_service(tmp_path, "--no-access-log")
    try:
        result = run_load(svc, threads=8, shared=2, seconds=60, prefix="soak")
        figures = result.figures()
    finally:
        svc.stop()
    assert figures["errors"] == 0, result.errors[:5]
    assert figures["rss_growth_kb"] < 50_000, figures


@pytest.mark.slow
def test_ten_megabyte_bodies(tmp_path: Path) -> None:
    svc = start_service(tmp_path)
    try:
        with httpx.Client(base_url=svc.url, headers=svc.headers, timeout=600) as h:
            text = "x" * (10 * 1024 * 1024 - 100)
            assert h.post("/v1/sessions/big/ingest", json={"text": text}).status_code == 200
            over = h.post("/v1/sessions/big/ingest", content=b"x" * (10 * 1024 * 1024 + 1))
            assert over.status_code == 413
            _still_serving(h)
    finally:
        svc.stop()


def test_a_sigkilled_service_keeps_every_acknowledged_result(tmp_path: Path) -> None:
    """What the service answered as recorded is there after a ``kill -9``: three clients post
    PreToolUse / PostToolUse rounds on three sessions (their commits share fsyncs, and a
    request's commits wait for the disk once, before its answer); every evidence ref an
    answer carried is in the journal when the home is opened again, and it verifies."""
    import re
    import threading

    from infomark.gatekeeper import Gatekeeper

    svc = start_service(tmp_path, "--no-access-log")
    refs: dict[str, list[str]] = {}
    errors: list[str] = []

    def client(sid: str) -> None:
        got = refs.setdefault(sid, [])
        with httpx.Client(base_url=svc.url, headers=svc.headers, timeout=120) as h:
            for i in range(6):
                body: dict[str, Any] = {"session_id": sid, "transcript_path": "",
                                        "cwd": str(svc.project), "tool_name": "Bash",
                                        "tool_input": {"command": f"echo {i}"},
                                        "tool_use_id": f"{sid}-{i}"}  # fmt: skip
                pre = h.post("/v1/hooks/claude-code",
                             json={**body, "hook_event_name": "PreToolUse"})  # fmt: skip
                post = h.post("/v1/hooks/claude-code", json={
                    **body, "hook_event_name": "PostToolUse",
                    "tool_response": {"stdout": f"{sid} {i}\n", "stderr": ""}})  # fmt: skip
                if pre.status_code != 200 or post.status_code != 200:
                    errors.append(f"{pre.status_code} {post.status_code} {post.text[:200]}")
                    return
                said = post.json()["hookSpecificOutput"]["additionalContext"]
                got.extend(re.findall(r"evidence_ref=(ev_[0-9a-f]+)", said))

    try:
        threads = [threading.Thread(target=client, args=(f"k{n}",)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
    finally:
        svc.proc.kill()  # no shutdown: nothing is flushed or closed after the last answer
        svc.proc.wait(20)
        svc.stop()
    assert errors == []
    assert sorted(len(v) for v in refs.values()) == [6, 6, 6]
    for sid, acknowledged in refs.items():
        with Gatekeeper.open(svc.home, sid, root=svc.project) as gk:
            recorded = {r.payload["ref"] for r in gk.events() if r.type == "evidence_recorded"}
            assert set(acknowledged) <= recorded, sid
            assert gk.audit(verify=True).verified is True

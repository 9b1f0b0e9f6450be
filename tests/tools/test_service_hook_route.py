"""The hook route served ahead of Starlette's stack (:mod:`infomark.tools.service_hook_route`):
the same promises as every other route (token, size cap, JSON errors, no traceback), checked
on the real service where they can be and on the ASGI class with a small cap where the
real one (10 MiB) would only make the test slow."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.kernel.errors import StoreBusyError
from infomark.tools.service_hook_route import HOOK_PATH, HookRoute

if TYPE_CHECKING:
    from conftest import Service

TOKEN = "t0k3n"


async def _never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the hook route must not fall through to the app")


def _route(answer: Any, limit: int = 64) -> HookRoute:
    return HookRoute(_never, token=TOKEN, limit=limit, answer=answer)


def _post(app: Any, body: bytes | Iterator[bytes], token: str = TOKEN) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as h:
            content = body if isinstance(body, bytes) else _aiter(body)
            return await h.post(HOOK_PATH, content=content,
                                headers={"authorization": f"Bearer {token}"})  # fmt: skip

    return asyncio.run(go())


async def _aiter(chunks: Iterator[bytes]) -> Any:
    for chunk in chunks:
        yield chunk


def _error(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    err: dict[str, Any] = r.json()["error"]
    assert err["code"] == code
    return err


def test_the_answer_and_the_project_header_reach_the_hook() -> None:
    seen: list[tuple[bytes, str | None]] = []

    async def answer(raw: bytes, project: str | None) -> bytes:
        seen.append((raw, project))
        return b'{"ok":true}'

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=_route(answer))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as h:
            return await h.post(HOOK_PATH, content=b'{"a":1}', headers={
                "authorization": f"Bearer {TOKEN}", "x-claude-project-dir": "/p"})  # fmt: skip

    r = asyncio.run(go())
    assert (r.status_code, r.json()) == (200, {"ok": True})
    assert r.headers["content-length"] == str(len(b'{"ok":true}'))
    assert seen == [(b'{"a":1}', "/p")]


def test_a_wrong_token_is_401_before_the_body_is_read() -> None:
    async def answer(raw: bytes, project: str | None) -> bytes:
        raise AssertionError("answered without the token")

    err = _error(_post(_route(answer), b"{}", token="nope"), 401, "unauthorized")
    assert "Bearer" in err["message"]


def test_a_body_over_the_cap_is_413_declared_or_streamed() -> None:
    async def answer(raw: bytes, project: str | None) -> bytes:
        raise AssertionError("answered a body over the cap")

    _error(_post(_route(answer), b"x" * 65), 413, "body_too_large")
    # no content-length: the cap holds while the chunks arrive
    _error(_post(_route(answer), iter([b"x" * 40, b"x" * 40])), 413, "body_too_large")


def test_an_unexpected_error_is_a_500_json_without_its_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def answer(raw: bytes, project: str | None) -> bytes:
        raise RuntimeError("secret internals")

    with caplog.at_level(logging.ERROR, logger="infomark.service"):
        err = _error(_post(_route(answer), b"{}"), 500, "internal_error")
    assert "secret internals" not in err["message"]
    assert any("secret internals" in str(rec.exc_info[1]) for rec in caplog.records if rec.exc_info)


def test_an_infomark_error_keeps_its_status_and_code() -> None:
    async def answer(raw: bytes, project: str | None) -> bytes:
        raise StoreBusyError("the ledger is busy: retry")

    err = _error(_post(_route(answer), b"{}"), 503, StoreBusyError.code)
    assert "busy" in err["message"]


def test_a_client_that_goes_away_gets_no_answer() -> None:
    async def answer(raw: bytes, project: str | None) -> bytes:
        raise AssertionError("answered a request whose client left")

    sent: list[dict[str, Any]] = []
    messages = iter([{"type": "http.request", "body": b"{", "more_body": True},
                     {"type": "http.disconnect"}])  # fmt: skip

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": HOOK_PATH,
             "headers": [(b"authorization", f"Bearer {TOKEN}".encode())]}  # fmt: skip
    asyncio.run(_route(answer)(scope, receive, send))
    assert sent == []


def test_other_methods_and_paths_go_on_to_the_app() -> None:
    reached: list[tuple[str, str]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append((scope["method"], scope["path"]))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def answer(raw: bytes, project: str | None) -> bytes:
        raise AssertionError("not the hook route")

    route = HookRoute(app, token=TOKEN, limit=64, answer=answer)

    async def go() -> None:
        transport = httpx.ASGITransport(app=route)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as h:
            assert (await h.get(HOOK_PATH)).status_code == 204
            assert (await h.post(HOOK_PATH + "/x", content=b"{}")).status_code == 204

    asyncio.run(go())
    assert reached == [("GET", HOOK_PATH), ("POST", HOOK_PATH + "/x")]


def test_on_the_real_service_a_get_is_a_405_json(http: httpx.Client) -> None:
    _error(http.get(HOOK_PATH), 405, "method_not_allowed")


@settings(max_examples=40, deadline=None)
@given(body=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_on_the_real_service_any_body_is_answered_as_the_command_hook_would(
    service: Service, body: bytes
) -> None:
    """Whatever the body, the route answers 200 with the hook's JSON (a body that is not a
    hook payload is the hook's to refuse, as on stdin), never an error page."""
    r = httpx.post(service.url + HOOK_PATH, content=body,
                   headers={"authorization": f"Bearer {service.token}"}, timeout=30)  # fmt: skip
    assert r.status_code == 200, r.text
    assert isinstance(json.loads(r.text), dict)

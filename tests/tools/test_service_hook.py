"""The Claude Code http hook route and the home ``serve`` makes (real uvicorn, real httpx).

The route answers from the service's session pool (no session is reopened per request),
with the configuration of the project the payload names (``cwd``, or the
``X-Claude-Project-Dir`` header), reloaded when that project's config file changes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from helpers import claude_sandbox_on

from infomark.ledger.home import GITIGNORE
from infomark.tools.service import PROJECT_HEADER

if TYPE_CHECKING:
    from conftest import Service

HOOK = "/v1/hooks/claude-code"


def _uuid() -> str:
    return str(uuid.uuid4())


def _prompt(sid: str, cwd: Path, prompt: str) -> dict[str, Any]:
    return {"session_id": sid, "hook_event_name": "UserPromptSubmit", "cwd": str(cwd),
            "prompt": prompt}  # fmt: skip


def _types(http: httpx.Client, sid: str) -> list[str]:
    lines = http.get(f"/v1/sessions/{sid}/events").text.splitlines()
    return [json.loads(line)["type"] for line in lines]


def test_the_hook_route_answers_from_the_session_pool(service: Service, http: httpx.Client) -> None:
    claude_sandbox_on(service.project)
    sid = _uuid()
    payload = {
        "session_id": sid,
        "hook_event_name": "PreToolUse",
        "cwd": str(service.project),
        "tool_name": "Read",
        "tool_input": {"file_path": "a.py"},
        "tool_use_id": "t1",
    }
    for _ in range(3):
        r = http.post(HOOK, json=payload)
        assert r.status_code == 200 and r.json() == {}
    listed = {s["session"]: s for s in http.get("/v1/sessions").json()["sessions"]}
    assert listed[sid]["open"] is True  # kept open by the pool, not opened and closed per call
    assert listed[sid]["events"] == 4
    # The API routes see the same session the hook wrote: the sandbox, judged once, then calls.
    assert _types(http, sid) == ["agent_sandbox"] + ["decision"] * 3


def test_the_hook_honours_the_payload_projects_config(
    service: Service, http: httpx.Client, tmp_path: Path
) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    config = other / "infomark.toml"
    config.write_text('approval_phrase = "ship it"\n', encoding="utf-8")

    sid = _uuid()
    assert http.post(HOOK, json=_prompt(sid, other, "ship it now")).status_code == 200
    assert "approval" in _types(http, sid)  # the other project's phrase

    mine = _uuid()  # the service's own project has the default phrase, not "ship it"
    assert http.post(HOOK, json=_prompt(mine, service.project, "ship it now")).status_code == 200
    assert "approval" not in _types(http, mine)

    # The project changes its config: the next call uses the new one.
    config.write_text('approval_phrase = "go ahead"\n', encoding="utf-8")
    again = _uuid()
    http.post(HOOK, json=_prompt(again, other, "ship it now"))
    assert "approval" not in _types(http, again)
    http.post(HOOK, json=_prompt(again, other, "go ahead"))
    assert "approval" in _types(http, again)


def test_the_project_header_wins_over_cwd(
    service: Service, http: httpx.Client, tmp_path: Path
) -> None:
    other = tmp_path / "header-project"
    other.mkdir()
    (other / "infomark.toml").write_text('approval_phrase = "lgtm"\n', encoding="utf-8")
    sid = _uuid()
    r = http.post(
        HOOK, json=_prompt(sid, service.project, "lgtm"), headers={PROJECT_HEADER: str(other)}
    )
    assert r.status_code == 200
    assert "approval" in _types(http, sid)


@pytest.mark.parametrize("cwd", ["relative/dir", "/no/such/dir", "", 42, "/tmp\x00/x"])
def test_an_unusable_cwd_falls_back_to_the_services_project(
    service: Service, http: httpx.Client, cwd: Any
) -> None:
    sid = _uuid()
    payload = {**_prompt(sid, service.project, "approve it"), "cwd": cwd}
    assert http.post(HOOK, json=payload).status_code == 200
    assert "approval" in _types(http, sid)  # the service's own (default) phrase applied


def test_a_broken_project_config_denies_mutations_over_http(
    service: Service, http: httpx.Client, tmp_path: Path
) -> None:
    """A project cannot switch the gatekeeper off by breaking its config file."""
    broken = tmp_path / "broken-project"
    broken.mkdir()
    (broken / "infomark.toml").write_text('profile = "nonsense"\n', encoding="utf-8")
    claude_sandbox_on(broken)
    sid = _uuid()
    edit = {"session_id": sid, "hook_event_name": "PreToolUse", "cwd": str(broken),
            "tool_name": "Edit", "tool_input": {"file_path": "a.py", "old_string": "1",
                                                "new_string": "2"}}  # fmt: skip
    out = http.post(HOOK, json=edit).json()["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "configuration is invalid" in out["permissionDecisionReason"]
    read = {**edit, "tool_name": "Read", "tool_input": {"file_path": "a.py"}}
    assert http.post(HOOK, json=read).json() == {}  # reads go on
    assert "config_error" in _types(http, sid)


# -- the home serve creates --------------------------------------------------------------------
def _modes(home: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(home.stat().st_mode)}
    for dirpath, dirnames, filenames in os.walk(home):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            out[str(path.relative_to(home))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def test_serve_creates_a_private_home(spawn: Callable[..., Service]) -> None:
    svc = spawn("--no-access-log")
    auth = {"authorization": f"Bearer {svc.token}"}
    with httpx.Client(base_url=svc.url, headers=auth, timeout=30) as h:
        call = {"tool": "Bash", "input": {"command": "pytest -q"}}
        cid = h.post("/v1/sessions/priv/authorize", json=call).json()["call_id"]
        body = {**call, "tool_call_id": cid, "output": "3 passed", "exit_code": 0}
        assert h.post("/v1/sessions/priv/record", json=body).status_code == 200
        assert h.get("/v1/sessions").status_code == 200
    modes = _modes(svc.home)
    assert modes["."] == 0o700
    assert {"key", "token", "ledger.db", ".gitignore"} <= set(modes)
    with sqlite3.connect(svc.home / "ledger.db") as db:  # the output: a row, with its event
        assert db.execute("SELECT data FROM blobs").fetchall() == [(b"3 passed",)]
    for name, mode in modes.items():
        path = svc.home / name
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, f"{name}: {oct(mode)}"
    assert (svc.home / ".gitignore").read_text(encoding="utf-8") == GITIGNORE


def test_the_pooled_hook_delivers_inbox_messages_like_the_command_hook(
    service: Service, http: httpx.Client
) -> None:
    sid = _uuid()
    start = {"session_id": sid, "hook_event_name": "SessionStart", "cwd": str(service.project),
             "source": "startup"}  # fmt: skip
    assert http.post(HOOK, json=start).status_code == 200  # the session checks in
    sent = http.post(f"/v1/sessions/{sid}/send", json={"message": "also bump the version"})
    assert sent.status_code == 200, sent.text
    out = http.post(HOOK, json=_prompt(sid, service.project, "fix the parser")).json()
    assert "also bump the version" in out["hookSpecificOutput"]["additionalContext"]

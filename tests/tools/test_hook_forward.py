"""The forwarding hook (``infomark hook claude-code --url``) against a real service.

The hook process posts with one HTTP/1.1 request on a plain socket; these tests run the
real command against a real ``infomark serve`` on 127.0.0.1 and against sockets that
answer wrong, and check that every failure is judged locally (never allowed blindly).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import claude_sandbox_on

from infomark.tools.hooks.forward import _dechunk, _post

if TYPE_CHECKING:
    from conftest import Service

HOOK = [str(Path(sys.executable).with_name("infomark")), "hook", "claude-code"]


def _payload(service_project: Path, sid: str, tool: str = "Read") -> dict[str, object]:
    inp: dict[str, object] = {"file_path": "x"}
    if tool == "Edit":
        inp = {"file_path": str(service_project / "a.py"), "old_string": "a", "new_string": "b"}
    return {"session_id": sid, "transcript_path": "", "cwd": str(service_project),
            "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": inp}  # fmt: skip


def _run(url: str, home: Path, project: Path, payload: dict[str, object]) -> tuple[str, str]:
    done = subprocess.run(
        [*HOOK, "--url", url, "--home", str(home), "--root", str(project)],
        input=json.dumps(payload).encode(), capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.decode(), done.stderr.decode()


def test_the_service_answers_and_its_journal_records_the_call(service: Service) -> None:
    claude_sandbox_on(service.project)  # else the first decision carries the sandbox warning
    sid = f"fwd-{uuid.uuid4().hex[:12]}"
    out, err = _run(service.url, service.home, service.project, _payload(service.project, sid))
    assert out == "" and "judged locally" not in err  # allow is no output
    out, err = _run(service.url, service.home, service.project,
                    _payload(service.project, sid, "Edit"))  # fmt: skip
    assert "judged locally" not in err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_direct_post_equals_the_route(service: Service) -> None:
    sid = f"fwd-{uuid.uuid4().hex[:12]}"
    body = _post(service.url + "/v1", json.dumps(_payload(service.project, sid, "Edit")).encode(),
                 service.token, service.project)  # fmt: skip
    assert body["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_wrong_token_is_judged_locally(service: Service, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "token").write_text("not-the-token")
    out, err = _run(service.url, home, service.project, _payload(service.project, "s", "Edit"))
    assert "HTTP Error 401" in err and "judged locally" in err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    "answer",
    [
        b"",  # closes without a word
        b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{}",  # ends early
        b"HTTP/1.1 200 OK\r\n\r\n[1, 2]",  # not an object
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\n{}",
        b"SSH-2.0-OpenSSH\r\n\r\n",  # not HTTP
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"hoo',  # chunks cut
    ],
)
def test_a_broken_answer_is_judged_locally(tmp_path: Path, answer: bytes) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    home = tmp_path / "home"
    home.mkdir()
    (home / "token").write_text("t" * 32)
    url = f"http://127.0.0.1:{server.getsockname()[1]}"
    try:
        out, err = _run(url, home, tmp_path, _payload(tmp_path, "s", "Edit"))
    finally:
        thread.join(30)
        server.close()
    assert "judged locally" in err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_chunked_answers_are_read() -> None:
    assert _dechunk(b'4\r\n{"a"\r\n3\r\n:1}\r\n0\r\n\r\n') == b'{"a":1}'


def test_a_line_break_in_a_header_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="line break"):
        _post("http://127.0.0.1:9", b"{}", "tok\r\nX-Evil: 1", tmp_path)

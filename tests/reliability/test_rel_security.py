"""Security hygiene: secret files, the bearer token, the bind address, what outputs show.

The key and the token are created 0600 and refused when group or others can read or write
them; the token never reaches the service's logs or answers; the service binds 127.0.0.1
unless told otherwise; every route but health wants the token; audit / events / state
output (CLI and HTTP) never contains the key or the token.
"""

from __future__ import annotations

import base64
import json
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rel_service import RelService, listening_addresses, start_service
from rel_support import ORACLE, ledger_block, run_cli, run_command, stamp_line

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import KeyFileError
from infomark.ledger.init import ensure_token
from infomark.tools.service import API_PREFIX, OPERATIONS


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _busy_session(home: Path, root: Path, session: str = "s") -> None:
    with Gatekeeper.open(home, session, root=root) as gk:
        gk.ingest(ledger_block())
        ev = run_command(gk, ORACLE)
        gk.ingest(stamp_line("C1", ev.ref))
        gk.can_finish("Done.")


def test_key_and_token_are_created_0600(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"
    Gatekeeper.open(home, "s", root=tmp_path).close()
    assert _mode(home / "key") == 0o600
    ensure_token(home)
    assert _mode(home / "token") == 0o600
    init_home = tmp_path / "inited"
    assert run_cli("init", "--home", str(init_home)).returncode == 0
    assert _mode(init_home / "key") == 0o600 and _mode(init_home / "token") == 0o600
    assert _mode(init_home) == 0o700


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644, 0o666, 0o660])
def test_a_key_others_can_reach_is_refused(tmp_path: Path, mode: int) -> None:
    home = tmp_path / ".infomark"
    Gatekeeper.open(home, "s", root=tmp_path).close()
    (home / "key").chmod(mode)
    with pytest.raises(KeyFileError, match="chmod 600"):
        Gatekeeper.open(home, "s", root=tmp_path)


def test_cli_refuses_a_loose_key_with_the_fix(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"
    Gatekeeper.open(home, "s", root=tmp_path).close()
    (home / "key").chmod(0o644)
    proc = run_cli("audit", "--home", str(home))
    assert proc.returncode == 2
    assert b"chmod 600" in proc.stderr and b"Traceback" not in proc.stderr


def test_service_refuses_a_loose_token(tmp_path: Path) -> None:
    home = tmp_path / "project" / ".infomark"
    ensure_token(home)
    (home / "token").chmod(0o644)
    with pytest.raises(AssertionError, match="chmod 600"):
        start_service(tmp_path)  # exits before the readiness line, with the reason


def test_regression_d10_a_home_created_on_first_use_is_private(tmp_path: Path) -> None:
    """D10: `infomark init` makes the home 0700, but the hook / service / API create it on
    first use with the umask (0755): the journal and the tool-output blobs are then
    readable by every local user."""
    home = tmp_path / ".infomark"
    with Gatekeeper.open(home, "s", root=tmp_path) as gk:
        run_command(gk, output="secret tool output")
    assert _mode(home) & 0o077 == 0, oct(_mode(home))


# --------------------------------------------------------------------------- the service


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RelService]:
    s = start_service(tmp_path_factory.mktemp("sec"))
    yield s
    s.stop()


def _paths() -> list[tuple[str, str]]:
    return [
        (op.method, API_PREFIX + op.path.replace("{session}", "s1")) for op in OPERATIONS if op.auth
    ]


def test_every_route_but_health_needs_the_token(svc: RelService) -> None:
    token = svc.token
    bad_headers: list[dict[str, str]] = [
        {},
        {"authorization": ""},
        {"authorization": "Bearer"},
        {"authorization": f"Bearer {token[:-1]}"},
        {"authorization": f"Bearer {token}x"},
        {"authorization": f"Bearer x{token}"},
        {"authorization": f"Basic {base64.b64encode(f'u:{token}'.encode()).decode()}"},
        {"authorization": f"Token {token}"},
        {"authorization": token},
        {"x-api-key": token},
    ]
    with httpx.Client(base_url=svc.url, timeout=30) as h:
        assert h.get(API_PREFIX + "/health").status_code == 200
        for method, path in _paths():
            for headers in bad_headers:
                r = h.request(method, path, headers=headers, json={})
                assert r.status_code == 401, f"{method} {path} {headers}: {r.status_code}"
                assert r.headers.get("www-authenticate") == "Bearer"
                assert r.json()["error"]["code"] == "unauthorized"
                assert token not in r.text


def test_the_token_and_key_never_reach_logs_or_answers(svc: RelService) -> None:
    key_hex = (svc.home / "key").read_bytes().hex() if (svc.home / "key").exists() else None
    sid = f"sec-{uuid.uuid4().hex[:8]}"
    texts: list[str] = []
    with httpx.Client(base_url=svc.url, headers=svc.headers, timeout=60) as h:
        calls = [
            h.post(f"/v1/sessions/{sid}/ingest", json={"text": ledger_block()}),
            h.post(f"/v1/sessions/{sid}/record",
                   json={"tool": "bash", "input": {"command": ORACLE}, "output": "ok"}),
            h.post(f"/v1/sessions/{sid}/authorize", json={"tool": "Edit"}),
            h.post(f"/v1/sessions/{sid}/finish", json={"text": "Done."}),
            h.get(f"/v1/sessions/{sid}/audit"),
            h.get(f"/v1/sessions/{sid}/events"),
            h.get(f"/v1/sessions/{sid}/state"),
            h.get("/v1/sessions"),
            h.get("/v1/openapi.json"),
            h.post(f"/v1/sessions/{sid}/ingest", content=b"{bad"),
            h.post("/v1/hooks/claude-code", json={"hook_event_name": "PreToolUse",
                                                  "session_id": sid, "tool_name": "Read"}),
            h.get("/v1/sessions/s1", headers={"authorization": f"Bearer {svc.token}WRONG"}),
        ]  # fmt: skip
        texts = [r.text for r in calls]
    key_hex = key_hex or (svc.home / "key").read_bytes().hex()
    log = svc.log()
    assert "GET /v1/sessions" in log, "the access log is on, so the test can fail"
    for where, text in [("log", log), *(("answer", t) for t in texts)]:
        assert svc.token not in text, f"the token leaked into a {where}"
        assert key_hex not in text.lower(), f"the key leaked into a {where}"


def test_the_service_binds_loopback_by_default(tmp_path: Path) -> None:
    svc = start_service(tmp_path, cli=True)
    try:
        assert svc.url.startswith("http://127.0.0.1:"), svc.url
        port = int(svc.url.rsplit(":", 1)[1])
        addresses = listening_addresses(port)
        if addresses:  # /proc/net/tcp is there (Linux): only 127.0.0.1 listens
            assert addresses == {"0100007F"}, addresses
    finally:
        svc.stop()


# --------------------------------------------------------------------------- outputs


def test_cli_outputs_never_show_the_key_or_the_token(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"
    _busy_session(home, tmp_path)
    _busy_session(home, tmp_path, "other")
    token = ensure_token(home)
    key_hex = (home / "key").read_bytes().hex()
    commands = [
        ("audit", "--json", "--verify"),
        ("audit",),
        ("events",),
        ("events", "--all-sessions"),
        ("state",),
        ("gate", "--json"),
    ]
    for args in commands:
        proc = run_cli(*args, "--home", str(home), "--session", "s", cwd=tmp_path)
        assert proc.returncode in (0, 1), (args, proc.stderr)
        out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        assert key_hex not in out.lower() and token not in out, args
    env_key = "ab" * 32
    proc = run_cli("audit", "--json", "--verify", "--home", str(home), "--session", "s",
                   env={"INFOMARK_KEY": env_key})  # fmt: skip
    assert env_key not in (proc.stdout + proc.stderr).decode("utf-8", "replace").lower()


def test_regression_d14_cli_json_output_survives_lone_surrogates(tmp_path: Path) -> None:
    """D14: a session holding a lone surrogate (a claim written with a "\\ud800" escape)
    made `events`, `audit --json`, `state` and `audit --export` exit 70 (UnicodeEncodeError):
    an agent could hide its session from the audit tools with one escape sequence."""
    home = tmp_path / ".infomark"
    with Gatekeeper.open(home, "s", root=tmp_path) as gk:
        assert gk.ingest(ledger_block(text="a \\ud800 b")).ledger_updated
    bundle = str(tmp_path / "bundle.json")
    runs = [("events",), ("audit", "--json"), ("audit", "--verify", "--json"), ("state",),
            ("audit", "--export", bundle)]  # fmt: skip
    for args in runs:
        proc = run_cli(*args, "--home", str(home), "--session", "s", cwd=tmp_path)
        assert proc.returncode == 0, (args, proc.stderr[-300:])
        for line in proc.stdout.decode("utf-8").splitlines() if args == ("events",) else []:
            json.loads(line)
    assert run_cli("verify-bundle", bundle, cwd=tmp_path).returncode == 0

"""The HTTP approval is an operator act (issue 11 §1): the service token is not enough.

``POST …/approve`` needs the operator token from ``serve --operator-token-file`` (a 0600
file outside the ledger home); without one configured every approval is refused. Real
uvicorn in a subprocess, real httpx.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.tools.http_client import Client, ServiceError

EXE = str(Path(sys.executable).with_name("infomark"))


def _sid() -> str:
    return f"op-{uuid.uuid4().hex[:12]}"


def _token_file(path: Path, mode: int = 0o600) -> tuple[Path, str]:
    token = secrets.token_urlsafe(32)
    path.write_text(token + "\n", encoding="utf-8")
    path.chmod(mode)
    return path, token


def _approvals(home: Path, sid: str) -> list[dict[str, Any]]:
    with Gatekeeper.open(home, sid, root=home.parent) as gk:
        return [e.payload for e in gk.events() if e.type == "approval"]


def test_without_an_operator_token_the_service_token_cannot_approve(spawn: Any) -> None:
    svc = spawn("--no-access-log")
    sid = _sid()
    headers = {"authorization": f"Bearer {svc.token}"}  # what an agent that read the home has
    with httpx.Client(base_url=svc.url, headers=headers, timeout=30) as http:
        for body in ({"by": "user"}, {"by": "user", "operator_token": svc.token}):
            r = http.post(f"/v1/sessions/{sid}/approve", json=body)
            assert r.status_code == 403, r.text
            err = r.json()["error"]
            assert err["code"] == "operator_only" and "--operator-token-file" in err["message"]
            assert svc.token not in r.text
    assert _approvals(svc.home, sid) == []


def test_the_operator_token_approves_and_nothing_else_does(spawn: Any, tmp_path: Path) -> None:
    path, operator = _token_file(tmp_path / "operator-token")
    svc = spawn("--no-access-log", "--operator-token-file", str(path))
    sid = _sid()
    with Client(svc.url, token=svc.token, session=sid) as client:
        for wrong in (None, svc.token, operator[:-1], ""):
            with pytest.raises(ServiceError) as info:
                client.approve(by="user", operator_token=wrong)
            assert info.value.status == 403 and info.value.code == "operator_only"
        assert _approvals(svc.home, sid) == []
        client.approve(by="operator", note="plan read", operator_token=operator)
    assert [(a["by"], a["note"]) for a in _approvals(svc.home, sid)] == [("operator", "plan read")]
    assert operator not in svc.log()


@pytest.mark.parametrize("case", ["missing", "shared", "in_home", "short"])
def test_an_unusable_operator_token_file_stops_the_start(tmp_path: Path, case: str) -> None:
    project = tmp_path / "project"
    home = project / ".infomark"
    home.mkdir(parents=True)
    path = {
        "missing": tmp_path / "nope",
        "shared": _token_file(tmp_path / "t", 0o644)[0],
        "in_home": _token_file(home / "operator")[0],
        "short": tmp_path / "short",
    }[case]
    if case == "short":
        path.write_text("abc\n")
        path.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
    args = ["serve", "--home", str(home), "--port", "0", "--operator-token-file", str(path)]
    proc = subprocess.run(
        [EXE, *args], capture_output=True, text=True, cwd=project, env=env, timeout=60
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "operator-token-file" in proc.stderr and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr

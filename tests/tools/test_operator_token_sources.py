"""Issue 27: the operator token never on a command line nor in the agent's environment.

``infomark serve`` reads it from an inherited descriptor (``--operator-token-fd``), from
``$INFOMARK_OPERATOR_TOKEN`` (then removed from its environment), or from the well-known
``~/.config/infomark/operator-token`` (a directory the agent's sandbox hides); ``doctor`` flags a
token file named on a running command line and a token in the environment. Real uvicorn in a
subprocess, real httpx.
"""

from __future__ import annotations

import os
import secrets
import uuid
from pathlib import Path
from typing import Any

import pytest

from infomark.tools.doctor_sandbox import sandbox_findings, token_command_lines
from infomark.tools.http_client import Client, ServiceError
from infomark.tools.operator_token import default_operator_token_path
from tests.tools.conftest import start_service, stop_service


def _approve(svc: Any, operator: str) -> None:
    sid = f"op-{uuid.uuid4().hex[:12]}"
    with Client(svc.url, token=svc.token, session=sid) as client:
        with pytest.raises(ServiceError) as info:
            client.approve(by="user", operator_token=svc.token)
        assert info.value.code == "operator_only"
        client.approve(by="operator", note="ok", operator_token=operator)


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_a_token_on_a_descriptor_is_nowhere_on_the_command_line(tmp_path: Path) -> None:
    operator = secrets.token_urlsafe(32)
    token_file = tmp_path / "operator-token"
    token_file.write_text(operator + "\n")
    token_file.chmod(0o600)
    fd = os.open(token_file, os.O_RDONLY)
    try:
        svc = start_service(tmp_path / "svc", "--operator-token-fd", str(fd), pass_fds=(fd,))
    finally:
        os.close(fd)
    try:
        _approve(svc, operator)
        line = _cmdline(svc.proc.pid)
        assert str(token_file) not in line and operator not in line
        assert svc.proc.pid not in [pid for pid, _ in token_command_lines()]
    finally:
        stop_service(svc)


def test_a_token_in_the_environment_is_read_once(tmp_path: Path) -> None:
    operator = secrets.token_urlsafe(32)
    svc = start_service(tmp_path / "svc", env_extra={"INFOMARK_OPERATOR_TOKEN": operator})
    try:
        _approve(svc, operator)
    finally:
        stop_service(svc)


def test_the_well_known_file_is_read_by_default(tmp_path: Path) -> None:
    user = tmp_path / "user"
    path = default_operator_token_path(str(user))
    path.parent.mkdir(parents=True, mode=0o700)
    operator = secrets.token_urlsafe(32)
    path.write_text(operator + "\n")
    path.chmod(0o600)
    svc = start_service(tmp_path / "svc", env_extra={"HOME": str(user)})
    try:
        _approve(svc, operator)
    finally:
        stop_service(svc)


def test_doctor_flags_a_token_file_on_a_command_line(tmp_path: Path) -> None:
    path = tmp_path / "operator-token"
    path.write_text(secrets.token_urlsafe(32) + "\n")
    path.chmod(0o600)
    svc = start_service(tmp_path / "svc", "--operator-token-file", str(path))
    try:
        assert (svc.proc.pid, str(path)) in token_command_lines()
        env = {"HOME": str(tmp_path / "user"), "PATH": os.environ["PATH"]}
        found = [
            f for f in sandbox_findings(svc.home, svc.project, env)
            if f.check == "operator_token_visible" and str(svc.proc.pid) in f.message
        ]  # fmt: skip
        assert [f.status for f in found] == ["problem"]
        assert "--operator-token-fd" in found[0].fix
    finally:
        stop_service(svc)


def test_doctor_flags_a_token_in_the_environment(tmp_path: Path) -> None:
    env = {"INFOMARK_OPERATOR_TOKEN": "x" * 32, "HOME": str(tmp_path)}
    found = [
        f for f in sandbox_findings(tmp_path / "h", tmp_path, env) if "environment" in f.message
    ]
    assert [f.status for f in found] == ["problem"]

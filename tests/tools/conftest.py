"""A real ``infomark`` HTTP service in a subprocess on 127.0.0.1 (port 0), and clients of it.

The server prints one readiness line once it accepts connections; a reader thread
drains its output (so a full pipe never stalls it), keeps every line for the
tests, and signals readiness. Waits are bounded; nothing sleeps.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from infomark.tools.http_client import Client
from infomark.tools.serve import READY_PREFIX

_READY_RE = re.compile(re.escape(READY_PREFIX) + r"(http://\S+)/v1\b")
_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 15.0


@dataclass
class _Output:
    """The server's combined stdout/stderr, read by a daemon thread."""

    lines: list[str] = field(default_factory=list)
    url: str | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def drain(self, stream: IO[str]) -> None:
        for line in stream:
            with self.lock:
                self.lines.append(line.rstrip("\n"))
                self.lock.notify_all()
            m = _READY_RE.search(line)
            if m and self.url is None:
                self.url = m.group(1)
                self.ready.set()
        self.ready.set()  # EOF: the process died (url stays None)

    def text(self) -> str:
        with self.lock:
            return "\n".join(self.lines)

    def wait_for(self, needle: str, timeout: float = _START_TIMEOUT) -> str:
        """The output once a line holding ``needle`` has been read (the reader thread may
        lag the server's write); bounded, woken by each new line, never a sleep."""
        with self.lock:
            self.lock.wait_for(lambda: any(needle in line for line in self.lines), timeout)
            return "\n".join(self.lines)


@dataclass
class Service:
    url: str
    home: Path
    project: Path
    token: str
    proc: subprocess.Popen[str]
    output: _Output
    reader: threading.Thread

    def log(self, *, after: str | None = None) -> str:
        """The server's output so far; with ``after``, once a line holding it was read."""
        return self.output.text() if after is None else self.output.wait_for(after)

    def stop(self) -> int:
        """SIGTERM, wait, and return the exit status (uvicorn re-raises the signal: -15)."""
        return stop_service(self)


def new_session(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _env(store: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
    env["PYTHONUNBUFFERED"] = "1"
    if store is not None:
        env["INFOMARK_STORE"] = store
    return env


#: What the tests' services declare by default (``serve --agent-sandbox``): no agent runs
#: anything here, the tests' own calls stand for its commands; the sandbox's own tests
#: (test_service_sandbox.py) start services without it.
FIXTURE_SANDBOX = "no agent: the tests' own calls stand for its commands"


def start_service(
    base: Path,
    *extra: str,
    store: str | None = None,
    home: Path | None = None,
    project: Path | None = None,
    env_extra: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    agent_sandbox: str | None = FIXTURE_SANDBOX,
) -> Service:
    """``infomark serve`` on ``base/project``; ``store`` a PostgreSQL URL (the service's
    ``INFOMARK_STORE``); ``home`` another home than ``base/project/.infomark``; ``project``
    another (existing) project root; ``env_extra`` variables added to its environment,
    ``pass_fds`` descriptors it inherits; ``agent_sandbox`` the operator's declaration (None:
    none)."""
    if project is None:
        from helpers import OWN_RUNS_TOML

        project = base / "project"
        project.mkdir(parents=True)
        # the service's routes and sessions are the subject, not grounding: the operator's
        # explicit opt-out of attested runs (no sandboxed run is paid for at each finish)
        (project / "infomark.toml").write_text(OWN_RUNS_TOML)
    home = home or project / ".infomark"
    cmd = [
        sys.executable,
        "-m",
        "infomark.tools.serve",
        "--home",
        str(home),
        "--root",
        str(project),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        *(["--agent-sandbox", agent_sandbox] if agent_sandbox is not None else []),
        *extra,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=project,
        env={**_env(store), **(env_extra or {})},
        pass_fds=pass_fds,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    assert proc.stdout is not None
    output = _Output()
    reader = threading.Thread(target=output.drain, args=(proc.stdout,), daemon=True)
    reader.start()
    if not output.ready.wait(_START_TIMEOUT) or output.url is None:
        _stop(proc, reader)
        pytest.fail(f"the service did not start:\n{output.text()}")
    token = (home / "token").read_text().strip()
    return Service(output.url, home, project, token, proc, output, reader)


def _stop(proc: subprocess.Popen[str], reader: threading.Thread) -> None:
    proc.terminate()
    try:
        proc.wait(_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(_STOP_TIMEOUT)
    reader.join(_STOP_TIMEOUT)  # the output is complete once the pipe hits EOF


def stop_service(svc: Service) -> int:
    """Stop the server (SIGTERM) and return its exit code."""
    _stop(svc.proc, svc.reader)
    return int(svc.proc.returncode)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One server per test module; tests keep apart by using their own session ids."""
    svc = start_service(tmp_path_factory.mktemp("svc"))
    yield svc
    stop_service(svc)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., Service]]:
    """Start a private server with extra ``serve`` flags; stopped after the test."""
    started: list[Service] = []

    def start(*extra: str, **options: Any) -> Service:
        svc = start_service(tmp_path / f"svc{len(started)}", *extra, **options)
        started.append(svc)
        return svc

    yield start
    for svc in started:
        if svc.proc.poll() is None:
            stop_service(svc)


@pytest.fixture
def http(service: Service) -> Iterator[httpx.Client]:
    """An httpx client of the module's service, with its token."""
    headers = {"authorization": f"Bearer {service.token}"}
    with httpx.Client(base_url=service.url, headers=headers, timeout=30) as h:
        yield h


@pytest.fixture
def session_id() -> str:
    return new_session()


@pytest.fixture
def client(service: Service, session_id: str) -> Iterator[Client]:
    with Client(service.url, token=service.token, session=session_id) as c:
        yield c

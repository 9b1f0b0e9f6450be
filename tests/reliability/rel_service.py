"""A real ``infomark serve`` in a subprocess (uvicorn, 127.0.0.1, port 0), its log and its RSS.

Unlike tests/tools/conftest.py this keeps stdout and stderr apart, so a test can check
what the service logs, and it reads the server's RSS from ``/proc`` for the load soak.
Readiness is the server's own line on stdout; every wait is bounded; nothing sleeps.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from rel_support import EXE, child_env

__all__ = ["RelService", "listening_addresses", "start_service"]

_READY = re.compile(r"infomark: serving (http://\S+)/v1\b")
_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 20.0


@dataclass
class _Stream:
    lines: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str | None = None
    ready: threading.Event = field(default_factory=threading.Event)

    def drain(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.lock:
                self.lines.append(line)
            m = _READY.search(line)
            if m and self.url is None:
                self.url = m.group(1)
                self.ready.set()
        self.ready.set()  # EOF

    def text(self) -> str:
        with self.lock:
            return "\n".join(self.lines)


@dataclass
class RelService:
    url: str
    home: Path
    project: Path
    token: str
    proc: subprocess.Popen[bytes]
    out: _Stream
    err: _Stream
    readers: list[threading.Thread]

    def log(self) -> str:
        """Everything the server printed so far (stdout, then stderr)."""
        return self.out.text() + "\n" + self.err.text()

    def rss_kb(self) -> int:
        """The server process's resident set size now (KiB), from /proc."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS line")

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(_STOP_TIMEOUT)
        for reader in self.readers:
            reader.join(_STOP_TIMEOUT)
        return int(self.proc.returncode)


def start_service(base: Path, *extra: str, cli: bool = False) -> RelService:
    """Start the service on ``base/project/.infomark``; ``cli`` uses ``infomark serve``."""
    project = base / "project"
    project.mkdir(parents=True, exist_ok=True)
    home = project / ".infomark"
    if cli:
        cmd = [EXE, "serve", "--home", str(home), "--port", "0", *extra]
    else:
        cmd = [sys.executable, "-m", "infomark.tools.serve", "--home", str(home),
               "--root", str(project), "--port", "0", *extra]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=project, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Stream(), _Stream()
    readers = [
        threading.Thread(target=out.drain, args=(proc.stdout,), daemon=True),
        threading.Thread(target=err.drain, args=(proc.stderr,), daemon=True),
    ]
    for r in readers:
        r.start()
    if not out.ready.wait(_START_TIMEOUT) or out.url is None:
        proc.kill()
        proc.wait(_STOP_TIMEOUT)
        raise AssertionError(f"the service did not start:\n{out.text()}\n{err.text()}")
    token = (home / "token").read_text().strip()
    return RelService(out.url, home, project, token, proc, out, err, readers)


def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) listening on ``port``."""
    found: set[str] = set()
    for name in ("tcp", "tcp6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            cols = line.split()
            addr, _, hexport = cols[1].partition(":")
            if int(hexport, 16) == port and cols[3] == "0A":  # 0A: LISTEN
                found.add(addr)
    return found

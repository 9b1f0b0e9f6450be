"""The change feed's client: ask the tree's watcher which tracked paths may have changed.

:func:`token` (before a watched call) and :func:`since` (after it) talk to the watcher
process (:mod:`infomark.gates.feedd`) of a git work tree; :func:`launch` starts one. The
feed can only make the compare look at fewer paths it would otherwise ``lstat``; it never
says "no change" on its own authority:

- The watcher is authenticated by the kernel, not by anything it says: the pin file (written
  by the launcher, 0600 in the home's ``watch/``) names its pid, its start time (field 22 of
  ``/proc/PID/stat``) and the boot; the peer of the socket (``SO_PEERCRED``) must be exactly
  that process. A watcher the agent killed and replaced — even one running our code, on the
  same socket name — is another process, so the compare walks.
- The window is pinned too: the token taken before the call names the watcher and the time,
  and the answer after the call must come from that same process, which vouches only for a
  window that began after all its watches were in place (so it lived through the whole
  call); otherwise, or on any error, timeout, overflow or incomplete window, :func:`since`
  returns None and the caller walks the whole tree.

Standard library only, without the ``socket`` module (``_socket`` is the C module under it;
the hook's start-up pays for neither ``socket`` nor ``subprocess`` unless it launches).
"""

from __future__ import annotations

import _socket
import json
import os
import struct
import sys
import time
from pathlib import Path

from infomark.kernel.digest import sha256
from infomark.kernel.regular import read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = ["Token", "alive", "index_count", "launch", "pin_path", "since", "stop", "token"]


TIMEOUT = 3.0  # seconds a request may take (the barrier itself gives up after 2 s)

Token = dict[str, int | str]


def _ident(top: Path) -> str:
    return sha256(str(top).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def pin_path(watch_dir: Path, top: Path) -> Path:
    return watch_dir / f"feed-{_ident(top)}.json"


def _ctl_dir(watch_dir: Path, top: Path) -> Path:
    return watch_dir / f"feed-{_ident(top)}.d"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None when it is gone
    (or a zombie: exited, not yet reaped by its parent)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        return None if fields[0] in (b"Z", b"X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _read_pin(watch_dir: Path, top: Path) -> dict[str, Any] | None:
    try:
        pin = json.loads(pin_path(watch_dir, top).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(pin, dict):
        return None
    ok = (
        isinstance(pin.get("pid"), int)
        and isinstance(pin.get("start"), int)
        and isinstance(pin.get("sock"), str)
        and pin.get("boot") == _boot_id()
        and pin.get("top") == str(top)
        and pin.get("ctl") == str(_ctl_dir(watch_dir, top))
        and pin.get("file") == str(pin_path(watch_dir, top))
    )
    return pin if ok else None


def alive(pin: dict[str, Any]) -> bool:
    """The pinned process still exists (same pid, same start time, same boot)."""
    return pin.get("boot") == _boot_id() and _start_time(pin["pid"]) == pin["start"]


def _argv(top: Path, ctl: Path, name: str, pin_file: Path) -> list[str]:
    return [
        sys.executable,
        "-s",
        "-m",
        "infomark.gates.feedd",
        str(top),
        str(ctl),
        name,
        str(pin_file),
    ]


def _genuine(pid: int, argv: list[str]) -> bool:
    """``pid`` runs our interpreter with exactly the command line :func:`launch` gives it.

    Not proof (a same-user program can rewrite its own argv), but a process the agent started
    some other way (another script, another program) on a socket name it squatted fails it.
    """
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return False
    want = b"\0".join(os.fsencode(a) for a in argv) + b"\0"
    return exe == os.path.realpath(sys.executable) and cmdline == want


def _ask(pin: dict[str, Any], request: dict[str, Any]) -> dict[str, Any] | None:
    """One request to the pinned watcher; None unless the peer is exactly that process."""
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        s.settimeout(TIMEOUT)
        s.connect("\0" + pin["sock"])
        pid, uid, _gid = struct.unpack(
            "3i", s.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        )
        if pid != pin["pid"] or uid != os.getuid() or not alive(pin):
            return None
        if not _genuine(
            pid, _argv(Path(pin["top"]), Path(pin["ctl"]), pin["sock"], Path(pin["file"]))
        ):
            return None
        s.sendall(json.dumps(request).encode() + b"\n")
        chunks = []
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        reply = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    finally:
        s.close()
    return reply if isinstance(reply, dict) and reply.get("ok") is True else None


def index_count(git_dir: StrPath) -> int:
    try:
        head = read_regular(os.path.join(git_dir, "index"), 12)
    except OSError:
        return 0
    if len(head) < 12 or head[:4] != b"DIRC":
        return 0
    return int(struct.unpack_from(">I", head, 8)[0])


def token(watch_dir: StrPath, top: StrPath, git_dir: StrPath, *, min_tracked: int) -> Token | None:
    """The feed's window start before a call, or None (then the compare walks).

    No request: the token is the pinned watcher's identity and the ``CLOCK_MONOTONIC`` time
    now; :func:`since` asks that process, and it vouches only for a window that started after
    it was ready. With no live watcher (and a tree big enough), one is launched without
    waiting for it: this call walks, the next ones use the feed.
    """
    watch_dir, top, git_dir = Path(watch_dir), Path(top), Path(git_dir)
    t = time.monotonic_ns()
    if sys.platform != "linux" or index_count(git_dir) < min_tracked:
        return None
    pin = _read_pin(watch_dir, top)
    if pin is not None and alive(pin):
        return {k: pin[k] for k in ("pid", "start", "boot", "sock")} | {"t": t}
    launch(watch_dir, top)
    return None


def since(watch_dir: StrPath, top: StrPath, tok: Token) -> list[str] | None:
    """Paths (relative to ``top``; ``dir/`` for a whole directory) that may have changed
    since ``tok``, from the same watcher process; None: walk the whole tree."""
    watch_dir, top = Path(watch_dir), Path(top)
    pin = _read_pin(watch_dir, top)
    if pin is None or any(pin.get(k) != tok.get(k) for k in ("pid", "start", "boot", "sock")):
        return None  # not the watcher that gave the token (replaced, restarted, or gone)
    t = tok.get("t")
    if not isinstance(t, int):
        return None
    reply = _ask(pin, {"op": "since", "t": t})
    paths = reply.get("paths") if reply is not None else None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return None
    return paths


def launch(watch_dir: Path, top: Path, *, wait: float | None = None) -> dict[str, Any] | None:
    """Start the watcher for ``top`` (detached) and pin it; with ``wait``, block (bounded)
    until it reports ready. Returns the pin, or None when it could not start (or get ready)."""
    import subprocess  # lazy: once per watcher, not per call

    ctl = _ctl_dir(watch_dir, top)
    try:
        ctl.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    name = f"infomark-feed-{os.urandom(16).hex()}"
    pin_file = pin_path(watch_dir, top)
    from infomark.kernel.environ import agent_env

    env = agent_env()
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    try:
        proc = subprocess.Popen(
            _argv(top, ctl, name, pin_file),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=env,
            close_fds=True,
            start_new_session=True,
        )
    except OSError:
        return None
    start = _start_time(proc.pid)
    if start is None:
        return None
    pin = {
        "pid": proc.pid,
        "start": start,
        "boot": _boot_id(),
        "sock": name,
        "top": str(top),
        "ctl": str(ctl),
        "file": str(pin_file),
    }
    tmp = pin_file.with_suffix(".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(pin, fh)
        os.replace(tmp, pin_file)
    except OSError:
        proc.kill()
        return None
    assert proc.stdout is not None
    if wait is None:
        proc.stdout.close()
        return pin
    import select

    ready, _, _ = select.select([proc.stdout], [], [], wait)
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    return pin if line == b"ready\n" else None


def stop(watch_dir: Path, top: Path) -> None:
    """End the pinned watcher (tests, bench): SIGTERM to exactly the pinned process."""
    import signal

    pin = _read_pin(watch_dir, top)
    if pin is not None and alive(pin):
        os.kill(pin["pid"], signal.SIGTERM)

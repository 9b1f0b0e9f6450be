"""The change-feed watcher process: ``python -m infomark.gates.feedd TOP CTL NAME PIN``.

Started (detached) by :func:`infomark.gates.feed.launch`; it watches the work tree ``TOP``
(:class:`~infomark.gates.inotify.TreeWatch`), serves one request per connection on the
abstract Unix socket ``NAME`` (one JSON line in, one out), and exits — so that the compare
falls back to the full walk — on every doubt: an overflowed queue, a watch it cannot add,
the tree or the control directory ``CTL`` gone, a pin file ``PIN`` that no longer names this
process (another watcher replaced it), or :data:`IDLE` seconds without a request.

One request: ``{"op": "since", "t": T}`` (``T``: ``CLOCK_MONOTONIC`` in ns, taken before
the call) runs the barrier, then answers ``{"ok": true, "paths": [...]}``, the candidates read
at or after ``T``; ``ok: false`` when the barrier timed out, or the watcher was not ready by
``T``, or dropped candidates since. Nothing a request says changes what the watcher
remembers: a client can only read.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import time

from infomark.gates.inotify import FeedBroken, TreeWatch
from infomark.kernel.contexts import suppress

__all__ = ["IDLE", "main", "serve"]

IDLE = 1800.0  # seconds without a request before the watcher exits
_TICK_MS = 5000


def _still_pinned(pin: str) -> bool:
    try:
        with open(pin, encoding="utf-8") as fh:
            return bool(json.load(fh).get("pid") == os.getpid())
    except (OSError, ValueError, AttributeError):
        return False


def _answer(watch: TreeWatch, line: bytes) -> dict[str, object]:
    try:
        req = json.loads(line)
    except ValueError:
        return {"ok": False, "error": "not JSON"}
    op = req.get("op") if isinstance(req, dict) else None
    if op == "since":
        t = req.get("t")
        if not isinstance(t, int) or isinstance(t, bool):
            return {"ok": False, "error": "t must be an integer"}
        if not watch.barrier():
            return {"ok": False, "error": "barrier timed out"}
        watch.rescan()
        paths = watch.since(t)
        if paths is None:
            return {"ok": False, "error": "window incomplete"}
        return {"ok": True, "paths": paths}
    return {"ok": False, "error": f"unknown op {op!r}"}


def _serve_one(watch: TreeWatch, srv: socket.socket) -> None:
    try:
        conn, _ = srv.accept()
    except OSError:
        return
    with conn:
        conn.settimeout(2.0)
        buf = b""
        try:
            while b"\n" not in buf and len(buf) < 4096:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                buf += chunk
            reply = _answer(watch, buf.split(b"\n", 1)[0])
            conn.sendall(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        except OSError:
            return


def serve(top: str, ctl: str, name: str, pin: str) -> int:
    try:
        watch = TreeWatch(top, ctl)
    except (FeedBroken, OSError):
        return 3
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        srv.bind("\0" + name)
    except OSError:
        return 4  # the name is taken: not ours to serve
    srv.listen(64)
    with open(os.devnull, "wb") as null:
        with suppress(OSError):
            os.write(1, b"ready\n")  # the launcher may be waiting for this line
        os.dup2(null.fileno(), 1)
    poller = select.poll()
    poller.register(watch.fd, select.POLLIN)
    poller.register(srv.fileno(), select.POLLIN)
    last = time.monotonic()
    try:
        while True:
            ready = poller.poll(_TICK_MS)
            for fd, _ev in ready:
                if fd == watch.fd:
                    watch.drain()
                else:
                    _serve_one(watch, srv)
                    last = time.monotonic()
            if not ready and (time.monotonic() - last > IDLE or not _still_pinned(pin)):
                return 0  # a quiet tick: idle too long, or replaced by another watcher
    except (FeedBroken, OSError):
        return 5
    finally:
        srv.close()  # first: no answer after a doubt
        watch.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4:
        print("usage: python -m infomark.gates.feedd TOP CTL NAME PIN", file=sys.stderr)
        return 2
    return serve(*args)


if __name__ == "__main__":
    raise SystemExit(main())

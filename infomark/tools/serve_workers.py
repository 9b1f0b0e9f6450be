"""``infomark serve --workers N``: one listener, N worker processes, each connection to the
least busy.

Why processes: one Python process runs one hook call at a time (the GIL), so three agents
posting together wait for each other's calls: on the project's 2-core machine three clients
back to back saw a p99 of 9.4–12 ms where one saw 3.4 ms (docs/performance.md). Worker
processes run calls on every core.

How: this process binds the port, starts the workers (``python -m
infomark.tools.serve_worker``), accepts each connection and passes the connected socket
itself (``SCM_RIGHTS`` over a private ``AF_UNIX`` pair) to the worker that holds the fewest
open connections at that moment; the worker serves it to its end and says when it closed.
The forwarding hook (``infomark hook claude-code --url``) opens one connection per call, so
this balances calls; a kept-alive client stays with its worker. Nothing of a request passes
through this process (no copy, no parse): it costs an ``accept`` and a ``sendmsg`` per
connection. A worker that dies is replaced (its open connections are lost: the forwarding
hook then judges locally, as when the service is down); a worker that dies before it was
ever ready stops the service with its error. SIGTERM or SIGINT stops accepting, passes
SIGTERM to the workers (each finishes its open requests, as a single process does) and waits
for them. A worker whose parent is gone stops by itself (its channel ends).

Sessions are not pinned to a worker: workers of one home are separate processes on one
ledger, exactly as command hooks are (each catches up with the journal before it judges;
commits queue on the writer lock), so a session whose calls reach two workers is judged on
every committed event either way.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from infomark.kernel.errors import InfomarkError, UserError
from infomark.tools.serve_worker import CLOSED, HANDOVER, READY

__all__ = ["WorkerOptions", "auto_workers", "check_count", "run_workers"]

READY_TIMEOUT = 120.0  # seconds a starting worker has to say it serves
STOP_TIMEOUT = 10.0  # seconds the workers have to finish after SIGTERM (then SIGKILL)
MAX_WORKERS = 16


def auto_workers() -> int:
    """One worker per CPU this process may run on, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


@dataclass(frozen=True)
class WorkerOptions:
    """What every worker is started with (the service's options, resolved)."""

    home: Path
    root: Path
    profile: str | None
    access_log: bool
    log_level: str
    max_body_bytes: int
    max_open_sessions: int
    operator_token: str | None
    agent_sandbox: str | None


@dataclass
class _Worker:
    index: int
    proc: subprocess.Popen[bytes]
    channel: socket.socket
    ready: bool = False
    replacing: bool = False  # started in place of one that died
    open: int = 0  # connections handed over and not yet closed
    given: int = 0  # connections handed over in all (ties go to the one given fewer)


def _spawn(index: int, options: WorkerOptions) -> _Worker:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    keep = [theirs.fileno()]
    argv = [
        sys.executable, "-m", "infomark.tools.serve_worker",
        "--channel-fd", str(theirs.fileno()),
        "--home", str(options.home), "--root", str(options.root),
        "--log-level", options.log_level,
        "--max-body-bytes", str(options.max_body_bytes),
        "--max-open-sessions", str(options.max_open_sessions),
    ]  # fmt: skip
    if options.profile is not None:
        argv += ["--profile", options.profile]
    if not options.access_log:
        argv.append("--no-access-log")
    if options.agent_sandbox is not None:
        argv += ["--agent-sandbox", options.agent_sandbox]
    token_r = -1
    if options.operator_token is not None:  # on a pipe, never on the command line
        token_r, token_w = os.pipe()
        os.write(token_w, options.operator_token.encode("utf-8"))  # < a pipe's buffer
        os.close(token_w)
        keep.append(token_r)
        argv += ["--operator-token-fd", str(token_r)]
    try:
        proc = subprocess.Popen(argv, pass_fds=keep, stdin=subprocess.DEVNULL)
    finally:
        theirs.close()
        if token_r >= 0:
            os.close(token_r)
    ours.setblocking(False)
    return _Worker(index, proc, ours)


class _Supervisor:
    """The accept loop: hand connections over, count them back, replace dead workers."""

    def __init__(self, sock: socket.socket, count: int, options: WorkerOptions) -> None:
        self.sock = sock
        self.options = options
        self.workers: list[_Worker] = []
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        self.caught: list[int] = []  # signals that stopped the service, re-raised at the end
        self._count = count
        self._wake_r, self._wake_w = socket.socketpair()
        for end in (self._wake_r, self._wake_w):
            end.setblocking(False)

    # -- lifecycle ---------------------------------------------------------------------

    def run(self, on_ready: Callable[[], None]) -> None:
        # Signals reach the main thread only (as uvicorn, elsewhere none are caught)
        main = threading.current_thread() is threading.main_thread()
        stops = (signal.SIGINT, signal.SIGTERM) if main else ()
        old = {s: signal.signal(s, self._on_signal) for s in stops}
        old_wake = (
            signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False) if main else -1
        )
        self.selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            for k in range(self._count):
                self._start(k)
            if not self._wait_ready():
                return
            self.sock.setblocking(False)
            self.selector.register(self.sock, selectors.EVENT_READ, "accept")
            on_ready()
            while not self.stopping:
                self._step()
        finally:
            if main:
                signal.set_wakeup_fd(old_wake)
            for s, handler in old.items():
                signal.signal(s, handler)
            self._stop_all()
            self.selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping = True
        self.caught.append(signum)

    def _start(self, index: int) -> None:
        worker = _spawn(index, self.options)
        if index < len(self.workers):
            self.workers[index] = worker
        else:
            self.workers.append(worker)
        self.selector.register(worker.channel, selectors.EVENT_READ, worker)

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT
        while not all(w.ready for w in self.workers):
            if self.stopping:
                return False
            if time.monotonic() >= deadline:
                raise InfomarkError(
                    f"a worker did not start within {READY_TIMEOUT:.0f} s; "
                    "run `infomark serve` without --workers to see why"
                )
            self._step(timeout=1.0)
        return True

    def _stop_all(self) -> None:
        for w in self.workers:
            if w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for w in self.workers:
            try:
                w.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            w.channel.close()

    # -- the loop ----------------------------------------------------------------------

    def _step(self, timeout: float | None = None) -> None:
        for key, _events in self.selector.select(timeout):
            if key.data == "wake":
                try:
                    while self._wake_r.recv(64):
                        pass
                except BlockingIOError:
                    pass
            elif key.data == "accept":
                self._accept()
            elif isinstance(key.data, _Worker):
                self._hear(key.data)

    def _hear(self, worker: _Worker) -> None:
        while True:
            try:
                data = worker.channel.recv(64)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._lost(worker)
                return
            for byte in data:
                if byte == READY[0]:
                    worker.ready = True
                    if worker.replacing:
                        print(
                            f"infomark: serve: worker {worker.index} (pid {worker.proc.pid}) "
                            "serves again",
                            file=sys.stderr,
                            flush=True,
                        )
                elif byte == CLOSED[0]:
                    worker.open = max(0, worker.open - 1)

    def _lost(self, worker: _Worker) -> None:
        """A worker's channel ended: it exited (or is about to)."""
        self.selector.unregister(worker.channel)
        worker.channel.close()
        code = worker.proc.wait()
        if self.stopping:
            return
        if not worker.ready:
            self.stopping = True
            raise InfomarkError(
                f"worker {worker.index} of `infomark serve --workers` exited with status "
                f"{code} before it was ready (its error is above)"
            )
        print(
            f"infomark: serve: worker {worker.index} (pid {worker.proc.pid}) exited with status "
            f"{code}; starting another (its open connections were lost)",
            file=sys.stderr,
            flush=True,
        )
        self._start(worker.index)
        self.workers[worker.index].replacing = True

    def _accept(self) -> None:
        while True:
            try:
                conn, _addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and the like: say so, keep serving the rest
                print(f"infomark: serve: accept failed: {exc}", file=sys.stderr, flush=True)
                return
            with conn:
                self._hand_over(conn)

    def _hand_over(self, conn: socket.socket) -> None:
        """Give ``conn`` to the ready worker with the fewest open connections."""
        for _ in range(len(self.workers)):
            ready = [w for w in self.workers if w.ready and w.channel.fileno() >= 0]
            if not ready:
                return  # closed unanswered: every worker is restarting
            worker = min(ready, key=lambda w: (w.open, w.given))
            try:
                socket.send_fds(worker.channel, [HANDOVER], [conn.fileno()])
            except OSError:  # it died just now: its channel's end comes to _hear
                worker.ready = False
                continue
            worker.open += 1
            worker.given += 1
            return


def check_count(count: int) -> None:
    """:class:`UserError` unless ``count`` is a worker count this listener takes."""
    if not 1 <= count <= MAX_WORKERS:
        raise UserError(f"--workers {count}: give a number from 1 to {MAX_WORKERS}, or auto")


def run_workers(
    sock: socket.socket, count: int, options: WorkerOptions, on_ready: Callable[[], None]
) -> None:
    """Serve ``sock`` with ``count`` worker processes until SIGINT/SIGTERM; ``on_ready``
    runs once every worker serves. Raises :class:`InfomarkError` when a worker cannot start."""
    check_count(count)
    supervisor = _Supervisor(sock, count, options)
    supervisor.run(on_ready)
    for signum in supervisor.caught[:1]:  # as uvicorn does: the caller sees the signal
        signal.raise_signal(signum)

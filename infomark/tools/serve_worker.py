"""One worker process of ``infomark serve --workers N`` (started by :mod:`.serve_workers`).

A worker is the whole service (``create_app``: its own session pool, lane and WAL
checkpointer on the same home) on uvicorn, except that it listens on nothing: the parent
accepts each TCP connection and hands it over a private ``AF_UNIX`` channel (the descriptor
itself, ``SCM_RIGHTS``), and the worker serves that connection to its end with uvicorn's own
HTTP protocol. On the channel the worker says ``R`` once it is ready and ``-`` each time a
connection it was given has closed, so the parent always knows how many each worker holds.
When the channel ends (the parent is gone, even killed) the worker shuts down as on SIGTERM.

Worker processes of one home are what the command hooks already are: separate processes
on one ledger, each catching its cached sessions up with the journal before it judges, and
queueing its commits behind the others' on the writer lock (:mod:`infomark.ledger.store.
writer_queue`). The operator token arrives on an inherited pipe, never on the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from infomark.kernel.errors import InfomarkError
from infomark.kernel.profiles import PROFILES

__all__ = ["main"]

READY = b"R"  # worker -> parent: serving
CLOSED = b"-"  # worker -> parent: one handed-over connection has closed
HANDOVER = b"c"  # parent -> worker: this message carries one connection


class _Counted(asyncio.Protocol):
    """uvicorn's protocol for one connection, telling the parent when it closes."""

    __slots__ = ("_closed", "_inner")

    def __init__(self, inner: asyncio.Protocol, closed: Callable[[], None]) -> None:
        self._inner = inner
        self._closed = closed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._inner.connection_lost(exc)
        finally:
            self._closed()


class _WorkerServer(uvicorn.Server):
    """uvicorn with no listening socket of its own: connections arrive on ``channel``."""

    def __init__(
        self, config: uvicorn.Config, channel: socket.socket, on_stop: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._channel = channel
        self._on_stop = on_stop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._adopting: set[asyncio.Task[None]] = set()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=[])  # lifespan (the checkpointer), no listener
        if not self.started or self.should_exit:
            return
        loop = self._loop = asyncio.get_running_loop()
        self._channel.setblocking(False)
        loop.add_reader(self._channel.fileno(), self._receive)
        self._tell(READY)

    def _tell(self, what: bytes) -> None:
        with contextlib.suppress(OSError):  # the parent is gone: _receive sees the end
            self._channel.send(what)

    def _receive(self) -> None:
        loop = self._loop
        assert loop is not None
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self._channel, 16, 4)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data, fds = b"", []
            if not data and not fds:  # the parent closed the channel: stop serving
                loop.remove_reader(self._channel.fileno())
                self.should_exit = True
                return
            for fd in fds:
                task = loop.create_task(self._adopt(socket.socket(fileno=fd)))
                self._adopting.add(task)
                task.add_done_callback(self._adopting.discard)

    async def _adopt(self, sock: socket.socket) -> None:
        loop = self._loop
        assert loop is not None
        if self.should_exit:
            sock.close()
            self._tell(CLOSED)
            return
        sock.setblocking(False)
        try:
            await loop.connect_accepted_socket(self._protocol, sock)
        except OSError:  # the client left before it was served
            sock.close()
            self._tell(CLOSED)

    def _protocol(self) -> asyncio.Protocol:
        inner = self.config.http_protocol_class(  # type: ignore[call-arg]
            config=self.config, server_state=self.server_state, app_state=self.lifespan.state
        )
        return _Counted(inner, lambda: self._tell(CLOSED))

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._channel.fileno())
        self._on_stop()  # following event streams end now instead of at the timeout
        await super().shutdown(sockets=None)
        from infomark.tools.otel import shutdown_process_export

        shutdown_process_export()


def run_worker(
    channel: socket.socket,
    *,
    home: Path,
    root: Path,
    profile: str | None,
    access_log: bool,
    log_level: str,
    max_body_bytes: int,
    max_open_sessions: int,
    operator_token_fd: int | None,
    agent_sandbox: str | None,
) -> None:
    """Serve the connections handed over on ``channel`` until SIGTERM/SIGINT or its end."""
    from infomark.tools.serve_config import uvicorn_config
    from infomark.tools.service import create_app

    os.umask(0o077)
    app = create_app(
        home,
        root=root,
        profile=profile,
        max_body_bytes=max_body_bytes,
        max_open_sessions=max_open_sessions,
        operator_token_fd=operator_token_fd,
        agent_sandbox=agent_sandbox,
    )
    config = uvicorn_config(app, log_level=log_level, access_log=access_log)
    _WorkerServer(config, channel, app.state.stopping.set).run()


def _args(argv: list[str] | None) -> Any:
    parser = argparse.ArgumentParser(prog="infomark serve (worker)")
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--profile", choices=PROFILES, default=None)
    parser.add_argument("--no-access-log", action="store_true")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--max-body-bytes", type=int, required=True)
    parser.add_argument("--max-open-sessions", type=int, required=True)
    parser.add_argument("--operator-token-fd", type=int, default=None)
    parser.add_argument("--agent-sandbox", default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """``python -m infomark.tools.serve_worker`` (only the parent starts it)."""
    args = _args(argv)
    channel = socket.socket(fileno=args.channel_fd)
    try:
        from infomark.tools.otel import start_process_export

        start_process_export()
        run_worker(
            channel,
            home=args.home,
            root=args.root,
            profile=args.profile,
            access_log=not args.no_access_log,
            log_level=args.log_level,
            max_body_bytes=args.max_body_bytes,
            max_open_sessions=args.max_open_sessions,
            operator_token_fd=args.operator_token_fd,
            agent_sandbox=args.agent_sandbox,
        )
    except InfomarkError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        channel.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

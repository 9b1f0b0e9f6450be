"""Run the HTTP service on uvicorn (``infomark serve``).

The socket is bound here, before uvicorn starts, so ``port=0`` works: once the
server accepts connections it prints one readiness line to stdout
(``infomark: serving http://HOST:PORT/v1 …``) and, when asked, writes the bound
address to ``port_file`` as JSON (atomically). Logs go to stderr; the access log
prints the client, request line and status only, never a request header.

The home is created through ``ensure_private_dir`` (0700 and a ``.gitignore``) and the
process runs with umask 077, so every file it writes there is 0600. With one worker (the
default) it starts no other process: uvicorn serves in this one. ``workers=N`` starts N
worker processes behind this one's listener (:mod:`infomark.tools.serve_workers`), each
connection to the least busy; they inherit the environment but not the operator token's
variable (it is read here and passed on a pipe).

uvicorn parses HTTP with ``httptools`` and runs on ``uvloop`` (both dependencies; it falls
back to ``h11`` and asyncio where they are missing): ~13% fewer instructions per hook
request than the pure-Python pair (docs/performance.md).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import uvicorn

from infomark.kernel.errors import InfomarkError, UserError
from infomark.kernel.profiles import PROFILES
from infomark.tools.serve_config import uvicorn_config
from infomark.tools.serve_workers import (
    MAX_WORKERS,
    WorkerOptions,
    auto_workers,
    check_count,
    run_workers,
)
from infomark.tools.service import MAX_BODY_BYTES, create_app

__all__ = ["READY_PREFIX", "is_loopback", "main", "parse_workers", "serve"]

READY_PREFIX = "infomark: serving "


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket. Its protocol must be IPPROTO_TCP (not 0): asyncio sets
    TCP_NODELAY only on such sockets, and without it a keep-alive client waits ~40 ms
    (Nagle + delayed ACK) on every response written in two parts."""
    family, kind, proto, _, addr = socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP,
        flags=socket.AI_PASSIVE,
    )[0]  # fmt: skip
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(addr)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server: ``on_ready`` once it accepts connections, ``on_stop`` when it
    begins to shut down (before it waits for open connections)."""

    def __init__(
        self, config: uvicorn.Config, on_ready: Callable[[], None], on_stop: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._on_ready = on_ready
        self._on_stop = on_stop

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            self._on_ready()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._on_stop()  # following event streams end now instead of at the timeout
        await super().shutdown(sockets=sockets)
        from infomark.tools.otel import shutdown_process_export

        shutdown_process_export()  # INFOMARK_OTEL: the batched spans, before uvicorn re-raises


def parse_workers(text: str) -> int:
    """``--workers``: a count, or ``auto`` (one per CPU this process may use, at most 8);
    :class:`UserError` otherwise."""
    if text.strip().lower() == "auto":
        return auto_workers()
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_WORKERS:
        raise UserError(f"--workers {text!r}: give a number from 1 to {MAX_WORKERS}, or auto")
    return count


def _workers_arg(text: str) -> int:
    try:
        return parse_workers(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _write_port_file(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def serve(
    home: Path | str | None = None,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    root: Path | str | None = None,
    profile: str | None = None,
    port_file: Path | str | None = None,
    access_log: bool = True,
    log_level: str = "info",
    max_body_bytes: int = MAX_BODY_BYTES,
    max_open_sessions: int = 128,
    operator_token_file: Path | str | None = None,
    operator_token_fd: int | None = None,
    agent_sandbox: str | None = None,
    workers: int = 1,
) -> None:
    """Serve the ledger home ``home`` on ``host:port`` until SIGINT/SIGTERM.

    ``port=0`` picks a free port; the readiness line and ``port_file`` say which.
    Binding a non-loopback host prints a warning: the token is then the only guard.
    Raises :class:`InfomarkError` for a bad home/config and ``OSError`` when the
    address cannot be bound. ``agent_sandbox``: the operator's declaration that the agent's
    commands run in an OS sandbox hiding the home (:func:`~infomark.tools.service.create_app`).
    ``workers``: worker processes (1: this process serves; see :mod:`.serve_workers`).
    """
    from infomark.ledger.home import default_home

    # Everything this process creates in the home (the journal and its -wal/-shm, blobs,
    # the config cache, the port file) is private: 0600 files, 0700 folders.
    os.umask(0o077)
    home_p = Path(home) if home is not None else default_home()
    _warn(host, agent_sandbox)
    if workers != 1:
        options = WorkerOptions(
            home=home_p.resolve(), root=Path(root or Path.cwd()).resolve(), profile=profile,
            access_log=access_log, log_level=log_level, max_body_bytes=max_body_bytes,
            max_open_sessions=max_open_sessions, operator_token=None, agent_sandbox=agent_sandbox,
        )  # fmt: skip
        token = (operator_token_file, operator_token_fd)
        _serve_workers(host, port, workers, options, token=token, port_file=port_file)
        return
    app = create_app(
        home_p,
        root=root,
        profile=profile,
        max_body_bytes=max_body_bytes,
        max_open_sessions=max_open_sessions,
        operator_token_file=operator_token_file,
        operator_token_fd=operator_token_fd,
        agent_sandbox=agent_sandbox,
    )
    sock = _bind(host, port)
    ready = _announcer(host, sock, home_p, port_file)
    config = uvicorn_config(app, log_level=log_level, access_log=access_log)
    try:
        _Server(config, ready, app.state.stopping.set).run(sockets=[sock])
    finally:
        sock.close()


def _warn(host: str, agent_sandbox: str | None) -> None:
    """What the operator must know before anything is served (to stderr)."""
    if not is_loopback(host):
        print(
            f"infomark: WARNING: binding {host}, which is not a loopback address: anyone who "
            "can reach this port and holds the token can read and write the ledger. Keep "
            "127.0.0.1 unless you need remote access (and then put TLS in front).",
            file=sys.stderr,
            flush=True,
        )
    if agent_sandbox is not None and agent_sandbox.strip():
        print(
            f"infomark: --agent-sandbox: the operator declares that the agent's commands run in "
            f"an OS sandbox that hides the home ({' '.join(agent_sandbox.split())[:300]}); the "
            "runs recorded over HTTP ground claims",
            file=sys.stderr,
            flush=True,
        )


def _announcer(
    host: str, sock: socket.socket, home: Path, port_file: Path | str | None
) -> Callable[[], None]:
    """What to do once the service accepts connections: the port file, the readiness line."""
    bound = int(sock.getsockname()[1])
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    url = f"http://{shown}:{bound}"

    def ready() -> None:
        if port_file is not None:
            info = {"host": host, "port": bound, "url": url, "pid": os.getpid()}
            _write_port_file(Path(port_file), info)
        print(f"{READY_PREFIX}{url}/v1 (home {home}; token in {home / 'token'})", flush=True)

    return ready


def _serve_workers(
    host: str,
    port: int,
    workers: int,
    options: WorkerOptions,
    *,
    token: tuple[Path | str | None, int | None],
    port_file: Path | str | None,
) -> None:
    """``serve(workers=N)``: check here what would fail in every worker (the home, the
    configuration, the operator token from ``token``'s file or descriptor), then hand the
    listener to :func:`run_workers`."""
    from infomark.gates.config import load_config
    from infomark.ledger.home import ensure_private_dir
    from infomark.ledger.init import ensure_token
    from infomark.tools.operator_token import operator_token

    check_count(workers)
    ensure_private_dir(options.home)
    ensure_token(options.home)
    load_config(options.root, options.home)  # a broken config fails here, not in every worker
    operator, _source = operator_token(options.home, file=token[0], fd=token[1])
    sock = _bind(host, port)
    try:
        ready = _announcer(host, sock, options.home, port_file)
        run_workers(sock, workers, replace(options, operator_token=operator), ready)
    finally:
        sock.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m infomark.tools.serve`` (the CLI's ``infomark serve`` calls :func:`serve`)."""
    parser = argparse.ArgumentParser(prog="infomark serve", description="Serve a ledger home.")
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--profile", choices=PROFILES, default=None)
    parser.add_argument("--port-file", type=Path, default=None)
    parser.add_argument("--no-access-log", action="store_true")
    parser.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES)
    parser.add_argument("--max-open-sessions", type=int, default=128)
    parser.add_argument("--operator-token-file", type=Path, default=None)
    parser.add_argument("--operator-token-fd", type=int, default=None)
    parser.add_argument("--agent-sandbox", default=None, metavar="HOW")
    parser.add_argument("--workers", type=_workers_arg, default=1, metavar="N|auto")
    args = parser.parse_args(argv)
    try:
        from infomark.tools.otel import start_process_export

        start_process_export()  # INFOMARK_OTEL=1 (as `infomark serve` does)
        serve(
            args.home,
            args.host,
            args.port,
            root=args.root,
            profile=args.profile,
            port_file=args.port_file,
            access_log=not args.no_access_log,
            max_body_bytes=args.max_body_bytes,
            max_open_sessions=args.max_open_sessions,
            operator_token_file=args.operator_token_file,
            operator_token_fd=args.operator_token_fd,
            agent_sandbox=args.agent_sandbox,
            workers=args.workers,
        )
    except InfomarkError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"Error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

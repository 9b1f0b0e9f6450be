"""A real HTTPS site on 127.0.0.1 standing in for ``docs.python.org``; a test can change it.

The certificate is self-signed for the site's name (made with the ``openssl`` binary) and
trusted through ``SSL_CERT_FILE``, which Python's default TLS context reads. The name
resolves to the site only where a test says so: :func:`resolving` maps it in this process
(``socket.getaddrinfo``), and a child process applies the same map from ``RESOLVE_ENV``
(``host:443:127.0.0.1:PORT``, curl's ``--resolve`` syntax) with :func:`resolve_from_env`.
So the code under test fetches ``https://docs.python.org/3/library/os.html`` exactly as in
production (plain ``https`` on a primary host, real TLS) and nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import http.server
import os
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RESOLVE_ENV", "Site", "https_site", "resolve_from_env", "resolving"]

RESOLVE_ENV = "TEST_RESOLVE"


@dataclass
class Site:
    """The running site: ``url(path)``, the CA file to trust, and the pages it serves."""

    host: str
    port: int
    cafile: Path
    pages: dict[str, bytes] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"https://{self.host}{path}"

    @property
    def resolve(self) -> str:
        """``host:443:127.0.0.1:PORT``: the map a child process applies (``RESOLVE_ENV``)."""
        return f"{self.host}:443:127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """What a child process needs to reach and trust the site."""
        return {"SSL_CERT_FILE": str(self.cafile), RESOLVE_ENV: self.resolve}


def _patch(rule: str) -> Any:
    host, port, ip, real = rule.split(":")
    original = socket.getaddrinfo

    def getaddrinfo(name: Any, service: Any, *args: Any, **kwargs: Any) -> Any:
        if name == host and str(service) == port:
            return original(ip, int(real), *args, **kwargs)
        return original(name, service, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    return original


def resolve_from_env() -> None:
    """In a child process: apply ``RESOLVE_ENV``, if set (the test fetch server calls this)."""
    rule = os.environ.get(RESOLVE_ENV)
    if rule:
        _patch(rule)


@contextmanager
def resolving(site: Site) -> Iterator[None]:
    """Resolve the site's name to it in this process, and trust its certificate."""
    original = _patch(site.resolve)
    before = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = str(site.cafile)
    try:
        yield
    finally:
        socket.getaddrinfo = original
        if before is None:
            os.environ.pop("SSL_CERT_FILE", None)
        else:
            os.environ["SSL_CERT_FILE"] = before


def _certificate(where: Path, host: str) -> tuple[Path, Path]:
    cert, key = where / "site.pem", where / "site.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={host}",
         "-addext", f"subjectAltName=DNS:{host}"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@contextmanager
def https_site(where: Path, host: str = "docs.python.org") -> Iterator[Site]:
    """Serve ``site.pages`` (path → body; a missing path is a 404) until the block ends."""
    where.mkdir(parents=True, exist_ok=True)
    cert, key = _certificate(where, host)
    site = Site(host, 0, cert)

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.hits.append(self.path)
            body = site.pages.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("content-type", "text/plain; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    site.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()

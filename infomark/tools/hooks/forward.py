"""``infomark hook claude-code --url URL``: forward the payload to a warm ``infomark serve``.

What ``install claude-code --http URL`` writes. The hook reads the service token from
``<home>/token`` (a file inside the ledger home, which the agent may not read), so the
token never has to be in Claude Code's environment, which every Bash call of the agent
inherits. When the service cannot be reached, answers late or answers nonsense, the
payload is judged locally, against the same home: the gate never depends on the
service being up.

This is a process per tool call, so its start-up is most of what the host waits for:
an ``http://`` service is reached with one HTTP/1.1 request on a plain socket (the
standard library's ``urllib.request`` alone costs more than the rest of this process);
``https://`` goes through ``urllib.request``. No proxy is ever used: the service is on
this host, and the token must not go anywhere else.
"""

from __future__ import annotations

import os

from infomark.kernel import jsonc
from infomark.tools.hooks.answer import HookAnswer
from infomark.tools.hooks.where import hook_paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = ["HOOK_PATH", "ROOT_HEADER", "forward", "hook_url"]

HOOK_PATH = "/v1/hooks/claude-code"
ROOT_HEADER = "X-Claude-Project-Dir"  # the service's PROJECT_HEADER: whose config applies
_TIMEOUT_S = 1.0
_MAX_BODY = 1 << 20


def hook_url(url: str) -> str:
    url = url.rstrip("/")
    if url.endswith(HOOK_PATH):
        return url
    return url + ("/hooks/claude-code" if url.endswith("/v1") else HOOK_PATH)


def _headers(token: str, root: StrPath) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token}",
        ROOT_HEADER: str(root),
    }
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\x00" in value:
            raise ValueError(f"the {name} header would hold a line break")
    return headers


def _object(body: bytes) -> dict[str, Any]:
    value = jsonc.loads(body[:_MAX_BODY] or b"{}")
    if not isinstance(value, dict):
        raise ValueError("the service answered with something other than a JSON object")
    return value


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        line, sep, data = data.partition(b"\r\n")
        if not sep:
            raise ValueError("a chunked answer ended early")
        size = int(line.split(b";", 1)[0].strip() or b"x", 16)
        if size == 0:
            return bytes(out)
        out += data[:size]
        data = data[size + 2 :]


def _post_plain(url: str, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
    import socket

    rest = url[len("http://") :]
    authority, _, path = rest.partition("/")
    if not authority or "@" in authority:
        raise ValueError(f"{url!r} has no usable host")
    if authority.startswith("["):  # [::1]:8080
        host, _, port_text = authority[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    port = int(port_text) if port_text else 80
    lines = [f"POST /{path} HTTP/1.1", f"Host: {authority}", f"Content-Length: {len(raw)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append("Connection: close")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + raw
    chunks: list[bytes] = []
    received = 0
    with socket.create_connection((host, port), timeout=_TIMEOUT_S) as conn:
        conn.sendall(request)
        while received <= _MAX_BODY + 65536:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            received += len(chunk)
    head, sep, body = b"".join(chunks).partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("the service's answer has no complete HTTP header")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"the service's answer is not HTTP: {status_line[:80]!r}")
    status = int(parts[1])
    if not 200 <= status < 300:
        raise ValueError(f"HTTP Error {status}: {parts[2] if len(parts) > 2 else ''}".strip())
    fields = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = _dechunk(body)
    elif fields.get("content-length", "").isdigit():
        length = int(fields["content-length"])
        if len(body) < min(length, _MAX_BODY):
            raise ValueError("the service's answer ended early")
        body = body[:length]
    return _object(body)


def _post_tls(url: str, raw: bytes, headers: dict[str, str]) -> dict[str, Any]:
    import urllib.request

    class _NoProxy(urllib.request.ProxyHandler):
        def __init__(self) -> None:
            super().__init__({})  # the service is on this host: never send the token to a proxy

    request = urllib.request.Request(url, data=raw, method="POST", headers=headers)  # noqa: S310
    opener = urllib.request.build_opener(_NoProxy())
    with opener.open(request, timeout=_TIMEOUT_S) as response:
        return _object(response.read(_MAX_BODY))


def _post(url: str, raw: bytes, token: str, root: StrPath) -> dict[str, Any]:
    headers = _headers(token, root)
    if url.startswith("http://"):
        return _post_plain(hook_url(url), raw, headers)
    if url.startswith("https://"):
        return _post_tls(hook_url(url), raw, headers)
    raise ValueError(f"{url!r} is not an http(s) URL")


def forward(
    url: str,
    raw: bytes,
    payload: object,
    *,
    home: StrPath | None,
    root: StrPath | None,
    detail: str = "",
    event: str | None = None,
) -> HookAnswer:
    """The service's answer to ``raw``; the local hook's answer if the service fails."""
    home_p, root_p = hook_paths(payload, home, root)
    try:
        token_file = os.path.join(home_p, "token")
        with open(token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            raise ValueError(f"{token_file} is empty")
        body = _post(url, raw, token, os.path.realpath(root_p))
    except (OSError, ValueError) as exc:  # urllib's URLError is an OSError
        from infomark.tools.hooks.claude_code import handle

        answer = handle(payload, home=home, root=root, event_hint=event, detail=detail)
        why = f"infomark: the service at {url} did not answer ({type(exc).__name__}: {exc})"
        why += "; judged locally"
        return HookAnswer(answer.stdout, answer.exit_code, (answer.stderr + "\n" + why).strip())
    return HookAnswer(body or None)

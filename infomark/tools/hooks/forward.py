"""``infomark hook claude-code --url URL``: forward the payload to a warm ``infomark serve``.

What ``install claude-code --http URL`` writes. The hook reads the service token from
``<home>/token`` (a file inside the ledger home, which the agent may not read), so the
token never has to be in Claude Code's environment, which every Bash call of the agent
inherits. When the service cannot be reached, answers late or answers nonsense, the
payload is judged locally, against the same home: the gate never depends on the
service being up. Standard library only (hot path).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from infomark.tools.hooks.answer import HookAnswer

__all__ = ["HOOK_PATH", "ROOT_HEADER", "forward", "hook_url"]

HOOK_PATH = "/v1/hooks/claude-code"
ROOT_HEADER = "X-Claude-Project-Dir"  # the service's PROJECT_HEADER: whose config applies
_TIMEOUT_S = 1.0


def hook_url(url: str) -> str:
    url = url.rstrip("/")
    if url.endswith(HOOK_PATH):
        return url
    return url + ("/hooks/claude-code" if url.endswith("/v1") else HOOK_PATH)


class _NoProxy(urllib.request.ProxyHandler):
    def __init__(self) -> None:
        super().__init__({})  # the service is on this host: never send the token to a proxy


def _post(url: str, raw: bytes, token: str, root: Path) -> dict[str, Any]:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{url!r} is not an http(s) URL")
    request = urllib.request.Request(  # noqa: S310 (checked above)
        hook_url(url),
        data=raw,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {token}",
            ROOT_HEADER: str(root),
        },
    )
    opener = urllib.request.build_opener(_NoProxy())
    with opener.open(request, timeout=_TIMEOUT_S) as response:
        body = json.loads(response.read(1 << 20) or b"{}")
    if not isinstance(body, dict):
        raise ValueError("the service answered with something other than a JSON object")
    return body


def forward(
    url: str,
    raw: bytes,
    payload: object,
    *,
    home: Path | None,
    root: Path | None,
    detail: str = "",
    event: str | None = None,
) -> HookAnswer:
    """The service's answer to ``raw``; the local hook's answer if the service fails."""
    from infomark.tools.hooks.claude_code import _where, handle

    home_p, root_p = _where(payload, home, root)
    try:
        token = (home_p / "token").read_text("utf-8").strip()
        if not token:
            raise ValueError(f"{home_p / 'token'} is empty")
        body = _post(url, raw, token, root_p.resolve())
    except (OSError, ValueError, urllib.error.URLError) as exc:
        answer = handle(payload, home=home, root=root, event_hint=event, detail=detail)
        why = f"infomark: the service at {url} did not answer ({type(exc).__name__}: {exc})"
        why += "; judged locally"
        return HookAnswer(answer.stdout, answer.exit_code, (answer.stderr + "\n" + why).strip())
    return HookAnswer(body or None)

"""``infomark install claude-code``: merge our hook entries into Claude Code settings.

Never clobbers other hooks; idempotent; ``uninstall`` removes only ours. The file
is rewritten atomically, and an unreadable file is an error, not an overwrite.

Failing closed: Claude Code lets a tool call through when its hook crashes, times out
or cannot be started, unless the entry says ``"onFailure": "block"``; the PreToolUse
and Stop entries say so. ``--http URL`` forwards to a running ``infomark serve``
through the command hook (``infomark hook claude-code --url URL``), which reads the
service token from ``<home>/token``: an http-type entry would need the token in
Claude Code's environment, which every Bash call of the agent inherits. The service is
checked before anything is written; when it is down later, the hook judges locally.

Compaction: ``PreCompact`` carries the ledger over before the host summarises,
``SessionStart`` (``source: compact``) re-injects the claim ids, ranks and live evidence
refs, and ``PostCompact`` closes the compaction (and reports it when neither of the others
did, on a host that sends only it); all three are installed (docs/integrations.md).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError
from infomark.tools.hooks.deadline import HOST_TIMEOUT_S
from infomark.tools.launcher import NAME as LAUNCHER_NAME
from infomark.tools.launcher import (
    hook_prefix,
    launcher_for,
    remove_launcher,
    render,
    write_launcher,
)

__all__ = [
    "BLOCK_ON_FAILURE",
    "HOOK_EVENTS",
    "Installed",
    "check_service",
    "hook_form",
    "install_claude_code",
    "settings_path",
    "uninstall_claude_code",
]

BLOCK_ON_FAILURE = frozenset({"PreToolUse", "Stop", "SubagentStop"})
HOOK_EVENTS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 30),
    ("PreCompact", None, 30),
    ("PostCompact", None, 30),
    ("UserPromptSubmit", None, 30),
    ("PreToolUse", "*", HOST_TIMEOUT_S),  # `infomark check C1` runs the oracle in the hook
    ("PostToolUse", "*", 30),
    ("PostToolUseFailure", "*", 30),
    ("Stop", None, HOST_TIMEOUT_S),  # the finish runs the oracles it needs attested
    ("SubagentStop", None, HOST_TIMEOUT_S),
)
_MARK_CMD = " hook claude-code"
_MARK_URL = "/v1/hooks/claude-code"


@dataclass(frozen=True)
class Installed:
    """What ``install`` / ``uninstall`` did: the settings file, and whether it changed."""

    path: Path
    changed: bool


def settings_path(scope: str, root: Path) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return root / ".claude" / "settings.json"
    raise UserError(f"unknown scope {scope!r}; use project or user")


def hook_form(command: str) -> str | None:
    """Which of our hook commands ``command`` is: ``"launcher"`` (the isolated launcher,
    directly or as ``PYTHON -I -S LAUNCHER``), ``"console"`` (the older form: the console
    script or ``python -m infomark``, with ``site``), or None when it is not ours."""
    if _MARK_CMD not in command:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return "console"
    head = argv[3] if argv[1:3] == ["-I", "-S"] and len(argv) > 3 else argv[0] if argv else ""
    return "launcher" if Path(head).name == LAUNCHER_NAME else "console"


def _ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return (isinstance(command, str) and hook_form(command) is not None) or _MARK_URL in str(
        handler.get("url", "")
    )


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text("utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise UserError(
            f"{path} is not valid JSON ({exc}); fix it first, nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{path} must hold a JSON object; nothing was changed")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    os.replace(tmp, path)


def _strip(data: dict[str, Any], ours: Callable[[Any], bool] = _ours) -> dict[str, Any]:
    """``data`` without the hook handlers ``ours`` claims (empty groups and events go too)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                group = {**group, "hooks": [h for h in group["hooks"] if not ours(h)]}
                if not group["hooks"]:
                    continue
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        data.pop("hooks")
    return data


def install_claude_code(
    *,
    scope: str = "project",
    root: Path,
    home: Path | None = None,
    http_url: str | None = None,
) -> Installed:
    """Add infomark's hooks (command, forwarding to a service with ``http_url``).

    Writes the launcher beside the settings file first, then the settings. Each file is
    written only when its content changes: installing twice leaves both as they were
    (``changed`` is False the second time).
    """
    path = settings_path(scope, root)
    before = _load(path)
    data = _strip(json.loads(json.dumps(before)))
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UserError(f"{path}: 'hooks' must be an object; nothing was changed")
    if http_url:
        check_service(http_url, home if home is not None else root / ".infomark")
    launcher = launcher_for(path)
    text = render()  # before anything is written: an interpreter it cannot name is an error
    command = hook_prefix(launcher.absolute()) + _MARK_CMD
    if home is not None:
        command += " --home " + shlex.quote(str(home.resolve()))
    if http_url:
        command += " --url " + shlex.quote(http_url.rstrip("/"))
    handler: dict[str, Any] = {"type": "command", "command": command}
    for event, matcher, timeout in HOOK_EVENTS:
        entry = {**handler, "timeout": timeout}
        if event in BLOCK_ON_FAILURE:
            entry["onFailure"] = "block"  # a crash or timeout must not let the call through
        group: dict[str, Any] = {"hooks": [entry]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    wrote = write_launcher(launcher, text)
    if path.exists() and data == before:
        return Installed(path, changed=wrote)
    _save(path, data)
    return Installed(path, changed=True)


def check_service(url: str, home: Path) -> None:
    """Refuse to install an --http hook unless the service answers, with this home's token."""
    import urllib.error
    import urllib.request

    from infomark.tools.hooks.forward import hook_url

    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UserError(f"--http needs an http:// URL, not {url!r}")
    try:
        token = (home / "token").read_text("utf-8").strip()
    except OSError:
        raise UserError(
            f"no service token in {home / 'token'}: start `infomark serve` for this home first "
            "(or pass --home); nothing was changed"
        ) from None
    probe = urllib.request.Request(  # noqa: S310 (the scheme is checked above)
        hook_url(base),
        data=b'{"hook_event_name": "Notification", "session_id": "infomark-install-probe"}',
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(probe, timeout=5) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise UserError(
            f"the service at {base} refused the hook probe (HTTP {exc.code}); is it serving "
            f"the home {home}? Nothing was changed"
        ) from None
    except (OSError, urllib.error.URLError) as exc:
        raise UserError(
            f"nothing answers at {base} ({exc}); start `infomark serve` first. Nothing was changed"
        ) from None


def uninstall_claude_code(*, scope: str = "project", root: Path) -> Installed:
    """Remove only infomark's hook entries, then the launcher beside the settings; the file
    is untouched when it has none."""
    path = settings_path(scope, root)
    removed = False
    if path.exists():
        before = _load(path)
        data = _strip(json.loads(json.dumps(before)))
        if data != before:
            _save(path, data)
            removed = True
    return Installed(path, changed=remove_launcher(launcher_for(path)) or removed)

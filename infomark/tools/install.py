"""``infomark install claude-code``: merge our hook entries into Claude Code settings.

Never clobbers other hooks; idempotent; ``uninstall`` removes only ours. The file
is rewritten atomically, and an unreadable file is an error, not an overwrite.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError

__all__ = ["HOOK_EVENTS", "install_claude_code", "settings_path", "uninstall_claude_code"]

HOOK_EVENTS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 30),
    ("UserPromptSubmit", None, 30),
    ("PreToolUse", "*", 30),
    ("PostToolUse", "*", 30),
    ("PostToolUseFailure", "*", 30),
    ("Stop", None, 30),
    ("SubagentStop", None, 30),
)
_MARK_CMD = " hook claude-code"
_MARK_URL = "/v1/hooks/claude-code"


def settings_path(scope: str, root: Path) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return root / ".claude" / "settings.json"
    raise UserError(f"unknown scope {scope!r}; use project or user")


def executable() -> str:
    """Absolute path of our own executable (a version-manager shim can cost ~200 ms)."""
    here = Path(sys.argv[0])
    if here.name == "infomark" and here.exists():
        return shlex.quote(str(here.resolve()))
    found = shutil.which("infomark")
    if found:
        return shlex.quote(str(Path(found).resolve()))
    return f"{shlex.quote(sys.executable)} -m infomark"


def _ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    return _MARK_CMD in str(handler.get("command", "")) or _MARK_URL in str(handler.get("url", ""))


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


def _strip(data: dict[str, Any]) -> dict[str, Any]:
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
                group = {**group, "hooks": [h for h in group["hooks"] if not _ours(h)]}
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
) -> Path:
    """Add infomark's hooks (command, or http to a running service); returns the file."""
    path = settings_path(scope, root)
    data = _strip(_load(path))
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UserError(f"{path}: 'hooks' must be an object; nothing was changed")
    if http_url:
        url = http_url.rstrip("/")
        handler: dict[str, Any] = {
            "type": "http",
            "url": url if url.endswith(_MARK_URL) else url + _MARK_URL,
            "headers": {"Authorization": "Bearer $INFOMARK_TOKEN"},
            "allowedEnvVars": ["INFOMARK_TOKEN"],
        }
    else:
        command = executable() + _MARK_CMD
        if home is not None:
            command += " --home " + shlex.quote(str(home.resolve()))
        handler = {"type": "command", "command": command}
    for event, matcher, timeout in HOOK_EVENTS:
        group: dict[str, Any] = {"hooks": [{**handler, "timeout": timeout}]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    _save(path, data)
    return path


def uninstall_claude_code(*, scope: str = "project", root: Path) -> Path:
    path = settings_path(scope, root)
    if path.exists():
        _save(path, _strip(_load(path)))
    return path

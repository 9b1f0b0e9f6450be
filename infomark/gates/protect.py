"""Self-protection: tool calls that would let the agent grade itself through a side door.

The agent runs with the user's rights, so it could read the HMAC key, rewrite the
journal, switch the profile to ``observe``, remove the hooks, or run
``infomark record`` / ``infomark approve`` itself to mint evidence or approval.
These checks catch the direct routes (file tools on the ledger home, shell
commands naming it or invoking a mutating ``infomark`` subcommand, edits of the
config and hook settings). They are a speed bump, not a sandbox: see
docs/security.md for what a same-user process can still do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["protected"]

_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "target", "destination", "dir")
_MUTATING_CLI = re.compile(
    r"(?:^|[\s;&|(`$])(?:\S*/)?(?:infomark|python3?(?:\.\d+)?\s+-m\s+infomark)\s+"
    r"(?:-\S+\s+(?:[^-\s]\S*\s+)?)*"
    r"(record|ingest|approve|init|install|authorize|finish|hook|serve|mcp-proxy|fork|merge)\b"
)
_CONFIG_NAMES = ("infomark.toml",)
_SETTINGS = re.compile(r"\.claude/settings(?:\.local)?\.json")


def _paths(tool_input: Mapping[str, object]) -> list[str]:
    out = []
    for key in _PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            out.append(value)
    return out


def _under(path: str, base: Path, root: Path) -> bool:
    p = Path(path)
    if not p.is_absolute():
        p = root / p
    try:
        resolved = Path(os.path.normpath(p))
        return resolved == base or base in resolved.parents
    except (OSError, ValueError):
        return False


def protected(
    tool: str,
    tool_input: Mapping[str, object],
    tool_class: str,
    *,
    home: Path,
    root: Path,
) -> tuple[str, str, str] | None:
    """``(verdict, code, reason)`` when the call touches infomark's own state, else None.

    Reading or writing the ledger home, or running a mutating ``infomark``
    subcommand from the agent's shell, is denied; editing the configuration or
    the host's hook settings is held for the user (ask).
    """
    home_abs = Path(os.path.normpath(home if home.is_absolute() else root / home))
    for path in _paths(tool_input):
        if _under(path, home_abs, root):
            return (
                "deny",
                "protected_home",
                f"{path} is inside the ledger home ({home_abs}): the gatekeeper's key and "
                "journal are off-limits to the agent",
            )
    mutating = tool_class in ("modify", "destructive", "unknown")
    command = tool_input.get("command")
    if isinstance(command, list):
        command = " ".join(str(a) for a in command)
    if isinstance(command, str):
        if str(home_abs) in command or re.search(
            rf"(?:^|[\s'\"=/]){re.escape(home_abs.name)}(?:/|\s|$|['\"])", command
        ):
            return (
                "deny",
                "protected_home",
                f"the command names the ledger home ({home_abs.name}): the gatekeeper's key "
                "and journal are off-limits to the agent",
            )
        m = _MUTATING_CLI.search(command)
        if m:
            return (
                "deny",
                "protected_cli",
                f"`infomark {m.group(1)}` from the agent's own shell would let it mint evidence "
                "or approval; only the runtime records evidence, and only the user approves",
            )
        if mutating and (_SETTINGS.search(command) or any(n in command for n in _CONFIG_NAMES)):
            return (
                "ask",
                "protected_config",
                "the command may change infomark's configuration or the hook settings: "
                "held for the user's approval",
            )
    if mutating:
        for path in _paths(tool_input):
            name = Path(path).name
            if name in _CONFIG_NAMES or _SETTINGS.search(path.replace(os.sep, "/")):
                return (
                    "ask",
                    "protected_config",
                    f"editing {path} changes how infomark or the hooks judge the agent: "
                    "held for the user's approval",
                )
    return None

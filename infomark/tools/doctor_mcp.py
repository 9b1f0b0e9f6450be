"""``infomark doctor`` for MCP clients: a server list that runs ``infomark mcp-proxy`` can start
it, on this home, and the proxy ran (its session in the journal). Read-only.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infomark.tools.doctor import (
    Activity,
    Finding,
    config_object,
    option_value,
    runnable,
    settings_env_findings,
)

__all__ = ["mcp_findings"]


def _mcp_files(root: Path, user_home: Path) -> list[tuple[Path, str]]:
    return [
        (root / ".mcp.json", "mcpServers"),
        (root / ".cursor" / "mcp.json", "mcpServers"),
        (root / ".vscode" / "mcp.json", "servers"),
        (user_home / ".claude.json", "mcpServers"),
        (user_home / ".config" / "Claude" / "claude_desktop_config.json", "mcpServers"),
    ]


def _proxy_argv(entry: dict[str, Any]) -> list[str] | None:
    command = entry.get("command")
    args = entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return None
    argv = [command, *(str(a) for a in args)]
    if "mcp-proxy" not in argv and "infomark.tools.mcp_proxy" not in argv:
        return None
    return argv


def _servers(data: dict[str, Any], key: str) -> Iterator[tuple[str, dict[str, Any]]]:
    tables = [data.get(key)]
    projects = data.get("projects")
    if isinstance(projects, dict):
        tables += [p.get(key) for p in projects.values() if isinstance(p, dict)]
    for table in tables:
        for name, entry in table.items() if isinstance(table, dict) else ():
            if isinstance(entry, dict):
                yield str(name), entry


def mcp_findings(home: Path, root: Path, user_home: Path, activity: Activity) -> list[Finding]:
    """MCP clients whose server list runs ``infomark mcp-proxy``: startable, run, safe."""
    out: list[Finding] = []
    seen = False
    for path, key in _mcp_files(root, user_home):
        effect = ": the client starts none of its servers"
        data = config_object(path, out, "mcp", "mcp_config_parse", effect, f"fix {path}")
        if data is None:
            continue
        for name, entry in _servers(data, key):
            argv = _proxy_argv(entry)
            if argv is None:
                continue
            seen = True
            out += _proxy_findings(path, name, argv, entry, home, activity)
    if not seen:
        out.append(Finding("mcp", "installed", "info", "no MCP client runs infomark mcp-proxy"))
    return out


def _proxy_findings(
    path: Path,
    name: str,
    argv: list[str],
    entry: dict[str, Any],
    home: Path,
    activity: Activity,
) -> list[Finding]:
    where = f"{path} server {name!r}"
    out = [Finding("mcp", "installed", "ok", f"{where}: {shlex.join(argv)}")]
    if not runnable(argv[0]):
        out.append(
            Finding(
                "mcp",
                "proxy_command",
                "problem",
                f"{where}: {argv[0]} does not exist or is not executable: the client cannot "
                "start the proxy",
                "use the absolute path of infomark (`command -v infomark`) as the command",
            )
        )
    downstream = argv[argv.index("--") + 1 :] if "--" in argv else []
    if not downstream:
        out.append(
            Finding(
                "mcp",
                "downstream",
                "problem",
                f"{where}: no downstream server after `--`: the proxy exits at once",
                "append `-- <server command> [args…]` to its args",
            )
        )
    elif not runnable(downstream[0]):
        out.append(
            Finding(
                "mcp",
                "downstream",
                "problem",
                f"{where}: the downstream command {downstream[0]} is not found",
                "give its absolute path",
            )
        )
    env = entry.get("env")
    out += settings_env_findings("mcp", path, env, home)
    session = option_value(argv, "--session") or (env or {}).get("INFOMARK_SESSION") or "mcp"
    pinned = option_value(argv, "--home") or (env or {}).get("INFOMARK_HOME")
    if pinned and Path(str(pinned)).resolve() != home.resolve():
        out.append(
            Finding(
                "mcp",
                "home_mismatch",
                "warning",
                f"{where} uses the home {pinned}, not the one checked here ({home})",
                f"run `infomark doctor --home {shlex.quote(str(pinned))}`",
            )
        )
        return out
    story = activity.named(str(session)) if activity.readable else None
    if story is None:
        out.append(
            Finding(
                "mcp",
                "ran",
                "warning",
                f"{where}: no session {session!r} in the journal yet: the proxy has not run "
                "against this home",
                "start the client (it starts the proxy); check the proxy's --home",
            )
        )
    else:
        out.append(
            Finding(
                "mcp",
                "ran",
                "ok",
                f"{where}: session {session} last active {story.last_activity}",
            )
        )
    return out

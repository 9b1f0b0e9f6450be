"""``infomark doctor``: every host's checks, in order (:func:`diagnose`), and the service's.

The checks per host live beside this module: the home, its journal, the configuration and
the environment in :mod:`infomark.tools.doctor`, Claude Code in
:mod:`infomark.tools.doctor_claude`, MCP clients in :mod:`infomark.tools.doctor_mcp`.
Read-only.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from infomark.tools.doctor import (
    Finding,
    config_findings,
    environment_findings,
    home_findings,
    journal_activity,
    service_up,
)
from infomark.tools.doctor_claude import (
    claude_code_findings,
    delivery_findings,
    find_transcript,
    transcript_text,
)
from infomark.tools.doctor_mcp import mcp_findings

__all__ = [
    "claude_code_findings",
    "delivery_findings",
    "diagnose",
    "find_transcript",
    "mcp_findings",
    "service_findings",
    "service_up",
    "transcript_text",
]


def service_findings(url: str, home: Path) -> list[Finding]:
    """A running ``infomark serve`` at ``url``: it answers, and it takes this home's token."""
    from infomark.kernel.errors import UserError
    from infomark.tools.install import check_service

    if not service_up(url):
        return [
            Finding(
                "service",
                "service_up",
                "problem",
                f"nothing answers GET {url.rstrip('/')}/v1/health",
                f"start it: `infomark serve --home {shlex.quote(str(home))}`",
            )
        ]
    try:
        check_service(url, home)
    except UserError as exc:
        return [
            Finding(
                "service",
                "service_token",
                "problem",
                str(exc).replace("; nothing was changed", "").replace(" Nothing was changed", ""),
                f"serve this home (`infomark serve --home {shlex.quote(str(home))}`), or pass "
                "the --home it serves",
            )
        ]
    return [Finding("service", "service_up", "ok", f"{url} answers and accepts the home's token")]


def diagnose(
    home: Path,
    root: Path,
    *,
    user_home: Path | None = None,
    env: dict[str, str] | None = None,
    url: str | None = None,
) -> list[Finding]:
    """Every finding for this home and project, home first, then each host (and the
    service at ``url``, when given)."""
    user_home = user_home if user_home is not None else Path.home()
    out = home_findings(home, root)
    out += environment_findings(env)
    out += config_findings(root)
    activity = journal_activity(home)
    out += claude_code_findings(home, root, user_home, activity)
    out += mcp_findings(home, root, user_home, activity)
    from infomark.tools.doctor_agents import agent_findings  # Gemini CLI, Codex

    out += agent_findings(root, user_home)
    if url:
        out += service_findings(url, home)
    return out

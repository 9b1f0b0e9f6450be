"""Hosts other than Claude Code: Gemini CLI, OpenAI Codex CLI, OpenCode (and their installers).

A host is one small module with one declarative :class:`~infomark.tools.hosts.spec.HostSpec`:
its event names mapped onto the Claude Code events the shared hook core answers
(:mod:`infomark.tools.hooks.claude_code`), how its payload differs, and the shape of each
answer. :mod:`infomark.tools.hosts.core` runs any spec. Nothing here is imported on the
Claude Code hook path.
"""

from __future__ import annotations

from infomark.tools.hosts.spec import HOST_MODULES

__all__ = ["HOST_MODULES"]

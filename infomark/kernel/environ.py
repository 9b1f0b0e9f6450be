"""The environment of a process infomark starts: never any ``INFOMARK_*`` variable.

``INFOMARK_KEY`` (the HMAC key), ``INFOMARK_TOKEN`` (the service's bearer token),
``INFOMARK_HOME``, ``INFOMARK_BYPASS_GROUNDING`` … are infomark's own: a downstream MCP
server or a tool infomark runs must not read the key, nor switch a gate off by passing a
variable on. :func:`agent_env` is the one place that filters them (``child_env`` is the
same function under its older name). Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["PREFIX", "agent_env", "child_env"]

PREFIX = "INFOMARK_"


def agent_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` (default ``os.environ``) without any ``INFOMARK_*`` variable:
    the environment of every process infomark starts (the agent's tools, MCP servers, git).

    The match ignores case: on Windows ``infomark_key`` names the same variable.
    """
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if not k.upper().startswith(PREFIX)}


child_env = agent_env

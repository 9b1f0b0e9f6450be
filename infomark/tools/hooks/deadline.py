"""How long the hook may take before its watchdog answers in its place (hot path).

:data:`DEADLINE_S` for every call; an attested run (``infomark check C1``, the finish's
own runs) extends it by its wall-clock limit with :func:`extend`, so the watchdog does not
kill a test run it asked for. Claude Code's own timeout for the hook is set above the
longest run by ``infomark install claude-code`` (:data:`HOST_TIMEOUT_S`).
"""

from __future__ import annotations

__all__ = ["DEADLINE_S", "HOST_TIMEOUT_S", "deadline", "extend"]

DEADLINE_S = 4.0  # below the 5 s the hook promises (interpreter start-up comes on top)
HOST_TIMEOUT_S = 900  # Claude Code's timeout for PreToolUse and Stop: attested runs fit in it
_EXTRA: list[float] = [0.0]


def extend(seconds: float) -> None:
    """Give this call ``seconds`` more (an attested run), within the host's timeout."""
    _EXTRA[0] = min(_EXTRA[0] + max(0.0, seconds), HOST_TIMEOUT_S - DEADLINE_S - 5)


def deadline() -> float:
    """Seconds this call may take in all."""
    return DEADLINE_S + _EXTRA[0]

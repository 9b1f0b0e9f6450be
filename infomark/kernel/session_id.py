"""The one rule for a session id, shared by every entry point.

The facade (``Gatekeeper.open``), the HTTP service (its ``{session}`` path segment), both
HTTP clients and the MCP proxy all check a session id with :func:`check_session_id`, so
an id that one of them accepts, every other accepts too. The rule: 1 to 128 characters
from ``A-Z a-z 0-9 . _ : @ -``, starting with a letter or digit (a Claude Code session
UUID, ``agent-1``, ``ci:1234@runner`` all pass; ``../x``, ``a b``, a NUL never do).
Standard library only.
"""

from __future__ import annotations

from infomark.kernel.errors import UserError

__all__ = [
    "SESSION_ID_MAX",
    "SESSION_PATTERN",
    "InvalidSessionError",
    "check_session_id",
    "is_session_id",
]

SESSION_ID_MAX = 128
SESSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
_INNER = dict.fromkeys(
    map(ord, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@-")
)


class InvalidSessionError(UserError):
    """A session id breaks the rule; the message says what is allowed."""

    code = "invalid_session"


def is_session_id(value: object) -> bool:
    """True when ``value`` is a string that follows the session-id rule."""
    # SESSION_PATTERN in string operations (a regex compile costs a hook ~35 us); a
    # property test holds the two equal
    return (
        isinstance(value, str)
        and 0 < len(value) <= SESSION_ID_MAX
        and value.isascii()
        and value[0].isalnum()
        and not value.translate(_INNER)
    )


def check_session_id(value: object) -> str:
    """``value`` when it is a valid session id, else :class:`InvalidSessionError`."""
    if is_session_id(value):
        return str(value)
    shown = repr(value[:80]) if isinstance(value, str) else type(value).__name__
    raise InvalidSessionError(
        f"session id {shown} is not valid: use 1-{SESSION_ID_MAX} characters from "
        "A-Z a-z 0-9 . _ : @ -, starting with a letter or digit"
    )

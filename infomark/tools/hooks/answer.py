"""What a Claude Code hook answers: at most one JSON object, an exit code, a stderr line.

Standard library only (hot path). Allow is *no output*: an explicit "allow" would skip the
user's own permission prompt.
"""

from __future__ import annotations

from infomark.kernel.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_TEXT", "HookAnswer", "block", "context", "deny", "verdict"]

MAX_TEXT = 9_500  # Claude Code caps hook strings at 10,000 characters


@dataclass(frozen=True, slots=True)
class HookAnswer:
    stdout: dict[str, Any] | None = None
    exit_code: int = 0
    stderr: str = ""


def verdict(decision: str, reason: str, stderr: str = "") -> HookAnswer:
    """A PreToolUse ``deny`` or ``ask`` with its reason (shown to the model / the user)."""
    return HookAnswer(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason[:MAX_TEXT],
            }
        },
        stderr=stderr,
    )


def deny(reason: str, stderr: str = "") -> HookAnswer:
    return verdict("deny", reason, stderr)


def block(reason: str, stderr: str = "") -> HookAnswer:
    """Stop / SubagentStop: the agent keeps going with ``reason`` as its next instruction."""
    return HookAnswer({"decision": "block", "reason": reason[:MAX_TEXT]}, stderr=stderr)


def context(event: str, text: str) -> HookAnswer:
    if not text:
        return HookAnswer()
    return HookAnswer(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text[:MAX_TEXT]}}
    )

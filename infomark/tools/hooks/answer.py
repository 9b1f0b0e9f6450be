"""What a Claude Code hook answers: at most one JSON object, an exit code, a stderr line.

Standard library only (hot path). Allow is *no output*: an explicit "allow" would skip the
user's own permission prompt.
"""

from __future__ import annotations

from infomark.kernel.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_TEXT", "HookAnswer", "block", "context", "deny", "verdict", "with_text"]

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


def with_text(answer: HookAnswer, event: str, text: str) -> HookAnswer:
    """``answer`` with ``text`` for the model added: to a denial's or a refusal's reason, to
    its context, or as the event's context when it had no output (another host's hook:
    under Claude Code an allowed PreToolUse stays silent, and nothing calls this)."""
    out = answer.stdout
    if out is None:
        return HookAnswer(context(event, text).stdout, answer.exit_code, answer.stderr)
    specific = out.get("hookSpecificOutput")
    if isinstance(specific, dict):
        for key in ("permissionDecisionReason", "additionalContext"):
            if isinstance(specific.get(key), str):
                joined = (specific[key] + "\n\n" + text)[:MAX_TEXT]
                return HookAnswer({**out, "hookSpecificOutput": {**specific, key: joined}},
                                  answer.exit_code, answer.stderr)  # fmt: skip
    if out.get("decision") == "block" and isinstance(out.get("reason"), str):
        reason = (out["reason"] + "\n\n" + text)[:MAX_TEXT]
        return HookAnswer({**out, "reason": reason}, answer.exit_code, answer.stderr)
    return answer

"""Call ids for hosts whose tool hooks carry none (Gemini CLI's BeforeTool / AfterTool).

Evidence pairs a result with the call infomark authorized by a call id. Claude Code and
Codex send ``tool_use_id``; Gemini CLI 0.61 sends the tool name and input only. For such a
host the adapter marks the payload (``synthesize_call_id``), and:

* ``PreToolUse`` names the call ``<host>-<seq>``, where ``seq`` is the journal position the
  decision will take: unique in the session, so a command run twice is two calls;
* ``PostToolUse`` takes the oldest pending call of the same tool with the same input
  digest, the call the host has just run (a host runs a call after its BeforeTool).

Two identical calls in flight at once are told apart only by order; both are recorded, each
once.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.calls import ToolCall

__all__ = ["with_call_id"]

_POST = ("PostToolUse", "PostToolUseFailure")


def with_call_id(
    gk: Gatekeeper,
    event: str,
    payload: dict[str, Any],
    call_of: Callable[[dict[str, Any]], ToolCall],
) -> dict[str, Any]:
    """``payload`` with a ``tool_use_id`` when the host sent none and the adapter asked
    (``call_of``: the hook's payload → :class:`ToolCall` mapping)."""
    if not payload.get("synthesize_call_id") or payload.get("tool_use_id"):
        return payload
    prefix = str(payload.get("synthesize_call_id"))
    if event == "PreToolUse":
        seq, _ = gk.store.journal.head(gk.session)
        return {**payload, "tool_use_id": f"{prefix}-{seq + 1}"}
    if event in _POST:
        from infomark.ledger.engine import call_digest

        call = call_of(payload)
        wanted = call_digest(call)
        pending = gk.state.pending_calls
        matches = [
            (int(p.get("seq", 0)), cid)
            for cid, p in pending.items()
            if cid.startswith(prefix + "-")
            and p.get("tool") == call.tool
            and p.get("input_digest") == wanted
        ]
        if matches:
            return {**payload, "tool_use_id": min(matches)[1]}
    return payload

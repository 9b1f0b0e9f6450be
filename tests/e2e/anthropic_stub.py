"""The scripted Anthropic Messages API server, re-exported for the e2e tests.

It lives in :mod:`infomark.tools.eval.anthropic_stub`: ``infomark eval --agent claude-code``
drives Claude Code with it too.
"""

from __future__ import annotations

from infomark.tools.eval.anthropic_stub import (
    AnthropicStub,
    MessagesRequest,
    Reply,
    Step,
    StubScriptError,
    ToolCall,
    ToolResult,
)

__all__ = [
    "AnthropicStub",
    "MessagesRequest",
    "Reply",
    "Step",
    "StubScriptError",
    "ToolCall",
    "ToolResult",
]

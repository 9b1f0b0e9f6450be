"""The OpenCode plugin ``infomark install opencode`` writes (``.opencode/plugins/infomark.js``).

Its text is ``opencode_plugin.js`` beside this module, with the interpreter, the extra hook
arguments and the timeout filled in.

It runs the launcher written beside it (``infomark-hook``, found relative to the plugin's
own file, so a committed plugin works in a teammate's clone) as ``infomark-hook hook
opencode``, one process per callback, the payload as JSON on stdin, and reads the answer
of :mod:`infomark.tools.hosts.core` (the shapes of :mod:`infomark.tools.hosts.opencode`):

* ``{"decision": "deny", "reason": R}`` (or exit 2 with R on stderr) before a tool: the
  plugin throws ``Error(R)``, so the tool does not run and the model reads R;
* ``{"decision": "block", "reason": R}`` at ``text.complete``: R is added as a user message
  (``noReply``), so the session goes on with it;
* ``{"context": T}``: at ``session.start`` / ``chat.message``, T joins the system prompt;
  before or after a tool, T is appended to the tool's output;
* anything else from a tool callback (a crash, a non-zero exit, a timeout, output that is
  not JSON) is a failure: before a tool the call is refused, after it the output says that
  no evidence was recorded, at a finish the finish is refused (three times in a row at
  most, then the failure is only reported, so a broken install cannot loop forever).
"""

from __future__ import annotations

import json

__all__ = ["MARK", "render_plugin"]

MARK = "// infomark: written by `infomark install opencode`"

_TEMPLATE = "opencode_plugin.js"  # beside this module, shipped in the wheel


def render_plugin(*, python: str | None, extra: list[str], timeout: int) -> str:
    """The plugin's text: ``python`` runs the launcher when its ``#!`` cannot (else None),
    ``extra`` follows ``hook opencode`` (``--home H``)."""
    from pathlib import Path

    template = (Path(__file__).with_name(_TEMPLATE)).read_text("utf-8")
    return (
        template.replace("__PYTHON__", json.dumps(python))
        .replace("__EXTRA__", json.dumps(extra))
        .replace("__TIMEOUT__", str(int(timeout)))
    )

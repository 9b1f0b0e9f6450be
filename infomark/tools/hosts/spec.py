"""One host, declared: event names, payload differences, answer shapes (standard library only).

The shared core (:mod:`infomark.tools.hosts.core`) turns a host's payload into the Claude
Code payload the hook core answers, and the hook core's answer into the host's. What differs
per host is data:

* ``events``: host event → the Claude Code event with the same meaning (``None``: the host
  sends it, infomark has no use for it);
* ``answers``: what the host reads for each kind of answer, as a template in which the
  strings ``"$TEXT"`` and ``"$EVENT"`` stand for the reason or context and the host's event
  name. A kind a host cannot take (no context on this event) is left out of
  ``context_events``, and the text goes to stderr instead;
* ``adapt``: the field renames an event needs (a small function per host, or none).
"""

from __future__ import annotations

from infomark.kernel.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from infomark.tools.hooks.answer import HookAnswer

__all__ = ["EVENT", "HOST_MODULES", "TEXT", "HostSpec", "fill"]

#: ``infomark hook <name>`` → the module holding that host's ``SPEC`` (here, not in the
#: package's ``__init__``: :mod:`~infomark.tools.hosts.core` reads it, and a submodule never
#: imports its own package's ``__init__``, tests/test_layers.py)
HOST_MODULES: dict[str, str] = {
    "gemini": "infomark.tools.hosts.gemini",
    "codex": "infomark.tools.hosts.codex",
    "opencode": "infomark.tools.hosts.opencode",
}

TEXT = "$TEXT"
EVENT = "$EVENT"


@dataclass(frozen=True, slots=True)
class HostSpec:
    name: str  # `infomark hook <name>`, `infomark install <name>`
    title: str  # what the docs and messages call it
    version: str  # the version the e2e test pins (tests/e2e/hosts_harness.py)
    events: Mapping[str, str | None]
    answers: Mapping[str, Any]  # "deny", "ask", "block", "context", "message" → template
    context_events: frozenset[str]  # host events whose answer may carry context
    transcript_format: str | None = None  # tools/hooks/host_transcripts.READERS
    synthesize_call_ids: bool = False  # the host's tool hooks carry no call id
    adapt: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    step: Any = None  # claude_code.HostStep: runs with the open session before the event
    # (payload, rendered answer, home, root) -> the answer sent: rewrites a tool's input
    rewrite: Callable[[dict[str, Any], HookAnswer, str, str], HookAnswer] | None = None
    # -- what `infomark install <name>` writes -------------------------------------------
    config_dir: str = ""  # ".gemini": in the project, and in the user's home
    config_file: str = ""  # "settings.json" / "hooks.json" beside it
    tool_matcher: str | None = None  # the tool events' hook matcher ("*"); None: no matcher
    timeout: int = 30  # in the host's unit (Gemini CLI: ms; Codex: s)
    project_dir_var: str | None = None  # what the host expands to the project directory

    @property
    def install(self) -> tuple[tuple[str, str | None], ...]:
        """The hooks ``infomark install`` writes, ``(host event, matcher or None)``: every
        event infomark uses, in the order of ``events``, the tool events with
        ``tool_matcher`` (derived, so an event cannot be mapped and not installed)."""
        return tuple(
            (event, self.tool_matcher if ours in _TOOL_EVENTS else None)
            for event, ours in self.events.items()
            if ours is not None
        )


_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})


def fill(template: Any, text: str, event: str) -> Any:
    """``template`` with every ``"$TEXT"`` / ``"$EVENT"`` string replaced."""
    if template == TEXT:
        return text
    if template == EVENT:
        return event
    if isinstance(template, dict):
        return {k: fill(v, text, event) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, text, event) for v in template]
    return template

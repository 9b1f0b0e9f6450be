"""The runner's tool set: the built-in tools its agent file lists, and the ``wait`` tool.

A mixin of :class:`~infomark.tools.runner.loop.Runner` (one job: which tools the model gets;
each is gated by the loop through ``wrap_executor``). docs/runner.md, "The tools".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.inbox import Inbox
from infomark.tools.runner.fetch import fetch_tool
from infomark.tools.runner.schedule import Clock, sleep_until
from infomark.tools.runner.tools import RunnerTool, file_tools, schema_of

if TYPE_CHECKING:
    from infomark.gatekeeper import Gatekeeper
    from infomark.tools.runner.agentfile import AgentSpec
    from infomark.tools.runner.subagents import Supervisor

__all__ = ["ToolsMixin"]


class ToolsMixin:
    """``_build_tools`` and ``wait``."""

    spec: AgentSpec
    root: Path
    home: Path
    session: str
    inbox: Inbox
    clock: Clock
    supervisor: Supervisor
    enforcing: bool  # the ledger and strict profiles: no shell command runs unsandboxed
    gk: Gatekeeper

    if TYPE_CHECKING:

        def emit(self, type_: str, payload: Mapping[str, Any]) -> int: ...

    def _build_tools(self) -> dict[str, RunnerTool]:
        b = self.spec.bash
        hide = (self.spec.model.api_key_env,) if self.spec.model.api_key_env else ()
        tools = file_tools(
            self.root,
            home=self.home,
            bash_timeout=b.timeout_seconds,
            output_cap=b.output_cap_chars,
            hide_env=hide,
            enforcing=self.enforcing,
        )
        tools["fetch"] = fetch_tool(timeout=b.timeout_seconds, output_cap=b.output_cap_chars)
        tools["wait"] = RunnerTool(
            "wait",
            "Sleep instead of polling: wakes early when an operator message arrives or when the "
            "named sub-agents have finished (their results come back here). seconds is capped "
            f"at {self.spec.idle.cap_seconds:g}.",
            schema_of(
                {
                    "seconds": {"type": "number"},
                    "agents": {"type": "array", "items": {"type": "string"}},
                }
            ),
            self._wait_tool,
            ToolClass.LEDGER.value,
        )
        tools["check"] = RunnerTool(
            "check",
            "Ask infomark to run a claim's declared oracle itself: sandboxed, in a copy of the "
            "project made of its starting state and your source changes. The result binds the "
            "claim (Exact on a PASS) and names any changed file the run did not use.",
            schema_of({"claim_id": {"type": "string"}}, required=("claim_id",)),
            self._check_tool,
            ToolClass.LEDGER.value,
        )
        tools.update(self.supervisor.tools())
        return {name: tools[name] for name in self.spec.tools if name in tools}

    def _check_tool(self, call: ToolCall) -> ToolOutcome:
        from infomark.tools.attest import check

        cid = call.input.get("claim_id")
        if not isinstance(cid, str) or not cid:
            return ToolOutcome(error="check: claim_id must be a claim's id (C1 …)", is_error=True)
        result = check(self.gk, cid)
        return ToolOutcome(output=result.text, is_error=result.evidence is None)

    def _wait_tool(self, call: ToolCall) -> ToolOutcome:
        seconds = call.input.get("seconds", self.spec.idle.cap_seconds)
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            return ToolOutcome(error="wait: seconds must be a number ≥ 0", is_error=True)
        agents = call.input.get("agents") or []
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            return ToolOutcome(
                error="wait: agents must be a list of sub-agent names", is_error=True
            )
        unknown = [a for a in agents if a not in self.supervisor.children]
        if unknown:
            return ToolOutcome(
                error=f"wait: no sub-agent named {', '.join(unknown)} (spawn it first)",
                is_error=True,
            )
        delay = min(float(seconds), self.spec.idle.cap_seconds)
        start = self.clock.now()
        until = start + delay
        self.emit("waiting", {"by": "wait_tool", "delay": delay, "until": until, "agents": agents})

        def check() -> str | None:
            if self.inbox.pending(self.session):
                return "inbox"
            if agents and self.supervisor.all_done(agents):
                return "agents_done"
            return None

        reason = sleep_until(self.clock, until, check, poll=self.spec.idle.poll_seconds)
        slept = self.clock.now() - start
        self.emit("woken", {"by": "wait_tool", "reason": reason, "slept": slept})
        lines = [f"woke after {slept:.1f}s: {reason}"]
        if reason == "inbox":
            lines.append("an operator message is waiting; it is delivered with the next turn")
        lines += self.supervisor.results(agents)
        return ToolOutcome(output="\n".join(lines))

"""Sub-agents: ``spawn_agent`` starts a child session, ``send`` steers it, ``wait`` collects it.

A child is a :class:`~infomark.tools.runner.loop.Runner` of its own session (its own
ledger, its own inbox lease, ``parent`` in its ``run_started`` and lease), running on a
thread of this process. Its lease is taken *before* ``spawn_agent`` returns, so a ``send``
right after the spawn is delivered, and a ``send`` to a child that finished is refused at
once with the reason (the lease says ``finished``), never reported as delivered.

The child's final answer reaches the parent as the output of ``wait``: delegation-class
evidence (ineligible by tool name), which may back a divergence_event but never a stamp.

``spawn_agent(…, fork=true)`` starts the child on a *fork* of the parent's session
(docs/fork.md): it begins with the parent's claims, stamps and evidence, and what it settles
(stamps bound to evidence the runtime issued to it) is merged back into the parent when the
parent collects it with ``wait``, under the merge's rules (a revoked stamp wins, a changed
statement drops both stamps, the fork's chain is verified first). The merge runs on the
parent's own thread, never on the child's.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import InfomarkError
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.inbox import Inbox, InboxRefused
from infomark.tools.runner.agentfile import AgentSpec, load_agent
from infomark.tools.runner.result import RunResult
from infomark.tools.runner.tools import DELEGATION_CLASS, RunnerTool, schema_of

__all__ = ["Child", "ChildRunner", "ParentRunner", "Supervisor"]


class ChildRunner(Protocol):
    """What the supervisor needs of a child (a Runner)."""

    session: str

    def open_inbox(self) -> None: ...

    def start_opened(self, task: str) -> RunResult: ...

    def release(self, reason: str) -> None: ...

    def close(self) -> None: ...


class ParentRunner(Protocol):
    """What the supervisor needs of its parent (a Runner)."""

    spec: AgentSpec
    raw_session: str
    session: str
    inbox: Inbox
    gk: Gatekeeper

    def emit(self, type_: str, payload: Mapping[str, Any]) -> int: ...


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
_S = {"type": "string"}


@dataclass(slots=True)
class Child:
    name: str
    runner: ChildRunner
    thread: threading.Thread
    result: RunResult | None = None
    error: str | None = None
    fork: str | None = None  # the raw session to merge back from (spawned with fork=true)
    merged: str | None = None  # what the merge reported, once it ran

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()


class Supervisor:
    """The children of one runner."""

    def __init__(
        self, runner: ParentRunner, make_child: Callable[[AgentSpec, str], ChildRunner]
    ) -> None:
        self.runner = runner
        self.make_child = make_child
        self.children: dict[str, Child] = {}
        self._lock = threading.Lock()

    def tools(self) -> dict[str, RunnerTool]:
        return {
            "spawn_agent": RunnerTool(
                "spawn_agent",
                "Start a sub-agent on a task in its own session and ledger; it runs while you "
                "continue. name: a short id; agent: an entry of the agent file's [agents] "
                "table (default: your own definition). Steer it with send, collect its result "
                "with wait(agents=[name]); its result can falsify a claim, never stamp one. "
                "fork=true: it works on a copy of your session (your claims and evidence) and "
                "what it proves with its own evidence is merged back into yours at wait.",
                schema_of(
                    {"name": _S, "task": _S, "agent": _S, "fork": {"type": "boolean"}},
                    ("name", "task"),
                ),
                self._spawn,
                DELEGATION_CLASS,
            ),
            "send": RunnerTool(
                "send",
                "Send a steering message to a running sub-agent (agent=name) or any live "
                "session (session=id). Refused at once, with the reason, when it has no live "
                "inbox (finished, never started, lease expired).",
                schema_of({"agent": _S, "session": _S, "message": _S}, ("message",)),
                self._send,
                "ledger",
            ),
        }

    # -- spawn ----------------------------------------------------------------------------
    def _spawn(self, call: ToolCall) -> ToolOutcome:
        name, task, agent = (call.input.get(k) for k in ("name", "task", "agent"))
        fork = call.input.get("fork", False)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            return _error("spawn_agent: name must be 1-40 letters, digits, - or _")
        if not isinstance(task, str) or not task.strip():
            return _error("spawn_agent: task must be a non-empty string")
        if not isinstance(fork, bool):
            return _error("spawn_agent: fork must be true or false")
        parent = self.runner
        if agent is not None:
            if not isinstance(agent, str) or agent not in parent.spec.agents:
                known = ", ".join(parent.spec.agents) or "none"
                return _error(f"spawn_agent: no agent {agent!r} in [agents] (known: {known})")
            spec = load_agent(parent.spec.agents[agent])
            if not spec.model.url:  # a child file without [model] talks to the parent's model
                spec = replace(spec, model=parent.spec.model)
        else:
            spec = replace(
                parent.spec, tools=tuple(t for t in parent.spec.tools if t != "spawn_agent")
            )
        spec = replace(spec, idle=replace(spec.idle, persistent=False))
        with self._lock:
            if name in self.children:
                return _error(f"spawn_agent: a sub-agent named {name!r} already exists")
            child_session = f"{parent.raw_session}.{name}"
            try:
                if fork:  # the child's session begins as a copy of ours (docs/fork.md)
                    parent.gk.fork(child_session).close()
                child = self.make_child(spec, child_session)
                child.open_inbox()  # live before spawn_agent returns: sends cannot miss it
            except InfomarkError as exc:
                return _error(f"spawn_agent: cannot start {name!r}: {exc}")
            thread = threading.Thread(target=self._run_child, args=(name, task), daemon=True)
            self.children[name] = Child(name, child, thread, fork=child_session if fork else None)
        parent.emit(
            "agent_spawned",
            {"name": name, "session": child.session, "agent": agent or "self", "fork": fork},
        )
        thread.start()
        on = " on a fork of your session" if fork else ""
        return ToolOutcome(
            output=(
                f"spawned {name} (session {child.session}){on}; it is running. "
                f"send(agent={name!r}, message=…) steers it; wait(agents=[{name!r}]) returns "
                "its result."
            )
        )

    def _run_child(self, name: str, task: str) -> None:
        child = self.children[name]
        try:
            child.result = child.runner.start_opened(task)
        except Exception as exc:  # the child's failure is reported to the parent, not raised
            child.error = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):  # else the lease expires on its own
                child.runner.release(f"error: {child.error[:150]}")
        finally:
            child.runner.close()

    # -- send -----------------------------------------------------------------------------
    def _send(self, call: ToolCall) -> ToolOutcome:
        text = call.input.get("message")
        agent, session = call.input.get("agent"), call.input.get("session")
        if isinstance(agent, str) and agent:
            child = self.children.get(agent)
            if child is None:
                known = ", ".join(self.children) or "none"
                return _error(f"send: no sub-agent named {agent!r} (spawned: {known})")
            target = child.runner.session
        elif isinstance(session, str) and session:
            target = self.runner.gk.config.session_prefix + session
        else:
            return _error("send: name the target with agent=… or session=…")
        if not isinstance(text, str):
            return _error("send: message must be a string")
        try:
            got = self.runner.inbox.send(target, text, sender=self.runner.session)
        except InboxRefused as exc:
            return _error(f"send: {exc}")
        return ToolOutcome(
            output=f"delivered to {target} (message #{got.message_id}); it is read before the "
            "target's next model call"
        )

    # -- wait -----------------------------------------------------------------------------
    def all_done(self, names: list[str]) -> bool:
        return all(self.children[n].done for n in names if n in self.children)

    def results(self, names: list[str]) -> list[str]:
        out = []
        for n in names:
            c = self.children[n]
            if not c.done:
                out.append(f"{n}: still running")
            elif c.error is not None:
                out.append(f"{n}: failed: {c.error}")
            elif c.result is not None:
                verdict = "finished" if c.result.reason == "finished" else c.result.reason
                out.append(f"{n} {verdict} (session {c.runner.session}):\n{c.result.final_text}")
            if c.done and c.fork is not None:
                out.append(self._merge(c))
        return out

    def _merge(self, child: Child) -> str:
        """Merge a forked child's settlements into the parent (once; later waits repeat it)."""
        if child.merged is None:
            assert child.fork is not None
            try:
                got = self.runner.gk.merge_from(child.fork)
            except InfomarkError as exc:  # a fork that does not verify merges nothing
                child.merged = f"{child.name}: merge refused: {exc}"
            else:
                if not got["merged"]:
                    child.merged = f"{child.name}: nothing merged ({got['reason']})"
                else:
                    ledger = self.runner.gk.ledger()
                    claims = (
                        ", ".join(f"{cid} ({ledger.status(cid)})" for cid in got["claims"])
                        or "no claims"
                    )
                    child.merged = f"{child.name}: merged into your session: {claims}"
                    for c in got["conflicts"]:
                        child.merged += (
                            f"; conflict on {c['claim_id']} (changed {c['changed']}): "
                            "both stamps dropped"
                        )
        return child.merged

    def stop_all(self) -> None:
        """The parent ends: wait briefly for running children (they finish on their own)."""
        for c in list(self.children.values()):
            c.thread.join(timeout=0.1)

    def close(self) -> None:
        self.stop_all()


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(error=text, is_error=True)

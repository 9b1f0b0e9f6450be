"""A scripted agent session over a real Gatekeeper, whose policy layer is wired in.

Each step runs the Gatekeeper's own call (record, ingest, authorize, can_finish)
and returns the policy text the facade delivers with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from helpers import record_paired

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.gates.decision import Decision, FinishDecision
from infomark.gates.policies import FinalizeVerdict, PolicyRuntime
from infomark.gates.policies.memory import MEMORY_FIELDS
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence
from infomark.ledger.report import IngestReport
from infomark.ledger.state import SessionState, apply

PACK_EVENTS = ("instruction_pack_added", "instruction_pack_removed")


class Session:
    """One agent session: a gatekeeper, a runtime, and helpers for each kind of step."""

    def __init__(self, gk: Gatekeeper, config: Mapping[str, Any] | None = None, **kw: Any):
        """``config`` replaces the policy section; ``kw`` goes to PolicyRuntime."""
        if config is not None:
            gk.config = replace(gk.config, policies=dict(config))
        self.gk = gk
        self.rt = PolicyRuntime(gk.config, **kw)
        gk.use_policies(self.rt)
        self.last_evidence: Evidence | None = None

    @property
    def store(self) -> Any:
        return self.gk.store

    # -- steps ---------------------------------------------------------------------------
    def prompt(self, text: str) -> str:
        return self.gk.on_prompt(text)

    def tool(
        self,
        tool: str,
        inputs: Mapping[str, Any],
        *,
        output: str = "ok",
        exit_code: int | None = None,
        error: str | None = None,
        is_error: bool = False,
        tool_class: str | None = None,
    ) -> str:
        call = ToolCall(tool=tool, input=dict(inputs))
        outcome = ToolOutcome(output=output, exit_code=exit_code, error=error, is_error=is_error)
        ev = record_paired(self.gk, call, outcome, tool_class=tool_class)
        self.last_evidence = ev
        return self.gk.after_tool_text(call, outcome, ev)

    def bash(self, command: str, exit_code: int = 0, output: str = "ok") -> str:
        return self.tool(
            "Bash", {"command": command}, output=output, exit_code=exit_code, tool_class="execute"
        )

    def read(self, path: str, output: str = "text") -> str:
        return self.tool("Read", {"file_path": path}, output=output, tool_class="read")

    def grep(self, pattern: str) -> str:
        return self.tool("Grep", {"pattern": pattern}, output="a.py:1", tool_class="search")

    def write(self, path: str) -> str:
        return self.tool("Write", {"file_path": path, "content": "x"}, tool_class="modify")

    def edit(self, path: str) -> str:
        inputs = {"file_path": path, "old_string": "a", "new_string": "b"}
        return self.tool("Edit", inputs, tool_class="modify")

    def task(self, question: str = "look into it") -> str:
        return self.tool("Task", {"prompt": question}, output="answer", tool_class="unknown")

    def say(self, text: str) -> tuple[IngestReport, str]:
        report = self.gk.ingest(text)
        return report, report.instructions

    def authorize(self, call: ToolCall) -> tuple[Decision, str]:
        decision = self.gk.authorize(call, tool_class="modify")
        return decision, decision.instructions

    def finish(self, text: str = "") -> tuple[FinishDecision, FinalizeVerdict]:
        result = self.gk.can_finish(text)
        v = result.extra["policy"]
        verdict = FinalizeVerdict(
            allow=v["allow"],
            reason=v["reason"],
            fired=list(v["fired"]),
            instructions=v["instructions"],
            packs=list(v["packs"]),
        )
        return result, verdict

    def host(self, **kw: Any) -> str:
        return self.gk.host_report(**kw)

    # -- observations -------------------------------------------------------------------------
    def active(self) -> list[str]:
        packs = self.gk.state.policy.get("packs") or {}
        return [p["name"] for p in packs.get("active", [])]

    def events(self, *types: str) -> list[dict[str, Any]]:
        return [
            {"type": e.type, **e.payload} for e in self.gk.events() if not types or e.type in types
        ]

    def memory_updates(self) -> list[dict[str, Any]]:
        """Each change of the working memory, read from the journal's ``policy_updated``.

        ``version`` after the event, ``changed``: the memory fields its ``set``/``patch``
        touched (in ``MEMORY_FIELDS`` order), ``memory`` the new values of those fields,
        ``before``/``after`` the memory around it.
        """
        state = SessionState(session=self.gk.session)
        out: list[dict[str, Any]] = []
        for e in self.gk.events():
            before = dict(state.policy.get("memory") or {})
            apply(state, e.seq, e.type, e.payload)
            after = dict(state.policy.get("memory") or {})
            if e.type != "policy_updated" or after.get("version") == before.get("version"):
                continue
            whole = (e.payload.get("set") or {}).get("memory") or {}
            touched = {k for k, v in whole.items() if before.get(k) != v}  # the first memory
            for op in e.payload.get("patch") or ():
                if op[1][0] == "memory":
                    touched |= set(op[2]) if op[0] == "m" else {op[1][1]}
            changed = [k for k in MEMORY_FIELDS if k in touched]
            memory = {k: after[k] for k in changed}
            out.append(
                {
                    "version": after["version"],
                    "changed": changed,
                    "memory": memory,
                    "before": before,
                    "after": after,
                }
            )
        return out

    def pack_events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events(*PACK_EVENTS) if e["name"] == name]

    def document(self) -> dict[str, Any]:
        with self.store.transaction() as led:
            return self.rt.state_document(led)

    def view(self, budget: int = 1200) -> str:
        with self.store.transaction() as led:
            return self.rt.context_view(led, budget)


def healthy(s: Session) -> list[str]:
    """A short, healthy task: five calls, an edit, a stamped passing check, a finish."""
    from helpers import ledger_text, stamp

    texts = [s.prompt("rename the helper in a.py")]
    texts.append(s.read("a.py"))
    texts.append(s.say(ledger_text(("C1", "Hypothetical", "pytest -q"), premises=()))[1])
    texts.append(s.edit("a.py"))
    texts.append(s.bash("pytest -q"))
    assert s.last_evidence is not None
    texts.append(s.say(stamp("C1", s.last_evidence.ref))[1])
    texts.append(s.grep("helper"))
    result, verdict = s.finish("Renamed; the tests pass (C1 is Exact).")
    assert result.allow, result.reason
    assert verdict.allow, verdict.reason
    texts.append(verdict.text)
    return texts


def config(**policies: Any) -> Config:
    return Config(policies=policies)

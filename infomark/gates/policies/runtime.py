"""The policy runtime: turn hooks over the ledger, persisted as ``policy_updated`` events.

Every method reads ``ledger.state`` (the caller holds its open ``ledger.transaction()``),
computes the next values and returns a :class:`PolicyStep`: what to deliver, and the
events to journal, which the caller emits in that same transaction: the informational
events (``instruction_pack_added`` …) and one ``policy_updated`` with the deltas of the
keys that changed (:mod:`infomark.ledger.policy_patch`). The runtime never writes to the
journal. Nothing depends on the wall clock: ages are counted in user prompts. Standard
library only; each call does a few dictionary operations.

Where each method belongs (the Gatekeeper calls them):

* :meth:`PolicyRuntime.on_prompt` — a new user prompt (``before_model_call``);
* :meth:`PolicyRuntime.after_tool` — after recording a tool result (``after_tool_batch``);
* :meth:`PolicyRuntime.after_decision` — after a denied call;
* :meth:`PolicyRuntime.after_ingest` — after parsing a model response (``after_model_response``);
* :meth:`PolicyRuntime.before_finalize` — when the agent wants to stop;
* :meth:`PolicyRuntime.host_report` — when the host reports usage or a compaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from infomark.gates.config import Config
from infomark.gates.decision import Decision, FinishDecision
from infomark.gates.policies.context import (
    ALL_PHASES,
    FinalizeVerdict,
    HookResult,
    PackSettings,
    ToolResult,
    TurnContext,
)
from infomark.gates.policies.language import detect_language
from infomark.gates.policies.memory import build_memory, merge_memory
from infomark.gates.policies.metrics import (
    new_metrics,
    new_working_set,
    observe_host,
    observe_ingest,
    observe_prompt,
    observe_tool,
    tool_facts,
)
from infomark.gates.policies.packs import PackBoard, PackOffer, render_pack
from infomark.gates.policies.registry import default_settings, resolve_policies
from infomark.gates.policies.settings import PolicySettings
from infomark.gates.policies.triggers import (
    TriggerOutcome,
    empty_trigger_state,
    evaluate_tool_triggers,
    evaluate_triggers,
    record_activity,
    start_prompt,
)
from infomark.kernel import jsonc
from infomark.kernel.digest import sha256
from infomark.kernel.errors import UserError
from infomark.kernel.records import dataclass, field, replace
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.evidence import Evidence
from infomark.ledger.policy_patch import policy_delta
from infomark.ledger.report import IngestReport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

__all__ = ["POLICY_KEYS", "PolicyRuntime", "PolicyStep"]

#: The keys of ``state.policy`` this runtime owns.
POLICY_KEYS = (
    "metrics",
    "working_set",
    "packs",
    "memory",
    "triggers",
    "last_hook_results",
    "custom",
    "conversation",
)
_NOTES_CAP = 8
_CUSTOM_STATE_MAX = 2000
_MEMORY_PHASES = ("before_model_call", "after_model_response", "after_tool_batch")
_RECENT_CAP = 6
_RECENT_TEXT = 200

Event: TypeAlias = "tuple[str, dict[str, Any]]"


@dataclass(slots=True)
class _Work:
    """Working copies of the policy state for one call, committed as events at the end."""

    original: dict[str, Any]
    metrics: dict[str, Any]
    working_set: dict[str, Any]
    board: PackBoard
    memory: dict[str, Any]
    triggers: dict[str, Any] | None
    hooks: dict[str, Any]
    custom: dict[str, Any]
    conversation: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    memory_line: list[str] = field(default_factory=list)
    batch: dict[str, list[str]] = field(default_factory=dict)  # this tool batch's activity

    @classmethod
    def load(cls, policy: Mapping[str, Any], settings: PolicySettings) -> _Work:
        original = {k: policy.get(k) for k in POLICY_KEYS}
        mine = jsonc.loads(jsonc.dumps(original))  # JSON in, JSON out: a cheap deep copy
        triggers = mine["triggers"]
        if triggers is None and settings.triggers:
            triggers = empty_trigger_state()
        board = PackBoard(
            mine["packs"], max_active=settings.max_active_packs, budget=settings.pack_budget_chars
        )
        return cls(
            original=original,
            metrics={**new_metrics(), **(mine["metrics"] or {})},
            working_set={**new_working_set(), **(mine["working_set"] or {})},
            board=board,
            memory=mine["memory"] or {},
            triggers=triggers,
            hooks=mine["last_hook_results"] or {},
            custom=mine["custom"] or {},
            conversation=mine["conversation"] or {},
            events=board.events,
        )

    @property
    def turn(self) -> int:
        return int(self.metrics["prompts"])

    def values(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "working_set": self.working_set,
            "packs": self.board.to_dict(),
            "memory": self.memory or None,
            "triggers": self.triggers,
            "last_hook_results": self.hooks or None,
            "custom": self.custom or None,
            "conversation": self.conversation or None,
        }

    def journal(self) -> tuple[Event, ...]:
        """The events to emit: the informational ones, then one ``policy_updated`` (deltas)."""
        whole, patch = policy_delta(self.original, self.values())
        if not (whole or patch):
            return tuple(self.events)
        body: dict[str, Any] = {"set": whole} if whole else {}
        if patch:
            body["patch"] = patch
        return (*self.events, ("policy_updated", body))


@dataclass(frozen=True, slots=True)
class PolicyStep:
    """What one phase decided. The caller emits ``events`` in its open transaction.

    ``text``: what the entry point delivers (packs added or renewed; for
    :meth:`PolicyRuntime.on_prompt` the active packs); ``verdict`` (``before_finalize``)
    and ``finish`` (``finalize``) when the phase has them.
    """

    events: tuple[Event, ...]
    hook: HookResult
    text: str = ""
    verdict: FinalizeVerdict | None = None
    finish: FinishDecision | None = None


_NOTHING = PolicyStep((), HookResult())


@dataclass(slots=True)
class _Outcome:
    events: tuple[Event, ...]
    hook: HookResult
    delivered: list[str]
    delivered_text: str
    active_text: str
    refusals: list[tuple[str, str]]
    trigger: TriggerOutcome | None


def _key_for(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _describe(event: Event) -> str:
    type_, p = event
    if type_ == "instruction_pack_added":
        return f"pack {p['name']} {'renewed' if p['renewed'] else 'added'}: {p['reason']}"
    if type_ == "instruction_pack_removed":
        return f"pack {p['name']} removed ({p['why']})"
    if type_ == "trigger_fired":
        return f"trigger {p['name']} {'repeated' if p.get('repeat') else 'fired'}"
    return f"{type_.replace('_', ' ')} {p.get('name', '')}".strip()


_LANGUAGE = "language_drift"


def _language_reset(gate: str) -> Event:
    """Seed 002: a reply in another language than the user's sends the gate back to G0."""
    return (
        "gate_moved",
        {
            "from": gate,
            "to": "G0",
            "kind": "reset",
            "guard": _LANGUAGE,
            "by": "runtime",
            "reason": "the reply is not in the user's language: G0 was not running",
            "burned": 0,
            "measure": None,
        },
    )


def _converse(work: _Work, phase: str, ctx: TurnContext) -> None:
    """Keep the recent messages and the pending turn (seed 000's TurnContext) up to date."""
    conv = work.conversation
    recent: list[dict[str, Any]] = conv.setdefault("recent", [])
    said = ""
    pending = conv.get("pending")
    if phase == "before_model_call" and ctx.prompt is not None:
        turn = int(work.metrics["prompts"]) + 1
        conv["pending"] = {
            "prompt": _clip_text(ctx.prompt),
            "turn": turn,
            "calls": 0,
            "responses": 0,
            "finish_attempts": 0,
            "language": detect_language(ctx.prompt),
        }
        recent.append({"role": "user", "text": _clip_text(ctx.prompt), "turn": turn})
    elif phase == "after_tool_batch" and pending:
        pending["calls"] += len(ctx.tool_results)
    elif phase == "after_model_response":
        if pending:
            pending["responses"] += 1
        said = ctx.response_text
    elif phase == "before_finalize":
        if pending:
            pending["finish_attempts"] += 1
        said = ctx.final_text
    if said.strip():
        recent.append({"role": "agent", "text": _clip_text(said), "turn": work.turn})
    del recent[: max(0, len(recent) - _RECENT_CAP)]
    if not recent and not conv.get("pending"):
        work.conversation = {}


def _clip_text(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _RECENT_TEXT else text[: _RECENT_TEXT - 1] + "…"


class PolicyRuntime:
    """The adaptive policy layer of one configuration (stateless itself: state is in the ledger)."""

    def __init__(self, config: Config, *, policies: Sequence[Any] | None = None) -> None:
        self.config = config
        self.settings = PolicySettings.from_config(config)
        self.policies: list[Any] = resolve_policies(self.settings, list(policies or []))
        self._pack_settings: dict[str, PackSettings] = {
            p.name: self.settings.pack_settings(p.name, default_settings(p)) for p in self.policies
        }
        self._builtin = {
            p.name
            for p in self.policies
            if type(p).__module__ == "infomark.gates.policies.defaults"
        }

    @classmethod
    def from_config(cls, config: Config, *, policies: Sequence[Any] | None = None) -> PolicyRuntime:
        return cls(config, policies=policies)

    @property
    def names(self) -> list[str]:
        """The enabled policies, in evaluation order."""
        return [p.name for p in self.policies]

    def pack_settings(self, name: str) -> PackSettings:
        return self._pack_settings[name]

    # -- the generic phase API ---------------------------------------------------------------
    def run_phase(self, ledger: Ledger, phase: str, ctx: TurnContext | None = None) -> PolicyStep:
        """Run one phase: bookkeeping from ``ctx``, every policy, packs, triggers, memory.

        Returns the step: ``hook`` is the combined result (notes, the texts to inject now:
        packs added or renewed, trigger prompts; human-readable events; ``continue_``, False
        at ``before_finalize`` when a trigger or a policy refuses the finish), ``events``
        what the caller emits in its transaction.
        """
        return self._step(self._execute(ledger, phase, ctx or TurnContext()))

    # -- the Gatekeeper's entry points (each returns a step; the caller emits its events) ----
    def on_prompt(self, ledger: Ledger, prompt: str) -> PolicyStep:
        """A new user prompt: count the turn, expire packs, reset per-prompt triggers.

        ``text``: the active packs as context text ("" when none).
        """
        out = self._execute(ledger, "before_model_call", TurnContext(prompt=prompt))
        return self._step(out, out.active_text)

    def after_tool(
        self, ledger: Ledger, call: ToolCall, outcome: ToolOutcome, evidence: Evidence
    ) -> PolicyStep:
        """After one recorded tool result. ``text``: packs added or renewed by it ("" if none)."""
        result = ToolResult(call, outcome, evidence, evidence.tool_class or "unknown")
        return self.after_tool_batch(ledger, (result,))

    def after_tool_batch(self, ledger: Ledger, results: Sequence[ToolResult]) -> PolicyStep:
        """Several results of one batch (custom runtimes); as :meth:`after_tool`."""
        ctx = TurnContext(tool_results=tuple(results))
        return self._step(self._execute(ledger, "after_tool_batch", ctx))

    def after_decision(self, ledger: Ledger, call: ToolCall, decision: Decision) -> PolicyStep:
        """After a decision; only a deny does anything. ``text``: to append to the denial."""
        if decision.allowed:
            return _NOTHING
        ctx = TurnContext(call=call, decision=decision)
        return self._step(self._execute(ledger, "after_decision", ctx))

    def after_ingest(self, ledger: Ledger, report: IngestReport, text: str = "") -> PolicyStep:
        """After a model response was parsed. ``text``: packs added or renewed ("" if none)."""
        if report.skipped:
            return _NOTHING
        ctx = TurnContext(report=report, response_text=text)
        return self._step(self._execute(ledger, "after_model_response", ctx))

    def before_finalize(
        self, ledger: Ledger, final_text: str, finish: FinishDecision
    ) -> PolicyStep:
        """Post-turn triggers and the finish-time packs; ``verdict`` refuses when one fires."""
        ctx = TurnContext(final_text=final_text, finish=finish)
        out = self._execute(ledger, "before_finalize", ctx)
        trigger = out.trigger
        parts = [trigger.reason] if trigger is not None and trigger.refuse else []
        parts += [f"[infomark:policy {name}]\n{text}" for name, text in out.refusals]
        verdict = FinalizeVerdict(
            allow=not parts,
            reason="\n\n".join(parts),
            fired=list(trigger.fired) if trigger is not None else [],
            instructions=out.delivered_text,
            packs=list(out.delivered),
        )
        return PolicyStep(out.events, out.hook, out.delivered_text, verdict=verdict)

    def finalize(self, ledger: Ledger, final_text: str, finish: FinishDecision) -> PolicyStep:
        """``finish``: the ledger's finish decision with the policy layer's verdict folded in.

        A refusing trigger or policy turns an allow into a refusal (``trigger_fired``)
        or adds its reason to a refusal; the verdict itself is kept in
        ``extra["policy"]``. A finish forced by the refusal cap stays forced: packs
        fired then repeat what the refusal already said.
        """
        step = self.before_finalize(ledger, final_text, finish)
        verdict = step.verdict
        assert verdict is not None  # before_finalize always has one
        extra = {**finish.extra, "policy": verdict.to_dict()}
        if verdict.allow or finish.cap_reached:
            result = replace(finish, extra=extra)
        else:
            reasons = [finish.reason] if not finish.allow else []
            reasons.append(verdict.reason)
            code = finish.code if not finish.allow else "trigger_fired"
            result = replace(
                finish, allow=False, reason="\n\n".join(reasons), code=code, extra=extra
            )
        return replace(step, finish=result)

    def host_report(
        self,
        ledger: Ledger,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> PolicyStep:
        """Host-reported token usage and compaction. ``text``: packs added or renewed."""
        ctx = TurnContext(
            tokens_used=tokens_used, context_window=context_window, compacted=compacted
        )
        return self._step(self._execute(ledger, "host_report", ctx))

    @staticmethod
    def _step(out: _Outcome, text: str | None = None) -> PolicyStep:
        return PolicyStep(out.events, out.hook, out.delivered_text if text is None else text)

    def context_view(self, ledger: Ledger, budget: int = 1200) -> str:
        """What goes into the next model call: packs, working memory, a ledger summary."""
        from infomark.gates.policies.view import context_view, view_refs
        from infomark.ledger.carry import handle_ranks

        handles = handle_ranks(ledger, view_refs(ledger.state), deep=False)
        return context_view(ledger.state, budget=budget, handles=handles)

    def state_document(self, ledger: Ledger) -> dict[str, Any]:
        """The runtime's state as one JSON document (seed 000's ``state.json``)."""
        from infomark.gates.policies.view import state_document

        return state_document(ledger.state, self.settings, self.names)

    # -- the machinery -----------------------------------------------------------------------------
    def _execute(self, ledger: Ledger, phase: str, ctx: TurnContext) -> _Outcome:
        if phase not in ALL_PHASES:
            raise UserError(f"unknown policy phase {phase!r}; use one of {', '.join(ALL_PHASES)}")
        work = _Work.load(ledger.state.policy, self.settings)
        self._observe(work, ledger, phase, ctx)
        base = replace(
            ctx,
            phase=phase,
            turn=work.turn,
            state=ledger.state,
            metrics=MappingProxyType(work.metrics),
            working_set=MappingProxyType(work.working_set),
            memory=MappingProxyType(work.memory),
            recent_messages=tuple(MappingProxyType(m) for m in work.conversation.get("recent", [])),
            pending_turn=(
                MappingProxyType(work.conversation["pending"])
                if work.conversation.get("pending")
                else None
            ),
        )
        notes: list[str] = []
        human: list[str] = []
        refusals: list[tuple[str, str]] = []
        for policy in self.policies:
            method = getattr(policy, phase, None)
            if method is None:
                continue
            res = self._call(policy, method, base, work, notes)
            if res is None:
                continue
            notes += [f"{policy.name}: {n}" for n in res.notes]
            human += list(res.events)
            refuse = not res.continue_ and phase == "before_finalize"
            self._apply(policy.name, res, work, pack=not refuse)
            if refuse:  # the refusal carries the instruction; no pack repeats it
                refusals.append((policy.name, " ".join(res.instructions) or res.reason))
        trigger: TriggerOutcome | None = None
        if phase == "before_finalize" and work.triggers is not None and self.settings.triggers:
            trigger = evaluate_triggers(
                work.triggers, self.settings.triggers, ledger.state, work.turn
            )
            work.events += trigger.events
        tool_trigger: TriggerOutcome | None = None
        if phase == "after_tool_batch" and work.triggers is not None and work.batch:
            tool_trigger = evaluate_tool_triggers(
                work.triggers, self.settings.triggers, work.batch, ledger.state, work.turn
            )
            work.events += tool_trigger.events
        if phase in _MEMORY_PHASES:
            self._update_memory(work, ledger, ctx)
        notes += work.board.notes
        delivered = list(work.board.delivered)
        refused = [name for name, _ in refusals]
        if _LANGUAGE in (*delivered, *refused) and ledger.state.gate != "G0":
            work.events.append(_language_reset(ledger.state.gate))
        human = [_describe(e) for e in work.events] + work.memory_line + human
        proceed = not refusals and not (trigger is not None and trigger.refuse)
        work.hooks[phase] = {
            "turn": work.turn,
            "notes": notes[:_NOTES_CAP],
            "instructions": delivered,
            "events": human[:_NOTES_CAP],
            "continue": proceed,
        }
        delivered_text = work.board.render(delivered) if delivered else ""
        if tool_trigger is not None and tool_trigger.prompts:  # delivered with the tool result
            delivered_text = "\n".join(t for t in (delivered_text, tool_trigger.reason) if t)
        active_text = work.board.render()
        events = work.journal()
        texts = [render_pack(p) for p in work.board.active if p["name"] in delivered]
        for fired in (trigger, tool_trigger):
            if fired is not None and fired.prompts:
                texts.append(fired.reason)
        hook = HookResult(
            notes=tuple(notes),
            instructions=tuple(texts),
            events=tuple(human),
            continue_=proceed,
        )
        return _Outcome(events, hook, delivered, delivered_text, active_text, refusals, trigger)

    def _observe(self, work: _Work, ledger: Ledger, phase: str, ctx: TurnContext) -> None:
        """Phase bookkeeping: counters, working set, trigger delta, expiry."""
        m = work.metrics
        _converse(work, phase, ctx)
        if phase == "before_model_call" and ctx.prompt is not None:
            observe_prompt(m)
            if work.triggers is not None:
                work.events += start_prompt(work.triggers)
        elif phase == "after_tool_batch":
            root = ledger.root_dir
            for result in ctx.tool_results:
                facts = tool_facts(result, root)
                observe_tool(m, work.working_set, facts, result)
                if work.triggers is not None:
                    record_activity(
                        work.triggers,
                        tool=facts.tool,
                        written=facts.written,
                        edited=facts.edited,
                        read=facts.read,
                    )
                    for key, values in (
                        ("tools", [facts.tool]),
                        ("written", facts.written),
                        ("edited", facts.edited),
                        ("read", facts.read),
                    ):
                        work.batch.setdefault(key, []).extend(values)
        elif phase == "after_model_response" and ctx.report is not None:
            observe_ingest(m, ctx.report)
        elif phase == "host_report":
            observe_host(
                m,
                tokens_used=ctx.tokens_used,
                context_window=ctx.context_window,
                compacted=ctx.compacted,
            )
        work.board.turn = work.turn
        work.board.calls = int(m["tool_calls"])
        if phase in ("before_model_call", "after_tool_batch"):
            work.board.expire()

    def _call(
        self, policy: Any, method: Any, base: TurnContext, work: _Work, notes: list[str]
    ) -> HookResult | None:
        pctx = replace(
            base,
            settings=self._pack_settings[policy.name],
            policy_state=MappingProxyType(dict(work.custom.get(policy.name, {}))),
        )
        if policy.name in self._builtin:
            res: Any = method(pctx)
        else:
            try:
                res = method(pctx)
            except Exception as exc:  # a custom policy must not break the host's hook
                notes.append(f"{policy.name}: failed with {type(exc).__name__}: {exc}"[:200])
                return None
        if res is not None and not isinstance(res, HookResult):
            notes.append(f"{policy.name}: returned {type(res).__name__}, not a HookResult")
            return None
        return res

    def _apply(self, name: str, res: HookResult, work: _Work, *, pack: bool = True) -> None:
        if res.state is not None:
            blob = dict(res.state)
            if not blob:
                work.custom.pop(name, None)
            elif len(repr(blob)) <= _CUSTOM_STATE_MAX:
                import copy  # rare (custom policy state): not at hook start-up

                work.custom[name] = copy.deepcopy(blob)
            else:
                work.board.notes.append(f"{name}: state over {_CUSTOM_STATE_MAX} chars dropped")
        if not pack:
            return
        if res.instructions:
            s = self._pack_settings[name]
            text = " ".join(res.instructions)
            work.board.offer(
                PackOffer(
                    name=name,
                    text=text,
                    severity=s.severity,
                    expires_after=s.expires_after,
                    key=res.key if res.key is not None else _key_for(text),
                    reason=res.reason,
                    evidence=res.evidence,
                )
            )
        elif res.resolved:
            work.board.resolve(name)
        else:
            work.board.rearm(name)

    def _update_memory(self, work: _Work, ledger: Ledger, ctx: TurnContext) -> None:
        goal = ctx.prompt if ctx.prompt is not None else work.memory.get("goal")
        fields = build_memory(
            ledger.state, goal=goal, metrics=work.metrics, working_set=work.working_set
        )
        memory, changed = merge_memory(work.memory, fields, work.turn)
        if changed:  # journaled by policy_updated's patch under "memory", the only copy
            work.memory = memory
            work.memory_line = [f"working memory updated: {', '.join(changed)}"]

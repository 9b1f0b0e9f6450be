"""The default instruction packs, each a small policy over metrics or the ledger.

A pack fires when its condition holds, says once what to do differently, and
goes away when the condition clears (``resolved``) or after ``expires_after``
user prompts. Thresholds, severities and expiry are defaults that
``pack_overrides.<name>`` can change. Standard library only.
"""

from __future__ import annotations

from infomark.gates.authorize import claim_step
from infomark.gates.finalize import claims_completion, fresh_exact_claims
from infomark.gates.policies.context import HookResult, TurnContext
from infomark.gates.policies.language import detect_language, language_name
from infomark.kernel.decisions import DecisionCode
from infomark.kernel.reasons import RejectReason
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = [
    "DEFAULT_POLICIES",
    "ContextPressure",
    "EvidenceBeforeDone",
    "ExcessiveSubagents",
    "LanguageDrift",
    "PlanDrift",
    "ReadHeavyDrift",
    "RepeatedCompaction",
    "RepeatedFailures",
    "ReuseBefore",
    "StaleEvidence",
    "StampRejected",
    "UngroundedPremises",
]


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _n(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _threshold(ctx: TurnContext, default: int) -> int:
    """A count threshold (a fractional override rounds up)."""
    return max(1, _ceil(ctx.settings.threshold or default))


def _ceil(x: float) -> int:
    """``math.ceil`` without loading ``math`` (an extension module: ~0.8 M instructions of a
    hook's PostToolUse); ``int`` raises as it does for an infinity or a NaN."""
    n = int(x)  # toward zero
    return n + 1 if x > n else n


def _percent(ctx: TurnContext, default: int) -> int:
    """A usage threshold in percent; an override of at most 1 is a fraction (0.8 = 80%)."""
    t = ctx.settings.threshold
    if t is None:
        return default
    return max(1, round(t * 100 if t <= 1 else t))


class _Pack:
    """Defaults every built-in pack shares (a custom policy may define the same attributes)."""

    name: ClassVar[str]
    severity: ClassVar[int] = 5
    threshold: ClassVar[float | None] = None
    expires_after: ClassVar[int] = 2
    summary: ClassVar[str] = ""


class _CountPack(_Pack):
    """A pack over one counter: resolved at 0, quiet below the threshold, speaks at it.

    Subclasses name the counter (``metric``) and say what to do (:meth:`say`); the key
    changes each time the count passes another multiple of the threshold, so the pack
    renews instead of repeating itself.
    """

    metric: ClassVar[str]

    def say(self, ctx: TurnContext, n: int, t: int) -> tuple[str, str, dict[str, Any]]:
        """``(instruction, reason, evidence)`` for a count ``n`` at threshold ``t``."""
        raise NotImplementedError

    def _check(self, ctx: TurnContext) -> HookResult:
        n = int(ctx.metrics.get(self.metric, 0))
        t = _threshold(ctx, int(self.threshold or 1))
        if n == 0:
            return HookResult(resolved=True)
        if n < t:
            return HookResult()
        text, reason, evidence = self.say(ctx, n, t)
        return HookResult(
            instructions=(text,),
            key=str(n // t),
            reason=reason,
            evidence=evidence,
            notes=self.notes(n),
        )

    def notes(self, n: int) -> tuple[str, ...]:
        return ()


class RepeatedFailures(_CountPack):
    name = "repeated_failures"
    severity = 7
    threshold = 3
    metric = "consecutive_failures"
    summary = "N tool calls failed in a row (default 3)."

    def say(self, ctx: TurnContext, n: int, t: int) -> tuple[str, str, dict[str, Any]]:
        last = ctx.metrics.get("last_failure") or {}
        text = (
            f"Stop guessing: {_n(n, 'tool call')} failed in a row. The last, "
            f"`{_clip(last.get('command', '?'), 60)}`, said: "
            f'"{_clip(last.get("first_line", ""), 100)}". '
            "Choose the next step from that output, or say what you need to know."
        )
        evidence = {
            "consecutive_failures": n,
            "ref": last.get("ref"),
            "command": last.get("command"),
        }
        return text, f"{n} consecutive failed tool calls (threshold {t})", evidence

    def notes(self, n: int) -> tuple[str, ...]:
        return (f"consecutive_failures={n}",)

    after_tool_batch = _CountPack._check


class ReadHeavyDrift(_CountPack):
    name = "read_heavy_drift"
    severity = 4
    threshold = 8
    metric = "reads_without_write"
    summary = "N reads/searches without a write, a run, a claim or a stamp (default 8)."

    def say(self, ctx: TurnContext, n: int, t: int) -> tuple[str, str, dict[str, Any]]:
        text = (
            f"{_n(n, 'read')} without a write or a claim: you have enough context to propose a "
            "concrete next step. Do not read more unless it resolves a named uncertainty; make the "
            "change, or declare the claim you are testing."
        )
        evidence = {
            "reads_without_write": n,
            "files_read": list(ctx.working_set.get("files_read", []))[-5:],
        }
        return text, f"{n} reads without a write or a claim (threshold {t})", evidence

    after_tool_batch = after_model_response = _CountPack._check


class PlanDrift(_CountPack):
    """Seed 000's plan-drift pack: many calls and no progress on the plan."""

    name = "plan_drift"
    severity = 5
    threshold = 12
    metric = "calls_since_progress"
    summary = "N tool calls without progress (no write, passing run or stamp), not all reads (12)."

    def say(self, ctx: TurnContext, n: int, t: int) -> tuple[str, str, dict[str, Any]]:
        text = (
            f"{_n(n, 'tool call')} without progress (no change made, no check passed, no claim "
            "grounded). State the current objective, the blocking uncertainty and the next "
            "concrete action before continuing."
        )
        pending = dict(ctx.pending_turn or {})
        evidence = {"calls_since_progress": n, "prompt": pending.get("prompt")}
        return text, f"{n} tool calls without progress (threshold {t})", evidence

    def _drifting(self, ctx: TurnContext) -> HookResult:
        n = int(ctx.metrics.get(self.metric, 0))
        if n and int(ctx.metrics.get("reads_without_write", 0)) >= n:
            return HookResult()  # a pure read streak is read_heavy_drift's to say
        return self._check(ctx)

    after_tool_batch = after_model_response = _drifting


class LanguageDrift(_Pack):
    """Seed 002, G0: "respond in the user's language"; a reply in another one resets to G0.

    The user's language is detected on the prompt, the reply's on the response (code, paths
    and block syntax removed); both must be detected with confidence, or nothing happens. A
    final reply in another language is refused (the refusal says why); the runtime moves the
    gate back to G0 when this pack fires (``gate_moved``, ``kind: reset``).
    """

    name = "language_drift"
    severity = 9
    summary = "The reply is in another language than the user's prompt (seed 002, G0)."

    def _judge(self, ctx: TurnContext, text: str, *, final: bool) -> HookResult | None:
        user = (ctx.pending_turn or {}).get("language")
        said = detect_language(text) if user else None
        if not user or said is None:
            return None
        if said == user:
            return HookResult(resolved=True)
        theirs, mine = language_name(str(user)), language_name(said)
        text = (
            f"You replied in {mine}; the user wrote in {theirs}. G0 says: think and respond in "
            "the user's language. A reply in another language means the process law was not "
            f"running, so the gate is back at G0: restate the task in {theirs}, then continue "
            "from there."
        )
        return HookResult(
            instructions=(text,),
            key=f"turn{ctx.turn}:{said}",
            reason=f"reply in {said}, user prompt in {user}",
            evidence={"user_language": user, "reply_language": said},
            continue_=not final,
        )

    def after_model_response(self, ctx: TurnContext) -> HookResult | None:
        return self._judge(ctx, ctx.response_text, final=False)

    def before_finalize(self, ctx: TurnContext) -> HookResult | None:
        return self._judge(ctx, ctx.final_text, final=True)


_CODE_SUFFIXES = (
    ".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".rb", ".php", ".c",
    ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".scala", ".sh", ".lua", ".ex", ".hs",
)  # fmt: skip


class ReuseBefore(_Pack):
    """Seed 002, REUSE.BEFORE: prior art before invention.

    Fires when the agent writes a new source module and has not read or searched anything in
    this session (no read, search or web call, no ``cat``): it is inventing blind.
    """

    name = "reuse_before"
    severity = 6
    summary = "A new source module written with no read or search of existing code (session)."

    def after_tool_batch(self, ctx: TurnContext) -> HookResult | None:
        if int(ctx.metrics.get("lookups", 0)) > 0:
            return HookResult(resolved=True)
        written = ctx.working_set.get("files_written") or []
        new = [str(p) for p in written if str(p).endswith(_CODE_SUFFIXES)]
        if not new:
            return None
        text = (
            f"You are writing a new module ({_clip(new[0], 60)}) without having searched or "
            "read any existing code in this session. REUSE.BEFORE: search the project (and "
            "prior art) for what already does this, read it, then decide to reuse or write."
        )
        return HookResult(
            instructions=(text,),
            key="blind",
            reason="new module written before any read or search",
            evidence={"written": new[:5], "lookups": 0},
        )


class ContextPressure(_Pack):
    name = "context_pressure"
    severity = 6
    threshold = 0.8
    summary = "Host-reported context usage at or over the threshold (default 0.8 of the window)."

    def host_report(self, ctx: TurnContext) -> HookResult | None:
        pct = ctx.metrics.get("context_pct")
        if pct is None:
            return None
        t = _percent(ctx, 80)
        if pct < t:
            return HookResult(resolved=True)
        text = (
            f"Context is {pct}% full: prefer short updates, keep the open questions and next "
            "actions explicit, and do not re-read what you have already summarised."
        )
        return HookResult(
            instructions=(text,),
            key=str(pct // 10),
            reason=f"context usage {pct}% (threshold {t}%)",
            evidence={
                "context_pct": pct,
                "tokens_used": ctx.tokens_used,
                "context_window": ctx.context_window,
            },
        )


class RepeatedCompaction(_Pack):
    name = "repeated_compaction"
    severity = 5
    threshold = 2
    summary = "The host compacted the context N times in this session (default 2)."

    def host_report(self, ctx: TurnContext) -> HookResult | None:
        n = int(ctx.metrics.get("compactions", 0))
        if not ctx.compacted:
            return None
        t = _threshold(ctx, 2)
        if n < t:
            return HookResult()
        text = (
            f"The context was compacted {_n(n, 'time')}: before continuing, restate the "
            "objective, the open claims (by id) and the next action; trust the ledger over "
            "your memory of earlier turns."
        )
        return HookResult(
            instructions=(text,),
            key=str(n),
            reason=f"{n} compactions (threshold {t})",
            evidence={"compactions": n},
        )


def _oracle_hint(state: SessionState) -> str:
    named = [state.claims[c] for c in state.done_when if c in state.claims]
    for c in [*named, *state.claims.values()]:
        if c.oracle and not c.oracle_refused:
            return claim_step(c)
    return "run the check that proves it (declare it as a claim's oracle) and stamp that run"


class EvidenceBeforeDone(_Pack):
    name = "evidence_before_done"
    severity = 9
    summary = "Completion claimed without an Exact claim stamped on evidence after the last edit."

    def before_finalize(self, ctx: TurnContext) -> HookResult | None:
        state = ctx.state
        fresh = fresh_exact_claims(state)
        if fresh:
            return HookResult(resolved=True)
        finish = ctx.finish
        claimed = (
            finish.completion_claimed if finish is not None else claims_completion(ctx.final_text)
        )
        if not claimed:
            return None
        text = (
            "Do not claim completion until you cite evidence produced in this session after your "
            f"last edit: {_oracle_hint(state)}, then finish, or say what is still open."
        )
        return HookResult(
            instructions=(text,),
            key=f"turn{ctx.turn}",
            reason="completion claimed without fresh Exact evidence",
            evidence={
                "code": finish.code if finish is not None else None,
                "last_modify_seq": state.last_modify_seq,
            },
        )

    def after_model_response(self, ctx: TurnContext) -> HookResult | None:
        return HookResult(resolved=True) if fresh_exact_claims(ctx.state) else None


class ExcessiveSubagents(_CountPack):
    name = "excessive_subagents"
    severity = 3
    threshold = 4
    metric = "subagent_calls"
    summary = (
        "N sub-agent calls (tool Task/Agent, or class subagent) for one user prompt (default 4)."
    )

    def say(self, ctx: TurnContext, n: int, t: int) -> tuple[str, str, dict[str, Any]]:
        text = (
            f"{_n(n, 'sub-agent')} for this request: do the next step yourself unless the work "
            "is truly independent; give each sub-agent one specific question and use its answer."
        )
        return text, f"{n} sub-agent calls this prompt (threshold {t})", {"subagent_calls": n}

    after_tool_batch = before_model_call = _CountPack._check


def _premise_hint(state: SessionState, cid: str, status: str) -> str:
    claim = state.claims.get(cid)
    if claim is None:
        return f"{cid} (missing: declare it or drop it from premises_for_plan)"
    return f"{cid} ({status}: {claim_step(claim)})"


class UngroundedPremises(_Pack):
    name = "ungrounded_premises"
    severity = 8
    summary = "A modifying call was denied because premises_for_plan are outside G."

    def after_decision(self, ctx: TurnContext) -> HookResult | None:
        d = ctx.decision
        if d is None or d.allowed or d.code != DecisionCode.UNGROUNDED_PREMISES:
            return None
        ungrounded = list(d.ungrounded) or ctx.state.ungrounded_premises()
        if not ungrounded:
            return None
        parts = [_premise_hint(ctx.state, cid, status) for cid, status in ungrounded[:2]]
        more = f" (+{len(ungrounded) - 2} more)" if len(ungrounded) > 2 else ""
        text = (
            "Ground the premises before changing anything: "
            + "; ".join(parts)
            + more
            + ". Or move an id from premises_for_plan to open_questions."
        )
        ids = sorted(cid for cid, _ in ungrounded)
        return HookResult(
            instructions=(text,),
            key=",".join(ids),
            reason=f"{d.tool or 'a call'} denied: premises outside G",
            evidence={"ungrounded": ids, "decision_id": d.decision_id, "tool": d.tool},
        )

    def _resolve(self, ctx: TurnContext) -> HookResult | None:
        if ctx.state.has_ledger and ctx.state.premises_grounded():
            return HookResult(resolved=True)
        return None

    after_model_response = before_finalize = _resolve


class StampRejected(_Pack):
    name = "stamp_rejected"
    severity = 8
    summary = "A stamp (or divergence) in the last response was rejected."

    def after_model_response(self, ctx: TurnContext) -> HookResult | None:
        report = ctx.report
        rejected = list(report.stamps_rejected) if report is not None else []
        if not rejected:
            pending = [c for c in ctx.policy_state.get("claims", []) if isinstance(c, str)]
            if pending and all(
                (c := ctx.state.claims.get(cid)) is not None and c.grounded for cid in pending
            ):
                return HookResult(resolved=True, state={})
            return None
        first = rejected[0]
        hint = str(first.get("message") or "")  # what it looked at, then the fix
        if not hint:
            try:
                hint = RejectReason(first["reason"]).hint
            except ValueError:
                hint = ""
        more = f" (+{len(rejected) - 1} more rejected)" if len(rejected) > 1 else ""
        text = (
            f"Your {first.get('kind', 'stamp')} for {first.get('claim_id') or '?'} was rejected "
            f"({first['reason']}): {hint}.{more}"
        )
        claims = sorted({str(r["claim_id"]) for r in rejected if r.get("claim_id")})
        return HookResult(
            instructions=(text,),
            key=f"seq{ctx.state.seq}",
            reason=f"{len(rejected)} stamp(s) rejected",
            evidence={
                "rejected": [
                    {
                        "claim_id": r.get("claim_id"),
                        "reason": r["reason"],
                        "evidence_ref": r.get("evidence_ref"),
                    }
                    for r in rejected[:5]
                ]
            },
            state={"claims": claims},
        )


class StaleEvidence(_Pack):
    name = "stale_evidence"
    severity = 7
    summary = "Finishing while stamped evidence predates the last edit."

    def before_finalize(self, ctx: TurnContext) -> HookResult:
        stale = list(ctx.finish.stale) if ctx.finish is not None else ctx.state.stale_claims()
        if not stale:
            return HookResult(resolved=True)
        parts = []
        for cid in stale[:3]:
            claim = ctx.state.claims.get(cid)
            oracle = claim.oracle if claim is not None else None
            parts.append(f"{cid} (re-run `{_clip(oracle, 50)}`)" if oracle else cid)
        text = (
            "Evidence predates your last edit for "
            + ", ".join(parts)
            + ": re-run each check now and stamp the new evidence_ref with oracle_stamp."
        )
        return HookResult(
            instructions=(text,),
            key=",".join(sorted(stale)),
            reason=f"stale evidence for {', '.join(stale)}",
            evidence={"stale": sorted(stale)},
        )

    def after_model_response(self, ctx: TurnContext) -> HookResult | None:
        return None if ctx.state.stale_claims() else HookResult(resolved=True)


DEFAULT_POLICIES: tuple[type[Any], ...] = (
    RepeatedFailures,
    ReadHeavyDrift,
    PlanDrift,
    ContextPressure,
    RepeatedCompaction,
    EvidenceBeforeDone,
    ExcessiveSubagents,
    UngroundedPremises,
    StampRejected,
    StaleEvidence,
    LanguageDrift,
    ReuseBefore,
)

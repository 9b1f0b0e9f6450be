"""The grounding gate: may this tool call run now?

A pure function of (session state, classified call, config, bypass flag, and what the
facade found about the call's own files): no clock, no I/O. The facade journals every
decision it returns.
"""

from __future__ import annotations

from infomark.gates.config import Config
from infomark.gates.decision import Decision
from infomark.kernel.decisions import LEDGER_EXAMPLE, DecisionCode
from infomark.kernel.graph import DEFAULT_GRAPH
from infomark.kernel.records import dataclass
from infomark.kernel.tools import ToolClass
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["BYPASS_ENV", "authorize_call", "grounding_hint", "no_ledger_reason", "revert_hint"]

BYPASS_ENV = "INFOMARK_BYPASS_GROUNDING"
_ENFORCING = ("ledger", "strict")


@dataclass(frozen=True, slots=True)
class _Base:
    tool: str
    tool_class: str
    gate: str
    profile: str
    families: tuple[str, ...]
    why: tuple[str, ...]

    def kw(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "tool_class": self.tool_class,
            "gate": self.gate,
            "profile": self.profile,
            "families": self.families,
            "why": self.why,
        }


def grounding_hint(ungrounded: list[tuple[str, str]], state: SessionState) -> str:
    """Name each ungrounded premise with its status and say how to ground it."""
    parts = []
    for cid, status in ungrounded:
        claim = state.claims.get(cid)
        if claim is None:
            parts.append(f"{cid} (missing: declare it in claim_ledger with an oracle)")
        elif claim.oracle:
            parts.append(
                f"{cid} ({status}: run `{claim.oracle}` and stamp it with "
                f"oracle_stamp: claim_id={cid} evidence_ref=ev_… result=PASS)"
            )
        else:
            parts.append(
                f"{cid} ({status}: declare oracle: <command> and run it, or stamp an observation "
                f"with inference_stamp: claim_id={cid} evidence_ref=ev_…)"
            )
    return "premises outside G: " + "; ".join(parts) + "."


def no_ledger_reason(tool_class: str, state: SessionState) -> str:
    """The denial that teaches the block: what is missing, a ledger to copy, the protocol."""
    what = (
        "no claim_ledger is active"
        if not state.has_ledger
        else "the claim_ledger names no premises_for_plan"
    )
    return (
        f"{tool_class} denied: {what}. Before changing the project, declare the claims this "
        "change rests on and list them as premises_for_plan, then ground them by running "
        "each oracle and stamping its evidence_ref (see the infomark protocol given at "
        "session start). Copy and fill in:\n" + LEDGER_EXAMPLE
    )


def revert_hint(files: list[str]) -> str:
    """How to put files an unannounced mutation changed back (git's index is the reference)."""
    if not files:
        return ""
    shown = " ".join(files[:20]) + (" …" if len(files) > 20 else "")
    return f"revert with `git checkout -- {shown}` (or restore them by hand)"


def authorize_call(
    state: SessionState,
    *,
    tool: str,
    tool_class: str,
    families: tuple[str, ...],
    why: tuple[str, ...],
    config: Config,
    bypass: bool,
    scratch: str | None = None,
    revert: bool = False,
) -> Decision:
    """Decide allow / deny / ask for one classified call.

    ``scratch``: the reason when the call touches only the agent's own files (found by the
    facade with :mod:`infomark.gates.scratch`); ``revert``: the call restores files an
    unannounced mutation changed.
    """
    base = _Base(tool, tool_class, state.gate, config.profile, families, why)
    if config.profile == "observe":
        would = _decide(state, tool_class, families, config, "ledger", False, scratch, revert, base)
        if would.allowed:
            return would
        return Decision.allow(
            DecisionCode.DRYRUN,
            f"observe profile: would {would.verdict.value} ({would.code}): {would.reason}",
            dryrun=True,
            ungrounded=would.ungrounded,
            **base.kw(),
        )
    return _decide(
        state, tool_class, families, config, config.profile, bypass, scratch, revert, base
    )


def _mutating(tool_class: str, profile: str) -> bool:
    try:
        cls = ToolClass(tool_class)
    except ValueError:
        return True  # a class nobody defined fails closed
    return (
        cls.mutates if profile in _ENFORCING else cls in (ToolClass.MODIFY, ToolClass.DESTRUCTIVE)
    )


def _decide(
    state: SessionState,
    tool_class: str,
    families: tuple[str, ...],
    config: Config,
    profile: str,
    bypass: bool,
    scratch: str | None,
    revert: bool,
    base: _Base,
) -> Decision:
    strict = profile == "strict"
    if not _mutating(tool_class, profile):
        return Decision.allow(
            DecisionCode.ALLOWED, f"{tool_class} tools do not mutate", **base.kw()
        )
    effective = "modify" if tool_class == "unknown" else tool_class
    if revert:
        return Decision.allow(
            DecisionCode.REVERT,
            "restores files an unannounced mutation changed",
            **base.kw(),
        )
    ungrounded = tuple(state.ungrounded_premises())
    no_plan = not state.has_ledger or not state.premises
    if state.violation_files and (no_plan or ungrounded):
        files = list(state.violation_files)
        hint = grounding_hint(list(ungrounded), state) if ungrounded else "no premises"
        return Decision.deny(
            DecisionCode.UNANNOUNCED_MUTATION,
            f"{effective} denied: an earlier run changed tracked files while the premises were "
            f"ungrounded ({', '.join(files[:20])}). Mutations stay denied until the tree is "
            f"back or the premises are grounded: {revert_hint(files)}; {hint}",
            ungrounded=ungrounded,
            **base.kw(),
        )
    if scratch is not None:
        return Decision.allow(DecisionCode.SCRATCH, scratch, **base.kw())
    if no_plan and not (bypass and not strict):
        return Decision.deny(
            DecisionCode.NO_LEDGER, no_ledger_reason(effective, state), **base.kw()
        )
    grounding_denied = bool(ungrounded) or no_plan
    if ungrounded and not bypass:
        why = ""
        if tool_class == "unknown" and base.why:
            why = " (" + base.why[0] + ")"
        return Decision.deny(
            DecisionCode.UNGROUNDED_PREMISES,
            f"{effective} denied{why}: " + grounding_hint(list(ungrounded), state),
            ungrounded=ungrounded,
            **base.kw(),
        )
    if strict:
        if state.approved_seq and state.approval_turn == state.turn:
            return Decision.deny(
                DecisionCode.APPROVAL_TURN,
                "strict profile: nothing mutates in the turn that granted G4 approval; "
                "continue in the next turn",
                **base.kw(),
            )
        if not _mutating_gate(state.gate):
            return Decision.deny(
                DecisionCode.GATE_POSITION,
                f"strict profile: mutation happens only at {_mutator()}; you are at "
                f"{state.gate}. Move along the spine with `gate: G…` lines (G4 needs the "
                "user's approval).",
                ungrounded=ungrounded,
                **base.kw(),
            )
    if effective == "destructive":
        held = [f for f in families if f not in config.allow_destructive] if families else ["?"]
        if held:
            named = ", ".join(f for f in held if f != "?") or "unclassified"
            return Decision.ask(
                DecisionCode.DESTRUCTIVE,
                f"destructive command ({named}): held for the user's approval",
                ungrounded=ungrounded,
                bypass=grounding_denied and bypass,
                **base.kw(),
            )
    if grounding_denied and bypass:
        why_text = grounding_hint(list(ungrounded), state) if ungrounded else "no premises"
        return Decision.allow(
            DecisionCode.BYPASS,
            f"{BYPASS_ENV}=1: allowed although " + why_text,
            ungrounded=ungrounded,
            bypass=True,
            **base.kw(),
        )
    return Decision.allow(DecisionCode.GROUNDED, "premises are grounded", **base.kw())


def _mutating_gate(gate: str) -> bool:
    if gate not in DEFAULT_GRAPH.gate_ids:
        return False
    return DEFAULT_GRAPH.gate(gate).mutates


def _mutator() -> str:
    ids = [g.id for g in DEFAULT_GRAPH.gates if g.mutates]
    return ids[0] if ids else "no gate"

"""The grounding gate: may this tool call run now?

A pure function of (session state, classified call, config, bypass flag): no
clock, no I/O. The facade journals every decision it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infomark.gates.config import Config
from infomark.gates.decision import Decision
from infomark.ledger.state import SessionState

__all__ = ["BYPASS_ENV", "authorize_call", "grounding_hint"]

BYPASS_ENV = "INFOMARK_BYPASS_GROUNDING"
_MUTATING = ("modify", "destructive")


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
            parts.append(f"{cid} (missing: declare it in claim_ledger or drop it from premises)")
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
    return (
        "premises outside G: "
        + "; ".join(parts)
        + ". Or move the id from premises_for_plan to open_questions."
    )


def authorize_call(
    state: SessionState,
    *,
    tool: str,
    tool_class: str,
    families: tuple[str, ...],
    why: tuple[str, ...],
    config: Config,
    bypass: bool,
) -> Decision:
    """Decide allow / deny / ask for one classified call."""
    base = _Base(tool, tool_class, state.gate, config.profile, families, why)
    if config.profile == "observe":
        would = _decide(state, tool_class, families, config, "ledger", bypass=False, base=base)
        if would.allowed:
            return would
        return Decision.allow(
            "dryrun",
            f"observe profile: would {would.decision.value} ({would.code}): {would.reason}",
            dryrun=True,
            ungrounded=would.ungrounded,
            **base.kw(),
        )
    return _decide(state, tool_class, families, config, config.profile, bypass=bypass, base=base)


def _decide(
    state: SessionState,
    tool_class: str,
    families: tuple[str, ...],
    config: Config,
    profile: str,
    *,
    bypass: bool,
    base: _Base,
) -> Decision:
    strict = profile == "strict"
    effective = "modify" if (strict and tool_class == "unknown") else tool_class
    if effective not in _MUTATING:
        return Decision.allow("allowed", f"{tool_class} tools do not mutate", **base.kw())
    ungrounded = tuple(state.ungrounded_premises())
    if strict and not state.has_ledger:
        return Decision.deny(
            "no_ledger",
            "strict profile: declare a claim_ledger with premises_for_plan before mutating",
            **base.kw(),
        )
    grounding_denied = bool(state.has_ledger and ungrounded)
    if grounding_denied and not bypass:
        return Decision.deny(
            "ungrounded_premises",
            f"{tool_class} denied: " + grounding_hint(list(ungrounded), state),
            ungrounded=ungrounded,
            **base.kw(),
        )
    if strict:
        if state.approved_seq and state.approval_turn == state.turn:
            return Decision.deny(
                "approval_turn",
                "strict profile: nothing mutates in the turn that granted G4 approval; "
                "continue in the next turn",
                **base.kw(),
            )
        if state.gate != "G7":
            return Decision.deny(
                "gate_position",
                f"strict profile: mutation happens only at G7 IMPLEMENT; you are at {state.gate}. "
                "Move along the spine with `gate: G…` lines (G4 needs the user's approval).",
                ungrounded=ungrounded,
                **base.kw(),
            )
    if effective == "destructive":
        held = [f for f in families if f not in config.allow_destructive] if families else ["?"]
        if held:
            named = ", ".join(f for f in held if f != "?") or "unclassified"
            return Decision.ask(
                "destructive",
                f"destructive command ({named}): held for the user's approval",
                ungrounded=ungrounded,
                bypass=grounding_denied and bypass,
                **base.kw(),
            )
    if grounding_denied and bypass:
        return Decision.allow(
            "bypass",
            f"{BYPASS_ENV}=1: allowed although " + grounding_hint(list(ungrounded), state),
            ungrounded=ungrounded,
            bypass=True,
            **base.kw(),
        )
    if not state.has_ledger:
        return Decision.allow(
            "no_ledger_nudge",
            "allowed; no claim_ledger is active: declare the premises this change rests on",
            **base.kw(),
        )
    return Decision.allow("grounded", "premises are grounded", **base.kw())

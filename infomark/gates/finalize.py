"""May the agent finish now? A pure function of state, final text and config."""

from __future__ import annotations

import re

from infomark.gates.authorize import grounding_hint
from infomark.gates.config import Config
from infomark.gates.decision import FinishDecision
from infomark.kernel.lazyre import lazy_compile
from infomark.ledger.state import SessionState

__all__ = ["claims_completion", "decide_finish", "fresh_exact_claims"]

# Completion language on word boundaries. Alternation only: linear time.
_COMPLETION = lazy_compile(
    r"\b(?:done|fixed|resolved|complete[ds]?|finished|implemented|works now|"
    r"all (?:the )?tests (?:now )?pass(?:es|ed|ing)?|tests (?:now )?pass(?:es|ed|ing)?|"
    r"ready (?:to|for) (?:merge|review)|successfully)\b",
    re.IGNORECASE,
)
_NEGATED = lazy_compile(
    r"\b(?:not|n't|never|no longer|isn't|aren't|yet to be)\s+(?:\w+\s+)?$", re.IGNORECASE
)


def claims_completion(text: str) -> bool:
    """True when the text claims the work is complete (and does not negate it)."""
    for m in _COMPLETION.finditer(text):
        before = text[max(0, m.start() - 24) : m.start()]
        if not _NEGATED.search(before):
            return True
    return False


def fresh_exact_claims(state: SessionState) -> list[str]:
    """Exact claims whose stamp was bound to evidence newer than the last modification."""
    return [
        c.id
        for c in state.claims.values()
        if c.status == "Exact"
        and c.stamp is not None
        and c.stamp.evidence_seq >= state.last_modify_seq
    ]


def _sentence(text: str) -> str:
    text = text.rstrip().rstrip(".")
    return text[:1].upper() + text[1:] + "."


def decide_finish(state: SessionState, final_text: str, config: Config) -> FinishDecision:
    ungrounded = tuple(state.ungrounded_premises()) if state.has_ledger else ()
    stale = tuple(state.stale_claims())
    completion = claims_completion(final_text or "")
    problems: list[str] = []
    code = "allowed"
    if ungrounded:
        code = "ungrounded_premises"
        problems.append(grounding_hint(list(ungrounded), state))
    if stale:
        code = code if problems else "stale_evidence"
        cmds = []
        for cid in stale:
            claim = state.claims[cid]
            cmds.append(f"{cid} (re-run `{claim.oracle}`)" if claim.oracle else cid)
        problems.append(
            "evidence predates the last edit for: "
            + ", ".join(cmds)
            + "; re-run each oracle and stamp the new evidence_ref"
        )
    if completion and config.require_evidence_for_completion and not fresh_exact_claims(state):
        code = code if problems else "completion_without_evidence"
        problems.append(
            "you claim completion but no claim is Exact on evidence produced after the last "
            "edit: run the check that proves it and bind it with oracle_stamp, or say what is "
            "still open"
        )
    if config.profile == "strict" and not problems and state.gate != "G9":
        code = "gate_position"
        problems.append(
            f"strict profile: finish from G9 CLEAN_STATE (you are at {state.gate}); "
            "write `gate: G9` once the oracle passed"
        )
    if not problems:
        return FinishDecision(True, "finish allowed", "allowed", completion_claimed=completion)
    if state.finish_refusals + 1 > config.finish_refusal_cap:
        return FinishDecision(
            True,
            f"finish allowed after {config.finish_refusal_cap} consecutive refusals (cap); "
            "unresolved: " + " ".join(problems),
            "refusal_cap_reached",
            stale=stale,
            ungrounded=ungrounded,
            completion_claimed=completion,
            cap_reached=True,
        )
    return FinishDecision(
        False,
        "Not finished: " + " ".join(_sentence(p) for p in problems),
        code,
        stale=stale,
        ungrounded=ungrounded,
        completion_claimed=completion,
    )

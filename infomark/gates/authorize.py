"""The grounding gate: may this tool call run now?

A pure function of (session state, classified call, config, bypass flag, and what the
facade found about the call's own files): no clock, no I/O. The facade journals every
decision it returns. The last words on a decision are here too, as pure functions the facade
applies in order: a stale web source named in a denial (:func:`note_stale_sources`), an
operator's approval of exactly this held call (:func:`operator_approved`), an unattended run
(:func:`deny_unattended`); then its id (:func:`name_decision`) and the events that journal it
(:func:`decision_event`, :func:`bypass_event`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from infomark.gates.config import Config
from infomark.gates.decision import Decision, Verdict
from infomark.kernel.decisions import LEDGER_EXAMPLE, DecisionCode
from infomark.kernel.digest import sha256
from infomark.kernel.graph import DEFAULT_GRAPH
from infomark.kernel.profiles import Profile
from infomark.kernel.records import replace
from infomark.kernel.tools import Classification, ToolClass
from infomark.ledger.calls import ToolCall
from infomark.ledger.canonical import canonical_json
from infomark.ledger.state import ClaimState, SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BYPASS_ENV",
    "authorize_call",
    "bypass_event",
    "claim_step",
    "decision_event",
    "deny_unattended",
    "grounding_hint",
    "name_decision",
    "no_ledger_reason",
    "note_stale_sources",
    "operator_approved",
    "parse_error_text",
    "revert_hint",
    "spine_moves",
]

BYPASS_ENV = "INFOMARK_BYPASS_GROUNDING"


def claim_step(claim: ClaimState) -> str:
    """The one next step that can ground ``claim``: run its oracle and stamp it with the
    result its expectation needs, or re-declare it when its oracle was refused (a refused
    oracle is never suggested)."""
    cid = claim.id
    if claim.oracle_refused:
        return (
            f"its oracle `{claim.oracle}` was refused ({claim.oracle_refused}): re-declare {cid} "
            "with `oracle:` a command that can fail, then run it"
        )
    last = claim.rejected
    seen = (
        f"your last stamp of it was refused ({last['reason']}: {last['message']}); " if last else ""
    )
    if claim.oracle:
        result = "EXPECTED_FAIL" if claim.expect == "FAIL" else "PASS"
        return (
            f"{seen}run `{claim.oracle}` and stamp it with "
            f"oracle_stamp: claim_id={cid} evidence_ref=ev_… result={result}"
        )
    return (
        f"{seen}declare oracle: <command> and run it, or stamp an observation "
        f"with inference_stamp: claim_id={cid} evidence_ref=ev_…"
    )


def grounding_hint(ungrounded: list[tuple[str, str]], state: SessionState) -> str:
    """Name each ungrounded premise with its status and say how to ground it."""
    parts = []
    for cid, status in ungrounded:
        claim = state.claims.get(cid)
        if claim is None:
            parts.append(f"{cid} (missing: declare it in claim_ledger with an oracle)")
        else:
            parts.append(f"{cid} ({status}: {claim_step(claim)})")
    return "premises outside G: " + "; ".join(parts) + "."


def parse_error_text(errors: list[dict[str, Any]]) -> str:
    """The parser's diagnostics as the agent reads them: line, column, what was expected, and
    the source line with a caret under the column."""
    out = []
    for e in errors[:3]:
        head = f"line {e.get('line')}, column {e.get('column')}: {e.get('message')}"
        expected = e.get("expected") or []
        if expected and "expected" not in str(e.get("message")):
            head += " (expected " + " or ".join(map(str, expected[:5])) + ")"
        source = e.get("source")
        if isinstance(source, str) and source.strip():
            col = max(int(e.get("column") or 1), 1)
            head += f"\n    {source}\n    {' ' * (col - 1)}^"
        out.append(head)
    return "\n".join(out)


def no_ledger_reason(tool_class: ToolClass, state: SessionState) -> str:
    """The denial that teaches the block: what is missing, a ledger to copy, the protocol.
    When the agent wrote a ledger that could not be read, the parser's diagnostics come first:
    fixing them is the one next step."""
    if not state.has_ledger and state.parse_errors:
        return (
            f"{tool_class} denied: the claim_ledger you wrote could not be read, so no ledger "
            "is active. Fix it and write it again:\n" + parse_error_text(state.parse_errors)
        )
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
    classified: Classification,
    config: Config,
    bypass: bool,
    scratch: str | None = None,
    revert: bool = False,
) -> Decision:
    """Decide allow / deny / ask for one call, ``classified`` (its class, the destructive
    families it touches, and why).

    ``scratch``: the reason when the call touches only the agent's own files (found by the
    facade with :mod:`infomark.gates.scratch`); ``revert``: the call restores files an
    unannounced mutation changed.
    """
    call = (state, tool, classified, config)
    if not config.profile.enforcing:
        c = _Call(*call, Profile.LEDGER, False, scratch, revert)
        would = _decide(c)
        if would.allowed:
            return would
        return Decision.allow(
            DecisionCode.DRYRUN,
            f"observe profile: would {would.verdict.value} ({would.code}): {would.reason}",
            dryrun=True,
            ungrounded=would.ungrounded,
            **c.kw(),
        )
    return _decide(_Call(*call, config.profile, bypass, scratch, revert))


def _mutating(tool_class: ToolClass) -> bool:
    # _decide runs only under an enforcing profile (observe asks what ledger would decide)
    try:
        cls = ToolClass(tool_class)
    except ValueError:
        return True  # a class nobody defined fails closed
    return cls.mutates


class _Call:
    """One classified call under judgement: what the steps of :data:`DECISION_STEPS` read
    (``profile``: the one it is judged by; the decision names the configured one)."""

    __slots__ = (
        "_no_plan",
        "_ungrounded",
        "bypass",
        "config",
        "effective",
        "families",
        "gate",
        "profile",
        "revert",
        "scratch",
        "state",
        "strict",
        "tool",
        "tool_class",
        "why",
    )

    def __init__(
        self,
        state: SessionState,
        tool: str,
        classified: Classification,
        config: Config,
        profile: Profile,
        bypass: bool,
        scratch: str | None,
        revert: bool,
    ) -> None:
        self.state, self.tool, self.config = state, tool, config
        tool_class = self.tool_class = classified.tool_class
        self.families, self.why = tuple(classified.families), tuple(classified.reasons)
        self.gate, self.profile = state.gate, profile
        self.bypass, self.scratch, self.revert = bypass, scratch, revert
        self.strict = profile.walks_graph
        self.effective = ToolClass.MODIFY if tool_class == ToolClass.UNKNOWN else tool_class
        self._ungrounded: tuple[tuple[str, str], ...] | None = None
        self._no_plan = False

    def ungrounded(self) -> tuple[tuple[str, str], ...]:
        """The plan's premises outside G (read once, when a step first needs them)."""
        if self._ungrounded is None:
            self._ungrounded = tuple(self.state.ungrounded_premises())
            self._no_plan = not self.state.has_ledger or not self.state.premises
        return self._ungrounded

    def no_plan(self) -> bool:
        """No ledger is active, or it lists no premises_for_plan."""
        self.ungrounded()
        return self._no_plan

    def grounding_denied(self) -> bool:
        return bool(self.ungrounded()) or self.no_plan()

    def kw(self) -> dict[str, Any]:
        """The decision's fields that name the call."""
        return {
            "tool": self.tool,
            "tool_class": str(self.tool_class),  # the wire form: the plain word
            "gate": self.gate,
            "profile": self.config.profile,
            "families": self.families,
            "why": self.why,
        }


def _reads_pass(c: _Call) -> Decision | None:
    """A call that mutates nothing is allowed (a class nobody defined mutates)."""
    if _mutating(c.tool_class):
        return None
    return Decision.allow(DecisionCode.ALLOWED, f"{c.tool_class} tools do not mutate", **c.kw())


def _verify_profile(c: _Call) -> Decision | None:
    """A profile that asks no protocol (verify) decides by its own rules."""
    if c.profile.asks_protocol:
        return None
    return _decide_verify(c.effective, c.config, c)


def _revert_passes(c: _Call) -> Decision | None:
    """A call that restores files an unannounced mutation changed is allowed."""
    if not c.revert:
        return None
    return Decision.allow(
        DecisionCode.REVERT, "restores files an unannounced mutation changed", **c.kw()
    )


def _no_unannounced_mutation(c: _Call) -> Decision | None:
    """After a run changed tracked files while the premises were ungrounded, mutations stay
    denied until the tree is back or the premises are grounded."""
    state, ungrounded = c.state, c.ungrounded()
    if not (state.violation_files and (c.no_plan() or ungrounded)):
        return None
    files = list(state.violation_files)
    hint = grounding_hint(list(ungrounded), state) if ungrounded else "no premises"
    return Decision.deny(
        DecisionCode.UNANNOUNCED_MUTATION,
        f"{c.effective} denied: an earlier run changed tracked files while the premises were "
        f"ungrounded ({', '.join(files[:20])}). Mutations stay denied until the tree is "
        f"back or the premises are grounded: {revert_hint(files)}; {hint}",
        ungrounded=ungrounded,
        **c.kw(),
    )


def _scratch_passes(c: _Call) -> Decision | None:
    """A call that touches only the agent's own scratch files is allowed."""
    if c.scratch is None:
        return None
    return Decision.allow(DecisionCode.SCRATCH, c.scratch, **c.kw())


def _plan_declared(c: _Call) -> Decision | None:
    """A mutation needs a ledger with premises_for_plan (the bypass flag lifts this, but not
    in the strict profile)."""
    if not c.no_plan() or (c.bypass and not c.strict):
        return None
    return Decision.deny(DecisionCode.NO_LEDGER, no_ledger_reason(c.effective, c.state), **c.kw())


def _premises_grounded(c: _Call) -> Decision | None:
    """A mutation needs every premise in G (unless the bypass flag is set)."""
    ungrounded = c.ungrounded()
    if not ungrounded or c.bypass:
        return None
    why = ""
    if c.tool_class == ToolClass.UNKNOWN and c.why:
        why = " (" + c.why[0] + ")"
    return Decision.deny(
        DecisionCode.UNGROUNDED_PREMISES,
        f"{c.effective} denied{why}: " + grounding_hint(list(ungrounded), c.state),
        ungrounded=ungrounded,
        **c.kw(),
    )


def _not_in_approval_turn(c: _Call) -> Decision | None:
    """Strict profile: nothing mutates in the turn that granted G4 approval."""
    state = c.state
    if not (c.strict and state.approved_seq and state.approval_turn == state.turn):
        return None
    return Decision.deny(
        DecisionCode.APPROVAL_TURN,
        "strict profile: nothing mutates in the turn that granted G4 approval; "
        "continue in the next turn",
        **c.kw(),
    )


def _at_mutating_gate(c: _Call) -> Decision | None:
    """Strict profile: mutation happens only at the gate that mutates."""
    gate = c.state.gate
    if not c.strict or _mutating_gate(gate):
        return None
    return Decision.deny(
        DecisionCode.GATE_POSITION,
        f"strict profile: mutation happens only at {_mutator()}; you are at "
        f"{gate}. {spine_moves(gate, _mutator())}",
        ungrounded=c.ungrounded(),
        **c.kw(),
    )


def _destructive_held(c: _Call) -> Decision | None:
    """A destructive command is held for the user's approval unless its family is allowed."""
    if c.effective != ToolClass.DESTRUCTIVE:
        return None
    bypassed = c.grounding_denied() and c.bypass
    return _held_destructive(c.config, c.ungrounded(), bypass=bypassed, **c.kw())


def _bypassed(c: _Call) -> Decision | None:
    """Under the bypass flag, a mutation the grounding would deny is allowed, and says so."""
    if not (c.grounding_denied() and c.bypass):
        return None
    ungrounded = c.ungrounded()
    why_text = grounding_hint(list(ungrounded), c.state) if ungrounded else "no premises"
    return Decision.allow(
        DecisionCode.BYPASS,
        f"{BYPASS_ENV}=1: allowed although " + why_text,
        ungrounded=ungrounded,
        bypass=True,
        **c.kw(),
    )


#: The rules a call is decided by, in order: the first step that returns a decision gives
#: it; a mutation that passes them all is allowed as grounded.
DECISION_STEPS: tuple[Callable[[_Call], Decision | None], ...] = (
    _reads_pass,
    _verify_profile,
    _revert_passes,
    _no_unannounced_mutation,
    _scratch_passes,
    _plan_declared,
    _premises_grounded,
    _not_in_approval_turn,
    _at_mutating_gate,
    _destructive_held,
    _bypassed,
)


def _decide(c: _Call) -> Decision:
    """Decide one call by :data:`DECISION_STEPS`, in order."""
    for step in DECISION_STEPS:
        decision = step(c)
        if decision is not None:
            return decision
    return Decision.allow(DecisionCode.GROUNDED, "premises are grounded", **c.kw())


def _held_destructive(
    config: Config, ungrounded: tuple[tuple[str, str], ...], **kw: Any
) -> Decision | None:
    """A destructive command is held for the user's approval unless its family is allowed
    (``kw``: the decision's fields, its ``families`` among them)."""
    families: tuple[str, ...] = kw["families"]
    held = [f for f in families if f not in config.allow_destructive] if families else ["?"]
    if not held:
        return None
    named = ", ".join(f for f in held if f != "?") or "unclassified"
    return Decision.ask(
        DecisionCode.DESTRUCTIVE,
        f"destructive command ({named}): held for the user's approval",
        ungrounded=ungrounded,
        **kw,
    )


def _decide_verify(effective: ToolClass, config: Config, base: _Call) -> Decision:
    """The verify profile: no premises asked; destructive commands held as in every profile
    (the home and infomark's files are guarded before this, by ``guard_decision``)."""
    if effective == ToolClass.DESTRUCTIVE:
        held = _held_destructive(config, (), **base.kw())
        if held is not None:
            return held
    return Decision.allow(
        DecisionCode.VERIFY,
        "verify profile: edits are not gated on premises; the finish needs a fresh PASS of "
        "the project's checks",
        **base.kw(),
    )


def spine_moves(here: str, target: str) -> str:
    """The ``gate:`` lines that walk the spine from ``here`` to ``target``, as a next step."""
    spine = DEFAULT_GRAPH.spine
    if here not in spine or target not in spine or spine.index(here) >= spine.index(target):
        return f"Move back onto the spine towards {target} with `gate: G…` lines."
    steps = spine[spine.index(here) + 1 : spine.index(target) + 1]
    lines = ", ".join(f"`gate: {g}`" for g in steps)
    approval = " (G6 needs the user's approval at G4)" if "G6" in steps else ""
    return f"Write {lines}, one move at a time{approval}."


def _mutating_gate(gate: str) -> bool:
    if gate not in DEFAULT_GRAPH.gate_ids:
        return False
    return DEFAULT_GRAPH.gate(gate).mutates


def _mutator() -> str:
    ids = [g.id for g in DEFAULT_GRAPH.gates if g.mutates]
    return ids[0] if ids else "no gate"


# -- the last words on a decision, in the order the facade applies them ----------------------
def note_stale_sources(decision: Decision, changed: list[dict[str, Any]]) -> Decision:
    """A refusal names the web pages premises rest on that changed or could not be fetched."""
    if not changed or decision.allowed:
        return decision
    pages = "; ".join(
        f"{ch['claim_id']} rests on {ch['evidence_ref']}, whose page "
        + ("could not be fetched again" if ch["digest"] is None else "changed since")
        for ch in changed
    )
    return replace(
        decision,
        reason=f"{decision.reason} (stale web source: {pages}; fetch "
        "the page again and re-stamp it)",
    )


def operator_approved(
    decision: Decision, approved_calls: Mapping[str, str], key: str
) -> tuple[Decision, str]:
    """A held call the operator approved exactly (same tool, same input) runs, once.

    Returns the decision and the approval's id ("" when there is none to use).
    """
    if decision.verdict is not Verdict.ASK:
        return decision, ""
    approval_of = approved_calls.get(key, "")
    if not approval_of:
        return decision, ""
    return (
        replace(
            decision,
            verdict=Verdict.ALLOW,
            code=DecisionCode.OPERATOR_APPROVED.value,
            reason=f"the operator approved this held call ({approval_of}, "
            f"{decision.code}); it runs once",
        ),
        approval_of,
    )


def deny_unattended(decision: Decision, unattended: str | None, config: Config) -> Decision:
    """Nobody can answer a hold in an unattended run (``unattended``: why, from the host; or
    the config's ``unattended = true``): the hold becomes a denial with the same reason."""
    if config.unattended and unattended is None:
        unattended = "unattended = true in the config"
    if not unattended or decision.verdict is not Verdict.ASK:
        return decision
    step = ""
    if decision.code == DecisionCode.DESTRUCTIVE and decision.families:
        families = ", ".join(f'"{f}"' for f in decision.families)
        step = (
            "; the user can let such commands run unattended with "
            f"`allow_destructive = [{families}]` in infomark.toml, or run it themselves"
        )
    return replace(
        decision,
        verdict=Verdict.DENY,
        reason=f"{decision.reason} (unattended run, {unattended}: nobody can "
        f"answer, so it is denied){step}",
    )


def name_decision(decision: Decision, session: str, seq: int, tool_call_id: str | None) -> Decision:
    """The decision's id (from the session and the seq it is journaled at) and the call id its
    record must name (the host's ``tool_call_id`` when it has one)."""
    did = "dec_" + sha256(f"{session}\x00{seq}".encode()).hexdigest()[:16]
    if decision.verdict is Verdict.ASK and decision.code != DecisionCode.GRADING_EDIT:
        decision = replace(
            decision,
            reason=f"{decision.reason}; the user answers the host's prompt, or lets exactly "
            f"this call run once with `infomark approve --call {did}`",
        )
    return replace(decision.with_id(did), call_id=tool_call_id or "call_" + did[4:])


# Keys of a ``decision`` event left out when they hold their default; readers use ``.get``
# with the same default (the wire form, Decision.to_dict(), keeps every key).
_EVENT_DEFAULTS: tuple[tuple[str, object], ...] = (
    ("bypass", False),
    ("dryrun", False),
    ("families", []),
    ("instructions", ""),
    ("ungrounded", []),
)


def decision_event(
    decision: Decision, call: ToolCall, *, input_digest: str, approval_of: str, grading: str | None
) -> dict[str, Any]:
    """The payload of the ``decision`` event that journals ``decision`` on ``call``."""
    payload = decision.to_dict()
    for key, default in _EVENT_DEFAULTS:  # the journal leaves defaults out (issue 13: size)
        if payload.get(key, default) == default:
            payload.pop(key, None)
    if call.tool_call_id is not None:
        payload["tool_call_id"] = call.tool_call_id
    payload["input_digest"] = input_digest
    payload["tool"] = call.tool
    if approval_of:
        payload["approval_of"] = approval_of
    if decision.verdict is Verdict.ASK:  # what the operator sees before approving
        payload["held_input"] = clip_input(call)
    if grading is not None:
        payload["grading"] = grading
    return payload


def bypass_event(decision: Decision, call: ToolCall) -> dict[str, Any]:
    """The payload of the ``bypass`` event a decision made under the bypass flag adds."""
    return {
        "decision_id": decision.decision_id,
        "tool": call.tool,
        "tool_class": decision.tool_class,
        "ungrounded": [{"id": i, "status": s} for i, s in decision.ungrounded],
        "env": BYPASS_ENV,
    }


def clip_input(call: ToolCall, limit: int = 2000) -> str:
    """The call's input as canonical JSON, clipped, for ``infomark held``."""
    try:
        text = canonical_json(dict(call.input)).decode("utf-8", "replace")
    except (TypeError, ValueError):
        text = repr(call.input)
    return text if len(text) <= limit else text[:limit] + "…"

"""May the agent finish now? A pure function of state, final text and config.

Evidence decides, not words. After the session's last mutation every stop is a
finish attempt and needs fresh evidence: the completion claims (the ledger's
``done_when``, or by default every claim stamped on a run newer than the last
mutation, at least one) must be Exact on such evidence. Claims grounded before
the first mutation that describe the starting state (premises, ``expect: FAIL``
claims) are not re-stamped. A claim whose oracle contradicted its stamp later,
a grading file changed behind the oracle's back, or an operator-required oracle
that has no fresh PASS blocks the finish. An agent that is not done says so
(``gate: BLOCKED`` or a question block): that finish is allowed and journaled
``finished_blocked``. Refusals are capped (0 = never forced); a forced finish is
journaled ``finished_unverified``. In a session that changed nothing (or, in the
ledger profile, one that never declared a ledger), completion language with no
fresh evidence is still refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from infomark.gates.authorize import claim_step, grounding_hint, spine_moves
from infomark.gates.config import Config
from infomark.gates.decision import FinishDecision
from infomark.gates.oracles import matches_any
from infomark.kernel.decisions import FinishCode
from infomark.kernel.infomark import InfoMark
from infomark.kernel.lazyre import lazy_compile
from infomark.ledger.state import ClaimState, SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: checks and weakened load at a finish, not at start-up
    from typing import Any

    from infomark.gates.checks import CheckStatus
    from infomark.gates.weakened import Finding as Weakness

__all__ = [
    "BLOCKED_TERMINALS",
    "checks_to_attest",
    "claims_completion",
    "completion_claims",
    "decide_finish",
    "finish_basis",
    "finish_events",
    "finish_problems",
    "fresh_exact_claims",
    "starting_state",
    "to_attest",
]

BLOCKED_TERMINALS = ("BLOCKED", "WAITING_APPROVAL", "OUT_OF_SCOPE")

# Completion language on word boundaries, only for sessions that changed nothing.
_COMPLETION = lazy_compile(  # flags inline: this module does not import re (a hook's start-up)
    r"(?i)\b(?:done|fixed|resolved|complete[ds]?|finished|implemented|works now|"
    r"all (?:the )?tests (?:now )?pass(?:es|ed|ing)?|tests (?:now )?pass(?:es|ed|ing)?|"
    r"ready (?:to|for) (?:merge|review)|successfully)\b"
)
_NEGATED = lazy_compile(r"(?i)\b(?:not|n't|never|no longer|isn't|aren't|yet to be)\s+(?:\w+\s+)?$")


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
        if c.status == InfoMark.EXACT.label
        and c.stamp is not None
        and c.stamp.evidence_seq >= state.last_modify_seq
    ]


def starting_state(state: SessionState, claim: ClaimState) -> bool:
    """A claim grounded before the first mutation that describes the starting state."""
    if claim.stamp is None or not state.first_modify_seq:
        return False
    if claim.expect == "FAIL" and claim.stamp.result == "EXPECTED_FAIL":
        return True  # a reproduction: it describes the tree before the fix, whenever it ran
    if claim.stamp.evidence_seq >= state.first_modify_seq:
        return False
    return claim.id in state.premises or claim.expect == "FAIL"


def completion_claims(state: SessionState) -> list[str]:
    """What must be fresh: ``done_when``, else every claim stamped after the last mutation."""
    if state.done_when:
        return list(state.done_when)
    return [
        c.id
        for c in state.claims.values()
        if c.grounded and c.stamp is not None and c.stamp.evidence_seq > state.last_modify_seq
    ]


def _fresh(state: SessionState, cid: str, attested: bool = False) -> bool:
    """Exact on evidence newer than the last change (``attested``: a claim with an oracle on
    infomark's own run of it)."""
    c = state.claims.get(cid)
    return (
        c is not None
        and c.status == InfoMark.EXACT.label
        and c.stamp is not None
        and c.stamp.evidence_seq > state.last_modify_seq
        and (not attested or c.oracle is None or c.stamp.attested)
    )


def to_attest(state: SessionState, config: Config) -> list[str]:
    """The claims a finish would have infomark run itself: those it needs fresh whose
    oracle has no fresh attested PASS (``done_when``, else every claim with an oracle that
    expects a pass), at most ``[attest] at_finish``."""
    if not config.attest_required:
        return []
    ids = state.done_when or [
        c.id for c in state.claims.values() if c.oracle and c.expect != "FAIL"
    ]
    out = []
    for cid in ids:
        c = state.claims.get(cid)
        if c is None or not c.oracle or c.oracle_refused or _fresh(state, cid, True):
            continue
        out.append(cid)
    return out[: int(config.attest.get("at_finish", 3))]


def checks_to_attest(
    state: SessionState, checks: Sequence[CheckStatus], budget: int = 3
) -> list[str]:
    """The verify profile's required checks a finish would have infomark run itself: those
    with no fresh run (not run, or stale) and those whose fresh PASS is the agent's own, when
    the work changed files; a fresh failure (the agent's own or infomark's) is not re-run: the
    code has not changed since. At most ``budget``."""
    out = [
        c.check
        for c in checks
        if c.state in ("not_run", "stale") or (c.state == "disqualified" and not c.attested)
    ]
    return out[: max(0, budget)]


def _sentence(text: str) -> str:
    text = text.rstrip().rstrip(".")
    head, sep, body = text.partition("] ") if text.startswith("[") else ("", "", text)
    return head + sep + body[:1].upper() + body[1:] + "."


def _check_problems(checks: Sequence[CheckStatus], changed: bool) -> list[tuple[FinishCode, str]]:
    """What each required check that is not a fresh PASS asks of the agent (one next step)."""
    from infomark.gates.checks import OWN_RUN  # at a finish only

    out: list[tuple[FinishCode, str]] = []
    for c in checks:
        if c.state == "pass":
            continue
        rerun = c.command or c.check  # the agent's own spelling of the check, when it ran it
        if c.state == "fail" and c.attested:
            names = ", ".join(c.failing[:10]) + (" …" if len(c.failing) > 10 else "")
            failing = f"; failing: {names}" if names else ""
            out.append(
                (
                    FinishCode.CHECK_FAILED,
                    f"the required check `{c.check}` failed in infomark's own run of it "
                    f"({c.ref}){failing}. Fix the code (not the tests), then finish again: the "
                    "finish runs the check itself",
                )
            )
        elif c.state == "fail":
            names = ", ".join(c.failing[:10]) + (" …" if len(c.failing) > 10 else "")
            failing = f"; failing: {names}" if names else ""
            out.append(
                (
                    FinishCode.CHECK_FAILED,
                    f"the required check `{c.check}` failed when it last ran (`{c.command}`, "
                    f"{c.ref}){failing}. Fix the code (not the tests), then run `{rerun}` again",
                )
            )
        elif c.state == "disqualified" and c.attested:
            out.append(
                (
                    FinishCode.REQUIRED_ORACLE,
                    f"the required check `{c.check}` did not pass in infomark's own run of it "
                    f"({c.ref}): {c.why}. Fix what it names, then finish again",
                )
            )
        elif c.state == "disqualified" and c.why == OWN_RUN:
            out.append(
                (
                    FinishCode.REQUIRED_ORACLE,
                    f"your run of `{c.check}` ({c.ref}) passed, but {OWN_RUN.partition('; ')[2]}, "
                    "and it could not run here; the operator installs a sandbox "
                    "(`infomark doctor` says how) or opts out with `[attest] required = false`",
                )
            )
        elif c.state == "not_run":
            out.append(
                (
                    FinishCode.REQUIRED_ORACLE,
                    (
                        f"the work changed files and the required check `{c.check}` has not "
                        "run since"
                        if changed
                        else f"you say the work is done, but the required check `{c.check}` "
                        "has not run"
                    )
                    + f": run `{c.check}` from the project root",
                )
            )
        elif c.state == "stale":
            out.append(
                (
                    FinishCode.REQUIRED_ORACLE,
                    f"the required check `{c.check}` last ran ({c.ref}, {c.why}) before the "
                    f"last change: run `{rerun}` again",
                )
            )
        elif c.state == "unsandboxed":  # a re-run cannot help: the sandbox must come back
            out.append((FinishCode.REQUIRED_ORACLE, f"`{c.check}` ({c.ref}): {c.why}"))
        else:
            out.append(
                (
                    FinishCode.REQUIRED_ORACLE,
                    f"the run of `{c.check}` ({c.ref}) cannot count: {c.why}; run `{rerun}` "
                    "again from the project root",
                )
            )
    return out


class _Finish:
    """One finish attempt under judgement: what the checks of :data:`FINISH_CHECKS` and
    :data:`EVIDENCE_CHECKS` read, and the problems they add (each starting with its code)."""

    __slots__ = (
        "_done",
        "checks",
        "codes",
        "config",
        "final_text",
        "problems",
        "stale",
        "state",
        "ungrounded",
        "weakened",
    )

    def __init__(
        self,
        state: SessionState,
        final_text: str,
        config: Config,
        checks: Sequence[CheckStatus] | None,
        weakened: Sequence[Weakness],
    ) -> None:
        self.state, self.final_text, self.config = state, final_text, config
        self.checks, self.weakened = checks, weakened
        self.ungrounded = tuple(state.ungrounded_premises()) if state.has_ledger else ()
        self.stale: tuple[str, ...] = ()
        self.problems: list[str] = []
        self.codes: list[str] = []
        self._done: list[str] | None = None

    def add(self, code: FinishCode, text: str) -> None:
        self.codes.append(code.value)
        self.problems.append(f"[{code.value}] {text}")

    def mutated(self) -> bool:
        """The session changed files and speaks the protocol (a ledger) or runs strict: the
        evidence rule binds it (a ledger-less session in the ledger profile is judged as
        before)."""
        state = self.state
        return state.last_modify_seq > 0 and (state.has_ledger or self.config.profile.walks_graph)

    def done(self) -> list[str]:
        """The completion claims (read once, when a check first needs them)."""
        if self._done is None:
            self._done = completion_claims(self.state)
        return self._done


def _grading_files_unchanged(f: _Finish) -> None:
    """No grading file changed after the claims were declared (unless the user approved it)."""
    state = f.state
    if not state.grading_changed:
        return
    parts = [
        f"{p} ({c.get('summary') or 'changed'})" for p, c in sorted(state.grading_changed.items())
    ]
    f.add(
        FinishCode.SELF_GRADED,
        "grading files changed after the claims were declared: "
        + "; ".join(parts)
        + ". Restore them, or ask the user to approve the change "
        "(`infomark approve --grading FILE`)",
    )


def _checks_not_weakened(f: _Finish) -> None:
    """A change does not weaken the checks instead of passing them."""
    if not (f.weakened and f.state.last_modify_seq > 0):
        return
    f.add(
        FinishCode.WEAKENED_CHECKS,
        "the change weakens the checks instead of passing them: "
        + "; ".join(w.describe() for w in f.weakened[:10])
        + ". Remove them (a real assertion, no skip or suppression, the configuration as it "
        "was), or say you are blocked and ask the user to accept them",
    )


def _required_checks_pass(f: _Finish) -> None:
    """After a change, or words of completion, each required check has a fresh PASS."""
    changed = f.state.last_modify_seq > 0
    if not (f.checks and (changed or claims_completion(f.final_text or ""))):
        return
    for code, text in _check_problems(f.checks, changed):
        f.add(code, text)


def _premises_grounded(f: _Finish) -> None:
    """Every premise of the plan is in G."""
    if f.ungrounded:
        f.add(FinishCode.UNGROUNDED_PREMISES, grounding_hint(list(f.ungrounded), f.state))


def _evidence_not_stale(f: _Finish) -> None:
    """No grounded claim rests on evidence older than the last edit (but the starting state)."""
    state = f.state
    f.stale = tuple(
        c.id
        for c in state.claims.values()
        if c.stamp is not None
        and c.grounded
        and c.stamp.evidence_seq < state.last_modify_seq
        and not starting_state(state, c)
    )
    if not f.stale:
        return
    cmds = [f"{cid} ({claim_step(state.claims[cid])})" for cid in f.stale]
    f.add(
        FinishCode.STALE_EVIDENCE,
        "evidence predates the last edit for: "
        + ", ".join(cmds)
        + "; each stamp must name the new evidence_ref",
    )


def _oracles_not_contradicted(f: _Finish) -> None:
    """No claim's oracle failed after it was stamped (but the starting state's)."""
    state = f.state
    contradicted = [
        c for c in state.claims.values() if c.contradicted_seq and not starting_state(state, c)
    ]
    if not contradicted:
        return
    f.add(
        FinishCode.ORACLE_FAILED,
        "the oracle of "
        + ", ".join(f"{c.id} (`{c.oracle}`)" for c in contradicted)
        + " failed after it was stamped; fix it and re-stamp, or revoke it with a "
        "divergence_event",
    )


def _completion_claims_fresh(f: _Finish) -> None:
    """After a change, the completion claims are Exact on evidence newer than it (on
    infomark's own run, when attested runs are required); at least one is."""
    if not f.mutated():
        return
    state, need, done = f.state, f.config.attest_required, f.done()
    missing = [cid for cid in done if not _fresh(state, cid, need)]
    if missing and (state.done_when or need):
        what = "done_when claims" if state.done_when else "the claims the work rests on"
        hints = ", ".join(_missing_hint(state, cid, need) for cid in missing)
        f.add(
            FinishCode.COMPLETION_WITHOUT_EVIDENCE,
            f"{what} need evidence newer than the last edit: " + hints,
        )
    elif not done:
        rerun = [
            f"`{c.oracle}` ({c.id})"
            for c in state.claims.values()
            if c.oracle and c.expect != "FAIL" and not c.oracle_refused
        ]
        how = ("re-run " + ", ".join(rerun[:3])) if rerun else "run the oracle that proves it"
        f.add(
            FinishCode.COMPLETION_WITHOUT_EVIDENCE,
            "the work changed files but no claim is Exact on evidence produced after the "
            f"last edit: {how} and bind it with oracle_stamp, or say you are not done with "
            '`gate: BLOCKED reason="…"` or a question for the user',
        )


def _missing_hint(state: SessionState, cid: str, need: bool) -> str:
    """The one next step for a completion claim that is not fresh."""
    named = state.claims.get(cid)
    if named is None:
        return f"{cid} (not declared: declare it in claim_ledger with an oracle)"
    if need and named.oracle and not named.oracle_refused:
        return f"{cid} (infomark's own run of `{named.oracle}`: `infomark check {cid}`)"
    return f"{cid} ({claim_step(named)})"


def _operator_oracle_fresh(f: _Finish) -> None:
    """After a change, a fresh completion claim runs an oracle the operator requires."""
    config = f.config
    if not (f.mutated() and config.oracle_require):
        return
    state, need = f.state, config.attest_required
    fresh = [state.claims[i] for i in f.done() if i in state.claims and _fresh(state, i, need)]
    if any(c.oracle and matches_any(c.oracle, config.oracle_require) for c in fresh):
        return
    f.add(
        FinishCode.REQUIRED_ORACLE,
        "the operator requires a fresh PASS of "
        + " or ".join(f"`{p}`" for p in config.oracle_require)
        + ": declare a claim with that oracle, run it and stamp it",
    )


def _completion_words_backed(f: _Finish) -> None:
    """Nothing changed: words of completion need the done_when claims Exact (without
    done_when: any Exact claim)."""
    state = f.state
    if f.mutated() or not (
        claims_completion(f.final_text or "") and f.config.require_evidence_for_completion
    ):
        return
    # a premise grounded on its own does not stand in for the done_when claims
    unmet = [cid for cid in state.done_when if not _fresh(state, cid)]
    if unmet:
        f.add(
            FinishCode.COMPLETION_WITHOUT_EVIDENCE,
            "you claim completion but the done_when claims are not Exact: "
            + ", ".join(unmet)
            + "; run their oracles and bind them with oracle_stamp, or say what is open",
        )
    elif not state.done_when and not fresh_exact_claims(state):
        f.add(
            FinishCode.COMPLETION_WITHOUT_EVIDENCE,
            "you claim completion but no claim is Exact on evidence: run the check that "
            "proves it and bind it with oracle_stamp, or say what is still open",
        )


#: The rules every finish is judged by, in order; each adds its problems (all are reported,
#: the first one's code is the refusal's).
FINISH_CHECKS: tuple[Callable[[_Finish], None], ...] = (
    _grading_files_unchanged,
    _checks_not_weakened,
    _required_checks_pass,
    _premises_grounded,
    _evidence_not_stale,
    _oracles_not_contradicted,
)
#: ... then, unless the verify profile judges a session with no ledger by its checks alone,
#: the evidence rule, in order.
EVIDENCE_CHECKS: tuple[Callable[[_Finish], None], ...] = (
    _completion_claims_fresh,
    _operator_oracle_fresh,
    _completion_words_backed,
)


def finish_problems(
    state: SessionState,
    final_text: str,
    config: Config,
    checks: Sequence[CheckStatus] | None = None,
    weakened: Sequence[Weakness] = (),
) -> tuple[str, list[str], tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``(code, problems, stale, ungrounded)``; no problems means the evidence allows it.

    ``checks``: the verify profile's required checks, as :func:`~infomark.gates.checks.
    check_status` found them (None in the other profiles). Each problem starts with its code.
    The rules: :data:`FINISH_CHECKS`, then :data:`EVIDENCE_CHECKS`, in order.
    """
    f = _Finish(state, final_text, config, checks, weakened)
    for check in FINISH_CHECKS:
        check(f)
    if config.profile.judges_checks and not state.has_ledger:
        # no protocol: the required checks above decide; no claim is asked for
        f.stale, f.ungrounded = (), ()
    else:
        for check in EVIDENCE_CHECKS:
            check(f)
    return (f.codes[0] if f.codes else FinishCode.ALLOWED.value), f.problems, f.stale, f.ungrounded


def _blocked(state: SessionState) -> bool:
    """The agent said, after its last change, that it is not done (BLOCKED, a question)."""
    return state.gate in BLOCKED_TERMINALS and state.gate_seq > state.last_modify_seq


def finish_basis(state: SessionState, checks: Sequence[CheckStatus] | None) -> dict[str, Any]:
    """What an allowed finish rests on, for the verdict (never more than the evidence):
    ``verified`` (changes, and the required checks or the completion claims pass on evidence
    newer than the last change), ``unchanged`` (no change; ``evidence`` says whether anything
    was run or stamped) or ``unchecked`` (changes that no fresh evidence backs)."""
    out: dict[str, Any] = {}
    if checks is not None:
        out["checks"] = [c.to_dict() for c in checks]
    fresh_checks = bool(checks) and all(c.state == "pass" for c in checks or ())
    if not state.last_modify_seq:
        out["basis"] = "unchanged"
        out["evidence"] = bool(state.last_exec_seq or fresh_exact_claims(state))
    elif fresh_checks or (state.has_ledger and any(_fresh(state, c) for c in state.claims)):
        out["basis"] = "verified"
    else:
        out["basis"] = "unchecked"
    return out


def decide_finish(
    state: SessionState,
    final_text: str,
    config: Config,
    checks: Sequence[CheckStatus] | None = None,
    weakened: Sequence[Weakness] = (),
) -> FinishDecision:
    """May the agent finish? ``checks``: the verify profile's required checks (their status);
    ``weakened``: what in the change weakens the checks it touches (gates/weakened.py)."""
    completion = claims_completion(final_text or "")
    if _blocked(state):
        return FinishDecision(
            True,
            f"finish allowed: the agent declared {state.gate} (journaled as finished_blocked)",
            FinishCode.FINISHED_BLOCKED.value,
            completion_claimed=completion,
        )
    code, problems, stale, ungrounded = finish_problems(state, final_text, config, checks, weakened)
    if config.profile.walks_graph and not problems and state.gate not in ("G9", "SUCCESS"):
        code = FinishCode.GATE_POSITION.value
        problems.append(
            f"[{code}] strict profile: finish from G9 CLEAN_STATE (you are at {state.gate}); "
            + spine_moves(state.gate, "G9")
        )
    if not problems:
        return FinishDecision(
            True,
            "finish allowed",
            FinishCode.ALLOWED.value,
            completion_claimed=completion,
            extra=finish_basis(state, checks),
        )
    cap = config.finish_refusal_cap
    if cap > 0 and state.finish_refusals + 1 > cap:
        return FinishDecision(
            True,
            f"finished UNVERIFIED after {cap} consecutive refusals (cap); "
            "unresolved: " + " ".join(problems),
            FinishCode.REFUSAL_CAP_REACHED.value,
            stale=stale,
            ungrounded=ungrounded,
            completion_claimed=completion,
            cap_reached=True,
            extra={"unresolved": code, **finish_basis(state, checks)},
        )
    return FinishDecision(
        False,
        "Not finished: " + " ".join(_sentence(p) for p in problems),
        code,
        stale=stale,
        ungrounded=ungrounded,
        completion_claimed=completion,
    )


def finish_events(
    result: FinishDecision, config: Config, blocked_reason: str = "", gate: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    """The events that journal a finish decision: ``finish_decision``, and at the cap
    ``finish_cap_reached`` and ``finished_unverified``; a blocked finish ``finished_blocked``
    (with the gate and what the agent said, ``blocked_reason``)."""
    events: list[tuple[str, dict[str, Any]]] = [("finish_decision", result.to_dict())]
    if result.cap_reached:
        cap = config.finish_refusal_cap
        events.append(("finish_cap_reached", {"cap": cap}))
        events.append(("finished_unverified", {"cap": cap, "unresolved": result.reason[:4000]}))
    if result.code == FinishCode.FINISHED_BLOCKED:
        events.append(("finished_blocked", {"gate": gate, "reason": blocked_reason}))
    return events

"""oracle_stamp, inference_stamp and divergence_event: binding a claim to evidence, and revoking it.

:func:`apply_stamp` judges a stamp against the evidence it names (exactly one reason code on
a rejection: :class:`~infomark.kernel.reasons.RejectReason`) and emits ``stamp_applied``;
:func:`apply_divergence` revokes a stamp with valid evidence. A ``source_stamp`` has its own
rules (:mod:`infomark.ledger.stamps.source`). Loaded when a block is ingested.
"""

from __future__ import annotations

import os

from infomark.kernel.infomark import InfoMark
from infomark.kernel.reasons import RejectReason
from infomark.kernel.tools import ToolClass
from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
from infomark.ledger.report import IngestReport
from infomark.ledger.semantics import LedgerContext, artifact_digest, shell_text
from infomark.ledger.stamps.reject import claim_and_evidence, predates_reopening, reject_stamp
from infomark.ledger.state import ClaimState, SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from _typeshed import StrPath

    from infomark.ledger.blocks import DivergenceBlock, StampBlock

__all__ = ["apply_divergence", "apply_stamp"]


def _reject(
    ctx: LedgerContext,
    report: IngestReport,
    block: StampBlock | DivergenceBlock,
    reason: RejectReason,
    msg: str,
) -> None:
    reject_stamp(ctx.emit, report, block, reason, msg)


def apply_stamp(ctx: LedgerContext, block: StampBlock, report: IngestReport) -> None:
    """Judge one oracle_stamp / inference_stamp by :data:`STAMP_CHECKS`, in order; exactly
    one reason code on rejection."""

    def reject(reason: RejectReason, msg: str) -> None:
        _reject(ctx, report, block, reason, msg)

    found = claim_and_evidence(ctx.state, ctx.verify_ref, block, reject)
    if found is None:
        return None
    stamp = _Stamp(ctx, block, *found)
    for applies_to, check in STAMP_CHECKS:
        if applies_to in (_BOTH, stamp.kind):
            rejection = check(stamp)
            if rejection is not None:
                return reject(*rejection)
    _emit_applied(stamp, report)
    return None


_ORACLE, _INFERENCE, _BOTH = "oracle", "inference", "both"
if TYPE_CHECKING:
    from collections.abc import Callable

    Rejection: TypeAlias = "tuple[RejectReason, str]"


class _Stamp:
    """One stamp under judgement: the block, the claim and evidence it names, and what the
    checks read of them."""

    __slots__ = ("_digest", "attested", "block", "claim", "ctx", "ev", "kind", "result")

    def __init__(self, ctx: LedgerContext, block: StampBlock, claim: ClaimState, ev: Evidence):
        self.ctx, self.block, self.claim, self.ev = ctx, block, claim, ev
        oracle = block.kind == "oracle_stamp"
        self.kind = _ORACLE if oracle else _INFERENCE
        self.attested = ev.evidence_class is EvidenceClass.ATTESTED
        self.result = (block.result or ("PASS" if oracle else "OBSERVED")).upper()
        self._digest: tuple[str | None] | None = None

    def artifact_digest(self) -> str | None:
        """The digest of ``artifact=`` now (read once, when a check first needs it)."""
        if self._digest is None:
            assert self.block.artifact
            self._digest = (artifact_digest(self.ctx.root_dir, self.block.artifact),)
        return self._digest[0]


def _not_delegated(s: _Stamp) -> Rejection | None:
    if s.ev.tool_class != ToolClass.DELEGATION:
        return None
    return (
        RejectReason.DELEGATED_EVIDENCE,
        f"{s.block.evidence_ref} is the result of {s.ev.tool} (delegation); "
        f"{RejectReason.DELEGATED_EVIDENCE.hint}",
    )


def _not_in_background(s: _Stamp) -> Rejection | None:
    if not s.ev.record.get("background"):
        return None
    return (
        RejectReason.BACKGROUND_RUN,
        f"{s.block.evidence_ref} started `{s.ev.command}` in the background; "
        f"{RejectReason.BACKGROUND_RUN.hint}",
    )


def _sandboxed_run(s: _Stamp) -> Rejection | None:
    """In an enforcing profile, the agent's own run made while its commands had no OS sandbox
    grounds nothing: a program run there could read the key (issue 27)."""
    state = s.ctx.state
    if not (
        s.ev.evidence_class is EvidenceClass.EXECUTION
        and s.ctx.rules.sandbox_required
        and state.unsandboxed_at(s.ev.seq)
    ):
        return None
    box, claim = state.agent_sandbox, s.claim
    why = str(box.get("detail") or "no OS sandbox was recorded for them")
    fix = str(box.get("fix") or "")
    return (
        RejectReason.UNSANDBOXED_RUN,
        f"{s.block.evidence_ref} is your own run, made while your commands ran outside an OS "
        f"sandbox ({why}): a program run there can read infomark's key and forge evidence, so "
        "your runs ground nothing. "
        + (
            f"`infomark check {claim.id}` runs its oracle in infomark's own sandbox"
            if claim.oracle
            else "A file tool's observation (Read) can still back an inference_stamp"
        )
        + (f"; to ground your own runs again the user must: {fix}" if fix else ""),
    )


def _eligible_class(s: _Stamp) -> Rejection | None:
    allowed = (
        (EvidenceClass.EXECUTION, EvidenceClass.ATTESTED)
        if s.kind == _ORACLE
        else (EvidenceClass.EXECUTION, EvidenceClass.OBSERVATION, EvidenceClass.ATTESTED)
    )
    if s.ev.evidence_class in allowed:
        return None
    return (
        RejectReason.INELIGIBLE_EVIDENCE,
        f"{s.block.evidence_ref} is {s.ev.evidence_class.value} evidence from {s.ev.tool}; "
        f"{RejectReason.INELIGIBLE_EVIDENCE.hint}",
    )


def _oracle_not_refused(s: _Stamp) -> Rejection | None:
    claim = s.claim
    if not (claim.oracle_refused and (s.kind == _ORACLE or claim.observe is None)):
        return None
    code = RejectReason(claim.oracle_refused)
    return code, f"claim {claim.id}'s oracle `{claim.oracle}` was refused; {code.hint}"


def _oracle_declared_and_matching(s: _Stamp) -> Rejection | None:
    """A declared oracle, and this is a run of it (an undeclared one passes when the rules
    allow it: the stamp is recorded as ``undeclared_oracle``)."""
    claim = s.claim
    if claim.oracle is None:
        if s.ctx.rules.require_declared_oracle:
            return (
                RejectReason.MISSING_ORACLE,
                f"claim {claim.id} declares no oracle; {RejectReason.MISSING_ORACLE.hint}",
            )
        return None
    return _oracle_mismatch(s.ctx, s.ev, claim)


def _not_before_oracle_declared(s: _Stamp) -> Rejection | None:
    claim, ev = s.claim, s.ev
    if not (
        s.ctx.rules.reject_evidence_predating_claim
        and claim.oracle_declared_seq is not None
        and ev.seq < claim.oracle_declared_seq
    ):
        return None
    return (
        RejectReason.EVIDENCE_PREDATES_CLAIM,
        f"{s.block.evidence_ref} (seq {ev.seq}) predates the declaration of claim "
        f"{claim.id}'s oracle (seq {claim.oracle_declared_seq}); "
        f"{RejectReason.EVIDENCE_PREDATES_CLAIM.hint}",
    )


def _not_before_claim_declared(s: _Stamp) -> Rejection | None:
    claim, ev = s.claim, s.ev
    if ev.seq >= claim.declared_seq:
        return None
    return (
        RejectReason.EVIDENCE_PREDATES_CLAIM,
        f"{s.block.evidence_ref} (seq {ev.seq}) predates the declaration of claim "
        f"{claim.id} (seq {claim.declared_seq}); "
        f"{RejectReason.EVIDENCE_PREDATES_CLAIM.hint}",
    )


def _observes_what_the_claim_names(s: _Stamp) -> Rejection | None:
    if s.claim.reopened_seq and s.ev.seq < s.claim.reopened_seq:
        return None  # the next check refuses it, for the re-opening
    return _named_by_claim(s.ctx, s.ev, s.claim)


def _not_before_reopening(s: _Stamp) -> Rejection | None:
    return predates_reopening(s.claim, s.ev, str(s.block.evidence_ref), "produce new evidence")


def _result_known(s: _Stamp) -> Rejection | None:
    if s.result in ("PASS", "FAIL", "EXPECTED_FAIL"):
        return None
    return (
        RejectReason.FAILED_EVIDENCE,
        f"result {s.block.result!r} is not PASS, FAIL or EXPECTED_FAIL",
    )


def _result_as_expected(s: _Stamp) -> Rejection | None:
    result, claim = s.result, s.claim
    if (result == "EXPECTED_FAIL") == (claim.expect == "FAIL") or result == "FAIL":
        return None
    what = (
        f"claim {claim.id} declares no `expect: FAIL`, so it is a PASS claim; "
        f"{RejectReason.EXPECTATION_MISMATCH.hint}"
        if result == "EXPECTED_FAIL"
        else f"claim {claim.id} declares `expect: FAIL`, so result={result} cannot stamp "
        "it: stamp a failing run of its oracle with result=EXPECTED_FAIL"
    )
    return RejectReason.EXPECTATION_MISMATCH, what


def _outcome_backs_result(s: _Stamp) -> Rejection | None:
    needed = Outcome.PASS if s.result == "PASS" else Outcome.FAIL
    if s.ev.outcome is needed:
        return None
    return (
        RejectReason.FAILED_EVIDENCE,
        f"{s.block.evidence_ref} has outcome {s.ev.outcome.value}, which cannot back "
        f"result={s.result}; {RejectReason.FAILED_EVIDENCE.hint}",
    )


def _something_ran(s: _Stamp) -> Rejection | None:
    ran_nothing = s.ctx.rules.ran_nothing
    if s.result != "PASS" or ran_nothing is None:
        return None
    out = s.ctx.output_of(s.ev)
    if out is None or not ran_nothing(out):
        return None
    return (
        RejectReason.WEAK_ORACLE,
        f"{s.block.evidence_ref}: the run's output says no test ran, so its exit 0 "
        f"proves nothing; {RejectReason.WEAK_ORACLE.hint}",
    )


def _not_self_graded(s: _Stamp) -> Rejection | None:
    # an attested run used the baseline's grading files, whatever the tree holds now
    state = s.ctx.state
    graded = state.self_graded_at(s.ev.seq) if s.result == "PASS" and not s.attested else []
    if not graded:
        return None
    return (
        RejectReason.SELF_GRADED,
        f"{s.block.evidence_ref} ran after grading files changed: "
        f"{_changes(state, graded)}; {RejectReason.SELF_GRADED.hint}",
    )


def _observation_succeeded(s: _Stamp) -> Rejection | None:
    if s.ev.outcome in (Outcome.PASS, Outcome.OBSERVED):
        return None
    return (
        RejectReason.FAILED_EVIDENCE,
        f"{s.block.evidence_ref} has outcome {s.ev.outcome.value}; an inference needs a "
        "successful observation",
    )


def _artifact_matches(s: _Stamp) -> Rejection | None:
    block = s.block
    if not block.artifact:
        if not block.content_hash:
            return None
        return (
            RejectReason.CONTENT_MISMATCH,
            "content_hash given without artifact=PATH; name the file it digests",
        )
    digest = s.artifact_digest()
    if digest is None:
        return (
            RejectReason.CONTENT_MISMATCH,
            f"artifact {block.artifact} cannot be read; stamp an existing file",
        )
    if block.content_hash and _norm_hash(block.content_hash) != digest:
        return (
            RejectReason.CONTENT_MISMATCH,
            f"content_hash {block.content_hash} differs from {block.artifact} now "
            f"({digest}); {RejectReason.CONTENT_MISMATCH.hint}",
        )
    return None


#: The rules a stamp must pass, in the order they are judged: ``(which stamps, check)``.
#: The first check that returns a rejection decides its one reason code.
STAMP_CHECKS: tuple[tuple[str, Callable[[_Stamp], Rejection | None]], ...] = (
    (_BOTH, _not_delegated),
    (_BOTH, _not_in_background),
    (_BOTH, _sandboxed_run),
    (_BOTH, _eligible_class),
    (_BOTH, _oracle_not_refused),
    (_ORACLE, _oracle_declared_and_matching),
    (_ORACLE, _not_before_oracle_declared),
    (_INFERENCE, _not_before_claim_declared),
    (_INFERENCE, _observes_what_the_claim_names),
    (_BOTH, _not_before_reopening),
    (_ORACLE, _result_known),
    (_ORACLE, _result_as_expected),
    (_ORACLE, _outcome_backs_result),
    (_ORACLE, _something_ran),
    (_ORACLE, _not_self_graded),
    (_INFERENCE, _observation_succeeded),
    (_BOTH, _artifact_matches),
)


def _emit_applied(s: _Stamp, report: IngestReport) -> None:
    """Record a stamp that passed every check: the claim's new rank, and what the agent is
    told."""
    ctx, block, claim, ev = s.ctx, s.block, s.claim, s.ev
    oracle = s.kind == _ORACLE
    if not oracle:
        result, new_status = ev.outcome.value, InfoMark.INFERRED
    else:
        result = s.result
        new_status = InfoMark.UNKNOWN if result == "FAIL" else InfoMark.EXACT
        if new_status is InfoMark.EXACT and not s.attested and ctx.rules.require_attested:
            # the agent's own run is an observation: Exact comes from infomark's own run
            new_status = InfoMark.INFERRED
    ctx.emit(
        "stamp_applied",
        {
            "kind": block.kind,
            "claim_id": claim.id,
            "evidence_ref": ev.ref,
            "evidence_seq": ev.seq,
            "result": result,
            "status": new_status.label,
            "artifact": block.artifact,
            "artifact_digest": s.artifact_digest() if block.artifact else None,
            "layer": block.layer,
            "undeclared_oracle": oracle and claim.oracle is None,
            "attested": s.attested,
        },
    )
    applied = {"claim_id": claim.id, "evidence_ref": ev.ref, "status": new_status.label}
    if oracle and not s.attested and ctx.rules.require_attested and claim.oracle is not None:
        applied["note"] = (
            f"{claim.id} is Inferred on your own run; Exact needs infomark's own run of "
            f"`{claim.oracle}` (`infomark check {claim.id}`; the finish runs it for you)"
        )
    report.stamps_applied.append(applied)


def _changes(state: SessionState, paths: list[str]) -> str:
    parts = []
    for path in paths:
        summary = state.grading_changed.get(path, {}).get("summary")
        parts.append(f"{path} ({summary})" if summary else path)
    return ", ".join(parts)


def _run_text(ev: Evidence) -> str:
    """The run's command as the shell ran it (records before cwd/oracle_key: the command)."""
    key = ev.record.get("oracle_key")
    if isinstance(key, str):
        return key
    raw = (ev.record.get("input") or {}).get("command")
    return shell_text(raw) if isinstance(raw, str) else shell_text(ev.command)


def _same_dir(ctx: LedgerContext, cwd: Any) -> bool:
    if not isinstance(cwd, str) or not cwd:
        return True  # an older record: no directory was recorded
    try:
        return os.path.realpath(cwd) == os.path.realpath(ctx.root_dir)
    except (OSError, ValueError):
        return False


def _oracle_mismatch(
    ctx: LedgerContext, ev: Evidence, claim: ClaimState
) -> tuple[RejectReason, str] | None:
    ran = _run_text(ev)
    if ran != claim.oracle:
        return (
            RejectReason.ORACLE_MISMATCH,
            f"{ev.ref} ran `{ran}`, but claim {claim.id} declares "
            f"oracle `{claim.oracle}`; {RejectReason.ORACLE_MISMATCH.hint}",
        )
    if not _same_dir(ctx, ev.record.get("cwd")):
        return (
            RejectReason.WRONG_DIRECTORY,
            f"{ev.ref} ran in {ev.record.get('cwd')}, not in the project root {ctx.root_dir}; "
            f"{RejectReason.WRONG_DIRECTORY.hint}",
        )
    return None


_OBSERVE_KEYS = ("file_path", "path", "notebook_path", "pattern", "query", "command", "url", "uri")


def _named_by_claim(
    ctx: LedgerContext, ev: Evidence, claim: ClaimState
) -> tuple[RejectReason, str] | None:
    """An inference_stamp's evidence must be the claim's oracle run or its `observe:` target."""
    if claim.observe is not None:
        inp = ev.record.get("input") or {}
        seen = _observed_values(inp, every_key=ev.evidence_class is EvidenceClass.OBSERVATION)
        if any(_same_target(ctx.root_dir, claim.observe, v) for v in seen):
            return None
        return (
            RejectReason.EVIDENCE_NOT_NAMED,
            f"{ev.ref} ({ev.tool} {', '.join(seen) or 'with no path'}) is not what claim "
            f"{claim.id} observes (`{claim.observe}`); {RejectReason.EVIDENCE_NOT_NAMED.hint}",
        )
    if claim.oracle is not None:
        return _oracle_mismatch(ctx, ev, claim)
    return (
        RejectReason.EVIDENCE_NOT_NAMED,
        f"claim {claim.id} names neither an oracle nor an `observe:` target; "
        f"{RejectReason.EVIDENCE_NOT_NAMED.hint}",
    )


def _observed_values(inp: Any, *, every_key: bool) -> list[str]:
    """What a call looked at: the usual keys, and for observation evidence every top-level
    string.

    A code-search tool (``codesearch``, ``codegraph``, an MCP search) names its target under
    any key (``q``, ``symbol``, ``name`` …), so a claim's ``observe:`` may name any string an
    observation was given (seed 002: local code search grounds a claim at Inferred). A run's
    other fields (a Bash ``description``) name nothing it looked at: only its ``command``.
    """
    if not isinstance(inp, dict):
        return []
    seen = [str(inp[k]) for k in _OBSERVE_KEYS if isinstance(inp.get(k), str)]
    if not every_key:
        return seen
    for key, value in inp.items():
        if key in _OBSERVE_KEYS:
            continue
        values = value if isinstance(value, list) else [value]
        seen.extend(v for v in values if isinstance(v, str) and v.strip())
    return seen


def _same_target(root: StrPath, want: str, got: str) -> bool:
    if want.strip() == got.strip():
        return True
    try:  # a relative path is the root's; an absolute one stays itself
        a = os.path.realpath(os.path.join(root, want.strip()))
        return a == os.path.realpath(os.path.join(root, got.strip()))
    except (OSError, ValueError):
        return False


def _norm_hash(value: str) -> str:
    v = value.strip().lower()
    return v if v.startswith("sha256:") else "sha256:" + v


def apply_divergence(ctx: LedgerContext, block: DivergenceBlock, report: IngestReport) -> None:
    """A divergence bound to valid evidence revokes the stamp and sets the claim Unknown."""
    if not block.evidence_ref:
        return _reject(
            ctx,
            report,
            block,
            RejectReason.MISSING_EVIDENCE,
            f"divergence_event for {block.claim_id} has no evidence_ref",
        )
    claim = ctx.state.claims.get(block.claim_id or "")
    if claim is None:
        return _reject(
            ctx,
            report,
            block,
            RejectReason.UNKNOWN_CLAIM,
            f"no claim {block.claim_id!r} in the active ledger",
        )
    ev, why = ctx.verify_ref(block.evidence_ref)
    if ev is None:
        assert why is not None
        return _reject(ctx, report, block, why, f"{block.evidence_ref}: {why.hint}")
    revoked = claim.stamp.evidence_ref if claim.stamp else None
    ctx.emit(
        "divergence",
        {
            "claim_id": claim.id,
            "evidence_ref": ev.ref,
            "revoked_ref": revoked,
            "status": InfoMark.UNKNOWN.label,
            "cause": "divergence_event",
        },
    )
    report.invalidated.append(
        {"claim_id": claim.id, "evidence_ref": revoked, "cause": "divergence_event", "by": ev.ref}
    )

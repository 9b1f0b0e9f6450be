"""oracle_stamp, inference_stamp and divergence_event: binding a claim to evidence, and revoking it.

:func:`apply_stamp` judges a stamp against the evidence it names (exactly one reason code on
a rejection: :class:`~infomark.kernel.reasons.RejectReason`) and emits ``stamp_applied``;
:func:`apply_divergence` revokes a stamp with valid evidence. A ``source_stamp`` has its own
rules (:mod:`infomark.ledger.source_stamp`). Loaded when a block is ingested.
"""

from __future__ import annotations

import os

from infomark.kernel.infomark import InfoMark
from infomark.kernel.reasons import RejectReason
from infomark.kernel.tools import ToolClass
from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
from infomark.ledger.report import IngestReport
from infomark.ledger.semantics import LedgerContext, artifact_digest, shell_text
from infomark.ledger.stamp_reject import claim_and_evidence, reject_stamp
from infomark.ledger.state import ClaimState, SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
    """Judge one oracle_stamp / inference_stamp; exactly one reason code on rejection."""

    def reject(reason: RejectReason, msg: str) -> None:
        _reject(ctx, report, block, reason, msg)

    state = ctx.state
    if block.legacy or not block.evidence_ref:
        return reject(
            RejectReason.MISSING_EVIDENCE,
            f"{block.kind} for {block.claim_id} has no evidence_ref; "
            f"{RejectReason.MISSING_EVIDENCE.hint}",
        )
    found = claim_and_evidence(state, ctx.verify_ref, block.claim_id, block.evidence_ref, reject)
    if found is None:
        return None
    claim, ev = found
    if ev.tool_class == ToolClass.DELEGATION:
        return reject(
            RejectReason.DELEGATED_EVIDENCE,
            f"{block.evidence_ref} is the result of {ev.tool} (delegation); "
            f"{RejectReason.DELEGATED_EVIDENCE.hint}",
        )
    oracle = block.kind == "oracle_stamp"
    if ev.record.get("background"):
        return reject(
            RejectReason.BACKGROUND_RUN,
            f"{block.evidence_ref} started `{ev.command}` in the background; "
            f"{RejectReason.BACKGROUND_RUN.hint}",
        )
    attested = ev.evidence_class is EvidenceClass.ATTESTED
    if (
        ev.evidence_class is EvidenceClass.EXECUTION
        and ctx.rules.sandbox_required
        and state.unsandboxed_at(ev.seq)
    ):
        return reject(RejectReason.UNSANDBOXED_RUN, _unsandboxed(state, block.evidence_ref, claim))
    allowed = (
        (EvidenceClass.EXECUTION, EvidenceClass.ATTESTED)
        if oracle
        else (EvidenceClass.EXECUTION, EvidenceClass.OBSERVATION, EvidenceClass.ATTESTED)
    )
    if ev.evidence_class not in allowed:
        return reject(
            RejectReason.INELIGIBLE_EVIDENCE,
            f"{block.evidence_ref} is {ev.evidence_class.value} evidence from {ev.tool}; "
            f"{RejectReason.INELIGIBLE_EVIDENCE.hint}",
        )
    if claim.oracle_refused and (oracle or claim.observe is None):
        code = RejectReason(claim.oracle_refused)
        return reject(code, f"claim {claim.id}'s oracle `{claim.oracle}` was refused; {code.hint}")
    undeclared = False
    if oracle:
        if claim.oracle is None:
            if ctx.rules.require_declared_oracle:
                return reject(
                    RejectReason.MISSING_ORACLE,
                    f"claim {claim.id} declares no oracle; {RejectReason.MISSING_ORACLE.hint}",
                )
            undeclared = True
        elif (msg := _oracle_mismatch(ctx, ev, claim)) is not None:
            return reject(msg[0], msg[1])
        if (
            ctx.rules.reject_evidence_predating_claim
            and claim.oracle_declared_seq is not None
            and ev.seq < claim.oracle_declared_seq
        ):
            return reject(
                RejectReason.EVIDENCE_PREDATES_CLAIM,
                f"{block.evidence_ref} (seq {ev.seq}) predates the declaration of claim "
                f"{claim.id}'s oracle (seq {claim.oracle_declared_seq}); "
                f"{RejectReason.EVIDENCE_PREDATES_CLAIM.hint}",
            )
    else:
        if ev.seq < claim.declared_seq:
            return reject(
                RejectReason.EVIDENCE_PREDATES_CLAIM,
                f"{block.evidence_ref} (seq {ev.seq}) predates the declaration of claim "
                f"{claim.id} (seq {claim.declared_seq}); "
                f"{RejectReason.EVIDENCE_PREDATES_CLAIM.hint}",
            )
        if not (claim.reopened_seq and ev.seq < claim.reopened_seq):
            named = _named_by_claim(ctx, ev, claim)
            if named is not None:
                return reject(named[0], named[1])
    if claim.reopened_seq and ev.seq < claim.reopened_seq:
        return reject(
            RejectReason.EVIDENCE_PREDATES_CLAIM,
            f"{block.evidence_ref} (seq {ev.seq}) predates the divergence that re-opened claim "
            f"{claim.id} (seq {claim.reopened_seq}); produce new evidence",
        )
    result = (block.result or ("PASS" if oracle else "OBSERVED")).upper()
    if oracle:
        if result not in ("PASS", "FAIL", "EXPECTED_FAIL"):
            return reject(
                RejectReason.FAILED_EVIDENCE,
                f"result {block.result!r} is not PASS, FAIL or EXPECTED_FAIL",
            )
        if (result == "EXPECTED_FAIL") != (claim.expect == "FAIL") and result != "FAIL":
            what = (
                f"claim {claim.id} declares no `expect: FAIL`, so it is a PASS claim; "
                f"{RejectReason.EXPECTATION_MISMATCH.hint}"
                if result == "EXPECTED_FAIL"
                else f"claim {claim.id} declares `expect: FAIL`, so result={result} cannot stamp "
                "it: stamp a failing run of its oracle with result=EXPECTED_FAIL"
            )
            return reject(RejectReason.EXPECTATION_MISMATCH, what)
        needed = Outcome.PASS if result == "PASS" else Outcome.FAIL
        if ev.outcome is not needed:
            return reject(
                RejectReason.FAILED_EVIDENCE,
                f"{block.evidence_ref} has outcome {ev.outcome.value}, which cannot back "
                f"result={result}; {RejectReason.FAILED_EVIDENCE.hint}",
            )
        if result == "PASS" and ctx.rules.ran_nothing is not None:
            out = ctx.output_of(ev)
            if out is not None and ctx.rules.ran_nothing(out):
                return reject(
                    RejectReason.WEAK_ORACLE,
                    f"{block.evidence_ref}: the run's output says no test ran, so its exit 0 "
                    f"proves nothing; {RejectReason.WEAK_ORACLE.hint}",
                )
        # an attested run used the baseline's grading files, whatever the tree holds now
        graded = ctx.state.self_graded_at(ev.seq) if result == "PASS" and not attested else []
        if graded:
            return reject(
                RejectReason.SELF_GRADED,
                f"{block.evidence_ref} ran after grading files changed: "
                f"{_changes(ctx.state, graded)}; {RejectReason.SELF_GRADED.hint}",
            )
        new_status = InfoMark.UNKNOWN if result == "FAIL" else InfoMark.EXACT
        if new_status is InfoMark.EXACT and not attested and ctx.rules.require_attested:
            # the agent's own run is an observation: Exact comes from infomark's own run
            new_status = InfoMark.INFERRED
    else:
        if ev.outcome not in (Outcome.PASS, Outcome.OBSERVED):
            return reject(
                RejectReason.FAILED_EVIDENCE,
                f"{block.evidence_ref} has outcome {ev.outcome.value}; an inference needs a "
                "successful observation",
            )
        result = ev.outcome.value
        new_status = InfoMark.INFERRED
    art_digest: str | None = None
    if block.artifact:
        art_digest = artifact_digest(ctx.root_dir, block.artifact)
        if art_digest is None:
            return reject(
                RejectReason.CONTENT_MISMATCH,
                f"artifact {block.artifact} cannot be read; stamp an existing file",
            )
        if block.content_hash and _norm_hash(block.content_hash) != art_digest:
            return reject(
                RejectReason.CONTENT_MISMATCH,
                f"content_hash {block.content_hash} differs from {block.artifact} now "
                f"({art_digest}); {RejectReason.CONTENT_MISMATCH.hint}",
            )
    elif block.content_hash:
        return reject(
            RejectReason.CONTENT_MISMATCH,
            "content_hash given without artifact=PATH; name the file it digests",
        )
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
            "artifact_digest": art_digest,
            "layer": block.layer,
            "undeclared_oracle": undeclared,
            "attested": attested,
        },
    )
    applied = {"claim_id": claim.id, "evidence_ref": ev.ref, "status": new_status.label}
    if oracle and not attested and ctx.rules.require_attested and claim.oracle is not None:
        applied["note"] = (
            f"{claim.id} is Inferred on your own run; Exact needs infomark's own run of "
            f"`{claim.oracle}` (`infomark check {claim.id}`; the finish runs it for you)"
        )
    report.stamps_applied.append(applied)


def _unsandboxed(state: SessionState, ref: str, claim: ClaimState) -> str:
    box = state.agent_sandbox
    why = str(box.get("detail") or "no OS sandbox was recorded for them")
    fix = str(box.get("fix") or "")
    return (
        f"{ref} is your own run, made while your commands ran outside an OS sandbox ({why}): "
        "a program run there can read infomark's key and forge evidence, so your runs ground "
        "nothing. "
        + (
            f"`infomark check {claim.id}` runs its oracle in infomark's own sandbox"
            if claim.oracle
            else "A file tool's observation (Read) can still back an inference_stamp"
        )
        + (f"; to ground your own runs again the user must: {fix}" if fix else "")
    )


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

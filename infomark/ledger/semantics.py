"""Ledger semantics: how parsed blocks change a session's claims.

Each function judges one block against the current state and emits events; the
reducer in :mod:`infomark.ledger.state` applies them. Only the runtime raises a
claim into G, and only through a stamp bound to evidence it issued.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

from infomark.kernel.infomark import InfoMark
from infomark.kernel.reasons import RejectReason
from infomark.kernel.records import dataclass
from infomark.kernel.tools import ToolClass
from infomark.ledger.canonical import sha256_hex
from infomark.ledger.evidence import Evidence, EvidenceClass, Outcome
from infomark.ledger.report import IngestReport
from infomark.ledger.state import ClaimState, SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from infomark.ledger.blocks import DivergenceBlock, LedgerBlock, StampBlock

__all__ = [
    "LedgerContext",
    "LedgerRules",
    "apply_divergence",
    "apply_ledger",
    "apply_stamp",
    "artifact_digest",
    "check_artifacts",
    "shell_text",
    "text_hash",
]

OracleJudge = Callable[[str], "tuple[RejectReason, str] | None"]


@dataclass(frozen=True, slots=True)
class LedgerRules:
    require_declared_oracle: bool = True
    reject_evidence_predating_claim: bool = True
    source_primary: tuple[str, ...] = ()  # [sources] primary: host rules added to the defaults
    source_defaults: bool = True  # [sources] defaults: keep the built-in primary hosts
    # Judges an oracle at declaration (the gates layer's weak-oracle rules and the
    # operator's allow list): None accepts it, else (reason, message with the fix).
    judge_oracle: OracleJudge | None = None
    # True when a run's output says no test ran: such a PASS grounds nothing.
    ran_nothing: Callable[[bytes], bool] | None = None


if TYPE_CHECKING:

    class LedgerContext(Protocol):
        """What the semantics need from the engine."""

        @property
        def state(self) -> SessionState: ...
        @property
        def rules(self) -> LedgerRules: ...
        @property
        def root(self) -> Path: ...
        def emit(self, type_: str, payload: Mapping[str, Any]) -> int: ...
        def verify_ref(self, ref: str) -> tuple[Evidence | None, RejectReason | None]: ...
        def output_of(self, ev: Evidence) -> bytes | None: ...

else:

    class LedgerContext:
        """What the semantics need from the engine (a ``typing.Protocol`` when type checking)."""


def text_hash(text: str) -> str:
    return sha256_hex(text.strip().encode("utf-8", "surrogatepass"))


def artifact_digest(root: Path, artifact: str) -> str | None:
    """``sha256:<hex>`` of the artifact file now, or None when it cannot be read."""
    path = Path(artifact)
    if not path.is_absolute():
        path = root / path
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                h.update(chunk)
    except (OSError, ValueError):
        return None
    return "sha256:" + h.hexdigest()


def _demote(written: InfoMark) -> InfoMark:
    return InfoMark.HYPOTHETICAL if written.grounded else written


def shell_text(command: str) -> str:
    """A command as the shell would run it, for comparing an oracle with a run.

    Runs of blanks outside quotes are one separator, a backslash-newline continues the
    line, blank lines vanish; a newline stays a newline (it separates commands) and
    quoted text is kept byte for byte.
    """
    out: list[str] = []
    quote = ""
    space = False

    def put(text: str) -> None:
        nonlocal space
        if space and out and out[-1] != "\n":
            out.append(" ")
        space = False
        out.append(text)

    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if quote:
            out.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < n:
                out.append(command[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch == "\\" and i + 1 < n and command[i + 1] == "\n":
            space = True  # a line continuation
            i += 1
        elif ch == "\\" and i + 1 < n:
            put(ch + command[i + 1])
            i += 1
        elif ch in " \t\r\f\v":
            space = True
        elif ch == "\n":
            space = False
            if out and out[-1] != "\n":
                out.append("\n")
        else:
            if ch in "'\"":
                quote = ch
            put(ch)
        i += 1
    return "".join(out).rstrip("\n")


def _oracle_norm(oracle: str | None) -> str | None:
    return shell_text(oracle) if oracle and oracle.strip() else None


def _field(block: Any, name: str) -> Any:
    """A parsed field, or the same key kept in ``extra`` by an older parser."""
    value = getattr(block, name, None)
    if value is None:
        extra = getattr(block, "extra", None) or {}
        value = extra.get(name)
    return value


def _id_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.strip().strip("[]").split(",")
    return [str(v).strip().strip("\"'") for v in value if str(v).strip()]


def _warn(report: IngestReport, line: int, column: int, message: str) -> None:
    report.diagnostics.append(
        {"line": line, "column": column, "message": message, "severity": "warning"}
    )


# -- claim_ledger -----------------------------------------------------------------


def apply_ledger(ctx: LedgerContext, block: LedgerBlock, report: IngestReport) -> None:
    """A new ledger replaces the active one; stamped claims survive when omitted."""
    state = ctx.state
    if not block.claims and not block.premises_for_plan:
        _warn(
            report,
            block.span.line,
            block.span.column,
            "empty claim_ledger ignored: it has no claims and no premises_for_plan",
        )
        return
    claims_out: dict[str, dict[str, Any]] = {}  # by id: a repeated id is O(1), later wins
    revoked: dict[str, str] = {}
    demoted: dict[str, None] = {}
    for cb in block.claims:
        if cb.id in claims_out:
            _warn(
                report,
                cb.span.line,
                cb.span.column,
                f"claim id {cb.id!r} repeated; the later entry wins",
            )
            del claims_out[cb.id]
            demoted.pop(cb.id, None)
            revoked.pop(cb.id, None)
        text = (cb.text or "").strip()
        th = text_hash(text)
        written = InfoMark.parse(cb.status)
        old = state.claims.get(cb.id)
        oracle = _oracle_norm(cb.oracle)
        expect = str(_field(cb, "expect") or "").strip().upper() or None
        observe = str(_field(cb, "observe") or "").strip() or None
        refused = None
        if oracle is not None and ctx.rules.judge_oracle is not None:
            verdict = ctx.rules.judge_oracle(oracle)
            if verdict is not None:
                refused = verdict[0].value
                report.diagnostics.append(
                    {
                        "line": cb.span.line,
                        "column": cb.span.column,
                        "message": f"claim {cb.id}: oracle `{oracle}` refused ({refused}): "
                        f"{verdict[1]}",
                        "severity": "error",
                        "code": refused,
                    }
                )
        keep = False
        status = _demote(written)
        cause = "ledger"
        if old is not None and old.stamp is not None:
            same = (
                old.text_hash == th
                and _falsifier_same(old, cb.falsifier)
                and old.expect == expect
                and old.observe == observe
            )
            if same and (old.oracle == oracle or old.stamp.kind == "inference_stamp"):
                keep = True
                status = InfoMark.parse(old.status)
                cause = "carried"
            else:
                revoked[cb.id] = old.stamp.evidence_ref
                cause = "statement_changed"
        if written.grounded and not keep:
            demoted[cb.id] = None
        restated = old is not None and old.text_hash != th
        # A changed oracle, or a changed statement, re-declares the claim: evidence
        # produced before this point no longer speaks for it.
        oracle_new = oracle is not None and (old is None or old.oracle != oracle or restated)
        declared = None
        if oracle is not None and old is not None and not oracle_new:
            declared = old.oracle_declared_seq
        claims_out[cb.id] = {
            "id": cb.id,
            "text": text,
            "text_hash": th,
            "written": written.label,
            "status": status.label,
            "falsifier": cb.falsifier,
            "oracle": oracle,
            "oracle_new": oracle_new,
            "oracle_declared_seq": declared,
            "keep_stamp": keep,
            "cause": cause,
            "reopen": restated,
            "expect": expect,
            "observe": observe,
            "oracle_refused": refused,
        }
    report.demoted.extend(demoted)
    carried = [
        cid for cid, c in state.claims.items() if cid not in claims_out and c.stamp is not None
    ]
    for cid, ref in revoked.items():
        old = state.claims[cid]
        ctx.emit(
            "statement_changed",
            {
                "claim_id": cid,
                "revoked_ref": ref,
                "status": _demote(InfoMark.parse(old.written)).label,
                "cause": "statement_changed",
                "reopen": False,
            },
        )
        report.invalidated.append(
            {"claim_id": cid, "evidence_ref": ref, "cause": "statement_changed"}
        )
    ctx.emit(
        "ledger_replaced",
        {
            "claims": list(claims_out.values()),
            "premises": list(dict.fromkeys(block.premises_for_plan)),
            "open_questions": list(dict.fromkeys(block.open_questions)),
            "done_when": list(dict.fromkeys(_id_list(_field(block, "done_when")))),
            "carried": carried,
            "demoted": list(report.demoted),
            "line": block.span.line,
        },
    )
    report.ledger_updated = True


def _falsifier_same(old: ClaimState, falsifier: str | None) -> bool:
    # A falsified (FAIL-stamped) claim re-opens only with a new falsifier.
    if old.stamp is not None and old.stamp.result == "FAIL":
        return (old.falsifier or "").strip() == (falsifier or "").strip()
    return True


# -- stamps -------------------------------------------------------------------------


def _reject(
    ctx: LedgerContext,
    report: IngestReport,
    block: StampBlock | DivergenceBlock,
    reason: RejectReason,
    msg: str,
) -> None:
    from infomark.ledger.stamp_reject import reject_stamp  # only when a stamp is refused

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
    from infomark.ledger.stamp_reject import claim_and_evidence

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
    allowed = (
        (EvidenceClass.EXECUTION,)
        if oracle
        else (EvidenceClass.EXECUTION, EvidenceClass.OBSERVATION)
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
                f"claim {claim.id} declares no `expect: FAIL`, so it is a PASS claim"
                if result == "EXPECTED_FAIL"
                else f"claim {claim.id} expects FAIL; a passing run is no evidence for it"
            )
            return reject(
                RejectReason.EXPECTATION_MISMATCH,
                f"{what}; {RejectReason.EXPECTATION_MISMATCH.hint}",
            )
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
        graded = ctx.state.self_graded_at(ev.seq) if result == "PASS" else []
        if graded:
            return reject(
                RejectReason.SELF_GRADED,
                f"{block.evidence_ref} ran after grading files changed: "
                f"{_changes(ctx.state, graded)}; {RejectReason.SELF_GRADED.hint}",
            )
        new_status = InfoMark.UNKNOWN if result == "FAIL" else InfoMark.EXACT
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
        art_digest = artifact_digest(ctx.root, block.artifact)
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
        },
    )
    report.stamps_applied.append(
        {"claim_id": claim.id, "evidence_ref": ev.ref, "status": new_status.label}
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
        return Path(cwd).resolve() == Path(ctx.root).resolve()
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
            f"{ev.ref} ran in {ev.record.get('cwd')}, not in the project root {ctx.root}; "
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
        seen = [str(inp[k]) for k in _OBSERVE_KEYS if isinstance(inp.get(k), str)]
        if any(_same_target(ctx.root, claim.observe, v) for v in seen):
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


def _same_target(root: Path, want: str, got: str) -> bool:
    if want.strip() == got.strip():
        return True
    try:
        a, b = Path(want.strip()), Path(got.strip())
        a = a if a.is_absolute() else Path(root) / a
        b = b if b.is_absolute() else Path(root) / b
        return a.resolve() == b.resolve()
    except (OSError, ValueError):
        return False


def _norm_hash(value: str) -> str:
    v = value.strip().lower()
    return v if v.startswith("sha256:") else "sha256:" + v


# -- divergence ------------------------------------------------------------------------


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


# -- artifacts ------------------------------------------------------------------------------


def check_artifacts(ctx: LedgerContext) -> list[dict[str, Any]]:
    """Re-digest stamped artifacts; a changed or missing one revokes its stamp (divergence)."""
    out: list[dict[str, Any]] = []
    for claim in list(ctx.state.claims.values()):
        stamp = claim.stamp
        if stamp is None or not stamp.artifact:
            continue
        now = artifact_digest(ctx.root, stamp.artifact)
        if now == stamp.artifact_digest:
            continue
        cause = "artifact_missing" if now is None else "artifact_changed"
        ctx.emit(
            "divergence",
            {
                "claim_id": claim.id,
                "evidence_ref": None,
                "revoked_ref": stamp.evidence_ref,
                "status": InfoMark.UNKNOWN.label,
                "cause": cause,
                "artifact": stamp.artifact,
                "digest": now,
            },
        )
        out.append({"claim_id": claim.id, "evidence_ref": stamp.evidence_ref, "cause": cause})
    return out

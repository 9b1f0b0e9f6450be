"""infomark runs a claim's oracle itself: sandboxed, in a copy made of the baseline.

:func:`check` is what every integration calls (``infomark check C1`` through the Claude Code
hook, the runner's ``infomark_check`` tool, the MCP proxy, the HTTP route, and the finish
for the claims it needs): build the throwaway copy (:mod:`.carry`), run the oracle under the
operating system's sandbox (:mod:`infomark.tools.sandbox`; where none runs, there is no
attested run and the text says why), read the outcome from the runner's report
(:mod:`infomark.tools.attest_report`; a verdict that would ground the claim is compared with
the oracle's run on the pristine baseline, :mod:`.baseline_run`), record it as ``attested``
evidence and bind the claim to it. The answer is one text for the agent: the outcome, the
evidence_ref, what the report showed and which changed files were not carried.
"""

from __future__ import annotations

from dataclasses import dataclass

from infomark.gates import baseline, project_baseline
from infomark.kernel.errors import InfomarkError, UserError
from infomark.kernel.reasons import AttestRefusal, RejectReason, RunReason
from infomark.ledger.calls import ToolOutcome
from infomark.ledger.evidence import Outcome
from infomark.tools import attest_report, sandbox
from infomark.tools.attest import baseline_run, carry, script_oracle
from infomark.tools.attest.sandboxed import (
    copy_dir,
    execute,
    oracle_argv,
    private_paths,
    workdir,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper
    from infomark.gates.surface.model import GradingSurface
    from infomark.ledger.evidence import Evidence
    from infomark.tools.attest.carry import Carry
    from infomark.tools.attest.sandboxed import Sandboxed

__all__ = ["CheckResult", "check", "check_command", "private_paths"]

_TAIL = 1500  # characters of the run's output shown in the answer


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What an attested check did: the text for the agent, and its evidence (None: no run)."""

    text: str
    evidence: Evidence | None = None
    outcome: str = "ERROR"
    status: str | None = None  # the claim's rank after it
    refused: AttestRefusal | None = None  # why no run was started, when none was


class _Refused(UserError):
    """No attested run: ``refusal`` says why (its hint is the next step)."""

    def __init__(self, code: AttestRefusal, text: str) -> None:
        super().__init__(text)
        self.refusal = code


def _approved(gk: Gatekeeper) -> dict[str, str]:
    """Grading files whose new content the user approved (path -> blob): the new baseline.
    Only approvals count; content recorded when a claim was declared may be the agent's.
    Approvals of earlier sessions come from the project's record (:mod:`.project_baseline`);
    this session's own follow."""
    record = project_baseline.load(gk.store)
    out: dict[str, str] = dict(record.approved_blobs()) if record is not None else {}
    for row in gk.events():
        if row.type == "grading_approved" and row.payload.get("approved"):
            blob = row.payload.get("blob")
            if isinstance(blob, str) and blob:
                out[str(row.payload["path"])] = blob
            else:
                out.pop(str(row.payload["path"]), None)  # approved as deleted
    return {p: b for p, b in out.items() if p not in gk.store.state.grading_changed}


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= _TAIL else "…" + text[-_TAIL:]


def check(gk: Gatekeeper, claim_id: str) -> CheckResult:
    """Run ``claim_id``'s oracle as infomark grades it; record and bind the result."""
    state = gk.store.refresh()
    claim = state.claims.get(claim_id)
    if claim is None:
        known = ", ".join(sorted(state.claims)) or "none is declared"
        return CheckResult(f"no claim {claim_id!r} in the ledger (claims: {known})")
    if not claim.oracle:
        return CheckResult(
            f"claim {claim_id} declares no oracle: declare `oracle:` (the command that decides "
            "it), then ask for `infomark check " + claim_id + "` again"
        )
    if claim.oracle_refused:
        return CheckResult(
            f"claim {claim_id}'s oracle `{claim.oracle}` was refused ({claim.oracle_refused}); "
            "declare an oracle that can fail"
        )
    return _attested(gk, claim_id, claim.oracle, claim_id)


def check_command(gk: Gatekeeper, command: str) -> CheckResult:
    """Run one of the project's required checks (``command``; no claim binds to it) as
    infomark grades it, and record the run: the verify profile's finish reads it."""
    return _attested(gk, None, command, f"`{command}`")


def _attested(gk: Gatekeeper, claim_id: str | None, oracle: str, what: str) -> CheckResult:
    """The sandbox, the baseline and the copy for one attested run of ``oracle``; ``what``
    names it in the text."""
    status = sandbox.probe()
    if not status.available:
        return CheckResult(
            f"no attested run of {what}: no sandbox can run here ({status.detail}; "
            f"{AttestRefusal.NO_SANDBOX}); ask the operator to fix it: {status.fix} (or opt out: "
            "`[attest] required = false` in infomark.toml; the agent's own runs then ground "
            "claims)",
            refused=AttestRefusal.NO_SANDBOX,
        )
    try:
        baseline.ensure(gk.store, required=gk.config.attest_required)
        recorded = gk.store.refresh().baseline
        if recorded.get("late"):
            raise _Refused(
                AttestRefusal.BASELINE_LATE,
                "the project's baseline was recorded after the first change of the session "
                "that recorded it (baseline_late: a hook failed before it could be taken), so "
                "it may hold the agent's changes; next step: the user looks at the tree "
                f"(`git status`, `git diff`) and accepts it with `{project_baseline.ACCEPT}`",
            )
        first = gk.store.state.first_modify_seq
        here = recorded.get("origin", gk.session) == gk.session  # else recorded before it
        if first and here and int(recorded.get("seq", 0)) > first:
            raise _Refused(
                AttestRefusal.BASELINE_AFTER_CHANGE,
                f"the session's baseline was recorded (seq {recorded.get('seq')}) after its first "
                f"change (seq {first}), so it may hold the agent's changes "
                f"({AttestRefusal.BASELINE_AFTER_CHANGE}); next step: "
                f"{AttestRefusal.BASELINE_AFTER_CHANGE.hint} (with `[attest] required`, the "
                "default, a session records it before its first action)",
            )
        manifest = baseline.load(gk.store, recorded)
        if recorded.get("project"):
            _same_environment(gk)
    except _Refused as exc:
        return CheckResult(f"no attested run of {what}: {exc}", refused=exc.refusal)
    except UserError as exc:
        code = AttestRefusal.BASELINE_UNUSABLE
        return CheckResult(f"no attested run of {what} ({code}): {exc}", refused=code)
    cfg = dict(gk.config.attest)
    scratch = workdir("infomark-attest-")
    try:
        return _run(gk, claim_id, oracle, manifest, cfg, scratch)
    except _Refused as exc:  # the environment changed while the check ran
        return CheckResult(f"the attested run of {what} does not count: {exc}", refused=exc.refusal)
    except carry.CachesMoved as exc:  # this run's, or the baseline's run's
        code = AttestRefusal.ENVIRONMENT_CHANGED
        return CheckResult(
            f"the attested run of {what} does not count ({code}): {exc}", refused=code
        )
    except InfomarkError as exc:
        return CheckResult(f"no attested run of {what}: {exc}")
    finally:
        carry.remove(scratch)


def _same_environment(gk: Gatekeeper, *, during: bool = False) -> None:
    """Refuse (:class:`_Refused`) when the project's environments (Python's, ``node_modules``)
    differ from the fingerprints its baseline recorded: they run in the attested run, before
    its checks.

    Checked before the run and again after it (``during``): the environments are linked into
    the sandbox where they are (read-only there, but not to the agent's other processes), so
    a background process could swap a file in once the first check passed and put it back
    before the run ends. Putting it back does not put back its change time, which the
    fingerprint holds, so the second check sees it."""
    changed = baseline.environment_changes(gk.store, gk.store.state.baseline)
    if not changed:
        return
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    when = "while the check ran" if during else "since its baseline"
    raise _Refused(
        AttestRefusal.ENVIRONMENT_CHANGED,
        f"the project's environment changed {when} "
        f"({AttestRefusal.ENVIRONMENT_CHANGED}): "
        f"{shown}; an environment runs in the attested run before infomark's checks, so "
        "a change there could grade itself; next step: the user looks at it and accepts "
        f"the tree as it is now with `{project_baseline.ACCEPT}`",
    )


def _run(
    gk: Gatekeeper,
    claim_id: str | None,
    oracle: str,
    manifest: dict[str, Any],
    cfg: dict[str, Any],
    workdir: str,
) -> CheckResult:
    state = gk.store.state
    copy = copy_dir(gk, workdir, manifest)
    approved = _approved(gk)
    carried, grading = carry.build(
        gk.store,
        manifest,
        copy,
        oracle,
        source_globs=gk.config.grading_source,
        approved=approved,
    )
    written = [p for p, d in carried.carried.items() if d != "deleted"]
    done = execute(
        gk,
        oracle,
        grading,
        copy,
        workdir,
        cfg,
        carried.environments,
        carried.sources,
        carried=written,
        caches=carried.caches,
    )
    ran, report = done.ran, done.report
    claim = state.claims[claim_id] if claim_id is not None else None
    expect = Outcome.FAIL if claim is not None and claim.expect == "FAIL" else Outcome.PASS
    named = grading.named_tests()
    judged = attest_report.judge(report, ran.exit_code, expect=expect, named_tests=named)
    base: baseline_run.BaselineRun | None = None
    if baseline_run.needed(judged, report):
        base = baseline_run.get(gk, oracle, manifest, approved, cfg)
        judged = attest_report.judge(
            report, ran.exit_code, baseline=base.report, expect=expect, named_tests=named
        )
    if judged.outcome is Outcome.PASS and judged.exit_status_only and grading.conservative:
        judged, base = _script_oracle(gk, oracle, manifest, approved, cfg, carried, base)
    if ran.limits_hit:
        judged = attest_report.Judgement(
            Outcome.FAIL,
            judged.code,
            f"the run was stopped: the {', '.join(ran.limits_hit)} limit was reached; "
            + judged.detail,
        )
    if state.baseline.get("project"):
        _same_environment(gk, during=True)  # what ran is what was fingerprinted
        carry.check_caches(carried)  # and what was hidden from it still is
    attestation = _attestation(claim_id, state.baseline.get("id"), done, grading, carried, judged)
    attestation["baseline_run"] = base.to_dict() if base is not None else None
    result = ToolOutcome(ran.stdout + ran.stderr, exit_code=ran.exit_code)
    shown = ran.stdout if ran.stdout.strip() else ran.stderr  # a run that printed nothing else
    return _record(gk, claim_id, oracle, result, attestation, judged, carried, shown)


def _attestation(
    claim_id: str | None,
    baseline_id: object,
    done: Sandboxed,
    grading: GradingSurface,
    carried: Carry,
    judged: attest_report.Judgement,
) -> dict[str, Any]:
    """What the attested evidence records of one run (the baseline run is added by the caller)."""
    ran, report, policy = done.ran, done.report, done.policy
    return {
        "claim_id": claim_id,
        "baseline": baseline_id,
        "carried": carried.carried,
        "left_out": carried.left_out,
        "surface": {
            "kinds": [k.value for k in grading.kinds or (grading.kind,)],
            "conservative": grading.conservative,
            "notes": list(grading.notes),
        },
        "sandbox": ran.backend.value,
        "network": policy.network,
        "limits": {
            "cpu_seconds": policy.limits.cpu_seconds,
            "memory_bytes": policy.limits.memory_bytes,
            "wall_seconds": policy.limits.wall_seconds,
        },
        "limits_hit": list(ran.limits_hit),
        "wall_ms": int(ran.wall_seconds * 1000),
        "cpu_ms": int(ran.cpu_seconds * 1000),  # the sandboxed program's, not bubblewrap's
        "report": report.to_dict(),
        "judgement": {
            "outcome": judged.outcome.value,
            "code": judged.code.value if judged.code else None,
            "detail": judged.detail,
            "exit_status_only": judged.exit_status_only,
        },
    }


def _record(
    gk: Gatekeeper,
    claim_id: str | None,
    oracle: str,
    result: ToolOutcome,
    attestation: dict[str, Any],
    judged: attest_report.Judgement,
    carried: carry.Carry,
    stdout: bytes,
) -> CheckResult:
    """Record the run as attested evidence; bind the claim to it (none for a required check)."""
    if claim_id is None:  # a required check: recorded, bound to no claim
        evidence = gk.record_attested_check(oracle, result, attestation, judged.outcome.value)
        text = _answer(None, oracle, evidence, judged, carried, None, {}, stdout)
        return CheckResult(text, evidence, judged.outcome.value)
    evidence, ingest = gk.record_attested(claim_id, result, attestation, judged.outcome.value)
    rank = gk.store.state.claims[claim_id].status
    return CheckResult(
        _answer(claim_id, oracle, evidence, judged, carried, rank, ingest.to_dict(), stdout),
        evidence,
        judged.outcome.value,
        rank,
    )


def _script_oracle(
    gk: Gatekeeper,
    oracle: str,
    manifest: dict[str, Any],
    approved: dict[str, str],
    cfg: dict[str, Any],
    carried: carry.Carry,
    base: baseline_run.BaselineRun | None,
) -> tuple[attest_report.Judgement, baseline_run.BaselineRun | None]:
    """An exit status 0 of an oracle no runner reports on: a PASS only when it runs a
    baseline script that failed on the baseline (:mod:`.script_oracle`), else weak."""
    script = script_oracle.baseline_script(
        oracle_argv(oracle), manifest.get("files") or {}, carried.carried
    )
    known = "(pytest, make test, npm test, cargo test, go test …)"
    if script is None:
        why = (
            f"`{oracle}` starts no test runner infomark knows and runs no script of the "
            "baseline (inline code, a program on PATH, or a file your change wrote), so its "
            "exit status 0 shows nothing; declare an oracle that runs the tests "
            + known
            + " or a test script the project already had that fails without the fix"
        )
        return attest_report.Judgement(
            Outcome.ERROR, RejectReason.WEAK_ORACLE, why, exit_status_only=True
        ), base
    base = base or baseline_run.get(gk, oracle, manifest, approved, cfg)
    before = base.report.exit_code
    if before != 0 and not base.limits_hit:
        why = (
            f"exit status 0 (exit-status-only): `{script}` is the baseline's, and the same "
            f"oracle exited {before} on the baseline, so your change is what makes it pass"
        )
        return attest_report.Judgement(Outcome.PASS, None, why, exit_status_only=True), base
    seen = "was stopped by a limit" if base.limits_hit else "exits 0 there too"
    why = (
        f"`{oracle}` starts no test runner infomark knows, and on the baseline (before any "
        f"change) it {seen}, so its exit status 0 cannot show your change; declare an oracle "
        f"that fails without the fix, or one that runs the tests {known}"
    )
    return attest_report.Judgement(
        Outcome.ERROR, RejectReason.WEAK_ORACLE, why, exit_status_only=True
    ), base


def _answer(
    claim_id: str | None,
    oracle: str,
    evidence: Evidence,
    judged: attest_report.Judgement,
    carried: carry.Carry,
    rank: str | None,
    ingest: dict[str, Any],
    stdout: bytes,
) -> str:
    what = f"{claim_id} `{oracle}`" if claim_id is not None else f"the required check `{oracle}`"
    lines = [
        f"[infomark attested run of {what}: {judged.outcome.value}"
        f"{f' ({judged.code.value})' if judged.code else ''} evidence_ref={evidence.ref}]",
        (f"{claim_id} is {rank}. " if claim_id is not None else "") + judged.detail,
    ]
    lines[1] = lines[1].strip()
    step = _run_step(judged)
    if step:
        lines.append(f"next step ({judged.code}): {step}")
    for rej in ingest.get("stamps_rejected") or ():
        lines.append(f"the stamp was refused ({rej.get('reason')}): {rej.get('message')}")
    if carried.left_out:
        lines.append(
            "not carried into the attested copy (the baseline's version, or nothing, was used): "
            + "; ".join(f"{p} ({why})" for p, why in sorted(carried.left_out.items()))
        )
    if carried.carried:
        lines.append("carried: " + ", ".join(sorted(carried.carried)))
    tail = _tail(stdout)
    if tail:
        lines.append("output:\n" + tail)
    return "\n".join(lines)


def _run_step(judged: attest_report.Judgement) -> str:
    """The one next step for a run whose judgement names a :class:`RunReason` that keeps it
    from grounding the claim ("" when none: a plain PASS or FAIL, or an expected-FAIL claim
    whose oracle now passes, which a claim without ``expect: FAIL`` states)."""
    code = judged.code
    if not isinstance(code, RunReason):
        return ""
    if code is RunReason.ORACLE_CANNOT_FAIL and judged.outcome is Outcome.PASS:
        return ""
    return code.hint

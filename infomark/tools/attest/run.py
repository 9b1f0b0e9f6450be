"""infomark runs a claim's oracle itself: sandboxed, in a copy made of the baseline.

:func:`check` is what every integration calls (``infomark check C1`` through the Claude Code
hook, the runner's ``infomark_check`` tool, the MCP proxy, the HTTP route, and the finish
for the claims it needs): build the throwaway copy (:mod:`.carry`), run the oracle under the
operating system's sandbox (:mod:`infomark.tools.sandbox`; where none runs, there is no
attested run and the text says why), read the outcome from the runner's report
(:mod:`.outcome`), record it as ``attested`` evidence and bind the claim to it. The answer
is one text for the agent: the outcome, the evidence_ref, what the report showed and which
changed files were not carried.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from infomark.gates import baseline
from infomark.gates.grading import DEFAULT_TEST_GLOBS
from infomark.gates.protect import installation_paths
from infomark.kernel.errors import InfomarkError, UserError
from infomark.ledger.calls import ToolOutcome
from infomark.tools import sandbox
from infomark.tools.attest import carry, outcome

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.evidence import Evidence

__all__ = ["CheckResult", "attester_for", "check", "private_paths"]

_TAIL = 1500  # characters of the run's output shown in the answer


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What an attested check did: the text for the agent, and its evidence (None: no run)."""

    text: str
    evidence: Evidence | None = None
    outcome: str = "ERROR"
    status: str | None = None  # the claim's rank after it


def private_paths(home: str) -> tuple[str, ...]:
    """What a sandboxed run may not read: the ledger home (key, token, journal), the host's
    transcripts and settings, infomark's installation."""
    user = os.path.expanduser("~")
    out = [os.path.realpath(home), *installation_paths()]
    out += [os.path.join(user, ".claude"), os.path.join(user, ".infomark")]
    out += [os.path.join(user, ".config", "infomark")]
    return tuple(dict.fromkeys(out))


def _limits(cfg: dict[str, Any]) -> sandbox.Limits:
    return sandbox.Limits(
        cpu_seconds=int(cfg.get("cpu_seconds", 600)),
        memory_bytes=int(cfg.get("memory_mb", 4096)) << 20,
        wall_seconds=float(cfg.get("wall_seconds", 300)),
    )


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
    status = sandbox.probe()
    if not status.available:
        return CheckResult(
            f"no attested run of {claim_id}: no sandbox can run here ({status.detail}); "
            f"ask the operator to fix it: {status.fix}"
        )
    try:
        baseline.ensure(gk.store)
        manifest = baseline.load(gk.store, gk.store.refresh().baseline)
    except UserError as exc:
        return CheckResult(f"no attested run of {claim_id}: {exc}")
    cfg = dict(gk.config.attest)
    workdir = tempfile.mkdtemp(prefix="infomark-attest-")
    try:
        return _run(gk, claim_id, claim.oracle, manifest, cfg, workdir)
    except InfomarkError as exc:
        return CheckResult(f"no attested run of {claim_id}: {exc}")
    finally:
        carry.remove(workdir)


def _run(
    gk: Gatekeeper,
    claim_id: str,
    oracle: str,
    manifest: dict[str, Any],
    cfg: dict[str, Any],
    workdir: str,
) -> CheckResult:
    state = gk.store.state
    copy = os.path.join(workdir, os.path.basename(gk.store.root_dir.rstrip("/")) or "project")
    os.makedirs(copy)
    approved = {
        p: b for p, b in state.grading_blobs.items() if p not in state.grading_changed and b
    }
    carried = carry.build(
        gk.store,
        manifest,
        copy,
        source_globs=gk.config.grading_source,
        test_globs=gk.config.grading_files or DEFAULT_TEST_GLOBS,
        approved=approved,
    )
    prepared = outcome.prepare(oracle, copy, workdir)
    policy = sandbox.SandboxPolicy(
        cwd=copy,
        writable=(workdir,),
        hidden=private_paths(gk.store.home_dir),
        network=bool(cfg.get("network", False)),
        env=tuple(
            sorted({**dict(sandbox.clean_env(tuple(cfg.get("env", ())))), **prepared.env}.items())
        ),
        limits=_limits(cfg),
    )
    ran = sandbox.run(["/bin/sh", "-c", oracle], policy)
    report = outcome.read(prepared, ran.exit_code, ran.stdout + ran.stderr)
    expect = "FAIL" if state.claims[claim_id].expect == "FAIL" else "PASS"
    judged = outcome.judge(report, ran.exit_code, expect=expect, limits_hit=ran.limits_hit)
    attestation = {
        "claim_id": claim_id,
        "baseline": state.baseline.get("id"),
        "carried": carried.carried,
        "left_out": carried.left_out,
        "sandbox": ran.backend.value,
        "network": policy.network,
        "limits": {
            "cpu_seconds": policy.limits.cpu_seconds,
            "memory_bytes": policy.limits.memory_bytes,
            "wall_seconds": policy.limits.wall_seconds,
        },
        "limits_hit": list(ran.limits_hit),
        "wall_ms": int(ran.wall_seconds * 1000),
        "report": report.to_dict(),
        "judgement": {"outcome": judged.outcome, "code": judged.code, "detail": judged.detail},
    }
    result = ToolOutcome(ran.stdout + ran.stderr, exit_code=ran.exit_code)
    evidence, ingest = gk.record_attested(claim_id, result, attestation, judged.outcome)
    rank = gk.store.state.claims[claim_id].status
    return CheckResult(
        _answer(claim_id, oracle, evidence, judged, carried, rank, ingest.to_dict(), ran.stdout),
        evidence,
        judged.outcome,
        rank,
    )


def _answer(
    claim_id: str,
    oracle: str,
    evidence: Evidence,
    judged: outcome.Judgement,
    carried: carry.Carry,
    rank: str,
    ingest: dict[str, Any],
    stdout: bytes,
) -> str:
    lines = [
        f"[infomark attested run of {claim_id} `{oracle}`: {judged.outcome}"
        f"{f' ({judged.code})' if judged.code else ''} evidence_ref={evidence.ref}]",
        f"{claim_id} is {rank}. {judged.detail}".strip(),
    ]
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


def attester_for(gk: Gatekeeper) -> None:
    """Let ``gk`` run attested checks (the finish calls them for the claims it needs)."""

    def attest(claim_id: str) -> str:
        return check(gk, claim_id).text

    gk.attester = attest

"""The oracle's run on the baseline: what it does before any change, to judge what it does now.

Weak oracles are judged by what they do (issue 26, §3). Two judgements compare the attested
run with the same oracle run on the **pristine baseline** (the baseline's files and the
grading files the user approved, none of the agent's changes carried), under the same sandbox:

- ``fewer_tests``: an attested run that collects fewer tests than the oracle collected on the
  baseline is not a PASS (a change that keeps test files or cases from being collected);
- ``oracle_cannot_fail``: for an ``expect: FAIL`` claim, an oracle that exits 0 with no
  failure in its report on the baseline, where the claim says it fails, cannot fail: the
  check is refused (ERROR) naming what the baseline run showed.

When it runs, and why then:

- **Lazily**, inside the first attested check that needs it, never at session start: most
  sessions never ask for an attested run, and the baseline's run of a full test suite costs as
  much as the check itself. Only a check whose own run would otherwise *ground* the claim
  needs it (a PASS of an ``expect: PASS`` claim: is anything missing?; a run of an
  ``expect: FAIL`` claim that did not fail: could it ever?); a failing run is judged without
  it, so the attack and red-phase flows pay nothing.
- **On the pristine baseline copy**, built like the attested copy but with no change carried:
  it shows the oracle's behaviour before the agent did anything, which its recorded baseline
  makes exact and reproducible at any later time in the session.
- **Once per baseline id, oracle and set of approved grading files** (the key): the result is
  journaled as ``attest_baseline_run`` (signed with the rest; the agent cannot write it) and
  read back by later checks of any claim with the same oracle. An approved test change is a new
  baseline for that file, so it makes a new key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from infomark.kernel.reasons import RunReason
from infomark.kernel.runners import ReportFormat
from infomark.tools.attest import carry
from infomark.tools.attest.sandboxed import copy_dir, execute, workdir
from infomark.tools.attest_report import Judgement, RunnerReport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper

__all__ = ["EVENT", "BaselineRun", "get", "key", "needed"]

EVENT = "attest_baseline_run"

#: the counts the comparison reads (the per-test list is not kept)
_COUNTS = (
    "exit_code",
    "collected",
    "passed",
    "failed",
    "errors",
    "skipped",
    "deselected",
    "xfailed",
    "xpassed",
    "collection_errors",
)


@dataclass(frozen=True, slots=True)
class BaselineRun:
    """The oracle's report on the pristine baseline, and where it was journaled."""

    key: str
    report: RunnerReport
    seq: int
    cached: bool
    limits_hit: tuple[str, ...] = ()  # a limit stopped it: its exit status shows nothing

    def to_dict(self) -> dict[str, Any]:
        """What the attested evidence records of it."""
        out: dict[str, Any] = {"key": self.key, "seq": self.seq, "cached": self.cached}
        out["format"] = self.report.format.value
        out.update({name: getattr(self.report, name) for name in _COUNTS})
        return out


def needed(judged: Judgement, report: RunnerReport) -> bool:
    """Does ``judged`` (made without a baseline run) depend on one? Only a verdict that would
    ground the claim: a plain PASS with a report that counts tests (``fewer_tests``), or a run
    of an ``expect: FAIL`` claim that did not fail (``oracle_cannot_fail``)."""
    if judged.code is RunReason.ORACLE_CANNOT_FAIL:
        return True
    return judged.grounds and report.format is not ReportFormat.EXIT_STATUS


def key(baseline_id: str, oracle: str, approved: Mapping[str, str]) -> str:
    """The cache key: the baseline, the oracle's text, the approved grading files."""
    doc = json.dumps([baseline_id, oracle, sorted(approved.items())], separators=(",", ":"))
    return "sha256:" + hashlib.sha256(doc.encode()).hexdigest()


def _cached(gk: Gatekeeper, wanted: str) -> BaselineRun | None:
    for row in gk.events():
        if row.type == EVENT and row.payload.get("key") == wanted:
            p = row.payload
            report = RunnerReport(
                format=ReportFormat(str(p["format"])),
                exit_code=int(p["exit_code"]),
                collected=int(p["collected"]),
                passed=int(p["passed"]),
                failed=int(p["failed"]),
                errors=int(p["errors"]),
                skipped=int(p["skipped"]),
                deselected=int(p["deselected"]),
                xfailed=int(p["xfailed"]),
                xpassed=int(p["xpassed"]),
                collection_errors=int(p["collection_errors"]),
            )
            hit = tuple(str(x) for x in p.get("limits_hit") or ())
            return BaselineRun(wanted, report, row.seq, True, hit)
    return None


def get(
    gk: Gatekeeper,
    oracle: str,
    manifest: Mapping[str, Any],
    approved: Mapping[str, str],
    cfg: dict[str, Any],
) -> BaselineRun:
    """The oracle's run on the pristine baseline: journaled once per :func:`key`, then read
    back."""
    baseline_id = str(gk.store.state.baseline.get("id") or "")
    wanted = key(baseline_id, oracle, approved)
    found = _cached(gk, wanted)
    if found is not None:
        return found
    scratch = workdir("infomark-attest-base-")
    try:
        copy = copy_dir(gk, scratch, manifest)
        carried, grading = carry.build(
            gk.store, manifest, copy, oracle, approved=approved, carry_changes=False
        )
        done = execute(
            gk,
            oracle,
            grading,
            copy,
            scratch,
            cfg,
            carried.environments,
            carried.sources,
            caches=carried.caches,
        )
        carry.check_caches(carried)  # a cache that reached this run would be kept with it
    finally:
        carry.remove(scratch)
    report = done.report
    payload: dict[str, Any] = {"key": wanted, "baseline": baseline_id, "oracle": oracle}
    payload["format"] = report.format.value
    payload.update({name: getattr(report, name) for name in _COUNTS})
    payload["limits_hit"] = list(done.ran.limits_hit)
    with gk.store.transaction():
        seq = gk.store.emit(EVENT, payload)
    return BaselineRun(wanted, report, seq, False, tuple(done.ran.limits_hit))

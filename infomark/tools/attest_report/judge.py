"""``judge``: the outcome of an attested run, from the runner's report before its exit status.

An ordered table of small checks; the first that speaks decides:

1. ``runner_tampered`` (ERROR): the report says the runner was patched, or disagrees with its
   JUnit XML, its exit status, or never reached its end;
2. failures in the report: FAIL; ``collection_error`` when a test file did not import or
   collect; ``masked_failure`` when the process still exited 0;
3. ``no_tests_ran`` (ERROR): a report that counts no test that ran;
4. ``fewer_tests`` (ERROR): fewer collected than the same oracle at the baseline;
5. ``named_test_not_run`` (ERROR): a test the claim names is missing or was skipped;
6. a non-zero exit with no failure in the report: FAIL (something else in the oracle failed);
7. ``oracle_cannot_fail``: the claim expects FAIL and the oracle passes on the baseline (ERROR:
   it cannot fail, refused), or it passes now after failing there (PASS with the code: the
   expected failure is gone);
8. otherwise the exit status: PASS on 0, FAIL else. With no report (``exit-status-only``)
   only 6 and 8 can speak, and the judgement says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from infomark.kernel.reasons import RunReason
from infomark.kernel.runners import ReportFormat
from infomark.ledger.evidence import Outcome
from infomark.tools.attest_report.model import Judgement, RunnerReport

__all__ = ["judge", "named_in"]


@dataclass(frozen=True, slots=True)
class _Case:
    """One run under judgement: what the checks of :func:`judge` read."""

    report: RunnerReport
    exit_code: int
    baseline: RunnerReport | None
    expect: Outcome
    named: tuple[str, ...]

    @property
    def has_report(self) -> bool:
        return self.report.format is not ReportFormat.EXIT_STATUS


def _tampered(c: _Case) -> Judgement | None:
    r = c.report
    if r.tampered or (c.has_report and not r.complete and r.format is ReportFormat.PYTEST_PLUGIN):
        what = r.detail or "the report is incomplete"
        return Judgement(Outcome.ERROR, RunReason.RUNNER_TAMPERED, f"runner tampered: {what}")
    return None


def _failures(c: _Case) -> Judgement | None:
    r = c.report
    bad = r.failed + r.errors + r.collection_errors
    if not c.has_report or not bad:
        return None
    names = ", ".join(r.failed_tests[:5]) or "a test file"
    if c.exit_code == 0:
        return Judgement(
            Outcome.FAIL,
            RunReason.MASKED_FAILURE,
            f"the oracle exited 0 while the report counts {bad} failing ({names})",
        )
    if r.collection_errors:
        return Judgement(
            Outcome.FAIL,
            RunReason.COLLECTION_ERROR,
            f"{r.collection_errors} test file(s) failed to collect",
        )
    return Judgement(Outcome.FAIL, None, f"{bad} failed: {names}")


def _no_tests(c: _Case) -> Judgement | None:
    if c.has_report and c.report.ran == 0:
        r = c.report
        return Judgement(
            Outcome.ERROR,
            RunReason.NO_TESTS_RAN,
            f"no test ran ({r.collected} collected, {r.skipped} skipped, "
            f"{r.deselected} deselected)",
        )
    return None


def _fewer(c: _Case) -> Judgement | None:
    b = c.baseline
    if not c.has_report or b is None or b.format is not c.report.format:
        return None
    if c.report.collected < b.collected:
        return Judgement(
            Outcome.ERROR,
            RunReason.FEWER_TESTS,
            f"{c.report.collected} tests collected, {b.collected} at the baseline",
        )
    return None


def named_in(report: RunnerReport, named: str) -> list[tuple[str, str]]:
    """The report's tests that ``named`` (a node id, a class or a file) selects. Node ids are
    relative to pytest's rootdir: ``sub/tests/test_a.py::t`` (from the project's root) also
    matches ``tests/test_a.py::t`` (a rootdir in ``sub``)."""
    path, sep, rest = named.strip().partition("::")
    parts = path.split("/")
    forms = ["/".join(parts[i:]) + sep + rest for i in range(len(parts))]
    out = []
    for nodeid, outcome in report.tests:
        if any(nodeid == f or nodeid.startswith((f + "::", f + "[")) for f in forms):
            out.append((nodeid, outcome))
    return out


def _named(c: _Case) -> Judgement | None:
    if not c.has_report:
        return None
    for name in c.named:
        hits = named_in(c.report, name)
        if not hits:
            return Judgement(
                Outcome.ERROR, RunReason.NAMED_TEST_NOT_RUN, f"{name} is not in the report"
            )
        if all(o in ("skipped", "xfailed") for _, o in hits):
            return Judgement(Outcome.ERROR, RunReason.NAMED_TEST_NOT_RUN, f"{name} was skipped")
    return None


def _exit_failed(c: _Case) -> Judgement | None:
    if c.exit_code != 0:
        how = "" if c.has_report else " (exit-status-only)"
        return Judgement(
            Outcome.FAIL, None, f"exit status {c.exit_code}{how}", exit_status_only=not c.has_report
        )
    return None


def _cannot_fail(c: _Case) -> Judgement | None:
    if c.expect is not Outcome.FAIL:
        return None
    b = c.baseline
    if b is not None and b.exit_code == 0 and not (b.failed or b.errors or b.collection_errors):
        seen = "exit status 0"
        if b.format is ReportFormat.EXIT_STATUS:
            seen += " (exit-status-only)"
        else:
            seen += f", {b.passed} passed of {b.collected} collected, none failed"
        return Judgement(
            Outcome.ERROR,
            RunReason.ORACLE_CANNOT_FAIL,
            f"the claim expects FAIL but the oracle cannot fail: on the baseline, before any "
            f"change, it showed {seen}",
            exit_status_only=not c.has_report,
        )
    return Judgement(
        Outcome.PASS,
        RunReason.ORACLE_CANNOT_FAIL,
        "the claim expects FAIL but the oracle passed",
        exit_status_only=not c.has_report,
    )


_CHECKS: tuple[Callable[[_Case], Judgement | None], ...] = (
    _tampered,
    _failures,
    _no_tests,
    _fewer,
    _named,
    _exit_failed,
    _cannot_fail,
)


def judge(
    report: RunnerReport,
    exit_code: int,
    *,
    baseline: RunnerReport | None = None,
    expect: Outcome = Outcome.PASS,
    named_tests: Sequence[str] = (),
) -> Judgement:
    """The outcome of an attested run (see the module's docstring for the order)."""
    if expect not in (Outcome.PASS, Outcome.FAIL):
        raise ValueError(f"expect must be PASS or FAIL, not {expect}")
    case = _Case(report, exit_code, baseline, expect, tuple(named_tests))
    for check in _CHECKS:
        verdict = check(case)
        if verdict is not None:
            return verdict
    if case.has_report:
        return Judgement(Outcome.PASS, None, f"{report.passed} passed")
    return Judgement(Outcome.PASS, None, "exit status 0 (exit-status-only)", exit_status_only=True)

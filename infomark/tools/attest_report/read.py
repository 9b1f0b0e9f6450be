"""``read_report``: what the runner's own report counted, checked against itself.

pytest: the plugin's JSON lines (every process's; xdist workers' tests are counted by the
controller, their tamper findings kept), cross-checked with the JUnit XML files the run wrote
and with the exit status: the run never reached ``finish``, a ``tamper`` line, counts that
disagree with JUnit's, or pytest's own status 0 with failures are ``tampered``. jest/vitest:
the ``--json`` file. go: the ``-json`` event stream on standard output. Otherwise only the
exit status is known.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator

from infomark.kernel.runners import ReportFormat
from infomark.tools.attest_report.model import PreparedRun, RunnerReport

__all__ = ["read_report"]

_MAX_BYTES = 64 * 1024 * 1024
_KEYS = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")


def read_report(prepared: PreparedRun, exit_code: int, stdout: str | bytes) -> RunnerReport:
    """The report of a run prepared by ``prepare`` that exited with ``exit_code``."""
    text = stdout.decode("utf-8", "replace") if isinstance(stdout, bytes) else stdout
    if prepared.format is ReportFormat.PYTEST_PLUGIN:
        return _pytest(prepared, exit_code)
    if prepared.format is ReportFormat.JEST_JSON:
        return _jest(prepared, exit_code)
    if prepared.format is ReportFormat.GO_JSON:
        return _go(exit_code, text)
    return RunnerReport(
        format=ReportFormat.EXIT_STATUS,
        exit_code=exit_code,
        complete=True,
        notes=("exit-status-only: the runner offers no report infomark reads",),
    )


def _lines(path: str) -> Iterator[dict[str, object]]:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES)
    except OSError:
        return
    for raw in data.splitlines():
        try:
            doc = json.loads(raw)
        except ValueError:
            yield {"kind": "garbage"}
            continue
        if isinstance(doc, dict):
            yield doc


def _pytest(prepared: PreparedRun, exit_code: int) -> RunnerReport:
    """The plugin's lines tallied, then judged by :data:`PYTEST_CHECKS` in order."""
    t = _tally(prepared.report_path)
    t.junit = _junit(prepared.workdir)
    for into, check in PYTEST_CHECKS:
        (t.tamper if into == _TAMPER else t.notes).extend(check(t))
    counts, tests = t.counts, t.tests
    return RunnerReport(
        format=ReportFormat.PYTEST_PLUGIN,
        exit_code=exit_code,
        collected=t.collected,
        deselected=t.deselected,
        collection_errors=t.collection_errors,
        runner_status=t.status,
        failed_tests=tuple(n for n, o in tests.items() if o in ("failed", "errors")),
        tests=tuple(tests.items()),
        tampered=bool(t.tamper),
        detail="; ".join(dict.fromkeys(t.tamper))[:2000],
        complete=t.complete,
        notes=tuple(t.notes),
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        skipped=counts["skipped"],
        xfailed=counts["xfailed"],
        xpassed=counts["xpassed"],
    )


class _Tally:
    """What the plugin's lines say, per process (``pid``), and what the checks found."""

    def __init__(self) -> None:
        self.starts: dict[int, dict[str, object]] = {}
        self.finishes: dict[int, dict[str, object]] = {}
        self.seen_pids: set[int] = set()
        self.tests: dict[str, str] = {}  # nodeid → its worst outcome
        self.collected = self.deselected = self.collection_errors = 0
        self.worker_collected = self.worker_errors = 0
        self.status: int | None = None
        self.counts: dict[str, int] = {}
        self.junit: tuple[int, int] | None = None
        self.tamper: list[str] = []
        self.notes: list[str] = []

    @property
    def complete(self) -> bool:
        """Every process that started finished."""
        return set(self.starts) <= set(self.finishes)

    @property
    def failing(self) -> int:
        return self.counts["failed"] + self.counts["errors"] + self.collection_errors


def _tally(report_path: str) -> _Tally:
    """The plugin's lines of every process, tallied (a worker's tests are the controller's)."""
    t = _Tally()
    for doc in _lines(report_path):
        kind, pid = doc.get("kind"), doc.get("pid")
        if kind == "garbage" or not isinstance(pid, int):
            t.tamper.append("the report file holds a line the plugin did not write")
            continue
        t.seen_pids.add(pid)
        if kind == "start":
            t.starts[pid] = doc
        elif kind == "tamper":
            t.tamper.append(f"{doc.get('where')}: {doc.get('what')}")
        elif _worker(t.starts.get(pid)):
            if kind == "finish":
                t.finishes[pid] = doc
            elif kind == "collected":  # xdist: each worker collects, the controller does not
                t.worker_collected = max(t.worker_collected, _int(doc.get("count")))
                t.worker_errors = max(t.worker_errors, _int(doc.get("errors")))
            continue  # a worker's tests reach the controller's logreport too
        elif kind == "collected":
            t.collected += _int(doc.get("count"))
            t.deselected += _int(doc.get("deselected"))
            t.collection_errors = max(t.collection_errors, _int(doc.get("errors")))
        elif kind == "collect_error":
            t.collection_errors = max(t.collection_errors, 1)
        elif kind == "test":
            nodeid, outcome = str(doc.get("nodeid")), str(doc.get("outcome"))
            if outcome in _KEYS:
                # setup error then teardown error of one test: counted once, the worst
                first = t.tests.get(nodeid) in (None, "passed")
                t.tests[nodeid] = outcome if first else t.tests[nodeid]
        elif kind == "finish":
            t.finishes[pid] = doc
            t.status = _int(doc.get("exitstatus")) if t.status in (None, 0) else t.status
    t.counts = {k: sum(1 for o in t.tests.values() if o == k) for k in _KEYS}
    t.collected = t.collected or t.worker_collected
    t.collection_errors = max(t.collection_errors, t.worker_errors)
    return t


def _a_session_started(t: _Tally) -> list[str]:
    """pytest started a session with the report plugin."""
    return [] if t.starts else ["pytest never started a session with the report plugin"]


def _every_process_finished(t: _Tally) -> list[str]:
    """Every process that started reached ``finish`` (no os._exit, signal or kill)."""
    if t.complete:
        return []
    return ["the run ended before pytest finished (os._exit, a signal or a kill)"]


def _no_line_of_a_stranger(t: _Tally) -> list[str]:
    """Every line is of a process that started (the report was not truncated)."""
    if set(t.finishes) - set(t.starts) or t.seen_pids - set(t.starts):
        return ["the report holds lines of a process that never started (truncated?)"]
    return []


def _lines_match_the_plugins_tally(t: _Tally) -> list[str]:
    """The tests the lines count are the plugin's own tally (each controller's finish)."""
    out = []
    for pid, finish in t.finishes.items():
        if _worker(t.starts.get(pid)):
            continue
        theirs_counts = finish.get("counts")
        own = {k: v for k, v in t.counts.items() if v}
        if isinstance(theirs_counts, dict) and _nonzero(theirs_counts) != own:
            out.append(f"the lines counted {own}, the plugin's own tally {theirs_counts}")
    return out


def _junit_written(t: _Tally) -> list[str]:
    """A session that started wrote the JUnit XML to cross-check with."""
    return ["no JUnit XML to cross-check with"] if t.junit is None and t.starts else []


def _junit_agrees(t: _Tally) -> list[str]:
    """The plugin's run and skipped counts are JUnit's (unless collection failed)."""
    if t.junit is None:
        return []
    c = t.counts
    mine = (
        c["passed"] + c["failed"] + c["errors"] + c["xpassed"],
        c["skipped"] + c["xfailed"],
    )
    theirs = (t.junit[0] - t.junit[1], t.junit[1])
    if mine == theirs or t.collection_errors:
        return []
    return [
        f"the plugin counted {mine[0]} run and {mine[1]} skipped, "
        f"JUnit XML {theirs[0]} and {theirs[1]}"
    ]


def _failure_status_explained(t: _Tally) -> list[str]:
    """A failing exit status (but 5, no tests collected) comes with a failed test counted."""
    status = t.status
    if status is not None and status != 0 and not t.failing and status not in (5,):
        return [f"pytest exited {status} with no failed test counted"]
    return []


def _no_success_with_failures(t: _Tally) -> list[str]:
    """pytest's exit status 0 comes with no failed or erroring test."""
    if t.status == 0 and t.failing:
        return [f"pytest's exit status is 0 with {t.failing} failed or erroring"]
    return []


_TAMPER, _NOTE = "tamper", "note"

#: ``(into, check)``: the pytest report's checks, in order; each returns what it finds, a
#: ``tamper`` finding marks the run tampered, a ``note`` is only said
PYTEST_CHECKS: tuple[tuple[str, Callable[[_Tally], list[str]]], ...] = (
    (_NOTE, _a_session_started),
    (_TAMPER, _every_process_finished),
    (_TAMPER, _no_line_of_a_stranger),
    (_TAMPER, _lines_match_the_plugins_tally),
    (_NOTE, _junit_written),
    (_TAMPER, _junit_agrees),
    (_NOTE, _failure_status_explained),
    (_TAMPER, _no_success_with_failures),
)


def _nonzero(counts: dict[object, object]) -> dict[str, int]:
    """The plugin's tally as the reader keys it (deselected and collection errors apart)."""
    return {str(k): v for k, v in counts.items() if k in _KEYS and isinstance(v, int) and v}


def _worker(start: dict[str, object] | None) -> bool:
    return bool(start and start.get("worker"))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _junit(workdir: str) -> tuple[int, int] | None:
    """``(tests, skipped)`` over every ``junit-*.xml`` in ``workdir`` (None: there is none)."""
    import xml.etree.ElementTree as ET

    total = skipped = 0
    found = False
    try:
        names = sorted(os.listdir(workdir))
    except OSError:
        return None
    for name in names:
        if not (name.startswith("junit-") and name.endswith(".xml")):
            continue
        path = os.path.join(workdir, name)
        try:
            if os.path.getsize(path) > _MAX_BYTES:
                continue
            tree = ET.parse(path)  # noqa: S314
        except (OSError, ET.ParseError):
            continue
        found = True
        for case in tree.getroot().iter("testcase"):
            total += 1
            if case.find("skipped") is not None:
                skipped += 1
    return (total, skipped) if found else None


def _jest(prepared: PreparedRun, exit_code: int) -> RunnerReport:
    try:
        with open(prepared.report_path, "rb") as f:
            doc = json.loads(f.read(_MAX_BYTES))
    except (OSError, ValueError):
        return RunnerReport(
            format=ReportFormat.JEST_JSON,
            exit_code=exit_code,
            complete=False,
            notes=("the runner wrote no JSON report",),
        )
    if not isinstance(doc, dict):
        doc = {}
    tests: list[tuple[str, str]] = []
    for suite in doc.get("testResults") or []:
        if not isinstance(suite, dict):
            continue
        for a in suite.get("assertionResults") or []:
            if isinstance(a, dict):
                status = str(a.get("status"))
                outcome = {"passed": "passed", "failed": "failed"}.get(status, "skipped")
                name = f"{suite.get('name', '')}::{a.get('fullName', a.get('title', ''))}"
                tests.append((name, outcome))
    failed_suites = _int(doc.get("numRuntimeErrorTestSuites"))
    total = _int(doc.get("numTotalTests"))
    passed = _int(doc.get("numPassedTests"))
    failed = _int(doc.get("numFailedTests"))
    skipped = _int(doc.get("numPendingTests")) + _int(doc.get("numTodoTests"))
    mine = sum(1 for _, o in tests if o == "failed")
    tampered = mine != failed or (bool(doc.get("success")) and (failed or failed_suites))
    return RunnerReport(
        format=ReportFormat.JEST_JSON,
        exit_code=exit_code,
        collected=total,
        passed=passed,
        failed=failed,
        skipped=skipped,
        collection_errors=failed_suites,
        failed_tests=tuple(n for n, o in tests if o == "failed"),
        tests=tuple(tests),
        tampered=bool(tampered),
        detail="the JSON report's totals disagree with its test results" if tampered else "",
    )


def _go(exit_code: int, stdout: str) -> RunnerReport:
    outcomes: dict[str, str] = {}
    build_failed = 0
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        action, test = ev.get("Action"), ev.get("Test")
        if action == "fail" and not test and ev.get("Package"):
            build_failed += 1 if not any(k.startswith(f"{ev['Package']}.") for k in outcomes) else 0
        if not test or action not in ("pass", "fail", "skip"):
            continue
        key = f"{ev.get('Package', '')}.{test}"
        outcomes[key] = {"pass": "passed", "fail": "failed", "skip": "skipped"}[str(action)]
    tests = tuple(outcomes.items())
    count = {
        k: sum(1 for o in outcomes.values() if o == k) for k in ("passed", "failed", "skipped")
    }
    return RunnerReport(
        format=ReportFormat.GO_JSON,
        exit_code=exit_code,
        collected=len(outcomes),
        collection_errors=build_failed,
        failed_tests=tuple(n for n, o in tests if o == "failed"),
        tests=tests,
        complete=True,
        passed=count["passed"],
        failed=count["failed"],
        skipped=count["skipped"],
    )

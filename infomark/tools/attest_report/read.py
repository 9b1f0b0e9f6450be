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
from collections.abc import Iterator

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
    starts: dict[int, dict[str, object]] = {}
    finishes: dict[int, dict[str, object]] = {}
    tamper: list[str] = []
    tests: dict[str, str] = {}
    collected = deselected = collection_errors = 0
    status: int | None = None
    worker_collected = worker_errors = 0
    seen_pids: set[int] = set()
    for doc in _lines(prepared.report_path):
        kind, pid = doc.get("kind"), doc.get("pid")
        if kind == "garbage" or not isinstance(pid, int):
            tamper.append("the report file holds a line the plugin did not write")
            continue
        seen_pids.add(pid)
        if kind == "start":
            starts[pid] = doc
        elif kind == "tamper":
            tamper.append(f"{doc.get('where')}: {doc.get('what')}")
        elif _worker(starts.get(pid)):
            if kind == "finish":
                finishes[pid] = doc
            elif kind == "collected":  # xdist: each worker collects, the controller does not
                worker_collected = max(worker_collected, _int(doc.get("count")))
                worker_errors = max(worker_errors, _int(doc.get("errors")))
            continue  # a worker's tests reach the controller's logreport too
        elif kind == "collected":
            collected += _int(doc.get("count"))
            deselected += _int(doc.get("deselected"))
            collection_errors = max(collection_errors, _int(doc.get("errors")))
        elif kind == "collect_error":
            collection_errors = max(collection_errors, 1)
        elif kind == "test":
            nodeid, outcome = str(doc.get("nodeid")), str(doc.get("outcome"))
            if outcome in _KEYS:
                # setup error then teardown error of one test: counted once, the worst
                tests[nodeid] = outcome if tests.get(nodeid) in (None, "passed") else tests[nodeid]
        elif kind == "finish":
            finishes[pid] = doc
            status = _int(doc.get("exitstatus")) if status in (None, 0) else status
    counts = {k: sum(1 for o in tests.values() if o == k) for k in _KEYS}
    collected = collected or worker_collected
    collection_errors = max(collection_errors, worker_errors)
    complete = set(starts) <= set(finishes)
    notes: list[str] = []
    if not starts:
        notes.append("pytest never started a session with the report plugin")
    elif not complete:
        tamper.append("the run ended before pytest finished (os._exit, a signal or a kill)")
    if set(finishes) - set(starts) or seen_pids - set(starts):
        tamper.append("the report holds lines of a process that never started (truncated?)")
    for pid, finish in finishes.items():
        if _worker(starts.get(pid)):
            continue
        theirs_counts = finish.get("counts")
        own = {k: v for k, v in counts.items() if v}
        if isinstance(theirs_counts, dict) and _nonzero(theirs_counts) != own:
            tamper.append(f"the lines counted {own}, the plugin's own tally {theirs_counts}")
    junit = _junit(prepared.workdir)
    if junit is None:
        if starts:
            notes.append("no JUnit XML to cross-check with")
    else:
        mine = (
            counts["passed"] + counts["failed"] + counts["errors"] + counts["xpassed"],
            counts["skipped"] + counts["xfailed"],
        )
        theirs = (junit[0] - junit[1], junit[1])
        if mine != theirs and not collection_errors:
            tamper.append(
                f"the plugin counted {mine[0]} run and {mine[1]} skipped, "
                f"JUnit XML {theirs[0]} and {theirs[1]}"
            )
    failing = counts["failed"] + counts["errors"] + collection_errors
    if status is not None and status != 0 and not failing and status not in (5,):
        notes.append(f"pytest exited {status} with no failed test counted")
    if status == 0 and failing:
        tamper.append(f"pytest's exit status is 0 with {failing} failed or erroring")
    return RunnerReport(
        format=ReportFormat.PYTEST_PLUGIN,
        exit_code=exit_code,
        collected=collected,
        deselected=deselected,
        collection_errors=collection_errors,
        runner_status=status,
        failed_tests=tuple(n for n, o in tests.items() if o in ("failed", "errors")),
        tests=tuple(tests.items()),
        tampered=bool(tamper),
        detail="; ".join(dict.fromkeys(tamper))[:2000],
        complete=complete,
        notes=tuple(notes),
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        skipped=counts["skipped"],
        xfailed=counts["xfailed"],
        xpassed=counts["xpassed"],
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

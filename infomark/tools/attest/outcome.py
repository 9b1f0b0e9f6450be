"""The outcome of an attested run, from the runner's own report (not the exit status alone).

For pytest, the run writes a JUnit XML report infomark asks for (``--junitxml`` through
``PYTEST_ADDOPTS``, which the sandbox's clean environment otherwise never carries): tests
collected, failed, errors, skipped. A run that ran no test, or whose report shows failures
behind an exit status 0, is no PASS. Runners without a report this module reads are judged
by exit status, and the evidence says so (``format = "exit-status-only"``).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from xml.etree import ElementTree

from infomark.gates.oracles import ran_nothing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Judgement", "Prepared", "Report", "judge", "prepare", "read"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the run needs so the runner writes a report (environment additions)."""

    runner: str  # "pytest" | "unknown"
    env: dict[str, str] = field(default_factory=dict)
    report_path: str | None = None


@dataclass(frozen=True, slots=True)
class Report:
    format: str  # "junit-xml" | "exit-status-only" | "missing"
    collected: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: tuple[str, ...] = ()
    ran_nothing: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "collected": self.collected,
            "failed": self.failed,
            "errors": self.errors,
            "skipped": self.skipped,
            "failures": list(self.failures[:20]),
            "ran_nothing": self.ran_nothing,
        }


@dataclass(frozen=True, slots=True)
class Judgement:
    outcome: str  # PASS | FAIL | ERROR
    code: str = ""
    detail: str = ""


def _words(oracle: str) -> list[str]:
    try:
        return shlex.split(oracle)
    except ValueError:
        return oracle.split()


def prepare(oracle: str, copy: str, workdir: str) -> Prepared:
    """Ask the runner for a machine-readable report, where infomark knows how."""
    if any(os.path.basename(w) in ("pytest", "py.test") or w == "pytest" for w in _words(oracle)):
        path = os.path.join(workdir, "infomark-report.xml")
        return Prepared("pytest", {"PYTEST_ADDOPTS": f"--junitxml={path}"}, path)
    return Prepared("unknown")


def read(prepared: Prepared, exit_code: int, output: bytes) -> Report:
    """The runner's report (after the run)."""
    nothing = ran_nothing(output)
    if prepared.report_path is None:
        return Report("exit-status-only", ran_nothing=nothing)
    try:
        root = ElementTree.parse(prepared.report_path).getroot()  # noqa: S314 - our own file
    except (OSError, ElementTree.ParseError):
        return Report("missing", ran_nothing=nothing)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) for s in suites)
    errors = sum(int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    names = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            names.append(f"{case.get('classname', '')}::{case.get('name', '')}")
    return Report("junit-xml", total, failed, errors, skipped, tuple(names), nothing)


def judge(report: Report, exit_code: int, *, expect: str, limits_hit: tuple[str, ...]) -> Judgement:
    """PASS, FAIL or ERROR, from the report first and the exit status second."""
    if limits_hit:
        return Judgement(
            "FAIL", "limit_hit", f"the run was stopped: {', '.join(limits_hit)} limit reached"
        )
    if report.format == "missing":
        return Judgement(
            "FAIL", "no_report", "the runner wrote no report: the run did not get as far as pytest"
        )
    if report.format == "junit-xml":
        ran = report.collected - report.skipped
        shown = f"{report.collected} collected, {report.failed} failed, {report.errors} errors"
        if report.failed or report.errors:
            names = ", ".join(report.failures[:5])
            if exit_code == 0:
                return Judgement(
                    "FAIL",
                    "masked_failure",
                    f"exit status 0 but the report shows failures ({shown}): {names}",
                )
            return Judgement("FAIL", "", f"{shown}: {names}")
        if ran <= 0:
            return Judgement("FAIL", "no_tests_ran", f"no test ran ({shown})")
        if exit_code != 0:
            return Judgement("FAIL", "", f"exit status {exit_code} ({shown})")
        return Judgement("PASS", "", f"{shown}")
    if report.ran_nothing and exit_code == 0:
        return Judgement("FAIL", "no_tests_ran", "the output says no test ran")
    if exit_code == 0:
        return Judgement("PASS", "", "exit status 0 (exit-status-only: the runner has no report)")
    return Judgement("FAIL", "", f"exit status {exit_code} (exit-status-only)")

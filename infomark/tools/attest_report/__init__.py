"""The outcome of an attested run from the runner's own report (issue 26, §3).

``prepare(oracle_argv, surface, workdir)`` adds what makes the runner write a machine-readable
report (pytest: a standalone plugin with an integrity check, and JUnit XML; jest/vitest
``--json``; ``go test -json``; else exit-status-only); ``read_report(prepared, exit_code,
stdout)`` reads it; ``judge(report, exit_code, baseline=…, expect=…, named_tests=…)`` decides
PASS / FAIL / ERROR and, when the run cannot ground a claim, names the reason code.
"""

from __future__ import annotations

from infomark.tools.attest_report.judge import judge, named_in
from infomark.tools.attest_report.model import Judgement, PreparedRun, RunnerReport
from infomark.tools.attest_report.prepare import PLUGIN_MODULE, REPORT_ENV, plugin_source, prepare
from infomark.tools.attest_report.read import read_report

__all__ = [
    "PLUGIN_MODULE",
    "REPORT_ENV",
    "Judgement",
    "PreparedRun",
    "RunnerReport",
    "judge",
    "named_in",
    "plugin_source",
    "prepare",
    "read_report",
]

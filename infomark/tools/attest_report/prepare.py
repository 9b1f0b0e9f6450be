"""``prepare``: the argv and environment that make a runner write its own report.

pytest (anywhere in the oracle: directly, under ``sh -c``, ``timeout``, a make recipe or
a package script): the standalone plugin ``infomark_attest_plugin.py`` is copied into
``workdir/plugin/`` and loaded with ``-p infomark_attest_plugin`` through ``PYTEST_ADDOPTS``,
that directory first on ``PYTHONPATH``; it writes ``workdir/pytest-report.jsonl`` and points
JUnit XML at ``workdir/junit-<pid>.xml`` (the cross-check). jest / vitest run directly:
``--json --outputFile=workdir/jest.json`` (vitest: ``--reporter=json``). ``go test`` run
directly: ``-json`` (the report is its standard output). cargo's libtest JSON needs a
nightly toolchain's ``-Z unstable-options``: not asked for. Everything else:
exit-status-only, and the prepared run says so.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from infomark.gates.surface import GradingSurface, parse_oracle
from infomark.kernel.runners import ReportFormat, RunnerKind
from infomark.tools.attest_report.model import PreparedRun

__all__ = ["PLUGIN_MODULE", "REPORT_ENV", "plugin_source", "prepare"]

PLUGIN_MODULE = "infomark_attest_plugin"
REPORT_ENV = "INFOMARK_ATTEST_REPORT"


def plugin_source() -> bytes:
    """The standalone plugin's source (standard library and pytest only)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{PLUGIN_MODULE}.py")
    with open(path, "rb") as f:
        return f.read()


def prepare(oracle_argv: Sequence[str], surface: GradingSurface, workdir: str) -> PreparedRun:
    """How to run ``oracle_argv`` so its runner reports into ``workdir`` (a private dir)."""
    workdir = os.path.abspath(workdir)
    argv = tuple(oracle_argv)
    if RunnerKind.PYTEST in surface.kinds or surface.kind is RunnerKind.PYTEST:
        return _pytest(argv, surface, workdir)
    direct = _direct_call(argv)
    if direct is not None:
        index, kind = direct
        if kind in (RunnerKind.JEST, RunnerKind.VITEST):
            out = os.path.join(workdir, "jest.json")
            extra = ("--json", f"--outputFile={out}")
            if kind is RunnerKind.VITEST:
                extra = ("--reporter=json", f"--outputFile={out}")
            return PreparedRun(
                kind=kind,
                format=ReportFormat.JEST_JSON,
                argv=(*argv, *extra),
                env=(),
                workdir=workdir,
                report_path=out,
                writable=(workdir,),
            )
        if kind is RunnerKind.GO:
            new = (*argv[: index + 2], "-json", *argv[index + 2 :])
            return PreparedRun(
                kind=kind,
                format=ReportFormat.GO_JSON,
                argv=new,
                env=(),
                workdir=workdir,
                report_path="",
                notes=("go test -json: the report is the run's standard output",),
            )
    note = "the runner offers no report infomark reads: the outcome is its exit status"
    if surface.kind is RunnerKind.CARGO:
        note = "cargo's libtest JSON needs a nightly toolchain: the outcome is its exit status"
    return PreparedRun(
        kind=surface.kind,
        format=ReportFormat.EXIT_STATUS,
        argv=argv,
        env=(),
        workdir=workdir,
        report_path="",
        notes=(note,),
    )


def _direct_call(argv: tuple[str, ...]) -> tuple[int, RunnerKind] | None:
    """``(index of the runner word in argv, kind)`` when argv is one runner call whose
    words appear in argv itself (not inside ``sh -c``), else None."""
    calls = parse_oracle(shlex.join(argv))
    if len(calls) != 1:
        return None
    call = calls[0]
    index = len(argv) - len(call.argv)
    if index < 0 or argv[index:] != call.argv or argv[:index] != call.prefix:
        return None
    return index, call.kind


def _pytest(argv: tuple[str, ...], surface: GradingSurface, workdir: str) -> PreparedRun:
    plugin_dir = os.path.join(workdir, "plugin")
    os.makedirs(plugin_dir, mode=0o700, exist_ok=True)
    target = os.path.join(plugin_dir, f"{PLUGIN_MODULE}.py")
    with open(target, "wb") as f:
        f.write(plugin_source())
    report = os.path.join(workdir, "pytest-report.jsonl")
    with open(report, "wb"):
        pass  # created empty: a run that never loads the plugin leaves it so
    return PreparedRun(
        kind=RunnerKind.PYTEST,
        format=ReportFormat.PYTEST_PLUGIN,
        argv=argv,
        env=(
            ("PYTEST_ADDOPTS", f"-p {PLUGIN_MODULE}"),
            ("PYTHONPATH", plugin_dir),
            (REPORT_ENV, report),
        ),
        workdir=workdir,
        report_path=report,
        files=(target, report),
        readable=(plugin_dir,),
        writable=(workdir,),
        notes=(f"pytest runs with -p {PLUGIN_MODULE} and JUnit XML in {workdir}",),
    )

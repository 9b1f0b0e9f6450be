"""``prepare``: the argv and environment that make a runner write its own report.

pytest (anywhere in the oracle: directly, under ``sh -c``, ``timeout``, a make recipe or
a package script): the standalone plugin ``infomark_attest_plugin.py`` is copied into
``workdir/plugin/`` (read-only in the sandbox) under a name chosen at random for the run
(``infomark_attest_plugin_<16 hex>``: no file can be planted under it beforehand) and loaded
with ``-p <that name>`` through ``PYTEST_ADDOPTS``, that directory first on ``PYTHONPATH``,
beside ``carried.json`` (the copy's path and the carried files, for its start-up check); it
writes ``workdir/pytest-report.jsonl`` and points
JUnit XML at ``workdir/junit-<pid>.xml`` (the cross-check). jest / vitest run directly:
``--json --outputFile=workdir/jest.json`` (vitest: ``--reporter=json``). ``go test`` run
directly: ``-json`` (the report is its standard output). cargo's libtest JSON needs a
nightly toolchain's ``-Z unstable-options``: not asked for. Everything else:
exit-status-only, and the prepared run says so.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Collection, Sequence

from infomark.gates.surface import GradingSurface, parse_oracle
from infomark.kernel.runners import ReportFormat, RunnerKind
from infomark.tools.attest_report.model import PreparedRun

__all__ = ["PLUGIN_MODULE", "REPORT_ENV", "plugin_source", "prepare"]

PLUGIN_MODULE = "infomark_attest_plugin"
REPORT_ENV = "INFOMARK_ATTEST_REPORT"
EARLY_ENV = "INFOMARK_ATTEST_EARLY"


def plugin_source() -> bytes:
    """The standalone plugin's source (standard library and pytest only)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{PLUGIN_MODULE}.py")
    with open(path, "rb") as f:
        return f.read()


def prepare(
    oracle_argv: Sequence[str],
    surface: GradingSurface,
    workdir: str,
    *,
    copy: str = "",
    carried: Collection[str] = (),
) -> PreparedRun:
    """How to run ``oracle_argv`` so its runner reports into ``workdir`` (a private dir).
    ``copy`` and ``carried`` (its paths the agent's change wrote): pytest's plugin marks the
    run tampered when one of them ran before it (a module the runner imports at start-up)."""
    workdir = os.path.abspath(workdir)
    argv = tuple(oracle_argv)
    if RunnerKind.PYTEST in surface.kinds or surface.kind is RunnerKind.PYTEST:
        return _pytest(argv, surface, workdir, copy, carried)
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


def _pytest(
    argv: tuple[str, ...],
    surface: GradingSurface,
    workdir: str,
    copy: str,
    carried: Collection[str],
) -> PreparedRun:
    # a name no file can be written under beforehand: the plugin is imported as itself
    module = f"{PLUGIN_MODULE}_{os.urandom(8).hex()}"
    plugin_dir = os.path.join(workdir, "plugin")
    os.makedirs(plugin_dir, mode=0o700, exist_ok=True)
    target = os.path.join(plugin_dir, f"{module}.py")
    with open(target, "wb") as f:
        f.write(plugin_source())
    early = os.path.join(plugin_dir, "carried.json")
    with open(early, "w", encoding="utf-8") as f:
        json.dump({"copy": os.path.realpath(copy) if copy else "", "carried": sorted(carried)}, f)
    report = os.path.join(workdir, "pytest-report.jsonl")
    with open(report, "wb"):
        pass  # created empty: a run that never loads the plugin leaves it so
    env = [("PYTEST_ADDOPTS", f"-p {module}"), ("PYTHONPATH", plugin_dir), (REPORT_ENV, report)]
    if copy:
        env.append((EARLY_ENV, early))
    return PreparedRun(
        kind=RunnerKind.PYTEST,
        format=ReportFormat.PYTEST_PLUGIN,
        argv=argv,
        env=tuple(env),
        workdir=workdir,
        report_path=report,
        files=(target, early, report),
        readable=(plugin_dir,),
        writable=(workdir,),
        notes=(f"pytest runs with -p {module} and JUnit XML in {workdir}",),
    )

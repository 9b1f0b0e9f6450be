"""infomark's pytest plugin for attested runs: counts the outcome, checks the runner is intact.

STANDALONE: the standard library and pytest only. An attested run cannot see infomark's
installation, so this file is copied into the run's private directory and loaded with
``-p infomark_attest_plugin`` (in ``PYTEST_ADDOPTS``, with that directory on ``PYTHONPATH``):
pytest imports a ``-p`` plugin before any ``conftest.py``, test module or ``__init__.py``,
so the references taken at import are the runner's own functions.

What it writes, one JSON line per event to the file named by ``INFOMARK_ATTEST_REPORT``
(read at import, and left in the environment so that xdist's workers report too): ``start``
(pid, pytest version, xdist worker id), ``collected`` (count, deselected, collection
errors), ``test`` (node id, outcome), ``tamper`` (what was found), ``finish`` (pytest's
exit status, its counts). It also points pytest's JUnit XML at ``junit-<pid>.xml`` beside
that file, which the reader compares with these counts.

What it checks, at session start, after collection, after each test and at the end:
- the functions the outcome depends on are the objects it saw at import:
  ``_pytest.python.Function.runtest``, ``pytest_pyfunc_call``, ``_pytest.runner``'s
  ``call_and_report``, ``call_runtest_hook``, ``runtestprotocol``, ``CallInfo.from_call``,
  ``pytest_runtest_makereport``, ``_pytest.reports.TestReport`` (its ``from_item_and_call``,
  the ``passed`` / ``failed`` / ``skipped`` properties), ``_pytest.skipping``'s makereport,
  ``_pytest.outcomes``' ``fail`` / ``skip`` / ``xfail`` / ``exit``, ``sys.exit``,
  ``os._exit``, ``os.abort``, and every name in ``builtins``;
- the hook implementations of the hooks that make and report outcomes did not change after
  collection began, except those of ``conftest.py`` modules pytest itself registered;
- a test whose call raised (not a skip) is not reported as passed;
- the exit status pytest computed agrees with the failures it counted;
- the run reached ``finish`` (an ``os._exit`` or a killed process never does).

What it cannot guarantee: it runs in the same process as the code under test. Code that
knows this plugin can restore every function before each check, write forged lines to the
report file, patch this module's own globals, or change the interpreter below Python (ctypes).
The checks make the known ways of patching pytest visible; the copy from the baseline and the
sandbox outside the process are what keep the grading files and the report's reader honest.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
from typing import Any

import _pytest.outcomes
import _pytest.python
import _pytest.reports
import _pytest.runner
import _pytest.skipping
import pytest

_PATH = os.environ.get("INFOMARK_ATTEST_REPORT", "")  # kept: xdist workers report too
_WATCHED_HOOKS = (
    "pytest_runtest_protocol",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_pyfunc_call",
    "pytest_report_teststatus",
    "pytest_collection_modifyitems",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
)


def _targets() -> dict[str, Any]:
    """The current object behind every watched name (a descriptor itself, not its value)."""
    reports = _pytest.reports
    return {
        "_pytest.python.Function.runtest": _pytest.python.Function.__dict__.get("runtest"),
        "_pytest.python.pytest_pyfunc_call": getattr(_pytest.python, "pytest_pyfunc_call", None),
        "_pytest.runner.call_and_report": getattr(_pytest.runner, "call_and_report", None),
        "_pytest.runner.call_runtest_hook": getattr(_pytest.runner, "call_runtest_hook", None),
        "_pytest.runner.runtestprotocol": getattr(_pytest.runner, "runtestprotocol", None),
        "_pytest.runner.pytest_runtest_makereport": getattr(
            _pytest.runner, "pytest_runtest_makereport", None
        ),
        "_pytest.runner.CallInfo.from_call": _pytest.runner.CallInfo.__dict__.get("from_call"),
        "_pytest.reports.TestReport": reports.TestReport,
        "_pytest.reports.TestReport.from_item_and_call": reports.TestReport.__dict__.get(
            "from_item_and_call"
        ),
        "_pytest.reports.BaseReport.passed": reports.BaseReport.__dict__.get("passed"),
        "_pytest.reports.BaseReport.failed": reports.BaseReport.__dict__.get("failed"),
        "_pytest.reports.BaseReport.skipped": reports.BaseReport.__dict__.get("skipped"),
        "_pytest.skipping.pytest_runtest_makereport": getattr(
            _pytest.skipping, "pytest_runtest_makereport", None
        ),
        "_pytest.outcomes.fail": _pytest.outcomes.fail,
        "_pytest.outcomes.skip": _pytest.outcomes.skip,
        "_pytest.outcomes.xfail": _pytest.outcomes.xfail,
        "_pytest.outcomes.exit": _pytest.outcomes.exit,
        "pytest.fail": pytest.fail,
        "sys.exit": sys.exit,
        "os._exit": os._exit,
        "os.abort": os.abort,
    }


_ORIGINAL = _targets()
_BUILTINS = dict(vars(builtins))


def _start_up() -> list[str]:
    """What ran before this plugin from a file the agent's change carried into the copy
    (``INFOMARK_ATTEST_EARLY`` names a JSON file: the copy's path and the carried paths):
    a module loaded from one (it stands in for a module the runner imports at start-up), or
    a function the outcome depends on compiled from one (such a module may have left
    ``sys.modules`` again). Runs at import, before any ``conftest.py`` or test module."""
    where = os.environ.get("INFOMARK_ATTEST_EARLY", "")
    if not where:
        return []
    try:
        with open(where, encoding="utf-8") as fh:
            doc = json.load(fh)
        copy = os.path.realpath(str(doc["copy"])) + os.sep
        carried = frozenset(str(p) for p in doc["carried"])
    except (OSError, ValueError, KeyError, TypeError):
        return ["the list of carried files cannot be read"]

    def carried_file(path: object) -> str | None:
        if not isinstance(path, str) or not path:
            return None
        if os.path.isabs(path) and not path.startswith(copy):
            return None  # the copy's path is chosen per run: no link outside leads into it
        real = os.path.realpath(path)
        if not real.startswith(copy):
            return None
        rel = real[len(copy) :].replace(os.sep, "/")
        return rel if rel in carried else None

    found: list[str] = []
    for name, module in list(sys.modules.items()):
        rel = carried_file(getattr(module, "__file__", None))
        if rel is not None:
            found.append(
                f"module `{name}` was imported from {rel}, a file your change carried, "
                "before the runner's report plugin loaded"
            )
    for name, obj in _ORIGINAL.items():
        func = getattr(obj, "__func__", getattr(obj, "fget", obj))
        code = getattr(func, "__code__", None)
        rel = carried_file(getattr(code, "co_filename", None))
        if rel is not None:
            found.append(f"{name} was replaced by code of {rel} before the plugin loaded")
    return found


_EARLY = _start_up()
_out: Any = None
_pid = os.getpid()
_state: dict[str, Any] = {
    "hooks": None,
    "tampered": [],
    "counts": {},  # deselected, collection errors
    "outcomes": {},  # node id -> its outcome
    "collected": 0,
}


def _write(kind: str, **data: Any) -> None:
    global _out
    if not _PATH:
        return
    if _out is None:
        fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        _out = os.fdopen(fd, "a", encoding="utf-8", buffering=1)
    _out.write(json.dumps({"kind": kind, "pid": _pid, **data}, sort_keys=True) + "\n")
    _out.flush()


def _tamper(where: str, what: str) -> None:
    item = f"{where}: {what}"
    if item not in _state["tampered"]:
        _state["tampered"].append(item)
        _write("tamper", where=where, what=what)


def _hook_impls(config: pytest.Config) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    hook = config.pluginmanager.hook
    for name in _WATCHED_HOOKS:
        caller = getattr(hook, name, None)
        if caller is None:
            continue
        out[name] = [
            (impl.plugin_name, id(impl.function))
            for impl in caller.get_hookimpls()
            if not _is_conftest(impl.plugin)
        ]
    return out


_CONFTESTS: dict[int, tuple[object, bool]] = {}  # id -> (the plugin, kept alive; conftest?)


def _is_conftest(plugin: object) -> bool:
    """Whether ``plugin`` is a ``conftest.py`` module, as it was the first time it was seen
    (a later change to its ``__file__`` changes nothing; asked after every test)."""
    seen = _CONFTESTS.get(id(plugin))
    if seen is not None and seen[0] is plugin:
        return seen[1]
    name = os.path.basename(str(getattr(plugin, "__file__", "") or ""))
    answer = name in ("conftest.py", "conftest.pyc")
    _CONFTESTS[id(plugin)] = (plugin, answer)
    return answer


def _check(config: pytest.Config | None, where: str) -> None:
    now = _targets()
    for name, original in _ORIGINAL.items():
        if now[name] is not original:
            _tamper(where, f"{name} was replaced")
    current = vars(builtins)
    for name, value in _BUILTINS.items():
        if name not in current:
            _tamper(where, f"builtins.{name} was deleted")
        elif current[name] is not value and name not in ("_", "__builtins__"):
            _tamper(where, f"builtins.{name} was replaced")
    if config is not None and _state["hooks"] is not None:
        now_hooks = _hook_impls(config)
        for name, impls in now_hooks.items():
            if impls != _state["hooks"].get(name, []):
                _tamper(where, f"the implementations of hook {name} changed during the run")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", {}).get("workerid")
    if _PATH:
        base = os.path.dirname(_PATH)
        config.option.xmlpath = os.path.join(base, f"junit-{_pid}.xml")
    _write("start", pytest=pytest.__version__, worker=worker)
    for what in _EARLY:
        _tamper("start-up", what)
    _check(None, "start")


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    _state["hooks"] = _hook_impls(session.config)  # conftests at the root are loaded by now


@pytest.hookimpl(tryfirst=True)
def pytest_deselected(items: list[pytest.Item]) -> None:
    _state["counts"]["deselected"] = _state["counts"].get("deselected", 0) + len(items)


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _state["counts"]["collection_errors"] = _state["counts"].get("collection_errors", 0) + 1
        _write("collect_error", nodeid=report.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    _state["collected"] = len(session.items)
    _write(
        "collected",
        count=len(session.items),
        deselected=_state["counts"].get("deselected", 0),
        errors=_state["counts"].get("collection_errors", 0),
    )
    _check(session.config, "after collection")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is None or report is None:
        return
    skip_like = isinstance(excinfo.value, _pytest.outcomes.Skipped | _pytest.outcomes.XFailed)
    if not skip_like and report.passed:
        _tamper(
            item.nodeid, f"the {call.when} phase raised {excinfo.typename} but was reported passed"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    key = None
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if hasattr(report, "wasxfail"):
            key = "xfailed" if report.skipped else "xpassed"
        elif report.when == "setup" and report.failed:
            key = "errors"
        else:
            key = report.outcome
    elif report.when == "teardown" and report.failed:
        key = "errors"
    if key is None:
        return
    outcomes = _state["outcomes"]
    if outcomes.get(report.nodeid) in (None, "passed"):  # one outcome per test, the worst
        outcomes[report.nodeid] = key
    _write("test", nodeid=report.nodeid, outcome=key, when=report.when)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    yield
    _check(item.config, f"after {item.nodeid}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _check(session.config, "end")
    counts = dict(_state["counts"])
    for key in _state["outcomes"].values():
        counts[key] = counts.get(key, 0) + 1
    status = int(exitstatus)
    bad = counts.get("failed", 0) + counts.get("errors", 0) + counts.get("collection_errors", 0)
    if bad and status == 0:
        _tamper("end", f"pytest's exit status is 0 with {bad} failed or erroring tests")
    _write("finish", exitstatus=status, counts=counts, tampered=_state["tampered"])

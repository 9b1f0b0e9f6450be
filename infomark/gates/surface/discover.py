"""``discover(root, oracle)``: the grading surface of an oracle, runner by runner.

The oracle is read as the shell reads it (:mod:`~infomark.gates.surface.oracle`); each runner
call it makes gets its runner's surface from the table below; an oracle that runs several
runners gets the union. A call the table does not know (``python3 check.py``, ``git status``,
``test -f calc.py``) gets a **conservative** surface: the files it names, every test
configuration name the runners know, and everything else outside the declared source
(:mod:`~infomark.gates.surface.source` decides what source is), said in a note.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from infomark.gates.surface.model import GradingSurface, RunnerCall
from infomark.gates.surface.oracle import parse_oracle
from infomark.kernel.paths import pure_name
from infomark.kernel.runners import TEST_CONFIG_NAMES, RunnerKind

__all__ = ["discover"]

_Discoverer = Callable[[str, RunnerCall, dict[str, str]], GradingSurface]
_MAX_DEPTH = 4
# A command that runs the files it names (their content is the check); the files `grep`,
# `cat` or `test -f` name are the subject under test, not grading.
_INTERPRETER = re.compile(
    r"python[\d.]*|pypy3?|bash|sh|dash|zsh|ksh|node|deno|bun|ruby|perl|bats|prove"
)
_INERT = frozenset({"echo", "printf", "true", ":", "mkdir", "rm", "touch", "export", "set", "cd"})


def _table() -> dict[RunnerKind, _Discoverer]:
    from infomark.gates.surface import native, node, python

    return {
        RunnerKind.PYTEST: python.pytest_surface,
        RunnerKind.UNITTEST: python.unittest_surface,
        RunnerKind.TOX: python.tox_surface,
        RunnerKind.NOX: python.nox_surface,
        RunnerKind.JEST: node.jest_surface,
        RunnerKind.VITEST: node.vitest_surface,
        RunnerKind.MOCHA: node.mocha_surface,
        RunnerKind.NODE_TEST: node.node_test_surface,
        RunnerKind.CARGO: native.cargo_surface,
        RunnerKind.GO: native.go_surface,
    }


def discover(root: str, oracle: str, *, environ: Mapping[str, str] | None = None) -> GradingSurface:
    """What the runners ``oracle`` starts read to grade it, run from ``root``.

    ``environ``: the environment the run will have (the attested run's clean one; default
    empty: ``PYTEST_ADDOPTS``, ``PYTEST_PLUGINS``, ``MAKEFILES`` … are read from it).
    """
    return _discover(os.path.abspath(root), oracle, dict(environ or {}), 0)


def _discover(root: str, oracle: str, env: dict[str, str], depth: int) -> GradingSurface:
    import shlex

    from infomark.gates.surface import make, node

    def nested(command: str, cwd: str) -> GradingSurface:
        prefix = f"cd {shlex.quote(cwd)} && " if cwd else ""
        return _discover(root, prefix + command, env, depth + 1)

    table = _table()
    surface: GradingSurface | None = None
    for call in parse_oracle(oracle):
        fn = table.get(call.kind)
        if depth > _MAX_DEPTH:
            part = conservative(root, call)
        elif call.kind is RunnerKind.MAKE:
            part = make.make_surface(root, call, env, nested)
        elif call.kind is RunnerKind.NPM:
            part = node.package_surface(root, call, env, nested)
        elif fn is not None:
            part = fn(root, call, env)
        elif depth and call.argv and call.argv[0] in _INERT:
            continue  # a recipe's or script's `echo`, `mkdir`: it reads nothing that grades
        else:
            part = conservative(root, call)
        surface = part if surface is None else surface.merged(part)
    if surface is None and depth:
        return GradingSurface(root=root, kind=RunnerKind.UNKNOWN)  # only inert commands
    if surface is None:
        return GradingSurface(
            root=root,
            kind=RunnerKind.UNKNOWN,
            conservative=True,
            kinds=(RunnerKind.UNKNOWN,),
            notes=("the oracle runs no command: everything outside the source is graded",),
        )
    return surface


def conservative(root: str, call: RunnerCall) -> GradingSurface:
    """The surface of a command no runner in the table reads: the files it runs (an
    interpreter's script: ``python3 check.py``, ``bash check.sh``), every test configuration
    name, and (through ``conservative``) all that is not source."""
    files: dict[str, None] = {}
    base = os.path.normpath(os.path.join(root, call.cwd))
    runs_files = bool(call.argv) and _INTERPRETER.fullmatch(pure_name(call.argv[0])) is not None
    for word in call.argv[1:] if runs_files else ():
        for candidate in (word, word.split("=", 1)[-1]):
            if not candidate or candidate.startswith("-"):
                continue
            path = os.path.normpath(os.path.join(base, candidate))
            rel = os.path.relpath(path, root)
            if not rel.startswith("..") and rel != "." and os.path.isfile(path):
                files[rel.replace(os.sep, "/")] = None
    for name in TEST_CONFIG_NAMES:
        files.setdefault(name, None)
    what = " ".join(call.argv[:3]) or "(nothing)"
    return GradingSurface(
        root=root,
        kind=RunnerKind.UNKNOWN,
        files=tuple(files),
        globs=("**/conftest.py", "**/*.pth", "node_modules/**", ".venv/**", "venv/**"),
        conservative=True,
        kinds=(RunnerKind.UNKNOWN,),
        calls=(call,),
        notes=(
            f"`{what}` is not a test runner infomark knows: every file outside the "
            "declared source is taken from the baseline, and the outcome is its exit status",
        ),
    )

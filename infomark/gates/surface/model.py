"""What discovery returns: the grading surface of one oracle, and the runs it is made of."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from infomark.kernel.runners import RunnerKind

_T = TypeVar("_T")

__all__ = ["GradingSurface", "Nested", "RunnerCall", "glob_match"]


@dataclass(frozen=True, slots=True)
class RunnerCall:
    """One runner invocation inside an oracle, its wrappers (``timeout``, ``env``, ``sh -c``,
    ``uv run``, ``npx`` …) taken off.

    ``argv`` starts at the runner's own word (``pytest``, ``make``, ``npm``; for a module run
    the interpreter's words too: ``python -m pytest``); ``args`` are the runner's arguments;
    ``env`` the ``NAME=value`` pairs a wrapper or an assignment sets; ``cwd`` the directory it
    runs in, relative to the root (``make -C sub``, ``cd sub && …``); ``prefix`` the wrapper
    words before the runner (kept so a prepared run can put them back).
    """

    kind: RunnerKind
    argv: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    prefix: tuple[str, ...] = ()

    def where(self, root: str) -> tuple[str, str]:
        """The root made absolute, and the directory this call runs in (``cwd`` under it)."""
        root = os.path.abspath(root)
        return root, os.path.normpath(os.path.join(root, self.cwd))


def glob_match(rel: str, pattern: str) -> bool:
    """``rel`` (root-relative, ``/``-separated) matches ``pattern``: ``**`` spans directories,
    ``*`` and ``?`` stay within one name; a pattern without ``/`` matches a name at any depth."""
    if "/" not in pattern:
        return fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern)
    if pattern.startswith("**/") and "/" not in pattern[3:] and pattern[3:] != "**":
        return fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern[3:])  # a name at any depth
    return _match(rel.split("/"), pattern.split("/"))


def _match(parts: list[str], pats: list[str]) -> bool:
    if not pats:
        return not parts
    head, rest = pats[0], pats[1:]
    if head == "**":
        return any(_match(parts[i:], rest) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _match(parts[1:], rest)


@dataclass(frozen=True, slots=True)
class GradingSurface:
    """What a runner reads to grade an oracle, as the runner itself finds it.

    - ``files``: paths relative to the root that the runner reads by name (configuration,
      ``conftest.py`` and ``__init__.py`` on the way to each test, makefiles, the files the
      oracle names), present or not when discovered: one created later changes the grade too.
    - ``above``: absolute paths outside the root, above it, that the runner would read
      (pytest's rootdir search, cargo's ``.cargo/config.toml``, ``go.work``).
    - ``globs``: root-relative patterns of more grading files (``**/conftest.py`` under a
      collection path, ``node_modules/**``, ``.venv/**``).
    - ``test_globs``: the runner's test-file patterns; ``tests``: the test files present when
      discovered. An existing test is graded from the baseline; a *new* test file is not
      tampering (the attested run carries it over and the runner's integrity check watches it).
    - ``conservative``: the oracle's runner is not in the table; everything outside the
      declared source is taken from the baseline (:mod:`~infomark.gates.surface.source`).
    - ``kinds``: every runner the oracle runs (``make test`` whose recipe runs pytest: both).
    - ``calls``: the runner invocations, wrappers taken off; ``notes``: what discovery saw and
      could not follow (a variable in a recipe, a JavaScript config it cannot read).
    """

    root: str
    kind: RunnerKind
    files: tuple[str, ...] = ()
    above: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()
    test_globs: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    conservative: bool = False
    kinds: tuple[RunnerKind, ...] = ()
    calls: tuple[RunnerCall, ...] = ()

    def covers(self, rel: str) -> bool:
        """``rel`` is grading: named, matched by a glob, or a test file (new ones included)."""
        return rel in self.files or any(glob_match(rel, g) for g in self.globs) or self.is_test(rel)

    def is_test(self, rel: str) -> bool:
        """``rel`` is a test file by the runner's own patterns (and not its configuration)."""
        if rel in self.files:
            return False
        return rel in self.tests or any(glob_match(rel, g) for g in self.test_globs)

    def is_new_test(self, rel: str) -> bool:
        """A test file that was not there when discovered: carried into an attested copy."""
        return self.is_test(rel) and rel not in self.tests

    def named_tests(self) -> tuple[str, ...]:
        """The pytest node ids the oracle names (``tests/test_a.py::test_x``), relative to
        the root: the tests a judgement requires to have run (``judge(named_tests=…)``)."""
        import posixpath

        out: list[str] = []
        for call in self.calls:
            if call.kind is not RunnerKind.PYTEST:
                continue
            for arg in call.args:
                if "::" in arg and not arg.startswith("-"):
                    path, _, rest = arg.partition("::")
                    path = posixpath.normpath(posixpath.join(call.cwd or ".", path))
                    out.append(f"{path}::{rest}")
        return tuple(dict.fromkeys(out))

    def merged(self, other: GradingSurface) -> GradingSurface:
        """This surface and ``other``'s (an oracle that runs two runners reads both)."""
        return GradingSurface(
            root=self.root,
            kind=self.kind if self.kind is not RunnerKind.UNKNOWN else other.kind,
            files=_union(self.files, other.files),
            above=_union(self.above, other.above),
            globs=_union(self.globs, other.globs),
            test_globs=_union(self.test_globs, other.test_globs),
            tests=_union(self.tests, other.tests),
            notes=_union(self.notes, other.notes),
            conservative=self.conservative or other.conservative,
            kinds=_union(self.kinds, other.kinds),
            calls=_union(self.calls, other.calls),
        )


def _union(a: Iterable[_T], b: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys((*a, *b)))


Nested = Callable[[str, str], GradingSurface]
"""Discover a command a runner runs in its turn (a make recipe, a package script) from a
directory relative to the root: what :func:`~infomark.gates.surface.discover.discover` gives
the runners that run other commands (``make_surface``, ``package_surface``)."""

"""Tests that test nothing, and loosened gates, in the change the agent made.

:func:`scan` reads the working tree's change against ``HEAD`` (``git diff HEAD`` and the new
untracked files) and finds what weakens a check rather than passing it:

* ``empty_test``: a new or changed test function with no assertion (a body of ``pass``,
  ``assert True``, a bare call; ``pytest.raises`` / ``self.assert…`` / ``expect(`` count);
* ``skipped_test``: a ``skip`` / ``xfail`` marker added (``@pytest.mark.skip``,
  ``pytest.skip(``, ``@unittest.skip``, ``it.skip(``, ``xit(`` …);
* ``suppression``: a lint or type suppression added (``# type: ignore``, ``# noqa``,
  ``eslint-disable``, ``@ts-ignore``, ``@ts-nocheck``, ``# pragma: no cover``);
* ``loosened_config``: gate configuration loosened: a mypy strictness line removed or set
  false, ruff rules removed from ``select`` or added to ``ignore``, a coverage threshold
  (``fail_under``, ``--cov-fail-under``) lowered, a CI step (``run:``) removed from a workflow.

:func:`against_checks` says which findings count against the project's checks (and so
refuse a finish): the test findings always (they touch every test check), a suppression or a
loosened configuration when a required check is the linter or type checker they weaken.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass
from infomark.kernel.regular import read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = ["Finding", "against_checks", "scan", "scan_diff"]


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # empty_test | skipped_test | suppression | loosened_config
    path: str
    line: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "line": self.line, "text": self.text}

    def describe(self) -> str:
        what = {
            "empty_test": "a test with no assertion",
            "skipped_test": "a test marked skip/xfail",
            "suppression": "a lint/type suppression added",
            "loosened_config": "gate configuration loosened",
        }[self.kind]
        return f"{what} ({self.path}:{self.line}: {self.text})"


_SUPPRESS = lazy_compile(
    r"#\s*type:\s*ignore|#\s*noqa\b|eslint-disable|@ts-ignore|@ts-nocheck|#\s*pragma:\s*no\s*cover"
)
_SKIP = lazy_compile(
    r"@pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail)\(|@unittest\.skip|"
    r"\b(?:it|test|describe)\.(?:skip|todo)\(|\bx(?:it|describe|test)\(|\bt\.Skip\(|#\[ignore\]"
)
_MYPY_STRICT = lazy_compile(r"^\s*(?:strict|disallow_\w+|warn_\w+|check_untyped_defs)\s*=\s*(\w+)")
_FAIL_UNDER = lazy_compile(r"(?:fail_under\s*=\s*|--cov-fail-under[= ])(\d+(?:\.\d+)?)")
_RUFF_IGNORE = lazy_compile(r"^\s*(?:extend-)?ignore\s*=|^\s*\"[A-Z]+\d*\",?\s*$")
_RUFF_SELECT = lazy_compile(r"^\s*(?:extend-)?select\s*=")
_HUNK = lazy_compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_TEST_FILE = lazy_compile(
    r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.py|[^/]*\.(?:test|spec)\.[jt]sx?)$"
)
_COMMIT = lazy_compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_CONFIGS = ("pyproject.toml", "setup.cfg", "mypy.ini", ".mypy.ini", "ruff.toml", ".ruff.toml",
            "tox.ini", ".coveragerc", "pytest.ini")  # fmt: skip


def _git(root: str, *args: str) -> str:
    """git in the agent's repository with its programs off (fsmonitor, hooks, external diff):
    :func:`infomark.gates.baseline.git`, loaded at a finish only."""
    from infomark.gates.baseline import git

    out = git(root, *args)
    return out.decode("utf-8", "replace") if out is not None else ""


def scan(root: StrPath, base: str | None = None) -> list[Finding]:
    """The findings in the change of the git work tree at ``root`` (none outside git, and
    none in a repository with no commit yet: there is no change to read, every file is new).
    ``base``: the commit the session started from (its baseline's ``head``), so a change the
    agent committed is still read; else ``HEAD``."""
    r = os.fspath(root)
    rev = base if base and _COMMIT.fullmatch(base) else "HEAD"
    if not _git(r, "rev-parse", "--verify", "--quiet", rev + "^{commit}").strip():
        if rev == "HEAD":
            return []
        rev = "HEAD"  # the session's commit is gone (history rewritten): what HEAD holds
        if not _git(r, "rev-parse", "--verify", "--quiet", "HEAD").strip():
            return []
    diff = _git(r, "diff", rev, "--unified=0", "--no-color", "--no-ext-diff", "--no-textconv")
    new = [p for p in _git(r, "ls-files", "--others", "--exclude-standard").splitlines() if p]
    for rel in new[:200]:
        try:
            raw = read_regular(os.path.join(r, rel), 200_000)
            lines = raw.decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        diff += f"\n+++ b/{rel}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(
            f"+{line}\n" for line in lines
        )
    return scan_diff(diff, root=r)


def scan_diff(diff: str, *, root: str | None = None) -> list[Finding]:
    """The findings in a unified diff (``+`` added, ``-`` removed lines)."""
    out: list[Finding] = []
    path, line = "", 0
    added: dict[str, set[int]] = {}
    removed_fail_under: list[float] = []
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            path = raw[4:].removeprefix("b/")
            continue
        if raw.startswith("--- "):
            continue
        m = _HUNK.match(raw)
        if m:
            line = int(m.group(1))
            continue
        if raw.startswith("+"):
            text = raw[1:]
            _added_line(out, path, line, text, removed_fail_under)
            added.setdefault(path, set()).add(line)
            line += 1
        elif raw.startswith("-"):
            _removed_line(out, path, line, raw[1:], removed_fail_under)
    if root is not None:
        for rel, lines in added.items():
            if rel.endswith(".py") and _TEST_FILE.search(rel):
                out.extend(_empty_tests(os.path.join(root, rel), rel, lines))
    return out


def _added_line(
    out: list[Finding], path: str, line: int, text: str, removed_fail_under: list[float]
) -> None:
    clip = text.strip()[:120]
    if _SUPPRESS.search(text):
        out.append(Finding("suppression", path, line, clip))
    if _SKIP.search(text):
        out.append(Finding("skipped_test", path, line, clip))
    base = os.path.basename(path)
    if base in _CONFIGS:
        m = _MYPY_STRICT.match(text)
        if m and m.group(1).lower() == "false":
            out.append(Finding("loosened_config", path, line, clip))
        if _RUFF_IGNORE.match(text) and "ignore" in text:
            out.append(Finding("loosened_config", path, line, clip))
        fu = _FAIL_UNDER.search(text)
        if fu and removed_fail_under and float(fu.group(1)) < max(removed_fail_under):
            out.append(Finding("loosened_config", path, line, clip))


def _removed_line(
    out: list[Finding], path: str, line: int, text: str, removed_fail_under: list[float]
) -> None:
    clip = text.strip()[:120]
    base = os.path.basename(path)
    if base in _CONFIGS:
        m = _MYPY_STRICT.match(text)
        if m and m.group(1).lower() == "true":
            out.append(Finding("loosened_config", path, line, "removed: " + clip))
        if _RUFF_SELECT.match(text):
            out.append(Finding("loosened_config", path, line, "removed: " + clip))
        fu = _FAIL_UNDER.search(text)
        if fu:
            removed_fail_under.append(float(fu.group(1)))
    if "/.github/workflows/" in "/" + path and text.lstrip().startswith(("run:", "- run:")):
        out.append(Finding("loosened_config", path, line, "CI step removed: " + clip))


def _asserts(node: Any) -> bool:
    import ast

    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            test = sub.test
            if isinstance(test, ast.Constant) and bool(test.value):
                continue  # assert True
            return True
        if isinstance(sub, ast.Raise):
            return True
        if isinstance(sub, ast.Call):
            name = ast.unparse(sub.func)
            if any(k in name for k in ("assert", "raises", "expect", "fail", "warns")):
                return True
    return False


def _empty_tests(path: str, rel: str, lines: set[int]) -> list[Finding]:
    import ast

    try:
        tree = ast.parse(read_regular(path).decode("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if not node.name.startswith("test"):
            continue
        span = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if span & lines and not _asserts(node):
            out.append(Finding("empty_test", rel, node.lineno, f"def {node.name}(): no assertion"))
    return out


_LINTERS = {
    "suppression": ("ruff", "flake8", "mypy", "pyright", "eslint", "tsc", "lint", "pylint"),
    "loosened_config": ("ruff", "mypy", "pytest", "coverage", "cov", "lint", "tox", "make"),
}


def against_checks(findings: Sequence[Finding], checks: Sequence[str]) -> list[Finding]:
    """The findings that weaken one of ``checks``: tests always; suppressions and loosened
    configuration when a check is (or wraps) the tool they loosen."""
    out = []
    for f in findings:
        if f.kind in ("empty_test", "skipped_test"):
            out.append(f)
            continue
        words = _LINTERS.get(f.kind, ())
        if any(w in c for c in checks for w in words):
            out.append(f)
    return out

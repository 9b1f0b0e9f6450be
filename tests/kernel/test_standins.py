"""Every runtime line of ``infomark/`` is one mypy checks (issue 29).

mypy checks only the ``if TYPE_CHECKING:`` branch of such an ``if``: the other branch (an
``else:``, or the body of ``if not TYPE_CHECKING:``) is run but never checked. So that
branch may only *bind* names (imports, ``name = other_name``, a class with no body): the
implementation it binds lives in a module mypy sees (``infomark/kernel/standins/``). And a
type error planted in those modules, or in the modules whose implementation used to hide
there, fails ``mypy --strict``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "infomark"


def _is_type_checking(test: ast.expr) -> bool | None:
    """True for ``TYPE_CHECKING``, False for ``not TYPE_CHECKING``, None for anything else."""
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return False if _is_type_checking(test.operand) else None
    return None


def _binds_only(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    if isinstance(stmt, ast.Expr):  # a docstring
        return isinstance(stmt.value, ast.Constant)
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        return isinstance(stmt.value, ast.Name | ast.Attribute | ast.Constant)
    if isinstance(stmt, ast.ClassDef):  # a runtime placeholder for a Protocol
        return all(_binds_only(s) for s in stmt.body) and not stmt.decorator_list
    if isinstance(stmt, ast.Try):  # ``try: import _x as x`` / ``except ImportError: import x``
        handled = [s for h in stmt.handlers for s in h.body]
        return all(_binds_only(s) for s in [*stmt.body, *handled, *stmt.orelse])
    return False


def unchecked_runtime_lines(tree: ast.AST) -> list[int]:
    """Lines of statements mypy does not check that do more than bind a name."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        kind = _is_type_checking(node.test)
        hidden = node.orelse if kind is True else node.body if kind is False else []
        found += [s.lineno for s in hidden if not _binds_only(s)]
    return found


def test_no_implementation_hides_from_mypy() -> None:
    found = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if "TYPE_CHECKING" in (text := path.read_text("utf-8"))
        and (lines := unchecked_runtime_lines(ast.parse(text)))
    }
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from re import compile\n"
        "else:\n    def compile(p):\n        return p\n",
        "TYPE_CHECKING = False\nif not TYPE_CHECKING:\n    x = len('a')\n",
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    pass\nelse:\n"
        "    class P:\n        def m(self): ...\n",
    ],
)
def test_the_scan_sees_a_planted_hidden_implementation(source: str) -> None:
    assert unchecked_runtime_lines(ast.parse(source)) != []


# The stand-ins (and the modules whose implementation sat in an ``else:`` branch before
# issue 29): a planted type error in any of them must fail mypy --strict.
PLANTED = (
    "infomark/kernel/standins/records.py",
    "infomark/kernel/standins/contexts.py",
    "infomark/kernel/standins/lazyre.py",
    "infomark/kernel/standins/enums.py",
    "infomark/kernel/contexts.py",
    "infomark/kernel/records.py",
    "infomark/kernel/lazyre.py",
    "infomark/kernel/enums.py",
)


def test_a_type_error_planted_in_the_stand_ins_fails_mypy(tmp_path: Path) -> None:
    # kernel/ imports only the standard library, so mypy checks the copy on its own (a few
    # seconds, with a cache of its own: the project's is left alone).
    copy = tmp_path / "infomark"
    shutil.copytree(PACKAGE / "kernel", copy / "kernel", ignore=shutil.ignore_patterns("*.pyc"))
    (copy / "__init__.py").write_text("")
    planted = {}
    for rel in PLANTED:
        path = tmp_path / rel
        lines = path.read_text("utf-8").splitlines()
        planted[rel] = len(lines) + 1
        path.write_text("\n".join([*lines, 'planted_error: int = "s"']) + "\n", "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-version", "3.11",
         "--cache-dir", str(tmp_path / "cache"), "-p", "infomark.kernel"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    for rel, line in planted.items():
        assert f"{rel}:{line}: error: Incompatible types in assignment" in done.stdout, (
            rel,
            done.stdout,
        )
    assert done.stdout.count(": error:") == len(PLANTED), done.stdout  # nothing else is wrong


@pytest.mark.parametrize(
    ("pattern", "flags", "text"),
    [
        (r"(\w+)=(\d+)", 0, "a=1 b=22 c=x"),
        (r"^claim", 8, "x\nclaim one\nclaim two"),  # re.MULTILINE
        (rb"\xff+", 0, b"a\xff\xffb"),
    ],
)
def test_lazy_compile_is_re_compile_on_first_use(pattern: str, flags: int, text: str) -> None:
    import re

    from infomark.kernel.standins.lazyre import lazy_compile

    lazy, real = lazy_compile(pattern, flags), re.compile(pattern, flags)
    assert lazy._compiled is None  # nothing compiled at definition (start-up)
    assert lazy.findall(text) == real.findall(text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.pattern == real.pattern and lazy.flags == real.flags
    assert repr(lazy) == f"lazy_compile({pattern!r})"

"""GNU make's grading surface, checked against the real make (issue 26 §2).

Each makefile's recipe says its own name, so the real make shows which file it read; the
surface must hold that file whichever name wins (``GNUmakefile`` over ``makefile`` over
``Makefile``), what it ``include``s, and what its recipe runs (pytest's surface).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from infomark.gates.surface import discover, source_set
from infomark.kernel.runners import MAKEFILE_NAMES, RunnerKind

MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="GNU make is not installed: LOUD SKIP")


def _make(root: Path, *args: str) -> str:
    assert MAKE is not None
    out = subprocess.run(
        [MAKE, "-s", *args], cwd=root, capture_output=True, text=True, timeout=60, check=False
    )
    return out.stdout.strip()


def test_it_is_gnu_make() -> None:
    assert MAKE is not None
    version = subprocess.run([MAKE, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("GNU Make")


@pytest.mark.parametrize("present", [("Makefile",), ("makefile", "Makefile"), MAKEFILE_NAMES])
def test_the_name_make_reads_is_on_the_surface(tmp_path: Path, present: tuple[str, ...]) -> None:
    for name in present:
        (tmp_path / name).write_text(f"test:\n\t@echo {name}\n")
    used = _make(tmp_path, "test")
    assert used == next(n for n in MAKEFILE_NAMES if n in present)  # make's own precedence
    surface = discover(str(tmp_path), "make test")
    assert surface.kind is RunnerKind.MAKE
    assert set(MAKEFILE_NAMES) <= set(surface.files)  # a new shadowing name is graded too
    sources = source_set(surface, ["Makefile", "app.c"])
    assert not any(sources.carried(n) for n in MAKEFILE_NAMES)


def test_includes_f_and_C(tmp_path: Path) -> None:
    (tmp_path / "mk").mkdir()
    (tmp_path / "mk" / "rules.mk").write_text("check:\n\t@echo included\n")
    (tmp_path / "Makefile").write_text("include mk/rules.mk\n-include optional.mk\n")
    assert _make(tmp_path, "check") == "included"
    surface = discover(str(tmp_path), "make check")
    assert {"Makefile", "mk/rules.mk", "optional.mk"} <= set(surface.files)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "build.mk").write_text("all:\n\t@echo sub\n")
    assert _make(tmp_path, "-C", "sub", "-f", "build.mk") == "sub"
    sub = discover(str(tmp_path), "make -C sub -f build.mk")
    assert "sub/build.mk" in sub.files


def test_makefiles_variable(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("test:\n\t@echo main\n")
    (tmp_path / "extra.mk").write_text("X := 1\n")
    surface = discover(str(tmp_path), "make test", environ={"MAKEFILES": "extra.mk"})
    assert "extra.mk" in surface.files


def test_a_recipe_that_runs_pytest_brings_pytests_surface(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "Makefile").write_text(
        "PYTEST ?= python3 -m pytest\n.PHONY: test\ntest: lint\n\t$(PYTEST) -q tests\n"
        "lint:\n\t@echo lint\n"
    )
    surface = discover(str(tmp_path), "make test")
    assert RunnerKind.PYTEST in surface.kinds and RunnerKind.MAKE in surface.kinds
    assert "tests/conftest.py" in surface.files and "pytest.toml" in surface.files
    assert "tests/test_a.py" in surface.tests
    assert not surface.conservative  # `echo` in a recipe reads nothing that grades


def test_default_goal_is_the_first_target(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(".PHONY: all\nall:\n\tpytest -q\nother:\n\tgit status\n")
    surface = discover(str(tmp_path), "make")
    assert RunnerKind.PYTEST in surface.kinds and not surface.conservative

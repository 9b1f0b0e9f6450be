"""The name lists that decide grading files come from the runners' own tables (issue 26 §2).

The attack shapes of the issue on the declaration-time digest and on the scratch rules: a new
configuration file under a name pytest ≥ 9 or GNU make reads first (``pytest.toml``,
``.pytest.toml``, ``.pytest.ini``, ``GNUmakefile``, ``makefile``), and a new root
``__init__.py`` on the way to a test, are changes to the grading surface, and creating them
is never scratch work. Real files; the functions the facade calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ledger_text

from infomark.gatekeeper import Gatekeeper
from infomark.gates.grading import CONFIG_NAMES, scan_changes, surface
from infomark.gates.scratch import DEFAULT_PROTECTED
from infomark.kernel.runners import MAKEFILE_NAMES, PYTEST_CONFIG_NAMES, TEST_CONFIG_NAMES
from infomark.ledger.calls import ToolCall

NEW_NAMES = [*PYTEST_CONFIG_NAMES, *MAKEFILE_NAMES, ".mocharc.yml", "jest.config.json"]


def test_the_lists_are_the_runners_tables() -> None:
    assert CONFIG_NAMES == TEST_CONFIG_NAMES
    assert set(TEST_CONFIG_NAMES) <= set(DEFAULT_PROTECTED)
    # what the lists held before issue 26 is all still there
    for old in ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                "package.json", "jest.config.js", "vitest.config.ts", "Makefile", ".rspec",
                "noxfile.py"):  # fmt: skip
        assert old in CONFIG_NAMES


@pytest.mark.parametrize("name", NEW_NAMES)
def test_a_new_runner_configuration_is_a_grading_change(tmp_path: Path, name: str) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    if name != "Makefile":
        (tmp_path / "Makefile").write_text("test:\n\tpytest -q\n")
    oracle = "make test" if name in MAKEFILE_NAMES else "pytest -q"
    baseline, _ = surface(tmp_path, oracle)
    assert scan_changes(tmp_path, baseline, {}) == []
    content = "[pytest]\naddopts = -k trivial\n"
    if name == "pyproject.toml":
        content = '[tool.pytest.ini_options]\naddopts = "-k trivial"\n'
    elif name in ("setup.cfg",):
        content = "[tool:pytest]\naddopts = -k trivial\n"
    elif name in MAKEFILE_NAMES:
        content = "test:\n\ttrue\n"
    (tmp_path / name).write_text(content)
    moved = [rel for rel, _d, _c in scan_changes(tmp_path, baseline, {})]
    assert moved == [name]


def test_a_new_root_init_on_the_way_to_a_test_is_a_grading_change(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "tests" / "test_calc.py").write_text("def test_a():\n    assert True\n")
    baseline, _ = surface(tmp_path, "pytest -q tests")
    (tmp_path / "__init__.py").write_text("import _pytest.python\n")
    (tmp_path / "tests" / "__init__.py").write_text("")
    moved = sorted(rel for rel, _d, _c in scan_changes(tmp_path, baseline, {}))
    assert moved == ["__init__.py", "tests/__init__.py"]
    (tmp_path / "helpers.py").write_text("x = 1\n")  # a new module is not grading
    assert "helpers.py" not in baseline


def test_the_subject_an_oracle_greps_is_not_grading(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "check.py").write_text("import calc\nassert calc.add(1, 2) == 3\n")
    greps, _ = surface(tmp_path, "grep -n 'def add' calc.py")
    assert "calc.py" not in greps
    runs, _ = surface(tmp_path, "python3 check.py")
    assert runs.get("check.py") is not None and "calc.py" not in runs


@pytest.mark.parametrize(
    "name", [".pytest.toml", "pytest.toml", ".pytest.ini", "GNUmakefile", "makefile"]
)
def test_creating_a_runner_configuration_is_never_scratch(
    project: Path, home: Path, name: str
) -> None:
    gk = Gatekeeper.open(home, "names", root=project)
    try:
        gk.ingest(ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",)))
        d = gk.authorize(ToolCall("Write", {"file_path": name, "content": "[pytest]\n"}))
        assert not d.allowed and d.code != "scratch", d
    finally:
        gk.close()

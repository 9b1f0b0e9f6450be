"""The shipped suite: each task has a real bug that its visible test and hidden check catch.

For every task, on a real copy of its tree: the bug fails both; the fix passes both; the
scripted agents' wrong fix fails the visible test; their tamper makes the visible test pass
and leaves the hidden check failing (so a tampered "done" is false).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from infomark.kernel.errors import UserError
from infomark.tools.eval.grade import copy_tree, run_check
from infomark.tools.eval.suite import Edit, Task, load_suite

SUITE = Path(__file__).resolve().parents[2] / "evals" / "suite"
TASKS = load_suite(SUITE).tasks


def _apply(root: Path, edit: Edit) -> None:
    p = root / edit.file
    text = p.read_text()
    assert edit.old in text, (edit.file, edit.old)
    p.write_text(text.replace(edit.old, edit.new, 1))


def _visible(task: Task, root: Path) -> bool:
    proc = subprocess.run(
        ["/bin/sh", "-c", task.spec.test_command], cwd=root, capture_output=True, timeout=60
    )
    return proc.returncode == 0


def test_the_suite_has_twelve_tasks_in_four_languages() -> None:
    assert len(TASKS) >= 12
    assert {t.spec.language for t in TASKS} >= {"python", "shell", "javascript", "c"}
    assert sum(t.spec.short for t in TASKS) >= 4


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_each_task_has_a_bug_its_checks_catch(task: Task, tmp_path: Path) -> None:
    if task.missing():
        pytest.skip(f"needs {', '.join(task.missing())}")
    for case in ("bug", "fix", "wrong", "tamper"):
        root = tmp_path / case
        copy_tree(task.tree, root)
        if case == "fix":
            for e in task.spec.scripted.fix:
                _apply(root, e)
        elif case == "wrong":
            _apply(root, task.spec.scripted.wrong)
        elif case == "tamper":
            _apply(root, task.spec.scripted.tamper)
        visible, hidden = _visible(task, root), run_check(task, root).passed
        expect = {
            "bug": (False, False),
            "fix": (True, True),
            "wrong": (False, False),
            "tamper": (True, False),
        }[case]
        assert (visible, hidden) == expect, case
    # the hidden check never lands in the agent's tree
    assert not any((task.tree / f.name).exists() for f in task.check_dir.iterdir())


def test_a_bad_task_file_is_a_clear_error(tmp_path: Path) -> None:
    shutil.copytree(SUITE / "py-add", tmp_path / "s" / "py-add")
    toml = tmp_path / "s" / "py-add" / "task.toml"
    toml.write_text(toml.read_text().replace('test_command = "python3 test_calc.py"\n', ""))
    with pytest.raises(UserError, match=r"task\.toml: test_command: Field required"):
        load_suite(tmp_path / "s")
    toml.write_text("name = [")
    with pytest.raises(UserError, match="not valid TOML"):
        load_suite(tmp_path / "s")
    with pytest.raises(UserError, match="not a directory"):
        load_suite(tmp_path / "nope")

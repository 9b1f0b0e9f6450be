"""The handler lookup (gates/shell/lookup.py): the common handlers load with the classifier,
the rest of the table (gates/shell/table.py) on the first name it holds, and every name gets
exactly the handler the whole table gives it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from infomark.gates.shell import common, lookup, table

_UNLISTED = ("ls", "cat", "make", "pytest", "python3.12", "pypy3", "py", "pip3.12", "pip3.9.1",
             "mkfs", "mkfs.ext4", "node", "")  # fmt: skip


def test_the_rest_is_every_other_name_of_the_table() -> None:
    assert set(table.HANDLERS) - set(common.COMMON) == lookup._REST
    assert lookup._REST.isdisjoint(common.COMMON)
    for name, handler in common.COMMON.items():
        assert table.HANDLERS[name] is handler, name


@pytest.mark.parametrize("name", sorted(table.HANDLERS) + list(_UNLISTED))
def test_a_name_gets_the_tables_handler(name: str) -> None:
    assert lookup._handler(name) is table.handler(name)


def test_a_module_of_python_m_gets_the_tables_handler() -> None:
    for name in (*table.MODULE_HANDLERS, "http.server", "pytest"):
        assert lookup.module_handler(name) is table.MODULE_HANDLERS.get(name)


def _loaded_after(command: str) -> set[str]:
    code = (
        f"import sys; sys.path[:0] = {sys.path!r}\n"
        "from infomark.gates.shell import classify_shell\n"
        f"classify_shell({command!r})\n"
        "print(' '.join(m for m in sys.modules if m.startswith('infomark.gates.shell')))\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_an_interpreter_or_an_unlisted_command_does_not_load_the_rest_of_the_table() -> None:
    loaded = _loaded_after("python3 check.py 1 && ls -la | sudo env X=1 timeout 5 cat x")
    assert "infomark.gates.shell.table" not in loaded
    for module in ("packages", "archives", "assembled", "files", "filters", "git", "sql"):
        assert f"infomark.gates.shell.{module}" not in loaded


@pytest.mark.parametrize(
    ("command", "module"), [("rm -rf x", "files"), ("pip3.12 install x", "packages")]
)
def test_a_name_of_the_rest_or_its_patterns_loads_it(command: str, module: str) -> None:
    loaded = _loaded_after(command)
    assert {"infomark.gates.shell.table", f"infomark.gates.shell.{module}"} <= loaded

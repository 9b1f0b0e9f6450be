"""Oracle strings read down to their runners: wrappers come off, the runner stays (issue 26 §2)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infomark.gates.surface import parse_oracle
from infomark.kernel.runners import RunnerKind

RUNNERS = [
    (["pytest", "-q"], RunnerKind.PYTEST),
    (["python", "-m", "pytest", "tests/test_a.py::test_x"], RunnerKind.PYTEST),
    (["python3.12", "-X", "dev", "-m", "pytest"], RunnerKind.PYTEST),
    ([".venv/bin/pytest", "-x"], RunnerKind.PYTEST),
    (["python", "-m", "unittest", "discover", "-s", "tests"], RunnerKind.UNITTEST),
    (["make", "test"], RunnerKind.MAKE),
    (["npm", "test"], RunnerKind.NPM),
    (["yarn", "test"], RunnerKind.NPM),
    (["pnpm", "run", "check"], RunnerKind.NPM),
    (["jest", "--ci"], RunnerKind.JEST),
    (["vitest", "run"], RunnerKind.VITEST),
    (["mocha"], RunnerKind.MOCHA),
    (["node", "--test"], RunnerKind.NODE_TEST),
    (["cargo", "test"], RunnerKind.CARGO),
    (["go", "test", "./..."], RunnerKind.GO),
    (["tox", "-e", "py311"], RunnerKind.TOX),
    (["nox", "-s", "tests"], RunnerKind.NOX),
    (["git", "status"], RunnerKind.UNKNOWN),
    (["test", "-f", "calc.py"], RunnerKind.UNKNOWN),
    (["python3", "-c", "import calc"], RunnerKind.UNKNOWN),
    (["python3", "check.py"], RunnerKind.UNKNOWN),
    (["go", "build"], RunnerKind.UNKNOWN),
    (["cargo", "build"], RunnerKind.UNKNOWN),
]

WRAPPERS = [
    [],
    ["timeout", "1"],
    ["timeout", "-s", "KILL", "-k", "5", "60s"],
    ["env", "X=1"],
    ["env", "-i", "-u", "HOME", "Y=2"],
    ["X=1"],
    ["nice", "-n", "5"],
    ["time"],
    ["command"],
    ["exec"],
    ["nohup"],
    ["stdbuf", "-o", "L"],
    ["uv", "run", "--with", "pytest-xdist"],
    ["poetry", "run"],
    ["pipenv", "run"],
    ["hatch", "run"],
    ["npx", "--yes"],
    ["pnpm", "exec"],
    ["xvfb-run", "-a"],
]


@pytest.mark.parametrize(("words", "kind"), RUNNERS, ids=lambda v: str(v))
def test_runner_table(words: list[str], kind: RunnerKind) -> None:
    (call,) = parse_oracle(shlex.join(words))
    assert call.kind is kind
    assert call.argv == tuple(words)


@given(
    st.sampled_from(RUNNERS),
    st.lists(st.sampled_from(WRAPPERS), max_size=3),
    st.sampled_from(["", "sh -c", "bash -ec", "bash -o pipefail -c"]),
)
def test_wrappers_come_off(
    runner: tuple[list[str], RunnerKind], wrappers: list[list[str]], shell: str
) -> None:
    words, kind = runner
    inner = [w for chain in wrappers for w in chain] + words
    command = shlex.join(inner)
    if shell:
        command = f"{shell} {shlex.quote(command)}"
    (call,) = parse_oracle(command)
    assert call.kind is kind
    assert call.argv == tuple(words)
    if not shell:
        assert call.prefix == tuple(inner[: len(inner) - len(words)])


@given(st.text(max_size=200))
def test_never_raises(text: str) -> None:
    for call in parse_oracle(text):
        assert isinstance(call.kind, RunnerKind)


def test_compound_and_masked_oracles() -> None:
    calls = parse_oracle("sh -c 'pytest -q; exit 0'")
    assert [c.kind for c in calls] == [RunnerKind.PYTEST, RunnerKind.UNKNOWN]
    calls = parse_oracle("cd sub && make -C inner check || true")
    assert calls[0].kind is RunnerKind.MAKE and calls[0].cwd == "sub/inner"
    assert calls[1].argv == ("true",)
    (call,) = parse_oracle("env -C pkg PYTEST_ADDOPTS=-x pytest")
    assert call.cwd == "pkg" and ("PYTEST_ADDOPTS", "-x") in call.env
    (call,) = parse_oracle("sh -c 'cd a && timeout 1 python -m pytest -q'")
    assert (call.kind, call.cwd, call.args) == (RunnerKind.PYTEST, "a", ("-q",))


def test_unclosed_quote_is_unknown() -> None:
    (call,) = parse_oracle("pytest 'unclosed")
    assert call.kind is RunnerKind.UNKNOWN


def test_named_tests_are_the_node_ids_pytest_gets(tmp_path: object) -> None:
    from infomark.gates.surface import discover

    surface = discover(
        "/nonexistent-root",
        "cd sub && pytest -q tests/test_a.py::test_x 'tests/test_b.py::T::test_y[1]' -k z",
    )
    assert surface.named_tests() == (
        "sub/tests/test_a.py::test_x",
        "sub/tests/test_b.py::T::test_y[1]",
    )
    assert discover("/nonexistent-root", "make test").named_tests() == ()

"""The project's checks (gates/checks.py): which ones a project has, which run is one of them,
and which tests a failing run names (issue 34 §1: detected for the verify profile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gates.checks import detect_checks, failing_tests, same_check

PKG = '{"scripts": {"test": "jest"}}'
NPM_DEFAULT = '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'


@pytest.mark.parametrize(
    ("files", "want"),
    [
        ({"tests/test_a.py": ""}, ["pytest -q"]),
        ({"a_test.py": ""}, ["pytest -q"]),
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, ["pytest -q"]),
        ({"setup.cfg": "[tool:pytest]\n"}, ["pytest -q"]),
        ({"noxfile.py": ""}, ["nox"]),
        ({"tox.ini": "[tox]\nenvlist = py\n"}, ["tox"]),
        ({"package.json": PKG}, ["npm test"]),
        ({"package.json": PKG, "yarn.lock": ""}, ["yarn test"]),
        ({"package.json": PKG, "pnpm-lock.yaml": ""}, ["pnpm test"]),
        ({"package.json": NPM_DEFAULT}, []),  # npm init's placeholder runs no test
        ({"Cargo.toml": ""}, ["cargo test"]),
        ({"go.mod": ""}, ["go test ./..."]),
        ({"Makefile": "build:\n\tcc x.c\ntest:\n\t./t\n"}, ["make test"]),
        ({"Makefile": "check:\n\t./t\n"}, ["make check"]),
        ({"Makefile": "test:\n\t./t\n", "go.mod": ""}, ["go test ./..."]),  # make wraps it
        ({"tests/test_a.py": "", "package.json": PKG}, ["pytest -q", "npm test"]),
        ({"README.md": ""}, []),
    ],
)
def test_detect_checks(tmp_path: Path, files: dict[str, str], want: list[str]) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert detect_checks(tmp_path) == want


@pytest.mark.parametrize(
    ("command", "check", "same"),
    [
        ("pytest -q", "pytest -q", True),
        ("python -m pytest -q -p no:cacheprovider", "pytest -q", True),
        ("/usr/bin/python3 -m pytest --tb=short -x", "pytest", True),
        ("uv run pytest -n 4", "pytest -q", True),
        ("npm run test", "npm test", True),
        ("pytest -q || true", "pytest -q", False),
        ("pytest -q | tail -1", "pytest -q", False),
        ("pytest -q -k one", "pytest -q", False),
        ("pytest -q tests/test_a.py", "pytest -q", False),
        ("pytest -q --co", "pytest -q", False),
        ("cargo test", "go test ./...", False),
    ],
)
def test_same_check(command: str, check: str, same: bool) -> None:
    assert same_check(command, check) is same


def test_same_check_after_a_cd_into_the_root_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert same_check(f"cd {tmp_path} && pytest -q", "pytest -q", root=tmp_path)
    assert not same_check(f"cd {tmp_path / 'sub'} && pytest -q", "pytest -q", root=tmp_path)


@pytest.mark.parametrize(
    ("output", "names"),
    [
        (
            "FAILED tests/test_a.py::test_x - assert 1 == 2\nERROR tests/test_b.py::test_y\n",
            ["tests/test_a.py::test_x", "tests/test_b.py::test_y"],
        ),
        ("tests/test_a.py::test_x FAILED                [ 50%]\n", ["tests/test_a.py::test_x"]),
        ("--- FAIL: TestAdd (0.00s)\nFAIL\n", ["TestAdd"]),
        ("test calc::tests::adds ... FAILED\n", ["calc::tests::adds"]),
        ("  ✕ adds numbers (3 ms)\n", ["adds numbers"]),
        ("1 passed in 0.01s\n", []),
    ],
)
def test_failing_tests_are_named(output: str, names: list[str]) -> None:
    assert failing_tests(output) == names

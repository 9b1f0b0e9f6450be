"""§4: the grading surface of other ecosystems (jest/vitest, go test, cargo, rspec, make).

Each case is a project layout, the oracle that grades it and what a hostile agent changes
from its shell; the digest taken at declaration must notice it, while edits outside the
test sections of shared files (a package's description, its version) are not grading.
Real files in a temp dir; :func:`surface` and :func:`scan_changes` as the facade calls them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infomark.gates.grading import scan_changes, surface

PACKAGE = {"name": "calc", "description": "adds", "scripts": {"test": "jest"}}

# (files at declaration, oracle, path changed or created, its new content)
TAMPERS = {
    "jest test file": (
        {"calc.test.js": "test('add', () => expect(add(1, 1)).toBe(2));\n"},
        "npx jest",
        "calc.test.js",
        "test('add', () => expect(true).toBe(true));\n",
    ),
    "__tests__ file": (
        {"__tests__/add.js": "expect(add(1, 1)).toBe(2);\n"},
        "npx jest",
        "__tests__/add.js",
        "test.skip('add', () => {});\n",
    ),
    "package.json test script": (
        {"package.json": json.dumps(PACKAGE)},
        "npm test",
        "package.json",
        json.dumps({**PACKAGE, "scripts": {"test": "jest --passWithNoTests"}}),
    ),
    "jest config created": (
        {"calc.test.js": "expect(1).toBe(1);\n"},
        "npx jest",
        "jest.config.js",
        "module.exports = { testPathIgnorePatterns: ['calc'] };\n",
    ),
    "vitest config created": (
        {"calc.spec.ts": "expect(add(1, 1)).toBe(2);\n"},
        "npx vitest run",
        "vitest.config.ts",
        "export default { test: { exclude: ['**'] } };\n",
    ),
    "go test file": (
        {"calc_test.go": "if Add(1, 1) != 2 { t.Fatal() }\n"},
        "go test ./...",
        "calc_test.go",
        "t.Skip()\n",
    ),
    "cargo integration test": (
        {"tests/add.rs": "assert_eq!(add(1, 1), 2);\n"},
        "cargo test",
        "tests/add.rs",
        "#[ignore]\n",
    ),
    "rspec file": (
        {"spec/calc_spec.rb": "expect(add(1, 1)).to eq(2)\n"},
        "rspec",
        "spec/calc_spec.rb",
        "skip\n",
    ),
    "Makefile test target": (
        {"Makefile": "test:\n\tpytest -q\n"},
        "make test",
        "Makefile",
        "test:\n\ttrue\n",
    ),
    "a script the oracle runs": (
        {"check.sh": "python3 -c 'import calc; assert calc.add(1, 1) == 2'\n"},
        "bash check.sh",
        "check.sh",
        "exit 0\n",
    ),
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("case", sorted(TAMPERS))
def test_a_change_to_the_surface_is_seen(tmp_path: Path, case: str) -> None:
    files, oracle, changed, content = TAMPERS[case]
    _write(tmp_path, files)
    baseline, _ = surface(tmp_path, oracle)
    assert scan_changes(tmp_path, baseline, {}) == []
    _write(tmp_path, {changed: content})
    moved = [rel for rel, _digest, _now in scan_changes(tmp_path, baseline, {})]
    assert moved == [changed], (case, sorted(baseline))


@pytest.mark.parametrize(
    ("name", "before", "after"),
    [
        ("package.json", json.dumps(PACKAGE), json.dumps({**PACKAGE, "description": "sums"})),
        ("pyproject.toml", '[project]\nversion = "1"\n', '[project]\nversion = "2"\n'),
        ("setup.cfg", "[metadata]\nname = a\n", "[metadata]\nname = b\n"),
    ],
)
def test_the_rest_of_a_shared_file_is_not_grading(
    tmp_path: Path, name: str, before: str, after: str
) -> None:
    _write(tmp_path, {name: before, "test_a.py": "def test_a():\n    assert 1\n"})
    baseline, _ = surface(tmp_path, "pytest -q")
    _write(tmp_path, {name: after})
    assert scan_changes(tmp_path, baseline, {}) == []


def test_a_new_test_file_is_not_a_change(tmp_path: Path) -> None:
    _write(tmp_path, {"calc.test.js": "expect(1).toBe(1);\n"})
    baseline, _ = surface(tmp_path, "npx jest")
    _write(tmp_path, {"more.test.js": "expect(2).toBe(2);\n", "b_test.go": "x\n"})
    assert scan_changes(tmp_path, baseline, {}) == []

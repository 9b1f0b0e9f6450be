"""node, npm, cargo and go surfaces, checked against the real tools that are installed.

Each tool missing here skips LOUDLY with its reason. Only what runs offline: ``npm test``
with ``node --test`` (node's own runner), ``cargo test`` on a crate without dependencies.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from infomark.gates.surface import discover, source_set
from infomark.kernel.runners import RunnerKind
from infomark.tools.attest_report import judge, prepare, read_report

NODE, NPM, CARGO, GO = (shutil.which(t) for t in ("node", "npm", "cargo", "go"))


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.skipif(NPM is None or NODE is None, reason="node/npm not installed: LOUD SKIP")
def test_npm_script_running_node_test(tmp_path: Path) -> None:
    assert NPM is not None
    (tmp_path / "package.json").write_text(
        json.dumps(
            {
                "name": "p",
                "version": "1.0.0",
                "scripts": {"pretest": "node prep.js", "test": "node --test"},
            }
        )
    )
    (tmp_path / "prep.js").write_text("console.log('prep ran')\n")
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "calc.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "test('add', () => { assert.strictEqual(1 + 2, 4); });\n"
    )
    real = _run([NPM, "test", "--silent"], tmp_path)
    assert real.returncode != 0 and "prep ran" in real.stdout  # npm runs pretest, then the test
    surface = discover(str(tmp_path), "npm test")
    assert {RunnerKind.NPM, RunnerKind.NODE_TEST} <= set(surface.kinds)
    assert "package.json" in surface.files and "prep.js" in surface.files
    assert "test/calc.test.js" in surface.tests
    assert surface.covers("node_modules/jest/bin/jest.js")
    sources = source_set(surface, ["package.json", "lib/calc.js", "test/calc.test.js"])
    assert sources.carried("lib/calc.js") and not sources.carried("package.json")
    assert sources.carried("test/new.test.js")  # a new test file


@pytest.mark.skipif(shutil.which("jest") is None, reason="jest is not installed: LOUD SKIP")
def test_jest_json_report(tmp_path: Path) -> None:  # pragma: no cover - needs jest
    (tmp_path / "a.test.js").write_text("test('a', () => { expect(1).toBe(2); });\n")
    surface = discover(str(tmp_path), "jest")
    (tmp_path / "w").mkdir()
    prepared = prepare(["jest"], surface, str(tmp_path / "w"))
    run = _run(list(prepared.argv), tmp_path)
    report = read_report(prepared, run.returncode, run.stdout)
    assert report.failed == 1 and not judge(report, run.returncode).grounds


def test_jest_and_vitest_configs_are_on_the_surface(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "jest --ci"}}))
    surface = discover(str(tmp_path), "npm test")
    for name in ("jest.config.js", "jest.config.ts", "jest.config.json", "package.json"):
        assert name in surface.files
    vitest = discover(str(tmp_path), "npx vitest run")
    assert "vitest.config.ts" in vitest.files and "vite.config.ts" in vitest.files
    mocha = discover(str(tmp_path), "mocha --require setup.js")
    assert ".mocharc.yml" in mocha.files


@pytest.mark.skipif(CARGO is None, reason="cargo is not installed: LOUD SKIP")
def test_cargo_reads_config_above_the_crate(tmp_path: Path) -> None:
    assert CARGO is not None
    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "c"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (crate / "src" / "lib.rs").write_text(
        "#[cfg(test)]\nmod t {\n    #[test]\n    fn no_injection() {\n"
        '        assert!(option_env!("INJECTED").is_none());\n    }\n}\n'
    )
    surface = discover(str(crate), "cargo test")
    prepared = prepare(["cargo", "test"], surface, str(tmp_path))
    clean = _run([CARGO, "test", "--offline", "-q"], crate)
    assert clean.returncode == 0, clean.stderr
    got = judge(read_report(prepared, clean.returncode, clean.stdout), clean.returncode)
    assert got.grounds and got.exit_status_only  # cargo's JSON needs nightly: said so
    (tmp_path / ".cargo").mkdir()
    (tmp_path / ".cargo" / "config.toml").write_text('[env]\nINJECTED = "1"\n')
    attacked = _run([CARGO, "test", "--offline", "-q"], crate)
    assert attacked.returncode != 0  # cargo read the parent directory's configuration
    assert str(tmp_path / ".cargo" / "config.toml") in surface.above
    assert {"Cargo.toml", "Cargo.lock", "build.rs", ".cargo/config.toml"} <= set(surface.files)


@pytest.mark.skipif(GO is None, reason="go is not installed: LOUD SKIP")
def test_go_test_json(tmp_path: Path) -> None:  # pragma: no cover - needs go
    assert GO is not None
    (tmp_path / "go.mod").write_text("module m\n\ngo 1.20\n")
    (tmp_path / "a_test.go").write_text(
        'package m\nimport "testing"\nfunc TestA(t *testing.T) { t.Fatal("no") }\n'
    )
    surface = discover(str(tmp_path), "go test ./...")
    prepared = prepare(["go", "test", "./..."], surface, str(tmp_path))
    run = _run(list(prepared.argv), tmp_path)
    report = read_report(prepared, run.returncode, run.stdout)
    assert report.failed == 1 and "a_test.go" in surface.tests


def test_go_surface_without_go(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "testdata").mkdir(parents=True)
    (tmp_path / "pkg" / "x_test.go").write_text("package pkg\n")
    surface = discover(str(tmp_path), "go test ./...")
    assert {"go.mod", "go.sum", "go.work"} <= set(surface.files)
    assert str(tmp_path.parent / "go.work") in surface.above
    assert surface.covers("pkg/testdata/input.txt") and "pkg/x_test.go" in surface.tests

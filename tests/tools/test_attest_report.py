"""The runner's own report decides an attested run's outcome (issue 26 §3), on real pytest.

Every run here is the real pytest of this environment in a subprocess, in a temp project,
prepared by ``prepare`` (the standalone plugin through ``-p`` + ``PYTHONPATH``, JUnit XML);
the attacks are the shapes of the issue: a new root ``__init__.py``, a new test file or a
conftest that patches the runner, a masked exit status, a test that ends the process.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.gates.surface import discover
from infomark.kernel.reasons import RunReason
from infomark.kernel.runners import ReportFormat, RunnerKind
from infomark.ledger.evidence import Outcome
from infomark.tools.attest_report import (
    PLUGIN_MODULE,
    Judgement,
    RunnerReport,
    judge,
    plugin_source,
    prepare,
    read_report,
)

BIN = os.path.dirname(sys.executable)

CALC_BUG = "def add(a, b):\n    return a - b\n"
CALC_FIX = "def add(a, b):\n    return a + b\n"
TEST_CALC = (
    "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)


def _project(tmp_path: Path, calc: str = CALC_BUG) -> Path:
    root = tmp_path / "proj"
    root.mkdir(parents=True)
    (root / "calc.py").write_text(calc)
    (root / "test_calc.py").write_text(TEST_CALC)
    return root


def attested(root: Path, oracle: str) -> tuple[RunnerReport, int]:
    """Run ``oracle`` the way an attested run does: prepared, clean environment, its report."""
    surface = discover(str(root), oracle)
    workdir = root.parent / f"work-{len(list(root.parent.iterdir()))}"
    workdir.mkdir()
    prepared = prepare(["sh", "-c", oracle], surface, str(workdir))
    # No bytecode: the fix below has the bug's size, and a rewrite in the same second as the
    # first run would leave CPython's mtime+size check trusting the stale calc.pyc.
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(root.parent),
        "PYTHONDONTWRITEBYTECODE": "1",
        **dict(prepared.env),
    }
    proc = subprocess.run(
        prepared.argv, cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return read_report(prepared, proc.returncode, proc.stdout), proc.returncode


def verdict(root: Path, oracle: str, **kw: object) -> Judgement:
    report, code = attested(root, oracle)
    return judge(report, code, **kw)  # type: ignore[arg-type]


def test_the_plugin_is_standalone() -> None:
    import ast

    tree = ast.parse(plugin_source())
    imported = {
        (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in (n.names if isinstance(n, ast.Import) else [n.names[0]])
    }
    allowed = set(sys.stdlib_module_names) | {"pytest", "_pytest", "__future__"}
    assert imported <= allowed, imported - allowed


def test_prepare_copies_the_plugin_and_sets_the_environment(tmp_path: Path) -> None:
    root = _project(tmp_path)
    prepared = prepare(["pytest", "-q"], discover(str(root), "pytest -q"), str(tmp_path / "w"))
    env = dict(prepared.env)
    assert prepared.format is ReportFormat.PYTEST_PLUGIN
    flag, module = env["PYTEST_ADDOPTS"].split()
    assert flag == "-p"
    assert re.fullmatch(PLUGIN_MODULE + r"_[0-9a-f]{16}", module)  # a name chosen per run
    plugin = Path(env["PYTHONPATH"]) / f"{module}.py"
    assert plugin.read_bytes() == plugin_source()
    assert prepared.argv == ("pytest", "-q")
    again = prepare(["pytest", "-q"], discover(str(root), "pytest -q"), str(tmp_path / "w2"))
    assert dict(again.env)["PYTEST_ADDOPTS"] != env["PYTEST_ADDOPTS"]


def test_honest_failure_then_pass(tmp_path: Path) -> None:
    root = _project(tmp_path)
    before, code = attested(root, "pytest -q")
    assert (before.collected, before.passed, before.failed, code) == (2, 1, 1, 1)
    assert before.failed_tests == ("test_calc.py::test_add",)
    assert not before.tampered and before.complete
    fail = judge(before, code, expect=Outcome.FAIL)
    assert (fail.outcome, fail.code) == (Outcome.FAIL, None)
    (root / "calc.py").write_text(CALC_FIX)
    after, code = attested(root, "pytest -q")
    ok = judge(after, code, baseline=before, named_tests=["test_calc.py::test_add"])
    assert ok.grounds, ok
    assert (after.passed, after.failed) == (2, 0)


def test_masked_exit_status_is_a_masked_failure(tmp_path: Path) -> None:
    root = _project(tmp_path)
    got = verdict(root, "sh -c 'pytest -q; exit 0'")
    assert (got.outcome, got.code) == (Outcome.FAIL, RunReason.MASKED_FAILURE)
    assert "test_calc.py::test_add" in got.detail


def test_no_tests_ran_is_not_pass(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    got = verdict(root, "pytest -q -k nothing_matches || true")
    assert (got.outcome, got.code) == (Outcome.ERROR, RunReason.NO_TESTS_RAN)


def test_version_oracle_runs_no_test(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    got = verdict(root, "pytest --version")
    assert (got.outcome, got.code) == (Outcome.ERROR, RunReason.NO_TESTS_RAN)


def test_fewer_tests_than_the_baseline(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    base, _ = attested(root, "pytest -q")
    # a test vanished (the attested copy would take the baseline's file: the judge still counts)
    (root / "test_calc.py").write_text(TEST_CALC.replace("def test_zero", "def helper_zero"))
    got = verdict(root, "pytest -q", baseline=base)
    assert (got.outcome, got.code) == (Outcome.ERROR, RunReason.FEWER_TESTS)


def test_named_test_skipped_or_missing(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    (root / "test_calc.py").write_text(
        "import pytest\nfrom calc import add\n\n@pytest.mark.skip\ndef test_add():\n"
        "    assert add(1, 2) == 3\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
    )
    skipped = verdict(root, "pytest -q", named_tests=["test_calc.py::test_add"])
    assert (skipped.code, skipped.detail) == (
        RunReason.NAMED_TEST_NOT_RUN,
        "test_calc.py::test_add was skipped",
    )
    missing = verdict(root, "pytest -q", named_tests=["test_calc.py::test_gone"])
    assert missing.code is RunReason.NAMED_TEST_NOT_RUN


def test_collection_error_is_not_pass(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    (root / "test_broken.py").write_text("from calc import missing_name\n")
    got = verdict(root, "pytest -q")
    assert (got.outcome, got.code) == (Outcome.FAIL, RunReason.COLLECTION_ERROR)


PATCH_RUNTEST = """\
import _pytest.python
_orig = _pytest.python.Function.runtest
def runtest(self):
    try:
        _orig(self)
    except AssertionError:
        pass
_pytest.python.Function.runtest = runtest
"""

PATCH_REPORT_HOOK = """\
import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    rep = out.get_result()
    if rep.failed:
        rep.outcome = "passed"
"""


@pytest.mark.parametrize(
    ("path", "content", "where"),
    [
        ("__init__.py", PATCH_RUNTEST, "Function.runtest was replaced"),
        ("test_zz_new.py", PATCH_RUNTEST + "\ndef test_new():\n    pass\n", "runtest"),
        ("conftest.py", PATCH_RUNTEST, "Function.runtest was replaced"),
        ("conftest.py", PATCH_REPORT_HOOK, "raised AssertionError but was reported passed"),
        (
            "test_aa_builtins.py",
            "import builtins\n_s = builtins.sorted\n"
            "builtins.sorted = lambda *a, **k: _s(*a, **k)\n",
            "builtins.sorted was replaced",
        ),
        ("test_aa_exit.py", "import sys\nsys.exit = lambda *a: None\n", "sys.exit was replaced"),
        (
            "test_aa_os.py",
            "import os\n\ndef test_quit():\n    os._exit(0)\n",
            "ended before pytest finished",
        ),
        (
            "test_aa_status.py",
            "def pytest_sessionfinish():\n    pass\nimport _pytest.main\n"
            "_pytest.main.Session.exitstatus = property(lambda s: 0, lambda s, v: None)\n",
            "exit status is 0",
        ),
    ],
    ids=[
        "root-init",
        "new-test-file",
        "conftest-runtest",
        "conftest-report-hook",
        "builtins",
        "sys-exit",
        "os-exit",
        "exit-status",
    ],
)
def test_a_patched_runner_is_tampered(tmp_path: Path, path: str, content: str, where: str) -> None:
    root = _project(tmp_path)
    (root / path).write_text(content)
    report, code = attested(root, "pytest -q")
    got = judge(report, code)
    assert (got.outcome, got.code) == (Outcome.ERROR, RunReason.RUNNER_TAMPERED), report
    assert where in got.detail


def test_xdist_workers_report_their_tampering(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is a dev dependency")
    root = _project(tmp_path)
    (root / "test_zz_new.py").write_text(PATCH_RUNTEST + "\ndef test_new():\n    pass\n")
    got = verdict(root, "pytest -q -n 2 -p xdist")
    assert got.code is RunReason.RUNNER_TAMPERED
    clean = _project(tmp_path / "clean", CALC_FIX)
    report, code = attested(clean, "pytest -q -n 2 -p xdist")
    assert judge(report, code).grounds
    assert (report.collected, report.passed) == (2, 2)


def test_forged_report_line_is_tampered(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    (root / "test_forge.py").write_text(
        "import os\n\ndef test_forge():\n"
        "    with open(os.environ['INFOMARK_ATTEST_REPORT'], 'a') as f:\n"
        "        f.write('not json\\n')\n"
    )
    got = verdict(root, "pytest -q")
    assert got.code is RunReason.RUNNER_TAMPERED


MIXED = """\
import pytest

@pytest.fixture
def bad_setup():
    raise RuntimeError("x")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("y")

def test_setup_err(bad_setup):
    pass

def test_teardown_err(bad_teardown):
    pass

@pytest.mark.xfail
def test_xf():
    assert False

@pytest.mark.xfail
def test_xp():
    pass

@pytest.mark.skip
def test_sk():
    pass

@pytest.mark.parametrize("x", [1, 2])
def test_p(x):
    assert x

def test_monkeypatched_builtin_is_restored(monkeypatch):
    import builtins
    monkeypatch.setattr(builtins, "input", lambda *a: "")
"""


def test_every_honest_outcome_is_counted_and_not_tampered(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    root.mkdir()
    (root / "test_mixed.py").write_text(MIXED)
    report, code = attested(root, "pytest -q")
    assert not report.tampered, report.detail
    assert (report.passed, report.errors, report.skipped, report.xfailed, report.xpassed) == (
        3,
        2,
        1,
        1,
        1,
    )
    assert (report.collected, code) == (8, 1)
    assert judge(report, code).outcome is Outcome.FAIL


@pytest.mark.parametrize("how", ["truncate", "unlink"])
def test_a_wiped_report_is_never_a_pass(tmp_path: Path, how: str) -> None:
    root = _project(tmp_path)
    wipe = (
        "open(os.environ['INFOMARK_ATTEST_REPORT'], 'w').close()"
        if how == "truncate"
        else "os.unlink(os.environ['INFOMARK_ATTEST_REPORT'])"
    )
    (root / "test_zz_wipe.py").write_text(f"import os\n\ndef test_wipe():\n    {wipe}\n")
    got = verdict(root, "pytest -q")
    assert not got.grounds
    assert got.code in (RunReason.RUNNER_TAMPERED, RunReason.NO_TESTS_RAN), got


def test_cannot_fail_on_the_baseline(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    base, code = attested(root, "pytest -q")
    got = judge(base, code, baseline=base, expect=Outcome.FAIL)
    assert (got.outcome, got.code) == (Outcome.ERROR, RunReason.ORACLE_CANNOT_FAIL)
    assert "cannot fail: on the baseline" in got.detail and "passed of" in got.detail


def test_exit_status_only_oracles_say_so(tmp_path: Path) -> None:
    root = _project(tmp_path, CALC_FIX)
    for oracle, outcome in (("test -f calc.py", Outcome.PASS), ("test -f nope.py", Outcome.FAIL)):
        report, code = attested(root, oracle)
        assert report.format is ReportFormat.EXIT_STATUS
        got = judge(report, code)
        assert got.outcome is outcome and got.exit_status_only
    report, code = attested(root, "git status")
    base = judge(report, 0, baseline=report, expect=Outcome.FAIL)
    assert base.code is RunReason.ORACLE_CANNOT_FAIL  # exits 0 where the claim expects FAIL


def test_prepare_go_and_jest_add_their_json_options(tmp_path: Path) -> None:
    go = prepare(["go", "test", "./..."], discover(str(tmp_path), "go test ./..."), str(tmp_path))
    assert go.argv == ("go", "test", "-json", "./...") and go.format is ReportFormat.GO_JSON
    jest = prepare(["npx", "jest"], discover(str(tmp_path), "npx jest"), str(tmp_path))
    assert jest.format is ReportFormat.JEST_JSON
    assert jest.argv[:3] == ("npx", "jest", "--json")
    shell = prepare(["sh", "-c", "jest"], discover(str(tmp_path), "sh -c jest"), str(tmp_path))
    assert shell.format is ReportFormat.EXIT_STATUS  # not reachable inside sh -c: said so
    assert discover(str(tmp_path), "cargo test").kind is RunnerKind.CARGO


def test_go_json_stream_is_read() -> None:
    prepared = prepare(["go", "test", "./..."], discover("/nonexistent", "go test"), "/tmp")
    stream = "\n".join(
        [
            '{"Action":"run","Package":"m","Test":"TestA"}',
            '{"Action":"pass","Package":"m","Test":"TestA"}',
            '{"Action":"fail","Package":"m","Test":"TestB"}',
            '{"Action":"skip","Package":"m","Test":"TestC"}',
            '{"Action":"fail","Package":"m"}',
        ]
    )
    report = read_report(prepared, 1, stream)
    assert (report.passed, report.failed, report.skipped, report.collected) == (1, 1, 1, 3)
    assert report.failed_tests == ("m.TestB",)
    masked = judge(read_report(prepared, 0, stream), 0)
    assert masked.code is RunReason.MASKED_FAILURE

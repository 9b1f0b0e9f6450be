"""Shared fixtures, named by state: a project dir, its ledger home, an open gatekeeper."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings
from store_backends import Backend, drop_schema, new_schema, pg_unreachable

if TYPE_CHECKING:
    from infomark.gatekeeper import Gatekeeper

# Children that inherit this environment write no bytecode: a test that rewrites a module with
# one of the same size within a second would otherwise run the stale .pyc (CI flake, session 7).
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "soak",
    deadline=None,
    max_examples=10_000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built (the modules, their strategies, 4,800 items): the cyclic
    garbage collector never walks it again. Without this a worker's long-lived heap makes
    every full collection slower as the run goes on, and an allocation-heavy test (a
    Hypothesis property) pays for it: test_any_wrapper_chain_keeps_destructive took 16 s of
    CPU late in a worker against 1 s alone."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a test file's last test (its module fixtures torn down): collect its garbage,
    then freeze what stays alive, as after collection. Only unreachable objects are ever
    collected, so what a test asserts about collection (a weakref that dies) is unchanged;
    the frozen objects are the previous files' survivors, which no later test can free."""
    yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "INFOMARK_HOME",
        "INFOMARK_SESSION",
        "INFOMARK_KEY",
        "INFOMARK_BYPASS_GROUNDING",
        "INFOMARK_CONFIG",
        "INFOMARK_TOKEN",
        "INFOMARK_STORE",
        "CLAUDE_PROJECT_DIR",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _no_process_attester() -> Iterator[None]:
    """Each test starts with no process-wide attester: the first ``infomark.Gatekeeper``
    access installs one for the rest of the process (infomark/tools/attest_lazy.py), which
    would make an in-process finish run attested checks or not by test order. A test that
    wants them sets ``gk.attester`` or drives an integration."""
    from infomark.gatekeeper import set_default_attester

    set_default_attester(None)
    yield
    set_default_attester(None)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


@pytest.fixture
def home(project: Path) -> Path:
    return project / ".infomark"


@pytest.fixture
def gk(home: Path, project: Path) -> Iterator[Gatekeeper]:
    """An open session that grades on the agent's own runs: the operator's explicit opt-out of
    attested runs (helpers.OWN_RUNS). Its users test the facade, the finish rules, the
    policies …, not grounding by infomark's own runs, which tests/tools/test_attest_default_api.py
    and tests/security/ test under the default."""
    from helpers import OWN_RUNS

    from infomark.gatekeeper import Gatekeeper

    g = Gatekeeper.open(home, "s1", root=project, config=OWN_RUNS)
    yield g
    g.close()


# -- the store backends (tests/store_backends.py) ---------------------------------------
_PG_SKIP = "POSTGRESQL NOT TESTED"


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """Run the test on SQLite, then on PostgreSQL (a fresh schema, dropped afterwards)."""
    if request.param == "sqlite":
        yield Backend("sqlite")
        return
    reason = pg_unreachable()
    if reason is not None:
        pytest.skip(f"{_PG_SKIP}: {reason}")
    schema, url = new_schema()
    monkeypatch.setenv("INFOMARK_STORE", url)
    try:
        yield Backend("postgresql", url, schema)
    finally:
        drop_schema(schema)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """``backend`` for a module's expensive shared fixture (one schema for the module).
    It sets no environment: the tests pass ``Backend.url`` on explicitly."""
    if request.param == "sqlite":
        yield Backend("sqlite")
        return
    reason = pg_unreachable()
    if reason is not None:
        pytest.skip(f"{_PG_SKIP}: {reason}")
    schema, url = new_schema()
    try:
        yield Backend("postgresql", url, schema)
    finally:
        drop_schema(schema)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``sqlite_only`` (its file, WAL, PRAGMAs) and ``postgres_only`` tests run on their
    backend alone: the other parametrisation is deselected, not skipped."""
    keep, drop = [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        params = spec.params if spec is not None else {}
        kind = params.get("backend", params.get("module_backend"))
        other = {"postgresql": "sqlite_only", "sqlite": "postgres_only"}.get(str(kind))
        (drop if other and item.get_closest_marker(other) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _pg_skipped(terminalreporter: Any) -> int:
    """The PostgreSQL tests skipped for want of a server, counted from the skip reports
    (under pytest-xdist the skips happen in the workers; their reports reach this process)."""
    count = 0
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        message = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr
        count += _PG_SKIP in str(message)
    return count


def pytest_terminal_summary(terminalreporter: Any) -> None:
    skipped = _pg_skipped(terminalreporter)
    if skipped:
        terminalreporter.write_sep("!", "POSTGRESQL BACKEND NOT TESTED", red=True, bold=True)
        terminalreporter.write_line(
            f"{skipped} PostgreSQL test(s) SKIPPED: {pg_unreachable()}. Start "
            "PostgreSQL on 127.0.0.1:5432 (.ci/run does) or set INFOMARK_TEST_PG.",
            red=True,
            bold=True,
        )


def _in_git(path: Path) -> bool:
    return any((p / ".git").exists() for p in (path, *path.parents))


@pytest.fixture
def off_git(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory that no ``.git`` above it makes a work tree: ``tmp_path`` when that
    holds, else one under ``/dev/shm``. (A host's sandbox can leave ``/tmp/.git`` behind:
    Codex 0.171 plants ``.git`` mount points in the writable roots it protects, ``/tmp`` among
    them, which turns every directory under ``/tmp`` into part of a "repository".)"""
    if not _in_git(tmp_path):
        yield tmp_path
        return
    shm = Path("/dev/shm")
    if not shm.is_dir() or _in_git(shm):
        pytest.skip(f"SKIPPED LOUDLY: every scratch place is inside a git tree ({tmp_path})")
    import shutil
    import tempfile

    made = Path(tempfile.mkdtemp(prefix="infomark-off-git-", dir=shm))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)

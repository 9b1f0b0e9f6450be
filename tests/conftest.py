"""Shared fixtures, named by state: a project dir, its ledger home, an open gatekeeper."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from infomark.gatekeeper import Gatekeeper

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


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "INFOMARK_HOME",
        "INFOMARK_SESSION",
        "INFOMARK_KEY",
        "INFOMARK_BYPASS_GROUNDING",
        "INFOMARK_CONFIG",
        "INFOMARK_TOKEN",
        "CLAUDE_PROJECT_DIR",
    ):
        monkeypatch.delenv(var, raising=False)


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
    from infomark.gatekeeper import Gatekeeper

    g = Gatekeeper.open(home, "s1", root=project)
    yield g
    g.close()

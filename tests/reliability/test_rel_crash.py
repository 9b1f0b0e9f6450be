"""Crashes: writers SIGKILLed at seeded points lose no committed event, leave every chain
verifiable, and a fresh process sees the state a full replay gives; on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
from rel_crash import crash_campaign


@pytest.mark.usefixtures("backend")  # on SQLite and on PostgreSQL
def test_sigkilled_writers_lose_no_committed_event(tmp_path: Path) -> None:
    figures = crash_campaign(tmp_path, rounds=2, max_lines=12, seed=3)
    assert figures["problems"] == []
    assert figures["kills"] == 6
    assert figures["events_printed"] > 0


@pytest.mark.slow
def test_crash_soak(tmp_path: Path) -> None:
    figures = crash_campaign(tmp_path, rounds=40, seed=2024)
    assert figures["problems"] == [], figures["problems"][:5]
